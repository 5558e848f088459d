"""retrieval-gate history: the page and history.json from a real baselines branch."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
from html import unescape
from pathlib import Path

import pytest

import gate.inputs.baselines_branch as branch_module
from gate.cli import main
from gate.demo.archive_branch import commit_baseline
from gate.inputs.config import load_config
from gate.pipeline.history import build_history, pr_number
from gate.rendering.history import POINT_COLOUR, STRATUM_POINT_COLOUR, render_page
from tests.history.world import BRANCH, git, git_env, make_world


@pytest.fixture()
def world(tmp_path):
    return make_world(tmp_path)


def _history(world, monkeypatch, *args: str) -> tuple[int, Path]:
    monkeypatch.chdir(world.repo)
    monkeypatch.delenv("GITHUB_REPOSITORY", raising=False)
    out = world.repo.parent / "page"
    return main(["history", "--config", "gate.yml", "--out", str(out), *args]), out


def test_page_draws_every_baseline_with_one_break(world, monkeypatch, capsys):
    code, out = _history(world, monkeypatch)
    assert code == 0
    printed = capsys.readouterr().out
    assert f"-> {out / 'index.html'}" in printed and "4 baselines, 1 break" in printed
    html = (out / "index.html").read_text()
    assert len(re.findall(rf'<circle class="point" [^>]*fill="{POINT_COLOUR}"', html)) == 4
    assert len(re.findall(rf'<circle class="point stratum-point" [^>]*fill="{STRATUM_POINT_COLOUR}"', html)) == 8
    assert html.count(POINT_COLOUR) == 4  # no other element shares the primary markers' colour
    assert html.count('class="gap"') == 3  # one break, marked on each of the three charts
    assert "golden set changed: 20 -&gt; 30 queries" in html
    # The line never crosses the break: one path per side on the primary chart.
    primary = html.split("<svg")[1]
    assert len(re.findall(r'<path class="series"', primary)) == 1  # three points before, one (no line) after
    data = json.loads((out / "history.json").read_text())
    assert data["statistics"]["seed"] == 11 and data["order"] == "first-parent"
    assert [b["commit"] for b in data["baselines"]] == world.archived
    assert data["breaks"] == [{"before": 3, "reason": "golden set changed: 20 -> 30 queries"}]
    assert [s["stratum"] for s in data["series"]] == [None, "how_to", "navigational"]
    first = data["series"][0]["points"][0]
    assert first["low"] <= first["value"] <= first["high"] and first["n"] == 20 and first["noise_band"] == 0.01
    assert "seed 11" in html


def test_same_branch_gives_the_same_bytes(world, monkeypatch):
    _, out = _history(world, monkeypatch)
    first = (out / "index.html").read_bytes(), (out / "history.json").read_bytes()
    shutil.rmtree(out)
    _, out = _history(world, monkeypatch)
    assert ((out / "index.html").read_bytes(), (out / "history.json").read_bytes()) == first


def test_page_cannot_reach_the_network(world, monkeypatch):
    _, out = _history(world, monkeypatch)
    html = (out / "index.html").read_text()
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1)
    assert policy.startswith("default-src 'none';")
    style = re.search(r"<style>(.*?)</style>", html, re.DOTALL).group(1)
    digest = base64.b64encode(hashlib.sha256(style.encode()).digest()).decode()
    assert f"style-src 'sha256-{digest}'" in policy
    assert not re.search(r"<(link|img|iframe|object)\b|\bsrc=|url\(|@import", html)
    # The only address on a page without a repository is the SVG namespace (a name, never fetched).
    assert set(re.findall(r"https?://[^\s\"'<]+", html)) == {"http://www.w3.org/2000/svg"}
    assert "<script" not in html  # nothing runs


def test_data_is_escaped(tmp_path, monkeypatch):
    world = make_world(tmp_path)
    evil = "Evil </script><script>alert(1)</script> <!-- \u2028 (#9)"
    sha = world.commit(evil, "2025-01-05T12:00:00Z")
    world.archive(sha, 0.6, 30)
    monkeypatch.setenv("GITHUB_REPOSITORY", "o/r")
    history = build_history(load_config(world.repo / "gate.yml"), env={"GITHUB_REPOSITORY": "o/r"})
    html = render_page(history)
    assert "<script" not in html and "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt; &lt;!--" in html
    assert history.to_dict()["baselines"][-1]["subject"] == evil  # history.json keeps it as it is
    assert 'href="https://github.com/o/r/pull/9"' in html


def test_pr_numbers_from_merge_and_squash_subjects():
    assert pr_number("Merge pull request #12 from a/b") == 12
    assert pr_number("Tune the fusion (#7)") == 7
    assert pr_number("Fix #7 in the docs") is None
    assert pr_number("Merge branch 'main' into x") is None


def test_pr_link_from_the_origin_address(world, monkeypatch):
    git(world.repo, "remote", "add", "origin", "git@github.com:owner/repo-name.git")
    history = build_history(load_config(world.repo / "gate.yml"), env={})
    assert history.repository == "owner/repo-name"
    assert [b.pr_url for b in history.baselines] == [None, "https://github.com/owner/repo-name/pull/3",
                                                     "https://github.com/owner/repo-name/pull/4",
                                                     "https://github.com/owner/repo-name/pull/5"]


def test_a_broken_archive_is_skipped_and_said(world, monkeypatch, capsys):
    sha = world.commit("Later (#6)", "2025-01-06T12:00:00Z")
    broken = world.repo.parent / "broken"
    broken.mkdir()
    (broken / "manifest.yml").write_text("schema_version: '1.0'\nmetric: [not, text]\n")
    commit_baseline(world.repo, sha, broken, git_env(world.repo, "2025-01-06T12:00:00Z"))
    code, out = _history(world, monkeypatch)
    assert code == 0
    said = f"{BRANCH}:baselines/{sha}/manifest.yml: manifest has no 'retrieval_config' (skipped)"
    assert said in capsys.readouterr().err
    html = (out / "index.html").read_text()
    assert said in unescape(html) and html.count(f'fill="{POINT_COLOUR}"') == 4


def test_a_tampered_per_query_file_is_skipped(world, monkeypatch, capsys):
    sha = world.commit("Later (#6)", "2025-01-06T12:00:00Z")
    world.archive(sha, 0.6, 30)
    folder = next(world.repo.parent.glob(f"archive-{sha[:12]}"))
    per_query = next(folder.glob("per-query-*.json"))
    per_query.write_text(per_query.read_text().replace("0.", "1.", 1))
    commit_baseline(world.repo, sha, folder, git_env(world.repo, "2025-01-07T12:00:00Z"))
    code, _ = _history(world, monkeypatch)
    assert code == 0
    assert "do not match their sha256 in manifest.yml (skipped)" in capsys.readouterr().err


def test_last_keeps_the_newest(world, monkeypatch):
    _, out = _history(world, monkeypatch, "--last", "2")
    data = json.loads((out / "history.json").read_text())
    assert [b["commit"] for b in data["baselines"]] == world.archived[-2:]
    assert data["breaks"] == [{"before": 1, "reason": "golden set changed: 20 -> 30 queries"}]


def test_metric_and_qrels_changes_break_the_series(world):
    sha = world.commit("RR now (#8)", "2025-01-08T12:00:00Z")
    world.archive(sha, 0.6, 30, metric="RR@10", qrels_tag="b")
    history = build_history(load_config(world.repo / "gate.yml"), env={})
    assert history.breaks[-1].reason == "qrels changed; metric changed nDCG@10 -> RR@10"


def test_commits_not_on_main_are_ordered_by_creation(world):
    git(world.repo, "checkout", "-q", "-b", "side", world.commits[0])
    side = world.commit("A side branch", "2025-01-09T12:00:00Z")
    git(world.repo, "checkout", "-q", "main")
    world.archive(side, 0.4, 20)
    history = build_history(load_config(world.repo / "gate.yml"), env={})
    assert history.order == "created" and len(history.baselines) == 5


def test_a_band_wider_than_the_metric_is_not_drawn(world, monkeypatch):
    sha = world.commit("A hand-edited archive (#9)", "2025-01-09T12:00:00Z")
    world.archive(sha, 0.6, 30, band=1e300)
    _, out = _history(world, monkeypatch)
    data = json.loads((out / "history.json").read_text())
    assert data["baselines"][-1]["noise_band"] is None and data["series"][0]["points"][-1]["noise_band"] is None
    assert all(p["noise_band"] is None for s in data["series"][1:] for p in s["points"][-1:])
    assert "1000000000" not in (out / "index.html").read_text()


def test_last_bounds_the_manifests_parsed_when_ordered_by_creation(world, monkeypatch):
    # A shallow checkout (or one archive off main) orders by creation: --last N must still parse N
    # manifests, not every one on the branch (thousands took minutes).
    git(world.repo, "checkout", "-q", "-b", "side", world.commits[0])
    side = world.commit("A side branch", "2025-01-09T12:00:00Z")
    git(world.repo, "checkout", "-q", "main")
    world.archive(side, 0.4, 20)
    config = load_config(world.repo / "gate.yml")
    every = build_history(config, env={})
    parsed = []
    real = branch_module.load_manifest
    monkeypatch.setattr(branch_module, "load_manifest", lambda path: parsed.append(path) or real(path))
    newest = build_history(config, last=2, env={})
    assert newest.order == "created" and len(parsed) == 2
    assert [b.commit for b in newest.baselines] == [b.commit for b in every.baselines[-2:]]


def test_no_baselines_branch_is_one_line_and_exit_2(world, monkeypatch, capsys):
    code, _ = _history(world, monkeypatch, "--branch", "nope")
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith("retrieval-gate: error: nope: no such branch (local, or origin's) to read archived "
                             "baselines from, and fetching it failed (fatal: 'origin' does not appear")


def test_an_out_folder_that_cannot_be_written_is_one_line_and_exit_2(world, monkeypatch, capsys):
    blocker = world.repo.parent / "page"
    blocker.write_text("a file where the folder should go")
    code, _ = _history(world, monkeypatch)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == [f"retrieval-gate: error: {blocker}: cannot write the history page there: "
                                 "File exists"]
