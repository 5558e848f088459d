"""The box's pieces, each asked directly: what a boxed command is given and what comes back out."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from gate.common.errors import InputError
from gate.runs import file_commands_guard
from gate.runs.box import BoxedCommand, current_box

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the box is Linux's")
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="the box confines only as root")


def _run(tmp_path: Path, script: str, *args: str, cwd: Path | None = None, timeout: float = 120.0):
    box = current_box()
    number, folders = box.folders()
    log_path, dest_path = tmp_path / f"log-{number}", tmp_path / f"run-{number}"
    command = [sys.executable, "-c", script, str(folders.out / "run.txt"), *args]
    with open(log_path, "wb") as log, open(dest_path, "wb") as dest:
        outcome = box.run(number, BoxedCommand(command, False, cwd, {"PATH": "/usr/bin:/bin"}, timeout, 1 << 20),
                          log.fileno(), "run.txt", dest.fileno())
    return outcome, log_path.read_text(), dest_path.read_bytes()


def test_the_run_a_command_writes_comes_back_and_its_log_is_the_gates(tmp_path):
    outcome, log, run = _run(tmp_path, "import sys; open(sys.argv[1], 'w').write('q1 Q0 d1 1 2.0 x\\n'); print('hi')")
    assert outcome.returncode == 0 and outcome.collected == "yes" and run == b"q1 Q0 d1 1 2.0 x\n"
    assert log == "hi\n"


@as_root
def test_a_symlink_or_a_link_to_anothers_file_is_not_copied_out(tmp_path):
    secret = tmp_path / "root-only"
    secret.write_text("not for the box")
    secret.chmod(0o600)
    outcome, _log, run = _run(tmp_path, "import os, sys; os.symlink(sys.argv[2], sys.argv[1])", str(secret))
    assert outcome.collected == "symlink" and run == b""


@as_root
def test_the_box_has_no_new_privileges_no_groups_and_its_own_folders(tmp_path):
    script = ("import os, sys\n"
              "status = open('/proc/self/status').read()\n"
              "line = [x for x in status.splitlines() if x.startswith('NoNewPrivs')][0]\n"
              "open(sys.argv[1], 'w').write(f\"{line.split()[1]} {os.getgroups()} {oct(os.umask(0))} \"\n"
              "                             f\"{os.environ['HOME']} {os.environ['TMPDIR']}\")\n")
    outcome, log, run = _run(tmp_path, script)
    assert outcome.collected == "yes", log
    flag, groups, umask, home, tmp = run.decode().split(" ")
    assert flag == "1" and groups == "[]" and umask == "0o77"
    assert home != tmp and not Path(home).exists()  # removed with the run


@as_root
def test_what_one_run_leaves_in_tmp_is_gone_before_the_next(tmp_path):
    planted = "/tmp/retrieval-gate-planted-by-a-run"
    first, log, _ = _run(tmp_path, "import sys; open(sys.argv[2], 'w').write('poison'); open(sys.argv[1], 'w')",
                         planted)
    assert first.collected == "yes", log
    second, _log, run = _run(tmp_path, "import os, sys; open(sys.argv[1], 'w').write(str(os.path.exists(sys.argv[2])))",
                             planted)
    assert run == b"False" and not os.path.exists(planted)


@as_root
def test_a_folder_the_box_cannot_enter_is_refused_by_name(tmp_path):
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    closed.chmod(0o700)
    outcome, _log, _run_bytes = _run(tmp_path, "pass", cwd=closed)
    assert outcome.refused is not None and "cannot enter this folder" in outcome.refused


def test_a_changed_file_command_is_undone_and_refused(tmp_path, monkeypatch):
    output, env_file = tmp_path / "output", tmp_path / "env"
    output.write_text("verdict=fail\n")
    env_file.write_text("")
    env_file.chmod(0o666)
    monkeypatch.setenv("GITHUB_OUTPUT", str(output))
    monkeypatch.setenv("GITHUB_ENV", str(env_file))
    states = file_commands_guard.snapshot()
    assert env_file.stat().st_mode & 0o777 == 0o664  # closed to other users first
    with open(output, "a") as handle:
        handle.write("verdict=pass\n")
    env_file.write_text("LD_PRELOAD=/tmp/x.so\n")
    with pytest.raises(InputError) as refused:
        file_commands_guard.check_unchanged(states, "the candidate run's command")
    assert "$GITHUB_ENV (undone), $GITHUB_OUTPUT (undone)" in str(refused.value)
    assert output.read_text() == "verdict=fail\n" and env_file.read_text() == ""
    file_commands_guard.check_unchanged(states, "again")  # undone: nothing to refuse now


@as_root
def test_every_git_folder_below_the_checkout_is_closed_whoever_owns_it(tmp_path):
    """The checkout's .git and a second checkout's below it (actions/checkout with path:), owned by
    the runner user while the gate runs as root: the box reads neither's config (found by helper-26)."""
    repo = tmp_path / "repo"
    for git_dir in (repo / ".git", repo / "tools" / ".git"):
        git_dir.mkdir(parents=True)
        (git_dir / "config").write_text("[http]\n\textraheader = AUTHORIZATION: basic c2VjcmV0\n")
    for path in [repo, *repo.rglob("*")]:
        os.chown(path, 1001, 1001)
    script = ("import sys\nout = []\nfor path in sys.argv[2:]:\n"
              "    try:\n        out.append(open(path).read())\n    except OSError as error:\n"
              "        out.append(type(error).__name__)\nopen(sys.argv[1], 'w').write(repr(out))\n")
    box = current_box()
    number, folders = box.folders()
    with open(tmp_path / "log", "wb") as log, open(tmp_path / "run", "wb") as dest:
        outcome = box.run(number, BoxedCommand([sys.executable, "-c", script, str(folders.out / "run.txt"),
                                                str(repo / ".git" / "config"), str(repo / "tools" / ".git" / "config")],
                                               False, repo, {"PATH": "/usr/bin:/bin"}, 120.0, 1 << 20, hide=(repo,)),
                          log.fileno(), "run.txt", dest.fileno())
    assert outcome.collected == "yes", (tmp_path / "log").read_text()
    assert (tmp_path / "run").read_text() == "['PermissionError', 'PermissionError']"
    assert (repo / ".git").stat().st_mode & 0o777 == 0o755  # put back after the run


