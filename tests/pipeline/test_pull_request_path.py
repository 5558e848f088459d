"""One path judges a pull request: `retrieval-gate run --base` and the Action give the same
verdict, reasons and report on the same PR (gate.pipeline.pull_request). Before, only the Action
decided `skipped`: `run --base` on a README-only PR ran the whole stack and said "pass"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from tests.publishing.github.fake_github import FakeGitHub
from tests.support.action_world import GOOD, TOKEN, Checkout, _git, _outputs, _payload, run_entrypoint

#: What differs by construction: the event is the Action's (the CLI has none), clocks, and where
#: a run came from (the first of the two computes the runs, the second finds them in the cache:
#: the source, the seconds and the cost, the run's file name).
MASKED = {"event", "elapsed_seconds", "seconds", "cost", "source", "run"}


@pytest.fixture()
def world(tmp_path):
    """The Action's world with runner.inputs declared: a change outside them can be skipped."""
    checkout = Checkout(tmp_path / "repo", runner_inputs="[retrieval.yml, search/*.py]")
    with FakeGitHub(token=TOKEN) as fake:
        yield checkout, fake, tmp_path


def _masked(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _masked(v) for k, v in value.items() if k not in MASKED}
    if isinstance(value, list):
        return [_masked(v) for v in value]
    return value


def _both(world, number: int, retrieval: str, extra: dict[str, str] | None = None) -> tuple[dict, int, dict, int]:
    checkout, fake, tmp = world
    head, _ = checkout.pr(retrieval, extra)
    changed = sorted(_git(checkout.root, "diff", "--name-only", checkout.base, "HEAD").split())
    fake.add_pull(number, head, files=changed, base_sha=checkout.base)
    event = _payload(tmp, "webhook_example_pull_request_synchronize.payload.json", number, head, checkout.base)
    proc, outputs, _ = run_entrypoint(checkout, fake, event, tmp)
    action = json.loads((checkout.root / ".retrieval-gate" / "out" / "report.json").read_text())
    assert _outputs(outputs)["verdict"] == action["verdict"]["kind"], proc.stdout[-2000:]
    out = tmp / "cli-out"
    # As a developer runs it, from the repository's top: the reproduce command quotes the same path.
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(checkout.root)
        code = main(["run", "--config", ".retrieval-gate.yml", "--base", checkout.base, "--out", str(out)])
    cli = json.loads((out / "report.json").read_text())
    return action, proc.returncode, cli, code


def _same(action: dict, cli: dict) -> None:
    assert cli["verdict"] == action["verdict"]
    assert "event" in action and "event" not in cli
    assert _masked(cli) == _masked(action)


def test_a_readme_only_pr_is_skipped_by_both(world):
    checkout, _, _ = world
    base_retrieval = (checkout.root / "retrieval.yml").read_text()
    action, action_code, cli, cli_code = _both(world, 31, base_retrieval, {"README.md": "# docs only\n"})
    assert action["verdict"]["kind"] == "skipped" and action_code == 0
    assert cli_code == 0
    _same(action, cli)


def test_a_config_pr_gets_the_same_verdict_and_report_from_both(world):
    action, action_code, cli, cli_code = _both(world, 32, GOOD)
    assert action["verdict"]["kind"] not in ("skipped",)
    assert action["config_diff"], "the PR changes the retrieval config"
    assert cli_code == action_code
    _same(action, cli)


def test_a_goalposts_pr_fails_the_same_way_in_both(world):
    checkout, _, _ = world
    config = (checkout.root / ".retrieval-gate.yml").read_text()
    relaxed = config + "policy:\n  max_unjudged: 1.0\n  max_regression: 0.9\n"
    action, action_code, cli, cli_code = _both(world, 33, GOOD, {".retrieval-gate.yml": relaxed})
    assert action["verdict"]["kind"] == "fail" and action["verdict"]["reasons"][0]["code"] == "goalposts_changed"
    assert action["goalposts"] == [{"path": ".retrieval-gate.yml", "change": "modified"}]
    assert cli_code == action_code == 1
    _same(action, cli)


