"""Decision methods for the paired non-inferiority gate, vectorised over replications.

Used by ``benchmarks/bench_decision.py``.  Every method takes a batch of samples
``X`` of shape ``(R, n)`` (R replications of n per-query differences
``d = candidate - baseline``, each in [-1, 1]) and returns a :class:`Decision`:
three boolean arrays of shape ``(R,)`` and, for interval methods, the two-sided
95% interval ``(low, high)``.

* ``pass_ok``  -- non-inferiority shown: ``low >= -margin``;
* ``fail_ok``  -- regression shown: ``high < 0``;
* ``improve``  -- improvement shown: ``low > 0``.

:func:`verdicts` turns that into the gate's verdict exactly as
``gate.verdict.rules.decide_delta`` does with no noise band (fail if ``high < 0`` and
``mean != 0``; else pass if ``low >= -margin``; else inconclusive).

Methods (``--methods`` names):

``percentile``  the gate's paired percentile bootstrap: ``rng = default_rng(seed)``,
                ``rng.integers(0, n, size=(B, n))`` (the same resample indices for
                every comparison of n queries, as in the gate, whose seed is fixed),
                2.5th / 97.5th ``numpy.percentile`` (linear) of the resampled means.
``bca``         the gate's BCa (``gate.statistics.bootstrap.confidence_interval``), same indices.
``boot-t``      studentized bootstrap (bootstrap-t): ``t*_b = (mean*_b - mean) / se*_b``
                with ``se* = sd*(ddof=1)/sqrt(n)``; interval ``(mean - q97.5(t*) se,
                mean - q2.5(t*) se)``, ``se = sd(d, ddof=1)/sqrt(n)``.  A resample with
                ``se* = 0`` has ``t* = 0`` if its mean equals ``mean`` and ``-/+ inf``
                otherwise (it widens the interval on that side).  Same indices.
``t``           Student t: ``mean -/+ t_{0.975, n-1} se``.
``hall-t``      Hall's (1992) skewness-removing transformation of the t statistic
                (Johnson's 1978 modified t made monotone): with ``T = (mean - mu)/se``,
                ``g = mu3_hat / sd^3`` (``mu3_hat = mean((d - mean)^3)``, sd with ddof=1),
                ``a = g / (3 sqrt n)``, ``g(T) = T + a T^2 + a^2 T^3 / 3 + g / (6 sqrt n)``
                (monotone, ``g(T) = ((1 + a T)^3 - 1) / (3a) + g/(6 sqrt n)``), the interval
                is ``(mean - se g^-1(c), mean - se g^-1(-c))``, ``c = t_{0.975, n-1}``,
                ``g^-1(y) = (cbrt(1 + 3a (y - g/(6 sqrt n))) - 1) / a``.
``boot-hall``   bootstrap of Hall's transformed statistic (Hall 1992, sec. 3): ``G*_b =
                g_{gamma*_b}(t*_b)`` with each resample's own skewness, interval
                ``(mean - se g^-1(q97.5(G*)), mean - se g^-1(q2.5(G*)))`` with the sample's
                skewness in ``g^-1``.  Same indices and zero-spread rule as ``boot-t``.
``signflip``    one-sided sign-flip randomization tests at the two decision points:
                pass iff ``H0: mu <= -margin`` is rejected at 2.5% (flips of
                ``d + margin``), fail iff ``H0: mu >= 0`` is rejected at 2.5%,
                improvement iff ``H0: mu <= 0`` is rejected at 2.5%.  ``p = (1 + #{flip
                mean >= observed})/(B + 1)``; flips from ``default_rng(seed).integers(0, 2,
                size=(B, n))`` as in ``gate.statistics.randomization``.  (The studentized and
                the plain sign-flip statistic are monotone in each other, so this is also
                the studentized test.)  Exact only for symmetric differences.
``betting``     Waudby-Smith & Ramdas (2023, JRSS-B) hedged-capital betting test for a
                bounded mean, one-sided at 2.5% at each decision point, on ``y = (d+1)/2``
                in [0, 1]: capital ``K_t = prod (1 + lam_i (y_i - m))``, predictable plug-in
                ``lam_i = min(sqrt(2 log(1/alpha) / (n sig2_{i-1})), c / m)`` (c = 1/2),
                ``sig2_t = (1/4 + sum (y_j - muhat_j)^2)/(t + 1)``, ``muhat_t = (1/2 + sum
                y_j)/(t+1)``; reject ``H0: E y <= m`` when ``max_t K_t >= 1/alpha``.  Valid
                for every distribution on [-1, 1] at every n (Ville's inequality); it
                uses the order of the queries.

``a|b`` (e.g. ``t|boot-t``): a claim (pass, fail, improvement) needs both methods to make
it -- the decision of the union of the two intervals.

Guards, appended to any method name (e.g. ``boot-t+m5+wc``):

``+mK``  minimum movers: fewer than K queries with ``d != 0`` -> inconclusive.
``+cp``  the literal rule-of-three rule: a pass is allowed only when the one-sided
         97.5% Clopper-Pearson upper bound on the mover share, times the largest
         possible |d| (1), is below the margin.
``+wc``  worst-case escape: also pass when the 97.5% Clopper-Pearson upper bound on the
         share of *losing* queries (``d < 0``), times the largest possible loss (1), is
         below the margin -- a distribution-free bound (``E d >= -P(d < 0)``), which can
         only fire from n >= 183 (0 losses: ``1 - 0.025**(1/n) < 0.02``).  The fail
         and improvement claims of the base method are kept.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np
from scipy import stats as sps

ALPHA2 = 0.025  # each side of a two-sided 95% interval
_Z = NormalDist()


# --------------------------------------------------------------------------- shared resamples


def bootstrap_counts(n: int, samples: int, seed: int) -> np.ndarray:
    """How often each query appears in each resample, ``(samples, n)`` float64.

    From exactly the gate's index draw ``default_rng(seed).integers(0, n, size=(samples, n))``.
    """
    idx = np.random.default_rng(seed).integers(0, n, size=(samples, n))
    flat = (idx + n * np.arange(samples)[:, None]).ravel()
    return np.bincount(flat, minlength=samples * n).reshape(samples, n).astype(np.float64)


#: As gate.statistics.evidence: up to this many queries every sign vector is enumerated.
EXACT_MAX_N = 16


def sign_matrix(n: int, samples: int, seed: int) -> np.ndarray:
    """``+1/-1`` sign vectors from ``default_rng(seed).integers(0, 2, size=(samples, n))`` (1 keeps);
    for ``n <= EXACT_MAX_N`` all ``2**n`` of them, as the gate enumerates them."""
    if n <= EXACT_MAX_N:
        codes = np.arange(1 << n, dtype=np.int64)
        keep = (codes[:, None] >> np.arange(n, dtype=np.int64)) & 1
    else:
        keep = np.random.default_rng(seed).integers(0, 2, size=(samples, n))
    return np.where(keep == 1, 1.0, -1.0)


@dataclass
class Context:
    """What every method may use for one n: the resamples and the policy."""

    n: int
    samples: int
    seed: int
    margin: float = 0.02
    _counts: np.ndarray | None = field(default=None, repr=False)
    _signs: np.ndarray | None = field(default=None, repr=False)

    @property
    def counts(self) -> np.ndarray:
        if self._counts is None:
            self._counts = bootstrap_counts(self.n, self.samples, self.seed)
        return self._counts

    @property
    def signs(self) -> np.ndarray:
        if self._signs is None:
            self._signs = sign_matrix(self.n, self.samples, self.seed)
        return self._signs


@dataclass
class Decision:
    pass_ok: np.ndarray
    fail_ok: np.ndarray
    improve: np.ndarray
    low: np.ndarray | None = None
    high: np.ndarray | None = None


def from_interval(lo: np.ndarray, hi: np.ndarray, margin: float) -> Decision:
    return Decision(lo >= -margin, hi < 0, lo > 0, lo, hi)


# --------------------------------------------------------------------------- helpers


def row_quantile(sorted_rows: np.ndarray, pct: np.ndarray) -> np.ndarray:
    """Per-row linear-interpolation percentile (numpy's default) of already sorted rows."""
    b = sorted_rows.shape[1]
    pos = np.clip(np.asarray(pct, dtype=np.float64) / 100.0 * (b - 1), 0.0, b - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, b - 1)
    frac = pos - lo
    rows = np.arange(sorted_rows.shape[0])
    a = sorted_rows[rows, lo]
    c = sorted_rows[rows, hi]
    return a + frac * (c - a)


def boot_means(X: np.ndarray, ctx: Context) -> np.ndarray:
    return X @ ctx.counts.T / ctx.n


# --------------------------------------------------------------------------- interval methods


def percentile(X, ctx, cache):
    m = cache.setdefault("means", boot_means(X, ctx))
    lo, hi = np.percentile(m, [2.5, 97.5], axis=1)
    return from_interval(lo, hi, ctx.margin)


def bca(X, ctx, cache):
    m = cache.setdefault("means", boot_means(X, ctx))
    R, B = m.shape
    n = X.shape[1]
    obs = X.mean(axis=1)
    share = np.count_nonzero(m < obs[:, None], axis=1) / B
    half = 0.5 / B
    share = np.clip(share, half, 1.0 - half)
    z0 = sps.norm.ppf(share)
    loo = (X.sum(axis=1, keepdims=True) - X) / (n - 1)
    dev = loo.mean(axis=1, keepdims=True) - loo
    den = np.sum(dev**2, axis=1)
    num = np.sum(dev**3, axis=1)
    a = np.where(den > 0, num / (6.0 * np.where(den > 0, den, 1.0) ** 1.5), 0.0)
    levels = []
    for p in (2.5, 97.5):
        z = _Z.inv_cdf(p / 100.0)
        s = z0 + z
        levels.append(100.0 * sps.norm.cdf(z0 + s / (1.0 - a * s)))
    srt = cache.setdefault("sorted_means", np.sort(m, axis=1))
    lo = row_quantile(srt, levels[0])
    hi = row_quantile(srt, levels[1])
    flat = srt[:, 0] == srt[:, -1]
    lo = np.where(flat, m[:, 0], lo)
    hi = np.where(flat, m[:, 0], hi)
    return from_interval(lo, hi, ctx.margin)


def boot_t(X, ctx, cache):
    n = X.shape[1]
    C = ctx.counts
    m = cache.setdefault("means", boot_means(X, ctx))
    m2 = (X * X) @ C.T / n
    var = np.maximum(m2 - m * m, 0.0) * n / (n - 1)
    se_star = np.sqrt(var / n)
    obs = X.mean(axis=1, keepdims=True)
    se = X.std(axis=1, ddof=1) / math.sqrt(n)
    diff = m - obs
    with np.errstate(divide="ignore", invalid="ignore"):
        t = diff / se_star
    # A resample with no spread: 0 if it reproduces the mean, otherwise infinitely far.
    tiny = 1e-12
    zero_se = se_star <= tiny
    t = np.where(zero_se, np.where(np.abs(diff) <= tiny, 0.0, np.sign(diff) * 1e12), t)
    q_lo, q_hi = np.percentile(t, [2.5, 97.5], axis=1)
    o = obs[:, 0]
    lo = o - q_hi * se
    hi = o - q_lo * se
    return from_interval(lo, hi, ctx.margin)


def _hall_g(T, g, n):
    a = g / (3.0 * math.sqrt(n))
    return T + a * T * T + a * a * T**3 / 3.0 + g / (6.0 * math.sqrt(n))


def _hall_ginv(y, g, n):
    a = g / (3.0 * math.sqrt(n))
    bias = g / (6.0 * math.sqrt(n))
    small = np.abs(a) < 1e-12
    aa = np.where(small, 1.0, a)
    out = (np.cbrt(1.0 + 3.0 * aa * (y - bias)) - 1.0) / aa
    return np.where(small, y - bias, out)


def _skew(sd, mu3):
    safe = np.where(sd > 0, sd, 1.0)
    return np.where(sd > 0, mu3 / safe**3, 0.0)


def boot_hall(X, ctx, cache):
    n = X.shape[1]
    C = ctx.counts
    m = cache.setdefault("means", boot_means(X, ctx))
    m2 = (X * X) @ C.T / n
    m3 = (X * X * X) @ C.T / n
    cvar = np.maximum(m2 - m * m, 0.0)
    mu3_star = m3 - 3.0 * m * m2 + 2.0 * m**3
    sd_star = np.sqrt(cvar * n / (n - 1))
    se_star = sd_star / math.sqrt(n)
    o = X.mean(axis=1)
    sd = X.std(axis=1, ddof=1)
    se = sd / math.sqrt(n)
    g_hat = _skew(sd, np.mean((X - o[:, None]) ** 3, axis=1))
    g_star = _skew(sd_star, mu3_star)
    diff = m - o[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        T = diff / se_star
    tiny = 1e-12
    zero_se = se_star <= tiny
    T = np.where(zero_se, 0.0, T)
    G = _hall_g(T, g_star, n)
    G = np.where(zero_se, np.where(np.abs(diff) <= tiny, 0.0, np.sign(diff) * 1e12), G)
    q_lo, q_hi = np.percentile(G, [2.5, 97.5], axis=1)
    lo = o - se * _hall_ginv(q_hi, g_hat, n)
    hi = o - se * _hall_ginv(q_lo, g_hat, n)
    return from_interval(lo, hi, ctx.margin)


def t_interval(X, ctx, cache):
    n = X.shape[1]
    o = X.mean(axis=1)
    se = X.std(axis=1, ddof=1) / math.sqrt(n)
    c = sps.t.ppf(1 - ALPHA2, n - 1)
    return from_interval(o - c * se, o + c * se, ctx.margin)


def hall_t(X, ctx, cache):
    n = X.shape[1]
    o = X.mean(axis=1)
    sd = X.std(axis=1, ddof=1)
    se = sd / math.sqrt(n)
    mu3 = np.mean((X - o[:, None]) ** 3, axis=1)
    safe = np.where(sd > 0, sd, 1.0)
    g = np.where(sd > 0, mu3 / safe**3, 0.0)
    a = g / (3.0 * math.sqrt(n))
    bias = g / (6.0 * math.sqrt(n))
    c = sps.t.ppf(1 - ALPHA2, n - 1)

    def ginv(y):
        small = np.abs(a) < 1e-12
        aa = np.where(small, 1.0, a)
        out = (np.cbrt(1.0 + 3.0 * aa * (y - bias)) - 1.0) / aa
        return np.where(small, y - bias, out)

    lo = o - se * ginv(c)
    hi = o - se * ginv(-c)
    return from_interval(lo, hi, ctx.margin)


# --------------------------------------------------------------------------- test-based methods


def _signflip_reject_greater(X: np.ndarray, mu0: float, ctx: Context) -> np.ndarray:
    """Reject ``H0: mu <= mu0`` (one-sided 2.5%) with sign flips of ``d - mu0``."""
    Y = X - mu0
    obs = Y.mean(axis=1, keepdims=True)
    flips = Y @ ctx.signs.T / ctx.n
    count = np.count_nonzero(flips >= obs - 1e-12, axis=1)
    if ctx.n <= EXACT_MAX_N:  # exact, as the gate: count over all 2**n vectors
        return count / ctx.signs.shape[0] <= ALPHA2
    p = (1 + count) / (ctx.samples + 1)
    return p <= ALPHA2


def signflip(X, ctx, cache):
    pass_ok = _signflip_reject_greater(X, -ctx.margin, ctx)
    improve = _signflip_reject_greater(X, 0.0, ctx)
    fail_ok = _signflip_reject_greater(-X, 0.0, ctx)
    return Decision(pass_ok, fail_ok, improve)


def _betting_reject_greater(Y: np.ndarray, m: float, alpha: float = ALPHA2, c: float = 0.5) -> np.ndarray:
    """WSR hedged-capital test of ``H0: E y <= m`` for y in [0, 1] (one-sided, level alpha)."""
    R, n = Y.shape
    log_cap = np.zeros(R)
    best = np.zeros(R)
    s = np.zeros(R)        # sum of y so far
    v = np.zeros(R)        # sum of squared deviations from the running mean
    sig2 = np.full(R, 0.25)
    cap = c / m
    log_thr = math.log(1.0 / alpha)
    for t in range(n):
        lam = np.minimum(np.sqrt(2.0 * log_thr / (n * sig2)), cap)
        y = Y[:, t]
        log_cap += np.log1p(lam * (y - m))
        best = np.maximum(best, log_cap)
        s += y
        mu_hat = (0.5 + s) / (t + 2)
        v += (y - mu_hat) ** 2
        sig2 = (0.25 + v) / (t + 2)
    return best >= log_thr


def betting(X, ctx, cache):
    Y = (X + 1.0) / 2.0
    pass_ok = _betting_reject_greater(Y, (1.0 - ctx.margin) / 2.0)
    improve = _betting_reject_greater(Y, 0.5)
    fail_ok = _betting_reject_greater(1.0 - Y, 0.5)
    return Decision(pass_ok, fail_ok, improve)


BASE = {
    "percentile": percentile,
    "bca": bca,
    "boot-t": boot_t,
    "t": t_interval,
    "hall-t": hall_t,
    "boot-hall": boot_hall,
    "signflip": signflip,
    "betting": betting,
}


# --------------------------------------------------------------------------- guards


def cp_upper(k: np.ndarray, n: int, alpha: float = ALPHA2) -> np.ndarray:
    """One-sided (1 - alpha) Clopper-Pearson upper bound on a share with k of n."""
    k = np.asarray(k)
    out = sps.beta.ppf(1.0 - alpha, k + 1, n - k)
    return np.where(k >= n, 1.0, out)


def worst_case_pass(X: np.ndarray, margin: float, max_loss: float = 1.0) -> np.ndarray:
    """Distribution-free non-inferiority: ``cp_upper(#losses) * max_loss < margin``."""
    losses = np.count_nonzero(X < 0, axis=1)
    return cp_upper(losses, X.shape[1]) * max_loss < margin


_GUARD = re.compile(r"^(m\d+|cp|wc)$")


def parse(name: str) -> tuple[str, list[str]]:
    if name in PER_CLAIM:
        for method in PER_CLAIM[name].values():
            parse(method)
        return name, []
    base, *guards = name.split("+")
    for part in base.split("|"):
        if part not in BASE:
            raise ValueError(f"unknown method {part!r}; expected one of {', '.join(BASE)}")
    for g in guards:
        if not _GUARD.match(g):
            raise ValueError(f"unknown guard +{g} in {name!r}; expected +mK, +cp or +wc")
    return base, guards


#: Rules whose claims come from different methods: claim -> method name. "gate" is
#: gate.verdict.rules' calibrated rule: a regression or an improvement needs the one-sided
#: sign-flip test and the bootstrap-t interval to agree (5 movers at least); non-inferiority
#: also needs the Hall-transformed bootstrap-t (a left-skewed loss at the margin), or the
#: distribution-free worst case.
PER_CLAIM = {
    "gate": {"pass_ok": "signflip|boot-hall|boot-t+m5+wc", "fail_ok": "signflip|boot-t+m5",
             "improve": "signflip|boot-t+m5"},
}


def run(name: str, X: np.ndarray, ctx: Context, cache: dict) -> Decision:
    """Decision of method ``name`` (base plus guards, or a :data:`PER_CLAIM` rule) on every row of X."""
    if name in PER_CLAIM:
        parts = {claim: run(method, X, ctx, cache) for claim, method in PER_CLAIM[name].items()}
        return Decision(parts["pass_ok"].pass_ok, parts["fail_ok"].fail_ok, parts["improve"].improve)
    base, guards = parse(name)
    parts = []
    for part in base.split("|"):
        key = ("base", part)
        if key not in cache:
            cache[key] = BASE[part](X, ctx, cache)
        parts.append(cache[key])
    d = parts[0]
    pass_ok, fail_ok, improve = d.pass_ok.copy(), d.fail_ok.copy(), d.improve.copy()
    for other in parts[1:]:  # "a|b": every claim needs both methods (the union of the intervals)
        pass_ok &= other.pass_ok
        fail_ok &= other.fail_ok
        improve &= other.improve
    movers = np.count_nonzero(X != 0, axis=1)
    for g in guards:
        if g.startswith("m"):
            k = int(g[1:])
            few = movers < k
            pass_ok &= ~few
            fail_ok &= ~few
            improve &= ~few
        elif g == "cp":
            ok = cp_upper(movers, X.shape[1]) * 1.0 < ctx.margin
            pass_ok &= ok
            improve &= ok
        elif g == "wc":
            pass_ok |= worst_case_pass(X, ctx.margin)
    return Decision(pass_ok, fail_ok, improve, d.low, d.high)


def verdicts(X: np.ndarray, dec: Decision) -> np.ndarray:
    """0 = pass, 1 = fail, 3 = inconclusive, as ``decide_delta`` with no noise band."""
    mean = X.mean(axis=1)
    fail = dec.fail_ok & (np.abs(mean) > 0.0)
    out = np.full(X.shape[0], 3, dtype=np.int8)
    out[dec.pass_ok] = 0
    out[fail] = 1  # fail is checked first in decide_delta
    return out
