"""The combined comment of several suites (gate/rendering/suites.py): the verdict table on top, one
collapsed section per suite, the worst first and skipped suites last, data escaped as the single
comment escapes it, and the whole under GitHub's 65,536 characters with the table never cut."""

from __future__ import annotations

import re

import pytest

from gate.rendering import comment as single
from gate.rendering.markdown_cut import COMMENT_LIMIT
from gate.rendering.suites import MARKER_ROOM, render_suites_comment, render_suites_summary, standings
from gate.report.spine import Report
from tests.rendering.test_comment_render import full_report, tables

HOSTILE = "| </details> @octocat <img src=x> `code` ``` [link](javascript:x) <!-- *b* \\|"


def _verdict(kind: str, exit_code: int, *reasons: tuple[str, str]) -> dict:
    return {"kind": kind, "exit_code": exit_code, "improvement_shown": kind == "pass",
            "reasons": [{"code": code, "message": message} for code, message in reasons],
            "reporting_set": {"name": "golden queries", "query_count": 140}}


def report(suite: str, kind: str = "fail", exit_code: int | None = None, **overrides) -> dict:
    """A full run report of ``suite`` with a verdict of ``kind``."""
    exit_code = {"fail": 1, "pass": 0, "skipped": 0, "inconclusive": 3, "accepted": 0}[kind] \
        if exit_code is None else exit_code
    reasons = {
        "fail": [("regression_shown", "regression shown: nDCG@10 -0.040 [-0.060, -0.020]")],
        "pass": [("no_regression_shown", "no regression shown")],
        "skipped": [("not_relevant", "the PR touches nothing the gate watches")],
        "inconclusive": [("underpowered", "neither a regression nor non-inferiority shown")],
    }[kind]
    data = full_report(suite=suite, verdict=_verdict(kind, exit_code, *reasons))
    data.update(overrides)
    return data


def table_rows(text: str) -> list[list[str]]:
    """The verdict table's rows (cells stripped), the first table of the comment."""
    line, lines = tables(text)[0]
    assert line == 2, "the table comes right after the first line"
    return [[cell.strip() for cell in re.split(r"(?<!\\)\|", row.strip().strip("|"))] for row in lines[2:]]


def summaries(text: str) -> list[str]:
    """Each suite's section summary, in order (the sections' own <details> have plain titles)."""
    return re.findall(r"^<details><summary>(.*?) <b>(.*?)</b></summary>$", text, re.M)


# --------------------------------------------------------------------------- the table


def test_one_row_per_suite_worst_first_in_the_single_comments_words():
    reports = [report("pass-suite", "pass"), report("skipped-suite", "skipped"),
               report("soft", "inconclusive", exit_code=0), report("blocking", "inconclusive"),
               report("failing", "fail")]
    text = render_suites_comment(reports, missing=["lost"], skipped=["untouched"], title=".retrieval-gate.yml")
    rows = table_rows(text)
    assert [row[0] for row in rows] == ["failing", "blocking", "lost", "soft", "pass-suite", "skipped-suite",
                                        "untouched"]
    verdicts = {row[0]: row[1] for row in rows}
    assert verdicts == {"failing": "❌ fail", "blocking": "⚠️ inconclusive", "lost": "❔ no report",
                        "soft": "⚠️ inconclusive (does not block)", "pass-suite": "✅ pass",
                        "skipped-suite": "⏭️ skipped", "untouched": "⏭️ skipped"}
    assert all(len(row) == 4 for row in rows)
    failing = rows[0]
    # The primary delta with its interval, as the single comment's headline writes it.
    assert failing[2].startswith("nDCG@10 −0.012 [−0.031, +0.008]")
    assert failing[3] == "regression shown"
    assert rows[2][2] == "—" and "saved no report" in rows[2][3]
    assert "touches nothing" in rows[-1][3]
    assert text.split("\n", 1)[0] == ("### ❌ fail — .retrieval-gate.yml: 7 suites (1 fail, 2 inconclusive, "
                                      "1 without a report, 1 pass, 2 skipped)")


def test_sections_hold_each_suites_own_comment_judged_by_worst_then_skipped():
    reports = [report("b-pass", "pass"), report("z-skip", "skipped"), report("a-fail", "fail")]
    text = render_suites_comment(reports, missing=["lost"])
    assert summaries(text) == [("❌ fail", "a-fail"), ("✅ pass", "b-pass"), ("⏭️ skipped", "z-skip")]
    # A missing report has a row, and no section.
    assert "lost" in [row[0] for row in table_rows(text)] and "lost</b>" not in text
    for data in reports:
        own = single.render_comment(Report.from_dict(data))
        first_line = own.split("\n", 1)[0]
        assert first_line in text, "each section holds the suite's own comment, whole when it fits"
        assert "<!-- retrieval-gate:" not in text  # no marker: the publisher adds the set's
    assert text.count("<details>") == text.count("</details>")


