"""How small a mean difference this query set could have detected.

The minimum detectable effect uses the normal approximation to the sampling
distribution of a paired mean:

    MDE = (z_{1 - alpha/2} + z_{power}) * sd(d, ddof=1) / sqrt(n)

With the defaults (two-sided alpha 0.05, power 0.8) the multiplier is
``1.95996 + 0.84162 = 2.80158``.  It is an approximation: it ignores the
uncertainty in the estimated sd (a t-based figure would be a little larger on
small query sets) and assumes the mean difference is roughly normal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import cast

import numpy as np

from gate.common.numbers import counted

from .bootstrap import as_differences

_STD_NORMAL = NormalDist()


def difference_sd(d) -> float:
    """Sample standard deviation of ``d`` (``ddof=1``); 0.0 when ``n < 2``.

    One query carries no information about spread; rather than NaN, the report
    shows 0.0 here and ``inf`` for the minimum detectable effect.
    """
    d = as_differences(d)
    if d.size < 2:
        return 0.0
    return float(np.std(d, ddof=1))


def minimum_detectable_effect(d, alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest true mean difference detected with probability ``power`` (normal approximation).

    ``(z_{1-alpha/2} + z_power) * sd(d, ddof=1) / sqrt(n)`` with quantiles from
    :class:`statistics.NormalDist`.  Returns ``inf`` - not estimable - when
    ``n < 2`` or when every difference is equal (no query moved, or all by the
    same amount: no spread is seen, so no effect size can be promised; 0.000
    would claim that any change is detectable).  Never NaN.  Raises ``ValueError`` on empty input or
    ``alpha``/``power`` outside ``(0, 1)``.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if not 0.0 < power < 1.0:
        raise ValueError(f"power must be in (0, 1), got {power!r}")
    d = as_differences(d)
    n = d.size
    if n < 2:
        return math.inf
    multiplier = _STD_NORMAL.inv_cdf(1.0 - alpha / 2.0) + _STD_NORMAL.inv_cdf(power)
    sd = difference_sd(d)
    if sd <= 1e-12:  # all equal (up to rounding: np.full(10, 0.3) has sd 5.9e-17)
        return math.inf
    return float(multiplier * sd / math.sqrt(n))


# --------------------------------------------------------------------------- what the set can catch

# The levels are the policy's, given by the caller (gate.verdict.levels, a later stage this one
# cannot import): ``alpha`` the one-sided level a look tests a claim at (ALPHA, or its share at
# one of several looks), ``level`` the one-sided level the set's reach is said at (ALPHA: the
# share of queries a sample misses), ``min_movers`` the moving queries a claim needs (MIN_MOVERS)
# and ``movers_to_show`` the fewest a regression is shown on (MOVERS_TO_SHOW: 2**-k <= ALPHA).

#: Power of the line every verdict states.
POWER = 0.8
#: queries_needed stops looking here
QUERIES_LIMIT = 10_000_000


def unseen_share(n: int, *, level: float) -> float:
    """The share of queries a regression can sit on and still be missed by a sample of ``n``
    more often than ``level``: ``1 - level ** (1 / n)`` (a sample holds none of a share ``p``
    with probability ``(1 - p) ** n``). At 0.025, 43 queries: 8.2%; 140: 2.6%; 500: 0.74%."""
    if n < 1:
        return 1.0
    return 1.0 - level ** (1.0 / n)


def t_quantile(p: float, df: int) -> float:
    """Student's t quantile: exact for 1 and 2 degrees of freedom, else the Cornish-Fisher
    expansion (Abramowitz & Stegun 26.7.5), a few parts in 10,000 from 3 degrees of freedom on:
    enough for a stated power, and no scipy."""
    if df <= 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2.0 * p - 1.0) / math.sqrt(2.0 * p * (1.0 - p))
    z = _STD_NORMAL.inv_cdf(p)
    v = float(max(df, 1))
    g1 = (z**3 + z) / 4.0
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96.0
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384.0
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160.0
    return z + g1 / v + g2 / v**2 + g3 / v**3 + g4 / v**4


def detectable_regression(sd: float, n: int, band: float | None = None, *, alpha: float) -> float | None:
    """The regression caught with probability :data:`POWER` by a one-sided test at ``alpha``
    that must also exceed the noise ``band``: the mean of ``n`` differences of spread ``sd`` is
    below ``-max(band, t_a se)`` with probability 0.8 when the true mean is
    ``-(max(band, t_a se) + t_0.8 se)`` (``se = sd / sqrt n``, t quantiles with ``n - 1`` degrees
    of freedom). ``None`` when no spread is seen (``sd`` 0, ``n < 2``).
    benchmarks/bench_decision.py measures how often the gate's rule fails at this value."""
    if n < 2 or not sd > 1e-12 or not math.isfinite(sd):
        return None
    se = sd / math.sqrt(n)
    return max(band or 0.0, t_quantile(1.0 - alpha, n - 1) * se) + t_quantile(POWER, n - 1) * se


