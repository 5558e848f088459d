"""The evidence the calibrated decision rule weighs, from one set of per-query differences.

The seed's percentile bootstrap interval is still computed and reported, but on the query
sets teams really have - 20 to 140 queries, most of them unmoved (sparse), or reciprocal ranks
that jump by 0.5 and 1 (heavy-tailed) - it passes true regressions far more often than its
95% promises (benchmarks/bench_decision.py: 14-30% at the margin on sparse deltas). The rule
of :mod:`gate.verdict.rules` therefore asks for three things, computed here:

* a **Hall-transformed bootstrap-t interval** (Hall 1992): the studentized mean corrected for
  skewness, ``g(T) = T + a T^2 + a^2 T^3 / 3 + gamma / (6 sqrt n)`` with ``a = gamma / (3 sqrt n)``,
  bootstrapped with each resample's own skewness; it follows a left-skewed regression where
  the percentile interval does not;
* **one-sided sign-flip tests** at the two decision points (non-inferiority: ``mu <= -margin``
  rejected; regression: ``mu >= 0`` rejected; improvement: ``mu <= 0`` rejected): they keep
  their level on the heavy-tailed reciprocal-rank deltas where the bootstrap-t does not;
* the number of queries that **moved** (``d != 0``) and that **lost** (``d < 0``), and the
  exact 97.5% Clopper-Pearson upper bound on the share of losing queries: since a query can
  lose at most 1, ``E[d] >= -P(d < 0)``, a distribution-free bound on the mean.

Resamples and sign vectors come from ``numpy.random.default_rng(seed)`` exactly as in
:mod:`gate.statistics.bootstrap` and :mod:`gate.statistics.randomization` (the same draws the reported
percentile interval uses), in row blocks, so the numbers are reproducible from the recorded
``samples`` and ``seed``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .bootstrap import DEFAULT_SAMPLES, DEFAULT_SEED, as_differences, check_samples, check_seed, index_blocks
from .bootstrap import integer_blocks, resolve_chunk_rows

#: One-sided level of each test and each end of the two-sided 95% interval.
ALPHA = 0.025
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
    hall_low: float  # Hall-transformed bootstrap-t, two-sided 95%
    hall_high: float
    p_noninferior: float  # one-sided sign-flip p of H0: mu <= -margin
    p_regression: float  # H0: mu >= 0
    p_improvement: float  # H0: mu <= 0
    loss_share_upper: float  # one-sided 97.5% Clopper-Pearson bound on P(d < 0)
    margin: float
    samples: int
    seed: int
    randomization: str  # "exact" | "monte-carlo"

    def to_dict(self) -> dict[str, object]:
        def num(value: float) -> float | None:
            return float(value) if math.isfinite(value) else None

        return {
            "n": self.n, "movers": self.movers, "losses": self.losses,
            "hall_low": num(self.hall_low), "hall_high": num(self.hall_high),
            "p_noninferior": self.p_noninferior, "p_regression": self.p_regression,
            "p_improvement": self.p_improvement, "loss_share_upper": self.loss_share_upper,
            "margin": self.margin, "samples": self.samples, "seed": self.seed,
            "randomization": self.randomization,
        }


def _hall_g(t: np.ndarray, gamma: np.ndarray, n: int) -> np.ndarray:
    a = gamma / (3.0 * math.sqrt(n))
    return t + a * t * t + a * a * t**3 / 3.0 + gamma / (6.0 * math.sqrt(n))


def _hall_ginv(y: float, gamma: float, n: int) -> float:
    """The inverse of the (monotone) transformation: ``((1 + a t)^3 - 1) / (3a) + bias = y``."""
    a = gamma / (3.0 * math.sqrt(n))
    bias = gamma / (6.0 * math.sqrt(n))
    if abs(a) < 1e-12:
        return y - bias
    inner = 1.0 + 3.0 * a * (y - bias)
    return (math.copysign(abs(inner) ** (1.0 / 3.0), inner) - 1.0) / a


def hall_interval(d, samples: int = DEFAULT_SAMPLES, seed: int = DEFAULT_SEED,
                  chunk_rows: int | None = None) -> tuple[float, float]:
    """Two-sided 95% Hall-transformed bootstrap-t interval for ``mean(d)``.

    Per resample ``b`` (indices as :func:`gate.statistics.bootstrap.index_blocks`): mean ``m*``,
    sd ``s*`` (ddof 1), skewness ``gamma*`` (third central moment over ``s*^3``),
    ``T* = (m* - mean) / (s* / sqrt n)`` and ``G* = g_{gamma*}(T*)``; a resample without spread
    counts as 0 when it reproduces the mean and as infinitely far otherwise. The interval is
    ``[mean - se g^-1(q97.5(G*)), mean - se g^-1(q2.5(G*))]`` with the sample's own skewness in
    ``g^-1`` and ``se = sd(d) / sqrt n``. All differences equal: ``[mean, mean]``.
    """
    d = as_differences(d)
    n = d.size
    mean = float(d.mean())
    if n < 2:
        return -math.inf, math.inf
    sd = float(np.std(d, ddof=1))
    if sd == 0.0:
        return mean, mean
    se = sd / math.sqrt(n)
    gamma_hat = float(np.mean((d - mean) ** 3)) / sd**3
    g = np.empty(check_samples(samples), dtype=np.float64)
    start = 0
    for idx in index_blocks(n, samples, seed, chunk_rows):
        x = d[idx]
        m1 = x.mean(axis=1)
        m2 = (x * x).mean(axis=1)
        m3 = (x * x * x).mean(axis=1)
        del x
        central2 = np.maximum(m2 - m1 * m1, 0.0)
        central3 = m3 - 3.0 * m1 * m2 + 2.0 * m1**3
        sd_star = np.sqrt(central2 * n / (n - 1))
        spread = sd_star > _TOLERANCE
        safe = np.where(spread, sd_star, 1.0)
        gamma_star = np.where(spread, central3 / safe**3, 0.0)
        diff = m1 - mean
        t = np.where(spread, diff / (safe / math.sqrt(n)), 0.0)
        block = _hall_g(t, gamma_star, n)
        flat = np.where(np.abs(diff) <= _TOLERANCE, 0.0, np.sign(diff) * _HUGE)
        g[start:start + len(m1)] = np.where(spread, block, flat)
        start += len(m1)
    q_low, q_high = np.percentile(g, [100 * ALPHA, 100 * (1 - ALPHA)])
    return mean - se * _hall_ginv(float(q_high), gamma_hat, n), mean - se * _hall_ginv(float(q_low), gamma_hat, n)


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


def sign_flip_one_sided(d, shifts: tuple[float, ...], samples: int = DEFAULT_SAMPLES, seed: int = DEFAULT_SEED,
                        chunk_rows: int | None = None) -> tuple[list[float], list[float], str]:
    """One-sided sign-flip p-values for each ``mu0`` in ``shifts``, both directions.

    For ``y = d - mu0``: ``p_greater`` (H0: ``mu <= mu0``) is the share of sign vectors whose
    flipped mean is ``>= mean(y)``, ``p_less`` (H0: ``mu >= mu0``) the share ``<= mean(y)``
    (tolerance 1e-12 counts the observed assignment itself). Exact over all ``2**n`` vectors for
    ``n <= 16``; otherwise Monte Carlo, ``(1 + count) / (samples + 1)``.
    """
    d = as_differences(d)
    samples = check_samples(samples)
    seed = check_seed(seed)
    n = d.size
    ys = np.stack([d - mu0 for mu0 in shifts])  # (k, n)
    observed = ys.mean(axis=1)
    greater = np.zeros(len(shifts), dtype=np.int64)
    less = np.zeros(len(shifts), dtype=np.int64)
    total = 0
    for signs in _sign_blocks(n, samples, seed, chunk_rows):
        flipped = ys @ signs.T / n  # (k, rows)
        greater += np.count_nonzero(flipped >= observed[:, None] - _TOLERANCE, axis=1)
        less += np.count_nonzero(flipped <= observed[:, None] + _TOLERANCE, axis=1)
        total += signs.shape[0]
    if n <= EXACT_MAX_N:
        return (greater / total).tolist(), (less / total).tolist(), "exact"
    return ((1 + greater) / (samples + 1)).tolist(), ((1 + less) / (samples + 1)).tolist(), "monte-carlo"


def _binomial_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p), summed in log space (n up to millions is fine)."""
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 1.0 if k >= n else 0.0
    log_p, log_q = math.log(p), math.log1p(-p)
    total = 0.0
    for i in range(k + 1):
        total += math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1)
                          + i * log_p + (n - i) * log_q)
    return min(total, 1.0)


