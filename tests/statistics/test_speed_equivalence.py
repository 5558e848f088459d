"""The fast statistics are bit-identical to the implementations they replaced.

``compare_paired``, ``paired_bootstrap``, ``bootstrap_means``, ``sign_flip_p``, ``hall_interval``,
``sign_flip_one_sided`` and ``evidence`` were rewritten for speed (smaller blocks gathered with
``numpy.take``, sign flips made by XOR-ing the sign bit, the two random streams side by side in
two threads, the one-sided tests decided from the sign-flip sums under a proven rounding bound,
the summaries ``compare_paired`` computes kept for ``evidence``, and the Clopper-Pearson
bisection's log-binomials computed once).  The report pins whole
reports, so a changed last digit is a bug: every field here is compared with ``==``, never
approximately, against a frozen copy of the previous implementations (below, prefixed ``ref_``,
copied verbatim apart from the names).
"""

from __future__ import annotations

import dataclasses
import math
import operator
from statistics import NormalDist

import numpy as np
import pytest

from gate.statistics import bootstrap as fast_bootstrap
from gate.statistics import evidence as fast_evidence
from gate.statistics import paired as fast_paired
from gate.statistics import randomization as fast_randomization
from gate.statistics.power import difference_sd, minimum_detectable_effect

# =========================================================================== #
# Frozen reference: the implementations before the speed rewrite.
# =========================================================================== #

REF_MAX_BLOCK_INDICES = 1_000_000
REF_LOWER_PCT = 2.5
REF_UPPER_PCT = 97.5
_REF_STD_NORMAL = NormalDist()


