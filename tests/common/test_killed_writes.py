"""A command killed mid-write leaves its temporary file; the next command that writes into that
folder removes it, and never a live writer's (issue 35: killed archives left `.tmp` files).

The killed command blocks inside its write (a hook on ``os.fsync``, which the atomic write
calls after the bytes are in the temporary file, waits on a FIFO nobody opens) and says so
through a marker file: the test kills it at that point, whatever the machine's speed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from gate.cli import main
from gate.common import atomic
from tests.badinputs import battery as B

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

REPO = Path(__file__).resolve().parents[2]
COMPARE = ["compare", "--baseline", "runs/base.run", "--candidate", "runs/cand.run", "--qrels", "eval/qrels.txt",
           "--samples", "200", "--out", "out"]

# The command, in a process of its own, whose first fsync of a temporary file under out/ blocks.
BLOCKED = """
import os, sys
real_fsync = os.fsync
def fsync(fd):
    name = os.readlink(f"/proc/self/fd/{fd}")
    if name.endswith(".tmp") and os.path.basename(os.path.dirname(name)) == "out":
        open(sys.argv[1], "w").close()           # the temporary file is written: kill me now
        os.open(sys.argv[2], os.O_RDONLY)        # a FIFO with no writer: blocks until killed
    real_fsync(fd)
os.fsync = fsync
from gate.cli import main
sys.exit(main(sys.argv[3:]))
"""


def _temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def _killed_mid_write(world: Path) -> int:
    marker, fifo = world / "written", world / "never-opened"
    os.mkfifo(fifo)
    child = subprocess.Popen([sys.executable, "-c", BLOCKED, str(marker), str(fifo), *COMPARE], cwd=world,
                             env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300  # generous: only a broken hook gets near it
    while not marker.exists():
        if child.poll() is not None or time.monotonic() > deadline:
            child.kill()
            pytest.fail(f"the command never reached its write: {child.communicate()[1].decode()[-500:]}")
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait()
    return child.pid


def test_a_killed_commands_temp_file_is_removed_by_the_next_command_and_a_live_ones_kept(tmp_path):
    world = tmp_path / "world"
    B.prepare(None, world)  # type: ignore[arg-type] - prepare only writes the world
    out = world / "out"
    killed = _killed_mid_write(world)
    left = _temps(out)
    assert len(left) == 1 and left[0].startswith(".report.") and f".rg-{killed}-" in left[0], left
    # This process is alive: its temporary file (one it is still writing) must survive the sweep,
    # and so must a .tmp that does not say whose it is.
    fd, live = tempfile.mkstemp(prefix=atomic.temp_prefix(out / "report.md"), suffix=".tmp", dir=out)
    os.close(fd)
    (out / ".notes.tmp").write_text("not the gate's\n")
    cwd = os.getcwd()
    os.chdir(world)
    try:
        code = main(COMPARE)
    finally:
        os.chdir(cwd)
    assert code in (0, 1, 3)
    assert _temps(out) == sorted([Path(live).name, ".notes.tmp"])
    assert (out / "report.json").is_file() and (out / "report.md").is_file()


def test_a_reused_pid_or_another_boot_does_not_keep_a_dead_writers_file(tmp_path):
    """The pid alone would lie: the owner is this process's pid with another start time (the
    pid given to a new process), or a pid from before a reboot."""
    me = atomic.owner_tag().split("-")
    pid, start, boot = me[1], int(me[2]), me[3]
    other_boot = "f" * 8 if boot != "f" * 8 else "e" * 8
    stale = [f".run.rg-{pid}-{start + 1}-{boot}.abc123.tmp", f".run.rg-{pid}-{start}-{other_boot}.abc124.tmp",
             f".run.rg-999999999-1-{boot}.abc125.tmp"]
    alive = f".run.rg-{pid}-{start}-{boot}.abc126.tmp"
    for name in [*stale, alive]:
        (tmp_path / name).write_text("x")
    assert sorted(atomic.sweep_stale_temp_files(tmp_path)) == sorted(stale)
    assert _temps(tmp_path) == [alive]


def test_the_next_command_to_start_sweeps_the_gates_folders_even_where_it_writes_nothing(tmp_path):
    """A killed `archive` left its temp in the baseline folder; `plan` (which writes nothing
    there) removes it as it starts, and keeps a live writer's."""
    world = tmp_path / "world"
    B.prepare(None, world)  # type: ignore[arg-type] - prepare only writes the world
    baseline = world / ".retrieval-gate" / "baseline"
    baseline.mkdir(parents=True)
    dead = baseline / ".manifest.yml.rg-999999999-1-0.abc123.tmp"
    dead.write_text("half a manifest")
    live = baseline / f".manifest.yml.{atomic.owner_tag()}.abc124.tmp"
    live.write_text("a manifest being written")
    cwd = os.getcwd()
    os.chdir(world)
    try:
        main(["plan", "--runs-dir", "planned"])
    finally:
        os.chdir(cwd)
    assert not dead.exists() and live.exists()
