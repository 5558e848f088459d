"""Writes tests/slow_tests.txt from a fast-tier run's durations: the tests the fast tier leaves to
the full tier (CI runs them all), so that ./run test stays within its few minutes on 2 cores.

    .venv/bin/python -m pytest -n 2 --dist loadgroup --durations=0 --durations-min=0.3 > durations.log
    python tools/slow_tests.py durations.log [--over 1.5]
"""

from __future__ import annotations

import argparse
import collections
import re
from pathlib import Path

LIST = Path(__file__).resolve().parents[1] / "tests" / "slow_tests.txt"
HEADER = """\
# Tests the fast tier (./run test) leaves to the full tier (./run test-full, CI): each took {over} s
# or more (setup, call and teardown) in a fast-tier run on 2 cores, measured with
#   .venv/bin/python -m pytest -n 2 --dist loadgroup --durations=0 --durations-min=0.3
# and listed by tools/slow_tests.py. CI runs every one of them; a test missing here only
# makes the fast tier slower. One pytest node id per line.
"""
_LINE = re.compile(r"([0-9.]+)s (?:call|setup|teardown)\s+(\S+::\S+)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("log", type=Path, help="the output of pytest --durations=0")
    parser.add_argument("--over", type=float, default=1.5, help="seconds a test takes to leave the fast tier")
    args = parser.parse_args()
    seconds: collections.Counter[str] = collections.Counter()
    for line in args.log.read_text(encoding="utf-8", errors="replace").splitlines():
        found = _LINE.match(line)
        if found:
            seconds[found.group(2)] += float(found.group(1))
    slow = sorted(node for node, total in seconds.items() if total >= args.over)
    LIST.write_text(HEADER.format(over=args.over) + "".join(f"{node}\n" for node in slow), encoding="utf-8")
    print(f"{len(slow)} tests of {len(seconds)} timed take {args.over} s or more: {LIST}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
