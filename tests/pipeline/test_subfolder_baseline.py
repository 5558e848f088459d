"""A config in a subfolder whose baseline must be run: the base side runs where the candidate does.

The repository keeps its gate in ``services/search/`` and its search command as a path relative to
that folder (``search/run.py``). The candidate runs in ``services/search/`` of the checkout; a
baseline reconstructed from the base commit, or replayed from the archive's commit, runs in
``services/search/`` of an export of that commit. Before, it ran at the export's top, where
``search/run.py`` is not: every good PR was inconclusive ("runner command exited with code 2").
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gate.cli import main
from gate.runs.code import CheckoutFailed, checkout, commit_tree
from tests.support.small_world import RUNNER, small_world

FOLDER = "services/search"
CONFIG = f"{FOLDER}/.retrieval-gate.yml"
GOOD = "ingestion: {parser: v1}\nboost: 2.0\nprefer_suffix: '#c0'\n"  # moves every query up
BAD = "ingestion: {parser: v1}\nboost: -5.0\n"  # the title counts against a page: every query falls


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.email=dev@example.com", "-c", "user.name=dev",
                           "-c", "init.defaultBranch=main", *args], cwd=root, check=True, capture_output=True,
                          text=True)
    return done.stdout.strip()


def _team(root: Path, *, archived: bool) -> str:
    """A repository with the gate in services/search/ and the team's search command beside it,
    run by a path relative to that folder. ``archived``: the baseline is archived and committed,
    then main grows its golden set by a query the archived lists never saw (a replay). Returns
    the base commit a PR branches from."""
    root.mkdir(parents=True)
    _git(root, "init", "-q", "-b", "main")
    folder = root / FOLDER
    folder.mkdir(parents=True)
    made = small_world(folder, leak_in_new=False)
    (folder / "search").mkdir()
    shutil.copyfile(RUNNER, folder / "search" / "run.py")
    text = made.read_text().replace(str(RUNNER), "search/run.py")
    assert f"{sys.executable} search/run.py" in text
    (folder / ".retrieval-gate.yml").write_text(text)
    made.unlink()
    (root / ".gitignore").write_text("**/.retrieval-gate/cache/\n**/.retrieval-gate/work/\n**/.retrieval-gate/out/\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "the gate in services/search")
    if archived:
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(root)
            assert main(["archive", "--config", CONFIG]) == 0
        _git(root, "add", "-A")
        _git(root, "commit", "-qm", "the archived baseline")
        with open(folder / "golden.jsonl", "a") as golden:
            golden.write(json.dumps({"query_id": "q_new", "text": "configure webhooks giraffe dashboard",
                                     "stratum": "how_to"}) + "\n")
        with open(folder / "qrels.txt", "a") as qrels:
            qrels.write("q_new 0 guide/webhooks-0#c0 2\n")
        _git(root, "commit", "-qam", "a golden query the archived lists never saw")
    return _git(root, "rev-parse", "HEAD")


def _judge(root: Path, base: str, retrieval: str, out: Path) -> tuple[int, dict]:
    """A PR changing the retrieval config, judged as a developer runs it from the repository's top."""
    _git(root, "checkout", "-q", "-B", out.name, base)
    (root / FOLDER / "retrieval.yml").write_text(retrieval)
    _git(root, "commit", "-qam", f"PR {out.name}")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        code = main(["run", "--config", CONFIG, "--base", "HEAD^1", "--out", str(out)])
    return code, json.loads((out / "report.json").read_text())


@pytest.mark.parametrize("archived, resolution", [(False, "reconstructed"), (True, "replayed")],
                         ids=["reconstructed", "replayed"])
def test_a_subfolder_config_whose_baseline_is_run_passes_a_good_pr_and_fails_a_bad_one(tmp_path, archived,
                                                                                      resolution):
    root = tmp_path / "repo"
    base = _team(root, archived=archived)
    code, report = _judge(root, base, GOOD, tmp_path / "good")
    assert report["baseline"]["resolution"] == resolution, report["verdict"]["headline"]
    assert (code, report["verdict"]["kind"]) == (0, "pass"), report["verdict"]["headline"]
    code, report = _judge(root, base, BAD, tmp_path / "bad")
    assert report["baseline"]["resolution"] == resolution, report["verdict"]["headline"]
    assert (code, report["verdict"]["kind"]) == (1, "fail"), report["verdict"]["headline"]


