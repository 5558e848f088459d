"""The sweep: every cell of a grid of retrieval configs, run and scored on the same queries and
qrels, analysed by :func:`gate.statistics.sweep.analyze_sweep`.

Two sources of cells:

* ``sweep.params`` in the gate config: every combination of the listed values, set on the
  current retrieval config, run through the runner (cached by the run's key, listed by
  ``plan`` so matrix jobs can produce them);
* run files (``retrieval-gate sweep --cell NAME=RUN``), scored against one qrels file.

Either way every cell is evaluated on one query list (the judged golden queries) with one qrels,
and a cell whose run misses a golden query is refused: a missing query scoring 0 in one cell
would read as that cell being worse.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gate.checks.commensurability import run_request
from gate.common.errors import InputError, UsageError
from gate.common.limits import MAX_SWEEP_CELLS
from gate.common.numbers import counted, fixed
from gate.evaluation.evaluate import evaluate
from gate.evaluation.measures import parse_measure
from gate.inputs.config import Config, load_config
from gate.inputs.golden import Golden, load_golden
from gate.inputs.query_ids import tuning_split
from gate.inputs.readers.qrels import load_qrels
from gate.inputs.readers.queries import load_queries, load_query_ids
from gate.inputs.readers.records import Qrels, QuerySet, Run
from gate.inputs.readers.runs import read_run
from gate.inputs.retrieval_config import RetrievalConfig, flatten, load_retrieval_config
from gate.inputs.traffic_shares import assign_strata, strata_spec_from_config
from gate.inputs.universe import query_universe
from gate.pipeline.result import GridReport, file_inputs
from gate.pipeline.stack import Progress, check_config, code_under_test, make_producer, runner_queries_path
from gate.rendering.jinja import render
from gate.report.spine import Sweep as SweepRecord
from gate.runs.produce import answered_empty, missing_queries, sidecar_of
from gate.statistics.sweep import DEFAULT_FOLDS, SweepResult, analyze_sweep

__all__ = ["SweepCellSpec", "sweep_cells", "cell_label", "reference_cell", "score_cells", "sweep_from_config",
           "sweep_from_runs", "swept_changes", "gate_sweep"]




@dataclass(frozen=True)
class SweepCellSpec:
    label: str
    params: tuple[tuple[str, Any], ...]
    config: RetrievalConfig


def cell_label(params: Sequence[tuple[str, Any]]) -> str:
    """``fusion.rrf_k=60, fusion.lexical_weight=0.5``: the values as the config file writes them."""
    return ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in params)


def sweep_cells(grid: Mapping[str, Sequence[Any]], base: RetrievalConfig,
                config: Config | None = None) -> list[SweepCellSpec]:
    """Every combination of ``grid``'s values set on ``base``, the first key varying slowest. A
    key below a value that is not a mapping (``ingestion.parser.x`` where ``ingestion.parser`` is
    text) is refused: setting it would replace that value without a word."""
    keys = list(grid)
    for key in keys:
        node: Any = base.data
        parts = key.split(".")
        for depth, part in enumerate(parts[:-1]):
            node = node.get(part) if isinstance(node, Mapping) else None
            if node is not None and not isinstance(node, Mapping):
                where = ".".join(parts[:depth + 1])
                message = (f"'{key}' is below '{where}', which the retrieval config sets to "
                           f"{json.dumps(node, ensure_ascii=False)[:60]}, not to a mapping")
                if config is not None:
                    raise config.key_error("sweep.params", message)
                raise InputError(base.source, None, message)
            if node is None:
                break
    cells = []
    for combo in itertools.product(*(grid[key] for key in keys)):
        params = tuple(zip(keys, combo))
        cells.append(SweepCellSpec(cell_label(params), params, base.with_values(dict(params))))
    return cells


def _same_value(a: Any, b: Any) -> bool:
    """Config values alike as the runner reads them: 1 and 1.0 are one number (true is not 1)."""
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        return float(a) == float(b)
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def reference_cell(cells: Sequence[SweepCellSpec], config: RetrievalConfig) -> str | None:
    """The cell whose swept values are the config's own (the config as it stands), if one is."""
    flat = flatten(config.data)
    for cell in cells:
        if all(key in flat and _same_value(flat[key], value) for key, value in cell.params):
            return cell.label
    return None


def score_cells(runs: Sequence[tuple[str, Run]], qrels: Qrels, metric: str, query_ids: Sequence[str],
                rel: int, allow_missing: bool = False,
                answered_empty: Sequence[Collection[str]] | None = None) -> np.ndarray:
    """Per-query values of ``metric`` for every cell (cells x queries), on ``query_ids``;
    ``answered_empty``: per cell, the queries its runner answered with no documents (covered)."""
    rows = []
    empties = answered_empty if answered_empty is not None else [frozenset()] * len(runs)
    for (name, run), empty in zip(runs, empties, strict=True):
        missing = missing_queries(run, query_ids, empty) if not allow_missing else []
        if missing:
            example = sorted(missing, key=lambda q: q.encode())[0]
            raise InputError(run.source, None,
                             f"cell {name!r} misses {counted(len(missing), 'golden query', 'golden queries')}"
                             f" (e.g. {example!r}): scored 0 it would read as a worse cell; produce every query, or "
                             "pass --allow-missing")
        rows.append(evaluate(run, qrels, [metric], query_ids, rel=rel).values[metric])
    return np.vstack(rows)


