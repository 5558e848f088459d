"""The headline's rule phrase takes its numbers from the report's typed records (the decision,
the reporting set), never from a reason's message: a message is prose for the reader, and a
report from a fork's artifact may say anything in it."""

from __future__ import annotations

from tests.rendering.test_comment_render import full_report, headline

LYING = "only 99 of 999 queries moved; the reporting set (elsewhere) has only 1 query"


def _with_reason(code: str, **changes) -> dict:
    report = full_report(judged=None)
    report["verdict"] = {"kind": "inconclusive", "reasons": [{"code": code, "message": LYING}],
                         "improvement_shown": False, "exit_code": 3, **changes}
    return report


def test_too_few_movers_quotes_the_decisions_counts():
    report = _with_reason("too_few_movers")
    report["decision"] = {**report["decision"], "movers": 3, "n": 140}
    text = headline(report)
    assert "only 3 of 140 queries moved" in text and "999" not in text


def test_too_few_movers_without_a_decision_says_so_without_numbers():
    report = _with_reason("too_few_movers")
    report.pop("decision")
    assert "too few queries moved" in headline(report)


def test_a_held_out_set_too_small_quotes_the_reporting_set():
    report = _with_reason("held_out_too_small", reporting_set={"name": "held-out", "query_count": 4,
                                                               "held_out_only": True})
    text = headline(report)
    assert "only 4 queries to report on (held-out): too few to decide" in text and "elsewhere" not in text


def test_a_held_out_set_without_its_count_is_named_plainly():
    assert "the held-out set is too small: too few to decide" in headline(_with_reason("held_out_too_small"))
