"""Stratified bootstrap with fixed stratum weights."""

from __future__ import annotations

import numpy as np
import pytest

from gate.statistics.bootstrap import paired_bootstrap, stratified_bootstrap_weighted


def reference_stratified(d, labels, weights, samples, seed):
    """Strata in the order of the weights; each resampled within itself; one draw per stratum."""
    d = np.asarray(d, dtype=np.float64)
    labels = np.asarray(labels)
    measured = [s for s in weights if np.any(labels == s)]
    total = float(sum(weights[s] for s in measured))
    rng = np.random.default_rng(seed)
    estimate = 0.0
    resampled = np.zeros(samples)
    for s in measured:
        w = float(weights[s]) / total
        part = d[labels == s]
        estimate += w * float(part.mean())
        idx = rng.integers(0, part.size, size=(samples, part.size))
        resampled += w * part[idx].mean(axis=1)
    lo, hi = np.percentile(resampled, [2.5, 97.5])
    return estimate, lo, hi


def _strata(seed=0):
    rng = np.random.default_rng(seed)
    names = ["navigational", "error-string", "how-to", "entity", "migration", "tail"]
    labels = list(rng.choice(names, size=140))
    d = rng.normal(0.0, 0.1, 140)
    weights = {"navigational": 0.22, "error-string": 0.18, "how-to": 0.31,
               "entity": 0.15, "migration": 0.06, "tail": 0.08}
    return d, labels, weights


@pytest.mark.parametrize("chunk_rows", [None, 1, 37, 10_000])
def test_matches_reference_exactly(chunk_rows):
    d, labels, weights = _strata()
    got = stratified_bootstrap_weighted(d, labels, weights, samples=3000, seed=5, chunk_rows=chunk_rows)
    assert tuple(got) == reference_stratified(d, labels, weights, 3000, 5)


def test_hand_example_and_renormalisation():
    d = [1.0, 3.0, 10.0]
    labels = ["a", "a", "b"]
    # Stratum means 2 and 10; weights 0.75 / 0.25 -> 0.75*2 + 0.25*10 = 4.0.
    est, lo, hi = stratified_bootstrap_weighted(d, labels, {"a": 0.75, "b": 0.25}, samples=4000, seed=7)
    assert est == 4.0
    # Stratum a resamples to mean 1, 2 or 3 (probabilities 1/4, 1/2, 1/4); b is fixed.
    assert (lo, hi) == (3.25, 4.75)
    # An unmeasured stratum's weight is dropped and the rest renormalised (0.375/0.125 -> 0.75/0.25).
    again = stratified_bootstrap_weighted(d, labels, {"a": 0.375, "c": 0.5, "b": 0.125}, samples=4000, seed=7)
    assert tuple(again) == (est, lo, hi)


def test_one_stratum_is_the_paired_bootstrap():
    d = np.random.default_rng(1).normal(0.01, 0.1, 90)
    est, lo, hi = stratified_bootstrap_weighted(d, ["all"] * 90, {"all": 1.0}, samples=2000, seed=7)
    plain = paired_bootstrap(d, samples=2000, seed=7)
    assert (est, lo, hi) == (plain.mean, plain.ci_low, plain.ci_high)


def test_identical_runs():
    d, labels, weights = _strata()
    assert tuple(stratified_bootstrap_weighted(np.zeros(140), labels, weights, samples=500, seed=7)) == (0.0, 0.0, 0.0)


def test_invalid():
    with pytest.raises(ValueError, match="empty"):
        stratified_bootstrap_weighted([], [], {"a": 1.0})
    with pytest.raises(ValueError, match="entries"):
        stratified_bootstrap_weighted([0.1, 0.2], ["a"], {"a": 1.0})
    with pytest.raises(ValueError, match="no weight"):
        stratified_bootstrap_weighted([0.1, 0.2], ["a", "b"], {"a": 1.0})
    with pytest.raises(ValueError, match=">= 0"):
        stratified_bootstrap_weighted([0.1, 0.2], ["a", "b"], {"a": 1.0, "b": -0.5})
    with pytest.raises(ValueError, match="zero total weight"):
        stratified_bootstrap_weighted([0.1, 0.2], ["a", "a"], {"a": 0.0, "b": 1.0})
