"""Subprocesses bounded by the CPU time they use, not by the wall clock.

A hang guard in wall-clock seconds fails a test on a loaded machine (other processes on the
cores) although nothing hung: the gate's demo at scale 0.1 timed out after 300 s of wall time
with three busy loops and a second test session beside it. Here a child's budget counts the CPU
seconds of its process group; a child blocked without computing (waiting on a FIFO) is a hang
after WALL_FACTOR times its budget of wall time. Without /proc the wall clock alone decides.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from typing import Any

WALL_FACTOR = 6.0
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def group_cpu_seconds(pgid: int) -> float | None:
    """CPU seconds used so far by the live processes of a process group (and by the children they
    have waited for); None where /proc cannot be read."""
    total, found = 0.0, False
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        if int(fields[2]) == pgid:  # fields from the state on: state, ppid, pgrp, ...
            total += sum(int(f) for f in fields[11:15]) / _TICKS  # utime, stime, cutime, cstime
            found = True
    return total if found else None


def hung(started: float, budget: float, pgid: int) -> bool:
    """Past its budget: whether the process group has used more CPU time than that, or
    WALL_FACTOR times it of wall time (blocked without computing)."""
    elapsed = time.monotonic() - started
    if elapsed <= budget:
        return False
    if elapsed > budget * WALL_FACTOR:
        return True
    used = group_cpu_seconds(pgid)
    return used is None or used > budget


def run(args: Sequence[str], *, cpu_timeout: float, text: bool = True, input: str | None = None,
        **popen: Any) -> subprocess.CompletedProcess:
    """``subprocess.run(args, capture_output=True, text=text)`` whose timeout counts CPU seconds:
    :class:`subprocess.TimeoutExpired` after ``cpu_timeout`` CPU seconds of the child's process
    group (or WALL_FACTOR times that of wall time), the group killed."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        stdin = subprocess.PIPE if input is not None else subprocess.DEVNULL
        started = time.monotonic()
        proc = subprocess.Popen(list(args), stdout=out, stderr=err, stdin=stdin, start_new_session=True, **popen)
        if input is not None:
            assert proc.stdin is not None
            proc.stdin.write(input.encode())
            proc.stdin.close()
        polls = 0
        while proc.poll() is None:
            polls += 1
            if polls % 25 == 0 and hung(started, cpu_timeout, proc.pid):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
                raise subprocess.TimeoutExpired(list(args), cpu_timeout)
            time.sleep(0.02)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if text:
        return subprocess.CompletedProcess(list(args), proc.returncode, stdout.decode(errors="replace"),
                                           stderr.decode(errors="replace"))
    return subprocess.CompletedProcess(list(args), proc.returncode, stdout, stderr)
