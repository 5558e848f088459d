"""The history page in a real browser: headless Chromium, network off, opens the page
``retrieval-gate history`` wrote from a real baselines branch; the chart is drawn (the
screenshot is not blank and holds one marker per archived baseline), and nothing complains
(no console error, no CSP refusal, no load leaves the file)."""

from __future__ import annotations

import json

import pytest

from gate.cli import main
from gate.rendering.history import POINT_COLOUR, STRATUM_POINT_COLOUR
from tests.browser.png import count_blobs, is_blank
from tests.history.world import make_world

#: The first screen of a laptop: the primary chart must be whole in it.
FIRST_SCREEN = (1280, 800)


def _rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


@pytest.fixture()
def page(tmp_path, monkeypatch):
    world = make_world(tmp_path)
    monkeypatch.chdir(world.repo)
    monkeypatch.delenv("GITHUB_REPOSITORY", raising=False)
    out = tmp_path / "history"
    assert main(["history", "--config", "gate.yml", "--out", str(out)]) == 0
    return out


def test_the_history_page_draws_one_marker_per_baseline_offline_without_errors(browser, page):
    data = json.loads((page / "history.json").read_text())
    baselines = len(data["baselines"])
    assert baselines == 4  # the world: three archives on one golden set, one after the break
    rendered = browser.render(page / "index.html", *FIRST_SCREEN)
    assert rendered.errors == ()
    assert rendered.failed_loads == ()
    assert not is_blank(rendered.png)
    assert count_blobs(rendered.png, _rgb(POINT_COLOUR), tolerance=8) == baselines
    # Every request the page made was the page itself: nothing else, not even a font.
    assert [url for url in rendered.requested if not url.endswith("/index.html")] == []
    assert rendered.dom.count('class="point"') == baselines


def test_the_whole_page_draws_every_stratum_s_markers_too(browser, page):
    data = json.loads((page / "history.json").read_text())
    strata = [series for series in data["series"] if series["stratum"] is not None]
    expected = sum(len(series["points"]) for series in strata)
    assert expected == 8
    rendered = browser.render(page / "index.html", 1280, 3000)
    assert rendered.errors == ()
    assert count_blobs(rendered.png, _rgb(STRATUM_POINT_COLOUR), tolerance=8) == expected
