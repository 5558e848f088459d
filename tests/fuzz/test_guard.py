"""The fuzz harness's hang guard counts the process's CPU time, not the wall clock: a loaded
machine (other processes taking the cores) does not turn a slow read into a 'hang' (issue 32)."""

from __future__ import annotations

import time

from tests.fuzz.strategies import outcome_of


def _spin():
    while True:
        pass


def test_a_reader_that_never_returns_is_a_hang():
    assert outcome_of(_spin, seconds=0.5).hang


def test_waiting_is_not_a_hang_only_computing_is():
    # 1.2 s of wall time and almost no CPU time: what a read looks like when the machine is busy
    out = outcome_of(lambda: time.sleep(1.2) or "read", seconds=0.5)
    assert not out.hang and out.value == "read"
