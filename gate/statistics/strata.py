"""Per-stratum paired comparison and its direction: improved, damaged, untouched or unclear.

For each stratum (a kind of query) the candidate is compared with the
baseline on that stratum's queries alone: mean of each, delta, a paired
bootstrap 95% interval (``ci_low``/``ci_high``, resampled within the stratum,
``default_rng(seed)`` per stratum, so one stratum's numbers do not depend on
the others), the two-sided sign-flip p-value, wins/losses/ties and the minimum
detectable effect - all descriptive - and the test that decides the direction:

**The bounded-mean test** (:func:`bounded_mean_test`; Gaffke 2005, Learned-Miller
& Thomas 2020, "A new confidence interval for the mean of a bounded random
variable"). Every measure lies in [0, 1], so a per-query difference lies in
``[a, b] = [-1, 1]``. For the stratum's ``n`` differences ``x`` the upper bound
on the mean is the ``1 - alpha/2`` quantile, over weights ``u ~ Dirichlet(1, ...,
1)`` with ``n + 1`` components, of ``sum_i u_i x_i + u_{n+1} b``: a Bayesian
bootstrap with one extra query at the largest gain possible; the lower bound
mirrors it with ``a``. ``bound_low``/``bound_high`` is that 95% interval (2.5% a
side); ``p_bound = min(1, 2 min(p_damaged, p_improved))`` with ``p_damaged``
the share of weights putting the upper sum at or above 0. Monte Carlo, seeded:
``samples`` rows of ``default_rng(seed).standard_exponential`` (rows normalised
to sum 1 are the Dirichlet weights), reduced without BLAS, so the numbers are the
same on every CPU and thread count.

Why this test: a direction feeds the verdict (the damaged share of traffic,
guarded strata), so it must speak for the stratum's *mean* whatever the shape
of the per-query changes. The exact sign-flip test decided strata of n <= 16
before 1.6; it tests symmetry, not the mean: where 10% of queries gain 0.6-1.0
and the rest lose a little (mean 0), a stratum of 8 misses every gain with
probability 0.9^8 = 43%, and its eight small losses gave p = 2/256, "damaged".
The percentile bootstrap CI of the larger strata trusts the sample the same
way. No test that trusts the sample can see gains it did not draw; this one
assumes nothing but the bounds. Learned-Miller & Thomas conjecture its coverage
for every distribution on [a, b] at every n (no counterexample is known) and
prove it never looser than Anderson's (1969) bound, whose coverage is proven.
``benchmarks/bench_strata.py`` measures both rules on symmetric, skewed,
sparse, reciprocal-rank-like and two-point nulls (true mean 0) at 5 to 60
queries: the old rule labelled up to 66% of such strata (45% of 8-query strata
under the skewed null above), this one at most 1.6%.

The price is reach: at least ``q / (1 - q)`` with ``q = 1 - 0.025^(1/n)`` must
separate the mean from 0 for a direction (0.13 at 30 queries, 0.063 at 60,
0.038 at 100; with k strata Holm asks for more), because a sample of n that
saw no large gain cannot rule out a population where ``q`` of the queries gain
1. Every rule valid for all distributions on [-1, 1] has that limit; the
benchmark prints the ceiling beside each power row.

Directions (:func:`gate.verdict.directions.decide_direction`: policy), on the Holm-adjusted ``p_bound`` across
the measured strata (family-wise error at most ``alpha`` over the table):

* ``improved`` / ``damaged``: Holm-adjusted ``p_bound < alpha`` (0.05, gate.verdict.levels), the
  side from the sign of the delta, and, when the stratum has a noise threshold
  (the run-to-run band, per stratum or global), ``|delta|`` above it;
* ``untouched`` - earned, never a default: the bounded interval lies within
  ``[-bar, +bar]``, ``bar`` the policy margin (``policy.max_regression``, 0.02 by
  default), or the stratum's noise threshold when one is given and larger: an
  equivalence claim (each end at 2.5%), i.e. the change is shown to be smaller
  than the margin, or than the stack's own run-to-run noise with an interval
  narrow enough to say so. The same interval as the directions, so the same
  reach: about 183 queries that did not move for a margin of 0.02, 72 for a
  band of 0.05. The percentile bootstrap CI would be more generous and wrong
  where it matters: where a tenth of the queries lose 0.3-0.7 (mean -0.05) it
  calls 43% of 8-query strata untouched (all eight unharmed) and 7% of 25-query
  ones (``benchmarks/bench_strata.py``). Not Holm-adjusted: no verdict rule
  reads it;
* ``unclear`` ("not shown either way") otherwise: neither a change nor its
  absence is shown. A stratum whose delta is -0.035 with an interval across
  zero is unclear, not untouched;
* ``not_measured``: a stratum with no query (possible on a held-out or
  leak-free subset), "n = 0, not measured".

``decided_by``: ``"bounded-mean test"`` (a direction), ``"equivalence"``
(untouched within the margin), ``"noise band"`` (untouched within a band wider
than the margin, or unclear because the shown change is within the band),
``"Holm-adjusted bounded-mean test"`` (unclear: shown on its own, not across the
strata), ``"neither shown"`` (unclear) or ``"none"`` (not measured).

An ``underpowered`` flag travels beside the direction, never instead of it:
set when ``n < min_n`` (25, gate.verdict.levels) or when the MDE exceeds the smallest effect that
would matter, ``max(noise threshold, min_effect)`` of those given.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .bootstrap import DEFAULT_SAMPLES, DEFAULT_SEED, as_differences, check_samples, check_seed, paired_bootstrap
from .holm import holm
from .paired import wins_losses_ties
from .power import minimum_detectable_effect
from .randomization import sign_flip_p

IMPROVED = "improved"
DAMAGED = "damaged"
UNTOUCHED = "untouched"
UNCLEAR = "unclear"
NOT_MEASURED = "not_measured"
DIRECTIONS = (IMPROVED, DAMAGED, UNTOUCHED, UNCLEAR)

#: ``policy.max_regression``'s default (gate.inputs.config): the equivalence margin of ``untouched``.
DEFAULT_MARGIN = 0.02
#: Every measure lies in [0, 1]: a per-query difference lies in [-1, 1].
BOUNDS = (-1.0, 1.0)
#: Exponentials drawn at once by :func:`bounded_mean_test` (8 MB).
MAX_BLOCK_DRAWS = 1_000_000

NOT_MEASURED_LABEL = "n = 0, not measured"

NoiseThreshold = Mapping[str, float] | float | None


class DirectionRule(Protocol):
    """What decides a stratum's direction (policy: :class:`gate.verdict.directions.StrataDirections`):
    the family-wise level of the bounded-mean test, the fewest queries before a stratum is
    flagged underpowered, and the rule on a stratum's statistics."""

    @property
    def alpha(self) -> float: ...

    @property
    def min_n(self) -> int: ...

    def direction(self, n: int, delta: float, low: float, high: float, p_holm: float | None,
                  threshold: float | None, margin: float, p_alone: float | None = None) -> tuple[str, str]: ...