def test_a_baseline_whose_commit_lacks_the_config_folder_is_one_clear_line(tmp_path, capsys):
    """The gate moves into services/search/ in the PR, taking its archived baseline along; the
    archive's commit had no services/search/, so its code has nowhere to run as the candidate
    does: inconclusive (exit 3), naming the folder and the commit - never exit 4."""
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    made = small_world(root, leak_in_new=False)
    (root / "search").mkdir()
    shutil.copyfile(RUNNER, root / "search" / "run.py")
    (root / ".retrieval-gate.yml").write_text(made.read_text().replace(str(RUNNER), "search/run.py"))
    made.unlink()
    (root / ".gitignore").write_text("**/.retrieval-gate/cache/\n**/.retrieval-gate/work/\n**/.retrieval-gate/out/\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "the gate at the top")
    archive_commit = _git(root, "rev-parse", "HEAD")  # what the manifest names
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        assert main(["archive"]) == 0
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "the archived baseline")
    (root / FOLDER).mkdir(parents=True)
    for name in _git(root, "ls-files").splitlines():
        if name != ".gitignore":
            (root / FOLDER / name).parent.mkdir(parents=True, exist_ok=True)
            _git(root, "mv", name, f"{FOLDER}/{name}")
    with open(root / FOLDER / "golden.jsonl", "a") as golden:  # a query the archive never saw: a replay
        golden.write(json.dumps({"query_id": "q_new", "text": "configure webhooks giraffe"}) + "\n")
    with open(root / FOLDER / "qrels.txt", "a") as qrels:
        qrels.write("q_new 0 guide/webhooks-0#c0 2\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "the gate moves into services/search")
    capsys.readouterr()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        code = main(["run", "--config", CONFIG, "--base", "HEAD^1", "--out", str(tmp_path / "out")])
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert code == 3 and report["verdict"]["kind"] == "inconclusive", report["verdict"]["headline"]
    assert (f"the folder {FOLDER}/ the runner command runs in is not a folder of commit {archive_commit[:12]}"
            in report["verdict"]["headline"]), report["verdict"]["headline"]
    assert "Traceback" not in capsys.readouterr().err


def test_the_export_runs_the_command_in_the_config_folder_open_to_the_box(tmp_path):
    """The commit's run gets the same folder of the export as the workspace's run, and every folder
    of the export is enterable by another uid whatever the gate's umask (tar makes a folder as the
    umask says: 0700 under 077, and the box could not enter it)."""
    root = tmp_path / "repo"
    base = _team(root, archived=False)
    code = commit_tree(root / FOLDER, base)
    old = os.umask(0o077)
    try:
        with checkout(code, root / FOLDER, tmp_path / "scratch") as exported:
            assert exported.root is not None and exported.commit == code.commit
            top = exported.root.parents[1]
            assert exported.root == top / FOLDER and (exported.root / "search" / "run.py").is_file()
            for folder in (top / "services", exported.root, exported.root / "search"):
                assert folder.stat().st_mode & 0o055 == 0o055, (folder, oct(folder.stat().st_mode))
        with checkout(code, root, tmp_path / "scratch") as exported:  # the workspace at the top: the export's top
            assert exported.root is not None and (exported.root / FOLDER / "search" / "run.py").is_file()
    finally:
        os.umask(old)
    (root / "elsewhere").mkdir()
    with pytest.raises(CheckoutFailed, match=f"the folder elsewhere/ the runner command runs in is not a folder of "
                                             f"commit {base[:12]}"):
        with checkout(code, root / "elsewhere", tmp_path / "scratch"):
            pass


@pytest.mark.skipif(os.geteuid() != 0, reason="the box runs the command as another uid only for root")
def test_under_umask_077_the_box_reads_the_base_commits_golden_set_too(tmp_path):
    """The base commit's golden set, written by the gate for the baseline's run, is read by the
    box's uid: under umask 077 it was the gate's alone (PermissionError on golden.jsonl)."""
    root = tmp_path / "repo"
    base = _team(root, archived=False)
    # The team's own folders are theirs to open (the box says so in one line when one is not).
    (root / FOLDER / ".retrieval-gate" / "work" / "checkouts").mkdir(parents=True, mode=0o755)
    old = os.umask(0o077)
    try:
        code, report = _judge(root, base, GOOD, tmp_path / "good")
    finally:
        os.umask(old)
    assert report["baseline"]["resolution"] == "reconstructed", report["verdict"]["headline"]
    assert (code, report["verdict"]["kind"]) == (0, "pass"), report["verdict"]["headline"]
