"""Every rule of the verdict, as a table: findings in, kind and reason codes out, for each
policy mode (ROWS: non-inferiority; REGRESSION_ROWS: regression, the default).

gate.verdict.rules is the one home of the policy: checks and statistics report findings
(gate.verdict.rules.Findings, gate.statistics.evidence.Evidence), and decide() applies the limits.
Each row below is one situation; together they cover every reason code.
"""

from __future__ import annotations

import dataclasses

import pytest

from gate.checks.validity import ReportingSet
from gate.statistics.evidence import Evidence
from gate.verdict.levels import ALPHA
from gate.verdict.rules import (
    ACCEPT_LABEL,
    MIN_MOVERS,
    STATISTICAL,
    Findings,
    GuardedRegression,
    Policy,
    accept,
    decide,
    goalposts_changed,
    inconclusive,
    skipped,
)

N = 43


def ev(mean=0.0, movers=30, losses=10, low=-0.01, high=0.01, p_ni=0.001, p_reg=0.5, p_imp=0.5, bound=0.5):
    """Evidence of a sample of N queries (fields as gate.statistics.evidence.evidence computes them)."""
    return Evidence(n=N, mean=mean, movers=movers, losses=losses, hall_low=low, hall_high=high, t_low=low, t_high=high,
                    p_noninferior=p_ni,
                    p_regression=p_reg, p_improvement=p_imp, loss_share_upper=bound, margin=0.02, samples=1000,
                    seed=7, randomization="monte-carlo", alpha=ALPHA)


def findings(**kw) -> Findings:
    base = dict(metric="nDCG@10", query_count=N, delta=0.0, ci_low=-0.01, ci_high=0.01, mde=0.05,
                evidence=ev())
    base.update(kw)
    return Findings(**base)


POLICY = Policy(mode="non-inferiority")
REGRESSION = Policy()  # the default mode
BAND = 0.005

ROWS = [
    # id, findings, policy, kind, codes
    ("non-inferior", findings(), POLICY, "pass", ["non_inferior"]),
    ("regression shown", findings(delta=-0.05, ci_low=-0.08, ci_high=-0.02,
                                  evidence=ev(-0.05, low=-0.08, high=-0.02, p_ni=0.9, p_reg=0.001)),
     POLICY, "fail", ["regression_shown"]),
    ("a regression inside the noise band is not shown", findings(delta=-0.004, ci_low=-0.008, ci_high=-0.001,
                                                                 noise_threshold=BAND,
                                                                 evidence=ev(-0.004, low=-0.008, high=-0.001,
                                                                             p_reg=0.001)),
     POLICY, "pass", ["non_inferior"]),
    ("the interval says regression, the sign-flip test does not", findings(
        delta=-0.05, ci_low=-0.08, ci_high=-0.02, evidence=ev(-0.05, low=-0.08, high=-0.02, p_ni=0.9, p_reg=0.2)),
     POLICY, "inconclusive", ["underpowered"]),
    ("improvement shown (a band is current)", findings(delta=0.05, ci_low=0.02, ci_high=0.08, noise_threshold=BAND,
                                                       evidence=ev(0.05, low=0.02, high=0.08, p_imp=0.001)),
     POLICY, "pass", ["improvement_shown"]),
    ("improvement without a band is only non-inferior", findings(
        delta=0.05, ci_low=0.02, ci_high=0.08, evidence=ev(0.05, low=0.02, high=0.08, p_imp=0.001)),
     POLICY, "pass", ["non_inferior"]),
    ("improvement required, not shown", findings(), dataclasses.replace(POLICY, require_improvement=True),
     "fail", ["improvement_required"]),
    ("underpowered", findings(delta=-0.01, ci_low=-0.05, ci_high=0.03,
                              evidence=ev(-0.01, low=-0.05, high=0.03, p_ni=0.3)),
     POLICY, "inconclusive", ["underpowered"]),
    ("identical rankings: unchanged, a pass (0 movers would be inconclusive)",
     findings(delta=0.0, ci_low=0.0, ci_high=0.0, evidence=ev(movers=0, losses=0, low=0.0, high=0.0),
              identical_rankings=True), POLICY, "pass", ["unchanged"]),
    ("identical rankings when an improvement is required",
     findings(delta=0.0, ci_low=0.0, ci_high=0.0, evidence=ev(movers=0, losses=0, low=0.0, high=0.0),
              identical_rankings=True), dataclasses.replace(POLICY, require_improvement=True), "fail",
     ["improvement_required"]),
    ("identical rankings do not hide a new leak",
     findings(identical_rankings=True, new_leaks=2, leak_sources=("faq/q#1",)), POLICY, "fail",
     ["new_leaked_queries", "unchanged"]),
    ("a held-out set under MIN_QUERIES, even with identical rankings", findings(
        query_count=3, identical_rankings=True, evidence=ev(movers=3, losses=3, p_ni=0.001),
        reporting_set=ReportingSet("held-out golden queries", ("q1", "q2", "q3"), (), True)),
     dataclasses.replace(POLICY, decision="interval"), "inconclusive", ["held_out_too_small"]),
    ("too few movers", findings(evidence=ev(movers=MIN_MOVERS - 1, losses=1, low=0.0, high=0.0, p_ni=0.001)),
     POLICY, "inconclusive", ["too_few_movers"]),
    ("no mover at n = 500: the worst-case bound passes", findings(
        query_count=500, ci_low=0.0, ci_high=0.0, evidence=ev(movers=0, losses=0, low=0.0, high=0.0, bound=0.0074)),
     POLICY, "pass", ["non_inferior"]),
    ("the seed's interval rule on request", findings(evidence=ev(movers=0, losses=0, low=0.0, high=0.0)),
     dataclasses.replace(POLICY, decision="interval"), "pass", ["non_inferior"]),
    ("inconclusive does not block when told so", findings(evidence=ev(movers=2, losses=1)),
     dataclasses.replace(POLICY, inconclusive_blocks=False), "inconclusive", ["too_few_movers"]),
    ("new leaked queries", findings(new_leaks=3, leak_sources=("faq/q#1",)), POLICY, "fail",
     ["new_leaked_queries", "non_inferior"]),
    ("leaks within max_leaked", findings(new_leaks=1), dataclasses.replace(POLICY, max_leaked=1), "pass",
     ["non_inferior"]),
    ("unjudged share above the limit", findings(unjudged_share=0.4), POLICY, "fail", ["judged_share", "non_inferior"]),
    ("judged share dropped", findings(unjudged_share=0.2, judged_drop=0.15), POLICY, "fail",
     ["judged_share", "non_inferior"]),
    ("tuning overlap", findings(tuning_overlap=("q1", "q2")), POLICY, "fail", ["tuning_overlap", "non_inferior"]),
    ("damaged traffic", findings(damaged_traffic=0.4, damaged_strata=("navigational",)), POLICY, "fail",
     ["damaged_traffic", "non_inferior"]),
    ("damaged traffic within the limit", findings(damaged_traffic=0.2, damaged_strata=("nav",)), POLICY, "pass",
     ["non_inferior"]),
    ("guarded stratum regressed after Holm", findings(guarded_regressions=(
        GuardedRegression("error_string", -0.1, -0.2, -0.03, 0.01),)), POLICY, "fail",
     ["guarded_stratum", "non_inferior"]),
    ("guarded stratum not shown after Holm", findings(guarded_regressions=(
        GuardedRegression("error_string", -0.1, -0.2, -0.01, 0.2),)), POLICY, "pass", ["non_inferior"]),
    ("warnings ride along", findings(warnings=("3 prompt lines quote the golden set",)), POLICY, "pass",
     ["non_inferior", "warning"]),
]


