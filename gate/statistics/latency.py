"""Latency and cost beside quality: per-side percentiles and the paired change with its interval.

Both sides are aligned on the same query list as the metric (the reporting set's queries).

Percentiles are numpy's default ``linear`` method (Hyndman & Fan type 7: the ``(n - 1) * p``-th
order statistic, interpolated between its neighbours), so p95 of 20 queries lies between the
19th and 20th fastest.

The change's interval is a paired bootstrap over queries, with the contract of
:mod:`gate.statistics.bootstrap`: ``default_rng(seed).integers(0, n, size=(samples, n))`` drawn in
row blocks, each resample taking the same queries on both sides; the statistic of a resample
is ``pXX(candidate[idx]) - pXX(baseline[idx])`` (and, for the relative change, divided by
``pXX(baseline[idx])``). The interval is the resamples' 2.5th and 97.5th percentiles. Cost is a
per-query mean: its change is the mean of the per-query differences, resampled the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gate.inputs.readers.timings import Timings
from gate.statistics.bootstrap import LOWER_PCT, UPPER_PCT, chunk_rows_for, index_blocks

__all__ = ["SideLatency", "Change", "LatencyComparison", "CostComparison", "compare_latency", "compare_cost",
           "PERCENTILES", "PERCENTILE_METHOD", "Resources", "compare_resources", "cost_missing"]

PERCENTILES = (50, 95, 99)
# numpy's default (Hyndman & Fan type 7), written out as method="linear" in every call here
PERCENTILE_METHOD = "linear"


@dataclass(frozen=True)
class SideLatency:
    """One side's latency percentiles (ms) on the aligned queries."""

    p50: float
    p95: float
    p99: float

    def to_dict(self) -> dict[str, float]:
        return {"p50_ms": self.p50, "p95_ms": self.p95, "p99_ms": self.p99}


@dataclass(frozen=True)
class Change:
    """A statistic on both sides, the candidate's change and its paired bootstrap interval, in the
    statistic's unit and relative to the baseline (None when the baseline's statistic is 0)."""

    baseline: float
    candidate: float
    change: float
    ci_low: float
    ci_high: float
    relative: float | None
    relative_ci_low: float | None
    relative_ci_high: float | None

    def to_dict(self) -> dict[str, float | None]:
        return {"baseline": self.baseline, "candidate": self.candidate, "change": self.change,
                "ci_low": self.ci_low, "ci_high": self.ci_high, "relative": self.relative,
                "relative_ci_low": self.relative_ci_low, "relative_ci_high": self.relative_ci_high}


@dataclass(frozen=True)
class LatencyComparison:
    query_count: int
    samples: int
    seed: int
    baseline: SideLatency
    candidate: SideLatency
    p50: Change
    p95: Change


@dataclass(frozen=True)
class CostComparison:
    """Cost per query (mean) and in total over the aligned queries."""

    query_count: int
    samples: int
    seed: int
    baseline_total: float
    candidate_total: float
    mean: Change


def _side(values: np.ndarray) -> SideLatency:
    p50, p95, p99 = (float(v) for v in np.percentile(values, PERCENTILES, method="linear"))
    return SideLatency(p50, p95, p99)