def queries_needed(sd: float, target: float, band: float | None = None, limit: int = QUERIES_LIMIT, *,
                   alpha: float, movers_to_show: int) -> int | None:
    """The fewest queries, ``movers_to_show`` or more, for a regression of ``target`` to be caught
    80% of the time at spread ``sd`` by a one-sided test at ``alpha`` (:func:`detectable_regression`
    <= target); ``None`` when no number of queries does (the target is within the noise band) or
    no spread is known."""
    if not sd > 1e-12 or not math.isfinite(sd) or target <= (band or 0.0):
        return None
    # detectable_regression falls as n grows: the fewest n that reaches the target
    # (a known spread: detectable_regression gives a number)
    return _fewest(lambda n: cast(float, detectable_regression(sd, n, band, alpha=alpha)) <= target + 1e-12,
                   movers_to_show, limit)


@dataclass(frozen=True)
class Detectable:
    """What this golden set can catch, measured from this PR's own per-query differences: the
    regression a one-sided test (beyond the noise band when one is given) catches 80% of the
    time, how many queries moved, the share of queries a regression can sit on and go unseen,
    and how many queries the margin would need at this spread. ``alpha`` is the one-sided level
    the verdict's look tests at, ``movers_to_show`` the fewest moving queries a regression is
    shown on (the policy's, said whatever the look's level)."""

    n: int
    movers: int
    sd: float
    band: float | None
    regression_80: float | None  # a positive size; None: not estimable (no spread)
    unseen_share: float
    margin: float
    queries_for_margin: int | None
    alpha: float  # the one-sided level the verdict's look tests at
    movers_to_show: int  # said, not reported: a regression on fewer moving queries is never shown

    @property
    def sentence(self) -> str:
        queries = counted(self.n, "query", "queries")
        if self.regression_80 is None:
            why = ("one query has no spread" if self.n < 2 else "no query moved" if self.movers == 0
                   else "every query moved by the same amount")
            return f"{queries}: what this set can catch is not estimable from this PR ({why})"
        # three decimals, or two significant digits for a set that catches less than 0.001
        size = f"-{self.regression_80:.3f}" if self.regression_80 >= 0.0005 else f"-{self.regression_80:.2g}"
        text = f"{queries}: a {size} regression is caught 80% of the time"
        if self.movers < self.movers_to_show:
            text += (f" if it moves at least {self.movers_to_show} queries (this PR moved {self.movers}; a regression "
                     f"on fewer is never shown)")
        text += (f"; one carried by fewer than {_share(self.unseen_share)} of the queries can be missed entirely")
        if self.margin > 0 and self.regression_80 > self.margin:
            need = self.queries_for_margin
            if need is not None:
                text += f"; the margin -{self.margin:g} would need {need:,} queries at this spread"
            elif self.band is not None and self.margin <= self.band:
                text += f"; the margin -{self.margin:g} is within the noise band"
            else:
                text += f"; the margin -{self.margin:g} would need more than {QUERIES_LIMIT:,} queries"
        return text

    def to_dict(self) -> dict[str, object]:
        return {"n": self.n, "movers": self.movers, "sd": self.sd, "band": self.band, "power": POWER,
                "alpha": self.alpha, "regression_80": self.regression_80, "unseen_share": self.unseen_share,
                "margin": self.margin, "queries_for_margin": self.queries_for_margin, "sentence": self.sentence}


