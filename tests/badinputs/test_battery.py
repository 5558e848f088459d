"""Every bad input of the battery meets its expectation (tests/badinputs/battery.py).

Runs the whole battery through the installed CLI, two subprocesses at a time,
and fails with one readable line per case that did not: exit 4 / tracebacks,
hangs, silent acceptance, a wrong exit code, an error that is not one line
naming the file (and line), memory over budget. Cases built from
../shared/realdata are skipped (and counted) when it is absent.

Narrow it with ``RETRIEVAL_GATE_BATTERY=SUBSTRING`` (comma separated); the
benchmark ``benchmarks/bench_bad_inputs.py`` runs the same cases with figures.
"""

from __future__ import annotations

import os

import pytest

from tests.badinputs.battery import CLI_ARGV, build_cases, realdata_available, run_all

CASES = build_cases()


def test_the_battery_is_large_deterministic_and_covers_the_categories():
    again = build_cases()
    assert [c.name for c in again] == [c.name for c in CASES]
    assert [c.files for c in again][:200] == [c.files for c in CASES][:200]
    assert len(CASES) >= 500
    categories = {c.category for c in CASES}
    for needed in ("10 MB line", "1 MB docno / qid", "a query of a million tokens", "CR-only line endings",
                   "NUL bytes", "byte-order mark in the middle", "invalid UTF-8", "lone surrogates in JSON",
                   "JSON nested 100,000 deep", "integers of thousands of digits", "labels beyond int64",
                   "non-finite score", "truncated gzip", "gzip with garbage appended", "gzip bomb", "empty file",
                   "header-only file", "wrong column count", "duplicates", "input is a directory", "input is a FIFO",
                   "input is a device", "input is a symlink to /dev/zero", "YAML aliases (billion laughs)",
                   "YAML complex keys", "YAML nested 3,000 deep", "config values (.nan/.inf/negative/absurd)",
                   "absurd measure cutoffs / wrong measure names", "config values naming missing files",
                   "irds ids unknown or not cached", "runs and qrels share no query", "empty runs",
                   "--runs-dir that does not exist", "silent acceptance"):
        assert needed in categories, needed


def test_every_bad_input_is_refused_cleanly(tmp_path):
    if not os.path.exists(CLI_ARGV[0]):
        pytest.skip(f"the CLI {CLI_ARGV[0]} is not installed")
    cases = CASES
    only = os.environ.get("RETRIEVAL_GATE_BATTERY")
    if only:
        cases = [c for c in cases if any(s in c.name for s in only.split(","))]
    # A hang is a hang after 20 s of CPU time (or 120 s blocked, battery.WALL_FACTOR): the cap keeps a
    # broken gate from taking the suite's whole budget, and a loaded machine does not reach it.
    outcomes = run_all(cases, tmp_path, jobs=2, timeout_cap=20.0)
    failures = [o for o in outcomes if not o.ok]
    skipped = sum(1 for o in outcomes if o.kind == "skipped")
    if skipped and not realdata_available():
        print(f"{skipped} real-data cases skipped: ../shared/realdata is absent")
    if failures:
        lines = [f"{len(failures)} of {len(outcomes)} bad-input cases failed:"]
        for o in sorted(failures, key=lambda o: (o.kind, o.case.name)):
            lines.append(f"[{o.kind}] {o.case.name}: {o.problem[:300]}\n    $ {o.case.command()[:200]}")
        pytest.fail("\n".join(lines), pytrace=False)
