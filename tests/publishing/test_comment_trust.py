"""The comment job trusts nothing it can check (issue 34).

`retrieval-gate comment` posts a report.json an untrusted PR job saved. Found from outside: it
posted another PR's passing report on PR 1 (marking PR 1's real failing comment outdated), and a
report rewritten to say ``verdict.kind: pass`` while its exit code and reasons said fail, as
"pass - regression shown". Now it refuses (exit 2, one line naming the file, nothing posted) a
report of another PR or head, or whose kind, exit code and reasons disagree; and when the PR job's
own result (``workflow_run.conclusion``) disagrees with the report, the comment says so.

The reports are the gate's own: PRs judged on the Action's path (``judge_pull_request`` with the
event the Action records), then edited as an attacker would edit the artifact. The verdict table's
rows (tests/verdict/test_verdict_policy.py) are checked too: every verdict the rules give passes.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from gate.inputs.config import Policy
from gate.publishing.github.sticky_comment import parse_marker
from gate.publishing.report_trust import (
    ConclusionDisagreement,
    Expected,
    Postable,
    Refused,
    check_report,
    conclusion_disagreement,
    verdict_problem,
)
from gate.report.build import verdict_record
from gate.report.document import read_report
from gate.report.spine import Accepted
from gate.report.typed import ABSENT
from gate.verdict.rules import accept, goalposts_changed, inconclusive, skipped
from tests.publishing.github.fake_github import FakeGitHub
from tests.publishing.github.payloads import workflow_run_event
from tests.support.action_world import GOOD, LEAKY, Checkout
from tests.verdict.test_verdict_policy import REGRESSION_ROWS, ROWS

TOKEN = "ghs_trust0123456789abcdefghijklmnopqrstuvw"
ACCEPT_BODY = "Retrieval-Gate-Justification: the leak is a known fixture, see #12"


@dataclasses.dataclass(frozen=True)
class Saved:
    """A report the gate wrote for PR ``pr`` at ``head``."""
    path: Path
    pr: int
    head: str

    def data(self) -> dict[str, Any]:
        return json.loads(self.path.read_text())

    def edited(self, where: Path, edit) -> Path:
        """A copy of the report with ``edit`` applied to its JSON: what a PR's code can write."""
        data = self.data()
        edit(data)
        where.write_text(json.dumps(data))
        return where


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict[str, Saved]:
    """One report of each kind, as the Action judges a PR (the same path, the event it records)."""
    from gate.pipeline.pull_request import PullRequest, judge_pull_request
    from gate.pipeline.stack import RunOptions

    tmp = tmp_path_factory.mktemp("trust")
    checkout = Checkout(tmp / "repo", runner_inputs="[retrieval.yml, search/*.py]")
    unchanged = (checkout.root / "retrieval.yml").read_text()
    prs = {  # kind: (PR number, retrieval config, extra files, changed files, labels, body, base problem)
        "pass": (2, GOOD, None, ("retrieval.yml",), (), None, None),
        "fail": (1, LEAKY, None, ("retrieval.yml",), (), None, None),
        "skipped": (3, unchanged, {"README.md": "docs only\n"}, ("README.md",), (), None, None),
        "accepted": (4, LEAKY, None, ("retrieval.yml",), ("retrieval-gate:accept",), ACCEPT_BODY, None),
        "inconclusive": (5, GOOD, None, ("retrieval.yml",), (), None, "the base commit is not in the checkout"),
    }
    out: dict[str, Saved] = {}
    for kind, (number, retrieval, extra, changed, labels, body, problem) in prs.items():
        head, _ = checkout.pr(retrieval, extra)
        change = PullRequest(checkout.root / ".retrieval-gate.yml", ".retrieval-gate.yml", checkout.base, changed,
                             base_problem=problem, labels=labels, body=body,
                             event={"name": "pull_request", "pr": number, "head_sha": head,
                                    "base_sha": checkout.base})
        judged = judge_pull_request(change, RunOptions(base=checkout.base, out=tmp / kind), progress=lambda m: None)
        assert judged.verdict.kind == kind, (kind, judged.verdict)
        judged.result.write(tmp / kind)
        out[kind] = Saved(tmp / kind / "report.json", number, head)
    return out


@pytest.fixture()
def github(monkeypatch):
    with FakeGitHub(token=TOKEN) as fake:
        monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
        monkeypatch.setenv("GITHUB_REPOSITORY", fake.repository)
        monkeypatch.setenv("GITHUB_API_URL", fake.url)
        # The comment job's own event, only where a test gives one.
        monkeypatch.delenv("GITHUB_EVENT_NAME", raising=False)
        monkeypatch.delenv("GITHUB_EVENT_PATH", raising=False)
        yield fake


