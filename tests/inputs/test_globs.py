"""One meaning of a glob (gate.inputs.globs) for its three readers: the cache key expands
``runner.inputs`` over the working tree (gate.runs.code), the watch list matches a PR's changed
files (gate.inputs.yardstick), the archive matches its uncommitted files (gate.pipeline.archive).

Before, the key used ``Path.glob`` (on Python 3.11 ``search/**`` yields only folders: "no file
matches"), the watch list a regex of its own (``search/**`` is every file below), and the archive
``Path.match`` (matched from the right): three answers to "is this file code under test?".
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gate.cli import main
from gate.common.errors import InputError
from gate.inputs.config import load_config
from gate.inputs.globs import GlobError, compile_glob, escape, matched_inputs, matches
from gate.inputs.yardstick import watched
from gate.pipeline.archive import uncommitted_code
from gate.runs.code import declared_inputs

#: Every file of the table's repository (besides the config and the retrieval config).
FILES = ["search/run.py", "search/sub/helper.py", "search/.hidden.py", "search/.cfg/x.yml", "README.md", "x.py",
         "lib/deep/x.py", "a.yml", "b.yml", "c.yml", "ab.yml", "retrieval/größe.yml", "with space/a file.txt",
         "search/new\nline.py", "docs/page[1].md", "docs/page1.md", "searcher.py", "search.py"]

NFD = "retrieval/gro\u0308\u00dfe.yml"  # größe as macOS writes it: o + a combining diaeresis

#: pattern -> the files of FILES it names (the same for every reader).
TABLE = {
    "*": {"README.md", "x.py", "a.yml", "b.yml", "c.yml", "ab.yml", "searcher.py", "search.py"},
    "**": set(FILES),
    "search/**": {"search/run.py", "search/sub/helper.py", "search/.hidden.py", "search/.cfg/x.yml",
                  "search/new\nline.py"},
    "search/": {"search/run.py", "search/sub/helper.py", "search/.hidden.py", "search/.cfg/x.yml",
                "search/new\nline.py"},
    "search/*.py": {"search/run.py", "search/.hidden.py", "search/new\nline.py"},
    "search/**/*.py": {"search/run.py", "search/sub/helper.py", "search/.hidden.py", "search/new\nline.py"},
    "**/x.py": {"x.py", "lib/deep/x.py"},
    "search*": {"searcher.py", "search.py"},
    "?.yml": {"a.yml", "b.yml", "c.yml"},
    "[ab].yml": {"a.yml", "b.yml"},
    "[!ab].yml": {"c.yml"},
    "retrieval/größe.yml": {"retrieval/größe.yml"},
    NFD: {"retrieval/größe.yml"},
    "with space/*": {"with space/a file.txt"},
    "docs/page[1].md": {"docs/page1.md"},  # a set of one character: "1"
    escape("docs/page[1].md"): {"docs/page[1].md"},
    "./search/sub/../": set(),  # refused below: ".." never names a file
}

CONFIG = """\
golden: {queries: eval/queries.tsv, qrels: eval/qrels.txt}
retrieval: {config: retrieval.yml}
runner:
  command: "true {config} {queries} {run}"
  inputs: INPUTS
"""


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@e", "-c", "user.name=t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout.strip()


def _tree(root: Path, folder: str = "") -> Path:
    """The table's files (below ``folder``), a golden set and a config there: returns the config."""
    base = root / folder if folder else root
    for name in FILES:
        (base / name).parent.mkdir(parents=True, exist_ok=True)
        (base / name).write_text(f"{name}\n")
    (base / "eval").mkdir(exist_ok=True)
    (base / "eval" / "queries.tsv").write_text("q1\tred apples\n")
    (base / "eval" / "qrels.txt").write_text("q1 0 d1 1\n")
    (base / "retrieval.yml").write_text("k: 1\n")
    return base / ".retrieval-gate.yml"


def _config(path: Path, pattern: str):
    path.write_text(CONFIG.replace("INPUTS", "[" + repr(pattern) + "]" if "\n" not in pattern else "[]"))
    return load_config(path)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("globs") / "repo"
    root.mkdir()
    config = _tree(root)
    config.write_text(CONFIG.replace("INPUTS", "['**']"))
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    for name in FILES:  # every file changed, none committed: what the archive asks about
        (root / name).write_text(f"{name} changed\n")
    return root


