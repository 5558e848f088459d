"""What the golden set can catch: the power line every verdict states, and the setup check that
archive and calibrate print (gate.statistics.power). The formulas are checked against a
simulation of the test they describe (a one-sided t-test on normal differences, scipy's), the
seed's figures and the rule of three, not against themselves."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gate.statistics.power import (any_shape_queries, detectable, detectable_regression, queries_needed,
                                   setup_check, t_quantile, unseen_share)


def test_unseen_share_is_the_rule_of_three_bound():
    # a sample of n misses a share p with probability (1 - p)^n; 2.5% at the share returned
    for n in (10, 43, 140, 500):
        p = unseen_share(n)
        assert (1 - p) ** n == pytest.approx(0.025, rel=1e-9)
    assert f"{unseen_share(43):.1%}" == "8.2%" and f"{unseen_share(140):.1%}" == "2.6%"
    # a -0.02 loss all on queries losing 1.0 sits on 2% of the queries: 183 queries see one 97.5% of the time
    assert any_shape_queries(0.02) == 183
    assert 0.98 ** 182 > 0.025 >= 0.98 ** 183
    assert any_shape_queries(0.0) is None


def test_t_quantiles_match_scipy():
    stats = pytest.importorskip("scipy.stats")
    for df in (5, 9, 19, 42, 139, 499):
        for p in (0.8, 0.95, 0.975):
            assert t_quantile(p, df) == pytest.approx(stats.t.ppf(p, df), abs=2e-3)


@pytest.mark.parametrize("n, sd", [(20, 0.15), (43, 0.11), (140, 0.2)])
def test_the_stated_regression_is_caught_80_percent_of_the_time_by_the_test_it_describes(n, sd):
    """Normal differences of spread sd, true mean -stated: a one-sided t-test at 2.5% (scipy)
    rejects about 80% of the time (20,000 simulated PRs, so +-1 point)."""
    stats = pytest.importorskip("scipy.stats")
    stated = detectable_regression(sd, n)
    rng = np.random.default_rng(31)
    x = rng.normal(-stated, sd, size=(20_000, n))
    t = x.mean(axis=1) / (x.std(axis=1, ddof=1) / math.sqrt(n))
    rejected = np.mean(t < stats.t.ppf(0.025, n - 1))
    assert rejected == pytest.approx(0.80, abs=0.012)


def test_a_noise_band_raises_what_can_be_caught():
    # a regression must also exceed the band: band + t_0.8 se once the band is above t_a se
    se = 0.1 / math.sqrt(43)
    assert detectable_regression(0.1, 43, band=0.05) == pytest.approx(0.05 + t_quantile(0.8, 42) * se)
    assert detectable_regression(0.1, 43, band=0.001) == detectable_regression(0.1, 43)


def test_no_spread_is_not_estimable_and_never_zero():
    assert detectable_regression(0.0, 43) is None and detectable_regression(0.1, 1) is None
    line = detectable(np.zeros(43), 0.02)
    assert line.regression_80 is None and "not estimable" in line.sentence and "no query moved" in line.sentence


def test_queries_needed_is_the_fewest_that_reach_the_target():
    for sd, target, band in ((0.1, 0.02, None), (0.2, 0.05, 0.01), (0.067, 0.02, 0.0065)):
        n = queries_needed(sd, target, band)
        assert detectable_regression(sd, n, band) <= target < detectable_regression(sd, n - 1, band)
    assert queries_needed(0.1, 0.01, band=0.02) is None  # the target is within the noise band


def test_the_power_line_reads_as_a_reviewer_needs_it():
    d = np.concatenate([np.linspace(-0.2, 0.2, 30), np.zeros(13)])
    line = detectable(d, 0.02)
    assert line.sentence.startswith(f"43 queries: a -{line.regression_80:.3f} regression is caught 80% of the time")
    assert "one carried by fewer than 8.2% of the queries can be missed entirely" in line.sentence
    assert f"the margin -0.02 would need {line.queries_for_margin:,} queries at this spread" in line.sentence
    few = np.zeros(43)
    few[:3] = (0.1, -0.1, 0.2)
    assert "if it moves at least 5 queries (this PR moved 3)" in detectable(few, 0.02).sentence
    one = detectable(np.array([0.1, -0.2]), 0.02)
    assert one.sentence.startswith("2 queries:")


def test_the_setup_check_per_mode():
    # the seed's stack: sd 0.00405 of the mean over 140 queries, so per-query A/A sd 0.0678
    aa = 0.00405 * math.sqrt(140) * math.sqrt(2)
    ni = setup_check(140, 0.02, "non-inferiority", aa)
    # a no-op passes 95% of the time (less the 2.5% a valid regression test fails) from
    # (2 t_.975 sd / margin)^2 queries: scipy's t quantile, independently
    stats = pytest.importorskip("scipy.stats")
    need = next(k for k in range(5, 10_000) if 0.02 * math.sqrt(k) >= 2 * stats.t.ppf(0.975, k - 1) * aa)
    assert abs(ni.queries_needed - need) <= 1
    assert ni.supports is False and "do not support the margin -0.02 in non-inferiority mode" in ni.sentence
    assert setup_check(300, 0.02, "non-inferiority", aa).supports is True
    # sparse noise: five queries must move 99% of the time (a binomial tail, scipy's)
    sparse = setup_check(60, 0.02, "non-inferiority", 0.0124, mover_share=0.215)
    movers_need = next(k for k in range(5, 10_000) if stats.binom.cdf(4, k, 0.215) <= 0.01)
    assert sparse.queries_needed == max(movers_need, next(
        k for k in range(5, 10_000) if 0.02 * math.sqrt(k) >= 2 * stats.t.ppf(0.975, k - 1) * 0.0124))
    regression = setup_check(140, 0.02, "regression", aa, band=0.012)
    assert regression.supports is True and "caught 80% of the time at this stack's own noise" in regression.sentence
    assert setup_check(140, 0.01, "regression", aa, band=0.012).sentence.startswith(
        "140 queries: a -0.01 regression is within the noise band")
    unknown = setup_check(43, 0.02, "regression")
    assert unknown.supports is None and "archive --noise-repeats N" in unknown.sentence
    assert "(a -0.02 loss of any shape needs 183 queries)" in unknown.sentence
    assert "any shape" not in setup_check(200, 0.02, "regression", aa).sentence