def _share(value: float) -> str:
    """A share with the decimals it needs: 8.2%, 0.74%, 0.0074%, 26%."""
    if value >= 0.1:
        return f"{value:.0%}"
    digits = 1
    while digits < 6 and round(value * 100, digits) == 0:
        digits += 1
    return f"{value:.{digits + (1 if value < 0.01 else 0)}%}"


def detectable(d, margin: float, band: float | None = None, *, alpha: float, level: float,
               movers_to_show: int) -> Detectable:
    """:class:`Detectable` for the per-query differences ``d`` of one PR, at the one-sided level
    ``alpha`` its verdict is tested at; the share of queries a sample misses is said at ``level``
    (the policy's one-sided level, whatever the look's), and ``movers_to_show`` is the fewest
    moving queries a regression is shown on."""
    d = as_differences(d)
    n = int(d.size)
    sd = difference_sd(d)
    return Detectable(n=n, movers=int(np.count_nonzero(d != 0)), sd=sd, band=band,
                      regression_80=detectable_regression(sd, n, band, alpha=alpha),
                      unseen_share=unseen_share(n, level=level), margin=float(margin),
                      queries_for_margin=queries_needed(sd, margin, band, alpha=alpha, movers_to_show=movers_to_show),
                      alpha=alpha, movers_to_show=movers_to_show)


# --------------------------------------------------------------------------- the setup check

#: A no-op PR (run-to-run noise only) must pass non-inferiority this often for the set to
#: "support" the margin (the blocking goal of benchmarks/bench_decision.py: blocked at most 5%).
NO_OP_PASS = 0.95
#: ... and see at least ``min_movers`` moving queries this often, at the stack's share of movers.
MOVERS_SEEN = 0.99


def _no_op_passes(sd: float, n: int, margin: float, alpha: float) -> bool:
    """Whether a no-op PR passes non-inferiority at least 95% of the time on ``n`` queries: the
    lower end of a one-sided ``alpha`` t bound at most ``margin`` below 0 with probability
    ``1 - alpha``, less the ``alpha`` of no-op PRs a valid regression test fails by design (fail is
    decided first): ``margin >= 2 t_{1-alpha} sd / sqrt n`` (at 0.025: 97.5%, 2.5%, t_0.975)."""
    return margin * math.sqrt(n) >= 2.0 * t_quantile(1.0 - alpha, n - 1) * sd


def _movers_seen(n: int, share: float, min_movers: int) -> bool:
    """P(at least ``min_movers`` of n queries move) >= MOVERS_SEEN when each moves with ``share``."""
    if share >= 1.0:
        return n >= min_movers
    if share <= 0.0:
        return False
    below = sum(math.comb(n, k) * share**k * (1.0 - share) ** (n - k) for k in range(min(min_movers, n + 1)))
    return below <= 1.0 - MOVERS_SEEN


def _fewest(test, start: int = 2, limit: int = QUERIES_LIMIT) -> int | None:
    """The fewest n >= start for which ``test(n)`` holds (it stays true once true): doubling, then
    bisection."""
    high = max(start, 2)
    while not test(high):
        if high > limit:
            return None
        high *= 2
    low = max(start, 2) - 1
    while high - low > 1:
        mid = (low + high) // 2
        if test(mid):
            high = mid
        else:
            low = mid
    return high


