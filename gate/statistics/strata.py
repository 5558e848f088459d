"""Per-stratum paired comparison and its direction: improved, damaged or untouched.

For each stratum (a kind of query) the candidate is compared with the
baseline on that stratum's queries alone: mean of each, delta, a paired
bootstrap 95% interval (resampled within the stratum, ``default_rng(seed)``
per stratum, so one stratum's numbers do not depend on the others), the
two-sided sign-flip p-value, Holm's adjustment of those p-values across the
measured strata, wins/losses/ties, and the minimum detectable effect.

Direction (:func:`decide_direction`) is decided by evidence, never by the sign
alone:

* ``n > 16``: the bootstrap CI must exclude 0 (``ci_low > 0`` improved,
  ``ci_high < 0`` damaged);
* ``n <= 16``: the bootstrap interval of a handful of queries is too ragged
  to trust, so the exact sign-flip test decides (``p < alpha``, direction
  from the sign of the delta);
* when the stratum has a noise threshold (the run-to-run band, per stratum or
  global), ``|delta|`` must also exceed it;
* anything else is ``untouched``. A stratum with no query (possible on a
  held-out or leak-free subset) is ``not_measured`` ("n = 0, not measured").

A direction also needs the Holm-adjusted sign-flip p-value (across the measured
strata) below ``alpha``: directions feed the verdict (damaged traffic, guarded
strata), and k unadjusted intervals would label some untouched stratum far more
often than ``alpha`` (30% with six strata). Family-wise, at most ``alpha``.

An ``underpowered`` flag travels beside the direction, never instead of it:
set when ``n < min_n`` (25) or when the MDE exceeds the smallest effect that
would matter, ``max(noise threshold, min_effect)`` of those given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Hashable, Mapping, Sequence

import numpy as np

from .bootstrap import DEFAULT_SAMPLES, DEFAULT_SEED, paired_bootstrap
from .holm import holm
from .paired import wins_losses_ties
from .power import minimum_detectable_effect
from .randomization import EXACT_MAX_N, sign_flip_p

IMPROVED = "improved"
DAMAGED = "damaged"
UNTOUCHED = "untouched"
NOT_MEASURED = "not_measured"
DIRECTIONS = (IMPROVED, DAMAGED, UNTOUCHED)

#: Below this many queries a stratum is flagged underpowered.
MIN_N = 25
#: Level for the exact test and the CI (95%).
ALPHA = 0.05

NOT_MEASURED_LABEL = "n = 0, not measured"

NoiseThreshold = Mapping[str, float] | float | None


def threshold_for(stratum: str, noise_threshold: NoiseThreshold) -> float | None:
    """The noise band that applies to ``stratum`` (a per-stratum dict, one global float, or none)."""
    if noise_threshold is None:
        return None
    if isinstance(noise_threshold, Mapping):
        value = noise_threshold.get(stratum)
        return None if value is None else float(value)
    return float(noise_threshold)


@dataclass(frozen=True)
class StratumResult:
    """One stratum's comparison. Statistics are ``None`` when ``n == 0``."""

    stratum: str
    n: int
    share: float | None
    baseline: float | None
    candidate: float | None
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    p_randomization: float | None
    randomization: str | None  # "exact" or "monte-carlo"
    p_holm: float | None
    wins: int
    losses: int
    ties: int
    mde: float | None  # inf for one query
    noise_threshold: float | None
    underpowered: bool
    underpowered_reasons: tuple[str, ...]
    direction: str  # improved / damaged / untouched / not_measured
    decided_by: str  # "bootstrap CI", "exact sign-flip", "none"
    guarded: bool = False

    @property
    def measured(self) -> bool:
        return self.n > 0

    @property
    def label(self) -> str | None:
        """``"n = 0, not measured"`` for an empty stratum, else ``None``."""
        return None if self.measured else NOT_MEASURED_LABEL

    def to_dict(self) -> dict[str, Any]:
        return {
            "stratum": self.stratum,
            "n": self.n,
            "share": _num(self.share),
            "baseline": _num(self.baseline),
            "candidate": _num(self.candidate),
            "delta": _num(self.delta),
            "ci_low": _num(self.ci_low),
            "ci_high": _num(self.ci_high),
            "p_randomization": _num(self.p_randomization),
            "randomization": self.randomization,
            "p_holm": _num(self.p_holm),
            "wins": self.wins,
            "losses": self.losses,
            "ties": self.ties,
            "mde": _num(self.mde),
            "noise_threshold": _num(self.noise_threshold),
            "underpowered": self.underpowered,
            "underpowered_reasons": list(self.underpowered_reasons),
            "direction": self.direction,
            "decided_by": self.decided_by,
            "guarded": self.guarded,
            "label": self.label,
        }


