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

import pytest

from gate.cli import main
from tests.support import bounded
from tests.support.action_world import GOOD, _git, _outputs, _payload, run_entrypoint


def test_a_retrieval_config_replaced_by_a_symlink_is_measured_not_skipped(world):
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


def test_a_symlink_leading_out_of_the_repository_is_refused(world, capsys):
    checkout, _, tmp = world
    root = checkout.root
    outside = tmp / "elsewhere.yml"
    outside.write_text("ingestion: {parser: v1}\nboost: 9.0\n")
    (root / "retrieval.yml").unlink()
    os.symlink(outside, root / "retrieval.yml")
    assert main(["run", "--config", str(root / ".retrieval-gate.yml")]) == 2
    err = capsys.readouterr().err.strip()
    assert "key 'retrieval.config'" in err and f"is a symlink to {outside}, outside the repository" in err


def test_run_with_base_reads_the_yardstick_from_the_base_and_flags_goalposts(world, capsys):
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


def _start(root: Path, fake, tmp: Path, event_name: str, event: Path):
    """entrypoint.py started as the runner starts it, for any event (run_entrypoint: pull_request)."""
    import sys

    from tests.shared_data import REPO

    output = tmp / "event_output"
    output.write_text("")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp), "GITHUB_EVENT_NAME": event_name,
           "GITHUB_EVENT_PATH": str(event), "GITHUB_API_URL": fake.url, "GITHUB_REPOSITORY": fake.repository,
           "GITHUB_WORKSPACE": str(root), "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(tmp / "s"),
           # No github.com from tests: the repository's own address refuses at once (the gate
           # then fetches a base commit by its sha from origin, without the token).
           "GITHUB_SERVER_URL": "http://127.0.0.1:9",
           "GITHUB_TOKEN": "ghs_s3cr3tT0kenValue1234567890", "INPUT_TOKEN": "ghs_s3cr3tT0kenValue1234567890",
           "INPUT_CONFIG-PATH": ".retrieval-gate.yml", "INPUT_COMMENT-MODE": "update",
           "INPUT_GITHUB-MAX-WAIT": "600", "INPUT_WORKING-DIRECTORY": "."}
    done = bounded.run([sys.executable, str(REPO / "entrypoint.py")], env=env, cpu_timeout=300, cwd=root)
    return done, output.read_text()


def _merge_group(tmp: Path, fake, head: str, base) -> Path:
    event = tmp / "merge_group.json"
    event.write_text(json.dumps({"action": "checks_requested", "merge_group": {
        "head_sha": head, "head_ref": "refs/heads/gh-readonly-queue/main/pr-1-x", "base_sha": base,
        "base_ref": "refs/heads/main"}, "repository": {"full_name": fake.repository}}))
    return event


def test_a_merge_group_of_two_commits_is_judged_against_its_base_sha(world):
    checkout, fake, tmp = world
    root = checkout.root
    _git(root, "checkout", "-q", "-B", "queue", checkout.base)
    (root / "retrieval.yml").write_text(GOOD)
    _git(root, "commit", "-qam", "the retrieval change")
    (root / "README.md").write_text("docs\n")
    _git(root, "add", "README.md")
    _git(root, "commit", "-qm", "docs on top")
    head = _git(root, "rev-parse", "HEAD")
    event = _merge_group(tmp, fake, head, checkout.base)
    done, output = _start(root, fake, tmp, "merge_group", event)
    verdict = _outputs(output)["verdict"]
    assert verdict != "skipped", done.stdout[-2000:]
    report = json.loads((root / ".retrieval-gate" / "out" / "report.json").read_text())
    assert report["event"]["base_sha"] == checkout.base
    assert {"path": "boost", "old": 1.0, "new": 2.0} in report["config_diff"]


def test_a_leak_the_pr_plants_in_the_same_corpus_file_is_new_and_fails(world):
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


def _symlinked_base(checkout, names: dict[str, str]) -> str:
    """A base commit where each file of ``names`` is a symlink to the value (a file in the repo)."""
    root = checkout.root
    _git(root, "checkout", "-q", "-B", "main", checkout.base)
    for link, target in names.items():
        (root / target).parent.mkdir(parents=True, exist_ok=True)
        (root / target).write_bytes((root / link).read_bytes())
        (root / link).unlink()
        os.symlink(os.path.relpath(root / target, (root / link).parent), root / link)
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "files are symlinks")
    return _git(root, "rev-parse", "HEAD")


