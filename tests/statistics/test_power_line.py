"""What the golden set can catch: the power line every verdict states, and the setup check that
archive and calibrate print (gate.statistics.power). The formulas are checked against a
simulation of the test they describe (a one-sided t-test on normal differences, scipy's), the
seed's figures and the rule of three, not against themselves."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gate.statistics.power import (
    any_shape_queries,
    detectable,
    detectable_regression,
    queries_needed,
    setup_check,
    t_quantile,
    unseen_share,
)
from gate.verdict.levels import ALPHA, MIN_MOVERS, MOVERS_TO_SHOW

#: The levels every caller gives (gate.verdict.levels): the statistics stage holds none of its own.
LINE = {"alpha": ALPHA, "level": ALPHA, "movers_to_show": MOVERS_TO_SHOW}
SETUP = {**LINE, "min_movers": MIN_MOVERS}


def test_unseen_share_is_the_rule_of_three_bound():
    # a sample of n misses a share p with probability (1 - p)^n; 2.5% at the share returned
    for n in (10, 43, 140, 500):
        p = unseen_share(n, level=ALPHA)
        assert (1 - p) ** n == pytest.approx(0.025, rel=1e-9)
    assert f"{unseen_share(43, level=ALPHA):.1%}" == "8.2%" and f"{unseen_share(140, level=ALPHA):.1%}" == "2.6%"
    # a -0.02 loss all on queries losing 1.0 sits on 2% of the queries: 183 queries see one 97.5% of the time
    assert any_shape_queries(0.02, level=ALPHA) == 183
    assert 0.98 ** 182 > 0.025 >= 0.98 ** 183
    assert any_shape_queries(0.0, level=ALPHA) is None


def test_t_quantiles_match_scipy():
    stats = pytest.importorskip("scipy.stats")
    assert t_quantile(0.975, 1) == pytest.approx(stats.t.ppf(0.975, 1), rel=1e-9)
    assert t_quantile(0.8, 2) == pytest.approx(stats.t.ppf(0.8, 2), rel=1e-9)
    assert t_quantile(0.975, 3) == pytest.approx(stats.t.ppf(0.975, 3), abs=5e-3)
    for df in (5, 9, 19, 42, 139, 499):
        for p in (0.8, 0.95, 0.975):
            assert t_quantile(p, df) == pytest.approx(stats.t.ppf(p, df), abs=2e-3)


@pytest.mark.parametrize("n, sd", [(20, 0.15), (43, 0.11), (140, 0.2)])
def test_the_stated_regression_is_caught_80_percent_of_the_time_by_the_test_it_describes(n, sd):
    """Normal differences of spread sd, true mean -stated: a one-sided t-test at 2.5% (scipy)
    rejects about 80% of the time (20,000 simulated PRs, so +-1 point)."""
    stats = pytest.importorskip("scipy.stats")
    stated = detectable_regression(sd, n, alpha=ALPHA)
    rng = np.random.default_rng(31)
    x = rng.normal(-stated, sd, size=(20_000, n))
    t = x.mean(axis=1) / (x.std(axis=1, ddof=1) / math.sqrt(n))
    rejected = np.mean(t < stats.t.ppf(0.025, n - 1))
    assert rejected == pytest.approx(0.80, abs=0.012)


def test_a_noise_band_raises_what_can_be_caught():
    # a regression must also exceed the band: band + t_0.8 se once the band is above t_a se
    se = 0.1 / math.sqrt(43)
    assert detectable_regression(0.1, 43, band=0.05, alpha=ALPHA) == pytest.approx(0.05 + t_quantile(0.8, 42) * se)
    assert detectable_regression(0.1, 43, band=0.001, alpha=ALPHA) == detectable_regression(0.1, 43, alpha=ALPHA)


def test_no_spread_is_not_estimable_and_never_zero():
    assert detectable_regression(0.0, 43, alpha=ALPHA) is None and detectable_regression(0.1, 1, alpha=ALPHA) is None
    line = detectable(np.zeros(43), 0.02, **LINE)
    assert line.regression_80 is None and "not estimable" in line.sentence and "no query moved" in line.sentence


def test_queries_needed_is_the_fewest_that_reach_the_target():
    for sd, target, band in ((0.1, 0.02, None), (0.2, 0.05, 0.01), (0.067, 0.02, 0.0065)):
        n = queries_needed(sd, target, band, alpha=ALPHA, movers_to_show=MOVERS_TO_SHOW)
        assert detectable_regression(sd, n, band, alpha=ALPHA) <= target < detectable_regression(sd, n - 1, band,
                                                                                                 alpha=ALPHA)
    # the target is within the noise band
    assert queries_needed(0.1, 0.01, band=0.02, alpha=ALPHA, movers_to_show=MOVERS_TO_SHOW) is None
    # never fewer than a regression is shown on, however small the spread
    assert queries_needed(0.001, 0.02, alpha=ALPHA, movers_to_show=MOVERS_TO_SHOW) == MOVERS_TO_SHOW


def test_the_power_line_reads_as_a_reviewer_needs_it():
    d = np.concatenate([np.linspace(-0.2, 0.2, 30), np.zeros(13)])
    line = detectable(d, 0.02, **LINE)
    assert line.sentence.startswith(f"43 queries: a -{line.regression_80:.3f} regression is caught 80% of the time")
    assert "one carried by fewer than 8.2% of the queries can be missed entirely" in line.sentence
    assert f"the margin -0.02 would need {line.queries_for_margin:,} queries at this spread" in line.sentence
    few = np.zeros(43)
    few[:3] = (0.1, -0.1, 0.2)
    # with k movers a one-sided sign-flip p is at least 2^-k: a regression is shown from 6 on
    assert "if it moves at least 6 queries (this PR moved 3; a regression on fewer is never shown)" in \
        detectable(few, 0.02, **LINE).sentence
    one = detectable(np.array([0.1, -0.2]), 0.02, **LINE)
    assert one.sentence.startswith("2 queries:")
    assert "one query has no spread" in detectable(np.array([0.3]), 0.02, **LINE).sentence
    # a margin of 0 is no target: never "the margin -0 is within the noise band"
    assert "margin" not in detectable(np.linspace(-0.2, 0.2, 43), 0.0, **LINE).sentence


def test_the_movers_a_regression_needs_are_the_sign_flip_tests_floor():
    """A reviewer's case: 5 of 43 queries completely broken is never shown by the rule (p >= 1/32)."""
    from gate.statistics.evidence import evidence
    from gate.verdict.rules import Policy, decide_delta

    assert MOVERS_TO_SHOW == 6 and 0.5 ** 5 > 0.025 >= 0.5 ** 6
    for broken, kind in ((5, "pass"), (6, "fail")):
        d = np.zeros(43)
        d[:broken] = -0.7
        e = evidence(d, 0.02, 2000, 7, alpha=ALPHA)
        assert decide_delta(d.mean(), e.t_low, e.t_high, None, "m", 43, Policy(), evidence=e).kind == kind