def any_shape_queries(margin: float, *, level: float) -> int | None:
    """Queries a sample needs before a -margin loss sitting wholly on queries that each lose the
    most they can (1.0, a share ``margin`` of them) is missed at most ``level`` of the time:
    ``ln(level) / ln(1 - margin)`` (183 at 0.02 and a level of 0.025). ``None`` for a margin of 0
    (never)."""
    if not 0.0 < margin < 1.0:
        return None
    return math.ceil(math.log(level) / math.log1p(-margin))


@dataclass(frozen=True)
class SetupCheck:
    """Whether a golden set of ``n`` queries supports the margin on this stack, said before any
    PR: from the per-query spread of A/A differences (identical runs; ``noise_sd``) when repeats
    were measured. Non-inferiority mode: a no-op PR passes at least 95% of the time when
    ``margin >= 2 t_{1-alpha} noise_sd / sqrt n`` (t_0.975 at the gate's 0.025) and the claim's
    minimum of moving queries (5) move 99% of the time at the stack's share of movers. Regression
    mode: a -margin regression is caught 80% of the time, at the stack's own noise (a real change
    only adds spread)."""

    n: int
    margin: float
    mode: str
    noise_sd: float | None
    band: float | None
    unseen_share: float
    any_shape_queries: int | None
    mover_share: float | None
    queries_needed: int | None  # None: unknown (no repeats) or never (the margin within the band)
    supports: bool | None  # None: cannot tell without repeats
    # non-inferiority: the share of simulated no-op PRs of n queries (drawn from the A/A
    # differences) the gate's own rule blocked, and how many were simulated (0: not simulated)
    simulated_blocked: float | None = None
    simulated: int = 0

    @property
    def sentence(self) -> str:
        queries = counted(self.n, "query", "queries")
        margin = f"-{self.margin:g}"
        if self.noise_sd is None:
            head = (f"{queries}: whether they support the margin {margin} needs the stack's run-to-run noise "
                    "(archive --noise-repeats N, or calibrate --from-runs)")
        elif self.noise_sd == 0.0:
            head = (f"{queries}: the repeats rank every query alike (a deterministic stack): a PR that changes "
                    "nothing passes as unchanged, and what a regression needs is the PR's own spread, "
                    "which each verdict states")
        elif self.margin <= 0.0:
            head = (f"{queries}: a margin of 0 leaves nothing to measure the set against"
                    + (" (non-inferiority within 0 is never shown)" if self.mode == "non-inferiority" else ""))
        elif self.mode == "non-inferiority":
            if self.queries_needed is None:
                head = (f"{queries} do not support the margin {margin}: it is within the noise band"
                        if self.band is not None and self.margin <= self.band else
                        f"{queries} do not support the margin {margin}: more than {QUERIES_LIMIT:,} queries would")
            elif self.supports:
                head = (f"{queries} support the margin {margin} in non-inferiority mode: a PR that changes nothing "
                        f"passes at least 95% of the time at this stack's noise (from {self.queries_needed:,} queries)")
            elif self.simulated and self.n >= self.queries_needed:
                head = (f"{queries} do not support the margin {margin} in non-inferiority mode: the gate's rule "
                        f"blocked {self.simulated_blocked:.0%} of {self.simulated} simulated PRs that change nothing "
                        "(drawn from this stack's A/A differences; the limit is 5%): more queries, repeated runs, "
                        "or regression mode")
            else:
                head = (f"{queries} do not support the margin {margin} in non-inferiority mode: a PR that changes "
                        f"nothing is blocked more than 5% of the time at this stack's noise; "
                        f"{self.queries_needed:,} queries would support it (or repeated runs, or regression mode)")
        else:
            if self.queries_needed is None:
                head = (f"{queries}: a {margin} regression is within the noise band and is never shown"
                        if self.band is not None and self.margin <= self.band else
                        f"{queries}: a {margin} regression needs more than {QUERIES_LIMIT:,} queries at this "
                        "stack's own noise")
            elif self.supports:
                head = (f"{queries}: a {margin} regression is caught 80% of the time at this stack's own noise "
                        f"(from {self.queries_needed:,} queries; a real change adds spread, and each verdict says "
                        "what it caught)")
            else:
                head = (f"{queries} do not catch a {margin} regression reliably even at this stack's own noise: "
                        f"80% of the time needs {self.queries_needed:,} queries")
        tail = f"; a regression carried by fewer than {_share(self.unseen_share)} of the queries can be missed entirely"
        if self.any_shape_queries is not None and self.n < self.any_shape_queries:
            tail += f" (a {margin} loss of any shape needs {self.any_shape_queries:,} queries)"
        return head + tail

    def to_dict(self) -> dict[str, object]:
        return {"n": self.n, "margin": self.margin, "mode": self.mode, "noise_sd": self.noise_sd, "band": self.band,
                "mover_share": self.mover_share,
                "unseen_share": self.unseen_share, "any_shape_queries": self.any_shape_queries,
                "queries_needed": self.queries_needed, "supports": self.supports,
                "simulated_blocked": self.simulated_blocked, "simulated": self.simulated, "sentence": self.sentence}