def sweep_from_config(config: Config, golden: Golden, retrieval: RetrievalConfig, producer, queries_path: str,
                      code, progress: Progress, *, samples: int, seed: int) -> SweepResult:
    """Run every cell of ``sweep.params`` (through the producer: cache, runs folder, runner) and
    analyse the grid on the judged golden queries."""

    grid = config.sweep.params
    if not grid:
        raise config.key_error("sweep.params", "no sweep grid: list the values of at least one key")
    cells = sweep_cells(grid, retrieval, config)
    if len(cells) < 2:
        raise config.key_error("sweep.params", "the grid has 1 cell: a sweep compares at least 2")
    universe = golden.universe.query_ids
    if len(universe) < config.sweep.folds:  # before any cell runs
        raise config.key_error("sweep.folds", f"{config.sweep.folds} folds need at least {config.sweep.folds} judged "
                               f"golden queries; there are {len(universe)}")
    if code is not None and not code.known:
        progress(f"warning: {code.description}: the run cache is not used for the sweep's cells")
    metric = str(parse_measure(config.metric))
    runs, empties = [], []
    for number, cell in enumerate(cells, 1):
        progress(f"sweep: cell {number}/{len(cells)} {cell.label}")
        run, produced = producer.produce(run_request(f"sweep cell {cell.label}", cell.config, golden, queries_path,
                                                     code=code), universe)
        runs.append((cell.label, run))
        empties.append(answered_empty(produced.timings))
    # Each cell judged on the corpus it indexes (a cell may re-chunk: anchored judgments map anew).
    values = np.vstack([score_cells([pair], golden.qrels_for(cell.config), metric, universe, config.golden.rel,
                                    answered_empty=[empty])
                        for pair, cell, empty in zip(runs, cells, empties, strict=True)])
    strata = assign_strata(golden.queries, strata_spec_from_config(config))
    tuning, holdout = tuning_split(config)
    return analyze_sweep(values, [cell.label for cell in cells], universe, metric,
                         strata=[strata.get(q) for q in universe], tuning=tuning, holdout=holdout,
                         folds=config.sweep.folds, samples=samples, seed=seed, method=config.statistics.ci_method,
                         reference=reference_cell(cells, retrieval), params=[cell.params for cell in cells])


def swept_changes(config: Config, changed_paths: Sequence[str]) -> tuple[str, ...]:
    """The changed retrieval-config keys a configured sweep answers for: declared tunable
    (``tuning.params``) or swept (``sweep.params``); none without a sweep."""
    if not config.sweep.params:
        return ()
    keys = [*config.tuning.params, *config.sweep.params]
    return tuple(sorted({path for path in changed_paths
                         if any(path == key or path.startswith(key + ".") or key.startswith(path + ".")
                                for key in keys)}))


def gate_sweep(config: Config, golden: Golden, retrieval: RetrievalConfig, producer, queries_path: str, code,
               progress: Progress, changed: Sequence[str], reporting_ids: Sequence[str], metric_value: float | None,
               *, samples: int, seed: int) -> tuple[dict[str, Any], str | None]:
    """The sweep for a PR that changes a swept or tunable key: report.json's ``sweep`` section
    (the grid around the PR's config, with the cell a sweep tuned on the reporting queries would
    pick) and, when the PR's values are that cell, the warning that its number is the optimistic one."""

    result = sweep_from_config(config, golden, retrieval, producer, queries_path, code, progress, samples=samples,
                               seed=seed)
    best = result.best_on(reporting_ids)
    # Flagged only when the PR's cell is the one best: a cell tied with others (a change that moves
    # no query) was not picked by the reporting queries over them.
    flagged = result.reference is not None and best == (result.reference,)
    data = {**result.to_dict(), "changed_params": list(changed), "reporting_maximum": best[0] if best else None,
            "reporting_maximum_tied": list(best),
            "reporting_query_count": len(set(reporting_ids) & set(result.query_ids)),
            "candidate_is_reporting_maximum": flagged}
    warning = None
    if flagged:
        cv = result.cross_validated
        warning = (f"this PR's values ({result.reference}) are the best of the sweep's {len(result.cells)} cells on "
                   f"the reporting queries: its {result.metric}"
                   + (f" of {fixed(metric_value)}" if metric_value is not None else "")
                   + f" is the optimistic number; the grid's cross-validated estimate is {fixed(cv.mean)} "
                     f"[{fixed(cv.ci_low)}, {fixed(cv.ci_high)}]")
    return data, warning


