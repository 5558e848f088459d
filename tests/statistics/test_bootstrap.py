"""Paired bootstrap: exact agreement with a written-out reference, chunking, intervals."""

from __future__ import annotations

import tracemalloc
from statistics import NormalDist

import numpy as np
import pytest

from gate.statistics.bootstrap import (
    CI_METHODS,
    MAX_BLOCK_INDICES,
    BootstrapResult,
    bootstrap_means,
    chunk_rows_for,
    confidence_interval,
    index_blocks,
    jackknife_acceleration,
    paired_bootstrap,
)

# --------------------------------------------------------------------------- #
# Reference implementations, written out in full (one-shot, no chunking).
# --------------------------------------------------------------------------- #


def reference_means(d, samples, seed):
    """One draw of every resample index, then the mean of each resample."""
    d = np.asarray(d, dtype=np.float64)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, d.size, size=(samples, d.size))
    return d[idx].mean(axis=1)


def reference_bootstrap(baseline, candidate, samples=10_000, seed=7):
    """Percentile paired bootstrap: (mean, ci_low, ci_high, p_le_zero)."""
    d = np.asarray(candidate, dtype=np.float64) - np.asarray(baseline, dtype=np.float64)
    means = reference_means(d, samples, seed)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return d.mean(), lo, hi, (means <= 0).mean()


def reference_bca(d, samples=10_000, seed=7):
    """BCa 95% interval (bias correction from '<', jackknife acceleration)."""
    d = np.asarray(d, dtype=np.float64)
    n = d.size
    means = reference_means(d, samples, seed)
    theta = d.mean()
    z0 = NormalDist().inv_cdf(float(np.count_nonzero(means < theta)) / samples)
    leave_one_out = (d.sum() - d) / (n - 1)
    dev = leave_one_out.mean() - leave_one_out
    a = float(np.sum(dev**3) / (6.0 * float(np.sum(dev**2)) ** 1.5))
    levels = []
    for q in (0.025, 0.975):
        zq = NormalDist().inv_cdf(q)
        levels.append(100.0 * NormalDist().cdf(z0 + (z0 + zq) / (1.0 - a * (z0 + zq))))
    lo, hi = np.percentile(means, levels)
    return lo, hi


def _runs(n, seed=0):
    """Two runs of per-query scores in [0, 1], candidate slightly better on average."""
    rng = np.random.default_rng(seed)
    base = rng.random(n)
    cand = np.clip(base + rng.normal(0.01, 0.08, n), 0.0, 1.0)
    return base, cand


# --------------------------------------------------------------------------- #
# Exact equality with the reference
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("n", [1, 2, 5, 80, 140])
@pytest.mark.parametrize("seed", [7, 0, 12345])
def test_matches_reference_exactly(n, seed):
    base, cand = _runs(n, seed=n)
    result = paired_bootstrap(cand - base, samples=2000, seed=seed)
    mean, lo, hi, p = reference_bootstrap(base, cand, samples=2000, seed=seed)
    # Bit-for-bit: same indices, same reductions, same percentile call.
    assert result.mean == mean
    assert result.ci_low == lo
    assert result.ci_high == hi
    assert result.p_le_zero == p


def test_defaults_are_10000_samples_seed_7_and_recorded():
    base, cand = _runs(140)
    result = paired_bootstrap(cand - base)
    assert isinstance(result, BootstrapResult)
    assert (result.samples, result.seed, result.method) == (10_000, 7, "percentile")
    assert (result.mean, result.ci_low, result.ci_high, result.p_le_zero) == reference_bootstrap(base, cand)


def test_seed_changes_resamples_and_same_seed_repeats():
    base, cand = _runs(140)
    d = cand - base
    a = paired_bootstrap(d, samples=3000, seed=1)
    b = paired_bootstrap(d, samples=3000, seed=1)
    c = paired_bootstrap(d, samples=3000, seed=2)
    assert a == b
    assert (a.ci_low, a.ci_high) != (c.ci_low, c.ci_high)
    assert a.mean == c.mean  # the observed mean never depends on the seed


