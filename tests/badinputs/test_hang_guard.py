"""The battery's hang guard counts a case's CPU time, with the wall clock far behind it for a case
blocked without computing (issue 32): a loaded machine does not turn a slow case into a hang."""

from __future__ import annotations

import sys

import pytest

from tests.badinputs import battery as B

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _spawn(monkeypatch, tmp_path, code: str, timeout: float):
    monkeypatch.setattr(B, "CLI_ARGV", (sys.executable, "-c", code))
    exit_code, seconds, _rss, _out, err = B._spawn((), tmp_path, {"PATH": "/usr/bin:/bin"}, timeout, "guard")
    return exit_code, seconds, err


def test_a_case_that_computes_past_its_timeout_is_a_hang(monkeypatch, tmp_path):
    exit_code, seconds, _ = _spawn(monkeypatch, tmp_path, "while True: pass", timeout=0.5)
    assert exit_code is None and seconds > 0.5


def test_a_case_that_waits_is_not_a_hang_until_far_past_its_timeout(monkeypatch, tmp_path):
    # 1.5 s of wall time and almost no CPU time: what a case looks like when the machine is busy
    monkeypatch.setattr(B, "WALL_FACTOR", 1000.0)
    exit_code, seconds, err = _spawn(monkeypatch, tmp_path, "import time; time.sleep(1.5)", timeout=0.5)
    assert exit_code == 0 and seconds >= 1.5, err


def test_a_case_blocked_for_good_is_a_hang_after_the_wall_factor(monkeypatch, tmp_path):
    monkeypatch.setattr(B, "WALL_FACTOR", 4.0)
    exit_code, seconds, _ = _spawn(monkeypatch, tmp_path, "import time; time.sleep(3600)", timeout=0.25)
    assert exit_code is None and seconds >= 1.0