def _readers(root: Path, config_path: Path, pattern: str, changed: list[str]) -> dict[str, set[str]]:
    """What each reader says the pattern names, as paths relative to the config's folder."""
    config = _config(config_path, pattern)
    folder = config_path.parent.relative_to(root).as_posix()
    prefix = "" if folder == "." else folder + "/"
    watch = watched(config)
    key = set(matched_inputs(config_path.parent, [pattern]))
    return {
        "matcher": {name for name in FILES if compile_glob(pattern, prefix).matches(prefix + name)},
        "cache key": key & set(FILES),
        "watch list": {name for name in FILES if matches(prefix + name, watch)},
        "archive": {name[len(prefix):] for name in uncommitted_code(config) if name.startswith(prefix)} & set(FILES),
        "changed files": {name[len(prefix):] for name in changed if matches(name, watch)} & set(FILES),
    }


@pytest.mark.parametrize("pattern", [p for p in TABLE if ".." not in p])
def test_the_readers_agree_on_every_pattern(repo, pattern):
    from gate.inputs import git

    changed = git.changed_since(repo, "HEAD")
    assert changed is not None and set(FILES) <= set(changed)
    said = _readers(repo, repo / ".retrieval-gate.yml", pattern, changed)
    for reader, names in said.items():
        assert names == TABLE[pattern], (reader, pattern)


@pytest.mark.parametrize("pattern", ["search/**", "**/x.py", "[ab].yml", "retrieval/größe.yml"])
def test_a_config_in_a_subfolder_reads_its_globs_from_its_folder(tmp_path, pattern):
    """``working-directory: services/search`` with ``runner.inputs: [search/**]``: the key reads
    services/search/search/, and so does the watch list; the repository's own search/ is neither."""
    root = tmp_path / "repo"
    root.mkdir()
    _tree(root)  # the same files at the top: never the subfolder config's
    config_path = _tree(root, "services/search")
    _git(root, "init", "-q", "-b", "main")
    config_path.write_text(CONFIG.replace("INPUTS", "[]"))
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    for name in FILES:
        for where in ("", "services/search/"):
            (root / where / name).write_text("changed\n")
    from gate.inputs import git

    changed = git.changed_since(root / "services" / "search", "HEAD")
    assert changed is not None
    said = _readers(root, config_path, pattern, changed)
    for reader, names in said.items():
        assert names == TABLE[pattern], (reader, pattern)
    top_level = {name for name in changed if "/" not in name or not name.startswith("services/")}
    watch = watched(_config(config_path, pattern))
    assert not any(matches(name, watch) for name in top_level if name in FILES)


def test_outside_git_the_key_walks_the_folder_and_agrees(tmp_path):
    folder = tmp_path / "plain"
    folder.mkdir()
    _tree(folder)
    os.makedirs(folder / ".git" / "objects")  # not a repository git reads (no HEAD), and never code
    (folder / ".git" / "objects" / "x.py").write_text("no\n")
    os.symlink("/", folder / "search" / "root-link")  # a folder link is not entered
    for pattern, names in TABLE.items():
        if ".." in pattern:
            continue
        assert set(matched_inputs(folder, [pattern])) & set(FILES) == names, pattern


def test_path_glob_is_not_used_so_the_python_version_does_not_matter(repo, monkeypatch):
    """Python 3.11's ``Path.glob('search/**')`` yields folders only, 3.13's files too; no reader
    calls it (nor ``Path.match``, which matches from the right)."""
    def refuse(*args, **kwargs):
        raise AssertionError("Path.glob/match used")

    for name in ("glob", "rglob", "match"):
        monkeypatch.setattr(Path, name, refuse)
    config = _config(repo / ".retrieval-gate.yml", "search/**")
    assert declared_inputs(repo, ["search/**"]).known
    assert matches("search/sub/helper.py", watched(config))
    assert "search/sub/helper.py" in uncommitted_code(config)


