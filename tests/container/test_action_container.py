"""The Action as GitHub runs it: the real image, the runner's folders and user, a checkout made as
actions/checkout makes it, and the example workflows' other steps as the runner user.

Run with ``./run container-test``. Each scenario builds a team repository with a search command
of its own, serves it over smart HTTP, opens a pull request on the fake GitHub API, checks it
out as uid 1001, starts the container as the runner would, and then plays the steps of
``examples/workflows/`` that follow the gate.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.container.conftest import TOKEN
from tests.container.github_runner import Runner, owners
from tests.container.team_repo import BAD, GOOD, TeamRepo, git
from tests.container.workflows import comment_job, gate_job_steps
from tests.publishing.github.payloads import pull_request_event


def _pr_event(repo: TeamRepo, pr, github) -> dict:
    return pull_request_event(pr.number, pr.head, pr.base, repository=github.repository)


@pytest.fixture()
def world(tmp_path, image, github, remote):
    repo = TeamRepo(tmp_path / "dev", remote.root, github.repository)
    runner = Runner(tmp_path / "runner", github.repository)
    return repo, runner, image, github, remote


def test_a_passing_pr_goes_green_through_both_example_workflows(world):
    repo, runner, image, github, remote = world
    pr = repo.pull_request(7, {"retrieval.yml": GOOD})
    github.add_pull(7, pr.head, files=pr.files, base_sha=pr.base)
    event = _pr_event(repo, pr, github)
    steps = gate_job_steps(runner, image, remote.url(f"{repo.name}.git"), event, "pull_request", github,
                           merge_sha=pr.merge)
    for step in steps:
        assert step.returncode == 0, f"{step.name} failed ({step.returncode}):\n{step.log[-4000:]}"
    gate = next(s for s in steps if s.name == "Run the gate")
    assert gate.outputs["verdict"] == "pass", gate.log[-3000:]
    report_path = gate.outputs["report-path"]
    assert (runner.workspace / report_path).is_file() or Path(report_path).is_file()
    # Everything the gate wrote belongs to the runner user: later steps and the next job's
    # checkout can change and delete it.
    assert set(owners(runner.workspace)) == {"1001"}, owners(runner.workspace)
    assert (runner.workspace / ".retrieval-gate" / "out" / "report.json").stat().st_mode & 0o777 == 0o644
    artifact = next(s for s in steps if s.name == "Upload the report for the comment workflow").artifact
    comment = comment_job(runner, image, artifact, event, github, workflow_run_head_sha=pr.head,
                         remote_url=remote.url(f"{repo.name}.git"), main_sha=repo.base)
    for step in comment:
        assert step.returncode == 0, f"{step.name} failed:\n{step.log[-3000:]}"
    bodies = [c["body"] for c in github.comments(7)]
    assert len(bodies) == 1 and "pass" in bodies[0].lower()


def test_init_then_archive_then_the_workflows_init_wrote_give_a_green_check(tmp_path, image, github, remote):
    """The quickstart: `retrieval-gate init` in a repository holding only a golden set, qrels, a
    corpus, a retrieval config and a search command; `retrieval-gate archive`; commit and push.
    The first PR's check, played from the workflows init wrote, is green, and the comment job
    (the suite read from the default branch's config, named nowhere else) posts the comment."""
    repo = TeamRepo(tmp_path / "dev", remote.root, github.repository, init=True)
    assert "wrote .retrieval-gate.yml" in repo.init_output and "Next steps:" in repo.init_output
    workflows = repo.work / ".github" / "workflows"
    assert sorted(p.name for p in workflows.iterdir()) == ["retrieval-gate-archive.yml", "retrieval-gate-comment.yml",
                                                           "retrieval-gate.yml"]
    assert "docs-search" not in "".join(p.read_text() for p in workflows.iterdir())  # the suite lives in the config
    runner = Runner(tmp_path / "runner", github.repository)
    pr = repo.pull_request(31, {"retrieval.yml": GOOD})
    github.add_pull(31, pr.head, files=pr.files, base_sha=pr.base)
    event = _pr_event(repo, pr, github)
    remote_url = remote.url(f"{repo.name}.git")
    steps = gate_job_steps(runner, image, remote_url, event, "pull_request", github, merge_sha=pr.merge,
                           workflows=workflows)
    for step in steps:
        assert step.returncode == 0, f"{step.name} failed ({step.returncode}):\n{step.log[-4000:]}"
    gate = next(s for s in steps if s.name == "Run the gate")
    assert gate.outputs["verdict"] == "pass", gate.log[-3000:]
    report = json.loads((runner.workspace / gate.outputs["report-path"]).read_text())
    assert report["suite"] == "docs-search" and report["baseline"]["resolution"] != "reconstructed", report["baseline"]
    artifact = next(s for s in steps if s.name == "Upload the report for the comment workflow").artifact
    for step in comment_job(runner, image, artifact, event, github, workflow_run_head_sha=pr.head,
                            remote_url=remote_url, main_sha=repo.base, workflows=workflows):
        assert step.returncode == 0, f"{step.name} failed:\n{step.log[-3000:]}"
    [comment] = github.comments(31)
    assert "pass" in comment["body"].lower() and "docs-search" in comment["body"]


def test_a_config_in_a_subfolder_is_judged_not_skipped(tmp_path, image, github, remote):
    """working-directory: svc. git must accept the repository (its top level is the workspace,
    not svc/), or every git call fails and the changed config reads as "skipped"."""
    repo = TeamRepo(tmp_path / "dev", remote.root, github.repository, subfolder="svc")
    runner = Runner(tmp_path / "runner", github.repository)
    pr = repo.pull_request(9, {"retrieval.yml": GOOD})
    github.add_pull(9, pr.head, files=pr.files, base_sha=pr.base)
    event = _pr_event(repo, pr, github)
    steps = gate_job_steps(runner, image, remote.url(f"{repo.name}.git"), event, "pull_request", github,
                           merge_sha=pr.merge, inputs={"working-directory": "svc"})
    for step in steps:
        assert step.returncode == 0, f"{step.name} failed ({step.returncode}):\n{step.log[-4000:]}"
    gate = next(s for s in steps if s.name == "Run the gate")
    assert gate.outputs["verdict"] == "pass", gate.log[-3000:]
    report = json.loads((runner.workspace / gate.outputs["report-path"]).read_text())
    assert report["yardstick"]["source"].startswith("base commit")
    assert {"path": "boost", "old": 1.0, "new": 2.0} in report["config_diff"]


def test_a_github_outage_while_commenting_keeps_the_verdict_and_the_outputs(world):
    """Every comment call answers 502: the gate warns, writes its outputs and summary, and exits
    with the verdict's code; the report still reaches the upload step."""
    repo, runner, image, github, remote = world
    pr = repo.pull_request(10, {"retrieval.yml": GOOD})
    github.add_pull(10, pr.head, files=pr.files, base_sha=pr.base)
    github.script_error("/repos/{owner}/{repo}/issues/{issue_number}/comments", 502, times=100)
    event = _pr_event(repo, pr, github)
    steps = gate_job_steps(runner, image, remote.url(f"{repo.name}.git"), event, "pull_request", github,
                           merge_sha=pr.merge, inputs={"comment-mode": "update", "github-max-wait": "10"})
    gate = next(s for s in steps if s.name == "Run the gate")
    assert gate.returncode == 0, gate.log[-3000:]
    assert gate.outputs["verdict"] == "pass" and gate.outputs["delta"] and gate.outputs["comment-url"] == ""
    assert "the PR comment was not written" in gate.log
    assert "retrieval-gate" in gate.summary and github.comments(10) == []
    upload = next(s for s in steps if s.name == "Upload the report for the comment workflow")
    assert "report.json" in upload.artifact and upload.artifact["pr-number"].strip() == b"10"


def test_a_private_repository_finds_its_archived_baseline_on_the_baselines_branch(tmp_path, image, github):
    """The remote answers 401 without the token; the checkout keeps no credentials
    (persist-credentials: false), so the gate fetches the baselines branch with its own token."""
    from tests.container.git_http import GitRemote

    name = f"{github.repository}.git"
    with GitRemote(tmp_path / "remote", private={name: TOKEN}) as remote:
        repo = TeamRepo(tmp_path / "dev", remote.root, github.repository, baselines_branch=True)
        runner = Runner(tmp_path / "runner", github.repository)
        pr = repo.pull_request(11, {"retrieval.yml": GOOD})
        github.add_pull(11, pr.head, files=pr.files, base_sha=pr.base)
        event = _pr_event(repo, pr, github)
        steps = gate_job_steps(runner, image, remote.url(name), event, "pull_request", github, merge_sha=pr.merge,
                               checkout_token=TOKEN)
        for step in steps:
            assert step.returncode == 0, f"{step.name} failed ({step.returncode}):\n{step.log[-4000:]}"
        assert "extraheader" not in (runner.workspace / ".git" / "config").read_text()  # nothing persisted
        gate = next(s for s in steps if s.name == "Run the gate")
        report = json.loads((runner.workspace / gate.outputs["report-path"]).read_text())
        assert report["yardstick"]["baseline_source"] == f"retrieval-gate-baselines:baselines/{pr.base}", \
            (report["yardstick"], report.get("warnings"))
        assert report["baseline"]["resolution"] == "reused", report["baseline"]  # the archived numbers, as they are
        # The remote is private: without the token it refuses.
        anonymous = subprocess.run(["git", "ls-remote", remote.url(name)], capture_output=True, text=True,
                                   env={"PATH": "/usr/bin:/bin", "GIT_TERMINAL_PROMPT": "0"})
        assert anonymous.returncode != 0 and not remote.requests[-1][2]
        # Without the token the fetch fails loudly (the same job, the token input emptied of rights).
        steps = gate_job_steps(runner, image, remote.url(name), event, "pull_request", github, merge_sha=pr.merge,
                               checkout_token=TOKEN, inputs={"token": "ghs_wrongToken"})
        gate = next(s for s in steps if s.name == "Run the gate")
        report = json.loads((runner.workspace / gate.outputs["report-path"]).read_text())
        assert any("retrieval-gate-baselines branch could not be fetched" in w for w in report["warnings"]), \
            report["warnings"]


def test_two_concurrent_runs_leave_exactly_one_current_comment(world, tmp_path):
    """Two jobs for the same head (a re-run and the original, say) start at once, each on its own
    runner (its own workspace), racing on the API only, as on GitHub."""
    import threading

    from tests.publishing.github.client_markers import current_comments

    repo, _, image, github, remote = world
    pr = repo.pull_request(12, {"retrieval.yml": GOOD})
    github.add_pull(12, pr.head, files=pr.files, base_sha=pr.base)
    event = _pr_event(repo, pr, github)
    runners = [Runner(tmp_path / f"runner-{k}", github.repository) for k in range(2)]
    for runner in runners:
        checkout = runner.checkout(remote.url(f"{repo.name}.git"), "refs/pull/12/merge", pr.merge, depth=2)
        assert checkout.returncode == 0, checkout.stderr
    results = []

    def job(runner, name):
        results.append(runner.docker_action(image, "pull_request", event, {
            "config-path": ".retrieval-gate.yml", "token": TOKEN, "comment-mode": "update",
            "github-max-wait": "60", "working-directory": ".", "commit-status": "false"},
            api_url=github.url, server_url=remote.url().rstrip("/"), sha=pr.merge, ref="refs/pull/12/merge",
            name=name))

    threads = [threading.Thread(target=job, args=(runners[k], f"retrieval-gate-race-{k}")) for k in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [r.returncode for r in results] == [0, 0], [r.log[-2000:] for r in results]
    assert len(current_comments(github, 12)) == 1, [c["body"][:120] for c in github.comments(12)]


def test_a_rerun_updates_the_comment_and_a_verdict_flip_posts_a_new_one(world):
    """Same head twice: one comment, edited in place. A new push that regresses: a new comment
    (edits notify nobody), the old one marked outdated."""
    from gate.publishing.github.sticky_comment import parse_marker

    repo, runner, image, github, remote = world
    url = remote.url(f"{repo.name}.git")
    pr = repo.pull_request(13, {"retrieval.yml": GOOD})
    github.add_pull(13, pr.head, files=pr.files, base_sha=pr.base)
    event = _pr_event(repo, pr, github)
    for _ in range(2):
        steps = gate_job_steps(runner, image, url, event, "pull_request", github, merge_sha=pr.merge,
                               inputs={"comment-mode": "update"})
        assert next(s for s in steps if s.name == "Run the gate").returncode == 0
    assert len(github.comments(13)) == 1
    flipped = repo.pull_request(13, {"retrieval.yml": BAD})
    github.push(13, flipped.head)
    event = _pr_event(repo, flipped, github)
    steps = gate_job_steps(runner, image, url, event, "pull_request", github, merge_sha=flipped.merge,
                           inputs={"comment-mode": "update"})
    gate = next(s for s in steps if s.name == "Run the gate")
    assert gate.returncode == 1 and gate.outputs["verdict"] == "fail", gate.log[-2000:]
    states = [parse_marker(c["body"]).state for c in github.comments(13)]
    assert states == ["outdated", "current"], states


def test_a_fork_pr_with_a_read_only_token_still_decides_and_the_comment_job_posts(world):
    """The PR job's token is read-only (a fork): its comment write is refused, the verdict and
    the artifact stand; the workflow_run job, with the base repository's token, posts."""
    repo, runner, image, github, remote = world
    pr = repo.pull_request(14, {"retrieval.yml": GOOD})
    github.add_pull(14, pr.head, files=pr.files, base_sha=pr.base, fork=True)
    event = _pr_event(repo, pr, github)
    github.read_only = True
    steps = gate_job_steps(runner, image, remote.url(f"{repo.name}.git"), event, "pull_request", github,
                           merge_sha=pr.merge, inputs={"comment-mode": "update"})
    for step in steps:
        assert step.returncode == 0, f"{step.name} failed ({step.returncode}):\n{step.log[-3000:]}"
    gate = next(s for s in steps if s.name == "Run the gate")
    assert gate.outputs["verdict"] == "pass" and github.comments(14) == []
    assert "fork" in gate.log.lower()
    github.read_only = False  # the workflow_run job runs with the base repository's token
    artifact = next(s for s in steps if s.name == "Upload the report for the comment workflow").artifact
    for step in comment_job(runner, image, artifact, event, github, workflow_run_head_sha=pr.head,
                         remote_url=remote.url(f"{repo.name}.git"), main_sha=repo.base):
        assert step.returncode == 0, f"{step.name} failed:\n{step.log[-3000:]}"
    assert len(github.comments(14)) == 1


def _inputs(**extra: str) -> dict[str, str]:
    return {"config-path": ".retrieval-gate.yml", "token": TOKEN, "comment-mode": "update", "github-max-wait": "60",
            "working-directory": ".", "commit-status": "false", **extra}


def test_a_depth_1_checkout_fetches_its_base_and_is_judged_against_it(world):
    repo, runner, image, github, remote = world
    url = remote.url(f"{repo.name}.git")
    pr = repo.pull_request(15, {"retrieval.yml": GOOD})
    github.add_pull(15, pr.head, files=pr.files, base_sha=pr.base)
    done = runner.checkout(url, "refs/pull/15/merge", pr.merge, depth=1)
    assert done.returncode == 0, done.stderr
    step = runner.docker_action(image, "pull_request", _pr_event(repo, pr, github), _inputs(), api_url=github.url,
                                server_url=remote.url().rstrip("/"), sha=pr.merge, ref="refs/pull/15/merge")
    assert step.returncode == 0 and step.outputs["verdict"] == "pass", step.log[-3000:]
    report = json.loads((runner.workspace / step.outputs["report-path"]).read_text())
    assert report["yardstick"]["source"] == f"base commit {pr.base[:12]}"


def test_a_comment_deleted_between_list_and_edit_is_posted_anew(world):
    from tests.publishing.github.client_markers import current_comments

    repo, runner, image, github, remote = world
    url = remote.url(f"{repo.name}.git")
    pr = repo.pull_request(16, {"retrieval.yml": GOOD})
    github.add_pull(16, pr.head, files=pr.files, base_sha=pr.base)
    event = _pr_event(repo, pr, github)
    gate_job_steps(runner, image, url, event, "pull_request", github, merge_sha=pr.merge,
                   inputs={"comment-mode": "update"})
    assert len(github.comments(16)) == 1
    github.script_error("/repos/{owner}/{repo}/issues/comments/{comment_id}", 404, method="PATCH", times=1)
    steps = gate_job_steps(runner, image, url, event, "pull_request", github, merge_sha=pr.merge,
                           inputs={"comment-mode": "update"})
    gate = next(s for s in steps if s.name == "Run the gate")
    assert gate.returncode == 0 and gate.outputs["comment-url"], gate.log[-2000:]
    assert len(current_comments(github, 16)) == 1


def test_a_push_to_main_decides_without_commenting(world):
    repo, runner, image, github, remote = world
    url = remote.url(f"{repo.name}.git")
    pr = repo.pull_request(17, {"retrieval.yml": GOOD})  # its merge commit, pushed to main
    repo.publish(f"{pr.merge}:refs/heads/main")
    done = runner.checkout(url, "refs/heads/main", pr.merge, depth=2)
    assert done.returncode == 0, done.stderr
    event = {"ref": "refs/heads/main", "before": pr.base, "after": pr.merge,
             "repository": {"full_name": github.repository}}
    step = runner.docker_action(image, "push", event, _inputs(), api_url=github.url,
                                server_url=remote.url().rstrip("/"), sha=pr.merge, ref="refs/heads/main")
    assert step.returncode == 0 and step.outputs["verdict"] == "pass", step.log[-3000:]
    assert github.comments(17) == []


def _fails_in_the_merge_queue(runner, image, github, remote, repo, head: str, ref: str, base: str) -> dict:
    """The gate job of retrieval-gate.yml on a merge_group event; it must fail. Its report."""
    event = {"action": "checks_requested", "merge_group": {"head_sha": head, "head_ref": ref, "base_sha": base,
             "base_ref": "refs/heads/main"}, "repository": {"full_name": github.repository}}
    steps = gate_job_steps(runner, image, remote.url(f"{repo.name}.git"), event, "merge_group", github,
                           merge_sha=head)
    gate = next(s for s in steps if s.name == "Run the gate")
    assert gate.returncode == 1 and gate.outputs["verdict"] == "fail", gate.log[-3000:]
    return json.loads((runner.workspace / gate.outputs["report-path"]).read_text())


def test_a_rebased_merge_group_is_judged_on_all_its_commits(world):
    """Two commits rebased into the queue: the config change, then a README edit. The example
    checks merge groups out with fetch-depth 0; the diff is against merge_group.base_sha."""
    repo, runner, image, github, remote = world
    head, ref, base = repo.merge_queue(18, [{"retrieval.yml": BAD}, {"README.md": "docs\n"}])
    report = _fails_in_the_merge_queue(runner, image, github, remote, repo, head, ref, base)
    assert report["event"]["base_sha"] == base and report["config_diff"]


def test_a_base_that_was_never_archived_is_reconstructed_from_its_commit(tmp_path, image, github, remote):
    """No baseline anywhere: the gate runs the base commit's own code (a checkout of it, made as
    the runner user inside the container) and says the baseline is reconstructed."""
    repo = TeamRepo(tmp_path / "dev", remote.root, github.repository, archived=False)
    runner = Runner(tmp_path / "runner", github.repository)
    pr = repo.pull_request(19, {"retrieval.yml": GOOD})
    github.add_pull(19, pr.head, files=pr.files, base_sha=pr.base)
    steps = gate_job_steps(runner, image, remote.url(f"{repo.name}.git"), _pr_event(repo, pr, github), "pull_request",
                           github, merge_sha=pr.merge)
    gate = next(s for s in steps if s.name == "Run the gate")
    assert gate.returncode == 0 and gate.outputs["verdict"] == "pass", gate.log[-3000:]
    report = json.loads((runner.workspace / gate.outputs["report-path"]).read_text())
    assert report["baseline"]["resolution"] == "reconstructed", report["baseline"]


def test_an_api_that_drops_every_comment_call_is_bounded_by_github_max_wait(world):
    import time

    repo, runner, image, github, remote = world
    pr = repo.pull_request(20, {"retrieval.yml": GOOD})
    github.add_pull(20, pr.head, files=pr.files, base_sha=pr.base)
    github.script_disconnect("/repos/{owner}/{repo}/issues/{issue_number}/comments", times=1000)
    started = time.monotonic()
    steps = gate_job_steps(runner, image, remote.url(f"{repo.name}.git"), _pr_event(repo, pr, github), "pull_request",
                           github, merge_sha=pr.merge, inputs={"comment-mode": "update", "github-max-wait": "8"})
    gate = next(s for s in steps if s.name == "Run the gate")
    assert gate.returncode == 0 and gate.outputs["verdict"] == "pass", gate.log[-3000:]
    assert "the PR comment was not written" in gate.log
    assert time.monotonic() - started < 60


def test_plan_produce_gate_with_the_teams_own_stack_and_attribution(world):
    """examples/workflows/retrieval-gate-own-stack.yml as written: `plan` inside the workflow
    (no --base: the Action's base), the team's stack produces every planned run - baseline
    cells of the attribution grid included - and the action only reads them. The PR bundles
    two changes (boost, prefer_suffix): the comment's attribution comes from runs the gate
    never made, and the report and comment reach the comment job as in the plain workflow."""
    repo, runner, image, github, remote = world
    pr = repo.pull_request(21, {"retrieval.yml": GOOD})
    github.add_pull(21, pr.head, files=pr.files, base_sha=pr.base)
    event = _pr_event(repo, pr, github)
    steps = gate_job_steps(runner, image, remote.url(f"{repo.name}.git"), event, "pull_request", github,
                           merge_sha=pr.merge, workflow="retrieval-gate-own-stack.yml")
    for step in steps:
        assert step.returncode == 0, f"{step.name} failed ({step.returncode}):\n{step.log[-4000:]}"
    plan = next(s for s in steps if s.name == "Plan the runs the gate needs")
    assert f"plan --base {pr.base[:12]}" in plan.log, plan.log[-2000:]
    produce = next(s for s in steps if s.name == "Produce them with your stack")
    assert "producing candidate" in produce.log and "producing grid cell" in produce.log, produce.log[-3000:]
    gate = next(s for s in steps if s.name == "Run the gate")
    assert gate.outputs["verdict"] == "pass", gate.log[-3000:]
    report = json.loads((runner.workspace / gate.outputs["report-path"]).read_text())
    assert report["candidate"]["source"] == "runs-dir", report["candidate"]
    cells = report["attribution"]["cells"]
    assert len(cells) == 4 and report["attribution"]["factors"] == ["boost", "prefer_suffix"], cells
    assert {c["source"] for c in cells if c["role"] == ""} == {"runs-dir"}, cells
    assert "running command runner" not in gate.log  # the gate ran nothing itself
    artifact = next(s for s in steps if s.name == "Upload the report for the comment workflow").artifact
    for step in comment_job(runner, image, artifact, event, github, workflow_run_head_sha=pr.head,
                         remote_url=remote.url(f"{repo.name}.git"), main_sha=repo.base):
        assert step.returncode == 0, f"{step.name} failed:\n{step.log[-3000:]}"
    [comment] = github.comments(21)
    assert "Attribution" in comment["body"] and "prefer\\_suffix" in comment["body"]


def test_a_merge_group_made_by_merge_commit_is_judged_against_its_base(world):
    """The queue's "merge" method: the group head is a merge commit of the PR's head onto the
    queue's base. Judged against merge_group.base_sha, with the example's fetch-depth 0."""
    repo, runner, image, github, remote = world
    head, ref, base = repo.merge_queue_merge(22, {"retrieval.yml": BAD})
    report = _fails_in_the_merge_queue(runner, image, github, remote, repo, head, ref, base)
    assert report["event"]["base_sha"] == base and {"path": "boost", "old": 1.0, "new": -5.0} in report["config_diff"]
    assert github.comments(22) == []  # a merge group has no PR to comment on


def test_own_stack_replays_the_baseline_with_the_baselines_code(world):
    """The PR changes the corpus snapshot (the archived lists no longer apply: the baseline is
    replayed on it) and edits the team's search code. The plan names the commit whose code must
    produce the replay; the example produces it from a worktree of that commit, so the PR's
    code runs only for the candidate."""
    repo, runner, image, github, remote = world
    search = (repo.folder / "search" / "run.py").read_text()
    marked = search.replace("import argparse", "import argparse\nprint(\"the PR's search code\", flush=True)", 1)
    assert marked != search
    corpus = (repo.folder / "corpus-v1.jsonl").read_text()
    extra = json.dumps({"id": "misc/new-page", "text": "a page the ingestion fix adds"}) + "\n"
    pr = repo.pull_request(23, {"corpus-v1.jsonl": corpus + extra, "search/run.py": marked})
    github.add_pull(23, pr.head, files=pr.files, base_sha=pr.base)
    steps = gate_job_steps(runner, image, remote.url(f"{repo.name}.git"), _pr_event(repo, pr, github), "pull_request",
                           github, merge_sha=pr.merge, workflow="retrieval-gate-own-stack.yml")
    produce = next(s for s in steps if s.name == "Produce them with your stack")
    assert produce.returncode == 0, produce.log[-3000:]
    parts = {chunk.split(" (", 1)[0]: chunk for chunk in produce.log.split("producing ")[1:]}
    assert "baseline replay" in parts, produce.log[-3000:]
    assert "the PR's search code" not in parts["baseline replay"], produce.log[-3000:]
    assert "the PR's search code" in parts["candidate"], produce.log[-3000:]
    gate = next(s for s in steps if s.name == "Run the gate")
    report = json.loads((runner.workspace / gate.outputs["report-path"]).read_text())
    assert report["baseline"]["resolution"] == "replayed", report["baseline"]
    assert "running command runner" not in gate.log


THREE_CHANGES = "ingestion: {parser: v1}\nboost: 2.0\nprefer_suffix: '#c0'\ndepth: 20\n"


def _report_differences(ours: dict, theirs: dict, roots: list[Path]) -> list[str]:
    """Where two reports of one PR differ, clocks, paths and where a run came from left out."""
    from tests.regression.pinning import differences, normalized

    def clean(value):
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if k not in ("source", "runner")}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    return differences(clean(normalized(theirs, roots=roots)), clean(normalized(ours, roots=roots)))


def test_a_three_change_grid_made_by_matrix_jobs_equals_the_single_machine_report(world, tmp_path):
    """examples/workflows/retrieval-gate-matrix.yml as GitHub runs it: the PR bundles three
    changes (boost, prefer_suffix, depth: a 2^3 grid), `plan` lists every run as a matrix entry,
    each entry is produced by a job on a runner of its own (its own checkout, a container a
    step, nothing shared but the plan's outputs and the artifacts), and the gate job's action
    only reads what it downloads. Its report.json equals, number for number, the report of the
    plain workflow, where the action runs the team's command for every cell on one machine.
    A rerun with one entry's job failing names that entry's key and decides nothing."""
    from tests.container.workflows import matrix_workflow

    repo, runner, image, github, remote = world
    pr = repo.pull_request(31, {"retrieval.yml": THREE_CHANGES})
    github.add_pull(31, pr.head, files=pr.files, base_sha=pr.base)
    event = _pr_event(repo, pr, github)
    url = remote.url(f"{repo.name}.git")

    played = matrix_workflow(tmp_path / "matrix", image, url, event, "pull_request", github, merge_sha=pr.merge)
    plan = played["plan"]
    assert plan.ok, plan.steps[-1].log[-3000:]
    entries = json.loads(plan.outputs["plan"])["parts"][0]["include"]
    purposes = sorted(e["purpose"] for e in entries)
    # The candidate and the 6 mixed cells; the all-old cell is the baseline, archived on main.
    assert len(entries) == int(plan.outputs["count"]) == 7 and purposes[0] == "candidate", purposes
    for entry in entries:  # workspace paths: each job resolves them in its own checkout
        assert not any(str(entry[k]).startswith("/") for k in ("config", "queries", "corpus", "output")), entry
    for job in played["produce"]:
        assert job.ok, f"{job.name}: {job.steps[-1].log[-3000:]}"
    assert len({str(job.runner.root) for job in played["produce"]}) == 7
    gate = played["gate"]
    assert gate.ok, gate.steps[-1].log[-3000:]
    action = gate.step("Run the gate")
    assert "running command runner" not in action.log  # the gate ran nothing itself
    matrix_report = json.loads((gate.runner.workspace / action.outputs["report-path"]).read_text())
    attribution = matrix_report["attribution"]
    assert attribution["factors"] == ["boost", "depth", "prefer_suffix"] and len(attribution["cells"]) == 8, attribution
    assert {c["source"] for c in attribution["cells"] if c["role"] == ""} == {"runs-dir"}, attribution["cells"]

    # One machine: the plain workflow, the action running the team's command for every run.
    steps = gate_job_steps(runner, image, url, event, "pull_request", github, merge_sha=pr.merge)
    single = next(s for s in steps if s.name == "Run the gate")
    assert single.outputs.get("verdict"), single.log[-3000:]
    assert "running command runner" in single.log
    single_report = json.loads((runner.workspace / single.outputs["report-path"]).read_text())
    assert single.outputs["verdict"] == action.outputs["verdict"]
    roots = [gate.runner.workspace, runner.workspace, gate.runner.root, runner.root]
    assert _report_differences(matrix_report, single_report, roots) == []

    # One entry's job fails: the gate names its key, decides nothing; the set is otherwise whole.
    lost = next(e for e in entries if e["purpose"] != "candidate")
    again = matrix_workflow(tmp_path / "rerun", image, url, event, "pull_request", github, merge_sha=pr.merge,
                            fail_entries=(lost["key"],))
    failed = again["gate"].step("Run the gate")
    assert failed.outputs.get("verdict") == "inconclusive", failed.log[-3000:]
    assert lost["key"] in failed.log, failed.log[-3000:]


def test_five_noise_repeats_made_by_matrix_jobs_measure_the_single_machine_band(world, tmp_path):
    """The noise band's identical runs as matrix entries: on main (a push), `plan --noise-repeats
    5 --format github-matrix` lists the baseline and the 5 repeats, each produced by the example's
    produce step on a runner of its own (its own checkout and container, the repeat's seed from
    the entry), and `archive --noise-repeats 5 --runs-dir` in a fresh runner archives from what
    was handed over. The team's stack varies with its seed (ties broken at random), so the band
    is real; it equals, number for number, the band one machine measures running the stack
    itself, and the baseline archived beside it is the same."""
    from tests.container.workflows import _download, _upload, load_workflow

    repo, runner, image, github, remote = world
    repo._commit({"retrieval.yml": "ingestion: {parser: v1}\nboost: 1.0\nshuffle_ties: true\n"}, "a stack with noise")
    main_sha = git(repo.work, "rev-parse", "HEAD")
    repo.publish("main")
    url = remote.url(f"{repo.name}.git")
    archive = "retrieval-gate archive --config .retrieval-gate.yml --noise-repeats 5"

    def job(name: str) -> Runner:
        made = Runner(tmp_path / name, github.repository)
        done = made.checkout(url, "refs/heads/main", main_sha, depth=2)
        assert done.returncode == 0, done.stderr
        return made

    def step(on: Runner, script: str, env: dict | None = None):
        done = on.run_step_with_gate(image, script, {"GITHUB_EVENT_NAME": "push", **(env or {})})
        assert done.returncode == 0, f"{script}:\n{done.log[-3000:]}"
        return done

    single = job("single")
    step(single, archive)

    plan_job = job("plan")
    planned = step(plan_job, "retrieval-gate plan --config .retrieval-gate.yml --runs-dir .retrieval-gate/runs "
                             "--noise-repeats 5 --format github-matrix")
    entries = json.loads(planned.log.strip().splitlines()[-1])["parts"][0]["include"]
    assert [e["purpose"] for e in entries][-5:] == [f"noise repeat {k}/5" for k in range(1, 6)], entries
    artifacts = {"retrieval-gate-plan": _upload(plan_job, ".retrieval-gate/work", "plan").artifact}
    produce = load_workflow("retrieval-gate-matrix.yml")["jobs"]["produce"]
    script = next(s for s in produce["steps"] if s.get("name") == "Produce this run with your stack")
    for i, entry in enumerate(entries):
        made = job(f"produce-{i}")
        assert _download(made, {"name": "retrieval-gate-plan", "path": ".retrieval-gate/work/"}, artifacts,
                         "plan").returncode == 0
        step(made, script["run"], {"CONFIG": entry["config"], "QUERIES": entry["queries"], "CORPUS": entry["corpus"],
                                   "FILE": entry["file"], "SEED": entry["seed"], "REPEAT": str(entry["repeat"]),
                                   "CODE_COMMIT": entry["code_commit"]})
        artifacts[entry["artifact"]] = _upload(made, f".retrieval-gate/runs/{entry['file']}", "run").artifact
        assert list(artifacts[entry["artifact"]]) == [entry["file"]]
    gate = job("gate")
    del artifacts["retrieval-gate-plan"]
    assert _download(gate, {"pattern": "retrieval-gate-run-*", "path": ".retrieval-gate/runs"}, artifacts,
                     "runs").returncode == 0
    step(gate, "cd .retrieval-gate/runs && for d in retrieval-gate-run-*; do mv \"$d\"/*.run . && rmdir \"$d\"; done")
    archived = step(gate, archive + " --runs-dir .retrieval-gate/runs")
    assert "running command" not in archived.log, archived.log[-2000:]

    import gzip

    from ruamel.yaml import YAML

    folder = Path(".retrieval-gate") / "baseline"
    theirs = {p.relative_to(single.workspace / folder): p for p in (single.workspace / folder).iterdir()}
    ours = {p.relative_to(gate.workspace / folder): p for p in (gate.workspace / folder).iterdir()}
    assert sorted(ours) == sorted(theirs), (sorted(ours), sorted(theirs))
    assert len([n for n in ours if n.name.startswith("noise-run-")]) == 5, sorted(ours)
    manifest = YAML(typ="safe").load((gate.workspace / folder / "manifest.yml").read_text())
    band = manifest["noise_band"]
    assert band["runs"] == 5 and band["sd"] > 0 and band["seeds"] == [1001, 1002, 1003, 1004, 1005], band
    roots = [single.workspace, gate.workspace, single.root, gate.root]
    for name, path in ours.items():
        if name.suffix == ".gz":
            assert gzip.decompress(path.read_bytes()) == gzip.decompress(theirs[name].read_bytes()), name
            continue
        load = json.loads if name.suffix == ".json" else YAML(typ="safe").load
        assert _report_differences(load(path.read_text()), load(theirs[name].read_text()), roots) == [], name
