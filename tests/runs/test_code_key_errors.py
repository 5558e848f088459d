"""What keys the code under test fails in one line, never exit 4 (found by the breaker): a file of
runner.inputs the gate cannot read, and `git add -A` timing out over a huge untracked file."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gate.common.errors import InputError
from gate.runs import code


def _repo(root: Path) -> Path:
    (root / "search").mkdir(parents=True)
    (root / "search" / "run.py").write_text("print('hi')\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def test_an_unreadable_input_is_one_line_naming_it(tmp_path, monkeypatch):
    root = _repo(tmp_path / "repo")

    def refuse(path, block=1 << 20):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(code, "file_sha256", refuse)
    with pytest.raises(InputError, match=r"cannot read search/run\.py \(Permission denied\)"):
        code.declared_inputs(root, ["search/**"])


def test_git_add_timing_out_is_an_unknown_code_with_a_reason(tmp_path, monkeypatch):
    root = _repo(tmp_path / "repo")
    real = code._git

    def slow(top, *args, env=None):
        if args[:1] == ("add",):
            raise subprocess.TimeoutExpired(["git", *args], 120)
        return real(top, *args, env=env)

    monkeypatch.setattr(code, "_git", slow)
    identity = code.working_tree(root)
    assert identity.kind == "unknown" and "timed out" in identity.description and "\n" not in identity.description


@pytest.mark.parametrize("pattern", ["search/**", "search/*.py", "./search/run.py"])
def test_a_glob_through_a_symlinked_folder_is_refused_naming_the_target(tmp_path, pattern):
    """runner.inputs: [search/**] with search -> ../impl/search: a change to impl/search/run.py was
    neither keyed nor watched, and the PR passed on a cached run (found by the breaker)."""
    root = tmp_path / "repo"
    (root / "impl" / "search").mkdir(parents=True)
    (root / "impl" / "search" / "run.py").write_text("print('hi')\n")
    (root / "svc").mkdir()
    (root / "svc" / "search").symlink_to(Path("..") / "impl" / "search", target_is_directory=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    expected = r"search is a symlink to the folder \.\./impl/search.*\(\.\./impl/search/\*\*\)"
    with pytest.raises(InputError, match=expected):
        code.declared_inputs(root / "svc", [pattern])