def _num(value: float | None) -> float | None:
    """JSON has no NaN or infinity: non-finite numbers become null."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def decide_direction(n: int, delta: float, ci_low: float, ci_high: float, p_exact: float | None,
                     threshold: float | None = None, alpha: float = ALPHA,
                     exact_max_n: int = EXACT_MAX_N) -> tuple[str, str]:
    """``(direction, decided_by)`` for one stratum; see the module docstring for the rules.

    ``decided_by`` is ``"bootstrap CI"``, ``"exact sign-flip"``, ``"noise band"``
    (``|delta|`` within the threshold) or ``"none"`` (not measured).
    """
    if n == 0:
        return NOT_MEASURED, "none"
    if threshold is not None and not abs(delta) > threshold:
        # Inside the noise band: whatever the test says, nothing moved that the
        # stack does not move on its own.
        return UNTOUCHED, "noise band"
    if n <= exact_max_n:
        if p_exact is not None and p_exact < alpha and delta != 0:
            return (IMPROVED if delta > 0 else DAMAGED), "exact sign-flip"
        return UNTOUCHED, "exact sign-flip"
    if ci_low > 0 and delta > 0:
        return IMPROVED, "bootstrap CI"
    if ci_high < 0 and delta < 0:
        return DAMAGED, "bootstrap CI"
    return UNTOUCHED, "bootstrap CI"


def _underpowered(n: int, mde: float | None, threshold: float | None, min_effect: float | None,
                  min_n: int) -> tuple[bool, tuple[str, ...]]:
    reasons: list[str] = []
    if n < min_n:
        reasons.append(f"n = {n} < {min_n}")
    bars = [b for b in (threshold, min_effect) if b is not None]
    if n > 0 and bars and mde is not None:
        bar = max(bars)
        if mde > bar:
            shown = "inf" if math.isinf(mde) else f"{mde:.4f}"
            reasons.append(f"MDE {shown} > {bar:.4f}")
    return bool(reasons), tuple(reasons)


def stratum_table(
    baseline,
    candidate,
    strata_labels: Sequence[Hashable | None],
    *,
    shares: Mapping[str, float] | None = None,
    guarded: Sequence[str] = (),
    noise_threshold: NoiseThreshold = None,
    min_effect: float | None = None,
    samples: int = DEFAULT_SAMPLES,
    seed: int = DEFAULT_SEED,
    method: str = "percentile",
    alpha: float = ALPHA,
    min_n: int = MIN_N,
) -> list[StratumResult]:
    """Per-stratum comparison of aligned per-query arrays.

    ``strata_labels[i]`` is query ``i``'s stratum (``None``: no stratum, left
    out of the table). Rows come in ``shares`` order (strata with a share but
    no query here get an ``n = 0, not measured`` row), then any other strata
    present, sorted. Raises ``ValueError`` for misaligned input.
    """
    base = np.asarray(baseline, dtype=np.float64)
    cand = np.asarray(candidate, dtype=np.float64)
    labels = list(strata_labels)
    if base.ndim != 1 or base.shape != cand.shape:
        raise ValueError(f"baseline and candidate must be aligned 1-D arrays, got {base.shape} and {cand.shape}")
    if len(labels) != base.size:
        raise ValueError(f"strata_labels has {len(labels)} entries but there are {base.size} queries")
    if not (np.all(np.isfinite(base)) and np.all(np.isfinite(cand))):
        raise ValueError("per-query scores must be finite")

    members: dict[str, list[int]] = {}
    for i, lab in enumerate(labels):
        if lab is None or lab == "":
            continue
        members.setdefault(str(lab), []).append(i)
    order = list(shares) if shares is not None else []
    order += sorted(s for s in members if s not in order)
    guarded_set = {str(g) for g in guarded}

    rows: list[dict[str, Any]] = []
    for stratum in order:
        idx = np.asarray(members.get(stratum, []), dtype=np.int64)
        n = int(idx.size)
        share = None if shares is None or stratum not in shares else float(shares[stratum])
        threshold = threshold_for(stratum, noise_threshold)
        row: dict[str, Any] = {"stratum": stratum, "n": n, "share": share, "noise_threshold": threshold,
                               "guarded": stratum in guarded_set}
        if n == 0:
            row.update(baseline=None, candidate=None, delta=None, ci_low=None, ci_high=None,
                       p_randomization=None, randomization=None, wins=0, losses=0, ties=0, mde=None,
                       direction=NOT_MEASURED, decided_by="none")
        else:
            b, c = base[idx], cand[idx]
            d = c - b
            boot = paired_bootstrap(d, samples, seed, method)
            p, kind = sign_flip_p(d, samples, seed)
            wlt = wins_losses_ties(d)
            mde = minimum_detectable_effect(d)
            direction, decided_by = decide_direction(n, boot.mean, boot.ci_low, boot.ci_high,
                                                     p if kind == "exact" else None, threshold, alpha)
            row.update(baseline=float(b.mean()), candidate=float(c.mean()), delta=boot.mean,
                       ci_low=boot.ci_low, ci_high=boot.ci_high, p_randomization=float(p), randomization=kind,
                       wins=wlt.wins, losses=wlt.losses, ties=wlt.ties, mde=mde,
                       direction=direction, decided_by=decided_by)
        flag, reasons = _underpowered(n, row["mde"], threshold, min_effect, min_n)
        row.update(underpowered=flag, underpowered_reasons=reasons)
        rows.append(row)

    measured = [r for r in rows if r["n"] > 0]
    adjusted = holm([r["p_randomization"] for r in measured]) if measured else np.zeros(0)
    for r, p in zip(measured, adjusted.tolist()):
        r["p_holm"] = float(p)
        # A direction feeds the verdict (damaged traffic, guarded strata): across k strata,
        # k unadjusted 95% intervals label some untouched stratum 30% of the time. It stands
        # only when Holm's adjusted sign-flip p also says so (family-wise error <= alpha).
        if r["direction"] in (IMPROVED, DAMAGED) and not p < alpha:
            r["direction"], r["decided_by"] = UNTOUCHED, "Holm-adjusted sign-flip"
    return [StratumResult(**{"p_holm": None, **r}) for r in rows]