def setup_check(n: int, margin: float, mode: str, noise_sd: float | None = None,
                band: float | None = None, mover_share: float | None = None, *,
                alpha: float, level: float, min_movers: int, movers_to_show: int) -> SetupCheck:
    """:class:`SetupCheck` for ``n`` queries; ``noise_sd`` the per-query sd of an A/A difference,
    ``mover_share`` the share of queries an A/A pair moves (non-inferiority needs ``min_movers``).

    ``alpha`` is the one-sided level of the deciding look, the one a no-op PR's non-inferiority
    is tested at; ``level`` the policy's one-sided level, the one the set's reach is said at
    whatever the look's: the share of queries a sample misses, a loss of any shape, and in
    regression mode the queries a -margin regression is caught on 80% of the time (on no fewer
    than ``movers_to_show``)."""
    needed: int | None = None
    supports: bool | None = None
    known_sd = noise_sd if noise_sd is not None and math.isfinite(noise_sd) else None
    if known_sd is not None and float(known_sd) <= 0.0:
        # identical runs: every no-op PR is unchanged, a pass in either mode
        needed, supports = None, True
    elif known_sd is not None and margin <= 0.0:
        needed, supports = None, mode != "non-inferiority"
    elif known_sd is not None:
        sd = max(float(known_sd), 0.0)
        if mode == "non-inferiority":
            if margin > 0.0:
                share = 1.0 if mover_share is None else float(mover_share)
                needed = _fewest(lambda k: _no_op_passes(sd, k, margin, alpha) and _movers_seen(k, share, min_movers),
                                 min_movers)
        elif margin > (band or 0.0):
            needed = (queries_needed(sd, margin, band, alpha=level, movers_to_show=movers_to_show) if sd > 1e-12
                      else movers_to_show)
        supports = needed is not None and n >= needed
    return SetupCheck(n=n, margin=float(margin), mode=mode,
                      noise_sd=float(known_sd) if known_sd is not None else None, band=band,
                      unseen_share=unseen_share(n, level=level),
                      any_shape_queries=any_shape_queries(margin, level=level),
                      mover_share=None if mover_share is None else float(mover_share),
                      queries_needed=needed, supports=supports)


def aa_noise(values) -> tuple[float, float]:
    """The per-query spread of an A/A difference and the share of queries it moves, pooled over
    every pair of identical runs (``values``: per-query arrays of one measure, aligned):
    ``(sqrt(mean over pairs of var(d)), mean over pairs of share(d != 0))``."""
    arrays = [np.asarray(v, dtype=np.float64) for v in values]
    pairs = [arrays[j] - arrays[i] for i in range(len(arrays)) for j in range(i + 1, len(arrays))
             if arrays[i].size >= 2]
    if not pairs:
        return 0.0, 0.0
    sd = math.sqrt(sum(float(np.var(d, ddof=1)) for d in pairs) / len(pairs))
    return sd, sum(float(np.mean(d != 0)) for d in pairs) / len(pairs)

