"""Files the gate reads out of git are checked against their id: the PR's code, running as the
gate's uid (or in a step before the action), can rewrite git's loose objects, and git does not
check an object's id when it reads it (issue 34). A file streamed out of git comes with its
blob id and its sha256, taken as it is written."""

from __future__ import annotations

import hashlib
import subprocess
import zlib
from pathlib import Path

import pytest

from gate.inputs import git
from tests.support.action_world import _git


@pytest.fixture()
def repo(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    (root / "corpus.jsonl").write_bytes(b'{"id": "d1", "text": "base"}\n' * 5000)  # ~150 KB: many blocks
    (root / "docs").mkdir()
    (root / "docs" / "a.txt").write_text("alpha\n")
    (root / "docs" / "b.txt").write_text("beta\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    return root, _git(root, "rev-parse", "HEAD")


def _forge(root: Path, base: str, relative: str, data: bytes) -> None:
    """What the PR's code can do as the gate's uid: git's loose object of the base's blob rewritten."""
    blob = _git(root, "rev-parse", f"{base}:{relative}")
    loose = root / ".git" / "objects" / blob[:2] / blob[2:]
    loose.chmod(0o644)  # git writes loose objects read-only
    loose.write_bytes(zlib.compress(b"blob %d\0" % len(data) + data))
    shown = subprocess.run(["git", "cat-file", "blob", blob], cwd=root, capture_output=True, check=True).stdout
    assert shown == data  # git hands the forged bytes out as the base's blob


def test_a_file_streamed_out_of_git_comes_with_its_blob_id_and_digest(repo, tmp_path, monkeypatch):
    root, base = repo
    monkeypatch.setattr(git, "_BLOCK", 4096)
    exported = git.export_file(root, base, root / "corpus.jsonl", tmp_path / "held" / "corpus.jsonl")
    assert exported is not None
    data = (root / "corpus.jsonl").read_bytes()
    assert exported.path.read_bytes() == data
    assert exported.blob == _git(root, "rev-parse", f"{base}:corpus.jsonl")
    assert exported.sha256 == hashlib.sha256(data).hexdigest()
    assert git.export_file(root, base, root / "nothing.jsonl", tmp_path / "held" / "x") is None
    tree = git.export_tree(root, base, root / "docs", tmp_path / "held" / "docs")
    assert tree is not None and [(b.path.name, b.path.read_text()) for b in tree] == [("a.txt", "alpha\n"),
                                                                                      ("b.txt", "beta\n")]


def test_a_forged_git_object_is_refused_not_read_as_the_base(repo, tmp_path):
    root, base = repo
    _forge(root, base, "corpus.jsonl", b'{"id": "faq", "text": "a planted leak"}\n')
    target = tmp_path / "held" / "corpus.jsonl"
    with pytest.raises(git.ForgedObject, match=f"{base}:corpus.jsonl: git's object .* does not hold what its id"):
        git.export_file(root, base, root / "corpus.jsonl", target)
    assert not target.exists() and not target.with_name("corpus.jsonl.part").exists()
    with pytest.raises(git.ForgedObject):
        git.show_file(root, base, root / "corpus.jsonl")
    _forge(root, base, "docs/b.txt", b"planted\n")
    with pytest.raises(git.ForgedObject, match="docs/b.txt"):
        git.export_tree(root, base, root / "docs", tmp_path / "held" / "docs")
    assert not (tmp_path / "held" / "docs").exists()