def _comment(report: Path, pr: int, head: str, *extra: str) -> list[str]:
    return ["comment", "--report", str(report), "--pr", str(pr), "--head-sha", head, *extra]


def _refused(capsys, code: int, report: Path, *said: str) -> str:
    """Exit 2 with one line on stderr naming the report and the problem, and no traceback."""
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert str(report) in lines[0] and "not posted" in lines[0] and "Traceback" not in err, err
    for text in said:
        assert text in lines[0], lines[0]
    return lines[0]


def _no_comment_written(fake: FakeGitHub) -> None:
    for method in ("POST", "PATCH", "DELETE"):
        assert fake.requests_to(method, "/repos/{owner}/{repo}/issues/{issue_number}/comments") == []
        assert fake.requests_to(method, "/repos/{owner}/{repo}/issues/comments/{comment_id}") == []


# --------------------------------------------------------------------------- the event: which PR and head


def test_another_prs_passing_report_is_refused_and_pr_1s_failing_comment_stays_current(saved, github, capsys,
                                                                                         tmp_path):
    fail, other = saved["fail"], saved["pass"]
    github.add_pull(fail.pr, fail.head, files=["retrieval.yml"])
    github.add_pull(other.pr, other.head, files=["retrieval.yml"])
    assert main(_comment(fail.path, fail.pr, fail.head)) == 0, capsys.readouterr().err
    [real] = github.comments(fail.pr)
    capsys.readouterr()
    # PR 1's job saved PR 2's passing report in place of its own (--pr and --head-sha are PR 1's).
    forged = tmp_path / "report.json"
    forged.write_bytes(other.path.read_bytes())
    line = _refused(capsys, main(_comment(forged, fail.pr, fail.head)), forged,
                    f"is the report of PR #{other.pr}, not of #{fail.pr} (--pr)")
    assert "pass" not in line.split("not posted")[1]
    [still] = github.comments(fail.pr)
    assert still == real and parse_marker(still["body"]).state == "current"
    assert parse_marker(still["body"]).verdict == "fail"
    assert github.comments(other.pr) == []


def test_a_report_of_another_head_is_refused(saved, github, capsys, tmp_path):
    """The PR job of a newer push saved the older head's passing report: the report's event names
    the head it judged, and it is not the head this job was started for."""
    old = saved["pass"]
    newer = "b" * 40
    github.add_pull(old.pr, newer, files=["retrieval.yml"])
    _refused(capsys, main(_comment(old.path, old.pr, newer)), old.path,
             f"was made for head '{old.head}', not {newer} (--head-sha)")
    _no_comment_written(github)
    assert github.requests_to("GET", "/repos/{owner}/{repo}/pulls/{pull_number}") == []  # refused before GitHub


@pytest.mark.parametrize("event, said", [
    (None, "records no pull request (no 'event')"),
    ({"name": "merge_group", "pr": None, "head_sha": "c" * 40, "base_sha": None},
     "records no pull request ('event.pr' is null (event 'merge_group'))"),
    ({"name": "pull_request", "pr": 2}, "records no head commit ('event.head_sha')"),
], ids=["a run report without an event", "a merge group's report", "no head"])
def test_a_report_that_names_no_pr_or_no_head_is_refused(saved, github, capsys, tmp_path, event, said):
    """`retrieval-gate run` without the Action, a merge group or a push judges no PR: a report of
    no PR is not posted on one, whatever --pr says."""
    good = saved["pass"]
    github.add_pull(good.pr, good.head, files=["retrieval.yml"])

    def set_event(data: dict[str, Any]) -> None:
        if event is None:
            del data["event"]
        else:
            data["event"] = event

    report = good.edited(tmp_path / "report.json", set_event)
    _refused(capsys, main(_comment(report, good.pr, good.head)), report, said)
    _no_comment_written(github)


def test_a_forged_event_stays_one_line(saved, github, capsys, tmp_path):
    good = saved["pass"]
    github.add_pull(good.pr, good.head, files=["retrieval.yml"])
    report = good.edited(tmp_path / "report.json",
                         lambda d: d["event"].update(head_sha="x\n::error::forged\n" + "y" * 5000))
    line = _refused(capsys, main(_comment(report, good.pr, good.head)), report, "was made for head")
    assert len(line) < 400 and "yyyyy" * 20 not in line


