"""Pinned reports: a report with only its timestamps, dates, durations, commit ids and paths masked,
compared key by key against a file the project keeps (``tests/regression/pinned/``).

A structural change must not move a number. When a change of behaviour is meant to move one,
rewrite the pins with ``python -m tests.regression.pinning`` and let the diff show what moved.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

PINNED = Path(__file__).parent / "pinned"

# Keys whose values are wall-clock: a timestamp or a duration (a run's measured wall time).
_CLOCK_KEYS = re.compile(r"(^|_)(seconds|created|elapsed|wall_time)(_|$)")
# A duration in prose ("0.8 s wall time", "in 0.1s", "2 min").
_DURATION = re.compile(r"(?<![\w.])\d+(?:\.\d+)? ?(?:ms|s|min|h)\b")
# A calendar date in prose ("Archived 2026-12-01."): the day the demo or a scenario ran.
_DATE = re.compile(r"(?<![\w-])\d{4}-\d{2}-\d{2}(?![\w-])")
_TEMP_YARDSTICK = re.compile(r"/[^\s\"']*?retrieval-gate-yardstick-[A-Za-z0-9_]+")
# Floats are compared to 1e-9 relative: a number moved by a refactoring is off by far more, and
# a summation reordered by a new numpy is not a moved number.
REL_TOL = 1e-9


def repository_commits(repo: Path) -> list[str]:
    """Every commit id of a git repository (its ids depend on commit times)."""
    out = subprocess.run(["git", "-C", str(repo), "rev-list", "--all"], capture_output=True, text=True,
                         check=True).stdout.split()
    return out


def normalized(report: Any, *, roots: Iterable[Path] = (), commits: Iterable[str] = ()) -> Any:
    """The report with its clock values dropped and its paths and commit ids masked."""
    # A path in Markdown has its underscores escaped.
    roots = sorted({form for r in roots for form in (str(r), str(r).replace("_", "\\_"))}, key=len, reverse=True)
    commits = list(commits)

    def text(value: str) -> str:
        for root in roots:
            value = value.replace(root, "<ROOT>")
        value = _TEMP_YARDSTICK.sub("<YARDSTICK>", value)
        value = _DURATION.sub("<DURATION>", value)
        value = _DATE.sub("<DATE>", value)
        for commit in commits:
            value = value.replace(commit, "<COMMIT>").replace(commit[:12], "<COMMIT>")
        return value

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {text(k): walk(v) for k, v in value.items() if not _CLOCK_KEYS.search(k)}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, str):
            return text(value)
        return value

    return walk(report)


def differences(expected: Any, actual: Any, where: str = "$") -> list[str]:
    """Every place the two trees differ, as ``path: expected != actual`` lines."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        out = []
        for key in sorted(set(expected) | set(actual)):
            if key not in actual:
                out.append(f"{where}.{key}: missing (pinned {_short(expected[key])})")
            elif key not in expected:
                out.append(f"{where}.{key}: new key ({_short(actual[key])})")
            else:
                out += differences(expected[key], actual[key], f"{where}.{key}")
        return out
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return [f"{where}: {len(expected)} items pinned, {len(actual)} now"]
        return [d for i, (e, a) in enumerate(zip(expected, actual)) for d in differences(e, a, f"{where}[{i}]")]
    if isinstance(expected, float) and isinstance(actual, (int, float)) and not isinstance(actual, bool):
        if math.isclose(expected, actual, rel_tol=REL_TOL, abs_tol=1e-12):
            return []
    elif type(expected) is type(actual) and expected == actual:
        return []
    return [f"{where}: pinned {_short(expected)}, now {_short(actual)}"]


def _short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 120 else text[:117] + "..."


def check_pinned(name: str, report: Any) -> list[str]:
    """The differences between ``report`` (already normalized) and the pin ``name``."""
    pin = PINNED / f"{name}.json"
    return differences(json.loads(pin.read_text(encoding="utf-8")), report)


def write_pin(name: str, report: Any) -> Path:
    PINNED.mkdir(exist_ok=True)
    pin = PINNED / f"{name}.json"
    pin.write_text(json.dumps(report, indent=1, sort_keys=True, allow_nan=False) + "\n", encoding="utf-8")
    return pin


if __name__ == "__main__":  # rewrite every pin from the code as it stands
    import tempfile

    from tests.regression import scenarios

    with tempfile.TemporaryDirectory() as scratch:
        for pin_name, produce in scenarios.ALL.items():
            print(write_pin(pin_name, produce(Path(scratch) / pin_name)))
