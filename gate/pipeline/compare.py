"""``compare``: two runs, one qrels, one query universe -> a paired comparison.

The library verb behind ``retrieval-gate compare``. It evaluates both runs on
the same ordered query list (byte order, so a reordered query file gives
identical numbers) and compares them query by query.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from gate.evaluation.evaluate import PerQuery, Universe, evaluate, query_universe, require_overlap
from gate.inputs.readers.records import Qrels, QuerySet, Run
from gate.evaluation.measures import Measure, parse_measure
from gate.statistics.paired import PairedComparison, compare_paired


@dataclass(frozen=True)
class CompareSettings:
    metric: str = "nDCG@10"
    also: tuple[str, ...] = ("AP", "RR@10", "R@100", "Judged@10")
    rel: int = 1
    samples: int = 10_000
    seed: int = 7
    ci_method: str = "percentile"

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


def decide_comparison(comparison: Comparison, policy=None, strata_block=None, runs=None):
    """The gate's decision on a comparison: ``run``'s statistics and traffic rules (damaged
    traffic, guarded strata, from ``strata_block``: the report's strata section), no validity
    checks and no noise band; ``runs`` (baseline, candidate) tells identical rankings apart
    (``unchanged``). Returns ``(verdict, evidence)``. ``policy``:
    :class:`gate.verdict.rules.Policy` (default: the gate's defaults, an improvement not needing a
    band: compare has none)."""
    import math

    from gate.statistics.evidence import evidence
    from gate.inputs.readers.records import same_rankings
    from gate.verdict.rules import Findings, Policy, decide, traffic_findings

    policy = policy or Policy(improvement_needs_band=False)
    paired = comparison.paired
    weighed = evidence(comparison.per_query_delta(), policy.max_regression, paired.samples, paired.seed)
    findings = Findings(metric=comparison.metric, query_count=len(comparison.query_ids), delta=paired.mean,
                        ci_low=paired.ci_low, ci_high=paired.ci_high,
                        mde=paired.mde if math.isfinite(paired.mde) else None, evidence=weighed,
                        **traffic_findings(strata_block or {}),
                        identical_rankings=runs is not None and same_rankings(runs[0], runs[1], comparison.query_ids))
    return decide(findings, policy), weighed
