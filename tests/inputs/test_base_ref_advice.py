"""``--base main`` where the checkout has no local ``main`` (a CI checkout creates no local
branch) suggests ``--base origin/main`` when that is there; the shallow-clone advice is kept for
a clone that really is shallow (issue 32). Real temporary git repositories."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gate.cli import main
from tests.support.small_world import small_world


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "commit.gpgsign=false",
                           "-c", "protocol.file.allow=always", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def origin(tmp_path) -> Path:
    """A repository with two commits on main: the gate's yardstick, then a retrieval change."""
    root = tmp_path / "origin"
    root.mkdir()
    small_world(root, leak_in_new=False)
    (root / ".gitignore").write_text(".retrieval-gate/\nout/\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    (root / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 1.0\nprefer_suffix: '#c1'\n")
    _git(root, "commit", "-qam", "a retrieval change")
    return root


def _ci_checkout(origin: Path, target: Path, *clone: str) -> Path:
    """As actions/checkout leaves a PR: the commit checked out detached, no local branch."""
    _git(origin.parent, "clone", "-q", *clone, f"file://{origin}", str(target))
    _git(target, "checkout", "-q", "--detach")
    _git(target, "branch", "-q", "-D", "main")
    return target


def _refused(argv: list[str], capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0]
    return err[0]


def test_a_missing_local_branch_suggests_its_remote_tracking_branch(origin, tmp_path, capsys, monkeypatch):
    checkout = _ci_checkout(origin, tmp_path / "ci")
    monkeypatch.chdir(checkout)
    said = _refused(["run", "--config", "gate.yml", "--base", "main", "--out", "out"], capsys)
    assert said == (f"retrieval-gate: error: --base main: no such commit in {checkout}: there is no local branch "
                    "'main' (a CI checkout creates none), but the remote-tracking branch 'origin/main' is there: use "
                    "--base origin/main")
    assert "shallow" not in said
    # the advice works: origin/main is the base the gate judges against
    assert main(["run", "--config", "gate.yml", "--base", "origin/main^", "--out", "out"]) in (0, 1)
    assert main(["plan", "--config", "gate.yml", "--base", "origin/main"]) == 0
    capsys.readouterr()


def test_a_shallow_clone_keeps_the_shallow_advice(origin, tmp_path, capsys, monkeypatch):
    base = _git(origin, "rev-parse", "HEAD^")
    checkout = _ci_checkout(origin, tmp_path / "shallow", "--depth", "1")
    assert _git(checkout, "rev-parse", "--is-shallow-repository") == "true"
    monkeypatch.chdir(checkout)
    said = _refused(["run", "--config", "gate.yml", "--base", base, "--out", "out"], capsys)
    assert said == (f"retrieval-gate: error: --base {base}: no such commit in {checkout} (a shallow checkout: it needs "
                    "fetch-depth: 2 or more, or the base fetched)")


def test_a_full_clone_without_the_ref_says_only_that_it_is_not_there(origin, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(origin)
    said = _refused(["run", "--config", "gate.yml", "--base", "release", "--out", "out"], capsys)
    assert said == f"retrieval-gate: error: --base release: no such commit in {origin}"
