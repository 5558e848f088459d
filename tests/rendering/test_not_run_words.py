"""A verdict reached without measuring anything (a skipped change, a base that cannot be read)
says so in words a reviewer understands: "No baseline: the change was skipped (...)", not the
gate's internal "No commensurable baseline: not run" (issue 35)."""

from __future__ import annotations

import pytest

from gate.cli import main
from gate.inputs.config import Policy
from gate.pipeline.pull_request import BASE_UNREADABLE
from gate.rendering.comment import render_comment, render_summary
from gate.report.build import GateRun, Head, NoBaseline, PullRequestFacts, build_report
from gate.verdict.rules import inconclusive
from tests.support.action_world import Checkout


def _baseline_lines(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if "baseline" in line.lower() and "No" in line]


def test_a_skipped_change_says_it_was_skipped_in_the_comment_and_the_report(tmp_path, monkeypatch):
    checkout = Checkout(tmp_path / "repo", runner_inputs="[retrieval.yml, search/*.py]")
    checkout.pr((checkout.root / "retrieval.yml").read_text(), {"README.md": "# docs only\n"})
    monkeypatch.chdir(checkout.root)
    out = tmp_path / "out"
    assert main(["run", "--config", ".retrieval-gate.yml", "--base", checkout.base, "--out", str(out)]) == 0
    comment, report = (out / "comment.md").read_text(), (out / "report.md").read_text()
    said = ("the change was skipped (it touches none of the files the gate watches), so neither the baseline "
            "nor the PR's retrieval was run.")
    assert _baseline_lines(comment) == [f"**No baseline**: {said}"]
    assert _baseline_lines(report) == [f"No baseline: {said}"]
    for text in (comment, report):
        assert "not run" not in text and "No commensurable baseline" not in text


def test_a_base_that_cannot_be_read_says_nothing_was_measured():
    verdict = inconclusive("base_unavailable", "the base commit abc is not in the checkout", Policy())
    run = GateRun(Head("search", "nDCG@10"), verdict, NoBaseline(BASE_UNREADABLE))
    report = build_report(run, PullRequestFacts(goalposts=(), warnings=(), yardstick={"source": "workspace"},
                                                event={"name": "pull_request"}))
    comment, summary = render_comment(report), render_summary(report)
    said = ("the base commit could not be read, so there was nothing to measure the PR against: neither the "
            "baseline nor the PR's retrieval was run.")
    assert f"**No baseline**: {said}" in comment
    assert f"No baseline: {said}" in summary  # the full report (run.md) in the job summary
    assert "No commensurable baseline" not in comment + summary


@pytest.mark.parametrize("differences", [(), ({"input": "qrels", "archived": "a", "current": "b"},)])
def test_an_incommensurable_baseline_keeps_its_warning(differences):
    verdict = inconclusive("incommensurable", "the qrels changed", Policy())
    run = GateRun(Head("search", "nDCG@10"), verdict, NoBaseline("the archived qrels differ", differences))
    report = build_report(run, PullRequestFacts(goalposts=(), warnings=(), yardstick={"source": "workspace"},
                                                event={"name": "pull_request"}))
    comment = render_comment(report)
    assert "⚠️ **No commensurable baseline**: the archived qrels differ." in comment
    assert "**No baseline**" not in comment
