"""The pull request's code in the Action's box, as GitHub runs the image: ``docker run`` with the
job's folders, the runtime's tokens and the Docker socket mounted. The PR's search command is
tests/support/runners/hostile_runner.py: it looks for the tokens everywhere (its environment,
every process's environ, cmdline and memory, its descriptors, every file under /github, the
Docker socket's view of the containers' environments), tries to write the file commands, the
report, ``.git``, and leaves a detached child waiting to flip the report to pass.

Two scenarios the issue names: the socket given the workspace's group (so a gate that kept the
workspace's gid could use it), and a workspace that belongs to root (the gate keeps root then).
The checkout persisted its credentials in ``.git/config`` (actions/checkout's default)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.container.conftest import TOKEN
from tests.container.github_runner import DOCKER_SOCKET, ID_TOKEN, RUNNER_GID, RUNTIME_TOKEN, Runner, parse_outputs
from tests.container.team_repo import BAD, TeamRepo
from tests.container.workflows import EXAMPLES, gate_job_steps
from tests.publishing.github.payloads import pull_request_event

RUNNERS = Path(__file__).resolve().parents[1] / "support" / "runners"
# How actions/checkout persists the token in .git/config: an extraheader, base64 of user:token.
PERSISTED = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()


def _hostile_pr(repo: TeamRepo, number: int) -> object:
    needles = [TOKEN, RUNTIME_TOKEN, ID_TOKEN, PERSISTED]
    spec = {"findings": "/findings", "needles": [n.encode().hex() for n in needles],
            "search": ["/github"], "glob": ["/github/file_commands"], "socket": DOCKER_SOCKET,
            "write": ["/github/workspace/.git/config"],
            "create": ["/github/workspace/.retrieval-gate/out/report.json", "/github/workspace/.git/hooks/post-merge",
                       "/github/workspace/planted.txt"],
            "daemon": "/github/workspace/.retrieval-gate/out/report.json", "daemon_seconds": 300}
    files = {"search/run.py": (RUNNERS / "hostile_runner.py").read_text(),
             "search/overlap_runner.py": (RUNNERS / "overlap_runner.py").read_text(),
             "retrieval.yml": BAD + f"hostile: {json.dumps(spec)}\n"}
    return repo.pull_request(number, files)


def _persisting_workflows(tmp_path: Path) -> Path:
    """The example gate workflow with actions/checkout's default: the token stays in .git/config."""
    folder = tmp_path / "workflows"
    folder.mkdir()
    text = (EXAMPLES / "retrieval-gate.yml").read_text()
    assert "persist-credentials: false" in text
    (folder / "retrieval-gate.yml").write_text(text.replace("persist-credentials: false", "persist-credentials: true"))
    return folder


@pytest.fixture()
def socket_of_the_workspace_group():
    """The engine's socket given the workspace's group (0660), as on a runner whose user's group is
    the socket's; put back afterwards."""
    info = os.stat(DOCKER_SOCKET)
    os.chown(DOCKER_SOCKET, -1, RUNNER_GID)
    os.chmod(DOCKER_SOCKET, 0o660)
    try:
        yield
    finally:
        os.chown(DOCKER_SOCKET, -1, info.st_gid)
        os.chmod(DOCKER_SOCKET, info.st_mode & 0o7777)


def _play(tmp_path, image, github, remote, *, root_workspace: bool):
    repo = TeamRepo(tmp_path / "dev", remote.root, github.repository)
    runner = Runner(tmp_path / "runner", github.repository)
    findings = tmp_path / "findings"
    findings.mkdir()
    findings.chmod(0o777)
    pr = _hostile_pr(repo, 41)
    github.add_pull(41, pr.head, files=pr.files, base_sha=pr.base)
    event = pull_request_event(pr.number, pr.head, pr.base, repository=github.repository)
    workflows = _persisting_workflows(tmp_path)
    real_docker_action = runner.docker_action
    seen: dict[str, object] = {}

    def docker_action(*args, **kwargs):
        if root_workspace:
            subprocess.run(["chown", "-R", "0:0", str(runner.workspace)], check=True)
        seen["git_config"] = (runner.workspace / ".git" / "config").read_text()
        seen["objects"] = {p: p.read_bytes() for p in (runner.workspace / ".git" / "objects").rglob("*") if p.is_file()}
        seen["file_commands"] = set(runner.file_commands.iterdir())
        step = real_docker_action(*args, volumes={str(findings): "/findings"}, **kwargs)
        seen["step"] = step
        return step

    runner.docker_action = docker_action  # type: ignore[method-assign]
    steps = gate_job_steps(runner, image, remote.url(f"{repo.name}.git"), event, "pull_request", github,
                           merge_sha=pr.merge, workflows=workflows, checkout_token=TOKEN)
    gate = next(s for s in steps if s.name == "Run the gate")
    return runner, findings, gate, seen


