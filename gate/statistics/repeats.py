"""Repeats: a verdict that run-to-run noise left undecided is decided on per-query means.

On a stack whose runs differ from rebuild to rebuild (an ANN index, a sampled reranker), one
candidate run against one baseline run carries two runs' noise in every per-query difference.
When that noise is what leaves the verdict undecided - non-inferiority not shown, a regression
shown statistically but inside the noise band, or a regression of the margin's size not ruled
out - the gate runs the candidate again (``noise.candidate_runs`` runs in all) and decides on
``mean(candidate runs) - mean(baseline runs)`` per query, the baseline's runs being the archived
run and the identical repeats ``archive --noise-repeats`` stored beside it.

The first look and the look on means are two chances at each claim: with ``adaptive`` reruns
each look tests at ``ALPHA / 2`` (Bonferroni over the two looks), so the chance of any false
claim over both stays at most ``ALPHA`` whatever the looks' correlation (they share the
queries, so it is high and the split is conservative); ``benchmarks/bench_repeats.py`` measures
both errors with and without repeats. ``always`` runs every repeat up front: one look, ``ALPHA``.

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

from .evidence import ALPHA
from .power import setup_check

#: Reruns only when run-to-run noise is at least this share of the variance of the per-query
#: differences: below it, averaging it away cannot move the interval much (a quarter of the
#: variance gone shortens it by at most 13%), and the runner's time is better saved.
NOISE_SHARE_TO_RERUN = 0.25
RERUN_MODES = ("adaptive", "always")


def looks(candidate_runs: int, rerun: str) -> int:
    """How many looks the verdict may take: two when reruns are adaptive, else one."""
    return 2 if candidate_runs > 1 and rerun == "adaptive" else 1


def look_alpha(look_count: int) -> float:
    """Each look's one-sided level: ``ALPHA`` split evenly (Bonferroni)."""
    return ALPHA / look_count


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


def undecided_by_noise(mode: str, codes: Sequence[str], evidence: Any, margin: float, band: float | None,
                       share: float) -> str | None:
    """Why a rerun can decide what this look did not, or None. ``codes`` are the verdict's
    reason codes, ``evidence`` the look's :class:`gate.statistics.evidence.Evidence`.

    A look at ``ALPHA / 2`` must never pass, without a rerun, what one look at ``ALPHA`` would
    have failed: a regression the sign-flip test shows at ``ALPHA`` but not at the look's level
    is a reason to rerun, as is one shown inside the band or one of the margin not ruled out."""
    if band is None or band <= 0.0 or evidence is None:
        return None
    if _shown_only_at_alpha(codes, evidence):
        # whatever the noise's share: a look at ALPHA / 2 must not pass, without looking again,
        # what one look at ALPHA fails (the means may still not show it: adaptive's price)
        return (f"a regression the sign-flip test shows at {ALPHA:g} but not at this look's {evidence.alpha:g}, "
                f"on a stack whose builds differ")
    if mode == "non-inferiority" and "too_few_movers" in codes:
        # Too few queries moved for any claim: on a stack whose builds differ, each run moves some
        # queries, and means over several move more; the noise share (a ratio of two tiny
        # variances here) does not say whether reruns help.
        return "too few queries moved for non-inferiority, on a stack whose builds differ"
    if share < NOISE_SHARE_TO_RERUN:
        return None
    noise = f"run-to-run noise is {share:.0%} of the per-query spread"
    return _rerun_for_noise(mode, codes, evidence, margin, band, noise)


def _shown_only_at_alpha(codes: Sequence[str], evidence: Any) -> bool:
    """A regression the sign-flip test shows at ALPHA but a look at a stricter level does not."""
    return (("no_regression_shown" in codes or "non_inferior" in codes) and evidence.mean < 0
            and evidence.p_regression <= ALPHA and evidence.alpha < ALPHA
            and not (evidence.t_high < 0 and evidence.p_regression <= evidence.alpha))


def _rerun_for_noise(mode: str, codes: Sequence[str], evidence: Any, margin: float, band: float,
                     noise: str) -> str | None:
    """Why a rerun can decide what this look did not, once the noise is a large share of the spread."""
    if "improvement_required" in codes and evidence.mean > 0:
        return f"an improvement not shown, and {noise}"
    if mode == "non-inferiority":
        if "underpowered" in codes:
            return f"non-inferiority not shown, and {noise}"
        return None
    if "no_regression_shown" in codes and evidence.mean < 0:
        if evidence.t_high < 0 and evidence.p_regression <= evidence.alpha:
            return f"a regression shown within the noise band ±{band:.3f}, and {noise}"
        if evidence.t_low < -margin:
            return f"a regression of {margin:g} not ruled out, and {noise}"
    return None


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


def setup_with_repeats(setup: dict[str, Any], candidate_runs: int, rerun: str = "always") -> str | None:
    """The setup check's formula once more for a difference of means over ``candidate_runs`` runs
    each side (noise sd and band shrink by ``sqrt(candidate_runs)``; with adaptive reruns the
    deciding look is at ALPHA / 2), from a stored :class:`gate.statistics.power.SetupCheck` dict,
    when no repeats are at hand to put the rule itself through simulated PRs
    (:func:`gate.verdict.calibration.setup_for_repeats` does). None when there is no noise to
    average (unknown or deterministic) or no reruns are configured."""
    sd = setup.get("noise_sd")
    if candidate_runs <= 1 or not isinstance(sd, (int, float)) or not sd > 0:
        return None
    root = math.sqrt(candidate_runs)
    band = setup.get("band")
    alpha = look_alpha(looks(candidate_runs, rerun))
    again = setup_check(int(setup["n"]), float(setup["margin"]), str(setup["mode"]), float(sd) / root,
                        float(band) / root if isinstance(band, (int, float)) else None, setup.get("mover_share"),
                        alpha)
    looked = f"each look at {alpha:g}" if alpha < ALPHA else f"one look at {ALPHA:g}"
    word = "; the formula's word only" if again.mode == "non-inferiority" and again.supports else ""
    text = again.sentence.replace("(or repeated runs, or regression mode)", "(or more runs, or regression mode)")
    return (f"with noise.candidate_runs {candidate_runs} (a PR decided on means of {candidate_runs} runs each "
            f"side, sd and band / {root:.2f}, {looked}): {text}{word}")
