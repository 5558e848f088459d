"""The PR comment's trend: the last commensurable archived baselines and the candidate, as a
sparkline drawn from the report's numbers, and the history page's link."""

from __future__ import annotations

import json
import subprocess

import pytest

from gate.inputs.config import load_config
from gate.pipeline.history import GoldenIdentity, recent_baselines, trend_of
from gate.rendering.comment import render_comment
from gate.rendering.history import history_line, sparkline
from gate.report.document import read_report
from tests.history.world import BRANCH, git, make_world
from tests.regression.pinning import PINNED

IDENTITY_30 = GoldenIdentity(f"{30:064x}", "a" * 64, "nDCG@10", 1)


def test_sparkline_spans_the_blocks():
    assert sparkline([0.1, 0.5, 0.9]) == "▁▅█"
    assert sparkline([0.0, 1 / 7, 2 / 7, 3 / 7, 4 / 7, 5 / 7, 6 / 7, 1.0]) == "▁▂▃▄▅▆▇█"
    assert sparkline([0.3, 0.3]) == "▄▄"
    assert sparkline([0.2]) == "▄"
    # A report.json the PR's code wrote may hold any finite number: a span beyond a float's range
    # is still drawn, never a ValueError in the comment job.
    assert sparkline([-1.7e308, 0.0, 1.7e308]) == "▁▅█"


def test_a_report_whose_trend_spans_more_than_a_float_is_still_commented():
    trend = {**TREND, "points": [{"commit": "a" * 40, "value": -1e308, "candidate": False},
                                 {"commit": None, "value": 1e308, "candidate": True}]}
    assert "`┆▁█`" in render_comment(_report(trend=trend))


@pytest.fixture()
def world(tmp_path):
    return make_world(tmp_path)


def _recent(world):
    config = load_config(world.repo / "gate.yml")
    return recent_baselines(config.workspace_root, world.commits[-1], token=None, remote_url=None, warnings=[])


def test_only_the_newest_commensurable_baselines_and_the_candidate(world):
    for k in range(9):  # ten on the 30-query golden set in all
        world.archive(world.commit(f"Tweak {k} (#{10 + k})", f"2025-02-{k + 1:02d}T12:00:00Z"), 0.6, 30)
    found = _recent(world)
    assert [b.folder for b in found] == world.archived[-9:]  # 8 shown and one more: does an older one break?
    trend = trend_of(found, 0.7, IDENTITY_30)
    assert trend is not None and not trend.broken
    assert [p.commit for p in trend.points] == world.archived[-8:] + [None]
    assert trend.to_dict()["last"] == 0.7 and trend.to_dict()["points"][-1]["candidate"] is True


def test_an_older_baseline_on_another_golden_set_breaks_the_trend(world):
    trend = trend_of(_recent(world), 0.7, IDENTITY_30)
    assert trend is not None and trend.broken
    assert [p.commit for p in trend.points] == [world.archived[-1], None]
    assert trend.sparkline.startswith("┆")


@pytest.mark.parametrize("remote", ["a repository without the branch", "an unreachable address"])
def test_a_baselines_ref_planted_in_the_checkout_is_not_read_when_the_fetch_does_not_replace_it(world, tmp_path,
                                                                                              remote):
    # An earlier step of the PR's workflow may write .git/refs/retrieval-gate/<branch>: the fetch
    # from the repository's own address overwrites it when the branch exists there; when it does
    # not (or the fetch fails), the planted ref must not become the archive.
    origin = tmp_path / "origin.git"
    if remote == "a repository without the branch":
        subprocess.run(["git", "clone", "-q", "--bare", "--single-branch", "--branch", "main", str(world.repo),
                        str(origin)], check=True, capture_output=True)
    planted = git(world.repo, "rev-parse", BRANCH)
    git(world.repo, "update-ref", f"refs/retrieval-gate/{BRANCH}", planted)
    git(world.repo, "branch", "-D", BRANCH)
    config = load_config(world.repo / "gate.yml")
    found = recent_baselines(config.workspace_root, world.commits[-1], token=None, remote_url=f"file://{origin}",
                             warnings=[])
    assert found == []


def test_no_archive_no_trend(world):
    assert trend_of([], 0.7, IDENTITY_30) is None
    other = GoldenIdentity("b" * 64, "a" * 64, "nDCG@10", 1)
    trend = trend_of(_recent(world), 0.7, other)  # nothing commensurable: the candidate alone, after a break
    assert trend is not None and trend.broken and [p.commit for p in trend.points] == [None]


def _report(**extra):
    pinned = json.loads((PINNED / "demo-seed7.json").read_text())["report"]
    pinned.pop("trend", None)
    pinned.pop("history_url", None)
    return read_report({**pinned, **extra}, "report.json")


TREND = {"metric": "nDCG@10", "sparkline": "IGNORED", "first": 0.5, "last": 0.6, "broken": True,
         "points": [{"commit": "a" * 40, "value": 0.5, "candidate": False},
                    {"commit": "b" * 40, "value": 0.55, "candidate": False},
                    {"commit": None, "value": 0.6, "candidate": True}]}


def test_the_comment_shows_the_trend_and_links_the_history():
    report = _report(trend=TREND, history_url="https://o.github.io/r/history/")
    line = history_line(report)
    assert line == ("**Trend of nDCG@10 on main:** `┆▁▅█` 0.500 → 0.600 (this PR) · the last 2 archived baselines "
                    "and this PR; ┆ older ones were measured on another golden set, qrels or metric · "
                    "[history of nDCG@10 on main](https://o.github.io/r/history/)")
    assert line in render_comment(report)


def test_an_unsafe_address_in_a_report_is_not_linked():
    # report.json is an artifact the PR's code could have written: the link is checked again.
    for url in ("https://x.io/a)(javascript:alert(1)", "http://x.io/", "https://x.io/a b", "javascript:alert(1)"):
        assert "](" not in history_line(_report(history_url=url))


def test_without_trend_or_address_the_comment_says_nothing_about_history():
    report = _report(trend=None)
    assert history_line(report) == ""
    comment = render_comment(report)
    assert "Trend of" not in comment and "\n\n\n" not in comment


@pytest.mark.parametrize("url,ok", [("https://o.github.io/r/", True), ("https://x.example.com:8443/a?x=1#t", True),
                                    ("http://o.github.io/r/", False), ("https://o.github.io/r/(x)", False),
                                    ("https://o.github.io/r/ x", False), ("https://o.github.io/<b>", False),
                                    ("ftp://x", False)])
def test_history_url_is_a_plain_https_address(tmp_path, url, ok):
    from gate.cli import main

    config = tmp_path / "gate.yml"
    config.write_text("golden: {queries: q.jsonl, qrels: r.txt}\nretrieval: {config: x.yml}\n"
                      f"runner: {{command: 'true {{run}}'}}\nhistory:\n  url: '{url}'\n")
    if ok:
        assert load_config(config).history.url == url
    else:
        with pytest.raises(Exception) as refused:
            load_config(config)
        assert str(refused.value).startswith(f"{config}:5: key 'history.url': expected an https:// address")
        assert main(["history", "--config", str(config)]) == 2