def test_p_le_zero_counts_ties_at_zero():
    # d = [0, 0, 1]: a resample mean is <= 0 exactly when query 3 is never drawn.
    means = reference_means([0.0, 0.0, 1.0], 5000, 7)
    result = paired_bootstrap([0.0, 0.0, 1.0], samples=5000, seed=7)
    assert result.p_le_zero == (means <= 0).mean()
    assert result.p_le_zero == pytest.approx((2 / 3) ** 3, abs=0.03)


# --------------------------------------------------------------------------- #
# Chunking: same numbers as one draw, bounded blocks
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(
    "n, samples, chunk_rows",
    [
        (1, 50, 7),       # single query
        (2, 33, 5),       # 33 = 6*5 + 3: last block short
        (7, 100, 3),      # boundary not aligned with samples
        (13, 101, 10),
        (140, 1000, 333),
        (1000, 257, 64),
        (37, 10, 1),      # one resample per block
        (37, 10, 10),     # exactly one block
        (37, 10, 1000),   # block larger than samples
        (500, 300, None), # automatic sizing
    ],
)
def test_chunked_draw_equals_one_shot(n, samples, chunk_rows):
    d = np.random.default_rng(n).normal(0.0, 0.1, n)
    one_shot = reference_means(d, samples, 11)
    chunked = bootstrap_means(d[None, :], samples, 11, chunk_rows=chunk_rows)
    assert chunked.shape == (1, samples)
    assert np.array_equal(chunked[0], one_shot)

    idx = np.random.default_rng(11).integers(0, n, size=(samples, n))
    blocks = list(index_blocks(n, samples, 11, chunk_rows))
    assert np.array_equal(np.vstack(blocks), idx)
    if chunk_rows is not None:
        assert all(b.shape[0] <= chunk_rows for b in blocks)


@pytest.mark.parametrize("chunk_rows", [1, 7, 64, 999, None])
def test_chunk_size_never_changes_the_interval(chunk_rows):
    base, cand = _runs(211)
    d = cand - base
    for method in CI_METHODS:
        ref = paired_bootstrap(d, samples=2000, seed=3, method=method, chunk_rows=10_000)
        got = paired_bootstrap(d, samples=2000, seed=3, method=method, chunk_rows=chunk_rows)
        assert got == ref


def test_chunk_sizing_bounds_the_index_block():
    assert chunk_rows_for(10_000) == MAX_BLOCK_INDICES // 10_000
    assert chunk_rows_for(10_000) * 10_000 <= MAX_BLOCK_INDICES
    assert chunk_rows_for(1) == MAX_BLOCK_INDICES
    assert chunk_rows_for(7) * 7 <= MAX_BLOCK_INDICES < (chunk_rows_for(7) + 1) * 7
    # More queries than the budget: one resample per block, never zero rows.
    assert chunk_rows_for(MAX_BLOCK_INDICES + 1) == 1
    # The blocks the bootstrap actually draws at 10,000 queries.
    largest = max(block.size for block in index_blocks(10_000, 10_000, 7))
    assert largest <= MAX_BLOCK_INDICES
    assert sum(block.shape[0] for block in index_blocks(10_000, 10_000, 7)) == 10_000


def test_ten_thousand_queries_run_in_bounded_memory():
    d = np.random.default_rng(5).normal(0.002, 0.1, 10_000)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = paired_bootstrap(d)  # default 10,000 resamples: 10**8 indices in all
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # One-shot would hold 800 MB of int64 indices plus 800 MB of gathered values;
    # chunked holds one 4M-index block (32 MB) and its gathered values (32 MB).
    assert peak < 160 * 2**20
    assert result.ci_low < result.mean < result.ci_high
    assert np.isfinite([result.mean, result.ci_low, result.ci_high, result.p_le_zero]).all()


# --------------------------------------------------------------------------- #
# Several contrasts, one set of resample indices
# --------------------------------------------------------------------------- #


