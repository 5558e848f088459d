"""The PR comment's first line is at most 300 characters (issue 32): GitHub's notification
previews cut a longer one, mid-advice. The verdict and the main number stay; a long rule
(many reasons, long stratum names, inconclusive with long reasons, advice) is cut to its gist,
and is given whole in the reasons list of the body."""

from __future__ import annotations

import json

import pytest

from gate.cli import main
from gate.inputs.config import load_config
from gate.pipeline.archive import archive
from gate.rendering.comment import HEADLINE_LIMIT, _gist, headline, render_comment, typographic_minus
from gate.rendering.markdown import md_text
from gate.report.spine import Report
from gate.verdict.reasons import Reason
from tests.rendering.test_comment_render import full_report
from tests.support.small_world import small_world

LONG = "navigational_queries_from_the_enterprise_customer_support_portal_in_the_emea_region_and_apac_"
ADVICE = ("; these qrels judge only relevant documents, so most of any ranking is unjudged by design: for this qrels "
          "style set judged.qrels_style: relevance-only (or raise policy.max_unjudged and policy.max_judged_drop, "
          "up to 1.0), or judge the top documents (unjudged.tsv lists them)")


def _record(report):
    return Report.from_dict(json.loads(json.dumps(report)))


def _with_reasons(kind, reasons, **changes):
    report = full_report()
    report["verdict"] = dict(report["verdict"], kind=kind, exit_code={"pass": 0, "fail": 1}.get(kind, 3),
                             reasons=[Reason(*reason).to_dict() for reason in reasons])
    report.update(changes)
    return report


LONGEST = {
    "many-reasons": _with_reasons("fail", [("judged_share", "62% of the candidate's top 10 is unjudged (limit 30%)"
                                            + ADVICE)]
                                  + [("warning", f"warning number {i}: " + "x" * 200) for i in range(40)]),
    "long-stratum-names": _with_reasons("fail", [
        ("damaged_traffic", f"100% of traffic damaged ({', '.join(LONG + str(i) for i in range(6))})", "20%"),
        *[("guarded_stratum", f"guarded stratum {LONG}{i} regressed: -0.300 [-0.410, -0.200], Holm p 0.001")
          for i in range(6)]]),
    "inconclusive-long-reasons": _with_reasons("inconclusive", [
        ("too_few_movers", "only 3 of 140 queries moved ([-0.031, +0.008]): too few to tell a change from noise; "
                           "a PR that moves so few queries needs "
                           + "more judged queries in the strata it moves, " * 6),
        ("underpowered", "the set cannot detect the margin " + "and more " * 60)]),
    "one-word-reason": _with_reasons("inconclusive", [("runner_failed", "x" * 600)]),
    "escapes-expand-in-markdown": _with_reasons("fail", [("new_leaked_queries",
                                                          "3 golden queries newly appear in the candidate's corpus ("
                                                          + "|<>&`" * 40 + ")", "0")]),
}


@pytest.mark.parametrize("name", list(LONGEST))
def test_the_longest_first_lines_keep_the_verdict_and_the_number_within_300_characters(name):
    report = _record(LONGEST[name])
    kind = report.verdict.kind
    plain = headline(report, markdown=False)
    first = render_comment(report).split("\n", 1)[0]
    assert len(plain) <= HEADLINE_LIMIT and len(first) <= HEADLINE_LIMIT, (len(plain), len(first))
    assert first == "### " + headline(report)
    assert plain.startswith(f"{'❌' if kind == 'fail' else '⚠️'} {kind} — ")
    assert plain.endswith("— nDCG@10 −0.012 [−0.031, +0.008], within noise ±0.013, judgment-limited — 140 q")
    # the first reason, cut in the headline, is in the body's reasons list (as far as that list
    # shows any reason: 400 characters)
    body = render_comment(report)
    assert f"- {'❌' if kind == 'fail' else '⚠️'} " + md_text(typographic_minus(report.verdict.reasons[0].message),
                                                          400) in body


def test_advice_goes_to_the_body_and_the_headline_keeps_the_finding():
    report = _record(LONGEST["many-reasons"])
    assert headline(report, markdown=False).startswith("❌ fail — 62% of the candidate's top 10 is unjudged… — nDCG@10")
    report = _record(LONGEST["long-stratum-names"])
    assert headline(report, markdown=False).startswith("❌ fail — 100% of traffic damaged — nDCG@10")


def test_a_headline_that_fits_is_not_touched():
    report = _record(_with_reasons("fail", [("damaged_traffic", "40% of traffic damaged (navigational)", "20%")]))
    assert headline(report, markdown=False) == ("❌ fail — 40% of traffic damaged (navigational) — nDCG@10 −0.012 "
                                                "[−0.031, +0.008], within noise ±0.013, judgment-limited — 140 q")


def test_the_gist_cuts_parentheticals_then_advice_then_clauses_then_words():
    assert _gist("short", 10) == "short"
    assert _gist("only 3 of 140 queries moved (a long detail here): too few", 45) == \
        "only 3 of 140 queries moved: too few"
    assert _gist("a finding that is long; what to do about it, at length", 40) == "a finding that is long…"
    assert _gist("first clause is here: second clause is here, third clause", 48) == \
        "first clause is here: second clause is here…"
    assert _gist("word " * 30, 21) == "word word word word…"
    assert len(_gist("x" * 500, 100)) == 100


def test_run_in_a_terminal_and_comment_md_keep_the_first_line_within_300_characters(tmp_path, capsys):
    """Relevance-only qrels: the unjudged-share reason carries its advice (~280 characters);
    the first line, in the terminal and in comment.md, was 310-346 characters."""
    path = small_world(tmp_path, leak_in_new=False)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(line + "\n" for line in qrels.read_text().splitlines() if not line.endswith(" 0")))
    archive(load_config(path), progress=lambda m: None)
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 1.0\nprefer_suffix: '#c7'\n")
    code = main(["run", "--config", str(path), "--out", str(tmp_path / "out")])
    printed = capsys.readouterr().out.splitlines()
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert code == 1 and report["verdict"]["reasons"][0]["code"] == "judged_share"
    assert len(report["verdict"]["reasons"][0]["message"]) > 250
    first = (tmp_path / "out" / "comment.md").read_text().split("\n", 1)[0]
    assert len(printed[0]) <= HEADLINE_LIMIT and len(first) <= HEADLINE_LIMIT
    assert printed[0] == report["verdict"]["headline"]
    assert printed[0].startswith("❌ fail — ") and "unjudged" in printed[0] and "nDCG@10" in printed[0]
    assert "judge the top documents (unjudged.tsv lists them)" in printed[printed.index("reasons:") + 1]
