"""Numbers that read right (issue "What users read", deliverable 4): each says what it is measured
on, signs and words agree, no negative zero, booleans alike everywhere, no Markdown escapes in a
terminal, a guarded stratum's line carries its Holm p."""

from __future__ import annotations

import json

import pytest

from gate.cli import main
from gate.common.numbers import fixed, signed
from gate.rendering import comment as rendering
from gate.rendering.jinja import render
from gate.rendering.terminal import config_value, summary_lines, terminal_text
from gate.report.spine import Report
from gate.verdict.rules import Findings, GuardedRegression, Policy, decide_delta, failures_of
from tests.rendering.test_comment_render import full_report


def _record(report) -> Report:
    return Report.from_dict(json.loads(json.dumps(report)))


@pytest.mark.parametrize("drop, word", [(0.012, "drop 0.012"), (-0.028, "rise 0.028"), (0.0, "unchanged"),
                                        (1e-17, "unchanged"), (-0.0004, "unchanged")])
def test_the_judged_share_says_rise_or_drop_as_it_moved_and_on_which_queries(drop, word):
    report = full_report()
    report["judged"].update(drop=drop, query_count=140)
    body = rendering.render_comment(_record(report))
    line = next(candidate for candidate in body.splitlines() if candidate.startswith("- **Judged@10**"))
    assert line.startswith("- **Judged@10** on all 140 judged golden queries:") and f"({word})" in line
    markdown = render("run.md.j2", report=_record(report))
    line = next(candidate for candidate in markdown.splitlines() if candidate.startswith("**Judged@10**"))
    assert "on all 140 judged golden queries" in line and f"({word})" in line
    assert "drop -" not in body + markdown and "drop +" not in markdown


def test_no_negative_zero_in_prose_intervals_or_tables():
    assert signed(-0.0004) == "0.000" and signed(0.0) == "0.000" and fixed(-0.0004) == "0.000"
    assert signed(-0.0006) == "-0.001"
    g = GuardedRegression("nav", -0.0004, -0.0002, 0.0003, 0.01)
    findings = Findings(metric="nDCG@10", query_count=30, delta=-0.0004, ci_low=-0.0004, ci_high=0.003,
                        guarded_regressions=(g,))
    text = " ".join(r.message for r in failures_of(findings, Policy()))
    assert "-0.000" not in text and "[0.000, 0.000]" in text
    verdict = decide_delta(-0.0004, -0.0001, 0.003, 0.01, "nDCG@10", 30, Policy(decision="interval"))
    assert "nDCG@10 0.000 [0.000, +0.003]" in " ".join(r.message for r in verdict.reasons)


def test_booleans_and_values_read_as_the_comment_shows_them():
    assert [config_value(v) for v in (False, True, None, 0.5, ["a", 1], "v2", "<absent>")] == [
        "false", "true", "null", "0.5", '["a", 1]', "v2", "absent"]


def test_terminal_text_undoes_every_markdown_escape():
    from gate.rendering.markdown import md_text

    for value in ("base_miss.run", "a -> b", "x | y", "@octocat #12", "*x* [y](z) `t`", "1. first", "- item"):
        assert terminal_text(md_text(value)) == value


def test_factorial_prints_file_names_without_markdown_escapes(tmp_path, capsys):
    (tmp_path / "qrels.txt").write_text("".join(f"q{i} 0 d{i} 1\n" for i in range(6)))
    names = {}
    for a in ("old", "new"):
        for b in ("old", "new"):
            path = tmp_path / f"cell_{a}_{b}.run"
            rows = []
            for i in range(6):
                first = f"d{i}" if (a, b) != ("old", "old") or i % 2 else f"x{i}"
                rows += [f"q{i} Q0 {first} 1 2.0 t", f"q{i} Q0 z{i} 2 1.0 t"]
            path.write_text("\n".join(rows) + "\n")
            names[(a, b)] = path
    cells = [f"model={a},corpus={b}={names[(a, b)]}" for a in ("old", "new") for b in ("old", "new")]
    code = main(["factorial", "--factor", "model", "--factor", "corpus", "--qrels", str(tmp_path / "qrels.txt"),
                 "--samples", "200", *sum((["--cell", c] for c in cells), [])])
    out = capsys.readouterr().out
    assert code == 0
    for escaped in ("\\_", "&gt;", "&lt;", "&#124;", "&amp;"):
        assert escaped not in out, escaped


def test_a_guarded_stratum_shows_its_holm_p():
    report = full_report()
    row = next(s for s in report["strata"] if s.get("n"))
    row.update(guarded=True, p_holm=0.122, direction="untouched")
    body = rendering.render_comment(_record(report))
    line = next(candidate for candidate in body.splitlines() if candidate.startswith(f"| {row['stratum']} (guarded)"))
    assert line.rstrip(" |").endswith("Holm p 0.122")
    markdown = render("run.md.j2", report=_record(report))
    assert any("(guarded)" in line and "Holm p 0.122" in line for line in markdown.splitlines())


@pytest.mark.parametrize("with_queries, words", [(False, "in the runs but not judged"),
                                                 (True, "in the runs but not among the golden queries with judgments")])