def _merge(checkout, base: str, edit) -> str:
    root = checkout.root
    _git(root, "checkout", "-q", "-B", "feature", base)
    edit(root)
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "pr")
    head = _git(root, "rev-parse", "HEAD")
    _git(root, "checkout", "-q", "--detach", base)
    _git(root, "merge", "-q", "--no-ff", "-m", "merge", head)
    return head


def test_an_edit_to_what_a_watched_symlink_points_at_is_judged(world):
    """retrieval.yml -> configs/v1.yml; the PR edits configs/v1.yml only. The diff never names
    retrieval.yml, yet the config the runs read changed: judged, not skipped."""
    checkout, fake, tmp = world
    base = _symlinked_base(checkout, {"retrieval.yml": "configs/v1.yml"})
    head = _merge(checkout, base, lambda root: (root / "configs" / "v1.yml").write_text(GOOD))
    fake.add_pull(31, head, files=["configs/v1.yml"], base_sha=base)
    event = _payload(tmp, "webhook_example_pull_request_synchronize.payload.json", 31, head, base)
    proc, outputs, _ = run_entrypoint(checkout, fake, event, tmp)
    assert _outputs(outputs)["verdict"] != "skipped", proc.stdout[-2000:]
    report = json.loads((checkout.root / ".retrieval-gate" / "out" / "report.json").read_text())
    assert report["config_diff"], report["config_diff"]


def test_yardstick_files_that_are_symlinks_inside_the_repository_are_followed_at_the_base(world):
    """The gate config, the qrels and the golden queries are symlinks in the base commit: their
    base versions are the files they point at (not the link text), and an edit of a target is a
    goalpost change."""
    checkout, fake, tmp = world
    base = _symlinked_base(checkout, {".retrieval-gate.yml": "ci/gate.yml", "qrels.txt": "eval/qrels.txt",
                                      "golden.jsonl": "eval/golden.jsonl"})
    head = _merge(checkout, base, lambda root: (root / "retrieval.yml").write_text(GOOD))
    fake.add_pull(32, head, files=["retrieval.yml"], base_sha=base)
    event = _payload(tmp, "webhook_example_pull_request_synchronize.payload.json", 32, head, base)
    proc, outputs, _ = run_entrypoint(checkout, fake, event, tmp)
    assert proc.returncode in (0, 1, 3), proc.stdout[-3000:]  # a verdict, not bad input
    report = json.loads((checkout.root / ".retrieval-gate" / "out" / "report.json").read_text())
    assert report["yardstick"]["source"] == f"base commit {base[:12]}"
    assert report["goalposts"] == []
    # Now the PR relabels the qrels through their target: a goalpost change.
    qrels = (checkout.root / "eval" / "qrels.txt").read_text()
    head = _merge(checkout, base, lambda root: (root / "eval" / "qrels.txt").write_text(
        qrels.replace(" 0\n", " 2\n", 5)))
    fake.add_pull(33, head, files=["eval/qrels.txt"], base_sha=base)
    event = _payload(tmp, "webhook_example_pull_request_synchronize.payload.json", 33, head, base)
    proc, outputs, _ = run_entrypoint(checkout, fake, event, tmp)
    report = json.loads((checkout.root / ".retrieval-gate" / "out" / "report.json").read_text())
    assert {"path": "eval/qrels.txt", "change": "modified"} in report["goalposts"], proc.stdout[-2000:]
    assert proc.returncode != 0 and report["verdict"]["kind"] in ("fail", "inconclusive")  # it cannot pass


def _shallow(checkout, tmp: Path, depth: int, branch: str, name: str = "") -> Path:
    """A clone of ``branch`` at ``depth`` (actions/checkout's default is depth 1)."""
    import subprocess

    target = tmp / f"shallow-{depth}{name}"
    subprocess.run(["git", "clone", "-q", f"--depth={depth}", "-b", branch, f"file://{checkout.root}", str(target)],
                   check=True, capture_output=True)
    return target


