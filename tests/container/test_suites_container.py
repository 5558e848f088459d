"""Two suites in one repository, judged in one job as GitHub runs the Action (issue 38).

The repository has two search surfaces, ``alpha/`` and ``beta/``, each a suite with its own
golden set, search command and runner.inputs, and a suites file at the top that the example
workflow's ``config-path: .retrieval-gate.yml`` names. The gate job is played as written (the
checkout as the runner user, the real image started as the runner starts it) with the action
commenting itself (``comment-mode: update``) and ``commit-status: true``:

1. a PR that touches only alpha's retrieval config: one comment, its table with alpha judged and
   beta skipped, a collapsed section per suite, a status per suite and ``retrieval-gate``, and
   the job's exit code alpha's;
2. a new head of that PR touching both, alpha for the better and beta for the worse: both
   judged, still exactly one current comment (the pass one marked outdated: the verdict
   flipped), ``retrieval-gate`` and the exit code the worst (beta's fail), each suite's status
   its own.

The token (and the runtime's secrets) appear in no log, output, summary, report or comment.
"""

from __future__ import annotations

import json
import re

from gate.publishing.github.sticky_comment import parse_marker
from tests.container.conftest import TOKEN
from tests.container.github_runner import ID_TOKEN, RUNTIME_TOKEN, Runner
from tests.container.team_repo import BAD, GOOD, PullRequest, SuitesRepo
from tests.container.workflows import PlayedStep, gate_job_steps
from tests.publishing.github.payloads import pull_request_event

SECTION = re.compile(r"<details><summary>[^<]*<b>([^<]+)</b></summary>")


def _gate_job(repo: SuitesRepo, runner: Runner, image: str, github, remote, pr: PullRequest) -> tuple[PlayedStep, dict]:
    """The example gate job for ``pr`` (its head just pushed), the action commenting and setting
    statuses itself; the gate step and the suites.json it wrote."""
    github.add_pull(pr.number, pr.head, files=pr.files, base_sha=pr.base)  # GitHub's view after the push
    event = pull_request_event(pr.number, pr.head, pr.base, repository=github.repository)
    steps = gate_job_steps(runner, image, remote.url(f"{repo.name}.git"), event, "pull_request", github,
                           merge_sha=pr.merge, inputs={"comment-mode": "update", "commit-status": "true"})
    gate = next(s for s in steps if s.name == "Run the gate")
    assert gate.outputs.get("report-path") == ".retrieval-gate/out/suites.json", gate.log[-4000:]
    listing = json.loads((runner.workspace / gate.outputs["report-path"]).read_text())
    assert gate.outputs["verdict"] == listing["worst"]["verdict"], gate.log[-4000:]
    return gate, listing


def _verdicts(listing: dict) -> dict[str, tuple[str, int]]:
    return {s["suite"]: (s["verdict"], s["exit_code"]) for s in listing["suites"]}


def _table(body: str) -> list[tuple[str, str]]:
    """The verdict table on top (the sections below have tables of their own): (suite, verdict
    cell) per row, in order."""
    lines = body.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| suite | verdict |"))
    rows = []
    for line in lines[start + 2:]:  # past the header and its |---| line
        if not line.startswith("| "):
            break
        suite, verdict = line.split("|")[1:3]
        rows.append((suite.strip(), verdict.strip()))
    return rows


def _statuses(github, sha: str) -> dict[str, str]:
    return {s["context"]: s["state"] for s in github.state.statuses if s["sha"] == sha}


def _assert_no_secret(runner: Runner, gate: PlayedStep, github, number: int) -> None:
    """No secret in the gate's log (masking the token is its one mention), outputs, job summary,
    written files, comments or statuses."""
    places = {"log": gate.log.replace(f"::add-mask::{TOKEN}", ""), "outputs": json.dumps(gate.outputs),
              "summary": gate.summary, "comments": json.dumps(github.comments(number)),
              "statuses": json.dumps(github.state.statuses)}
    out = runner.workspace / ".retrieval-gate" / "out"
    places.update({str(p.relative_to(out)): p.read_text(errors="replace") for p in out.rglob("*") if p.is_file()})
    assert "alpha/report.json" in places and "beta/report.json" in places and "comment.md" in places, sorted(places)
    for secret in (TOKEN, RUNTIME_TOKEN, ID_TOKEN):
        leaked = sorted(name for name, text in places.items() if secret in text)
        assert leaked == [], (secret[:8], leaked)


