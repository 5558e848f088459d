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
