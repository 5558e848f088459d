"""A reason carries its finding and its limit as values: the message is made from them in one
place, and what renders the headline takes the finding, not a pattern run over the message."""

from __future__ import annotations

import ast
from pathlib import Path

from gate.inputs.config import Policy
from gate.report.spine import Reason as ReportReason
from gate.report.spine import Report
from gate.report.typed import ABSENT
from gate.verdict.reasons import Reason, finding_of, reason_message
from gate.verdict.rules import Findings, failures_of
from tests.rendering.test_comment_render import full_report

REPO = Path(__file__).resolve().parents[2]


def test_the_message_is_the_finding_then_the_limit():
    reason = Reason("damaged_traffic", "40% of traffic damaged (navigational)", limit="20%")
    assert reason.message == "40% of traffic damaged (navigational); limit 20%"
    assert reason.to_dict() == {"code": "damaged_traffic", "message": reason.message, "limit": "20%"}
    plain = Reason("tuning_overlap", "2 queries are both tuning and reporting queries (e.g. q1, q2)")
    assert plain.message == plain.finding and "limit" not in plain.to_dict()


def test_the_finding_comes_back_off_a_message_only_by_its_own_limit():
    finding = "9 golden queries newly appear (faq)"
    assert finding_of(reason_message(finding, "0"), "0") == finding
    # An older report's message (no limit key) and a message that does not end in its limit are
    # their own finding: nothing is cut by a pattern.
    assert finding_of("a; limit 3 (policy.strict_validity)", None) == "a; limit 3 (policy.strict_validity)"
    assert finding_of("40% damaged; limit 20%", "30%") == "40% damaged; limit 20%"


def _findings(**changes):
    base = dict(delta=-0.01, ci_low=-0.05, ci_high=0.03, mde=0.05, metric="nDCG@10", query_count=140,
                noise_threshold=0.01)
    return Findings(**{**base, **changes})


def test_the_rules_that_name_a_limit_give_it_as_a_value():
    policy = Policy()
    reasons = failures_of(_findings(new_leaks=2, leak_sources=("faq/x",), leak_source_count=1,
                                    damaged_traffic=0.4, damaged_strata=("navigational",)), policy)
    by_code = {r.code: r for r in reasons}
    assert by_code["new_leaked_queries"].limit == str(policy.max_leaked)
    assert by_code["new_leaked_queries"].finding == "2 golden queries newly appear in the candidate's corpus (faq/x)"
    assert by_code["damaged_traffic"].limit == "20%"
    assert by_code["damaged_traffic"].message == "40% of traffic damaged (navigational); limit 20%"


def test_the_headline_quotes_the_finding_and_a_message_without_a_limit_whole():
    from gate.rendering.comment import headline
    report = full_report()
    report["verdict"]["reasons"] = [Reason("damaged_traffic", "40% of traffic damaged (nav)", "20%").to_dict()]
    record = Report.from_dict(report)
    assert isinstance(record.verdict.reasons[0], ReportReason) and record.verdict.reasons[0].limit == "20%"
    assert headline(record, markdown=False).startswith("❌ fail — 40% of traffic damaged (nav) — ")
    # A message that merely reads like one with a limit (a check's own text) is not cut.
    report["verdict"]["reasons"] = [{"code": "validity_check_off",
                                     "message": "prompts unreadable; limit 3 files (policy.strict_validity)"}]
    assert "prompts unreadable; limit 3 files" in headline(Report.from_dict(report), markdown=False)


def test_rendering_runs_no_pattern_over_a_reason_message():
    """The headline's rule phrase is built from typed values; no regular expression in the
    rendering package is applied to a reason's message."""
    for path in sorted((REPO / "gate" / "rendering").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "re"):
                text = ast.unparse(node)
                assert "message" not in text, f"{path.relative_to(REPO)}: {text}"


