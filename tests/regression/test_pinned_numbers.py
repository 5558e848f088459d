"""The numbers do not move: ``compare`` on generated runs against its pinned reports.

(The demo's pin is checked in ``tests/demo/test_demo_run.py``, on the demo that module runs.)
"""

from __future__ import annotations

import pytest

from tests.regression import scenarios
from tests.regression.pinning import check_pinned, differences


@pytest.mark.parametrize("name", ["compare-with-strata", "compare-graded", "compare-regression"])
def test_compare_on_generated_runs_reproduces_its_pinned_report(name, tmp_path):
    moved = check_pinned(name, scenarios.ALL[name](tmp_path))
    assert not moved, "\n".join(moved[:40])


def test_the_comparison_catches_a_moved_number_a_lost_key_and_a_new_one():
    pinned = {"delta": {"mean": 0.0312, "ci": [0.01, 0.05]}, "verdict": {"kind": "pass"}, "n": 3}
    assert differences(pinned, pinned) == []
    assert differences(pinned, {**pinned, "delta": {"mean": 0.0313, "ci": [0.01, 0.05]}}) == [
        "$.delta.mean: pinned 0.0312, now 0.0313"]
    assert differences(pinned, {**pinned, "delta": {"mean": 0.0312 * (1 + 1e-12), "ci": [0.01, 0.05]}}) == []
    assert differences(pinned, {"delta": pinned["delta"], "n": 3, "extra": 1}) == [
        "$.extra: new key (1)", '$.verdict: missing (pinned {"kind": "pass"})']
    assert differences({"n": 3}, {"n": 3.0}) == ["$.n: pinned 3, now 3.0"]
    assert differences({"a": [1, 2]}, {"a": [1]}) == ["$.a: 2 items pinned, 1 now"]
