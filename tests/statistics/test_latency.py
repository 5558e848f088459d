"""Latency and cost statistics: percentiles per side, paired bootstrap of the change, seeded."""

from __future__ import annotations

import numpy as np
import pytest

from gate.statistics.latency import compare_cost, compare_latency


def test_percentiles_are_numpys_linear_method():
    base = np.arange(1.0, 21.0)  # 1..20 ms
    result = compare_latency(base, base + 5.0, samples=200, seed=7)
    assert result.baseline.p50 == pytest.approx(10.5)
    assert result.baseline.p95 == pytest.approx(19.05)  # (20 - 1) * 0.95 = 18.05 -> 19 + 0.05
    assert result.candidate.p95 == pytest.approx(24.05)
    assert result.p95.change == pytest.approx(5.0)
    # Every resample takes the same queries on both sides: a constant shift is the same in each.
    assert result.p95.ci_low == pytest.approx(5.0) and result.p95.ci_high == pytest.approx(5.0)
    assert result.p95.relative == pytest.approx(5.0 / 19.05)


def test_the_interval_is_paired_and_reproducible_from_the_seed():
    rng = np.random.default_rng(1)
    base = rng.lognormal(2.0, 0.5, size=200)
    cand = base * 1.3 + rng.normal(0, 0.5, size=200)
    first = compare_latency(base, cand, samples=500, seed=11)
    again = compare_latency(base, cand, samples=500, seed=11)
    other = compare_latency(base, cand, samples=500, seed=12)
    assert first == again
    assert first.p95 != other.p95
    assert first.p95.ci_low < first.p95.change < first.p95.ci_high
    assert first.p95.relative_ci_low is not None and 0.1 < first.p95.relative_ci_low < 0.3
    assert first.seed == 11 and first.samples == 500 and first.query_count == 200


def test_cost_totals_means_and_change():
    base = np.full(10, 0.001)
    cand = np.full(10, 0.002)
    cost = compare_cost(base, cand, samples=100, seed=7)
    assert cost.baseline_total == pytest.approx(0.01) and cost.candidate_total == pytest.approx(0.02)
    assert cost.mean.change == pytest.approx(0.001)
    assert cost.mean.relative == pytest.approx(1.0)


def test_a_zero_baseline_has_no_relative_change():
    cost = compare_cost(np.zeros(5), np.ones(5), samples=50, seed=7)
    assert cost.mean.relative is None and cost.mean.relative_ci_low is None


@pytest.mark.parametrize("base, cand", [([], []), ([1.0], [1.0, 2.0]), ([np.nan], [1.0])])
def test_misaligned_or_non_finite_sides_are_a_bug_not_a_number(base, cand):
    with pytest.raises(ValueError):
        compare_latency(np.asarray(base), np.asarray(cand), samples=10, seed=7)


def test_timings_that_miss_a_compared_query_give_no_comparison_and_say_why(tmp_path):
    from gate.inputs.readers.timings import read_timings
    from gate.statistics.latency import compare_resources

    (tmp_path / "b.jsonl").write_text('{"query_id": "q1", "latency_ms": 1}\n')
    (tmp_path / "c.jsonl").write_text('{"query_id": "q1", "latency_ms": 2}\n{"query_id": "q2", "latency_ms": 2}\n')
    base, cand = read_timings(tmp_path / "b.jsonl"), read_timings(tmp_path / "c.jsonl")
    found = compare_resources(base, cand, ["q1", "q2"], samples=50, seed=7)
    assert found.latency is None and found.note == "the baseline's timings miss 1 of the 2 queries compared"
    both = compare_resources(cand, cand, ["q1", "q2"], samples=50, seed=7)
    assert both.latency is not None and both.note is None