def test_a_statistical_reason_carries_the_decision_interval_it_quotes():
    import numpy as np

    from gate.common.numbers import signed
    from gate.statistics.evidence import evidence
    from gate.verdict.levels import ALPHA
    from gate.verdict.rules import decide_delta

    d = np.random.default_rng(3).normal(0.01, 0.1, 120)
    e = evidence(d, 0.02, samples=2000, seed=7, alpha=ALPHA)
    for mode in ("regression", "non-inferiority"):
        policy = Policy(mode=mode)
        (reason,) = decide_delta(float(d.mean()), -0.01, 0.03, 0.05, "nDCG@10", 120, policy, 0.001,
                                 evidence=e).reasons
        low = min(e.t_low, e.hall_low) if mode == "non-inferiority" else e.t_low
        assert reason.decision_interval == (low, e.t_high)
        assert f"decision interval [{signed(low)}, {signed(e.t_high)}]" in reason.message
        assert reason.to_dict()["decision_interval"] == [low, e.t_high]
    # the seed's interval rule quotes no decision interval, and its reason carries none
    (reason,) = decide_delta(0.01, -0.01, 0.03, 0.05, "nDCG@10", 120, Policy(decision="interval"), 0.001,
                             evidence=e).reasons
    assert reason.decision_interval is None and "decision interval" not in reason.message


def test_only_the_listed_rules_give_a_limit_or_a_decision_interval():
    from gate.inputs.config import CostPolicy, IncreaseLimit, LatencyPolicy
    from gate.statistics.latency import Change
    from gate.verdict.reasons import DECISION_INTERVAL_CODES, LIMIT_CODES
    from gate.verdict.resource_limits import ResourceFinding

    rose = ResourceFinding(Change(10.0, 20.0, 10.0, 8.0, 12.0, 1.0, 0.8, 1.2), band_threshold=0.5)
    reasons = failures_of(_findings(new_leaks=2, leak_sources=("faq/x",), leak_source_count=1, damaged_traffic=0.4,
                                    damaged_strata=("nav",), unjudged_share=0.9, judged_drop=0.5,
                                    tuning_overlap=("q1",), latency=rose, cost=rose),
                          Policy(latency=LatencyPolicy(p95_max_increase=IncreaseLimit(0.2, True)),
                                 cost=CostPolicy(max_increase=IncreaseLimit(1.0, False))))
    assert {r.code for r in reasons if r.limit is not None} == LIMIT_CODES
    assert len(reasons) == 7 and all(r.decision_interval is None for r in reasons)
    assert "non_inferior" in DECISION_INTERVAL_CODES and "too_few_movers" not in DECISION_INTERVAL_CODES


def test_a_report_an_older_gate_wrote_is_read_with_its_reasons_values():
    """The comment job may read an artifact of schema 1.8: its headline and the decision
    interval's explanation come out as the older gate's own comment job made them."""
    import copy

    from gate.rendering.comment import headline, render_comment
    from gate.report.document import read_report
    report = full_report()
    report["schema_version"] = "1.8"
    report["verdict"]["reasons"] = [
        {"code": "new_leaked_queries", "message": "9 golden queries newly appear in the candidate's corpus (faq); "
                                                  "limit 0"},
        {"code": "no_regression_shown", "message": "no regression shown (nDCG@10 -0.009 [-0.061, +0.045], decision "
                                                   "interval [-0.058, +0.051], 118 of 131 queries moved)"},
        {"code": "tuning_overlap", "message": "1 query is both tuning and reporting query (e.g. a; limit 5)"}]
    report["decision"] = {"rule": "calibrated", "mode": "regression"}
    record = read_report(copy.deepcopy(report), "report.json")
    first, second, third = record.verdict.reasons
    assert (first.limit, first.finding) == ("0", "9 golden queries newly appear in the candidate's corpus (faq)")
    assert second.decision_interval == (-0.058, 0.051)
    assert third.limit is ABSENT and third.finding == third.message  # only the rules that named a limit
    assert headline(record, markdown=False).startswith("❌ fail — 9 golden queries newly appear in the candidate's "
                                                       "corpus (faq) — ")
    assert "the decision interval is a studentized (bootstrap-t) interval" in render_comment(record)
    # A 1.9 report is read as written: its messages are not searched.
    report["schema_version"] = "1.9"
    assert read_report(copy.deepcopy(report), "report.json").verdict.reasons[0].limit is ABSENT


def test_an_empty_finding_leaves_the_message_whole():
    assert finding_of("; limit 0", "0") == "; limit 0"
    assert finding_of("  ; limit 0", "0") == "  ; limit 0"


def test_a_decision_interval_is_two_ends():
    import pytest

    from gate.common.errors import InputError
    from gate.report.document import read_report
    for bad in ([], [0.1], [0.1, 0.2, 0.3], ["a", "b"]):
        report = full_report()
        report["verdict"]["reasons"] = [{"code": "no_regression_shown", "message": "x", "decision_interval": bad}]
        with pytest.raises(InputError):
            read_report(report, "report.json")
