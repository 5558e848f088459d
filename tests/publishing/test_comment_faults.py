"""The fault suite of `retrieval-gate comment` (the fork-safe comment job) against a fake GitHub
that answers oddly, trickles, loses answers and lags: every fault is a GitHub problem (exit 3,
one line on stderr, rerun the job) or handled (exit 0), never exit 4 (a bug in the gate)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gate.cli import main
from gate.publishing.github.sticky_comment import comment_marker, parse_marker
from tests.publishing.github.fake_github import FakeGitHub
from tests.publishing.github.test_deadline import MARGIN, Trickler
from tests.support.action_world import GOOD, Checkout

TOKEN = "ghs_CommentFaults1234567890abcdefghij"
PR = 2
PULL = "/repos/{owner}/{repo}/pulls/{pull_number}"
COMMENTS = "/repos/{owner}/{repo}/issues/{issue_number}/comments"


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> tuple[Path, str]:
    """A passing report of PR #2 at its head, as the gate job saves it: (report.json, head)."""
    from gate.pipeline.pull_request import PullRequest, judge_pull_request
    from gate.pipeline.stack import RunOptions

    tmp = tmp_path_factory.mktemp("faults")
    checkout = Checkout(tmp / "repo", runner_inputs="[retrieval.yml]")
    head, _ = checkout.pr(GOOD)
    change = PullRequest(checkout.root / ".retrieval-gate.yml", ".retrieval-gate.yml", checkout.base,
                         ("retrieval.yml",), event={"name": "pull_request", "pr": PR, "head_sha": head,
                                                    "base_sha": checkout.base})
    judged = judge_pull_request(change, RunOptions(base=checkout.base, out=tmp / "out"), progress=lambda m: None)
    assert judged.verdict.kind == "pass"
    judged.result.write(tmp / "out")
    return tmp / "out" / "report.json", head


def _environment(monkeypatch, url: str, repository: str = "octo-org/octo-repo") -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("GITHUB_REPOSITORY", repository)
    monkeypatch.setenv("GITHUB_API_URL", url)
    monkeypatch.delenv("GITHUB_EVENT_NAME", raising=False)
    monkeypatch.delenv("GITHUB_EVENT_PATH", raising=False)


@pytest.fixture()
def github(monkeypatch, saved):
    with FakeGitHub(token=TOKEN) as fake:
        _environment(monkeypatch, fake.url, fake.repository)
        fake.add_pull(PR, saved[1], files=["retrieval.yml"])
        yield fake


def _comment(saved: tuple[Path, str], *extra: str) -> int:
    report, head = saved
    return main(["comment", "--report", str(report), "--pr", str(PR), "--head-sha", head, *extra])


def _a_github_problem(capsys, code: int) -> str:
    """Exit 3 with one line on stderr that says GitHub, and no traceback."""
    err = capsys.readouterr().err
    assert code == 3, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err and "internal error" not in err, err
    assert "GitHub" in lines[0] and TOKEN not in err
    return lines[0]


def _labels_as_strings(fake: FakeGitHub) -> dict:
    pull = fake._pull_json(fake.state.pulls[PR])
    pull["labels"] = ["retrieval-gate:accept"]
    return pull


@pytest.mark.parametrize("odd", [[], None, "labels"], ids=["[]", "null", "labels as strings"])
def test_an_odd_pull_request_is_exit_3_not_4(saved, github, capsys, odd):
    github.script_answer(PULL, _labels_as_strings(github) if odd == "labels" else odd, method="GET", times=50)
    line = _a_github_problem(capsys, _comment(saved))
    assert "does not document" in line
    assert github.comments(PR) == []


@pytest.mark.parametrize("odd_id", ["1000001", 1.5, None, True], ids=["a string", "a float", "null", "true"])
def test_a_comment_id_that_is_not_an_integer_is_exit_3_not_4(saved, github, capsys, odd_id):
    made = github.add_comment(PR, comment_marker("main", "current", saved[1], "pass") + "\nearlier")
    listed = github._comment_json(made)
    listed["id"] = odd_id
    github.script_answer(COMMENTS, [listed], method="GET", times=50)
    _a_github_problem(capsys, _comment(saved))
    assert github.comments(PR)[0]["body"].endswith("earlier")  # nothing written over it


def test_an_odd_answer_to_the_post_is_exit_3_not_4(saved, github, capsys):
    github.script_answer(COMMENTS, [], method="POST", status=201)
    _a_github_problem(capsys, _comment(saved))


def test_a_lost_post_answer_with_a_lagging_list_posts_one_comment(saved, github, capsys):
    github.list_lag = 2.5  # real seconds: the command sleeps for real
    github.script_lost_answer(COMMENTS, method="POST")
    assert _comment(saved) == 0, capsys.readouterr().err
    [comment] = github.comments(PR)
    assert parse_marker(comment["body"]).state == "current"
    assert len(github.requests_to("POST", COMMENTS)) == 1


@pytest.mark.parametrize("what", ["headers", "body"])
def test_a_trickling_github_ends_by_max_wait(saved, monkeypatch, capsys, what):
    """--max-wait 2 against a server that trickles every answer a byte at a time (1,000 s each):
    exit 3 within the budget and a margin, the server still sending when the command gave up."""
    server = Trickler(what).start()
    try:
        _environment(monkeypatch, server.url)
        started = time.monotonic()
        code = _comment(saved, "--max-wait", "2")
        took = time.monotonic() - started
        assert server.finished == 0 and (server.sending > 0 or server.dropped > 0)
    finally:
        server.close()
    _a_github_problem(capsys, code)
    assert took < 2 + MARGIN
