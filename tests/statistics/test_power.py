"""Minimum detectable effect (normal approximation)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gate.statistics.power import difference_sd, minimum_detectable_effect

# z_0.975 and z_0.8, to the digits statistics.NormalDist gives.
Z_975 = 1.959963984540054
Z_80 = 0.8416212335729143


def test_hand_example():
    d = np.array([0.1, -0.1, 0.2, 0.0])
    # mean 0.05; squared deviations 0.0025 + 0.0225 + 0.0225 + 0.0025 = 0.05;
    # sd = sqrt(0.05 / 3); MDE = (Z_975 + Z_80) * sd / sqrt(4).
    expected = (Z_975 + Z_80) * math.sqrt(0.05 / 3) / 2
    assert minimum_detectable_effect(d) == pytest.approx(expected, rel=1e-12)
    assert difference_sd(d) == pytest.approx(math.sqrt(0.05 / 3), rel=1e-12)


def test_quantiles_agree_with_scipy():
    norm = pytest.importorskip("scipy.stats").norm
    d = np.random.default_rng(3).normal(0.0, 0.07, 140)
    for alpha, power in [(0.05, 0.8), (0.01, 0.9), (0.1, 0.5)]:
        expected = (norm.ppf(1 - alpha / 2) + norm.ppf(power)) * np.std(d, ddof=1) / np.sqrt(d.size)
        assert minimum_detectable_effect(d, alpha, power) == pytest.approx(expected, rel=1e-12)


def test_shrinks_with_more_queries():
    rng = np.random.default_rng(0)
    small = minimum_detectable_effect(rng.normal(0, 0.1, 50))
    large = minimum_detectable_effect(rng.normal(0, 0.1, 5000))
    assert large < small


def test_edge_cases_never_nan():
    assert minimum_detectable_effect([0.2]) == math.inf
    assert difference_sd([0.2]) == 0.0
    # No spread seen (no query moved, or all by the same amount): not estimable, never 0.000.
    assert minimum_detectable_effect(np.zeros(10)) == math.inf
    assert minimum_detectable_effect(np.full(10, 0.3)) == math.inf
    assert "normal approximation" in minimum_detectable_effect.__doc__


def test_invalid_input():
    with pytest.raises(ValueError, match="empty"):
        minimum_detectable_effect([])
    with pytest.raises(ValueError, match="alpha"):
        minimum_detectable_effect([0.1, 0.2], alpha=0.0)
    with pytest.raises(ValueError, match="power"):
        minimum_detectable_effect([0.1, 0.2], power=1.0)
