"""tests.support.bounded: the test suite's subprocess guard counts CPU seconds, so a loaded
machine does not fail a test, while a child that spins or blocks is still stopped."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support import bounded


def test_output_and_exit_code_come_back_as_subprocess_run_gives_them():
    done = bounded.run([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"],
                       cpu_timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
    echoed = bounded.run([sys.executable, "-c", "print(input().upper())"], cpu_timeout=60, input="abc\n")
    assert echoed.stdout == "ABC\n"


def test_a_child_that_spins_is_stopped_by_its_cpu_budget():
    with pytest.raises(subprocess.TimeoutExpired):
        bounded.run([sys.executable, "-c", "while True: pass"], cpu_timeout=0.5)


def test_a_child_that_blocks_is_stopped_after_its_wall_factor():
    with pytest.raises(subprocess.TimeoutExpired):
        bounded.run([sys.executable, "-c", "import time; time.sleep(60)"], cpu_timeout=0.2)


def test_a_child_that_waits_less_than_its_wall_factor_is_not_a_hang():
    # Waiting (as on a loaded machine, where the child gets little CPU) past the budget in wall time
    # is not a hang while the CPU it used stays under the budget.
    done = bounded.run([sys.executable, "-c", "import time; time.sleep(1.5); print('done')"], cpu_timeout=0.5)
    assert done.stdout == "done\n"
