"""The demo's baselines branch and its history page: every main commit archived, one break."""

from __future__ import annotations

import json
import re

from gate.rendering.history import POINT_COLOUR, STRATUM_POINT_COLOUR
from tests.browser.conftest import browser  # noqa: F401 (the fixture: Chromium, network off, or a skip)
from tests.browser.png import count_blobs, is_blank


def test_the_demo_writes_a_history_with_one_break(demo):
    assert demo.history == demo.out / "history" / "index.html"
    data = json.loads((demo.out / "history" / "history.json").read_text())
    subjects = [b["subject"] for b in data["baselines"]]
    assert subjects == ["Archive the baseline on golden v4", "Fusion weight 0.6 for keyword-heavy queries (#2)",
                        "Fusion weight back to 0.4: #2 hurt navigational queries (#3)",
                        "Golden set v5 (140 queries) and the noise band"]
    assert [b["pr"] for b in data["baselines"]] == [None, 2, 3, None]
    assert data["order"] == "first-parent"
    assert data["breaks"] == [{"before": 3, "reason": "golden set changed: 80 -> 140 queries; qrels changed"}]
    primary = [p["value"] for p in data["series"][0]["points"]]
    # Putting the config back gives the archived baseline's numbers again; the tried weight moved them.
    assert primary[0] == primary[2] != primary[1]
    assert abs(primary[0] - demo.report["baseline"]["archived"]["mean"]) < 1e-9
    # The v5 archive carries the noise band measured on v5; the v4 ones had none.
    assert [b["noise_band"] is not None for b in data["baselines"]] == [False, False, False, True]
    assert len(data["series"]) == 1 + len(demo.report["strata"])
    html = demo.history.read_text()
    assert len(re.findall(rf'<circle class="point" [^>]*fill="{POINT_COLOUR}"', html)) == 4
    assert html.count(STRATUM_POINT_COLOUR) == 4 * len(demo.report["strata"])


def test_the_demos_comment_shows_the_trend_after_a_break(demo):
    trend = demo.report["trend"]
    # Only the v5 archive is commensurable with the PR (same golden set): it, then the candidate.
    assert [p["candidate"] for p in trend["points"]] == [False, True] and trend["broken"] is True
    assert abs(trend["first"] - demo.report["baseline"]["mean"]) < 0.05
    everything = demo.report["measures"]["nDCG@10"]  # the reporting set's means (leaked queries left out)
    assert trend["last"] != everything["candidate"]  # the trend's candidate is on every judged query
    line = next(line for line in demo.comment.splitlines() if line.startswith("**Trend of nDCG@10 on main:**"))
    assert line.startswith(f"**Trend of nDCG@10 on main:** `{trend['sparkline']}` {trend['first']:.3f} → "
                           f"{trend['last']:.3f} (this PR)")


def _rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def test_the_demos_history_page_renders_offline_with_every_point(demo, browser):  # noqa: F811
    points = len(json.loads((demo.out / "history" / "history.json").read_text())["baselines"])
    first_screen = browser.render(demo.history, 1280, 800)
    assert first_screen.errors == () and first_screen.failed_loads == ()
    assert not is_blank(first_screen.png)
    assert count_blobs(first_screen.png, _rgb(POINT_COLOUR), tolerance=8) == points == 4
    whole = browser.render(demo.history, 1280, 4000)
    assert whole.errors == ()
    assert count_blobs(whole.png, _rgb(STRATUM_POINT_COLOUR), tolerance=8) == points * len(demo.report["strata"])