def threshold_for(stratum: str, noise_threshold: NoiseThreshold) -> float | None:
    """The noise band that applies to ``stratum`` (a per-stratum dict, one global float, or none)."""
    if noise_threshold is None:
        return None
    if isinstance(noise_threshold, Mapping):
        value = noise_threshold.get(stratum)
        return None if value is None else float(value)
    return float(noise_threshold)


@dataclass(frozen=True)
class BoundedMean:
    """:func:`bounded_mean_test`'s result: the two-sided ``1 - alpha`` interval for the mean
    (``alpha / 2`` on each side) and the p-values of its one-sided tests of a zero mean."""

    low: float
    high: float
    p_damaged: float  # H0: mean >= 0 (small: the mean is shown below 0)
    p_improved: float  # H0: mean <= 0
    p_value: float  # two-sided: min(1, 2 * min(p_damaged, p_improved))


def bounded_mean_test(d, samples: int = DEFAULT_SAMPLES, seed: int = DEFAULT_SEED, *, alpha: float,
                      bounds: tuple[float, float] = BOUNDS) -> BoundedMean:
    """Gaffke's bound on the mean of a bounded variable (see the module docstring), both sides.

    ``w = default_rng(seed).standard_exponential((samples, n + 1))`` (drawn in row blocks;
    the blocks never change a number), each row normalised by its sum: Dirichlet(1, ..., 1)
    weights. With ``x`` the sorted differences and ``[a, b]`` the bounds (widened to the
    sample's own range should a value fall outside), ``M+ = (w[:n] @ x + w[n] b) / sum(w)``
    and ``M- = (w[:n] @ x + w[n] a) / sum(w)``; ``high`` is the ``1 - alpha/2`` quantile of
    ``M+``, ``low`` the ``alpha/2`` quantile of ``M-`` (``numpy.quantile``, linear),
    ``p_damaged = (1 + #{M+ >= 0}) / (samples + 1)``, ``p_improved = (1 + #{M- <= 0}) /
    (samples + 1)``. Sums are reduced row by row (``numpy.add.reduce``), never through BLAS,
    so the numbers are the same on every CPU and thread count. Raises ``ValueError`` on empty
    or non-finite input.
    """
    x = np.sort(as_differences(d))
    samples = check_samples(samples)
    seed = check_seed(seed)
    n = x.size
    a = min(float(bounds[0]), float(x[0]))
    b = max(float(bounds[1]), float(x[-1]))
    rows = max(1, MAX_BLOCK_DRAWS // (n + 1))
    rng = np.random.default_rng(seed)
    top_means = np.empty(samples, dtype=np.float64)
    bottom_means = np.empty(samples, dtype=np.float64)
    at_least_zero = at_most_zero = 0
    start = 0
    while start < samples:
        r = min(rows, samples - start)
        w = rng.standard_exponential(size=(r, n + 1))
        total = np.add.reduce(w, axis=1)
        body = np.add.reduce(w[:, :n] * x, axis=1)
        top = body + w[:, n] * b
        bottom = body + w[:, n] * a
        at_least_zero += int(np.count_nonzero(top >= 0.0))
        at_most_zero += int(np.count_nonzero(bottom <= 0.0))
        np.divide(top, total, out=top_means[start:start + r])
        np.divide(bottom, total, out=bottom_means[start:start + r])
        start += r
    p_damaged = (1 + at_least_zero) / (samples + 1)
    p_improved = (1 + at_most_zero) / (samples + 1)
    return BoundedMean(low=float(np.quantile(bottom_means, alpha / 2)),
                       high=float(np.quantile(top_means, 1 - alpha / 2)),
                       p_damaged=float(p_damaged), p_improved=float(p_improved),
                       p_value=float(min(1.0, 2 * min(p_damaged, p_improved))))


@dataclass(frozen=True)
class StratumResult:
    """One stratum's comparison. Statistics are ``None`` when ``n == 0``."""

    stratum: str
    n: int
    share: float | None
    baseline: float | None
    candidate: float | None
    delta: float | None
    ci_low: float | None  # paired percentile bootstrap (descriptive)
    ci_high: float | None
    p_randomization: float | None  # sign-flip (descriptive)
    randomization: str | None  # "exact" or "monte-carlo"
    p_bound: float | None  # two-sided p of the bounded-mean test: it decides
    bound_low: float | None  # its 95% interval
    bound_high: float | None
    p_holm: float | None  # p_bound, Holm-adjusted across the measured strata
    wins: int
    losses: int
    ties: int
    mde: float | None  # inf for one query
    noise_threshold: float | None
    margin: float  # untouched needs the bounded interval within +/- this
    underpowered: bool
    underpowered_reasons: tuple[str, ...]
    direction: str  # improved / damaged / untouched / unclear / not_measured
    decided_by: str
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
            "p_bound": _num(self.p_bound),
            "bound_low": _num(self.bound_low),
            "bound_high": _num(self.bound_high),
            "p_holm": _num(self.p_holm),
            "wins": self.wins,
            "losses": self.losses,
            "ties": self.ties,
            "mde": _num(self.mde),
            "noise_threshold": _num(self.noise_threshold),
            "margin": _num(self.margin),
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


def _check_table(base: np.ndarray, cand: np.ndarray, labels: Sequence[Hashable | None], margin: float) -> None:
    """ValueError for misaligned or non-finite scores, or a margin that is negative or not finite."""
    if base.ndim != 1 or base.shape != cand.shape:
        raise ValueError(f"baseline and candidate must be aligned 1-D arrays, got {base.shape} and {cand.shape}")
    if len(labels) != base.size:
        raise ValueError(f"strata_labels has {len(labels)} entries but there are {base.size} queries")
    if not (np.all(np.isfinite(base)) and np.all(np.isfinite(cand))):
        raise ValueError("per-query scores must be finite")
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not math.isfinite(margin) or margin < 0:
        raise ValueError(f"margin must be a finite number, 0 or more, got {margin!r}")


def _members(labels: Sequence[Hashable | None]) -> dict[str, list[int]]:
    """The queries (positions) of each stratum; a query without one (None, "") is in none."""
    members: dict[str, list[int]] = {}
    for i, lab in enumerate(labels):
        if lab is None or lab == "":
            continue
        members.setdefault(str(lab), []).append(i)
    return members


def _stratum_statistics(b: np.ndarray, c: np.ndarray, samples: int, seed: int, method: str,
                        alpha: float) -> dict[str, Any]:
    """A measured stratum's row fields: means, bootstrap interval, sign-flip and bounded-mean tests,
    wins/losses/ties and the minimum detectable effect."""
    d = c - b
    boot = paired_bootstrap(d, samples, seed, method)
    p, kind = sign_flip_p(d, samples, seed)
    bounded = bounded_mean_test(d, samples, seed, alpha=alpha)
    wlt = wins_losses_ties(d)
    return dict(baseline=float(b.mean()), candidate=float(c.mean()), delta=boot.mean,
                ci_low=boot.ci_low, ci_high=boot.ci_high, p_randomization=float(p), randomization=kind,
                p_bound=bounded.p_value, bound_low=bounded.low, bound_high=bounded.high,
                wins=wlt.wins, losses=wlt.losses, ties=wlt.ties, mde=minimum_detectable_effect(d))


def stratum_table(
    baseline,
    candidate,
    strata_labels: Sequence[Hashable | None],
    *,
    shares: Mapping[str, float] | None = None,
    guarded: Sequence[str] = (),
    noise_threshold: NoiseThreshold = None,
    min_effect: float | None = None,
    margin: float = DEFAULT_MARGIN,
    samples: int = DEFAULT_SAMPLES,
    seed: int = DEFAULT_SEED,
    method: str = "percentile",
    rule: DirectionRule,
) -> list[StratumResult]:
    """Per-stratum comparison of aligned per-query arrays.

    ``strata_labels[i]`` is query ``i``'s stratum (``None``: no stratum, left
    out of the table). Rows come in ``shares`` order (strata with a share but
    no query here get an ``n = 0, not measured`` row), then any other strata
    present, sorted. ``margin`` (``policy.max_regression``) bounds an ``untouched``
    stratum's interval; ``rule`` decides each direction at its level (the verdict's policy).
    Raises ``ValueError`` for misaligned input or a margin that is negative or not finite.
    """
    base = np.asarray(baseline, dtype=np.float64)
    cand = np.asarray(candidate, dtype=np.float64)
    labels = list(strata_labels)
    _check_table(base, cand, labels, margin)
    margin = float(margin)

    members = _members(labels)
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
                               "margin": margin, "guarded": stratum in guarded_set}
        if n == 0:
            row.update(baseline=None, candidate=None, delta=None, ci_low=None, ci_high=None,
                       p_randomization=None, randomization=None, p_bound=None, bound_low=None, bound_high=None,
                       wins=0, losses=0, ties=0, mde=None)
        else:
            row.update(_stratum_statistics(base[idx], cand[idx], samples, seed, method, rule.alpha))
        flag, reasons = _underpowered(n, row["mde"], threshold, min_effect, rule.min_n)
        row.update(underpowered=flag, underpowered_reasons=reasons, p_holm=None)
        rows.append(row)

    measured = [r for r in rows if r["n"] > 0]
    # A direction feeds the verdict (damaged traffic, guarded strata): across k strata, k
    # unadjusted tests would label some stratum far more often than alpha. Holm keeps the
    # family-wise error at most alpha.
    adjusted = holm([r["p_bound"] for r in measured]) if measured else np.zeros(0)
    for r, p in zip(measured, adjusted.tolist()):
        r["p_holm"] = float(p)
    for r in rows:
        if r["n"] == 0:
            r["direction"], r["decided_by"] = rule.direction(0, 0.0, 0.0, 0.0, None, None, margin)
        else:
            r["direction"], r["decided_by"] = rule.direction(
                r["n"], r["delta"], r["bound_low"], r["bound_high"], r["p_holm"], r["noise_threshold"], margin,
                p_alone=r["p_bound"])
    return [StratumResult(**r) for r in rows]