def sweep_from_runs(cells: Sequence[tuple[str, str]], qrels_spec: str, queries_spec: str | None, metric: str, *,
                    rel: int = 1, folds: int = DEFAULT_FOLDS, samples: int, seed: int, tuning_spec: str | None = None,
                    reference: str | None = None, allow_missing: bool = False,
                    progress: Progress = lambda message: None) -> SweepResult:
    """A sweep of precomputed runs (``NAME=RUN``) scored against one qrels (and, when given, the
    golden query file, whose strata stratify the folds)."""

    names = [name for name, _ in cells]
    if len(cells) < 2:
        raise UsageError("sweep needs at least 2 --cell NAME=RUN")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise UsageError(f"--cell: the name {repeated[0]!r} is given twice")
    if reference is not None and reference not in names:
        raise UsageError(f"--reference {reference!r}: not one of the cells ({', '.join(names)})")
    metric = str(parse_measure(metric))
    queries: QuerySet | None = load_queries(queries_spec) if queries_spec is not None else None
    qrels = load_qrels(qrels_spec, queries=queries)
    universe = list(query_universe(qrels, queries).query_ids)
    strata = None
    if queries is not None:
        by_id = queries.by_id()
        strata = [by_id[q].stratum for q in universe]
    if len(universe) < folds:
        raise InputError(qrels_spec, None, f"{len(universe)} judged queries: {folds} folds need at least {folds}")
    runs = []
    empties = []  # per cell, the queries answered with no documents: "hits": 0 in the sidecar beside its run
    for number, (name, path) in enumerate(cells, 1):
        progress(f"sweep: reading cell {number}/{len(cells)} {name}")
        run = read_run(path)
        runs.append((name, run))
        # A line of a query not scored (an unjudged golden query answered with nothing) is left out.
        empties.append(answered_empty(sidecar_of(Path(path), run, None, "file", universe)))  # a bad one: exit 2
    values = score_cells(runs, qrels, metric, universe, rel, allow_missing, answered_empty=empties)
    tuning = load_query_ids(tuning_spec) if tuning_spec is not None else None
    return analyze_sweep(values, names, universe, metric, strata=strata, tuning=tuning, folds=folds,
                         samples=samples, seed=seed, reference=reference)


def sweep_config(config_path: str | Path, runs_dir: Path | None = None, *, folds: int | None = None,
                 samples: int | None = None, seed: int | None = None,
                 progress: Progress = lambda message: None) -> GridReport:
    """``retrieval-gate sweep`` on the config's ``sweep.params`` grid, its cells run by the
    config's runner (a cell that fails raises :class:`gate.runs.request.RunnerFailed`)."""
    config = load_config(config_path)
    check_config(config)
    if folds is not None:
        config = dataclasses.replace(config, sweep=dataclasses.replace(config.sweep, folds=folds))
    golden = load_golden(config)
    retrieval_path = config.here(config.retrieval_config)
    assert retrieval_path is not None  # here() of a str is a Path
    retrieval = load_retrieval_config(retrieval_path)
    producer = make_producer(config, runs_dir, progress)
    result = sweep_from_config(config, golden, retrieval, producer, runner_queries_path(golden, producer.work_dir),
                               code_under_test(config, runs_dir), progress,
                               samples=config.statistics.samples if samples is None else samples,
                               seed=config.statistics.seed if seed is None else seed)
    return sweep_report(result, {})


def sweep_run_files(cells: Sequence[tuple[str, str]], qrels: str, queries: str | None, metric: str, *, rel: int,
                    folds: int | None, samples: int, seed: int, tuning: str | None, reference: str | None,
                    allow_missing: bool, progress: Progress = lambda message: None) -> GridReport:
    """``retrieval-gate sweep --cell NAME=RUN ...``: a sweep of precomputed runs."""
    if len(cells) > MAX_SWEEP_CELLS:
        raise UsageError(f"--cell given {len(cells)} times: a sweep takes at most {MAX_SWEEP_CELLS} cells")
    result = sweep_from_runs(cells, qrels, queries, metric, rel=rel, folds=folds or DEFAULT_FOLDS, samples=samples,
                             seed=seed, tuning_spec=tuning, reference=reference, allow_missing=allow_missing,
                             progress=progress)
    inputs = file_inputs({f"cell {name}": path for name, path in cells} | {"qrels": qrels}
                         | ({"queries": queries} if queries else {}) | ({"tuning": tuning} if tuning else {}))
    return sweep_report(result, inputs)


def sweep_report(result: SweepResult, inputs: dict[str, Any]) -> GridReport:
    data = result.to_dict()
    return GridReport("sweep", result.metric, "sweep", data, inputs,
                      render("sweep.md.j2", sweep=SweepRecord.from_dict(data, "sweep")))