def _checked(baseline: np.ndarray, candidate: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    base = np.asarray(baseline, dtype=np.float64)
    cand = np.asarray(candidate, dtype=np.float64)
    if base.shape != cand.shape or base.ndim != 1 or not len(base):
        raise ValueError("latency: both sides need the same non-empty list of queries")
    if not (np.all(np.isfinite(base)) and np.all(np.isfinite(cand))):
        raise ValueError("latency: values must be finite")
    return base, cand


def _relative(change: float, base: float) -> float | None:
    return None if base == 0 else change / base


def _change(base_value: float, cand_value: float, diffs: np.ndarray, relatives: np.ndarray | None) -> Change:
    low, high = (float(v) for v in np.percentile(diffs, (LOWER_PCT, UPPER_PCT)))
    change = cand_value - base_value
    if relatives is None or base_value == 0:
        rel_low = rel_high = None
    else:
        finite = relatives[np.isfinite(relatives)]  # a resample whose baseline statistic is 0 has none
        rel_low, rel_high = ((float(v) for v in np.percentile(finite, (LOWER_PCT, UPPER_PCT)))
                             if len(finite) else (None, None))
    return Change(base_value, cand_value, change, low, high, _relative(change, base_value), rel_low, rel_high)


def compare_latency(baseline: np.ndarray, candidate: np.ndarray, samples: int, seed: int) -> LatencyComparison:
    """Per-side p50/p95/p99 and the p50 and p95 changes with paired bootstrap intervals."""
    base, cand = _checked(baseline, candidate)
    n = len(base)
    diffs = {p: np.empty(samples) for p in (50, 95)}
    relatives = {p: np.empty(samples) for p in (50, 95)}
    done = 0
    with np.errstate(divide="ignore", invalid="ignore"):
        for idx in index_blocks(n, samples, seed, chunk_rows_for(n)):
            rows = len(idx)
            b = np.percentile(base[idx], (50, 95), axis=1, method="linear")
            c = np.percentile(cand[idx], (50, 95), axis=1, method="linear")
            for k, p in enumerate((50, 95)):
                diffs[p][done:done + rows] = c[k] - b[k]
                relatives[p][done:done + rows] = (c[k] - b[k]) / b[k]
            done += rows
    side_b, side_c = _side(base), _side(cand)
    return LatencyComparison(n, samples, seed, side_b, side_c,
                             _change(side_b.p50, side_c.p50, diffs[50], relatives[50]),
                             _change(side_b.p95, side_c.p95, diffs[95], relatives[95]))


def compare_cost(baseline: np.ndarray, candidate: np.ndarray, samples: int, seed: int) -> CostComparison:
    """Mean cost per query on each side, its change with a paired bootstrap interval, and the totals."""
    base, cand = _checked(baseline, candidate)
    n = len(base)
    diffs = np.empty(samples)
    relatives = np.empty(samples)
    done = 0
    with np.errstate(divide="ignore", invalid="ignore"):
        for idx in index_blocks(n, samples, seed, chunk_rows_for(n)):
            b, c = base[idx].mean(axis=1), cand[idx].mean(axis=1)
            diffs[done:done + len(idx)] = c - b
            relatives[done:done + len(idx)] = (c - b) / b
            done += len(idx)
    mean = _change(float(base.mean()), float(cand.mean()), diffs, relatives)
    return CostComparison(n, samples, seed, float(base.sum()), float(cand.sum()), mean)


@dataclass(frozen=True)
class Resources:
    """What the two runs' timings say on the reporting set: the latency and cost comparisons (None
    where a side has no timings or no costs), each side's timings, and, when one side has timings
    and the other none, why there is no comparison."""

    baseline: Timings | None
    candidate: Timings | None
    latency: LatencyComparison | None
    cost: CostComparison | None
    note: str | None = None
    band_threshold_ms: float | None = None  # the noise band's p95 latency threshold


def _missing(side: str, what: str) -> str:
    return f"the {side} run's timings give no {what}"


def compare_resources(baseline: Timings | None, candidate: Timings | None, query_ids: Sequence[str], samples: int,
                      seed: int, *, baseline_why: str | None = None,
                      band_threshold_ms: float | None = None) -> Resources:
    """Latency and cost on ``query_ids`` (the reporting set: the queries the metric is compared on),
    paired: each resample takes the same queries on both sides, seeded as the metric's bootstrap.
    ``baseline_why``: why the baseline has no timings (an archived baseline of an older gate)."""
    if baseline is None or candidate is None or not query_ids:
        note = None
        if candidate is not None and baseline is None:
            note = baseline_why or "the baseline run has no timings"
        elif baseline is not None and candidate is None:
            note = "the candidate run has no timings"
        return Resources(baseline, candidate, None, None, note, band_threshold_ms)
    for side, timings in (("baseline", baseline), ("candidate", candidate)):
        index = timings.index()
        missing = sum(1 for qid in query_ids if qid not in index)
        if missing:  # an archived baseline's timings of an older query set
            return Resources(baseline, candidate, None, None, f"the {side}'s timings miss {missing} of the "
                             f"{len(query_ids)} queries compared", band_threshold_ms)
    base_latency, base_cost = baseline.aligned(query_ids)
    cand_latency, cand_cost = candidate.aligned(query_ids)
    latency = compare_latency(base_latency, cand_latency, samples, seed)
    cost = None
    if base_cost is not None and cand_cost is not None:
        cost = compare_cost(base_cost, cand_cost, samples, seed)
    return Resources(baseline, candidate, latency, cost, None, band_threshold_ms)


def cost_missing(resources: Resources) -> str | None:
    """Why there is no cost comparison (None: there is one, or neither side has timings)."""
    if resources.cost is not None or resources.baseline is None and resources.candidate is None:
        return None
    if resources.note is not None:
        return resources.note
    for side, timings in (("baseline", resources.baseline), ("candidate", resources.candidate)):
        if timings is not None and timings.cost is None:
            return _missing(side, "costs")
    return None