def test_bootstrap_means_uses_identical_indices_for_every_contrast():
    rng = np.random.default_rng(9)
    n, samples = 60, 700
    a, b, c = rng.random(n), rng.random(n), rng.random(n)
    contrasts = np.vstack([b - a, c - a, (c - b) - (b - a)])
    got = bootstrap_means(contrasts, samples, 21, chunk_rows=13)
    idx = np.random.default_rng(21).integers(0, n, size=(samples, n))
    assert got.shape == (3, samples)
    for k in range(3):
        assert np.array_equal(got[k], contrasts[k][idx].mean(axis=1))
    # Each row is what the single-contrast API resamples.
    for k in range(3):
        assert np.array_equal(got[k], bootstrap_means(contrasts[k][None, :], samples, 21)[0])
    # Shared indices keep linear relations between contrasts (up to rounding).
    assert np.allclose(got[1] - got[0], bootstrap_means((c - b)[None, :], samples, 21)[0], atol=1e-12)


def test_bootstrap_means_rejects_bad_shapes():
    with pytest.raises(ValueError, match="2-D"):
        bootstrap_means(np.zeros(5), 10, 7)
    with pytest.raises(ValueError, match="n = 0"):
        bootstrap_means(np.zeros((2, 0)), 10, 7)
    with pytest.raises(ValueError, match="no rows"):
        bootstrap_means(np.zeros((0, 4)), 10, 7)
    with pytest.raises(ValueError, match="non-finite"):
        bootstrap_means(np.array([[0.0, np.nan]]), 10, 7)
    with pytest.raises(ValueError, match="chunk_rows"):
        bootstrap_means(np.zeros((1, 4)), 10, 7, chunk_rows=0)


# --------------------------------------------------------------------------- #
# basic and BCa
# --------------------------------------------------------------------------- #


def test_basic_interval_reflects_the_percentiles():
    base, cand = _runs(90)
    d = cand - base
    means = reference_means(d, 4000, 7)
    q_lo, q_hi = np.percentile(means, [2.5, 97.5])
    result = paired_bootstrap(d, samples=4000, seed=7, method="basic")
    assert result.ci_low == 2 * d.mean() - q_hi
    assert result.ci_high == 2 * d.mean() - q_lo
    assert result.method == "basic"


@pytest.mark.parametrize("n, seed", [(12, 7), (50, 7), (140, 3), (300, 99)])
def test_bca_matches_written_out_reference_exactly(n, seed):
    # Skewed differences so z0 and the acceleration are both non-trivial.
    d = np.random.default_rng(n).exponential(0.05, n) - 0.03
    result = paired_bootstrap(d, samples=5000, seed=seed, method="bca")
    lo, hi = reference_bca(d, samples=5000, seed=seed)
    assert (result.ci_low, result.ci_high) == (lo, hi)
    assert result.p_le_zero == (reference_means(d, 5000, seed) <= 0).mean()


def test_bca_bias_correction_counts_strictly_below():
    # Coarse differences: many resampled means tie with the observed mean, so
    # counting '<' rather than '<=' changes z0 and the interval.
    d = np.array([0.0, 0.0, 1.0, -1.0, 0.0, 1.0, 0.0, 1.0])
    means = reference_means(d, 4000, 7)
    assert np.count_nonzero(means == d.mean()) > 100
    result = paired_bootstrap(d, samples=4000, seed=7, method="bca")
    assert (result.ci_low, result.ci_high) == reference_bca(d, samples=4000, seed=7)


def test_jackknife_acceleration_matches_explicit_leave_one_out():
    d = np.random.default_rng(4).exponential(1.0, 40)
    loo = np.array([np.delete(d, i).mean() for i in range(d.size)])
    dev = loo.mean() - loo
    expected = np.sum(dev**3) / (6 * np.sum(dev**2) ** 1.5)
    assert jackknife_acceleration(d) == pytest.approx(expected, rel=1e-9)
    assert jackknife_acceleration(d) != 0.0
    # Symmetric data: no skew, no acceleration.
    assert jackknife_acceleration(np.array([-2.0, -1.0, 1.0, 2.0])) == pytest.approx(0.0, abs=1e-15)
    assert jackknife_acceleration(np.array([3.0])) == 0.0
    assert jackknife_acceleration(np.full(5, 0.25)) == 0.0