def test_one_comment_for_two_suites_the_touched_one_judged_then_both_and_the_worst_is_the_status(
        tmp_path, image, github, remote):
    repo = SuitesRepo(tmp_path / "dev", remote.root, github.repository)
    runner = Runner(tmp_path / "runner", github.repository)

    # 1. Only alpha's retrieval config: alpha judged (a pass), beta skipped by its own watch rules.
    first = repo.pull_request(51, {"alpha/retrieval.yml": GOOD})
    gate, listing = _gate_job(repo, runner, image, github, remote, first)
    assert _verdicts(listing) == {"alpha": ("pass", 0), "beta": ("skipped", 0)}, gate.log[-4000:]
    assert (gate.returncode, gate.outputs["verdict"]) == (0, "pass"), gate.log[-4000:]
    assert "[alpha] candidate: running" in gate.log and "[beta] candidate" not in gate.log  # nothing of beta ran
    alpha = json.loads((runner.workspace / ".retrieval-gate/out/alpha/report.json").read_text())
    assert {"path": "boost", "old": 1.0, "new": 2.0} in alpha["config_diff"], alpha["config_diff"]
    assert alpha["baseline"]["resolution"] == "reused", alpha["baseline"]  # alpha's own archive
    [comment] = github.comments(51)
    marker = parse_marker(comment["body"])
    assert (marker.suite, marker.state, marker.head, marker.verdict) == (
        "suites|.retrieval-gate.yml", "current", first.head, "pass"), marker
    table = _table(comment["body"])
    assert [suite for suite, _ in table] == ["alpha", "beta"], table  # the worst first, skipped last
    assert "pass" in table[0][1] and "skipped" in table[1][1], table
    assert SECTION.findall(comment["body"]) == ["alpha", "beta"], comment["body"][:3000]
    assert comment["body"].count("<details>") == comment["body"].count("</details>") >= 2
    assert _table(gate.summary) == table, gate.summary[:3000]
    assert _statuses(github, first.head) == {"retrieval-gate/alpha": "success", "retrieval-gate/beta": "success",
                                             "retrieval-gate": "success"}
    _assert_no_secret(runner, gate, github, 51)

    # 2. A new head touching both: alpha still better, beta worse. Both judged; the worst decides.
    second = repo.pull_request(51, {"alpha/retrieval.yml": GOOD, "beta/retrieval.yml": BAD})
    gate, listing = _gate_job(repo, runner, image, github, remote, second)
    assert _verdicts(listing) == {"alpha": ("pass", 0), "beta": ("fail", 1)}, gate.log[-4000:]
    assert listing["worst"]["suite"] == "beta"
    assert (gate.returncode, gate.outputs["verdict"]) == (1, "fail"), gate.log[-4000:]
    assert "[alpha] candidate: running" in gate.log and "[beta] candidate: running" in gate.log
    comments = github.comments(51)
    markers = [parse_marker(c["body"]) for c in comments]
    # The worst verdict flipped (pass -> fail): the older comment is kept, marked outdated.
    assert [(m.state, m.head, m.verdict) for m in markers] == [("outdated", first.head, "pass"),
                                                              ("current", second.head, "fail")], markers
    body = comments[-1]["body"]
    table = _table(body)
    assert [suite for suite, _ in table] == ["beta", "alpha"], table
    assert "fail" in table[0][1] and "pass" in table[1][1], table
    assert SECTION.findall(body) == ["beta", "alpha"], body[:3000]
    assert "skipped" not in " ".join(cell for _, cell in table)
    assert _statuses(github, second.head) == {"retrieval-gate/alpha": "success", "retrieval-gate/beta": "failure",
                                              "retrieval-gate": "failure"}
    _assert_no_secret(runner, gate, github, 51)
