"""Holm step-down adjustment."""

from __future__ import annotations

import numpy as np
import pytest

from gate.statistics.holm import holm


def reference_holm(pvals):
    """The usual library recipe: sort, scale by m..1, running max, cap, unsort."""
    pvals = np.asarray(pvals, dtype=np.float64)
    order = np.argsort(pvals)
    ntests = pvals.size
    raw = pvals[order] * np.arange(ntests, 0, -1)
    corrected = np.maximum.accumulate(raw)
    corrected[corrected > 1] = 1
    out = np.empty_like(corrected)
    out[order] = corrected
    return out


def test_hand_example():
    p = [0.01, 0.04, 0.03, 0.005]
    # Sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> running max 0.06.
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_capped_at_one_and_monotone():
    assert list(holm([0.5, 0.6])) == [1.0, 1.0]  # 0.5*2 = 1.0; 0.6 lifted to the running max
    assert holm([0.9, 0.2, 0.7]) == pytest.approx([1.0, 0.6, 1.0])  # 0.2*3, then 0.7*2 and 0.9 capped
    p = np.random.default_rng(0).random(30) ** 3
    adj = holm(p)
    order = np.argsort(p)
    assert np.all(np.diff(adj[order]) >= 0)
    assert np.all(adj >= p) and np.all(adj <= 1.0)


def test_single_and_empty():
    assert list(holm([0.03])) == [0.03]
    assert holm([]).shape == (0,)


def test_ties_get_equal_adjusted_values():
    adj = holm([0.01, 0.02, 0.01, 0.2])
    assert adj[0] == adj[2] == pytest.approx(0.04)
    assert adj[1] == pytest.approx(0.04)  # 0.02*2 = 0.04, not below the running max
    assert adj[3] == pytest.approx(0.2)


@pytest.mark.parametrize("seed", range(5))
def test_matches_reference_recipe(seed):
    rng = np.random.default_rng(seed)
    p = rng.random(rng.integers(1, 40)) ** 2
    assert np.array_equal(holm(p), reference_holm(p))


def test_invalid():
    with pytest.raises(ValueError):
        holm([0.1, 1.5])
    with pytest.raises(ValueError):
        holm([np.nan])
    with pytest.raises(ValueError):
        holm([[0.1, 0.2]])