@pytest.mark.parametrize("method, scipy_method", [("percentile", "percentile"), ("basic", "basic"), ("bca", "BCa")])
def test_intervals_agree_with_scipy(method, scipy_method):
    scipy_stats = pytest.importorskip("scipy.stats")
    d = np.random.default_rng(2024).exponential(0.05, 120) - 0.04
    ours = paired_bootstrap(d, samples=20_000, seed=7, method=method)
    kwargs = dict(n_resamples=20_000, method=scipy_method, confidence_level=0.95)
    try:
        res = scipy_stats.bootstrap((d,), np.mean, rng=np.random.default_rng(1), **kwargs)
    except TypeError:  # scipy < 1.15 spells it random_state
        res = scipy_stats.bootstrap((d,), np.mean, random_state=np.random.default_rng(1), **kwargs)
    theirs = res.confidence_interval
    width = ours.ci_high - ours.ci_low
    # Different resamples (and scipy's z0 counts ties as half), so only close.
    assert ours.ci_low == pytest.approx(theirs.low, abs=0.05 * width)
    assert ours.ci_high == pytest.approx(theirs.high, abs=0.05 * width)


def test_bca_shifts_the_interval_for_skewed_data():
    d = np.random.default_rng(8).exponential(0.05, 40)
    pct = paired_bootstrap(d, samples=10_000, method="percentile")
    bca = paired_bootstrap(d, samples=10_000, method="bca")
    # Right-skewed mean: BCa moves both ends to the right of the percentile ends.
    assert bca.ci_low > pct.ci_low
    assert bca.ci_high > pct.ci_high


def test_bca_degenerate_and_clamped_cases():
    # All resampled means equal: the interval is that value, never NaN.
    assert confidence_interval(np.full(6, 0.125), np.full(100, 0.125), "bca") == (0.125, 0.125)
    # No resample below the observed mean (share 0) keeps z0 finite.
    lo, hi = confidence_interval(np.array([0.0, 1.0]), np.array([0.5, 0.5, 1.0, 1.0]), "bca")
    assert np.isfinite([lo, hi]).all() and 0.5 <= lo <= hi <= 1.0


# --------------------------------------------------------------------------- #
# Identical runs, bad input
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("method", CI_METHODS)
@pytest.mark.parametrize("n", [1, 3, 140])
def test_identical_runs_give_zero_interval(method, n):
    result = paired_bootstrap(np.zeros(n), samples=1000, method=method)
    assert (result.mean, result.ci_low, result.ci_high, result.p_le_zero) == (0.0, 0.0, 0.0, 1.0)


@pytest.mark.parametrize("method", CI_METHODS)
def test_constant_difference_gives_point_interval(method):
    result = paired_bootstrap(np.full(25, 0.03), samples=500, method=method)
    assert result.ci_low == result.ci_high == result.mean
    assert result.p_le_zero == 0.0


def test_empty_and_invalid_input():
    with pytest.raises(ValueError, match="empty"):
        paired_bootstrap([])
    with pytest.raises(ValueError, match="1-D"):
        paired_bootstrap(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="non-finite"):
        paired_bootstrap([0.1, np.nan])
    with pytest.raises(ValueError, match="unknown CI method"):
        paired_bootstrap([0.1, 0.2], method="studentized")
    with pytest.raises(ValueError, match="samples"):
        paired_bootstrap([0.1, 0.2], samples=0)
    with pytest.raises(ValueError, match="seed"):
        paired_bootstrap([0.1, 0.2], seed=-1)
    with pytest.raises(ValueError, match="seed"):
        paired_bootstrap([0.1, 0.2], seed=1.5)