REGRESSION_ROWS = [
    # regression mode: fail on a regression shown beyond the band, pass otherwise (the power line
    # beside the verdict says what the set catches); nothing statistical is inconclusive
    ("regression mode: no regression shown is a pass", findings(), REGRESSION, "pass", ["no_regression_shown"]),
    ("regression mode: regression shown", findings(delta=-0.05, ci_low=-0.08, ci_high=-0.02,
                                                   evidence=ev(-0.05, low=-0.08, high=-0.02, p_ni=0.9, p_reg=0.001)),
     REGRESSION, "fail", ["regression_shown"]),
    ("regression mode: a wide interval is a pass, not inconclusive", findings(
        delta=-0.01, ci_low=-0.05, ci_high=0.03, evidence=ev(-0.01, low=-0.05, high=0.03, p_ni=0.3)),
     REGRESSION, "pass", ["no_regression_shown"]),
    ("regression mode: too few movers is a pass", findings(
        evidence=ev(movers=MIN_MOVERS - 1, losses=1, low=0.0, high=0.0, p_ni=0.001)),
     REGRESSION, "pass", ["no_regression_shown"]),
    ("regression mode: four losing movers cannot show a regression", findings(
        delta=-0.02, ci_low=-0.04, ci_high=-0.005,
        evidence=ev(-0.02, movers=MIN_MOVERS - 1, losses=4, low=-0.04, high=-0.005, p_reg=0.001)),
     REGRESSION, "pass", ["no_regression_shown"]),
    ("regression mode: a regression inside the noise band passes", findings(
        delta=-0.004, ci_low=-0.008, ci_high=-0.001, noise_threshold=BAND,
        evidence=ev(-0.004, low=-0.008, high=-0.001, p_reg=0.001)), REGRESSION, "pass", ["no_regression_shown"]),
    ("regression mode: the interval says regression, the sign-flip test does not", findings(
        delta=-0.05, ci_low=-0.08, ci_high=-0.02, evidence=ev(-0.05, low=-0.08, high=-0.02, p_ni=0.9, p_reg=0.2)),
     REGRESSION, "pass", ["no_regression_shown"]),
    ("regression mode: improvement shown", findings(delta=0.05, ci_low=0.02, ci_high=0.08, noise_threshold=BAND,
                                                    evidence=ev(0.05, low=0.02, high=0.08, p_imp=0.001)),
     REGRESSION, "pass", ["improvement_shown"]),
    ("regression mode: improvement required, not shown", findings(),
     dataclasses.replace(REGRESSION, require_improvement=True), "fail", ["improvement_required"]),
    ("regression mode: a held-out set under MIN_QUERIES is still inconclusive", findings(
        query_count=3, evidence=ev(movers=3, losses=3),
        reporting_set=ReportingSet("held-out golden queries", ("q1", "q2", "q3"), (), True)),
     REGRESSION, "inconclusive", ["held_out_too_small"]),
    ("regression mode: identical rankings", findings(
        delta=0.0, ci_low=0.0, ci_high=0.0, evidence=ev(movers=0, losses=0, low=0.0, high=0.0),
        identical_rankings=True), REGRESSION, "pass", ["unchanged"]),
    ("regression mode: a validity failure still fails", findings(new_leaks=3, leak_sources=("faq/q#1",)),
     REGRESSION, "fail", ["new_leaked_queries", "no_regression_shown"]),
    ("regression mode: the seed's interval rule", findings(delta=-0.05, ci_low=-0.08, ci_high=-0.01),
     dataclasses.replace(REGRESSION, decision="interval"), "fail", ["regression_shown"]),
    ("regression mode: the seed's interval rule, crossing zero", findings(delta=-0.03, ci_low=-0.08, ci_high=0.01),
     dataclasses.replace(REGRESSION, decision="interval"), "pass", ["no_regression_shown"]),
]