@as_root
def test_a_tree_too_deep_for_rmtree_and_shared_memory_are_gone_before_the_next_run(tmp_path):
    """What a run leaves where the next run (another uid) could find it (found by helper-26)."""
    deep = f"/tmp/rg-deep-{os.getpid()}"
    script = ("import ctypes, os, sys\n"
              "libc = ctypes.CDLL(None)\n"
              "shm = libc.shmget(int(sys.argv[3]), 4096, 0o1000 | 0o666)\n"
              "os.chdir('/tmp'); os.mkdir(sys.argv[2].rsplit('/', 1)[1]); os.chdir(sys.argv[2])\n"
              "for _ in range(1500):\n    os.mkdir('d'); os.chdir('d')\n"
              "open(sys.argv[1], 'w').write(f'{os.getuid()} {shm}')\n")
    key = 0x5267000 + os.getpid() % 4096
    first, log, run = _run(tmp_path, script, deep, str(key))
    assert first.collected == "yes", log
    uid, shm = (int(x) for x in run.split())
    assert shm >= 0
    second, _log, run = _run(tmp_path, "import os, sys; open(sys.argv[1], 'w').write(str(os.getuid()))")
    assert int(run) != uid  # a uid of its own for every run
    assert not os.path.exists(deep)
    keys = [line.split()[0] for line in Path("/proc/sysvipc/shm").read_text().splitlines()[1:]]
    assert str(key) not in keys


def test_a_keeper_that_stops_answering_is_given_up_on(tmp_path, monkeypatch):
    """Without a box the command can SIGSTOP the keeper (same uid): the gate must not wait forever."""
    import signal

    from gate.runs import box as box_module

    monkeypatch.setattr(box_module, "KEEPER_GRACE_SECONDS", 1.0)
    keeper = box_module.KeeperBox.start()
    try:
        os.kill(keeper._proc.pid, signal.SIGSTOP)
        number, _folders = keeper.folders()
        with open(tmp_path / "log", "wb") as log, open(tmp_path / "run", "wb") as dest:
            with pytest.raises(box_module.BoxBroken, match="gone"):
                keeper.run(number, BoxedCommand(["true"], False, None, {"PATH": "/usr/bin:/bin"}, 1.0, 1 << 20),
                           log.fileno(), "run.txt", dest.fileno())
            with pytest.raises(box_module.BoxBroken):  # and stays given up on
                keeper.run(number, BoxedCommand(["true"], False, None, {}, 1.0, 1 << 20), log.fileno(), "run.txt",
                           dest.fileno())
    finally:
        os.kill(keeper._proc.pid, signal.SIGKILL)
        keeper._proc.wait()


def test_a_sparse_terabyte_log_is_read_and_kept_bounded(tmp_path):
    from gate.runs.command import MAX_LOG_BYTES, _bound_log, log_tail

    log = tmp_path / "log"
    with open(log, "wb") as handle:
        handle.write(b"started\n")
        os.pwrite(handle.fileno(), b"\nthe last line\n", 1 << 40)
    assert log_tail(log).endswith("the last line")
    _bound_log(log)
    assert log.stat().st_size <= MAX_LOG_BYTES + 200 and log_tail(log).endswith("the last line")


def test_a_file_command_made_read_only_or_a_symlink_is_still_put_back(tmp_path, monkeypatch):
    output, env_file, elsewhere = tmp_path / "output", tmp_path / "env", tmp_path / "elsewhere"
    output.write_text("verdict=fail\n")
    env_file.write_text("")
    elsewhere.write_text("LD_PRELOAD=/tmp/x.so\n")
    monkeypatch.setenv("GITHUB_OUTPUT", str(output))
    monkeypatch.setenv("GITHUB_ENV", str(env_file))
    states = file_commands_guard.snapshot()
    with open(output, "a") as handle:
        handle.write("verdict=pass\n")
    output.chmod(0o444)
    env_file.unlink()
    env_file.symlink_to(elsewhere)
    with pytest.raises(InputError, match=r"\$GITHUB_ENV \(undone\), \$GITHUB_OUTPUT \(undone\)"):
        file_commands_guard.check_unchanged(states, "the candidate run's command")
    assert output.read_text() == "verdict=fail\n" and not env_file.is_symlink() and env_file.read_text() == ""
