"""entrypoint.py as the runner starts it: a subprocess with a simulated runner environment,
a real git checkout (merge commit on top of the base, as actions/checkout makes it), the real
event payloads from ../shared/github, and a local server that plays GitHub."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import types

import pytest

from gate.publishing.github.sticky_comment import parse_marker
from tests.publishing.github.fake_github import FakeGitHub
from tests.publishing.github.test_deadline import MARGIN, Trickler
from tests.shared_data import REPO
from tests.support.action_world import GOOD, LEAKY, TOKEN, Checkout, _outputs, _payload, run_entrypoint


def _bodies(fake: FakeGitHub, number: int) -> list[str]:
    return [c["body"] for c in fake.comments(number)]


def _no_token_anywhere(proc, outputs: str, summary: str, checkout: Checkout) -> None:
    # Apart from the ::add-mask:: command itself (the runner consumes it; it never reaches the log).
    stdout = "\n".join(line for line in proc.stdout.splitlines() if line != f"::add-mask::{TOKEN}")
    for text in (stdout, proc.stderr, outputs, summary):
        assert TOKEN not in text
    for path in (checkout.root / ".retrieval-gate" / "out").iterdir():
        assert TOKEN not in path.read_text(errors="replace")


def test_first_run_creates_one_comment_and_a_rerun_updates_it(world):
    checkout, fake, tmp = world
    head, _ = checkout.pr(GOOD)
    fake.add_pull(5, head, files=["retrieval.yml"], base_sha=checkout.base)
    event = _payload(tmp, "webhook_example_pull_request_synchronize.payload.json", 5, head, checkout.base)
    proc, outputs, summary = run_entrypoint(checkout, fake, event, tmp)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    values = _outputs(outputs)
    assert values["verdict"] == "pass" and values["report-path"].endswith("report.json")
    assert values["comment-url"] and values["delta"] != ""
    assert len(fake.comments(5)) == 1
    first = fake.comments(5)[0]
    assert "retrieval-gate" in first["body"].splitlines()[0] or "pass" in first["body"][:300]
    assert "::group::" in proc.stdout
    # The token is masked once: the runner consumes that command and never shows the line.
    assert proc.stdout.splitlines().count(f"::add-mask::{TOKEN}") == 1
    assert summary.strip()
    _no_token_anywhere(proc, outputs, summary, checkout)

    proc, outputs, summary = run_entrypoint(checkout, fake, event, tmp)
    assert proc.returncode == 0
    assert len(fake.comments(5)) == 1 and fake.comments(5)[0]["id"] == first["id"]
    assert fake.requests_to("PATCH", "/repos/{owner}/{repo}/issues/comments/{comment_id}")
    fake.assert_valid()

    # The fork-safe workflow's comment job renders from report.json alone: its comment quotes the
    # same reproduce command, --base included (it was the default command before report.json kept it).
    def reproduce(body: str) -> str:
        return body[body.index("#### Reproduce"):].split("<details>")[0]

    report_path = checkout.root / ".retrieval-gate" / "out" / "report.json"
    assert json.loads(report_path.read_text())["reproduce_command"].endswith(f" --base {checkout.base}")
    comment_env = {"GITHUB_TOKEN": TOKEN, "GITHUB_REPOSITORY": fake.repository, "GITHUB_API_URL": fake.url}
    job = subprocess.run([sys.executable, "-m", "gate", "comment", "--report", str(report_path), "--pr", "5",
                          "--head-sha", head], env={**os.environ, **comment_env}, capture_output=True, text=True,
                         timeout=120)
    assert job.returncode == 0, job.stderr
    [again] = fake.comments(5)
    assert reproduce(again["body"]) == reproduce(first["body"])
    assert f"retrieval-gate run --config .retrieval-gate.yml --base {checkout.base}" in reproduce(again["body"])


def test_a_verdict_flip_posts_a_new_comment_and_marks_the_old_outdated(world):
    checkout, fake, tmp = world
    head, _ = checkout.pr(GOOD)
    fake.add_pull(6, head, files=["retrieval.yml"], base_sha=checkout.base)
    event = _payload(tmp, "webhook_example_pull_request_synchronize.payload.json", 6, head, checkout.base)
    assert run_entrypoint(checkout, fake, event, tmp)[0].returncode == 0
    head2, _ = checkout.pr(LEAKY)
    fake.push(6, head2)
    event = _payload(tmp, "webhook_example_pull_request_synchronize.payload.json", 6, head2, checkout.base)
    proc, outputs, summary = run_entrypoint(checkout, fake, event, tmp)
    assert proc.returncode == 1, proc.stdout
    assert _outputs(outputs)["verdict"] == "fail"
    comments = fake.comments(6)
    assert len(comments) == 2
    assert "state=outdated" in comments[0]["body"] and "state=current" in comments[1]["body"]
    assert "::error" in proc.stdout
    # The hostile query text (leaked, so it is listed) renders harmlessly.
    body = comments[1]["body"]
    assert "<img" not in body and "@octocat" not in body
    assert body.count("<details") == body.count("</details>")
    _no_token_anywhere(proc, outputs, summary, checkout)


def test_a_429_with_retry_after_is_retried(world):
    checkout, fake, tmp = world
    head, _ = checkout.pr(GOOD)
    fake.add_pull(7, head, files=["retrieval.yml"], base_sha=checkout.base)
    fake.script_rate_limit("/repos/{owner}/{repo}/issues/{issue_number}/comments", method="POST", retry_after=1)
    event = _payload(tmp, "webhook_example_pull_request_synchronize.payload.json", 7, head, checkout.base)
    proc, outputs, _ = run_entrypoint(checkout, fake, event, tmp)
    assert proc.returncode == 0, proc.stdout
    posts = fake.requests_to("POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments")
    assert [r.status for r in posts] == [429, 201]
    assert len(fake.comments(7)) == 1


def test_a_fork_pr_with_a_read_only_token_still_decides(world):
    checkout, fake, tmp = world
    head, _ = checkout.pr(LEAKY)
    fake.add_pull(8, head, files=["retrieval.yml"], base_sha=checkout.base, fork=True)
    fake.read_only = True
    event = _payload(tmp, "webhook_example_pull_request_synchronize.FORK-SYNTHETIC.json", 8, head, checkout.base)
    proc, outputs, summary = run_entrypoint(checkout, fake, event, tmp)
    assert proc.returncode == 1  # the verdict (fail), unchanged by the 403
    assert _outputs(outputs)["verdict"] == "fail"
    assert "fail" in summary
    assert "workflow_run" in proc.stdout  # how to enable comments
    posts = fake.requests_to("POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments")
    assert len(posts) == 1  # a 403 integration error is not retried
    assert (checkout.root / ".retrieval-gate" / "out" / "report.json").exists()


def test_a_run_for_an_older_head_does_not_overwrite(world):
    checkout, fake, tmp = world
    head, _ = checkout.pr(GOOD)
    fake.add_pull(9, "f" * 40, files=["retrieval.yml"], base_sha=checkout.base)  # a newer push exists
    event = _payload(tmp, "webhook_example_pull_request_synchronize.payload.json", 9, head, checkout.base)
    proc, _, _ = run_entrypoint(checkout, fake, event, tmp)
    assert proc.returncode == 0
    assert fake.comments(9) == []
    assert "skipped_stale" in proc.stdout


def test_the_accept_label_with_a_justification_turns_a_fail_into_accepted(world):
    checkout, fake, tmp = world
    head, _ = checkout.pr(LEAKY)
    body = "Ships the parser fix.\nRetrieval-Gate-Justification: the FAQ page is excluded in the next snapshot\n"
    fake.add_pull(10, head, files=["retrieval.yml"], base_sha=checkout.base, labels=["retrieval-gate:accept"],
                  body=body)
    event = _payload(tmp, "webhook_example_pull_request_synchronize.payload.json", 10, head, checkout.base,
                     labels=["retrieval-gate:accept"], body=body)
    proc, outputs, _ = run_entrypoint(checkout, fake, event, tmp)
    assert proc.returncode == 0, proc.stdout
    assert _outputs(outputs)["verdict"] == "accepted"
    report = json.loads((checkout.root / ".retrieval-gate" / "out" / "report.json").read_text())
    assert report["accepted"]["justification"] == "the FAQ page is excluded in the next snapshot"
    assert "the FAQ page is excluded" in fake.comments(10)[0]["body"]


def test_a_pr_that_touches_nothing_watched_is_skipped_quickly(tmp_path):
    checkout = Checkout(tmp_path / "repo", runner_inputs="[retrieval.yml, search/*.py]")
    with FakeGitHub(token=TOKEN) as fake:
        head, _ = checkout.pr(open(checkout.root / "retrieval.yml").read(), extra={"README.md": "docs only\n"})
        fake.add_pull(11, head, files=["README.md"], base_sha=checkout.base)
        event = _payload(tmp_path, "webhook_example_pull_request_synchronize.payload.json", 11, head, checkout.base)
        proc, outputs, _ = run_entrypoint(checkout, fake, event, tmp_path)
        assert proc.returncode == 0, proc.stdout
        assert _outputs(outputs)["verdict"] == "skipped"
        assert fake.comments(11) == []  # nothing to say: no comment (the job's status is the check)
        report_path = checkout.root / ".retrieval-gate" / "out" / "report.json"
        report = json.loads(report_path.read_text())
        assert report["verdict"]["reasons"][0]["message"].endswith("(1 file changed: README.md)")
        # The fork flow's comment job reads the same report: it is a run report it accepts, and a
        # skipped verdict posts nothing there either (a green job, no comment).
        comment_env = {"GITHUB_TOKEN": TOKEN, "GITHUB_REPOSITORY": fake.repository, "GITHUB_API_URL": fake.url}
        job = subprocess.run([sys.executable, "-m", "gate", "comment", "--report", str(report_path), "--pr", "11",
                              "--head-sha", head, "--suite", report["suite"]],
                             env={**os.environ, **comment_env}, capture_output=True, text=True, timeout=120)
        assert job.returncode == 0, job.stderr
        assert fake.comments(11) == [], job.stdout
        # A change to the declared code is never skipped, its retrieval config untouched.
        (checkout.root / "search").mkdir(exist_ok=True)
        head, _ = checkout.pr(open(checkout.root / "retrieval.yml").read(), extra={"search/rank.py": "W = 2\n"})
        fake.add_pull(12, head, files=["search/rank.py"], base_sha=checkout.base)
        event = _payload(tmp_path, "webhook_example_pull_request_synchronize.payload.json", 12, head, checkout.base)
        proc, outputs, _ = run_entrypoint(checkout, fake, event, tmp_path)
        assert _outputs(outputs)["verdict"] != "skipped", proc.stdout


def test_without_runner_inputs_every_changed_file_is_code_under_test(world):
    """A command runner's runs are keyed on the whole working tree when runner.inputs is not
    declared: a PR that changes any file (here only search code) is judged, never skipped."""
    checkout, fake, tmp = world
    (checkout.root / "search").mkdir(exist_ok=True)
    head, _ = checkout.pr(open(checkout.root / "retrieval.yml").read(), extra={"search/rank.py": "W = 2\n"})
    fake.add_pull(11, head, files=["search/rank.py"], base_sha=checkout.base)
    event = _payload(tmp, "webhook_example_pull_request_synchronize.payload.json", 11, head, checkout.base)
    proc, outputs, _ = run_entrypoint(checkout, fake, event, tmp)
    assert _outputs(outputs)["verdict"] != "skipped", proc.stdout
    report = json.loads((checkout.root / ".retrieval-gate" / "out" / "report.json").read_text())
    assert any("runner.inputs" in w for w in report["warnings"]), report["warnings"]
    # The search command here lives outside the repository: the change moves no ranking, and an
    # unchanged run is a pass (0 movers alone would be inconclusive), not a red job.
    assert proc.returncode == 0 and report["verdict"]["reasons"][0]["code"] == "unchanged", proc.stdout[-2000:]


def test_a_pr_that_edits_its_yardstick_cannot_pass(world):
    checkout, fake, tmp = world
    qrels = (checkout.root / "qrels.txt").read_text()
    head, _ = checkout.pr(GOOD, extra={"qrels.txt": qrels.replace(" 0\n", " 1\n", 3)})
    fake.add_pull(12, head, files=["retrieval.yml", "qrels.txt"], base_sha=checkout.base)
    event = _payload(tmp, "webhook_example_pull_request_synchronize.payload.json", 12, head, checkout.base)
    proc, outputs, _ = run_entrypoint(checkout, fake, event, tmp)
    assert proc.returncode == 1
    report = json.loads((checkout.root / ".retrieval-gate" / "out" / "report.json").read_text())
    assert report["goalposts"] == [{"path": "qrels.txt", "change": "modified"}]
    assert report["verdict"]["reasons"][0]["code"] == "goalposts_changed"
    # The yardstick came from the base commit: the PR's relabelled qrels were not used.
    assert report["inputs"]["qrels"]["sha256"] != __import__("hashlib").sha256(b"").hexdigest()
    assert report["yardstick"]["source"].startswith("base commit")


def test_missing_required_input_is_an_error_annotation_and_exit_2(world):
    checkout, fake, tmp = world
    event = _payload(tmp, "webhook_example_pull_request_synchronize.payload.json", 13, "a" * 40, checkout.base)
    env = {"PATH": os.environ["PATH"], "GITHUB_EVENT_PATH": str(event), "GITHUB_WORKSPACE": str(checkout.root)}
    proc = subprocess.run([sys.executable, str(REPO / "entrypoint.py")], env=env, capture_output=True, text=True)
    assert proc.returncode == 2
    assert "::error" in proc.stdout and "token" in proc.stdout


def test_a_github_outage_while_commenting_leaves_the_verdict_and_the_outputs(world):
    """502 on every comment call (after the client's retries): a warning, the verdict's exit
    code, every output and the job summary written."""
    checkout, fake, tmp = world
    head, _ = checkout.pr(GOOD)
    fake.add_pull(41, head, files=["retrieval.yml"], base_sha=checkout.base)
    fake.script_error("/repos/{owner}/{repo}/issues/{issue_number}/comments", 502, times=50)
    event = _payload(tmp, "webhook_example_pull_request_synchronize.payload.json", 41, head, checkout.base)
    proc, outputs, summary = run_entrypoint(checkout, fake, event, tmp, github_max_wait="5")
    values = _outputs(outputs)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert values["verdict"] == "pass" and values["delta"] and values["comment-url"] == ""
    assert values["report-path"] == ".retrieval-gate/out/report.json"
    assert (checkout.root / values["report-path"]).is_file()
    assert "::warning title=retrieval-gate comment::the PR comment was not written" in proc.stdout
    assert "pass" in summary.lower() and fake.comments(41) == []


def test_a_crash_leaves_its_traceback_in_the_output_folder_and_the_summary(world):
    checkout, fake, tmp = world
    head, _ = checkout.pr(GOOD)
    fake.add_pull(42, head, files=["retrieval.yml"], base_sha=checkout.base)
    event = _payload(tmp, "webhook_example_pull_request_synchronize.payload.json", 42, head, checkout.base)
    # A bug planted in the gate: the comment renderer raises.
    plant = tmp / "plant"
    plant.mkdir()
    (plant / "sitecustomize.py").write_text(
        "import gate.rendering.comment\n"
        "def broken(*a, **k):\n    raise RuntimeError('planted bug ' + 'ghs_' + 'x' * 4)\n"
        "gate.rendering.comment.render_comment = broken\n")
    proc, _, summary_text = run_entrypoint(checkout, fake, event, tmp, pythonpath=str(plant))
    assert proc.returncode == 4, proc.stdout[-2000:]
    traceback_file = checkout.root / ".retrieval-gate" / "out" / "crash-traceback.txt"
    assert "planted bug" in traceback_file.read_text()
    assert "internal error (traceback saved to .retrieval-gate/out/crash-traceback.txt)" in proc.stdout
    assert "internal error" in summary_text and "crash-traceback.txt" in summary_text


def test_a_pr_that_stops_touching_retrieval_gets_its_old_comment_corrected(tmp_path):
    """Head 1 changes the retrieval config (judged, commented); head 2 reverts it and edits only
    the README (skipped): the comment says skipped, not the old verdict; no second comment."""
    checkout = Checkout(tmp_path / "repo", runner_inputs="[retrieval.yml]")
    original = (checkout.root / "retrieval.yml").read_text()
    with FakeGitHub(token=TOKEN) as fake:
        head1, _ = checkout.pr(GOOD)
        fake.add_pull(13, head1, files=["retrieval.yml"], base_sha=checkout.base)
        event = _payload(tmp_path, "webhook_example_pull_request_synchronize.payload.json", 13, head1, checkout.base)
        proc, outputs, _ = run_entrypoint(checkout, fake, event, tmp_path)
        assert _outputs(outputs)["verdict"] == "pass", proc.stdout[-2000:]
        assert len(fake.comments(13)) == 1
        head2, _ = checkout.pr(original, extra={"README.md": "docs only\n"})
        fake.push(13, head2)
        fake.state.pulls[13]["files"] = [{"filename": "README.md"}]
        event = _payload(tmp_path, "webhook_example_pull_request_synchronize.payload.json", 13, head2, checkout.base)
        proc, outputs, _ = run_entrypoint(checkout, fake, event, tmp_path)
        assert _outputs(outputs)["verdict"] == "skipped", proc.stdout[-2000:]
        [comment] = fake.comments(13)
        assert "skipped" in comment["body"].split("\n", 2)[1].lower()
        assert parse_marker(comment["body"]).state == "outdated"  # the old verdict stands no more


def test_a_pull_request_without_its_payload_is_bad_input_not_judged_against_head_1(world):
    """GITHUB_EVENT_PATH naming no file (or a folder): one line, exit 2. Read as an empty
    payload, a checkout of the PR's head would be judged against its own previous commit."""
    checkout, fake, tmp = world
    head, _ = checkout.pr(GOOD)
    fake.add_pull(50, head, files=["retrieval.yml"], base_sha=checkout.base)
    for event in (tmp / "no-such-event.json", tmp):
        proc, outputs, _ = run_entrypoint(checkout, fake, event, tmp)
        assert proc.returncode == 2, proc.stdout[-2000:]
        assert "the event payload (GITHUB_EVENT_PATH) is not a file" in proc.stdout
        assert fake.comments(50) == []


# --------------------------------------------------------------------------- GitHub's faults: never exit 4

PULL = "/repos/{owner}/{repo}/pulls/{pull_number}"
COMMENTS = "/repos/{owner}/{repo}/issues/{issue_number}/comments"


def _verdict_stands(proc, outputs: str, checkout: Checkout) -> dict[str, str]:
    """The verdict's exit code (GOOD passes), every output, no crash."""
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "internal error" not in proc.stdout
    assert not (checkout.root / ".retrieval-gate" / "out" / "crash-traceback.txt").exists()
    values = _outputs(outputs)
    assert values["verdict"] == "pass" and values["delta"]
    assert values["report-path"] == ".retrieval-gate/out/report.json"
    return values


@pytest.mark.parametrize("odd", [[], None, "labels"], ids=["[]", "null", "labels as strings"])
def test_an_odd_pull_request_answer_is_a_warning_not_a_crash(world, odd):
    """GET /pulls/{n} answering [] or null, or labels as plain strings (the issue's exit 4 at
    action.py's labels): one warning line, the event's labels, the verdict and its outputs."""
    checkout, fake, tmp = world
    head, _ = checkout.pr(GOOD)
    fake.add_pull(43, head, files=["retrieval.yml"], base_sha=checkout.base)
    if odd == "labels":
        odd = fake._pull_json(fake.state.pulls[43])
        odd["labels"] = ["retrieval-gate:accept"]
    fake.script_answer(PULL, odd, method="GET", times=50)
    event = _payload(tmp, "webhook_example_pull_request_synchronize.payload.json", 43, head, checkout.base)
    proc, outputs, summary = run_entrypoint(checkout, fake, event, tmp)
    values = _verdict_stands(proc, outputs, checkout)
    warnings = [line for line in proc.stdout.splitlines() if "current labels and body were not read" in line]
    assert len(warnings) == 1 and warnings[0].startswith("::warning") and "does not document" in warnings[0]
    assert values["comment-url"] == "" and fake.comments(43) == []  # the comment, too, needs the PR's head
    assert "pass" in summary.lower()


def test_a_lost_comment_answer_and_a_lagging_list_leave_one_comment(world):
    checkout, fake, tmp = world
    head, _ = checkout.pr(GOOD)
    fake.add_pull(44, head, files=["retrieval.yml"], base_sha=checkout.base)
    fake.list_lag = 2.5
    fake.script_lost_answer(COMMENTS, method="POST")
    event = _payload(tmp, "webhook_example_pull_request_synchronize.payload.json", 44, head, checkout.base)
    proc, outputs, _ = run_entrypoint(checkout, fake, event, tmp)
    values = _verdict_stands(proc, outputs, checkout)
    [comment] = fake.comments(44)
    assert parse_marker(comment["body"]).state == "current" and values["comment-url"].endswith(str(comment["id"]))


def test_a_trickling_github_holds_the_action_no_longer_than_its_budget(world):
    """Every answer trickles a byte every 50 ms (1,000 s an answer): the gate decides, and the
    seconds the Action gave GitHub (each connection, open to closed) stay under github-max-wait
    and a margin, the server still sending when the Action hung up."""
    checkout, fake, tmp = world
    head, _ = checkout.pr(GOOD)
    event = _payload(tmp, "webhook_example_pull_request_synchronize.payload.json", 45, head, checkout.base)
    server = Trickler("headers").start()
    try:
        api = types.SimpleNamespace(url=server.url, repository=fake.repository)  # GitHub, as run_entrypoint needs it
        proc, outputs, _ = run_entrypoint(checkout, api, event, tmp, github_max_wait="5")
        for _ in range(200):  # the server notices the hang-up at its next byte
            if server.sending == 0:
                break
            time.sleep(0.05)
        assert server.connections >= 1 and server.finished == 0 and server.dropped == server.connections
        assert sum(server.held_for) < 5 + MARGIN, server.held_for
    finally:
        server.close()
    _verdict_stands(proc, outputs, checkout)
    assert "::warning title=retrieval-gate comment::the PR comment was not written" in proc.stdout