# --------------------------------------------------------------------------- the verdict: kind, exit code, reasons


def test_a_fail_rewritten_to_pass_is_refused_on_its_exit_code(saved, github, capsys, tmp_path):
    """The finding: a report rewritten to say pass while its exit code and reasons say fail was
    posted as "pass - regression shown"."""
    fail = saved["fail"]
    github.add_pull(fail.pr, fail.head, files=["retrieval.yml"])
    report = fail.edited(tmp_path / "report.json", lambda d: d["verdict"].update(kind="pass"))
    _refused(capsys, main(_comment(report, fail.pr, fail.head)), report,
             "says pass with exit code 1; the gate ends a pass with 0")
    _no_comment_written(github)


def test_a_kind_that_disagrees_with_its_reasons_is_refused(saved, github, capsys, tmp_path):
    """Kind and exit code both rewritten to a pass: the reasons still fail the change."""
    fail = saved["fail"]
    github.add_pull(fail.pr, fail.head, files=["retrieval.yml"])
    report = fail.edited(tmp_path / "report.json", lambda d: d["verdict"].update(kind="pass", exit_code=0))
    codes = sorted({r["code"] for r in fail.data()["verdict"]["reasons"]})
    assert "new_leaked_queries" in codes
    _refused(capsys, main(_comment(report, fail.pr, fail.head)), report,
             f"says pass, but its reasons are not a pass's ({', '.join(codes)})")
    _no_comment_written(github)


@pytest.mark.parametrize("kind, edit, said", [
    ("pass", {"exit_code": 1}, "says pass with exit code 1; the gate ends a pass with 0"),
    ("fail", {"exit_code": 0}, "says fail with exit code 0; the gate ends a fail with 1"),
    ("inconclusive", {"exit_code": 1}, "says inconclusive with exit code 1; the gate ends an inconclusive with 3 or 0"),
    ("skipped", {"exit_code": 3}, "says skipped with exit code 3"),
    ("accepted", {"exit_code": 1}, "says accepted with exit code 1"),
], ids=["pass-1", "fail-0", "inconclusive-1", "skipped-3", "accepted-1"])
def test_a_kind_that_disagrees_with_its_exit_code_is_refused(saved, github, capsys, tmp_path, kind, edit, said):
    good = saved[kind]
    github.add_pull(good.pr, good.head, files=["retrieval.yml"])
    report = good.edited(tmp_path / "report.json", lambda d: d["verdict"].update(edit))
    _refused(capsys, main(_comment(report, good.pr, good.head)), report, said)
    _no_comment_written(github)


def _first_reason(code: str, message: str = "edited"):
    return lambda d: d["verdict"]["reasons"].insert(0, {"code": code, "message": message})


@pytest.mark.parametrize("kind, edit, said", [
    ("fail", lambda d: d["verdict"].update(reasons=[{"code": "no_regression_shown", "message": "fine"}]),
     "says fail, but none of its reasons fails a change (no_regression_shown)"),
    ("inconclusive", _first_reason("regression_shown"), "says inconclusive, but its reasons decide"),
    ("inconclusive", lambda d: d["verdict"].update(reasons=[{"code": "non_inferior", "message": "fine"}]),
     "says inconclusive, but its reasons decide (non_inferior)"),
    ("skipped", _first_reason("new_leaked_queries"), "says skipped, but its reasons are not a skipped change's"),
    ("pass", lambda d: d["verdict"].update(reasons=[]), "says pass without the reason that decided it"),
    ("pass", lambda d: d["verdict"].update(reasons=[{"code": "warning", "message": "only a note"}]),
     "says pass without the reason that decided it"),
    ("pass", _first_reason("looks_great"), "has a reason the gate does not give (looks_great)"),
    ("pass", _first_reason("accepted"), "says pass with an 'accepted' reason"),
    ("accepted", lambda d: d.pop("accepted"), "says accepted, but has no record of the label"),
    ("accepted", lambda d: d["verdict"].update(reasons=d["verdict"]["reasons"][:1]),
     "says accepted, but it keeps no fail or inconclusive reason it overrode"),
    ("fail", lambda d: d["verdict"].update(kind="accepted", exit_code=0),
     "says accepted, but its first reason is not the acceptance"),
], ids=["fail-without-a-failing-rule", "inconclusive-that-shows-a-regression", "inconclusive-that-passes",
        "skipped-with-a-leak", "no-reason", "only-a-warning", "unknown-code", "accepted-code-in-a-pass",
        "accepted-without-its-label", "accepted-that-overrode-nothing", "a-fail-relabelled-accepted"])
