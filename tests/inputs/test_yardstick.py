"""Baselines from the bot's branch: the base commit's, else the newest ancestor's."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from gate.inputs.config import load_config
from gate.inputs.yardstick import baseline_from_branch, load_yardstick
from gate.pipeline.archive import archive
from tests.support.small_world import small_world


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@e", "-c", "user.name=t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_the_baseline_comes_from_the_baselines_branch_or_the_newest_ancestor(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    config = small_world(repo, leak_in_new=False)
    (repo / ".gitignore").write_text(".retrieval-gate/\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "one")
    first = _git(repo, "rev-parse", "HEAD")
    archive(load_config(config), progress=lambda m: None)
    archived = repo / ".retrieval-gate" / "baseline"
    # The archive workflow: baselines/<sha>/ on the bot's branch.
    _git(repo, "checkout", "-q", "--orphan", "retrieval-gate-baselines")
    _git(repo, "rm", "-rq", "--cached", ".")
    target = repo / "baselines" / first
    shutil.copytree(archived, target)
    _git(repo, "add", "-f", f"baselines/{first}")
    _git(repo, "commit", "-qm", "baseline")
    shutil.rmtree(repo / "baselines")
    _git(repo, "checkout", "-q", "-f", "main")
    (repo / "README.md").write_text("later commit without a baseline\n")
    _git(repo, "add", "README.md")
    _git(repo, "commit", "-qm", "two")
    second = _git(repo, "rev-parse", "HEAD")

    out = tmp_path / "m1"
    assert baseline_from_branch(repo, first, out) == f"retrieval-gate-baselines:baselines/{first}"
    assert (out / "manifest.yml").exists()
    out = tmp_path / "m2"
    source = baseline_from_branch(repo, second, out)
    assert source.startswith(f"retrieval-gate-baselines:baselines/{first}") and "newest ancestor" in source
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in archived.iterdir())


def test_an_unreadable_base_falls_back_to_the_workspace_with_a_warning(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    config = small_world(repo, leak_in_new=False)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "one")
    yard = load_yardstick(config, "0" * 40, tmp_path / "overlay", [])
    assert yard.source == "workspace" and "cannot be read" in yard.warning


def test_every_link_on_the_way_is_watched(tmp_path):
    """A chain (config.yml -> a.yml -> b.yml) and a folder link (retrieval -> configs1): each link
    is watched, so retargeting one is a change to what the config reads."""
    from gate.inputs.yardstick import matches, with_link_targets

    root = tmp_path
    (root / "configs").mkdir()
    (root / "configs" / "b.yml").write_text("x\n")
    os.symlink("b.yml", root / "configs" / "a.yml")
    (root / "retrieval").mkdir()
    os.symlink("../configs/a.yml", root / "retrieval" / "config.yml")
    (root / "configs1").mkdir()
    (root / "configs1" / "config.yml").write_text("y\n")
    os.symlink("configs1", root / "svc")
    watched = with_link_targets(root, ["retrieval/config.yml", "svc/config.yml"])
    assert watched == ["retrieval/config.yml", "configs/a.yml", "configs/b.yml", "svc/config.yml", "svc",
                       "configs1/config.yml"]
    assert matches("configs/a.yml", watched) and matches("svc", watched)


def test_globs_mean_what_pathlib_means_for_the_key_and_the_watch_list():
    from gate.inputs.yardstick import EVERYTHING, matches

    assert matches("search/run.py", ["search/**/*.py"])  # ** is zero folders too, as Path.glob keys it
    assert matches("search/a/b/c.py", ["search/**/*.py"])
    assert not matches("search/sub/helper.py", ["search/*.py"])  # * stays in its folder, as the key does
    assert matches("README.md", [EVERYTHING]) and matches("a/b/c", [EVERYTHING])
    assert matches(".github/workflows/ci.yml", [".github/workflows/**"])
    assert matches("b.yml", ["[ab].yml"]) and not matches("a.yml", ["[!ab].yml"])