def _assert_nothing_reached(runner: Runner, findings: Path, gate, seen: dict) -> None:
    assert PERSISTED in seen["git_config"]  # the scenario is real: the checkout left the token there
    attacks = [json.loads(p.read_text()) for p in sorted(findings.glob("attack-*.json"))]
    report = json.loads((runner.workspace / ".retrieval-gate" / "out" / "report.json").read_text())
    assert attacks and report["verdict"]["kind"] == "fail", (gate.log[-3000:], report.get("candidate"))
    for found in attacks:
        # A uid and gid of the box's own: not root, not the runner user, no docker group.
        assert found["uid"] not in (0, 1001) and found["gid"] == found["uid"] and found["groups"] == [], found
        assert found["examined"] and 1 in found["examined"] and found["files_read"] > 10, found
        assert found["hits"] == [], found["hits"]
        assert found["environ_readable"] == [] and found["mem_readable"] == [], found
        assert [fd for fd, _ in found["fds"]] == [0, 1, 2], found["fds"]
        assert found["socket"].startswith("refused"), found["socket"]
        assert found["writes"] and all(v.startswith("refused") for v in found["writes"].values()), found["writes"]
        assert all(v.startswith("refused") for v in found["creates"].values()), found["creates"]
    # The job's files are as the gate left them: .git, the file commands, the report.
    assert (runner.workspace / ".git" / "config").read_text() == seen["git_config"]
    for path, data in seen["objects"].items():
        assert path.read_bytes() == data, path
    assert not (runner.workspace / "planted.txt").exists()
    assert not (runner.workspace / ".git" / "hooks" / "post-merge").exists()
    for path in runner.file_commands.iterdir():
        assert "LD_PRELOAD" not in path.read_text() and "verdict=pass" not in path.read_text(), path
    # The detached child ended with its run: it never saw the report it waited for.
    log = "".join(p.read_text() for p in sorted(findings.glob("daemon-*.log")))
    assert log.startswith("pid ") and "saw" not in log, log
    # The verdict stands: the PR is bad (every query falls), and says so everywhere.
    assert report["verdict"]["kind"] == "fail" and gate.outputs["verdict"] == "fail", gate.log[-3000:]
    output_files = [p for p in runner.file_commands.iterdir() if p.name.startswith("set_output_")]
    assert all(parse_outputs(p.read_text()).get("verdict", "fail") == "fail" for p in output_files)


@pytest.mark.usefixtures("socket_of_the_workspace_group")
def test_the_box_holds_with_the_docker_socket_in_the_workspaces_group(tmp_path, image, github, remote):
    runner, findings, gate, seen = _play(tmp_path, image, github, remote, root_workspace=False)
    assert "running as uid 1001 (the workspace owner)" in gate.log and "runner commands run boxed" in gate.log
    _assert_nothing_reached(runner, findings, gate, seen)


def test_the_box_holds_when_the_workspace_belongs_to_root(tmp_path, image, github, remote):
    runner, findings, gate, seen = _play(tmp_path, image, github, remote, root_workspace=True)
    assert "the workspace owner" not in gate.log and "runner commands run boxed" in gate.log, gate.log[-3000:]
    _assert_nothing_reached(runner, findings, gate, seen)
    shutil.rmtree(runner.workspace, ignore_errors=True)
