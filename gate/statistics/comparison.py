"""One paired comparison of two loaded runs: both evaluated on the same ordered query list.

The query list is the universe's byte order, so a reordered query file gives identical
numbers; the runs are compared query by query (:mod:`gate.statistics.paired`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from gate.common.errors import UsageError
from gate.common.limits import MAX_SAMPLES, MAX_SEED
from gate.evaluation.evaluate import PerQuery, evaluate
from gate.evaluation.measures import Measure, parse_measure
from gate.inputs.readers.records import Qrels, QuerySet, Run
from gate.inputs.universe import Universe, query_universe, require_overlap
from gate.statistics.paired import PairedComparison, compare_paired


@dataclass(frozen=True)
class CompareSettings:
    metric: str = "nDCG@10"
    also: tuple[str, ...] = ("AP", "RR@10", "R@100", "Judged@10")
    rel: int = 1
    samples: int = 10_000
    seed: int = 7
    ci_method: str = "percentile"

    def __post_init__(self) -> None:
        # The library's callers get the CLI's checks (argparse makes them for the command).
        if isinstance(self.also, str):  # "AP,RR@10" as the command line takes it
            object.__setattr__(self, "also", tuple(m.strip() for m in self.also.split(",") if m.strip()))
        for name, value, low, high in (("samples", self.samples, 1, MAX_SAMPLES), ("seed", self.seed, 0, MAX_SEED),
                                       ("rel", self.rel, 1, 1 << 31)):
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise UsageError(f"{name} {value!r}: expected an integer from {low} to {high}")
        if self.ci_method not in ("percentile", "basic", "bca"):
            raise UsageError(f"ci_method {self.ci_method!r}: expected percentile, basic or bca")

    def measures(self) -> tuple[Measure, tuple[Measure, ...]]:
        """The primary measure and the others, with the binary threshold applied."""
        primary = parse_measure(self.metric).with_default_rel(self.rel)
        others: list[Measure] = []
        for name in self.also:
            measure = parse_measure(name).with_default_rel(self.rel)
            if measure != primary and measure not in others:
                others.append(measure)
        return primary, tuple(others)


@dataclass(frozen=True)
class Comparison:
    settings: CompareSettings
    metric: str  # canonical name of the primary measure
    universe: Universe
    baseline: PerQuery
    candidate: PerQuery
    paired: PairedComparison
    strata: dict[str, str | None] = field(default_factory=dict)

    @property
    def query_ids(self) -> tuple[str, ...]:
        return self.universe.query_ids

    def per_query_delta(self) -> np.ndarray:
        return self.candidate.values[self.metric] - self.baseline.values[self.metric]

    def measure_names(self) -> list[str]:
        return list(self.baseline.values)


def compare(
    baseline: Run,
    candidate: Run,
    qrels: Qrels,
    queries: QuerySet | None = None,
    settings: CompareSettings = CompareSettings(),
) -> Comparison:
    primary, others = settings.measures()
    measures: Sequence[Measure] = (primary, *others)
    universe = query_universe(qrels, queries)
    for run in (baseline, candidate):
        require_overlap(run, universe.query_ids, qrels, queries)
    before = evaluate(baseline, qrels, measures, universe.query_ids, rel=settings.rel)
    after = evaluate(candidate, qrels, measures, universe.query_ids, rel=settings.rel)
    return compare_evaluated(before, after, universe, queries, settings)


def compare_evaluated(before: PerQuery, after: PerQuery, universe: Universe, queries: QuerySet | None = None,
                      settings: CompareSettings = CompareSettings()) -> Comparison:
    """:func:`compare` on runs already evaluated on ``universe.query_ids`` (e.g. streamed:
    :func:`gate.evaluation.streaming.digest_run`)."""
    primary, _ = settings.measures()
    metric = str(primary)
    paired = compare_paired(
        before.values[metric],
        after.values[metric],
        samples=settings.samples,
        seed=settings.seed,
        method=settings.ci_method,
    )
    strata: dict[str, str | None] = {qid: None for qid in universe.query_ids}
    if queries is not None:
        by_id = queries.by_id()
        for qid in universe.query_ids:
            strata[qid] = by_id[qid].stratum if qid in by_id else None
    return Comparison(settings, metric, universe, before, after, paired, strata)
