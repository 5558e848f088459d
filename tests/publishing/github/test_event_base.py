"""The warning when GitHub's merge commit and the pull_request event disagree on the base
(gate.inputs.github_event.base_commit): it says which way round, from the commits' ancestry.

The base branch moves: main gets commit B1, then B2. The PR's head H is merged onto one of them
(HEAD^1) while the event names the other (pull_request.base.sha)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gate.inputs.github_event import Event, base_commit


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path) -> tuple[Path, dict[str, str]]:
    """main: B0 - B1 - B2; the PR: B0 - H. Returns the repository and the shas."""
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    shas = {}
    for name in ("B0", "B1", "B2"):
        (root / "base.txt").write_text(name)
        _git(root, "add", "-A")
        _git(root, "commit", "-qm", name)
        shas[name] = _git(root, "rev-parse", "HEAD")
    _git(root, "checkout", "-q", "-b", "feature", shas["B0"])
    (root / "pr.txt").write_text("change")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "H")
    shas["H"] = _git(root, "rev-parse", "HEAD")
    return root, shas


def _merged_onto(root: Path, base: str, head: str) -> None:
    """The checkout actions/checkout makes: GitHub's merge commit of the head onto ``base``."""
    _git(root, "checkout", "-q", "--detach", base)
    _git(root, "merge", "-q", "--no-ff", "-m", "merge", head)


def _event(head: str, base: str) -> Event:
    return Event(name="pull_request", pr_number=5, head_sha=head, base_sha=base, labels=(), body=None, fork=False,
                 repository="octo-org/octo-repo")


@pytest.mark.parametrize("merged_onto,event_base,said,not_said", [
    # The push happened when main was at B1; main moved to B2 and GitHub merged onto B2: the base
    # moved after the event, and the merge commit is the newer (the old text said the reverse).
    ("B2", "B1", "moved after the event was made", "since the merge commit was made"),
    # The checkout's merge commit is onto B1, the event names B2 (a rerun of an older job's
    # checkout, say): the base moved since the merge commit was made.
    ("B1", "B2", "moved since the merge commit was made", "after the event"),
], ids=["the event is older", "the merge commit is older"])
def test_the_warning_says_which_moved_first(repo, merged_onto, event_base, said, not_said):
    root, shas = repo
    _merged_onto(root, shas[merged_onto], shas["H"])
    warnings: list[str] = []
    assert base_commit(root, _event(shas["H"], shas[event_base]), warnings) == (shas[merged_onto], None)
    [warning] = warnings
    assert said in warning and not_said not in warning


def test_unrelated_bases_claim_no_direction(repo):
    root, shas = repo
    _merged_onto(root, shas["B1"], shas["H"])
    warnings: list[str] = []
    base_commit(root, _event(shas["H"], "f" * 40), warnings)  # not in the checkout: git cannot say
    [warning] = warnings
    assert "moved since" not in warning and "moved after" not in warning and "changed" in warning