def test_one_suite_is_a_table_of_one_row_and_its_section():
    text = render_suites_comment([report("docs", "pass")])
    assert [row[:2] for row in table_rows(text)] == [["docs", "✅ pass"]]
    assert summaries(text) == [("✅ pass", "docs")]
    assert text.startswith("### ✅ pass — retrieval-gate: 1 suite (1 pass)\n")


def test_only_skipped_suites_say_so_on_the_first_line():
    text = render_suites_comment([report("docs", "skipped")], skipped=["code"])
    assert text.startswith("### ⏭️ skipped — retrieval-gate: 2 suites (2 skipped)\n")


def test_a_suite_given_twice_is_refused():
    with pytest.raises(ValueError, match="'docs' is given more than once"):
        standings([report("docs", "pass")], missing=["docs"])


# --------------------------------------------------------------------------- escaping


def test_hostile_suite_names_and_headlines_are_inert():
    hostile_fail = report(HOSTILE + " fail", "fail")
    hostile_fail["verdict"]["reasons"][0]["message"] = HOSTILE
    hostile_title = "<img src=x> @octocat"
    text = render_suites_comment([hostile_fail, report(HOSTILE, "pass")], missing=[HOSTILE + " lost"],
                                 title=hostile_title)
    rows = table_rows(text)
    assert len(rows) == 3 and all(len(row) == 4 for row in rows), "a pipe in data never adds a cell"
    assert "<img" not in text and "[link](" not in text  # "\\[link\\](": text, not a link
    assert "@octocat" not in text  # always "@\u200boctocat"
    assert "<!--" not in text
    # The only <details> and </details> are the gate's own: balanced, one section per judged suite.
    assert text.count("<details>") == text.count("</details>")
    assert len(summaries(text)) == 2
    assert all("<" not in suite and "`" not in suite for _verdict_words, suite in summaries(text))
    # No backtick of the data opens a code span or a fence in the table or the first line.
    assert "`" not in text.split("<details>", 1)[0]


# --------------------------------------------------------------------------- size


def _huge(suite: str, kind: str) -> dict:
    """A report whose comment alone is over GitHub's cap: hundreds of long reasons (the part of the
    comment that is never dropped) and thousands of per-query rows."""
    data = report(suite, kind)
    data["verdict"]["reasons"] += [{"code": "warning", "message": f"warning {i}: " + "long words " * 36}
                                   for i in range(220)]
    data["per_query"] = [{"query_id": f"q-{i:06d} " + "x" * 150, "stratum": "tail", "baseline": 0.5,
                          "candidate": 0.5 + (i % 7 - 3) / 10, "delta": (i % 7 - 3) / 10} for i in range(3000)]
    data["config_diff"] = [{"path": f"key.{i}", "old": "a" * 50, "new": "b" * 50} for i in range(400)]
    return data


def test_ten_suites_of_huge_reports_fit_the_cap_with_the_table_whole():
    kinds = ["fail", "pass", "inconclusive", "skipped", "pass", "fail", "pass", "inconclusive", "pass", "skipped"]
    reports = [_huge(f"suite-{i:02d}", kind) for i, kind in enumerate(kinds)]
    assert len(single.render_comment(Report.from_dict(reports[0]), limit=10**9)) > COMMENT_LIMIT
    text = render_suites_comment(reports, missing=["suite-lost"])
    assert len(text) <= COMMENT_LIMIT - MARKER_ROOM
    rows = table_rows(text)
    assert sorted(row[0] for row in rows) == sorted([f"suite-{i:02d}" for i in range(10)] + ["suite-lost"])
    assert len(summaries(text)) == 10, "every judged suite keeps its section"
    assert text.count("<details>") == text.count("</details>")
    assert "Sections below are shortened to fit GitHub's comment limit" in text
    assert text.count("the full report is in the job summary and the report artifact") >= 10
    # The room is shared: no suite's section crowds the others out.
    sections = re.split(r"^<details><summary>.*? <b>", text, flags=re.M)[1:]
    assert max(map(len, sections)) < 2 * min(map(len, sections)) + 2000


def test_small_sections_stay_whole_beside_huge_ones():
    small = report("small", "pass")
    text = render_suites_comment([_huge("big-1", "fail"), _huge("big-2", "fail"), small])
    assert len(text) <= COMMENT_LIMIT - MARKER_ROOM
    own = single.render_comment(Report.from_dict(small)).strip("\n")
    assert own in text, "a section that fits its share is not cut"


def test_a_given_limit_is_kept():
    text = render_suites_comment([_huge("a", "fail"), report("b", "pass")], limit=20_000)
    assert len(text) <= 20_000
    assert len(summaries(text)) == 2


def test_the_job_summary_is_the_table_over_each_suites_summary_under_its_byte_cap():
    reports = [report("docs", "fail"), report("code", "pass")]
    text = render_suites_summary(reports)
    assert [row[0] for row in table_rows(text)] == ["docs", "code"]
    assert "The full report (the report.md artifact) follows." in text
    huge = render_suites_summary([_huge(f"s{i}", "fail") for i in range(4)], limit=150_000)
    assert len(huge.encode("utf-8")) <= 150_000
    assert len(summaries(huge)) == 4