def test_intervals_stay_within_what_a_mean_difference_can_be():
    """One tie flip in 43 queries: resamples without spread made the bootstrap-t end -2e7."""
    from gate.statistics.evidence import evidence

    d = np.zeros(43)
    d[7] = -0.02
    e = evidence(d, 0.02, 2000, 7, alpha=ALPHA)
    assert -1.0 <= e.t_low <= e.t_high <= 1.0 and -1.0 <= e.hall_low <= e.hall_high <= 1.0
    two = evidence(np.array([0.3, -0.2]), 0.02, 2000, 7, alpha=ALPHA)
    assert -1.0 <= two.t_low and two.t_high <= 1.0


def test_the_setup_check_per_mode():
    # the seed's stack: sd 0.00405 of the mean over 140 queries, so per-query A/A sd 0.0678
    aa = 0.00405 * math.sqrt(140) * math.sqrt(2)
    ni = setup_check(140, 0.02, "non-inferiority", aa, **SETUP)
    # a no-op passes 95% of the time (less the 2.5% a valid regression test fails) from
    # (2 t_.975 sd / margin)^2 queries: scipy's t quantile, independently
    stats = pytest.importorskip("scipy.stats")
    need = next(k for k in range(5, 10_000) if 0.02 * math.sqrt(k) >= 2 * stats.t.ppf(0.975, k - 1) * aa)
    assert abs(ni.queries_needed - need) <= 1
    assert ni.supports is False and "do not support the margin -0.02 in non-inferiority mode" in ni.sentence
    assert setup_check(300, 0.02, "non-inferiority", aa, **SETUP).supports is True
    # sparse noise: five queries must move 99% of the time (a binomial tail, scipy's)
    sparse = setup_check(60, 0.02, "non-inferiority", 0.0124, mover_share=0.215, **SETUP)
    movers_need = next(k for k in range(5, 10_000) if stats.binom.cdf(4, k, 0.215) <= 0.01)
    assert sparse.queries_needed == max(movers_need, next(
        k for k in range(5, 10_000) if 0.02 * math.sqrt(k) >= 2 * stats.t.ppf(0.975, k - 1) * 0.0124))
    regression = setup_check(140, 0.02, "regression", aa, band=0.012, **SETUP)
    assert regression.supports is True and "caught 80% of the time at this stack's own noise" in regression.sentence
    assert setup_check(140, 0.01, "regression", aa, band=0.012, **SETUP).sentence.startswith(
        "140 queries: a -0.01 regression is within the noise band")
    # identical runs: a deterministic stack supports any margin (no-op PRs are unchanged)
    same = setup_check(43, 0.02, "non-inferiority", 0.0, None, 0.0, **SETUP)
    assert same.supports is True and "deterministic stack" in same.sentence and "noise band" not in same.sentence
    assert setup_check(43, 0.02, "regression", 0.0, **SETUP).supports is True
    zero = setup_check(43, 0.0, "non-inferiority", 0.05, **SETUP)
    assert zero.supports is False and "a margin of 0" in zero.sentence and "-0 " not in zero.sentence
    rare = setup_check(43, 0.02, "non-inferiority", 0.01, None, 1e-9, **SETUP)
    assert rare.supports is False and "more than 10,000,000 queries" in rare.sentence
    assert "within the noise band" not in rare.sentence
    unknown = setup_check(43, 0.02, "regression", **SETUP)
    assert unknown.supports is None and "archive --noise-repeats N" in unknown.sentence
    assert "(a -0.02 loss of any shape needs 183 queries)" in unknown.sentence
    assert "any shape" not in setup_check(200, 0.02, "regression", aa, **SETUP).sentence


