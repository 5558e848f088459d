"""compare_paired: the full paired comparison and its small helpers."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from gate.statistics.bootstrap import paired_bootstrap
from gate.statistics.paired import PairedComparison, compare_paired, paired_differences, wins_losses_ties
from gate.statistics.power import minimum_detectable_effect
from gate.statistics.randomization import sign_flip_p


def _runs(n, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.random(n)
    cand = np.clip(base + rng.normal(0.01, 0.08, n), 0.0, 1.0)
    return base, cand


def _no_nan(result):
    for field in dataclasses.fields(result):
        value = getattr(result, field.name)
        if isinstance(value, float):
            assert not math.isnan(value), field.name


def test_wins_losses_ties():
    assert wins_losses_ties([0.1, -0.2, 0.0, 0.3, 0.0]) == (2, 1, 2)
    w = wins_losses_ties(np.zeros(4))
    assert (w.wins, w.losses, w.ties) == (0, 0, 4)


def test_compare_paired_assembles_the_parts():
    base, cand = _runs(140)
    result = compare_paired(base, cand)
    assert isinstance(result, PairedComparison)
    d = cand - base
    boot = paired_bootstrap(d)
    p, kind = sign_flip_p(d)
    assert (result.mean, result.ci_low, result.ci_high, result.p_le_zero) == (
        boot.mean, boot.ci_low, boot.ci_high, boot.p_le_zero)
    assert (result.samples, result.seed, result.method) == (10_000, 7, "percentile")
    assert (result.p_randomization, result.randomization) == (p, kind) and kind == "monte-carlo"
    assert (result.wins, result.losses, result.ties) == tuple(wins_losses_ties(d))
    assert result.wins + result.losses + result.ties == result.n == 140
    assert result.mde == minimum_detectable_effect(d)
    assert result.sd == float(np.std(d, ddof=1))
    _no_nan(result)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.mean = 0.0  # type: ignore[misc]


def test_method_samples_seed_recorded():
    base, cand = _runs(30)
    result = compare_paired(base, cand, samples=500, seed=11, method="bca")
    assert (result.samples, result.seed, result.method) == (500, 11, "bca")
    assert result.randomization == "monte-carlo"
    small = compare_paired(base[:10], cand[:10], samples=500, seed=11)
    assert small.randomization == "exact"


@pytest.mark.parametrize("method", ["percentile", "basic", "bca"])
@pytest.mark.parametrize("n", [1, 5, 16, 17, 140])
def test_identical_runs(method, n):
    scores = np.random.default_rng(n).random(n)
    result = compare_paired(scores, scores.copy(), method=method, samples=2000)
    assert (result.mean, result.ci_low, result.ci_high) == (0.0, 0.0, 0.0)
    assert result.p_le_zero == 1.0
    assert result.p_randomization == 1.0
    assert result.ties == n and result.wins == result.losses == 0
    assert result.sd == 0.0
    assert result.mde == math.inf  # not estimable: no query moved
    _no_nan(result)


def test_single_query_is_reported_without_nan():
    result = compare_paired([0.4], [0.6], samples=100)
    assert result.mean == pytest.approx(0.2)
    assert result.ci_low == result.ci_high == result.mean
    assert result.mde == math.inf and result.sd == 0.0
    assert (result.p_randomization, result.randomization) == (1.0, "exact")
    _no_nan(result)


def test_bad_input():
    with pytest.raises(ValueError, match="at least one query"):
        compare_paired([], [])
    with pytest.raises(ValueError, match="same queries"):
        compare_paired([0.1, 0.2], [0.1])
    with pytest.raises(ValueError, match="candidate"):
        compare_paired([0.1, 0.2], [0.1, np.nan])
    with pytest.raises(ValueError, match="unknown CI method"):
        compare_paired([0.1], [0.2], method="t")
    with pytest.raises(ValueError, match="1-D"):
        paired_differences(np.zeros((2, 2)), np.zeros((2, 2)))
