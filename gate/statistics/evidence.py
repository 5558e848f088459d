"""The evidence the calibrated decision rule weighs, from one set of per-query differences.

The seed's percentile bootstrap interval is still computed and reported, but on the query
sets teams really have - 20 to 140 queries, most of them unmoved (sparse), or reciprocal ranks
that jump by 0.5 and 1 (heavy-tailed) - it passes true regressions far more often than its
95% promises (benchmarks/bench_decision.py: 14-30% at the margin on sparse deltas). The rule
of :mod:`gate.verdict.rules` therefore asks for three things, computed here:

* a **bootstrap-t interval** (the studentized mean, ``T* = (m* - mean) / se*`` on the same
  resamples): a regression or an improvement needs it, and non-inferiority needs it together with
  the **Hall-transformed bootstrap-t interval** (Hall 1992): the studentized mean corrected for
  skewness, ``g(T) = T + a T^2 + a^2 T^3 / 3 + gamma / (6 sqrt n)`` with ``a = gamma / (3 sqrt n)``,
  bootstrapped with each resample's own skewness; it follows a left-skewed loss at the margin
  where the percentile interval does not, and it costs power on symmetric heavy-tailed
  differences (run-to-run noise), which is why the regression claim does without it
  (benchmarks/bench_decision.py measures both);
* **one-sided sign-flip tests** at the two decision points (non-inferiority: ``mu <= -margin``
  rejected; regression: ``mu >= 0`` rejected; improvement: ``mu <= 0`` rejected): they keep
  their level on the heavy-tailed reciprocal-rank deltas where the bootstrap-t does not;
* the number of queries that **moved** (``d != 0``) and that **lost** (``d < 0``), and the
  exact one-sided Clopper-Pearson upper bound on the share of losing queries: since a query can
  lose at most 1, ``E[d] >= -P(d < 0)``, a distribution-free bound on the mean.

Every test and bound is at the one-sided level ``alpha`` its caller gives (the policy's, in
:mod:`gate.verdict.levels`: 0.025, the ends of a two-sided 95% interval); this stage holds none.

Resamples and sign vectors come from ``numpy.random.default_rng(seed)`` exactly as in
:mod:`gate.statistics.bootstrap` and :mod:`gate.statistics.randomization` (the same draws the reported
percentile interval uses), in row blocks, so the numbers are reproducible from the recorded
``samples`` and ``seed``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import numpy as np

from gate.common import fixed_order

from .bootstrap import (
    DEFAULT_SAMPLES,
    DEFAULT_SEED,
    PARALLEL_MIN_DRAWS,
    as_differences,
    bootstrap_moments,
    check_samples,
    check_seed,
    fast_rows_for,
    integer_blocks,
    resolve_chunk_rows,
    run_both,
)
from .randomization import sign_sums

#: Per-query differences of measures in [0, 1] lie in [-1, 1], and so does their mean.
MAX_DIFFERENCE = 1.0
#: Sign vectors are enumerated, not sampled, up to this many queries (as the two-sided test).
EXACT_MAX_N = 16
_TOLERANCE = 1e-12
_HUGE = 1e12  # a resample with no spread away from the mean: infinitely far


@dataclass(frozen=True)
class Evidence:
    """What the rule needs about ``d = candidate - baseline`` (``margin`` > 0 the tolerance)."""

    n: int
    mean: float
    movers: int  # queries with d != 0
    losses: int  # queries with d < 0
    hall_low: float  # Hall-transformed bootstrap-t, two-sided 1 - 2 alpha
    hall_high: float
    t_low: float  # bootstrap-t (studentized, no skew transformation), two-sided 1 - 2 alpha, same resamples
    t_high: float
    p_noninferior: float  # one-sided sign-flip p of H0: mu <= -margin
    p_regression: float  # H0: mu >= 0
    p_improvement: float  # H0: mu <= 0
    loss_share_upper: float  # one-sided 1 - alpha Clopper-Pearson bound on P(d < 0)
    margin: float
    samples: int
    seed: int
    randomization: str  # "exact" | "monte-carlo"
    # The one-sided level each claim is tested at (intervals two-sided at 1 - 2 alpha), as the
    # caller gives it: gate.verdict.levels.ALPHA, or its share at one of several looks.
    alpha: float

    def to_dict(self) -> dict[str, object]:
        def num(value: float) -> float | None:
            return float(value) if math.isfinite(value) else None

        return {
            "n": self.n, "movers": self.movers, "losses": self.losses,
            "hall_low": num(self.hall_low), "hall_high": num(self.hall_high),
            "t_low": num(self.t_low), "t_high": num(self.t_high),
            "p_noninferior": self.p_noninferior, "p_regression": self.p_regression,
            "p_improvement": self.p_improvement, "loss_share_upper": self.loss_share_upper,
            "margin": self.margin, "samples": self.samples, "seed": self.seed,
            "randomization": self.randomization, "alpha": self.alpha,
        }


def _hall_g(t: np.ndarray, gamma: np.ndarray, n: int) -> np.ndarray:
    a = gamma / (3.0 * math.sqrt(n))
    # t * t * t, not t**3: numpy's power has an AVX-512 kernel of its own (an ulp apart from the others)
    return t + a * t * t + a * a * (t * t * t) / 3.0 + gamma / (6.0 * math.sqrt(n))


def _hall_ginv(y: float, gamma: float, n: int) -> float:
    """The inverse of the (monotone) transformation: ``((1 + a t)^3 - 1) / (3a) + bias = y``."""
    a = gamma / (3.0 * math.sqrt(n))
    bias = gamma / (6.0 * math.sqrt(n))
    if abs(a) < 1e-12:
        return y - bias
    inner = 1.0 + 3.0 * a * (y - bias)
    # not abs(inner) ** (1 / 3): the C library's pow has an FMA variant an ulp apart, and the
    # division by a (small) magnifies that ulp about a hundredfold
    return (math.copysign(fixed_order.power(abs(inner), 1.0 / 3.0), inner) - 1.0) / a


def _hall_setup(d: np.ndarray) -> tuple[float, float] | tuple[float, float, float]:
    """``(low, high)`` when the interval needs no resamples, else ``(mean, se, gamma_hat)``."""
    n = d.size
    mean = float(d.mean())
    if n < 2:
        return -math.inf, math.inf
    sd = float(np.std(d, ddof=1))
    if sd == 0.0:
        return mean, mean
    se = sd / math.sqrt(n)
    centred = d - mean
    gamma_hat = float(np.mean(centred * centred * centred)) / fixed_order.power(sd, 3.0)  # not sd**3: see _hall_ginv
    return mean, se, gamma_hat


def _hall_from_moments(n: int, mean: float, se: float, gamma_hat: float, m1: np.ndarray, m2: np.ndarray,
                       m3: np.ndarray | None, alpha: float) -> tuple[float, float]:
    """The interval from the resampled means of ``x``, ``x*x`` and ``x*x*x`` (elementwise, so the
    whole arrays give what the blocks gave). ``m3`` None (and ``gamma_hat`` 0): the plain
    bootstrap-t interval of the same resamples, no skewness transformation."""
    central2 = np.maximum(m2 - m1 * m1, 0.0)
    sd_star = np.sqrt(central2 * n / (n - 1))
    spread = sd_star > _TOLERANCE
    safe = np.where(spread, sd_star, 1.0)
    if m3 is None:
        gamma_star = np.zeros_like(m1)
    else:
        central3 = m3 - 3.0 * m1 * m2 + 2.0 * (m1 * m1 * m1)
        gamma_star = np.where(spread, central3 / (safe * safe * safe), 0.0)
    diff = m1 - mean
    t = np.where(spread, diff / (safe / math.sqrt(n)), 0.0)
    block = _hall_g(t, gamma_star, n)
    flat = np.where(np.abs(diff) <= _TOLERANCE, 0.0, np.sign(diff) * _HUGE)
    g = np.where(spread, block, flat)
    q_low, q_high = np.percentile(g, [100 * alpha, 100 * (1 - alpha)])
    return mean - se * _hall_ginv(float(q_high), gamma_hat, n), mean - se * _hall_ginv(float(q_low), gamma_hat, n)


def hall_interval(d, samples: int = DEFAULT_SAMPLES, seed: int = DEFAULT_SEED,
                  chunk_rows: int | None = None, *, alpha: float) -> tuple[float, float]:
    """Two-sided ``1 - 2 alpha`` Hall-transformed bootstrap-t interval for ``mean(d)`` (95% at
    the gate's one-sided 0.025, gate.verdict.levels.ALPHA).

    Per resample ``b`` (indices as :func:`gate.statistics.bootstrap.index_blocks`): mean ``m*``,
    sd ``s*`` (ddof 1), skewness ``gamma*`` (third central moment over ``s*^3``),
    ``T* = (m* - mean) / (s* / sqrt n)`` and ``G* = g_{gamma*}(T*)``; a resample without spread
    counts as 0 when it reproduces the mean and as infinitely far otherwise. The interval is
    ``[mean - se g^-1(q_{1-alpha}(G*)), mean - se g^-1(q_alpha(G*))]`` with the sample's own skewness in
    ``g^-1`` and ``se = sd(d) / sqrt n``. All differences equal: ``[mean, mean]``.

    The resampled moments come from :func:`gate.statistics.bootstrap.bootstrap_moments`
    (``m*`` is bit for bit the reported bootstrap's resampled mean), read from the summaries
    :func:`gate.statistics.paired.compare_paired` leaves when it ran on the same ``d``.
    """
    d = as_differences(d)
    n = d.size
    setup = _hall_setup(d)
    if len(setup) == 2:
        return setup  # type: ignore[return-value]
    samples = check_samples(samples)
    seed = check_seed(seed)
    m1, m2, m3 = bootstrap_moments(d, samples, seed, 3, chunk_rows)
    return _hall_from_moments(n, *setup, m1, m2, m3, alpha)


def _sign_blocks(n: int, samples: int, seed: int, chunk_rows: int | None):
    """(+1/-1 sign matrices, exact?) as gate.statistics.randomization draws them."""
    rows = resolve_chunk_rows(chunk_rows, n)
    if n <= EXACT_MAX_N:
        codes = np.arange(1 << n, dtype=np.int64)
        for start in range(0, len(codes), rows):
            keep = (codes[start:start + rows, None] >> np.arange(n, dtype=np.int64)) & 1
            yield np.where(keep == 1, 1.0, -1.0)
        return
    rng = np.random.default_rng(seed)
    for keep in integer_blocks(rng, 2, samples, n, rows):
        yield np.where(keep == 1, 1.0, -1.0)


#: Unit roundoff of float64.
_U = 2.0**-53


def _one_sided_monte_carlo(d: np.ndarray, ys: np.ndarray, observed: np.ndarray, shifts, sums: np.ndarray,
                           kept: np.ndarray, samples: int, seed: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Monte Carlo counts of ``flipped >= observed - tol`` and ``flipped <= observed + tol`` per shift.

    The reference computes ``flipped = ys @ signs.T / n`` (a BLAS product, blocks of ``rows``
    sign vectors).  Here the flipped sum of ``y = d - mu0`` is approximated by
    ``q = sum(s*d) - mu0 * (2 kept - n)`` from the sign-flip sums, and every vector is decided
    from ``q`` when it is farther from the threshold than a proven bound on ``|BLAS - q|``:
    any order of summing ``n`` terms is off by at most ``gamma_n * sum|terms|``
    (``gamma_n = n u / (1 - n u)``), which covers both the BLAS sum and the pairwise one,
    plus the roundings of ``y``, ``q``, the division by ``n`` and the comparison; when every
    partial sum is exact (:func:`_sums_are_exact`) the summing terms drop out.  The few
    vectors within the bound (rare: exact ties of lattice-valued differences on very large
    query sets) are decided by the reference computation itself, ``ys @ signs.T / n`` on
    their regenerated block of ``rows`` vectors (:func:`_reference_flipped`).
    """
    n = d.size
    k_count = len(shifts)
    gamma = 1.01 * (n + 2) * _U
    a_d = float(np.sum(np.abs(d))) * (1.0 + 2.0 * gamma)
    gamma_d = 0.0 if _sums_are_exact(d, a_d) else gamma
    balance = 2.0 * kept.astype(np.float64) - n  # sum of the signs: exact
    greater = np.zeros(k_count, dtype=np.int64)
    less = np.zeros(k_count, dtype=np.int64)
    pending: list[tuple[int, np.ndarray, np.ndarray]] = []
    undecided = np.zeros(samples, dtype=bool)
    for k, mu0 in enumerate(shifts):
        # A shift that is not one number (NaN here) leaves every vector to the reference.
        mu = float(mu0) if np.ndim(mu0) == 0 and np.isrealobj(mu0) else math.nan
        lo = observed[k] - _TOLERANCE
        hi = observed[k] + _TOLERANCE
        with np.errstate(all="ignore"):
            a_y = float(np.sum(np.abs(ys[k]))) * (1.0 + 2.0 * gamma)
            gamma_y = 0.0 if _sums_are_exact(ys[k], a_y) else gamma
            shifted: np.ndarray | float
            if mu != 0.0:
                q = sums - mu * balance
                abs_q = np.abs(q)
                shifted = 1.01 * _U * (a_y + abs(mu) * n + abs_q)  # y's, mu * balance's and q's roundings
            else:  # y is d itself and q the pairwise sum
                q = np.asarray(sums)
                abs_q = np.abs(q)
                shifted = 0.0
            bound = (gamma_d * a_d + gamma_y * a_y + shifted) * (1.0 + 4.0 * gamma)
            slack = (1.0 + 16.0 * _U) * bound + 8.0 * _U * (abs_q + n * max(abs(lo), abs(hi))) + n * 1e-300
            v = q / n
            e = slack / n
            g_yes = v - e >= lo
            g_no = v + e < lo
            l_yes = v + e <= hi
            l_no = v - e > hi
        g_open = ~(g_yes | g_no)
        l_open = ~(l_yes | l_no)
        greater[k] += int(np.count_nonzero(g_yes))
        less[k] += int(np.count_nonzero(l_yes))
        if g_open.any() or l_open.any():
            pending.append((k, g_open, l_open))
            undecided |= g_open | l_open
    if pending:
        flipped = _reference_flipped(ys, n, samples, seed, rows, np.flatnonzero(undecided))
        for k, g_open, l_open in pending:
            lo = observed[k] - _TOLERANCE
            hi = observed[k] + _TOLERANCE
            greater[k] += int(np.count_nonzero(flipped[k][g_open] >= lo))
            less[k] += int(np.count_nonzero(flipped[k][l_open] <= hi))
    return greater, less


def _sums_are_exact(y: np.ndarray, total: float) -> bool:
    """Whether every sum of ``+-y_i`` terms, in any order, is exact in float64.

    True when every ``y_i`` is a multiple of ``2**e`` (``e`` the lowest set bit over all of
    them) and ``total`` (an upper bound on ``sum |y_i|``) is below ``2**(53 + e)``: every
    partial sum is then a multiple of ``2**e`` no larger than ``total``, so representable.
    Differences on a coarse binary grid (``0, +-0.5, +-1``: success and precision at 1 or 2)
    are; most are not.
    """
    bits = np.abs(y[y != 0]).view(np.int64)
    if bits.size == 0:
        return True
    exponent = bits >> 52  # biased; 0 for subnormals
    significand = (bits & ((1 << 52) - 1)) | np.where(exponent > 0, 1 << 52, 0)
    lowest = significand & -significand  # the lowest set bit, a power of two
    low = int(np.min(np.maximum(exponent, 1) - 1075 + np.log2(lowest.astype(np.float64)).astype(np.int64)))
    return math.isfinite(total) and total < math.ldexp(1.0, 53 + low)


def _reference_flipped(ys: np.ndarray, n: int, samples: int, seed: int, rows: int,
                       wanted: np.ndarray) -> np.ndarray:
    """``ys @ signs.T / n`` exactly as the reference computes it (the same blocks of ``rows``
    sign vectors, so the same BLAS calls), filled in for the sign vectors in ``wanted``
    (the rest is NaN).  Draws the sign stream again up to the last block needed."""
    out = np.full((ys.shape[0], samples), np.nan)
    blocks = set((wanted // rows).tolist())
    last = max(blocks)
    start = 0
    rng = np.random.default_rng(seed)
    for number, keep in enumerate(integer_blocks(rng, 2, samples, n, rows)):
        stop = start + keep.shape[0]
        if number in blocks:
            signs = np.where(keep == 1, 1.0, -1.0)
            out[:, start:stop] = ys @ signs.T / n
        if number == last:
            break
        start = stop
    return out


def sign_flip_one_sided(d, shifts: tuple[float, ...], samples: int = DEFAULT_SAMPLES, seed: int = DEFAULT_SEED,
                        chunk_rows: int | None = None) -> tuple[list[float], list[float], str]:
    """One-sided sign-flip p-values for each ``mu0`` in ``shifts``, both directions.

    For ``y = d - mu0``: ``p_greater`` (H0: ``mu <= mu0``) is the share of sign vectors whose
    flipped mean is ``>= mean(y)``, ``p_less`` (H0: ``mu >= mu0``) the share ``<= mean(y)``
    (tolerance 1e-12 counts the observed assignment itself). Exact over all ``2**n`` vectors for
    ``n <= 16``; otherwise Monte Carlo, ``(1 + count) / (samples + 1)``.

    The flipped mean of a Monte Carlo vector is ``ys @ signs.T / n`` in row blocks of
    ``chunk_rows``; it is decided from the sign-flip sums of
    :func:`gate.statistics.randomization.sign_sums` (read from the summaries
    :func:`gate.statistics.paired.compare_paired` leaves), see :func:`_one_sided_monte_carlo`.
    """
    d = as_differences(d)
    samples = check_samples(samples)
    seed = check_seed(seed)
    return _one_sided(d, shifts, samples, seed, chunk_rows, None)


def _one_sided(d: np.ndarray, shifts, samples: int, seed: int, chunk_rows: int | None,
               sums: tuple[np.ndarray, ...] | None) -> tuple[list[float], list[float], str]:
    n = d.size
    ys = np.stack([d - mu0 for mu0 in shifts])  # (k, n)
    observed = ys.mean(axis=1)
    if n <= EXACT_MAX_N:
        greater = np.zeros(len(shifts), dtype=np.int64)
        less = np.zeros(len(shifts), dtype=np.int64)
        total = 0
        for signs in _sign_blocks(n, samples, seed, chunk_rows):
            flipped = ys @ signs.T / n  # (k, rows)
            greater += np.count_nonzero(flipped >= observed[:, None] - _TOLERANCE, axis=1)
            less += np.count_nonzero(flipped <= observed[:, None] + _TOLERANCE, axis=1)
            total += signs.shape[0]
        return (greater / total).tolist(), (less / total).tolist(), "exact"
    rows = resolve_chunk_rows(chunk_rows, n)
    if sums is None:
        sums = sign_sums(d, samples, seed, counts=True, chunk_rows=chunk_rows)
    greater, less = _one_sided_monte_carlo(d, ys, observed, shifts, sums[0], sums[1], samples, seed, rows)
    return ((1 + greater) / (samples + 1)).tolist(), ((1 + less) / (samples + 1)).tolist(), "monte-carlo"


def _log_binomials(k: int, n: int) -> list[float]:
    """``lgamma(n + 1) - lgamma(i + 1) - lgamma(n - i + 1)`` for ``i = 0..k``, evaluated as
    :func:`_binomial_cdf`'s terms begin (left to right), so they can be reused for every ``p``."""
    whole = math.lgamma(n + 1)
    return [whole - math.lgamma(i + 1) - math.lgamma(n - i + 1) for i in range(k + 1)]


def _binomial_cdf(k: int, n: int, p: float, log_binomials: list[float] | None = None) -> float:
    """P(X <= k) for X ~ Binomial(n, p), summed in log space (n up to millions is fine).

    Term ``i`` is ``exp(lgamma(n + 1) - lgamma(i + 1) - lgamma(n - i + 1) + i log p + (n - i) log q)``,
    the terms added one after the other from ``i = 0``.  ``log_binomials`` (from
    :func:`_log_binomials`) saves recomputing the first three of each term for another ``p``;
    the exponents are formed with the same operations in the same order (numpy's float64
    ``+`` and ``*`` round as Python's do), so the sum is the same bit for bit.
    """
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 1.0 if k >= n else 0.0
    log_p, log_q = math.log(p), math.log1p(-p)
    if log_binomials is None:
        log_binomials = _log_binomials(k, n)
    i = np.arange(k + 1, dtype=np.float64)  # exact: i and n - i are integers below 2**53
    exponents = np.asarray(log_binomials, dtype=np.float64) + i * log_p + (n - i) * log_q
    total = 0.0
    for term in map(math.exp, exponents.tolist()):
        total += term
    return min(total, 1.0)


def clopper_pearson_upper(k: int, n: int, *, alpha: float) -> float:
    """One-sided ``1 - alpha`` Clopper-Pearson upper bound on a share seen ``k`` times in ``n``:
    the ``p`` with ``P(X <= k; n, p) = alpha`` (``1 - alpha**(1/n)`` when ``k = 0``)."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if k >= n:
        return 1.0
    if k == 0:
        return 1.0 - alpha ** (1.0 / n)
    log_binomials = _log_binomials(k, n)
    low, high = k / n, 1.0
    for _ in range(100):  # bisection: the cdf falls as p grows
        mid = (low + high) / 2.0
        if _binomial_cdf(k, n, mid, log_binomials) > alpha:
            low = mid
        else:
            high = mid
    return high


def evidence(d, margin: float, samples: int = DEFAULT_SAMPLES, seed: int = DEFAULT_SEED,
             chunk_rows: int | None = None, *, alpha: float) -> Evidence:
    """Everything :func:`gate.verdict.rules.decide_delta` weighs, for the margin ``margin`` (> 0).

    The resampled moments (Hall interval) and the sign-flip sums (one-sided tests) are read
    from the summaries :func:`gate.statistics.paired.compare_paired` leaves for the same
    ``d``, ``samples`` and ``seed``; what is missing is computed, the two streams side by side.
    ``alpha`` is the one-sided level of each claim (the intervals are two-sided at ``1 - 2 alpha``):
    the policy's, gate.verdict.levels.ALPHA or its share at one of several looks; this stage holds
    none of its own.
    """
    d = as_differences(d)
    if not (math.isfinite(margin) and margin >= 0.0):
        raise ValueError(f"margin must be finite and >= 0, got {margin!r}")
    if not (0.0 < alpha < 0.5):  # a one-sided level: each end of an interval of positive width
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha!r}")
    samples = check_samples(samples)
    seed = check_seed(seed)
    n = d.size
    fast_rows_for(n, chunk_rows)
    setup = _hall_setup(d)
    need_moments = len(setup) == 3
    need_sums = n > EXACT_MAX_N
    moments, sums = run_both(
        lambda: bootstrap_moments(d, samples, seed, 3, chunk_rows, keep=True) if need_moments else None,
        lambda: sign_sums(d, samples, seed, True, chunk_rows, keep=True) if need_sums else None,
        parallel=need_moments and need_sums and n * samples >= PARALLEL_MIN_DRAWS,
    )
    if moments is None:
        low, high = setup[0], setup[1]
        t_low, t_high = setup[0], setup[1]
    else:
        mean, se, gamma_hat = cast(tuple[float, float, float], setup)  # three when moments were needed
        low, high = _hall_from_moments(n, mean, se, gamma_hat, moments[0], moments[1], moments[2], alpha=alpha)
        t_low, t_high = _hall_from_moments(n, mean, se, 0.0, moments[0], moments[1], None, alpha)
    # A resample without spread counts as infinitely far (_HUGE): the interval's end is then
    # ~1e7 or infinite. The mean of differences of [0, 1] measures lies in [-1, 1]: no end of a
    # useful interval is beyond it, and clipping there changes no decision (0 and -margin are inside).
    low, high, t_low, t_high = (min(max(x, -MAX_DIFFERENCE), MAX_DIFFERENCE) for x in (low, high, t_low, t_high))
    greater, less, kind = _one_sided(d, (-margin, 0.0), samples, seed, chunk_rows, sums)
    losses = int(np.count_nonzero(d < 0))
    return Evidence(
        n=int(d.size), mean=float(d.mean()), movers=int(np.count_nonzero(d != 0)), losses=losses,
        hall_low=float(low), hall_high=float(high), t_low=float(t_low), t_high=float(t_high),
        p_noninferior=float(greater[0]), p_regression=float(less[1]), p_improvement=float(greater[1]),
        loss_share_upper=clopper_pearson_upper(losses, int(d.size), alpha=alpha), margin=float(margin),
        samples=samples, seed=seed, randomization=kind, alpha=float(alpha),
    )