def test_other_kinds_that_disagree_with_their_reasons_are_refused(saved, github, capsys, tmp_path, kind, edit, said):
    good = saved[kind]
    github.add_pull(good.pr, good.head, files=["retrieval.yml"])
    report = good.edited(tmp_path / "report.json", edit)
    _refused(capsys, main(_comment(report, good.pr, good.head)), report, said)
    _no_comment_written(github)


# --------------------------------------------------------------------------- the happy path


@pytest.mark.parametrize("kind", ["pass", "fail", "accepted", "inconclusive"])
def test_the_gates_own_report_is_posted_as_before(saved, github, capsys, kind):
    good = saved[kind]
    github.add_pull(good.pr, good.head, files=["retrieval.yml"])
    assert main(_comment(good.path, good.pr, good.head)) == 0, capsys.readouterr().err
    [comment] = github.comments(good.pr)
    marker = parse_marker(comment["body"])
    assert (marker.verdict, marker.state, marker.head) == (kind, "current", good.head)
    assert "does not match the PR's gate job" not in comment["body"]
    github.assert_valid()


def test_a_skipped_report_passes_the_checks_and_posts_nothing_as_before(saved, github, capsys):
    good = saved["skipped"]
    github.add_pull(good.pr, good.head, files=["README.md"])
    assert main(_comment(good.path, good.pr, good.head)) == 0, capsys.readouterr().err
    assert github.comments(good.pr) == []


@pytest.mark.parametrize("kind", ["pass", "fail", "skipped", "accepted", "inconclusive"])
def test_every_kind_the_gate_writes_passes_every_check(saved, kind):
    good = saved[kind]
    report = read_report(good.data(), str(good.path))
    conclusion = "success" if good.data()["verdict"]["exit_code"] == 0 else "failure"
    assert check_report(report, Expected(good.pr, good.head, conclusion)) == Postable(None)


# --------------------------------------------------------------------------- the PR job's own result


def _body_lines(fake: FakeGitHub, pr: int) -> list[str]:
    [comment] = fake.comments(pr)
    return comment["body"].splitlines()


@pytest.mark.parametrize("kind, conclusion", [("pass", "failure"), ("fail", "success"), ("pass", "cancelled")])
def test_a_run_conclusion_that_disagrees_is_said_in_the_comment_which_still_posts(saved, github, capsys, kind,
                                                                                   conclusion):
    good = saved[kind]
    github.add_pull(good.pr, good.head, files=["retrieval.yml"])
    assert main(_comment(good.path, good.pr, good.head, "--run-conclusion", conclusion)) == 0, capsys.readouterr().err
    lines = _body_lines(github, good.pr)
    # The verdict's headline stays the first line after the marker; the disagreement comes next.
    assert lines[1].startswith("### "), lines[:4]
    [note] = [line for line in lines if "does not match the PR's gate job" in line]
    assert lines.index(note) == 3 and note.startswith("> ⚠️ ")
    exit_code = good.data()["verdict"]["exit_code"]
    assert f"concluded *{conclusion}*, but this report says *{kind}* (exit code {exit_code})" in note
    assert ("lets the job succeed" if exit_code == 0 else "which fails the job") in note
    github.assert_valid()


@pytest.mark.parametrize("kind, conclusion", [("pass", "success"), ("fail", "failure"), ("accepted", "success"),
                                              ("inconclusive", "failure")])
def test_a_run_conclusion_that_agrees_adds_nothing(saved, github, capsys, kind, conclusion):
    good = saved[kind]
    github.add_pull(good.pr, good.head, files=["retrieval.yml"])
    assert main(_comment(good.path, good.pr, good.head, "--run-conclusion", conclusion)) == 0, capsys.readouterr().err
    assert not any("does not match the PR's gate job" in line for line in _body_lines(github, good.pr))


def _in_a_workflow_run_job(monkeypatch, tmp_path: Path, head: str, conclusion: str | None) -> Path:
    """The comment job's environment as GitHub starts it: the workflow_run event of a run at ``head``."""
    event = tmp_path / "event.json"
    event.write_text(json.dumps(workflow_run_event(head, conclusion)))
    monkeypatch.setenv("GITHUB_EVENT_NAME", "workflow_run")
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    return event