@pytest.mark.parametrize("name, case, policy, kind, codes", ROWS + REGRESSION_ROWS,
                         ids=[r[0] for r in ROWS + REGRESSION_ROWS])
def test_decide(name, case, policy, kind, codes):
    verdict = decide(case, policy)
    assert verdict.kind == kind
    assert [r.code for r in verdict.reasons] == codes
    assert verdict.exit_code == {"pass": 0, "fail": 1, "inconclusive": 0 if not policy.inconclusive_blocks else 3}[kind]


def test_goalposts_accept_and_skip():
    passed = decide(findings(), POLICY)
    moved = goalposts_changed(passed, [{"path": "eval/qrels.txt", "change": "modified"}], POLICY)
    assert (moved.kind, moved.reasons[0].code, moved.exit_code) == ("fail", "goalposts_changed", 1)
    assert goalposts_changed(passed, [], POLICY) is passed
    failed = decide(findings(new_leaks=2), POLICY)
    kept, note = accept(failed, [ACCEPT_LABEL], "no justification here", POLICY)
    assert note is None and kept.kind == "fail" and kept.reasons[-1].code == "accept_without_justification"
    done, record = accept(failed, [ACCEPT_LABEL], "Retrieval-Gate-Justification: the FAQ is public", POLICY)
    assert done.kind == "accepted" and done.exit_code == 0 and done.reasons[0].code == "accepted"
    assert record["justification"] == "the FAQ is public"
    assert accept(passed, [ACCEPT_LABEL], "Retrieval-Gate-Justification: x", POLICY) == (passed, None)
    # A blocking inconclusive (here: no query moved) can be accepted the same way, and only so.
    unmoved = inconclusive("too_few_movers", "only 0 of 43 queries moved", POLICY)
    assert accept(unmoved, [], "Retrieval-Gate-Justification: a refactor", POLICY) == (unmoved, None)
    taken, record = accept(unmoved, [ACCEPT_LABEL], "Retrieval-Gate-Justification: a refactor", POLICY)
    assert (taken.kind, taken.exit_code, record["failed_on"][0]["code"]) == ("accepted", 0, "too_few_movers")
    skip = skipped(4, POLICY)
    assert (skip.kind, skip.reasons[0].code, skip.exit_code) == ("skipped", "not_relevant", 0)
    # A PR whose base commit is not in the checkout is never judged by its own files.
    absent = inconclusive("base_unavailable", "the base commit is not in the checkout", POLICY)
    assert (absent.kind, absent.exit_code) == ("inconclusive", 3)


def test_every_reason_code_is_in_the_table():
    seen = {code for *_, codes in ROWS + REGRESSION_ROWS for code in codes}
    seen |= {"goalposts_changed", "accepted", "accept_without_justification", "not_relevant"}
    every = STATISTICAL | {"new_leaked_queries", "judged_share", "tuning_overlap", "damaged_traffic",
                           "guarded_stratum", "warning", "goalposts_changed", "accepted",
                           "accept_without_justification", "not_relevant"}
    assert every <= seen, every - seen


def test_the_default_mode_is_regression_and_the_modes_are_the_documented_two():
    from gate.verdict.rules import MODES

    assert Policy().mode == "regression"
    assert MODES == ("regression", "non-inferiority")


@pytest.mark.parametrize("name, case, policy, kind, codes", REGRESSION_ROWS, ids=[r[0] for r in REGRESSION_ROWS])
def test_regression_mode_never_blocks_on_statistics_alone(name, case, policy, kind, codes):
    """In regression mode the only statistical block is a regression shown (or a required
    improvement, or a reporting set too small to say anything)."""
    verdict = decide(case, policy)
    if verdict.kind == "inconclusive":
        assert codes == ["held_out_too_small"]