def clopper_pearson_upper(k: int, n: int, alpha: float = ALPHA) -> float:
    """One-sided ``1 - alpha`` Clopper-Pearson upper bound on a share seen ``k`` times in ``n``:
    the ``p`` with ``P(X <= k; n, p) = alpha`` (``1 - alpha**(1/n)`` when ``k = 0``)."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if k >= n:
        return 1.0
    if k == 0:
        return 1.0 - alpha ** (1.0 / n)
    low, high = k / n, 1.0
    for _ in range(100):  # bisection: the cdf falls as p grows
        mid = (low + high) / 2.0
        if _binomial_cdf(k, n, mid) > alpha:
            low = mid
        else:
            high = mid
    return high


def evidence(d, margin: float, samples: int = DEFAULT_SAMPLES, seed: int = DEFAULT_SEED,
             chunk_rows: int | None = None) -> Evidence:
    """Everything :func:`gate.verdict.rules.decide_delta` weighs, for the margin ``margin`` (> 0)."""
    d = as_differences(d)
    if not (math.isfinite(margin) and margin >= 0.0):
        raise ValueError(f"margin must be finite and >= 0, got {margin!r}")
    samples = check_samples(samples)
    seed = check_seed(seed)
    low, high = hall_interval(d, samples, seed, chunk_rows)
    greater, less, kind = sign_flip_one_sided(d, (-margin, 0.0), samples, seed, chunk_rows)
    losses = int(np.count_nonzero(d < 0))
    return Evidence(
        n=int(d.size), mean=float(d.mean()), movers=int(np.count_nonzero(d != 0)), losses=losses,
        hall_low=float(low), hall_high=float(high),
        p_noninferior=float(greater[0]), p_regression=float(less[1]), p_improvement=float(greater[1]),
        loss_share_upper=clopper_pearson_upper(losses, int(d.size)), margin=float(margin),
        samples=samples, seed=seed, randomization=kind,
    )
