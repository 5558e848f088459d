"""`retrieval-gate run` on the host, with a token in its environment and a pull request whose
search command attacks the job (tests/support/runners/hostile_runner.py): everything it can try,
and what it found.

As root the command runs in the box (a uid of its own); as a plain user there is no box, and
the test states what still holds. The probe writes its findings to a folder open to every user,
as a volume a test gives it would be."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.bounded import run as bounded_run
from tests.support.small_world import RUNNER, small_world

HOSTILE = Path(__file__).resolve().parents[1] / "support" / "runners" / "hostile_runner.py"
TOKEN = "ghs_BOXPROBEtokenMustNotLeak0123456789"
RUNTIME = "ACTIONS-RUNTIME-box-probe-must-not-leak"
REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the box is Linux's /proc, uids and prctl")


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout.strip()


def _world(tmp_path: Path, *, findings: Path, daemon: bool = True, leak: bool = False) -> dict:
    """A team repository whose PR runs the hostile command; the paths it attacks."""
    repo = tmp_path / "repo"
    repo.mkdir()
    config = small_world(repo, leak_in_new=True)
    config.write_text(config.read_text().replace(str(RUNNER), str(HOSTILE)))
    _git(repo, "init", "-q", "-b", "main")
    # actions/checkout's default (persist-credentials: true) leaves the token in .git/config.
    _git(repo, "config", "--local", "http.https://github.com/.extraheader", f"AUTHORIZATION: basic {TOKEN}")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    commands = tmp_path / "file_commands"
    commands.mkdir()
    files = {name: commands / f"{name.lower()}_1" for name in ("GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT",
                                                              "GITHUB_STATE", "GITHUB_STEP_SUMMARY")}
    for path in files.values():
        path.write_text("")
        path.chmod(0o644)
    out = repo / ".retrieval-gate" / "out"
    loose = sorted((repo / ".git" / "objects").glob("??/*"))[0]
    hostile = {"findings": str(findings), "needles": [TOKEN.encode().hex(), RUNTIME.encode().hex()],
               "search": [str(repo), str(commands)],
               "write": [str(p) for p in files.values()] + [str(repo / ".git" / "config"), str(loose)],
               "create": [str(out / "report.json"), str(repo / ".git" / "hooks" / "post-checkout"),
                          str(repo / "planted.txt")]}
    if daemon:
        hostile.update(daemon=str(out / "report.json"), daemon_seconds=120)
    corpus = "v2" if leak else "v1"
    pr = f"ingestion: {{parser: {corpus}}}\nboost: 2.0\nhostile: {json.dumps(hostile)}\n"
    return {"repo": repo, "config": config, "files": files, "out": out, "loose": loose, "pr": pr}


def _open_pr(world: dict) -> None:
    """The base's baseline is archived; the PR's retrieval config is the one that attacks."""
    (world["repo"] / "retrieval.yml").write_text(world["pr"])


def _findings(folder: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(folder.glob("attack-*.json"))]


def _daemon_logs(folder: Path) -> str:
    return "".join(p.read_text() for p in sorted(folder.glob("daemon-*.log")))


def _daemon_pids(folder: Path) -> list[int]:
    return [int(line.split()[1]) for line in _daemon_logs(folder).splitlines() if line.startswith("pid ")]


def _alive(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"hostile_runner" in cmdline


def _gate(world: dict, *args: str, user: list[str] | None = None, cwd: Path | None = None):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "HOME": str(world["repo"]),
           "GITHUB_TOKEN": TOKEN, "ACTIONS_RUNTIME_TOKEN": RUNTIME, "PYTHONPATH": str(REPO),
           **{name: str(path) for name, path in world["files"].items()}}
    return bounded_run([*(user or []), sys.executable, "-m", "gate", *args], cwd=cwd or world["repo"], env=env,
                       cpu_timeout=300)


@pytest.mark.skipif(os.geteuid() != 0, reason="the box needs root (as in the Action's container)")
def test_as_root_the_prs_command_finds_no_token_and_changes_nothing_of_the_job(tmp_path):
    findings = tmp_path / "findings"
    findings.mkdir(mode=0o777)
    findings.chmod(0o777)
    world = _world(tmp_path, findings=findings)
    before = {p: p.read_bytes() for p in [*world["files"].values(), world["repo"] / ".git" / "config",
                                          world["loose"]]}
    archived = _gate(world, "archive", "--config", str(world["config"]))
    assert archived.returncode == 0, archived.stderr[-3000:]
    _open_pr(world)
    done = _gate(world, "run", "--config", str(world["config"]), "--format", "json")
    assert done.returncode in (0, 1), done.stderr[-3000:]
    attacks = _findings(findings)
    assert attacks, done.stderr[-3000:]
    for found in attacks:
        # It ran in the box: a uid and gid of its own, no groups, its own HOME and TMPDIR.
        assert found["uid"] not in (0, os.getuid()) and found["gid"] == found["uid"] and found["groups"] == []
        assert found["home"].startswith(tempfile_root()) and found["tmpdir"] != found["home"]
        # It looked everywhere and found no token: not in its environment, no process's environ,
        # cmdline or memory (the gate's own included), no descriptor, no file it could read.
        assert found["examined"] and found["files_read"] > 10, found
        assert found["hits"] == [], found["hits"]
        assert found["environ_readable"] == [] and found["mem_readable"] == [], found
        assert [fd for fd, _ in found["fds"]] == [0, 1, 2], found["fds"]
        assert not {"GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH"} & set(found["env_names"])
        # It could write nothing of the job's: not the file commands, not .git, not the outputs.
        assert found["writes"] and all(v.startswith("refused") for v in found["writes"].values()), found["writes"]
        assert all(v.startswith("refused") for v in found["creates"].values()), found["creates"]
    for path, data in before.items():
        assert path.read_bytes() == data, path
    assert not (world["repo"] / "planted.txt").exists()
    # Its detached children ended with their runs, before the report existed.
    daemons = _daemon_pids(findings)
    assert len(daemons) == len(attacks)
    assert not any(_alive(pid) for pid in daemons)
    assert "saw" not in _daemon_logs(findings)
    report = json.loads((world["out"] / "report.json").read_text())
    assert report["verdict"]["kind"] == json.loads(done.stdout)["verdict"]["kind"]
    assert "ended 1 process(es) the runner command left running" in done.stderr


def tempfile_root() -> str:
    import tempfile

    return os.path.join(tempfile.gettempdir(), "retrieval-gate-box-")


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="plays a plain user with setpriv, as root")
def test_as_a_plain_user_there_is_no_box_but_the_token_and_the_job_are_still_out_of_reach(tmp_path):
    """No root, no box: the command runs as the user, and one warning line says so. What still
    holds: no token in any process it can read (the gate re-executed itself without it and is
    non-dumpable), no file-command change that stands (undone, and the run refused), nothing it
    started outlives its run."""
    findings = tmp_path / "findings"
    findings.mkdir()
    findings.chmod(0o777)
    world = _world(tmp_path, findings=findings)
    # The team's repository and the job's files belong to the user (uid 1001), as on a runner.
    subprocess.run(["chown", "-R", "1001:1001", str(tmp_path)], check=True)
    user = ["setpriv", "--reuid=1001", "--regid=1001", "--clear-groups", "--"]
    _open_pr(world)
    archived = _gate(world, "archive", "--config", str(world["config"]), user=user)
    assert "warning: no box for the runner command (not root)" in archived.stderr
    [first] = _findings(findings)
    # The token the gate holds is out of its reach: no process's environ or memory, no descriptor.
    # What the checkout persisted in the user's own .git/config is not (the README says so:
    # persist-credentials: false).
    assert first["uid"] == 1001 and first["examined"] and first["mem_readable"] == [], first
    assert [hit for hit in first["hits"] if not hit.endswith("/.git/config")] == [], first["hits"]
    # It could write the job's files (no box), so the gate undid that and refused the run.
    assert any(v == "written" for v in first["writes"].values())
    for path in world["files"].values():
        assert path.read_text() == "", path
    assert "changed the job's file-command files" in archived.stderr and archived.returncode == 2, archived.stderr
    assert not any(_alive(pid) for pid in _daemon_pids(findings))


def test_the_keeper_ends_a_detached_child_and_a_command_past_its_timeout(tmp_path):
    """A command that detaches a sleeper (setsid) and exits: the sleeper ends with the run. A
    command that hangs: its timeout ends it. Neither depends on how fast the machine is."""
    from gate.runs.box import BoxedCommand, current_box

    box = current_box()
    marker = tmp_path / "pids"
    marker.mkdir()
    marker.chmod(0o777)
    detach = ("import os, sys, time\n"
              "if os.fork() == 0:\n"
              "    os.setsid()\n"
              "    open(sys.argv[1] + '/child', 'w').write(str(os.getpid()))\n"
              "    time.sleep(600)\n"
              "    os._exit(0)\n"
              "while not os.path.exists(sys.argv[1] + '/child'):\n"
              "    time.sleep(0.01)\n")
    hang = "import time\ntime.sleep(600)\n"
    outcomes = []
    for script, timeout in ((detach, 600.0), (hang, 2.0)):
        number, folders = box.folders()
        with open(tmp_path / "log", "wb") as log, open(tmp_path / "run", "wb") as dest:
            outcomes.append(box.run(number, BoxedCommand([sys.executable, "-c", script, str(marker)], False, None,
                                                         {"PATH": "/usr/bin:/bin"}, timeout, 1 << 20),
                                    log.fileno(), "run.txt", dest.fileno()))
        assert not folders.home.exists()
    detached, hung = outcomes
    assert detached.returncode == 0 and not detached.timed_out and detached.leftovers == 1
    child = int((marker / "child").read_text())
    assert not Path(f"/proc/{child}").exists() or b"sleep(600)" not in Path(f"/proc/{child}/cmdline").read_bytes()
    assert hung.timed_out and hung.returncode is None and hung.collected == "missing"


def test_a_gate_started_from_standard_input_with_a_token_refuses_instead_of_passing_unchecked(tmp_path):
    """It cannot re-execute itself without the token (standard input is read once): the copy would
    run nothing and exit 0 (found by helper-26). It says so and exits 2."""
    done = bounded_run([sys.executable, "-", "run"], cwd=tmp_path, cpu_timeout=60,
                       input="from gate.cli import entry\nentry()\n",
                       env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(REPO),
                            "GITHUB_TOKEN": TOKEN})
    assert done.returncode == 2, done.stdout + done.stderr
    assert "started from standard input with a token" in done.stderr
