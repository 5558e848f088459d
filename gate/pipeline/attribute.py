"""The 2^k grid of a gate run: the factors a PR bundles and the credit each one gets."""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Sequence

from gate.checks.commensurability import (
    ResolvedBaseline,
    run_request,
)
from gate.evaluation.evaluate import evaluate
from gate.evaluation.measures import parse_measure
from gate.inputs.config import Config
from gate.inputs.golden import Golden
from gate.inputs.readers.records import Run
from gate.inputs.retrieval_config import ABSENT, RetrievalConfig
from gate.pipeline.stack import Progress, declared_factors, runner_queries_path
from gate.runs.code import CodeIdentity
from gate.runs.produce import RunProducer
from gate.statistics.attribution import AttributionResult, CellProvenance, GridRefused, analyze_grid, bundle_result


def grid_factors(config: Config, diff) -> dict[str, list[str]]:
    """Factor name -> the changed dotted paths it switches."""
    changed = [c.path for c in diff]
    declared = declared_factors(config)
    factors: dict[str, list[str]] = {}
    claimed: set[str] = set()
    for name, paths in declared.items():
        hits = [c for c in changed if any(c == p or c.startswith(p + ".") for p in paths)]
        if hits:
            factors[name] = hits
            claimed.update(hits)
    for path in changed:
        if path not in claimed:
            group = path.split(".")[0]
            if group in declared:
                raise config.key_error("attribution.factors", f"the change to '{path}' is in no declared factor, "
                                       f"and its group '{group}' is the name of one: list the path under a factor "
                                       "or rename the factor")
            factors.setdefault(group, []).append(path)
    return factors


def corpus_factor_of(config: Config, factors: dict[str, list[str]]) -> str | None:
    """The factor that switches the corpus snapshot (its keys fill the corpus path)."""

    if not config.corpus:
        return None
    named = set(re.findall(r"\{([A-Za-z0-9_.\-]+)\}", config.corpus))
    for name, paths in factors.items():
        if named & set(paths):
            return name
    return None


def grid_cells(config: Config, baseline_config: RetrievalConfig, retrieval: RetrievalConfig,
               factors: dict[str, list[str]]) -> list[tuple[tuple[str, ...], str, RetrievalConfig]]:
    """Every cell of the 2^k grid as (levels, label, the retrieval config it runs), all-old first.

    A cell at level "new" for a factor takes the candidate's values of that factor's paths.
    ``plan`` lists the mixed cells (the corners are the baseline and the candidate); ``run``
    produces them.
    """


    names = list(factors)
    candidate_flat = retrieval.flat()
    cells = []
    for levels in itertools.product(("old", "new"), repeat=len(names)):
        switched = {path: candidate_flat.get(path, ABSENT)
                    for name, level in zip(names, levels) if level == "new" for path in factors[name]}
        label = ",".join(f"{name}={level}" for name, level in zip(names, levels))
        cells.append((levels, label, baseline_config.with_values(switched) if switched else baseline_config))
    return cells


def attribution_applies(config: Config, factors: dict[str, list[str]]) -> bool:
    """Whether ``run`` analyses a grid: two to ``attribution.max_factors`` changed factors."""
    return bool(config.attribution.enabled) and 2 <= len(factors) <= config.attribution.max_factors


def attribute(config: Config, golden: Golden, baseline: ResolvedBaseline, baseline_run: Run, candidate_run: Run,
              retrieval: RetrievalConfig, diff, query_ids: Sequence[str], metric: str, producer: RunProducer,
              candidate_seconds: float, progress: Progress,
              code: CodeIdentity | None = None) -> AttributionResult | GridRefused | None:
    """The 2^k grid of the changed factors: run the missing cells, then analyse (or label a bundle)."""

    factors = grid_factors(config, diff)
    names = list(factors)
    stats = config.statistics
    max_factors = config.attribution.max_factors
    if len(names) < 2:
        return None  # one change (or none): the headline delta is its effect, disabled or not
    if not config.attribution.enabled or len(names) > max_factors:
        return bundle_result(names, max_factors, disabled=not config.attribution.enabled, metric=metric,
                             samples=stats.samples, seed=stats.seed)
    queries_path = runner_queries_path(golden, producer.work_dir)
    measure = parse_measure(metric)
    values, seconds, provenance, info = {}, {}, {}, {}
    started = time.monotonic()
    for levels, label, cell_config in grid_cells(config, baseline.config, retrieval, factors):
        snapshot = golden.corpus(cell_config)
        if all(level == "old" for level in levels):
            run, cell_seconds = baseline_run, (baseline.produced.seconds if baseline.produced else 0.0)
            source = "baseline"
        elif all(level == "new" for level in levels):
            run, cell_seconds, source = candidate_run, candidate_seconds, "candidate"
        else:
            progress(f"attribution: cell {label}")
            run, produced = producer.produce(run_request(f"grid cell {label}", cell_config, golden, queries_path,
                                                         code=code),
                                             golden.universe.query_ids)
            cell_seconds, source = produced.seconds, produced.source
        # Each cell is judged on its own corpus: a re-chunking factor's cells map the judgments anew.
        per_query = evaluate(run, golden.qrels_for(cell_config), [measure], query_ids, rel=config.golden.rel)
        values[levels] = per_query.values[str(measure.with_default_rel(config.golden.rel))]
        seconds[levels] = cell_seconds
        provenance[levels] = CellProvenance(golden.queries_record.sha256, golden.qrels_record.sha256,
                                            None if snapshot is None else snapshot.record.sha256)
        info[levels] = {"source": source, "config_sha256": cell_config.sha256}
    try:
        return analyze_grid(names, values, list(query_ids), metric, stats.samples, stats.seed, seconds,
                            corpus_factor_of(config, factors), provenance=provenance,
                            grid_seconds=time.monotonic() - started + candidate_seconds, max_factors=max_factors,
                            ci_method=stats.ci_method, cell_info=info)
    except GridRefused as refused:
        return refused
