"""Wrong-pass routes closed on the way a PR is judged (issue: a verdict that can be trusted).

- a watched file replaced by a symlink is a change (paths are the repository's, not their
  targets), and a symlink that leads out of the repository is refused;
- `run --base REF` reads the yardstick from REF as the Action does: a PR that edits its policy
  cannot pass, and is judged by the base's policy;
- a merge group of several commits is judged against merge_group.base_sha, not HEAD^1.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from gate.cli import main
from tests.test_entrypoint import GOOD, Checkout, _git, _outputs, _payload, run_entrypoint, world  # noqa: F401


def test_a_retrieval_config_replaced_by_a_symlink_is_measured_not_skipped(world):  # noqa: F811
    checkout, fake, tmp = world
    root = checkout.root
    # The base already holds another config file; the PR only turns retrieval.yml into a symlink
    # to it. Matched after resolving, the watch list would see the unchanged target: "skipped".
    _git(root, "checkout", "-q", "-B", "main", checkout.base)
    (root / "retrieval-alt.yml").write_text("ingestion: {parser: v1}\nboost: 3.0\n")
    _git(root, "add", "retrieval-alt.yml")
    _git(root, "commit", "-qm", "an alternative config")
    base = _git(root, "rev-parse", "HEAD")
    _git(root, "checkout", "-q", "-B", "feature", base)
    (root / "retrieval.yml").unlink()
    os.symlink("retrieval-alt.yml", root / "retrieval.yml")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "config is now a symlink")
    head = _git(root, "rev-parse", "HEAD")
    _git(root, "checkout", "-q", "--detach", base)
    _git(root, "merge", "-q", "--no-ff", "-m", "merge", head)
    fake.add_pull(21, head, files=["retrieval.yml"], base_sha=base)
    event = _payload(tmp, "webhook_example_pull_request_synchronize.payload.json", 21, head, base)
    proc, outputs, _ = run_entrypoint(checkout, fake, event, tmp)
    assert _outputs(outputs)["verdict"] != "skipped", proc.stdout[-2000:]
    report = json.loads((root / ".retrieval-gate" / "out" / "report.json").read_text())
    assert {"path": "boost", "old": 1.0, "new": 3.0} in report["config_diff"]


def test_a_symlink_leading_out_of_the_repository_is_refused(world, capsys):  # noqa: F811
    checkout, _, tmp = world
    root = checkout.root
    outside = tmp / "elsewhere.yml"
    outside.write_text("ingestion: {parser: v1}\nboost: 9.0\n")
    (root / "retrieval.yml").unlink()
    os.symlink(outside, root / "retrieval.yml")
    assert main(["run", "--config", str(root / ".retrieval-gate.yml")]) == 2
    err = capsys.readouterr().err.strip()
    assert "key 'retrieval.config'" in err and f"is a symlink to {outside}, outside the repository" in err


def test_run_with_base_reads_the_yardstick_from_the_base_and_flags_goalposts(world, capsys):  # noqa: F811
    checkout, _, tmp = world
    root = checkout.root
    # The PR relaxes its own policy (any unjudged share passes) and changes the config.
    _git(root, "checkout", "-q", "-B", "feature", checkout.base)
    config = root / ".retrieval-gate.yml"
    config.write_text(config.read_text() + "policy:\n  max_unjudged: 1.0\n  max_regression: 0.9\n")
    (root / "retrieval.yml").write_text(GOOD)
    _git(root, "commit", "-qam", "relax the policy")
    out = tmp / "out"
    code = main(["run", "--config", str(config), "--base", checkout.base, "--out", str(out)])
    report = json.loads((out / "report.json").read_text())
    assert report["goalposts"] == [{"path": ".retrieval-gate.yml", "change": "modified"}]
    assert report["verdict"]["reasons"][0]["code"] == "goalposts_changed"
    assert code == 1 and report["verdict"]["kind"] == "fail"
    assert report["yardstick"]["source"] == f"base commit {checkout.base[:12]}"
    assert "goalposts: this change edits the yardstick file .retrieval-gate.yml" in capsys.readouterr().out
    # Without --base there is no base to hold it to: the workspace's policy is used, and said so.
    assert main(["run", "--config", str(config), "--out", str(tmp / "out2")]) in (0, 1, 3)
    assert "goalposts" not in json.loads((tmp / "out2" / "report.json").read_text())


def test_a_merge_group_of_two_commits_is_judged_against_its_base_sha(world):  # noqa: F811
    checkout, fake, tmp = world
    root = checkout.root
    _git(root, "checkout", "-q", "-B", "queue", checkout.base)
    (root / "retrieval.yml").write_text(GOOD)
    _git(root, "commit", "-qam", "the retrieval change")
    (root / "README.md").write_text("docs\n")
    _git(root, "add", "README.md")
    _git(root, "commit", "-qm", "docs on top")
    head = _git(root, "rev-parse", "HEAD")
    event = tmp / "merge_group.json"
    event.write_text(json.dumps({"action": "checks_requested", "merge_group": {
        "head_sha": head, "head_ref": "refs/heads/gh-readonly-queue/main/pr-1-x", "base_sha": checkout.base,
        "base_ref": "refs/heads/main"}, "repository": {"full_name": fake.repository}}))
    env_event = "merge_group"  # (run_entrypoint starts a pull_request event)
    import subprocess
    import sys

    from tests.shared_data import REPO

    output = tmp / "mg_output"
    output.write_text("")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp), "GITHUB_EVENT_NAME": env_event,
           "GITHUB_EVENT_PATH": str(event), "GITHUB_API_URL": fake.url, "GITHUB_REPOSITORY": fake.repository,
           "GITHUB_WORKSPACE": str(root), "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(tmp / "s"),
           "GITHUB_TOKEN": "ghs_s3cr3tT0kenValue1234567890", "INPUT_TOKEN": "ghs_s3cr3tT0kenValue1234567890",
           "INPUT_CONFIG-PATH": ".retrieval-gate.yml", "INPUT_COMMENT-MODE": "update",
           "INPUT_GITHUB-MAX-WAIT": "30", "INPUT_WORKING-DIRECTORY": "."}
    done = subprocess.run([sys.executable, str(REPO / "entrypoint.py")], env=env, capture_output=True, text=True,
                          timeout=300, cwd=root)
    verdict = _outputs(output.read_text())["verdict"]
    assert verdict != "skipped", done.stdout[-2000:]
    report = json.loads((root / ".retrieval-gate" / "out" / "report.json").read_text())
    assert report["event"]["base_sha"] == checkout.base
    assert {"path": "boost", "old": 1.0, "new": 2.0} in report["config_diff"]


def test_a_leak_the_pr_plants_in_the_same_corpus_file_is_new_and_fails(world):  # noqa: F811
    checkout, _, tmp = world
    root = checkout.root
    golden = [json.loads(line) for line in (root / "golden.jsonl").read_text().splitlines()]
    _git(root, "checkout", "-q", "-B", "feature", checkout.base)
    with open(root / "corpus-v1.jsonl", "a") as corpus:  # the file the baseline indexes too
        for i in (2, 5, 8, 11):
            corpus.write(json.dumps({"id": f"faq/planted#q{i}", "text": f"People ask: {golden[i]['text']}?"}) + "\n")
    (root / "retrieval.yml").write_text(GOOD)
    _git(root, "commit", "-qam", "an FAQ page and a retrieval change")
    out = tmp / "out"
    code = main(["run", "--config", str(root / ".retrieval-gate.yml"), "--base", checkout.base, "--out", str(out)])
    report = json.loads((out / "report.json").read_text())
    leakage = report["leakage"]
    planted = sorted(golden[i]["query_id"] for i in (2, 5, 8, 11))
    assert leakage["new"] == planted and leakage["both"] == []
    assert leakage["baseline_corpus"] == f"as of commit {checkout.base[:12]}"
    assert code == 1 and report["verdict"]["reasons"][0]["code"] == "new_leaked_queries"
    assert "faq/planted" in report["verdict"]["reasons"][0]["message"]