def test_the_conclusion_is_read_from_the_workflow_run_event(saved, github, capsys, tmp_path, monkeypatch):
    """In a workflow_run job the event names the run and its conclusion: a copy of the comment
    workflow from before --run-conclusion still compares."""
    good = saved["pass"]
    github.add_pull(good.pr, good.head, files=["retrieval.yml"])
    _in_a_workflow_run_job(monkeypatch, tmp_path, good.head, "failure")
    assert main(_comment(good.path, good.pr, good.head)) == 0, capsys.readouterr().err
    assert any("concluded *failure*, but this report says *pass*" in line for line in _body_lines(github, good.pr))


def test_an_explicit_conclusion_wins_over_the_event(saved, github, capsys, tmp_path, monkeypatch):
    good = saved["pass"]
    github.add_pull(good.pr, good.head, files=["retrieval.yml"])
    _in_a_workflow_run_job(monkeypatch, tmp_path, good.head, "failure")
    assert main(_comment(good.path, good.pr, good.head, "--run-conclusion", "success")) == 0
    assert not any("does not match" in line for line in _body_lines(github, good.pr))


@pytest.mark.parametrize("head, conclusion, said", [
    ("d" * 40, "failure", "the workflow_run event is of head dddddddddddd"),
    (None, "bogus", "event payload field 'workflow_run.conclusion' is 'bogus', not a conclusion GitHub gives"),
], ids=["another run's event", "an unknown conclusion"])
def test_a_workflow_run_event_of_another_run_is_bad_input(saved, github, capsys, tmp_path, monkeypatch, head,
                                                          conclusion, said):
    good = saved["pass"]
    github.add_pull(good.pr, good.head, files=["retrieval.yml"])
    event = _in_a_workflow_run_job(monkeypatch, tmp_path, head or good.head, conclusion)
    code = main(_comment(good.path, good.pr, good.head))
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and str(event) in err and said in err, err
    _no_comment_written(github)


# --------------------------------------------------------------------------- every verdict the rules give


def _verdicts():
    """Each row of the verdict table, and what the PR path adds: skipped, goalposts, acceptance."""
    for name, findings, policy, _kind, _codes in ROWS + REGRESSION_ROWS:
        from gate.verdict.rules import decide

        verdict = decide(findings, policy)
        yield name, verdict, None
        goalposts = goalposts_changed(verdict, [{"path": "qrels.txt", "change": "modified"}], policy)
        if goalposts is not verdict:
            yield f"{name}, goalposts moved", goalposts, None
        taken, record = accept(verdict, ["retrieval-gate:accept"], "Retrieval-Gate-Justification: reviewed", policy)
        if record is not None:
            yield f"{name}, accepted", taken, record
        unjustified, _ = accept(verdict, ["retrieval-gate:accept"], None, policy)
        if unjustified is not verdict:
            yield f"{name}, accept label without justification", unjustified, None
    yield "skipped", skipped(1, Policy(), ("README.md",)), None
    for blocks in (True, False):
        yield (f"inconclusive, blocks {blocks}",
               inconclusive("base_unavailable", "no base", Policy(inconclusive_blocks=blocks)), None)


VERDICTS = list(_verdicts())


@pytest.mark.parametrize("name, verdict, accepted", VERDICTS, ids=[v[0] for v in VERDICTS])
def test_every_verdict_the_rules_give_is_one_the_check_takes(name, verdict, accepted):
    record = Accepted(label=accepted["label"], justification=accepted["justification"]) if accepted else ABSENT
    assert verdict_problem(verdict_record(verdict), record) is None


@pytest.mark.parametrize("blocks, conclusion, disagrees", [
    (True, "failure", False), (True, "success", True), (False, "success", False), (False, "failure", True),
])
def test_an_inconclusive_disagrees_with_the_job_by_whether_it_blocks(blocks, conclusion, disagrees):
    """The gate job's exit code is the verdict's, and an inconclusive ends it with 3 only where it
    blocks (policy.inconclusive_blocks): a non-blocking one lets the job succeed."""
    verdict = verdict_record(inconclusive("underpowered", "neither shown", Policy(inconclusive_blocks=blocks)))
    found = conclusion_disagreement(verdict, conclusion)
    assert (found is not None) == disagrees
    if found is not None:
        assert found == ConclusionDisagreement(conclusion, "inconclusive", 3 if blocks else 0)


def test_a_refusal_is_a_value_not_an_exception(saved):
    other = saved["pass"]
    report = read_report(other.data(), str(other.path))
    assert check_report(report, Expected(other.pr + 1, other.head)) == Refused(
        f"is the report of PR #{other.pr}, not of #{other.pr + 1} (--pr)")