def test_queries_outside_the_evaluation_are_named_for_what_they_are(with_queries, words):
    report = full_report()
    report.setdefault("queries", {}).update(extra=["q9", "q10"], missing_in_baseline=[], missing_in_candidate=[])
    report["inputs"] = {k: v for k, v in report["inputs"].items() if k != "queries"}
    if with_queries:
        report["inputs"]["queries"] = {"path": "golden.jsonl", "sha256": "a" * 64}
    lines = summary_lines(_record(report))
    assert any(f"2 {words}" in line for line in lines)


def test_data_reaches_the_terminal_without_controls_or_bidi_overrides():
    from gate.rendering.terminal import terminal_safe

    hostile = "key\x1b[31mred\rover\nreasons:\u202eexe.fdp\ttab"
    assert terminal_safe(hostile, lines=False) == "key\ufffd[31mred\ufffdover\ufffdreasons:\ufffdexe.fdp tab"
    assert terminal_safe("line one\nline two") == "line one\nline two"  # the gate's own lines stay
    assert config_value("v\n- reasons: forged") == "v\ufffd- reasons: forged"


def test_counts_and_nouns_agree_where_a_count_can_be_one():
    report = full_report()
    report["noise_band"]["tie_floor"] = {"count": 1, "max_query_span": 0.0, "mean_shift": 0.0, "queries": ["q1"]}
    report["noise_band"]["calibration"] = {"pairs": 2, "blocking": 0, "fail": 0, "inconclusive": 0,
                                           "blocking_rate_upper95": 0.84, "independent_pairs": 1}
    report["judged"]["unjudged_candidate_top"] = 1
    body = rendering.render_comment(_record(report))
    assert "1 query has tied scores across the cutoff" in body and "1 queries" not in body
    assert "on 1 independent pair." in body and "1 unjudged top-10 document to judge next" in body
    report["noise_band"]["tie_floor"]["count"] = 3
    markdown = render("run.md.j2", report=_record(report))
    assert "3 queries have tied scores across the cutoff" in markdown


def test_a_reason_prints_the_same_minus_sign_as_the_table_beside_it():
    report = full_report()
    report["verdict"]["reasons"] = [{"code": "regression", "message": "delta -0.012 [-0.031, -0.002] on query 'q-1'"}]
    body = rendering.render_comment(_record(report))
    assert body.count("delta −0.012 \\[−0.031, −0.002\\] on query") == 2  # the headline and the reasons
    assert "q-1" in body and "-0.031" not in body


def test_the_noise_band_sentence_uses_the_plus_minus_sign():
    from gate.statistics.band import BandStatus, band_sentence

    class Band:
        threshold, runs = 0.0134, 5

    for delta in (0.001, 0.05):
        _, words = band_sentence(delta, BandStatus(Band(), "current", ""), "retrieval-gate noise")
        assert "±0.013 from 5 identical runs" in words and "+/-" not in words


def test_the_lift_csv_never_prints_a_negative_zero():
    from gate.publishing.lift_files import _csv_cell

    assert _csv_cell(-1e-9) == "0.0" and _csv_cell(-0.0) == "0.0" and _csv_cell(-0.25) == "-0.25"


def test_run_names_run_queries_left_out_of_the_evaluation():
    from gate.rendering.terminal import run_summary_lines

    report = full_report()
    report["queries"] = {"missing_in_baseline": [], "missing_in_candidate": [], "extra": ["t1", "t2", "t3"]}
    report["verdict"]["headline"] = "pass"
    lines = run_summary_lines(_record(report))
    assert any(line.startswith("queries: 3 in the runs but not") for line in lines)
    body = rendering.render_comment(_record(report))
    line = next(candidate for candidate in body.splitlines() if candidate.startswith("- **Reporting set**"))
    assert line.endswith("queries; the runs also answer 3 queries outside the judged golden set, left out.")


def test_a_single_query_reads_as_one_query_everywhere(tmp_path, capsys):
    import re

    (tmp_path / "qrels").write_text("1 0 d1 1\n1 0 d2 0\n")
    (tmp_path / "a.run").write_text("1 Q0 d1 1 2 a\n1 Q0 d2 2 1 a\n")
    (tmp_path / "b.run").write_text("1 Q0 d2 1 2 b\n1 Q0 d1 2 1 b\n")
    main(["compare", "--baseline", str(tmp_path / "a.run"), "--candidate", str(tmp_path / "b.run"),
          "--qrels", str(tmp_path / "qrels"), "--out", str(tmp_path / "o")])
    out = capsys.readouterr().out + (tmp_path / "o" / "report.md").read_text()
    assert "on 1 query" in out and "1 of 1 query moved" in out
    assert not re.search(r"\b1 (queries|effects|biggest losses|biggest wins)\b", out)
    assert "0 of 1 query improved and the mean fell" in out  # no "although": nothing contrary
    report = full_report()
    for key in ("reporting_set",):
        report[key]["query_count"] = 1
    report["query_count"] = 1
    report["judged"]["query_count"] = 1
    body = rendering.render_comment(_record(report))
    assert not re.search(r"\b1 queries\b", body) and "on the one judged golden query" in body