@pytest.mark.parametrize("pattern, why", [
    ("/etc/*.py", "an absolute path can never match"),
    ("../other/**", "'..' goes above the repository's top"),
    ("*/../x.py", "'..' goes back over the wildcard"),
    ("", "an empty glob"),
    ("[z-a].py", "not a glob"),
])
def test_a_glob_that_can_never_match_is_refused(pattern, why):
    with pytest.raises(GlobError, match=why.replace("(", r"\(")):
        compile_glob(pattern)


@pytest.mark.parametrize("key", ["runner.inputs", "watch"])
def test_the_cli_refuses_it_in_one_line_naming_the_config(tmp_path, capsys, key, monkeypatch):
    """``run`` and ``run --base`` alike (the latter reads the base commit's config, where it is)."""
    root = tmp_path / "repo"
    root.mkdir()
    config_path = _tree(root)
    text = CONFIG.replace("INPUTS", "['../outside/**']" if key == "runner.inputs" else "['search/**']")
    if key == "watch":
        text += "watch: [search/**, ../outside/**]\n"
    config_path.write_text(text)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    monkeypatch.chdir(root)
    for command in (["run"], ["run", "--base", "HEAD"]):
        assert main([*command, "--config", ".retrieval-gate.yml"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and re.match(r"retrieval-gate: error: \S*\.retrieval-gate\.yml.*:[0-9]+: ", err[0]), err
        assert f"key '{key}': '../outside/**': '..' goes above the repository's top" in err[0], err


@pytest.mark.parametrize("pattern, folder, path", [
    ("../lib/**", "services/search", "services/lib/a/b.py"),
    ("../../shared/*.py", "services/search", "shared/x.py"),
    ("search/../x.py", "", "x.py"),
])
def test_dot_dot_steps_back_within_the_repository(pattern, folder, path):
    """A monorepo's config names shared code beside its folder: '..' is resolved to a repository path."""
    glob = compile_glob(pattern, folder)
    assert glob.matches(path)
    assert not folder or not glob.matches(f"{folder}/{path}")


def test_a_folder_named_without_a_wildcard_says_how_to_name_its_files(repo):
    with pytest.raises(InputError, match=r"search is a folder: search/\*\* names the files in it"):
        declared_inputs(repo, ["search"])


def test_the_gates_own_folders_are_not_code(repo):
    """``runner.inputs: ['**']`` keys the tracked baseline folder out, as the working tree does."""
    (repo / ".retrieval-gate" / "baseline").mkdir(parents=True, exist_ok=True)
    (repo / ".retrieval-gate" / "baseline" / "manifest.yml").write_text("x: 1\n")
    files = matched_inputs(repo, ["**"], exclude=[repo / ".retrieval-gate"])
    assert not any(name.startswith(".retrieval-gate/") for name in files)
    assert "search/run.py" in files and sys.platform  # the rest stays


def test_a_non_utf8_name_is_matched_as_git_lists_it(tmp_path):
    from gate.inputs import git

    root = tmp_path / "repo"
    (root / "search").mkdir(parents=True)
    _git(root, "init", "-q", "-b", "main")
    (root / "search" / "keep.py").write_text("x\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    with open(os.path.join(os.fsencode(root), b"search", b"caf\xe9.py"), "w") as handle:
        handle.write("y\n")
    changed = git.changed_since(root, "HEAD")
    assert changed == ["search/caf\\xe9.py"]
    key = matched_inputs(root, ["search/caf????.py"])  # the escape is 4 characters, in both readers
    assert len(key) == 1 and matches(changed[0], ["search/caf????.py"])
    assert declared_inputs(root, ["search/*.py"]).known  # the key hashes the real bytes


def test_a_file_name_a_pull_request_chooses_cannot_make_matching_slow():
    """``*_*_*_*_*_*_x.py`` against a 200-character name of underscores: the regex engine tried
    every split (seconds at five stars, hours at six; found by the breaker): on the old code this
    test does not end. Each star but the last now takes the first fit and keeps it."""
    glob = compile_glob("search/*_*_*_*_*_*_x.py")
    assert "(?P=" in glob.regex.pattern  # the atomic groups
    for name in ("_" * 200 + ".py", "a" * 200 + "_x.py", "a" * 200):
        assert not glob.matches("search/" + name)
    assert glob.matches("search/" + "_" * 200 + "x.py")
    assert glob.matches("search/a_b_c_d_e_f_x.py") and not glob.matches("search/a_b_c_d_e_x.py")