#: Parameters that carry one of the policy's levels or limits into the statistics stage.
LEVEL_PARAMETERS = ("alpha", "level", "min_movers", "movers_to_show")
#: ... and the one function with a level of its own: the seed's minimum detectable effect, a
#: two-sided 0.05 formula the report states beside the interval, not a level the decision takes.
OWN_LEVEL = {("gate.statistics.power", "minimum_detectable_effect")}


def test_the_levels_have_one_source():
    """gate.statistics cannot import gate.verdict (a later stage), so it holds no copy of a level:
    no module of it names one of gate.verdict.levels' constants, and every parameter that carries
    one is given by the caller (no default to drift from the policy's)."""
    import importlib
    import inspect
    import pkgutil

    import gate.statistics
    from gate.verdict import levels

    policy = {name for name in vars(levels) if name.isupper()}
    assert {"ALPHA", "MIN_MOVERS", "MOVERS_TO_SHOW"} <= policy
    defaulted = []
    for info in pkgutil.iter_modules(gate.statistics.__path__):
        module = importlib.import_module(f"gate.statistics.{info.name}")
        assert not policy & set(vars(module)), f"{module.__name__} holds {sorted(policy & set(vars(module)))}"
        for name, thing in vars(module).items():
            if getattr(thing, "__module__", None) != module.__name__ or (module.__name__, name) in OWN_LEVEL:
                continue
            if inspect.isfunction(thing) or inspect.isclass(thing):
                defaulted += [f"{module.__name__}.{name}({p.name}=...)"
                              for p in inspect.signature(thing).parameters.values()
                              if p.name in LEVEL_PARAMETERS and p.default is not inspect.Parameter.empty]
    assert not defaulted
    # the figures the power line and the setup check say are the policy's, whatever a look's level
    assert 0.5 ** (levels.MOVERS_TO_SHOW - 1) > levels.ALPHA >= 0.5 ** levels.MOVERS_TO_SHOW
    halved = detectable(np.r_[0.1, -0.1, 0.2, np.zeros(40)], 0.02, alpha=levels.look_alpha(2), level=levels.ALPHA,
                        movers_to_show=levels.MOVERS_TO_SHOW)
    assert halved.alpha == ALPHA / 2 and "at least 6 queries" in halved.sentence and "8.2%" in halved.sentence
