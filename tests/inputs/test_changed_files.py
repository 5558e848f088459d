"""How the gate reads a change's files from git (gate.inputs.git.changed_files): one parser for
the Action's merge commit against its base and for ``run --base``'s working tree.

Before, ``git diff --name-only`` without ``-z`` quoted every non-ASCII name
(``"retrieval/gr\\303\\266\\303\\237e.yml"``), split a name with a newline in two, and a
``diff.relative`` in the checkout's config cut the list to the current folder: the watch list
matched none of them and a PR that changed the retrieval config was skipped.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gate.inputs import git

NAMES = ["retrieval/größe.yml", "with space/a file.txt", "search/new\nline.py", "tab\there.txt", "plain.txt",
         'quote"d.txt', "back\\slash.txt"]


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@e", "-c", "user.name=t", "-c", "protocol.file.allow=always",
                           *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def _write(root: Path, name: str, text: str) -> None:
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(text)


@pytest.fixture()
def repo(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    for name in NAMES:
        _write(root, name, "v1\n")
    _write(root, "moved/from.py", "x = 1\n" * 20)
    _write(root, "copied/source.py", "y = 2\n" * 20)
    _write(root, "gone.txt", "bye\n")
    _write(root, "run.sh", "echo hi\n")
    _write(root, "configs/a.yml", "a: 1\n")
    _write(root, "configs/b.yml", "b: 1\n")
    os.symlink("configs/a.yml", root / "link.yml")
    _write(root, "file-then-link.yml", "c: 1\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    return root


def _commit_all(root: Path, message: str = "change") -> str:
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", message)
    return _git(root, "rev-parse", "HEAD")


def test_every_kind_of_change_is_listed_by_its_own_name(repo):
    base = _git(repo, "rev-parse", "HEAD")
    for name in NAMES:
        (repo / name).write_text("v2\n")
    _git(repo, "mv", "moved/from.py", "elsewhere/to.py") if (repo / "elsewhere").mkdir() is None else None
    _write(repo, "copied/copy.py", (repo / "copied" / "source.py").read_text())
    (repo / "gone.txt").unlink()
    (repo / "run.sh").chmod(0o755)  # a mode change alone
    (repo / "link.yml").unlink()
    os.symlink("configs/b.yml", repo / "link.yml")  # a symlink retargeted
    (repo / "file-then-link.yml").unlink()
    os.symlink("configs/a.yml", repo / "file-then-link.yml")  # a file replaced by a link
    head = _commit_all(repo)
    expected = {*NAMES, "moved/from.py", "elsewhere/to.py", "copied/copy.py", "gone.txt", "run.sh", "link.yml",
                "file-then-link.yml"}
    assert set(git.changed_files(repo, base, head)) == expected
    assert len(git.changed_files(repo, base, head)) == len(expected)  # each once
    # run --base reads the same change from the working tree (here: all of it committed).
    assert set(git.changed_since(repo, base)) == expected


def test_the_checkouts_git_config_cannot_change_the_list(repo):
    """A PR's code runs before the gate and may write .git/config: quoted paths, paths relative to
    the current folder, rename detection, ignored submodules all leave the list as it is."""
    base = _git(repo, "rev-parse", "HEAD")
    (repo / "retrieval" / "größe.yml").write_text("v2\n")
    _git(repo, "mv", "moved/from.py", "moved/to.py")
    head = _commit_all(repo)
    for key, value in (("core.quotePath", "true"), ("diff.relative", "true"), ("diff.renames", "copies"),
                       ("diff.ignoreSubmodules", "all"), ("color.diff", "always"), ("diff.noprefix", "true")):
        _git(repo, "config", key, value)
    expected = {"retrieval/größe.yml", "moved/from.py", "moved/to.py"}
    # From the repository's top and from a subfolder (the Action's working-directory) alike.
    assert set(git.changed_files(repo, base, head)) == expected
    assert set(git.changed_files(repo / "retrieval", base, head)) == expected
    assert set(git.changed_since(repo / "retrieval", base)) == expected


def test_run_base_lists_uncommitted_and_untracked_files_from_where_the_branch_left(repo):
    base = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "-b", "feature")
    (repo / "retrieval" / "größe.yml").write_text("committed\n")
    _commit_all(repo)
    # The base branch moves on: what it changed since is not this change's.
    _git(repo, "checkout", "-q", "main")
    (repo / "gone.txt").write_text("the base's own change\n")
    _commit_all(repo)
    _git(repo, "checkout", "-q", "feature")
    (repo / "plain.txt").write_text("not committed\n")
    _write(repo, "search/ünï code.py", "untracked\n")
    _write(repo, "search/new\nfile.py", "untracked\n")
    (repo / ".gitignore").write_text("*.log\n")
    _write(repo, "search/debug.log", "ignored\n")
    found = git.changed_since(repo / "search", "main")  # from a subfolder: still every path of the repository
    assert found is not None
    assert set(found) == {"retrieval/größe.yml", "plain.txt", "search/ünï code.py", "search/new\nfile.py",
                          ".gitignore"}
    assert git.changed_files(repo, base, "HEAD") == ["retrieval/größe.yml"]


def test_a_submodule_bump_is_one_changed_path(repo, tmp_path):
    library = tmp_path / "library"
    library.mkdir()
    _git(library, "init", "-q", "-b", "main")
    _write(library, "lib.py", "v = 1\n")
    first = _commit_all(library)
    _git(repo, "submodule", "add", "-q", str(library), "vendor/lib")
    base = _commit_all(repo, "add the submodule")
    _write(library, "lib.py", "v = 2\n")
    second = _commit_all(library)
    _git(repo / "vendor" / "lib", "fetch", "-q", "origin")
    _git(repo / "vendor" / "lib", "checkout", "-q", second)
    assert first != second
    assert git.changed_since(repo, base) == ["vendor/lib"]  # checked out, not yet committed
    head = _commit_all(repo, "bump")
    assert git.changed_files(repo, base, head) == ["vendor/lib"]


def test_a_name_that_is_not_utf8_is_listed_with_its_bytes_escaped(repo):
    base = _git(repo, "rev-parse", "HEAD")
    raw = os.path.join(os.fsencode(repo), b"search", b"caf\xe9.py")
    os.makedirs(os.path.dirname(raw), exist_ok=True)
    with open(raw, "w") as handle:
        handle.write("latin-1 name\n")
    head = _commit_all(repo)
    assert git.changed_files(repo, base, head) == ["search/caf\\xe9.py"]


def test_what_is_not_a_revision_is_not_asked(repo):
    assert git.changed_files(repo, "--output=/tmp/x", "HEAD") is None
    assert git.changed_files(repo, "HEAD", "no such ref") is None
    assert git.changed_since(repo, "nonexistent-branch") is None
