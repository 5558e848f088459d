"""Two-sided paired sign-flip randomization p-value."""

from __future__ import annotations

import itertools
import tracemalloc

import numpy as np
import pytest

from gate.statistics.bootstrap import MAX_BLOCK_INDICES, chunk_rows_for
from gate.statistics.randomization import EXACT_MAX_N, sign_flip_p


def reference_exact(d):
    """Every sign vector, one at a time (identity included)."""
    d = np.asarray(d, dtype=np.float64)
    observed = abs(d.mean())
    count = 0
    total = 0
    for signs in itertools.product((1.0, -1.0), repeat=d.size):
        total += 1
        if abs((np.array(signs) * d).mean()) >= observed - 1e-12:
            count += 1
    return count / total


def reference_monte_carlo(d, samples=10_000, seed=7):
    """One draw of all random sign vectors; 1 keeps a sign, 0 flips it."""
    d = np.asarray(d, dtype=np.float64)
    rng = np.random.default_rng(seed)
    keep = rng.integers(0, 2, size=(samples, d.size))
    flipped = np.where(keep == 1, d, -d)
    count = np.count_nonzero(np.abs(flipped.mean(axis=1)) >= abs(d.mean()) - 1e-12)
    return (1 + count) / (samples + 1)


def test_hand_example_one_two_three():
    # d = [1, 2, 3], observed mean 2.  The 8 sign vectors and their sums:
    #   +++ 6   ++- 0   +-+ 2   +-- -4
    #   -++ 4   -+- -2  --+ 0   --- -6
    # |mean| = |sum| / 3 reaches 2 only for +++ (6/3) and --- (-6/3): p = 2/8.
    assert sign_flip_p([1.0, 2.0, 3.0]) == (0.25, "exact")


def test_small_hand_examples():
    # [1, 1]: sums 2, 0, 0, -2 -> two of four reach |mean| 1.
    assert sign_flip_p([1.0, 1.0]) == (0.5, "exact")
    # Observed mean 0: every sign vector is at least as extreme.
    assert sign_flip_p([1.0, -1.0]) == (1.0, "exact")
    # One query: both signs give the same |mean|.
    assert sign_flip_p([0.3]) == (1.0, "exact")
    # Five equal positive differences: only all-plus and all-minus reach it.
    assert sign_flip_p([0.1] * 5) == (2 / 32, "exact")


@pytest.mark.parametrize("n", [1, 2, 3, 6, 10, 12])
def test_exact_matches_reference_enumeration(n):
    d = np.round(np.random.default_rng(n).normal(0.02, 0.1, n), 3)
    p, kind = sign_flip_p(d)
    assert kind == "exact"
    assert p == reference_exact(d)


def test_exact_agrees_with_scipy_permutation_test():
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(31)
    base = rng.random(11)
    cand = base + rng.normal(0.03, 0.05, 11)
    res = scipy_stats.permutation_test(
        (cand, base), lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples", alternative="two-sided", n_resamples=np.inf,
    )
    p, kind = sign_flip_p(cand - base)
    assert kind == "exact"
    assert p == pytest.approx(res.pvalue, abs=1e-12)


def test_exact_up_to_sixteen_then_monte_carlo():
    assert EXACT_MAX_N == 16
    d16 = np.random.default_rng(1).normal(0.0, 1.0, 16)
    d17 = np.random.default_rng(1).normal(0.0, 1.0, 17)
    p16, kind16 = sign_flip_p(d16)
    p17, kind17 = sign_flip_p(d17)
    assert kind16 == "exact" and (p16 * 2**16) == int(p16 * 2**16)
    assert kind17 == "monte-carlo"
    assert p17 == reference_monte_carlo(d17)


@pytest.mark.parametrize("n, samples, seed, chunk_rows", [
    (17, 10_000, 7, None),
    (40, 3001, 3, 128),     # 3001 not a multiple of 128
    (140, 10_000, 7, 999),
    (25, 50, 11, 1),
])
def test_monte_carlo_matches_reference_exactly(n, samples, seed, chunk_rows):
    d = np.random.default_rng(n).normal(0.01, 0.1, n)
    p, kind = sign_flip_p(d, samples, seed, chunk_rows=chunk_rows)
    assert kind == "monte-carlo"
    assert p == reference_monte_carlo(d, samples, seed)


def test_monte_carlo_close_to_exact_at_sixteen():
    for seed in (2, 5, 8):
        d = np.random.default_rng(seed).normal(0.25, 1.0, 16)
        exact, kind = sign_flip_p(d)
        assert kind == "exact"
        forced, kind = sign_flip_p(d, 10_000, 7, exact_max_n=0)
        assert kind == "monte-carlo"
        # Standard error of a Monte Carlo p from 10,000 draws is <= 0.005.
        assert forced == pytest.approx(exact, abs=0.02)


def test_identical_runs_give_p_one():
    assert sign_flip_p(np.zeros(5)) == (1.0, "exact")
    assert sign_flip_p(np.zeros(200)) == (1.0, "monte-carlo")


def test_p_never_zero_and_seed_matters_only_for_monte_carlo():
    d = np.full(200, 0.5)
    p, kind = sign_flip_p(d, samples=999)
    assert kind == "monte-carlo" and p == 1 / 1000
    small = [0.1, -0.2, 0.4]
    assert sign_flip_p(small, seed=1) == sign_flip_p(small, seed=2)


def test_ten_thousand_queries_bounded_memory():
    assert chunk_rows_for(10_000) * 10_000 <= MAX_BLOCK_INDICES
    d = np.random.default_rng(6).normal(0.0, 0.1, 10_000)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        p, kind = sign_flip_p(d)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert kind == "monte-carlo" and 0.0 < p <= 1.0
    assert peak < 160 * 2**20  # one-shot draws would need > 800 MB


def test_empty_and_invalid_input():
    with pytest.raises(ValueError, match="empty"):
        sign_flip_p([])
    with pytest.raises(ValueError, match="non-finite"):
        sign_flip_p([0.1, np.inf])
    with pytest.raises(ValueError, match="samples"):
        sign_flip_p([0.1] * 20, samples=0)
