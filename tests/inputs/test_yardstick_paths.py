"""Yardstick files and watch globs by their repository paths, whatever their names hold.

Before, a yardstick file was used as a glob (``qrels[v2].txt`` read as a set of one character
naming ``qrelsv.txt``), a non-ASCII one was listed quoted by git (never a goalpost), a base
commit's baseline folder was listed by ``git ls-tree`` without ``-z`` (a non-ASCII file in it not
copied), and ``watch:`` was the one glob of the config not read relative to the config's folder.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from gate.inputs import git
from gate.inputs.config import load_config
from gate.inputs.yardstick import load_yardstick, matches, watched

QUERIES = "eval/gold*.tsv"  # a literal asterisk in a file name
QRELS = "eval/qrëls [v2].txt"


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@e", "-c", "user.name=t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout.strip()


def _repo(root: Path, folder: str = "", extra: str = "") -> Path:
    here = root / folder
    (here / "eval").mkdir(parents=True)
    (here / QUERIES).write_text("q1\tred apples\n")
    (here / QRELS).write_text("q1 0 d1 1\n")
    (here / "retrieval.yml").write_text("k: 1\n")
    (here / ".retrieval-gate" / "baseline").mkdir(parents=True)
    (here / ".retrieval-gate" / "baseline" / "manifest.yml").write_text("x: 1\n")
    (here / ".retrieval-gate" / "baseline" / "größe notes.txt").write_text("kept\n")
    config = here / ".retrieval-gate.yml"
    config.write_text(f"golden: {{queries: '{QUERIES}', qrels: '{QRELS}'}}\nretrieval: {{config: retrieval.yml}}\n"
                      "runner: {type: run-file}\n" + extra)
    if not (root / ".git").exists():
        _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    return config


def test_yardstick_files_with_glob_characters_and_non_ascii_names_are_goalposts(tmp_path):
    config = _repo(tmp_path)
    base = _git(tmp_path, "rev-parse", "HEAD")
    (tmp_path / QUERIES).write_text("q1\tgreen pears\n")
    (tmp_path / QRELS).write_text("q1 0 d2 1\n")
    (tmp_path / "eval" / "goldX.tsv").write_text("not the golden set\n")  # what "gold*" as a glob would name
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "move the goalposts")
    changed = git.changed_files(tmp_path, base, "HEAD")
    overlay = tmp_path.parent / "overlay"
    overlay.mkdir()
    yard = load_yardstick(config, base, overlay, changed)
    assert sorted(g["path"] for g in yard.goalposts) == sorted([QUERIES, QRELS])
    # The base's baseline folder, copied from the commit: its non-ASCII file too.
    assert (overlay / ".retrieval-gate" / "baseline" / "größe notes.txt").read_text() == "kept\n"
    assert matches(QRELS, yard.watch) and not matches("eval/qrëls v.txt", yard.watch)


def test_a_subfolder_configs_watch_list_is_relative_to_its_folder(tmp_path):
    config = _repo(tmp_path, "services/search", extra="watch: [search/**, '*.yml']\n")
    watch = watched(load_config(config))
    assert matches("services/search/search/rank.py", watch)
    assert matches("services/search/retrieval.yml", watch)
    assert not matches("search/rank.py", watch) and not matches("retrieval.yml", watch)


def test_an_environment_file_above_a_subfolder_config_is_watched(tmp_path):
    """``environment`` lists files (paths like any other of the config), not globs: ``..`` is fine."""
    (tmp_path / "poetry.lock").write_text("lock\n")
    config = _repo(tmp_path, "services/search", extra="environment: [../../poetry.lock]\n")
    watch = watched(load_config(config))
    assert matches("poetry.lock", watch) and not matches("services/search/poetry.lock", watch)


def test_a_failed_fetch_is_quoted_by_its_fatal_line_not_by_gits_advice():
    """plan's warning quoted "(and the repository exists.)" (found by the breaker)."""
    from gate.inputs.yardstick import git_reason

    stderr = ["fatal: Could not read from remote repository.", "", "Please make sure you have the correct access "
              "rights", "and the repository exists."]
    assert git_reason(stderr) == "fatal: Could not read from remote repository."
    assert git_reason(["warning: x", "something odd"]) == "something odd"
    assert git_reason([]) == "no reason given"