def test_a_pr_whose_base_is_not_in_the_checkout_is_fetched_or_inconclusive(world):
    """Depth 1: HEAD^1 and base.sha are absent. Judged by the PR head's own config (which here
    relaxes the policy) it would pass. The gate fetches base.sha and holds the PR to the base's
    yardstick; when the base cannot be fetched either, the verdict is inconclusive and says why."""
    checkout, fake, tmp = world
    root = checkout.root
    config = root / ".retrieval-gate.yml"
    _git(root, "checkout", "-q", "-B", "feature", checkout.base)
    config.write_text(config.read_text() + "policy:\n  inconclusive_blocks: false\n  max_regression: 0.9\n")
    (root / "retrieval.yml").write_text(GOOD)
    _git(root, "commit", "-qam", "a change and a relaxed policy")
    head = _git(root, "rev-parse", "HEAD")
    _git(root, "checkout", "-q", "-B", "merged", checkout.base)
    _git(root, "merge", "-q", "--no-ff", "-m", "merge", head)
    shallow = _shallow(checkout, tmp, 1, "merged")
    event = _payload(tmp, "webhook_example_pull_request_synchronize.payload.json", 41, head, checkout.base)
    fake.add_pull(41, head, files=["retrieval.yml", ".retrieval-gate.yml"], base_sha=checkout.base)
    done, output = _start(shallow, fake, tmp, "pull_request", event)
    report = json.loads((shallow / ".retrieval-gate" / "out" / "report.json").read_text())
    assert report["yardstick"]["source"] == f"base commit {checkout.base[:12]}", done.stdout[-2000:]
    assert {"path": ".retrieval-gate.yml", "change": "modified"} in report["goalposts"]
    assert done.returncode != 0 and report["verdict"]["kind"] != "pass"
    # The remote is gone: the base cannot be fetched.
    again = _shallow(checkout, tmp, 1, "merged", name="gone")
    _git(again, "remote", "set-url", "origin", str(tmp / "no-such-remote"))
    done, output = _start(again, fake, tmp, "pull_request", event)
    assert done.returncode == 3, done.stdout[-2000:]
    report = json.loads((again / ".retrieval-gate" / "out" / "report.json").read_text())
    assert report["verdict"]["reasons"][0]["code"] == "base_unavailable"
    assert "fetch-depth: 2" in report["verdict"]["reasons"][0]["message"]
    assert _outputs(output)["verdict"] == "inconclusive"


