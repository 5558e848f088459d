"""When a rerun can decide what the first look did not (``noise.rerun: adaptive``).

A look at ``ALPHA / 2`` must never pass, without a rerun, what one look at ``ALPHA`` would have
failed; beyond that, the candidate is rerun only where run-to-run noise is a large share of the
per-query spread and the verdict is one that averaging the noise away can change.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from gate.statistics.power import setup_check
from gate.verdict.levels import ALPHA, MIN_MOVERS, MOVERS_TO_SHOW, NOISE_SHARE_TO_RERUN, look_alpha, looks


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
                        alpha=alpha, level=ALPHA, min_movers=MIN_MOVERS, movers_to_show=MOVERS_TO_SHOW)
    looked = f"each look at {alpha:g}" if alpha < ALPHA else f"one look at {ALPHA:g}"
    word = "; the formula's word only" if again.mode == "non-inferiority" and again.supports else ""
    text = again.sentence.replace("(or repeated runs, or regression mode)", "(or more runs, or regression mode)")
    return (f"with noise.candidate_runs {candidate_runs} (a PR decided on means of {candidate_runs} runs each "
            f"side, sd and band / {root:.2f}, {looked}): {text}{word}")
