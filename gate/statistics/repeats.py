"""Repeats: a verdict that run-to-run noise left undecided is decided on per-query means.

On a stack whose runs differ from rebuild to rebuild (an ANN index, a sampled reranker), one
candidate run against one baseline run carries two runs' noise in every per-query difference.
When that noise is what leaves the verdict undecided - non-inferiority not shown, a regression
shown statistically but inside the noise band, or a regression of the margin's size not ruled
out - the gate runs the candidate again (``noise.candidate_runs`` runs in all) and decides on
``mean(candidate runs) - mean(baseline runs)`` per query, the baseline's runs being the archived
run and the identical repeats ``archive --noise-repeats`` stored beside it.

The first look and the look on means are two chances at each claim: with ``adaptive`` reruns
each look tests at half the level (Bonferroni over the two looks: gate.verdict.levels), so the
chance of any false claim over both stays at the level whatever the looks' correlation (they
share the queries, so it is high and the split is conservative); ``benchmarks/bench_repeats.py``
measures both errors with and without repeats. ``always`` runs every repeat up front: one look.
When a rerun can decide what the first look did not is the verdict's rule
(gate.verdict.reruns).

The band a mean is compared with shrinks as the noise of the difference does: a single run's
difference has twice one run's noise variance, a difference of means over ``R`` candidate and
``B`` baseline runs ``1/R + 1/B`` times it, so the threshold is scaled by ``sqrt((1/R + 1/B) / 2)``
(1 for one run each).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

RERUN_MODES = ("adaptive", "always")


def scaled_threshold(threshold: float, candidate_runs: int, baseline_runs: int) -> float:
    """The noise band of a difference of means over ``candidate_runs`` and ``baseline_runs``."""
    return threshold * math.sqrt((1.0 / candidate_runs + 1.0 / baseline_runs) / 2.0)


def noise_variance(runs: Sequence[np.ndarray]) -> np.ndarray:
    """Per-query variance (ddof 1) across identical runs (a runs x queries stack)."""
    matrix = np.vstack([np.asarray(r, dtype=np.float64) for r in runs])
    if matrix.shape[0] < 2:
        raise ValueError("a per-query noise variance needs at least two runs")
    return matrix.var(axis=0, ddof=1)


def noise_share(differences: np.ndarray, per_query_noise: np.ndarray) -> float:
    """The share of the per-query differences' variance that one candidate and one baseline
    run's noise explain (``2 x`` the mean per-query noise variance), at most 1."""
    d = np.asarray(differences, dtype=np.float64)
    if d.size < 2:
        return 0.0
    total = float(d.var(ddof=1))
    noise = 2.0 * float(np.mean(per_query_noise)) if len(per_query_noise) else 0.0
    if noise <= 0.0:
        return 0.0
    return 1.0 if total <= 0.0 else min(1.0, noise / total)


@dataclass(frozen=True)
class Look:
    """One look at the verdict: on single runs (the first) or on per-query means."""

    candidate_runs: int
    baseline_runs: int
    alpha: float
    kind: str  # the verdict's kind at this look
    codes: tuple[str, ...]
    delta: float
    low: float  # the decision interval
    high: float
    band: float | None

    def to_dict(self) -> dict[str, Any]:
        def num(value: float | None) -> float | None:
            return None if value is None or not math.isfinite(value) else float(value)

        return {"candidate_runs": self.candidate_runs, "baseline_runs": self.baseline_runs, "alpha": self.alpha,
                "kind": self.kind, "reasons": list(self.codes), "delta": num(self.delta), "low": num(self.low),
                "high": num(self.high), "band": num(self.band)}


@dataclass(frozen=True)
class Repeats:
    """What the report says about repeats: the setting, each look, and why (not) rerun."""

    candidate_runs: int  # configured (noise.candidate_runs)
    rerun: str  # adaptive | always
    looks: tuple[Look, ...]
    reason: str  # why the candidate was (or was not) run again
    noise_share: float | None
    seeds: tuple[int, ...] = ()  # the reruns' seeds

    def to_dict(self) -> dict[str, Any]:
        return {"candidate_runs": self.candidate_runs, "rerun": self.rerun,
                "looks": [look.to_dict() for look in self.looks], "reason": self.reason,
                "noise_share": self.noise_share, "seeds": list(self.seeds),
                "decided_on_means": bool(self.looks) and self.looks[-1].candidate_runs > 1}
