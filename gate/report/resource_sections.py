"""The report's ``latency``, ``cost`` and ``timings_note`` sections (report.json 1.10)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gate.inputs.config import IncreaseLimit
from gate.inputs.readers.timings import Timings
from gate.statistics.latency import PERCENTILE_METHOD, Change, Resources, cost_missing
from gate.verdict.resource_limits import breached, latency_breached

__all__ = ["resource_sections"]


def _change(change: Change) -> dict[str, Any]:
    return change.to_dict()


def _judged(limit: IncreaseLimit | None, judge: Callable[[IncreaseLimit], bool | None]) -> dict[str, Any]:
    return {"limit": None if limit is None else f"+{limit.text()}",
            "breached": None if limit is None else judge(limit)}


def _wall(timings: Timings | None) -> float | None:
    return None if timings is None else timings.run_wall_time_ms


def resource_sections(resources: Resources, latency_limit: IncreaseLimit | None,
                      cost_limit: IncreaseLimit | None) -> dict[str, Any]:
    """``latency`` and ``cost`` (null without a comparison), and why there is none when one run has
    timings and the other not. Neither side without timings: both null and no note."""
    out: dict[str, Any] = {"latency": None, "cost": None}
    latency, cost = resources.latency, resources.cost
    base, cand = resources.baseline, resources.candidate
    if latency is not None and base is not None and cand is not None:
        out["latency"] = {
            "query_count": latency.query_count, "samples": latency.samples, "seed": latency.seed,
            "percentile_method": PERCENTILE_METHOD,
            "baseline": {**latency.baseline.to_dict(), "source": base.origin, "run_wall_time_ms": _wall(base)},
            "candidate": {**latency.candidate.to_dict(), "source": cand.origin, "run_wall_time_ms": _wall(cand)},
            "p50": _change(latency.p50), "p95": _change(latency.p95),
            "band_threshold_ms": resources.band_threshold_ms,
            **_judged(latency_limit, lambda limit: latency_breached(latency.p95, resources.band_threshold_ms, limit)),
        }
    if cost is not None and base is not None and cand is not None:
        out["cost"] = {
            "query_count": cost.query_count, "samples": cost.samples, "seed": cost.seed,
            "baseline": {"mean": cost.mean.baseline, "total": cost.baseline_total, "source": base.origin},
            "candidate": {"mean": cost.mean.candidate, "total": cost.candidate_total, "source": cand.origin},
            "mean": _change(cost.mean), **_judged(cost_limit, lambda limit: breached(cost.mean, None, limit)),
        }
    note = resources.note or (cost_missing(resources) if cost_limit is not None else None)
    if note is not None:
        out["timings_note"] = note
    return out