def test_a_merge_group_is_judged_against_its_base_sha_even_when_it_is_deeper_than_the_checkout(world):
    checkout, fake, tmp = world
    root = checkout.root
    _git(root, "checkout", "-q", "-B", "queue", checkout.base)
    (root / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 0.1\n")
    _git(root, "commit", "-qam", "c1")
    (root / "README.md").write_text("docs\n")
    _git(root, "add", "README.md")
    _git(root, "commit", "-qm", "c2")
    head = _git(root, "rev-parse", "HEAD")
    shallow = _shallow(checkout, tmp, 2, "queue")  # the PR depth: base_sha is 2 back, not in the checkout
    done, output = _start(shallow, fake, tmp, "merge_group", _merge_group(tmp, fake, head, checkout.base))
    report = json.loads((shallow / ".retrieval-gate" / "out" / "report.json").read_text())
    assert report["event"]["base_sha"] == checkout.base, done.stdout[-2000:]
    assert {"path": "boost", "old": 1.0, "new": 0.1} in report["config_diff"]
    # No base_sha in the payload, or one that cannot be fetched: inconclusive, never HEAD^1.
    gone = _shallow(checkout, tmp, 2, "queue", name="gone")
    _git(gone, "remote", "set-url", "origin", str(tmp / "no-such-remote"))
    for where, base in ((shallow, None), (gone, checkout.base)):
        done, output = _start(where, fake, tmp, "merge_group", _merge_group(tmp, fake, head, base))
        assert done.returncode == 3, done.stdout[-2000:]
        report = json.loads((where / ".retrieval-gate" / "out" / "report.json").read_text())
        reason = report["verdict"]["reasons"][0]
        assert reason["code"] == "base_unavailable"
        assert ("fetch-depth: 0" in reason["message"]) if base else ("no base_sha" in reason["message"])


@pytest.mark.parametrize("payload", [
    {"merge_group": {"head_sha": "a" * 40, "base_sha": 123}},
    {"merge_group": {"head_sha": "a" * 40, "base_sha": ["x"]}},
    {"merge_group": {"head_sha": "not a sha; rm -rf /", "base_sha": "b" * 40}},
    {"pull_request": {"number": "7", "head": {"sha": "a" * 40}}},
    {"pull_request": {"number": 7, "head": {"sha": "a" * 40}, "labels": [{"name": 5}]}},
    {"pull_request": {"number": 7}},
    [1, 2, 3],
])
def test_a_malformed_event_payload_is_one_line_and_exit_2(world, payload):
    checkout, fake, tmp = world
    event = tmp / "bad-event.json"
    event.write_text(json.dumps(payload))
    name = "merge_group" if isinstance(payload, dict) and "merge_group" in payload else "pull_request"
    done, _ = _start(checkout.root, fake, tmp, name, event)
    assert done.returncode == 2, done.stdout[-2000:]
    errors = [line for line in done.stdout.splitlines() if line.startswith("::error")]
    assert len(errors) == 1 and "bad-event.json" in errors[0] and "Traceback" not in done.stdout + done.stderr


def test_the_token_never_goes_to_what_origin_names(world):
    """An earlier step ran the PR's code and repointed origin at a server of its own: the gate
    fetches from the repository's own address (GITHUB_SERVER_URL/GITHUB_REPOSITORY) with the
    token, and from origin only without it."""
    import threading
    from http.server import BaseHTTPRequestHandler

    from tests.support.loopback import LoopbackHTTPServer, loopback_address

    seen: list[str | None] = []

    class Spy(BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append(self.headers.get("Authorization"))
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = LoopbackHTTPServer((loopback_address(), 0), Spy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    checkout, fake, tmp = world
    root = checkout.root
    head, _ = checkout.pr(GOOD)
    _git(root, "update-ref", "refs/heads/merged", "HEAD")  # the merge commit checkout.pr made
    shallow = _shallow(checkout, tmp, 1, "merged", name="spied")  # depth 1: the base must be fetched
    _git(shallow, "remote", "set-url", "origin", "http://{}:{}/evil/repo.git".format(*server.server_address[:2]))
    fake.add_pull(51, head, files=["retrieval.yml"], base_sha=checkout.base)
    event = _payload(tmp, "webhook_example_pull_request_synchronize.payload.json", 51, head, checkout.base)
    try:
        done, _ = _start(shallow, fake, tmp, "pull_request", event)
    finally:
        server.shutdown()
        server.server_close()
    assert seen, "the gate did not try origin at all (the test would prove nothing)"
    assert all(header is None for header in seen), seen
    shown = [line for line in (done.stdout + done.stderr).splitlines() if "ghs_" in line]
    assert shown == ["::add-mask::ghs_s3cr3tT0kenValue1234567890"], shown  # the mask command only


def test_a_checkout_of_the_prs_head_is_judged_against_base_sha_not_its_own_first_commit(world):
    """`ref: head.sha` checks out the PR's head: HEAD^1 is the PR's own first commit, which here
    relabels the qrels. Judged against HEAD^1 the PR would set its own yardstick."""
    checkout, fake, tmp = world
    root = checkout.root
    _git(root, "checkout", "-q", "-B", "two-commits", checkout.base)
    qrels = (root / "qrels.txt").read_text()
    (root / "qrels.txt").write_text(qrels.replace(" 0\n", " 2\n"))
    _git(root, "commit", "-qam", "relabel the qrels")
    (root / "retrieval.yml").write_text(GOOD)
    _git(root, "commit", "-qam", "the change")
    head = _git(root, "rev-parse", "HEAD")
    fake.add_pull(61, head, files=["qrels.txt", "retrieval.yml"], base_sha=checkout.base)
    event = _payload(tmp, "webhook_example_pull_request_synchronize.payload.json", 61, head, checkout.base)
    done, _ = _start(root, fake, tmp, "pull_request", event)
    report = json.loads((root / ".retrieval-gate" / "out" / "report.json").read_text())
    assert report["event"]["base_sha"] == checkout.base, done.stdout[-2000:]
    assert {"path": "qrels.txt", "change": "modified"} in report["goalposts"]
    assert done.returncode != 0 and report["verdict"]["kind"] != "pass"
    assert any("judged against pull_request.base.sha" in w for w in report["warnings"])


def test_a_base_whose_yardstick_leads_out_of_the_repository_does_not_block_the_pr_that_fixes_it(world):
    """The base commit's qrels.txt is a symlink to a file outside the repository. Its yardstick
    cannot be read from the commit, and refusing every PR (exit 2) would refuse the fix too: the
    yardstick is read from the PR head instead, with a warning naming the base's link; the PR's
    own files are still checked (a head that keeps the outside link is still refused)."""
    checkout, fake, tmp = world
    root = checkout.root
    outside = tmp / "outside-qrels.txt"
    outside.write_bytes((root / "qrels.txt").read_bytes())
    _git(root, "checkout", "-q", "-B", "main", checkout.base)
    (root / "qrels.txt").unlink()
    os.symlink(outside, root / "qrels.txt")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "qrels now live outside")
    base = _git(root, "rev-parse", "HEAD")

    def fix(repo: Path) -> None:
        (repo / "qrels.txt").unlink()
        (repo / "qrels.txt").write_bytes(outside.read_bytes())
        (repo / "retrieval.yml").write_text(GOOD)

    head = _merge(checkout, base, fix)
    fake.add_pull(41, head, files=["qrels.txt", "retrieval.yml"], base_sha=base)
    event = _payload(tmp, "webhook_example_pull_request_synchronize.payload.json", 41, head, base)
    proc, outputs, _ = run_entrypoint(checkout, fake, event, tmp)
    assert proc.returncode in (0, 1, 3), proc.stdout[-3000:]
    report = json.loads((root / ".retrieval-gate" / "out" / "report.json").read_text())
    assert report["yardstick"]["source"] == "workspace"
    assert any("its qrels.txt is a symlink that leads out of the repository" in w
               for w in report["warnings"]), report["warnings"]
    # The PR touched a yardstick file of the head it is now judged by: it cannot pass on it.
    assert {"path": "qrels.txt", "change": "modified"} in report["goalposts"]
    assert report["verdict"]["kind"] != "pass"

    # A PR that keeps the outside link is still refused, naming the key.
    head = _merge(checkout, base, lambda repo: (repo / "retrieval.yml").write_text(GOOD))
    fake.add_pull(42, head, files=["retrieval.yml"], base_sha=base)
    event = _payload(tmp, "webhook_example_pull_request_synchronize.payload.json", 42, head, base)
    proc, outputs, _ = run_entrypoint(checkout, fake, event, tmp)
    assert proc.returncode == 2, proc.stdout[-3000:]
    assert "outside the repository" in proc.stdout + proc.stderr


@pytest.mark.parametrize("broken", ["dangling-symlink", "deleted"])
def test_a_base_that_lost_its_qrels_does_not_block_the_pr_that_restores_them(world, broken):
    """The base commit names qrels.txt but does not hold it (a symlink to a file renamed away,
    or the file deleted): the PR restoring it gets a verdict that cannot pass on it, and the
    warning says what the base lacks (not a path in a temporary folder)."""
    checkout, fake, tmp = world
    root = checkout.root
    qrels = (root / "qrels.txt").read_bytes()
    _git(root, "checkout", "-q", "-B", "main", checkout.base)
    (root / "qrels.txt").unlink()
    if broken == "dangling-symlink":
        os.symlink("eval/renamed-away.txt", root / "qrels.txt")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "qrels lost")
    base = _git(root, "rev-parse", "HEAD")

    def restore(repo: Path) -> None:
        if (repo / "qrels.txt").is_symlink():
            (repo / "qrels.txt").unlink()
        (repo / "qrels.txt").write_bytes(qrels)

    head = _merge(checkout, base, restore)
    fake.add_pull(43, head, files=["qrels.txt"], base_sha=base)
    event = _payload(tmp, "webhook_example_pull_request_synchronize.payload.json", 43, head, base)
    proc, outputs, _ = run_entrypoint(checkout, fake, event, tmp)
    assert proc.returncode in (1, 3), proc.stdout[-3000:]
    report = json.loads((root / ".retrieval-gate" / "out" / "report.json").read_text())
    assert any("its qrels.txt (golden.qrels) is not in the commit" in w for w in report["warnings"]), report["warnings"]
    assert {"path": "qrels.txt", "change": "modified"} in report["goalposts"]