def ref_as_differences(d, name: str = "d") -> np.ndarray:
    arr = np.asarray(d, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of per-query differences, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty: a paired comparison needs at least one query")
    if not np.all(np.isfinite(arr)):
        bad = int(np.count_nonzero(~np.isfinite(arr)))
        raise ValueError(f"{name} has {bad} non-finite value(s) (NaN or inf); per-query scores must be finite")
    return arr


def ref_check_samples(samples) -> int:
    try:
        value = operator.index(samples)
    except TypeError:
        raise ValueError(f"samples must be an integer, got {samples!r}") from None
    if value < 1:
        raise ValueError(f"samples must be at least 1, got {value}")
    return value


def ref_check_seed(seed) -> int:
    try:
        value = operator.index(seed)
    except TypeError:
        raise ValueError(f"seed must be an integer, got {seed!r}") from None
    if value < 0:
        raise ValueError(f"seed must be non-negative, got {value}")
    return value


def ref_chunk_rows_for(n: int, max_indices: int = REF_MAX_BLOCK_INDICES) -> int:
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    return max(1, max_indices // n)


def ref_resolve_chunk_rows(chunk_rows, n: int) -> int:
    if chunk_rows is None:
        return ref_chunk_rows_for(n)
    try:
        value = operator.index(chunk_rows)
    except TypeError:
        raise ValueError(f"chunk_rows must be an integer or None, got {chunk_rows!r}") from None
    if value < 1:
        raise ValueError(f"chunk_rows must be at least 1, got {value}")
    return value


def ref_integer_blocks(rng, high, rows, cols, chunk_rows):
    done = 0
    while done < rows:
        r = min(chunk_rows, rows - done)
        yield rng.integers(0, high, size=(r, cols))
        done += r


def ref_index_blocks(n, samples=10_000, seed=7, chunk_rows=None):
    samples = ref_check_samples(samples)
    seed = ref_check_seed(seed)
    rows = ref_resolve_chunk_rows(chunk_rows, n)
    rng = np.random.default_rng(seed)
    return ref_integer_blocks(rng, n, samples, n, rows)


def ref_bootstrap_means(contrasts, samples=10_000, seed=7, chunk_rows=None) -> np.ndarray:
    arr = np.asarray(contrasts, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError("contrasts must be a 2-D array")
    m, n = arr.shape
    if m == 0 or n == 0:
        raise ValueError("empty contrasts")
    if not np.all(np.isfinite(arr)):
        raise ValueError("contrasts has non-finite value(s) (NaN or inf); per-query scores must be finite")
    arr = np.ascontiguousarray(arr)
    out = np.empty((m, ref_check_samples(samples)), dtype=np.float64)
    start = 0
    for idx in ref_index_blocks(n, samples, seed, chunk_rows):
        stop = start + idx.shape[0]
        for k in range(m):
            out[k, start:stop] = arr[k][idx].mean(axis=1)
        start = stop
    return out


def ref_jackknife_acceleration(d: np.ndarray) -> float:
    n = d.size
    if n < 2:
        return 0.0
    loo = (d.sum() - d) / (n - 1)
    dev = loo.mean() - loo
    den = float(np.sum(dev**2))
    if den == 0.0:
        return 0.0
    return float(np.sum(dev * dev * dev) / (6.0 * den**1.5))  # cubes as products: numpy's power is CPU-dependent


def ref_bca_levels(d, means, observed):
    if means.min() == means.max():
        return None
    samples = means.size
    share = float(np.count_nonzero(means < observed)) / samples
    half = 0.5 / samples
    share = min(max(share, half), 1.0 - half)
    z0 = _REF_STD_NORMAL.inv_cdf(share)
    a = ref_jackknife_acceleration(d)
    levels = []
    for pct in (REF_LOWER_PCT, REF_UPPER_PCT):
        z = _REF_STD_NORMAL.inv_cdf(pct / 100.0)
        shifted = z0 + z
        levels.append(100.0 * _REF_STD_NORMAL.cdf(z0 + shifted / (1.0 - a * shifted)))
    return levels[0], levels[1]


def ref_confidence_interval(d, means, method="percentile"):
    d = ref_as_differences(d)
    means = np.asarray(means, dtype=np.float64)
    observed = d.mean()
    if method == "percentile":
        lo, hi = np.percentile(means, [REF_LOWER_PCT, REF_UPPER_PCT])
    elif method == "basic":
        q_lo, q_hi = np.percentile(means, [REF_LOWER_PCT, REF_UPPER_PCT])
        lo, hi = 2.0 * observed - q_hi, 2.0 * observed - q_lo
    else:
        levels = ref_bca_levels(d, means, float(observed))
        if levels is None:
            lo = hi = means[0]
        else:
            lo, hi = np.percentile(means, list(levels))
    return float(lo), float(hi)


def ref_paired_bootstrap(d, samples=10_000, seed=7, method="percentile", chunk_rows=None) -> dict:
    d = ref_as_differences(d)
    samples = ref_check_samples(samples)
    seed = ref_check_seed(seed)
    means = ref_bootstrap_means(d[None, :], samples, seed, chunk_rows)[0]
    lo, hi = ref_confidence_interval(d, means, method)
    return dict(mean=float(d.mean()), ci_low=lo, ci_high=hi, p_le_zero=float((means <= 0).mean()),
                samples=samples, seed=seed, method=method)


REF_EXACT_MAX_N = 16
REF_TOLERANCE = 1e-12


def ref_count_extreme(d, keep, threshold) -> int:
    flipped = np.where(keep.astype(bool), d, -d)
    return int(np.count_nonzero(np.abs(flipped.mean(axis=1)) >= threshold))


def ref_sign_flip_p(d, samples=10_000, seed=7, *, exact_max_n=REF_EXACT_MAX_N, chunk_rows=None):
    d = ref_as_differences(d)
    samples = ref_check_samples(samples)
    seed = ref_check_seed(seed)
    n = d.size
    threshold = abs(float(d.mean())) - REF_TOLERANCE
    if n <= exact_max_n:
        total = 1 << n
        codes = np.arange(total, dtype=np.int64)
        count = 0
        rows = ref_resolve_chunk_rows(chunk_rows, n)
        for start in range(0, total, rows):
            block = codes[start:start + rows, None]
            keep = (block >> np.arange(n, dtype=np.int64)) & 1
            count += ref_count_extreme(d, keep, threshold)
        return count / total, "exact"
    rng = np.random.default_rng(seed)
    rows = ref_resolve_chunk_rows(chunk_rows, n)
    count = 0
    for keep in ref_integer_blocks(rng, 2, samples, n, rows):
        count += ref_count_extreme(d, keep, threshold)
    return (1 + count) / (samples + 1), "monte-carlo"


REF_ALPHA = 0.025
_REF_HUGE = 1e12


def ref_hall_g(t, gamma, n):
    a = gamma / (3.0 * math.sqrt(n))
    return t + a * t * t + a * a * (t * t * t) / 3.0 + gamma / (6.0 * math.sqrt(n))


def ref_hall_ginv(y, gamma, n):
    a = gamma / (3.0 * math.sqrt(n))
    bias = gamma / (6.0 * math.sqrt(n))
    if abs(a) < 1e-12:
        return y - bias
    inner = 1.0 + 3.0 * a * (y - bias)
    return (math.copysign(abs(inner) ** (1.0 / 3.0), inner) - 1.0) / a


def ref_hall_interval(d, samples=10_000, seed=7, chunk_rows=None, skew=True):
    """Hall's interval; ``skew=False``: the plain bootstrap-t interval of the same resamples."""
    d = ref_as_differences(d)
    n = d.size
    mean = float(d.mean())
    if n < 2:
        return -math.inf, math.inf
    sd = float(np.std(d, ddof=1))
    if sd == 0.0:
        return mean, mean
    se = sd / math.sqrt(n)
    gamma_hat = float(np.mean((d - mean) * (d - mean) * (d - mean))) / sd**3 if skew else 0.0
    g = np.empty(ref_check_samples(samples), dtype=np.float64)
    start = 0
    for idx in ref_index_blocks(n, samples, seed, chunk_rows):
        x = d[idx]
        m1 = x.mean(axis=1)
        m2 = (x * x).mean(axis=1)
        m3 = (x * x * x).mean(axis=1)
        del x
        central2 = np.maximum(m2 - m1 * m1, 0.0)
        central3 = m3 - 3.0 * m1 * m2 + 2.0 * (m1 * m1 * m1)
        sd_star = np.sqrt(central2 * n / (n - 1))
        spread = sd_star > REF_TOLERANCE
        safe = np.where(spread, sd_star, 1.0)
        gamma_star = np.where(spread, central3 / (safe * safe * safe), 0.0) if skew else np.zeros_like(m1)
        diff = m1 - mean
        t = np.where(spread, diff / (safe / math.sqrt(n)), 0.0)
        block = ref_hall_g(t, gamma_star, n)
        flat = np.where(np.abs(diff) <= REF_TOLERANCE, 0.0, np.sign(diff) * _REF_HUGE)
        g[start:start + len(m1)] = np.where(spread, block, flat)
        start += len(m1)
    q_low, q_high = np.percentile(g, [100 * REF_ALPHA, 100 * (1 - REF_ALPHA)])
    return mean - se * ref_hall_ginv(float(q_high), gamma_hat, n), mean - se * ref_hall_ginv(float(q_low), gamma_hat, n)


def ref_sign_blocks(n, samples, seed, chunk_rows):
    rows = ref_resolve_chunk_rows(chunk_rows, n)
    if n <= REF_EXACT_MAX_N:
        codes = np.arange(1 << n, dtype=np.int64)
        for start in range(0, len(codes), rows):
            keep = (codes[start:start + rows, None] >> np.arange(n, dtype=np.int64)) & 1
            yield np.where(keep == 1, 1.0, -1.0)
        return
    rng = np.random.default_rng(seed)
    for keep in ref_integer_blocks(rng, 2, samples, n, rows):
        yield np.where(keep == 1, 1.0, -1.0)


def ref_sign_flip_one_sided(d, shifts, samples=10_000, seed=7, chunk_rows=None):
    d = ref_as_differences(d)
    samples = ref_check_samples(samples)
    seed = ref_check_seed(seed)
    n = d.size
    ys = np.stack([d - mu0 for mu0 in shifts])
    observed = ys.mean(axis=1)
    greater = np.zeros(len(shifts), dtype=np.int64)
    less = np.zeros(len(shifts), dtype=np.int64)
    total = 0
    for signs in ref_sign_blocks(n, samples, seed, chunk_rows):
        flipped = ys @ signs.T / n
        greater += np.count_nonzero(flipped >= observed[:, None] - REF_TOLERANCE, axis=1)
        less += np.count_nonzero(flipped <= observed[:, None] + REF_TOLERANCE, axis=1)
        total += signs.shape[0]
    if n <= REF_EXACT_MAX_N:
        return (greater / total).tolist(), (less / total).tolist(), "exact"
    return ((1 + greater) / (samples + 1)).tolist(), ((1 + less) / (samples + 1)).tolist(), "monte-carlo"


def ref_binomial_cdf(k, n, p):
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


def ref_clopper_pearson_upper(k, n, alpha=REF_ALPHA):
    if k >= n:
        return 1.0
    if k == 0:
        return 1.0 - alpha ** (1.0 / n)
    low, high = k / n, 1.0
    for _ in range(100):
        mid = (low + high) / 2.0
        if ref_binomial_cdf(k, n, mid) > alpha:
            low = mid
        else:
            high = mid
    return high


def ref_evidence(d, margin, samples=10_000, seed=7, chunk_rows=None) -> dict:
    d = ref_as_differences(d)
    samples = ref_check_samples(samples)
    seed = ref_check_seed(seed)
    low, high = ref_hall_interval(d, samples, seed, chunk_rows)
    t_low, t_high = ref_hall_interval(d, samples, seed, chunk_rows, skew=False)
    low, high, t_low, t_high = (min(max(x, -1.0), 1.0) for x in (low, high, t_low, t_high))  # a mean of [-1, 1]
    greater, less, kind = ref_sign_flip_one_sided(d, (-margin, 0.0), samples, seed, chunk_rows)
    losses = int(np.count_nonzero(d < 0))
    return dict(
        n=int(d.size), mean=float(d.mean()), movers=int(np.count_nonzero(d != 0)), losses=losses,
        hall_low=float(low), hall_high=float(high), t_low=float(t_low), t_high=float(t_high),
        p_noninferior=float(greater[0]), p_regression=float(less[1]), p_improvement=float(greater[1]),
        loss_share_upper=ref_clopper_pearson_upper(losses, int(d.size)), margin=float(margin),
        samples=samples, seed=seed, randomization=kind, alpha=0.025,
    )


def ref_compare_paired(baseline, candidate, *, samples=10_000, seed=7, method="percentile") -> dict:
    samples = ref_check_samples(samples)
    seed = ref_check_seed(seed)
    base = np.asarray(baseline, dtype=np.float64)
    cand = np.asarray(candidate, dtype=np.float64)
    d = ref_as_differences(cand - base, "candidate - baseline")
    boot = ref_paired_bootstrap(d, samples, seed, method)
    p_rand, kind = ref_sign_flip_p(d, samples, seed)
    return dict(
        n=int(d.size), **{k: boot[k] for k in ("mean", "ci_low", "ci_high", "p_le_zero", "samples", "seed", "method")},
        wins=int(np.count_nonzero(d > 0)), losses=int(np.count_nonzero(d < 0)), ties=int(np.count_nonzero(d == 0)),
        p_randomization=float(p_rand), randomization=kind,
        mde=minimum_detectable_effect(d), sd=difference_sd(d),
    )


# =========================================================================== #
# Inputs: zeros, ties, lattices, all-zero, constant, heavy tails, tiny and huge values.
# =========================================================================== #


def make_runs(kind: str, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(baseline, candidate) per-query scores of ``n`` queries; every kind is NaN-free."""
    rng = np.random.default_rng(1000 * n + seed)
    if kind == "sparse":  # most queries unmoved, scores on a 3-decimal grid: zeros and ties
        base = np.round(rng.random(n), 3)
        cand = base.copy()
        moved = rng.random(n) < 0.4
        cand[moved] = np.round(np.clip(base[moved] + rng.normal(0.01, 0.2, moved.sum()), 0, 1), 3)
    elif kind == "grid":  # every score on a 0.1 grid: many exact ties of flipped sums
        base = rng.integers(0, 11, n) / 10
        cand = rng.integers(0, 11, n) / 10
    elif kind == "reciprocal":  # reciprocal ranks: jumps of 1, 1/2, 1/3 ... and zeros
        base = np.where(rng.random(n) < 0.8, 1.0 / rng.integers(1, 11, n), 0.0)
        cand = np.where(rng.random(n) < 0.3, np.where(rng.random(n) < 0.8, 1.0 / rng.integers(1, 11, n), 0.0), base)
    elif kind == "success":  # 0/1 scores: differences -1, 0, 1 (sums exact in any order)
        base = (rng.random(n) < 0.5).astype(float)
        cand = (rng.random(n) < 0.55).astype(float)
    elif kind == "thirds":  # +-1/3, +-2/3, +-1: not binary (sums are rounded), many ties, mean |d| 2/3
        base = np.zeros(n)
        cand = rng.choice([-1.0, -2 / 3, -1 / 3, 1 / 3, 2 / 3, 1.0], n)
    elif kind == "continuous":
        base = rng.random(n)
        cand = np.clip(base + rng.normal(0.005, 0.1, n), 0, 1)
    elif kind == "all-zero":  # identical runs
        base = np.round(rng.random(n), 2)
        cand = base.copy()
    elif kind == "constant":  # every query moves by the same amount
        base = np.zeros(n)
        cand = np.full(n, 0.25)
    elif kind == "tiny":  # differences around the 1e-12 tolerance
        base = np.zeros(n)
        cand = rng.choice([-2e-12, -1e-12, 0.0, 1e-12, 3e-13], n)
    elif kind == "huge":
        base = np.zeros(n)
        cand = rng.normal(0.0, 1e6, n)
    else:
        raise AssertionError(kind)
    return base, cand


KINDS = ["sparse", "grid", "reciprocal", "success", "thirds", "continuous", "all-zero", "constant", "tiny", "huge"]
SIZES = [1, 2, 3, 16, 17, 40, 333, pytest.param(2000, marks=pytest.mark.full)]  # 2000: slow, the full tier


def fields(value) -> dict:
    if dataclasses.is_dataclass(value):
        return dataclasses.asdict(value)
    return dict(value)


def assert_identical(new, ref) -> None:
    new, ref = fields(new), fields(ref)
    assert new.keys() == ref.keys()
    for key in ref:
        a, b = new[key], ref[key]
        # ==, never approx; NaN never appears (and would fail here, as it should).
        assert type(a) is type(b) and a == b, f"{key}: new {a!r} != reference {b!r}"


@pytest.fixture(autouse=True)
def _fresh_summaries():
    fast_bootstrap.SUMMARIES.clear()
    yield
    fast_bootstrap.SUMMARIES.clear()


# =========================================================================== #
# compare_paired, then evidence on the same differences (the compare pipeline)
# =========================================================================== #


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", SIZES)
def test_compare_then_evidence_is_bit_identical(kind, n):
    base, cand = make_runs(kind, n)
    samples, seed = 1500, 7
    for method in ("percentile", "bca", "basic"):
        got = fast_paired.compare_paired(base, cand, samples=samples, seed=seed, method=method)
        assert_identical(got, ref_compare_paired(base, cand, samples=samples, seed=seed, method=method))
    d = cand - base
    want = ref_evidence(d, 0.02, samples, seed)
    # from compare_paired's summaries
    assert_identical(fast_evidence.evidence(d, 0.02, samples, seed, alpha=REF_ALPHA), want)
    fast_bootstrap.SUMMARIES.clear()
    assert_identical(fast_evidence.evidence(d, 0.02, samples, seed, alpha=REF_ALPHA), want)  # computed afresh
    assert_identical(fast_evidence.evidence(d, 0.0, samples, 3, alpha=REF_ALPHA), ref_evidence(d, 0.0, samples, 3))


@pytest.mark.full  # slow: the full tier (tests/conftest.py)
@pytest.mark.parametrize("kind, samples", [("sparse", 10_000), ("reciprocal", 2_000), ("success", 2_000)])
def test_ten_thousand_queries(kind, samples):
    """The size the speed-up is for: n = 10,000 (B = 10,000 once), the compare pipeline's calls."""
    base, cand = make_runs(kind, 10_000)
    got = fast_paired.compare_paired(base, cand, samples=samples, seed=7, method="percentile")
    assert_identical(got, ref_compare_paired(base, cand, samples=samples, seed=7, method="percentile"))
    d = cand - base
    assert_identical(fast_evidence.evidence(d, 0.02, samples, 7, alpha=REF_ALPHA), ref_evidence(d, 0.02, samples, 7))
    if kind == "sparse":  # the other methods share the same resampled means
        ref_means = ref_bootstrap_means(d[None, :], samples, 7)[0]
        for method in ("bca", "basic"):
            got = fast_paired.compare_paired(base, cand, samples=samples, seed=7, method=method)
            lo, hi = ref_confidence_interval(d, ref_means, method)
            assert (got.ci_low, got.ci_high, got.method) == (lo, hi, method)


# =========================================================================== #
# Each function on its own, with block sizes and seeds
# =========================================================================== #


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n, samples, chunk_rows", [
    (1, 200, None), (5, 300, 7), (17, 999, 1), (17, 500, None), (120, 800, 64), (1000, 1200, 5),
    pytest.param(4000, 700, None, marks=pytest.mark.full),  # slow: the full tier
])
def test_each_function_is_bit_identical(kind, n, samples, chunk_rows):
    base, cand = make_runs(kind, n, seed=1)
    d = cand - base
    seed = 11
    for method in ("percentile", "bca", "basic"):
        assert_identical(fast_bootstrap.paired_bootstrap(d, samples, seed, method, chunk_rows),
                         ref_paired_bootstrap(d, samples, seed, method, chunk_rows))
    assert fast_randomization.sign_flip_p(d, samples, seed, chunk_rows=chunk_rows) == \
        ref_sign_flip_p(d, samples, seed, chunk_rows=chunk_rows)
    assert fast_randomization.sign_flip_p(d, samples, seed, exact_max_n=0, chunk_rows=chunk_rows) == \
        ref_sign_flip_p(d, samples, seed, exact_max_n=0, chunk_rows=chunk_rows)
    assert fast_evidence.hall_interval(d, samples, seed, chunk_rows, alpha=REF_ALPHA) == \
        ref_hall_interval(d, samples, seed, chunk_rows)
    for shifts in ((-0.02, 0.0), (0.0,), (-0.0, 1e-13, -1e-12, 0.5, -3.0), (float(d.mean()),)):
        assert fast_evidence.sign_flip_one_sided(d, shifts, samples, seed, chunk_rows) == \
            ref_sign_flip_one_sided(d, shifts, samples, seed, chunk_rows)
    assert_identical(fast_evidence.evidence(d, 0.05, samples, seed, chunk_rows, alpha=REF_ALPHA),
                     ref_evidence(d, 0.05, samples, seed, chunk_rows))


def test_bootstrap_means_of_several_contrasts_is_bit_identical():
    rng = np.random.default_rng(4)
    for n, samples, chunk_rows in ((1, 50, None), (60, 700, 13), (999, 300, None), (3000, 200, 1)):
        a, b, c = np.round(rng.random((3, n)), 2)
        contrasts = np.vstack([b - a, c - a, (c - b) - (b - a)])
        got = fast_bootstrap.bootstrap_means(contrasts, samples, 21, chunk_rows)
        want = ref_bootstrap_means(contrasts, samples, 21, chunk_rows)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(got, want)


def test_resampled_moments_are_the_reference_blocks_moments():
    for n, samples in ((1, 30), (7, 400), (2500, 300)):
        d = np.round(np.random.default_rng(n).normal(0, 0.2, n), 2)
        m1, m2, m3 = fast_bootstrap.resampled_moments(d, samples, 5, 3)
        x = d[np.random.default_rng(5).integers(0, n, size=(samples, n))]
        assert np.array_equal(m1, x.mean(axis=1))
        assert np.array_equal(m2, (x * x).mean(axis=1))
        assert np.array_equal(m3, (x * x * x).mean(axis=1))
        sums, kept = fast_randomization.sign_flip_sums(d, samples, 5, counts=True)
        keep = np.random.default_rng(5).integers(0, 2, size=(samples, n))
        assert np.array_equal(sums / n, np.where(keep.astype(bool), d, -d).mean(axis=1))
        assert np.array_equal(kept, keep.sum(axis=1))


# =========================================================================== #
# The one-sided tests' rounding bound: vectors within it go to the reference computation
# =========================================================================== #


def _reference_calls(monkeypatch) -> list[int]:
    calls: list[int] = []
    original = fast_evidence._reference_flipped

    def spy(ys, n, samples, seed, rows, wanted):
        calls.append(len(wanted))
        return original(ys, n, samples, seed, rows, wanted)

    monkeypatch.setattr(fast_evidence, "_reference_flipped", spy)
    return calls


@pytest.mark.parametrize("unit", [1e-6, 1e-4, 1.0])
def test_widened_bound_sends_vectors_to_the_reference_and_changes_nothing(monkeypatch, unit):
    """A much larger 'unit roundoff' leaves many (at 1.0: all) vectors to the reference path."""
    calls = _reference_calls(monkeypatch)
    monkeypatch.setattr(fast_evidence, "_U", unit)
    for kind in ("sparse", "thirds", "tiny"):
        d = np.subtract(*make_runs(kind, 900, seed=2)[::-1])
        for shifts in ((-0.02, 0.0), (0.3, -1e-13)):
            assert fast_evidence.sign_flip_one_sided(d, shifts, 600, 9, 32) == \
                ref_sign_flip_one_sided(d, shifts, 600, 9, 32)
    assert calls and (unit < 1.0 or max(calls) == 600)


def test_ties_within_the_bound_are_decided_by_the_reference(monkeypatch):
    """Differences in thirds (not binary: sums are rounded) with |d| large on many queries:
    exact ties of the flipped sum lie within the proven bound and take the reference path."""
    calls = _reference_calls(monkeypatch)
    base, cand = make_runs("thirds", 10_000, seed=3)
    d = cand - base
    assert fast_evidence.sign_flip_one_sided(d, (-0.02, 0.0), 2000, 7) == \
        ref_sign_flip_one_sided(d, (-0.02, 0.0), 2000, 7)
    assert calls, "expected some sign vectors within the bound"


def test_shifts_that_put_a_vector_on_the_threshold(monkeypatch):
    """For chosen sign vectors, the shift mu0 that puts their flipped mean exactly at
    ``observed - 1e-12`` (or ``+ 1e-12``): the decision then hangs on the last bits."""
    n, samples, seed = 300, 400, 5
    d = np.random.default_rng(8).normal(0.01, 0.3, n)
    keep = np.random.default_rng(seed).integers(0, 2, size=(samples, n))
    s = np.where(keep == 1, 1.0, -1.0)
    shifts = []
    for b in range(0, samples, 37):
        mean_s = s[b].mean()
        if mean_s == 1.0:
            continue
        gap = d.mean() - (s[b] @ d) / n
        for tol in (1e-12, -1e-12):
            shifts.append((gap - tol) / (1.0 - mean_s))
    shifts = tuple(shifts)
    assert fast_evidence.sign_flip_one_sided(d, shifts, samples, seed) == \
        ref_sign_flip_one_sided(d, shifts, samples, seed)


def test_binary_sums_are_exact_and_others_are_not():
    exact = fast_evidence._sums_are_exact
    assert exact(np.array([1.0, -1.0, 0.5, 0.0]), 2.5 * (1 + 1e-9))
    assert exact(np.array([0.0, 0.0]), 0.0)
    assert exact(np.array([0.1]), 0.1 * (1 + 1e-9))  # one term: nothing to round
    assert not exact(np.array([0.1, 0.2]), 0.3 * (1 + 1e-9))
    assert not exact(np.array([1.0, 2.0**-60]), 1.0 + 2.0**-50)
    assert not exact(np.array([1 / 3, 1.0]), 2.0)
    assert exact(np.array([5e-324, -5e-324]), 1e-323)  # subnormal grid
    assert not exact(np.array([5e-324, 1.0]), 1.0 * (1 + 1e-9))


# =========================================================================== #
# Summaries kept between calls, threads
# =========================================================================== #


def test_evidence_after_compare_draws_nothing_again(monkeypatch):
    base, cand = make_runs("sparse", 500)
    counts = {"moments": 0, "signs": 0}
    moments, sums = fast_bootstrap.resampled_moments, fast_randomization.sign_flip_sums

    def count_moments(*args, **kwargs):
        counts["moments"] += 1
        return moments(*args, **kwargs)

    def count_signs(*args, **kwargs):
        counts["signs"] += 1
        return sums(*args, **kwargs)

    monkeypatch.setattr(fast_bootstrap, "resampled_moments", count_moments)
    monkeypatch.setattr(fast_randomization, "sign_flip_sums", count_signs)
    fast_paired.compare_paired(base, cand, samples=800, seed=7)
    assert counts == {"moments": 1, "signs": 1}
    got = fast_evidence.evidence(cand - base, 0.02, 800, 7, alpha=REF_ALPHA)
    assert counts == {"moments": 1, "signs": 1}
    assert_identical(got, ref_evidence(cand - base, 0.02, 800, 7))
    # Another seed, sample count or set of differences is a different entry, never a stale one.
    assert_identical(fast_evidence.evidence(cand - base, 0.02, 800, 8, alpha=REF_ALPHA),
                     ref_evidence(cand - base, 0.02, 800, 8))
    assert_identical(fast_evidence.evidence(cand - base, 0.02, 801, 7, alpha=REF_ALPHA),
                     ref_evidence(cand - base, 0.02, 801, 7))
    other = (cand - base).copy()
    other[17] += 1e-9
    assert_identical(fast_evidence.evidence(other, 0.02, 800, 7, alpha=REF_ALPHA), ref_evidence(other, 0.02, 800, 7))
    assert counts == {"moments": 4, "signs": 4}


def test_kept_summaries_are_read_only_and_bounded():
    d = np.round(np.random.default_rng(2).normal(0, 0.1, 300), 2)
    fast_paired.compare_paired(np.zeros(300), d, samples=500, seed=1)
    (means,) = fast_bootstrap.bootstrap_moments(d, 500, 1, 1)
    with pytest.raises(ValueError):
        means[0] = 1.0
    for seed in range(40):
        fast_paired.compare_paired(np.zeros(300), d, samples=50, seed=seed)
    assert len(fast_bootstrap.SUMMARIES._items) <= 8


@pytest.mark.parametrize("parallel_from", [0, 1 << 62])
def test_threads_or_not_same_numbers(monkeypatch, parallel_from):
    monkeypatch.setattr(fast_paired, "PARALLEL_MIN_DRAWS", parallel_from)
    monkeypatch.setattr(fast_evidence, "PARALLEL_MIN_DRAWS", parallel_from)
    base, cand = make_runs("reciprocal", 700)
    got = fast_paired.compare_paired(base, cand, samples=900, seed=3, method="bca")
    assert_identical(got, ref_compare_paired(base, cand, samples=900, seed=3, method="bca"))
    fast_bootstrap.SUMMARIES.clear()
    assert_identical(fast_evidence.evidence(cand - base, 0.02, 900, 3, alpha=REF_ALPHA),
                     ref_evidence(cand - base, 0.02, 900, 3))


def test_run_both_returns_both_and_raises_either():
    assert fast_bootstrap.run_both(lambda: 1, lambda: 2) == (1, 2)
    assert fast_bootstrap.run_both(lambda: 1, lambda: 2, parallel=False) == (1, 2)

    def fail():
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        fast_bootstrap.run_both(lambda: 1, fail)
    with pytest.raises(ValueError, match="boom"):
        fast_bootstrap.run_both(fail, lambda: 2)


def test_errors_are_those_of_the_reference():
    for bad in ([], [0.1, math.nan], [[0.1, 0.2]]):
        with pytest.raises(ValueError):
            fast_evidence.evidence(bad, 0.02, 100, 7, alpha=REF_ALPHA)
    d = np.linspace(-0.1, 0.2, 40)
    for kwargs in ({"samples": 0}, {"seed": -1}, {"chunk_rows": 0}):
        args = {"samples": 100, "seed": 7, "chunk_rows": None, **kwargs}
        with pytest.raises(ValueError):
            ref_evidence(d, 0.02, **args)
        with pytest.raises(ValueError):
            fast_evidence.evidence(d, 0.02, **args, alpha=REF_ALPHA)
        with pytest.raises(ValueError):
            fast_bootstrap.paired_bootstrap(d, args["samples"], args["seed"], "percentile", args["chunk_rows"])
    # A cached summary does not excuse a bad chunk_rows.
    fast_paired.compare_paired(np.zeros(40), d, samples=100, seed=7)
    with pytest.raises(ValueError, match="chunk_rows"):
        fast_evidence.hall_interval(d, 100, 7, chunk_rows=0, alpha=REF_ALPHA)
    with pytest.raises(ValueError, match="chunk_rows"):
        fast_evidence.sign_flip_one_sided(d, (0.0,), 100, 7, chunk_rows=0)
    # One query or no spread: the interval needs no resamples and checks nothing more.
    assert fast_evidence.hall_interval([0.3], samples=0, alpha=REF_ALPHA) == ref_hall_interval([0.3], samples=0)
    assert fast_evidence.hall_interval([0.3, 0.3], seed=-1, alpha=REF_ALPHA) == ref_hall_interval([0.3, 0.3], seed=-1)


# =========================================================================== #
# The Clopper-Pearson bound: the binomial terms' log-binomials computed once per bisection
# =========================================================================== #


@pytest.mark.parametrize("k, n", [(1, 2), (1, 17), (5, 7), (49, 50), (13, 400), (999, 1000), (2187, 10_000),
                                  (3485, 10_000)])
def test_clopper_pearson_upper_is_bit_identical(k, n):
    for alpha in (0.025, 0.05, 0.5):
        got = fast_evidence.clopper_pearson_upper(k, n, alpha=alpha)
        assert type(got) is float and got == ref_clopper_pearson_upper(k, n, alpha)


def test_binomial_cdf_is_bit_identical():
    rng = np.random.default_rng(12)
    for _ in range(60):
        n = int(rng.integers(1, 3000))
        k = int(rng.integers(0, n + 1))
        for p in (-1.0, 0.0, 1e-300, 1e-9, float(rng.random()), 0.5, 1 - 1e-12, 1.0, 2.0):
            got = fast_evidence._binomial_cdf(k, n, p)
            assert type(got) is float and got == ref_binomial_cdf(k, n, p), (k, n, p)