def test_a_pr_that_renames_watched_code_out_of_the_globs_is_judged_by_both(world):
    """git's rename detection would list only the new name (docs/util.py, unwatched): skipped. Both
    names are changes; search/util.py is code under test."""
    checkout, _, _ = world
    root = checkout.root
    _git(root, "checkout", "-q", "-B", "main", checkout.base)
    (root / "search").mkdir(exist_ok=True)
    (root / "search" / "util.py").write_text("def helper():\n    return 1\n")
    _git(root, "add", "search/util.py")
    _git(root, "commit", "-qm", "a helper the runs depend on")
    checkout.base = _git(root, "rev-parse", "HEAD")
    (root / "docs").mkdir(exist_ok=True)
    _git(root, "checkout", "-q", "-B", "feature", checkout.base)
    _git(root, "mv", "search/util.py", "docs/util.py")
    _git(root, "commit", "-qm", "move the helper out")
    head = _git(root, "rev-parse", "HEAD")
    _git(root, "checkout", "-q", "--detach", checkout.base)
    _git(root, "merge", "-q", "--no-ff", "-m", "merge", head)
    _, fake, tmp = world
    fake.add_pull(34, head, files=["docs/util.py"], base_sha=checkout.base)
    event = _payload(tmp, "webhook_example_pull_request_synchronize.payload.json", 34, head, checkout.base)
    proc, outputs, _ = run_entrypoint(checkout, fake, event, tmp)
    action = json.loads((root / ".retrieval-gate" / "out" / "report.json").read_text())
    assert action["verdict"]["kind"] != "skipped", proc.stdout[-2000:]
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        main(["run", "--config", ".retrieval-gate.yml", "--base", checkout.base, "--out", str(tmp / "cli-out")])
    _same(action, json.loads((tmp / "cli-out" / "report.json").read_text()))


def test_run_base_counts_changes_from_where_the_branch_left_the_base(world):
    """The base branch moved on (it changed the qrels): those are not this change's files, so they
    are no goalposts (the Action's merge commit does not list them either)."""
    from gate.inputs import git

    checkout, _, _ = world
    root = checkout.root
    _git(root, "checkout", "-q", "-B", "feature", checkout.base)
    (root / "retrieval.yml").write_text(GOOD)
    _git(root, "commit", "-qam", "the change")
    _git(root, "checkout", "-q", "-B", "main", checkout.base)
    (root / "qrels.txt").write_text((root / "qrels.txt").read_text() + "q_extra 0 d_extra 1\n")
    _git(root, "commit", "-qam", "the base moves on")
    _git(root, "checkout", "-q", "feature")
    assert git.changed_since(root, "main") == ["retrieval.yml"]


def test_a_local_run_base_fetches_nothing(world, monkeypatch):
    """No manifest in the checkout and no baselines branch in the clone: a developer's run --base
    reconstructs the baseline without touching the network (an unreachable origin stalled it)."""
    from gate.inputs import git

    checkout, _, tmp = world
    root = checkout.root
    fetched: list[tuple] = []
    monkeypatch.setattr(git, "fetch", lambda *a, **k: fetched.append(a) or (_ for _ in ()).throw(OSError("no")))
    _git(root, "rm", "-rq", ".retrieval-gate/baseline")
    _git(root, "commit", "-qm", "no archived baseline in the checkout")
    base = _git(root, "rev-parse", "HEAD")
    _git(root, "remote", "add", "origin", "ssh://git@10.255.255.1/x.git")
    (root / "retrieval.yml").write_text(GOOD)
    main(["run", "--config", str(root / ".retrieval-gate.yml"), "--base", base, "--out", str(tmp / "o")])
    report = json.loads((tmp / "o" / "report.json").read_text())
    assert fetched == [] and report["yardstick"]["baseline_source"] is None
    assert not any("could not be fetched" in w for w in report.get("warnings", []))


@pytest.mark.parametrize("labels", [("retrieval-gate:accept",)])
def test_an_accepted_failure_is_decided_on_the_same_path(world, labels):
    """The Action reads the PR's labels and body; the judgement that applies them is the shared one."""
    from gate.pipeline.pull_request import PullRequest, judge_pull_request
    from gate.pipeline.stack import RunOptions

    checkout, _, tmp = world
    config = (checkout.root / ".retrieval-gate.yml").read_text()
    checkout.pr(GOOD, {".retrieval-gate.yml": config + "policy:\n  max_regression: 0.9\n"})
    change = PullRequest(checkout.root / ".retrieval-gate.yml", ".retrieval-gate.yml", checkout.base,
                         (".retrieval-gate.yml", "retrieval.yml"), labels=labels,
                         body="Retrieval-Gate-Justification: the margin is reviewed in #12")
    judged = judge_pull_request(change, RunOptions(base=checkout.base, out=tmp / "o"), progress=lambda m: None)
    assert judged.verdict.kind == "accepted"
    assert judged.result.report.accepted is not None
    unaccepted = judge_pull_request(PullRequest(change.config_path, change.config_shown, change.base, change.changed),
                                    RunOptions(base=checkout.base, out=tmp / "o2"), progress=lambda m: None)
    assert unaccepted.verdict.kind == "fail"


def test_run_without_base_judges_the_workspace_as_it_is(world):
    checkout, _, tmp = world
    assert main(["run", "--config", str(checkout.root / ".retrieval-gate.yml"), "--out", str(tmp / "w")]) in (0, 1, 3)
    report = json.loads((tmp / "w" / "report.json").read_text())
    assert report["verdict"]["kind"] != "skipped" and "goalposts" not in report
    assert Path(tmp / "w" / "comment.md").exists()
