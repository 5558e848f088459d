"""The Action with a suites file (config-path names it): every suite judged in one job, ONE
sticky comment with the table, a status per suite plus `retrieval-gate` for the worst, and the
worst suite's exit code - against a fake GitHub on 127.0.0.1."""

from __future__ import annotations

import json
from types import SimpleNamespace

from tests.publishing.github.fake_github import FakeGitHub
from tests.support.action_world import TOKEN, _outputs, _payload, run_entrypoint
from tests.support.suites_world import commit, git, suites_repo, touch_alpha, touch_beta


def _push(fake, checkout, tmp, number: int, base: str):
    head = git(checkout.root, "rev-parse", "HEAD")
    changed = sorted(git(checkout.root, "diff", "--name-only", base, "HEAD").split())
    if number in fake.state.pulls:
        fake.push(number, head)
    else:
        fake.add_pull(number, head, files=changed, base_sha=base)
    event = _payload(tmp, "webhook_example_pull_request_synchronize.payload.json", number, head, base)
    proc, outputs, summary = run_entrypoint(checkout, fake, event, tmp, commit_status="true")
    return head, proc, _outputs(outputs), summary


def test_one_comment_one_status_per_suite_and_the_worst(tmp_path):
    checkout = SimpleNamespace(root=tmp_path / "repo")
    base = suites_repo(checkout.root)
    touch_beta(checkout.root)
    commit(checkout.root, "beta only")
    with FakeGitHub(token=TOKEN) as fake:
        head, proc, outputs, summary = _push(fake, checkout, tmp_path, 5, base)
        assert proc.returncode == 0, proc.stdout[-3000:]
        assert outputs["verdict"] == "pass" and outputs["report-path"] == ".retrieval-gate/out/suites.json"
        listing = json.loads((checkout.root / ".retrieval-gate/out/suites.json").read_text())
        assert {s["suite"]: s["verdict"] for s in listing["suites"]} == {"alpha": "skipped", "beta": "pass"}
        comments = fake.comments(5)
        assert len(comments) == 1 and "alpha" in comments[0]["body"] and "beta" in comments[0]["body"]
        assert "alpha" in summary and "beta" in summary
        states = {s["context"]: s["state"] for s in fake.state.statuses if s["sha"] == head}
        assert states == {"retrieval-gate/alpha": "success", "retrieval-gate/beta": "success",
                          "retrieval-gate": "success"}

        touch_alpha(checkout.root)  # a new head touching both: alpha fails, the worst is the status
        commit(checkout.root, "alpha too")
        head, proc, outputs, _ = _push(fake, checkout, tmp_path, 5, base)
        assert proc.returncode == 1 and outputs["verdict"] == "fail"
        comments = fake.comments(5)
        assert len([c for c in comments if "outdated" not in c["body"].lower()]) == 1
        states = {s["context"]: s["state"] for s in fake.state.statuses if s["sha"] == head}
        assert states == {"retrieval-gate/alpha": "failure", "retrieval-gate/beta": "success",
                          "retrieval-gate": "failure"}
        logged = proc.stdout.replace(f"::add-mask::{TOKEN}", "")  # masking it is the one mention
        assert TOKEN not in logged and TOKEN not in (checkout.root / ".retrieval-gate/out/comment.md").read_text()
