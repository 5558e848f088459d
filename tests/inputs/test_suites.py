"""gate.inputs.suite_set: which suites a --config names (one config, a suites file, a glob), strictly,
and the set a pull request is judged by (the base commit's)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gate.common.errors import InputError
from gate.inputs.suite_set import NEW, REMOVED, discover, find_suites, suites_at_base

CONFIG = "suite: {name}\ngolden: {{queries: q.jsonl, qrels: r.txt}}\nretrieval: {{config: r.yml}}\n"


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=root,
                          check=True, capture_output=True, text=True).stdout.strip()


def _repo(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    return root


def _two(root: Path, suites_file: str = 'suites:\n  - "search/*/.retrieval-gate.yml"\n') -> Path:
    return _repo(root, {".retrieval-gate.yml": suites_file,
                        "search/docs/.retrieval-gate.yml": CONFIG.format(name="docs"),
                        "search/code/.retrieval-gate.yml": CONFIG.format(name="code")})


def _refusal(root: Path, config_arg: str) -> str:
    with pytest.raises(InputError) as caught:
        discover(config_arg, root)
    return str(caught.value)


def test_one_config_is_one_suite_and_not_several(tmp_path):
    root = _repo(tmp_path, {"gate.yml": CONFIG.format(name="docs")})
    found = discover("gate.yml", root)
    assert not found.several and [s.name for s in found.suites] == ["docs"]
    assert found.suites[0].config_path == root / "gate.yml" and found.suites[0].config_shown == "gate.yml"


def test_a_suites_file_lists_configs_by_glob_sorted_by_name(tmp_path):
    root = _two(tmp_path)
    found = discover(".retrieval-gate.yml", root)
    assert found.several and found.source == ".retrieval-gate.yml"
    assert [(s.name, s.config_shown) for s in found.suites] == [("code", "search/code/.retrieval-gate.yml"),
                                                                 ("docs", "search/docs/.retrieval-gate.yml")]


def test_paths_in_a_suites_file_are_relative_to_it_and_double_star_skips_itself(tmp_path):
    root = _repo(tmp_path, {"search/suites.yml": "suites:\n  - docs/gate.yml\n  - '**/gate.yml'\n",
                            "search/docs/gate.yml": CONFIG.format(name="docs"),
                            "search/deep/code/gate.yml": CONFIG.format(name="code"),
                            "elsewhere/gate.yml": CONFIG.format(name="other")})
    found = discover("search/suites.yml", root)
    assert [s.config_shown for s in found.suites] == ["search/deep/code/gate.yml", "search/docs/gate.yml"]


def test_a_config_glob_finds_several(tmp_path):
    root = _two(tmp_path)
    assert [s.name for s in find_suites("search/*/.retrieval-gate.yml", root)] == ["code", "docs"]


def test_two_suites_with_one_name_are_one_line_naming_both_files(tmp_path):
    root = _repo(tmp_path, {"s.yml": "suites: [a/gate.yml, b/gate.yml]\n", "a/gate.yml": CONFIG.format(name="x"),
                            "b/gate.yml": CONFIG.format(name="x")})
    message = _refusal(root, "s.yml")
    assert "a/gate.yml" in message and "b/gate.yml" in message and "'x'" in message and "\n" not in message


def test_a_glob_matching_nothing_is_one_line_at_its_entry(tmp_path):
    root = _repo(tmp_path, {"s.yml": "suites:\n  - a/gate.yml\n  - 'nothing/*/gate.yml'\n",
                            "a/gate.yml": CONFIG.format(name="a")})
    assert _refusal(root, "s.yml").startswith("s.yml:3: suites: 'nothing/*/gate.yml': the glob matches no file")
    assert "matches no file" in _refusal(root, "zzz/*.yml")


def test_a_missing_listed_file_is_named(tmp_path):
    root = _repo(tmp_path, {"s.yml": "suites:\n  - gone.yml\n"})
    assert _refusal(root, "s.yml") == "s.yml:2: suites: 'gone.yml': no such file"


def test_a_suites_file_nesting_another_is_refused(tmp_path):
    root = _repo(tmp_path, {"s.yml": "suites: [inner.yml]\n", "inner.yml": "suites: [a/gate.yml]\n",
                            "a/gate.yml": CONFIG.format(name="a")})
    message = _refusal(root, "s.yml")
    assert "inner.yml is itself a suites file" in message and message.startswith("s.yml:1:")


def test_a_suites_file_with_another_key_is_refused_naming_the_key(tmp_path):
    root = _repo(tmp_path, {"s.yml": "suites: [a/gate.yml]\nmetric: nDCG@10\n", "a/gate.yml": CONFIG.format(name="a")})
    assert _refusal(root, "s.yml").startswith("s.yml:2: key 'metric': a suites file holds only 'suites:'")


@pytest.mark.parametrize("text, problem", [("suites: []\n", "an empty list"), ("suites: a.yml\n", "str"),
                                           ("suites:\n  - 3\n", "entry 1 is not a path"),
                                           ("suites: ['/abs/gate.yml']\n", "absolute path")])
def test_a_malformed_suites_list_is_one_line(tmp_path, text, problem):
    root = _repo(tmp_path, {"s.yml": text})
    message = _refusal(root, "s.yml")
    assert message.startswith("s.yml:") and problem in message


def test_a_suite_config_is_read_strictly(tmp_path):
    root = _repo(tmp_path, {"s.yml": "suites: [a/gate.yml]\n", "a/gate.yml": CONFIG.format(name="a") + "metrc: x\n"})
    assert "unknown key 'metrc'" in _refusal(root, "s.yml")


def test_several_suites_need_folder_names(tmp_path):
    root = _repo(tmp_path, {"s.yml": "suites: [a/gate.yml, b/gate.yml]\n", "a/gate.yml": CONFIG.format(name="a"),
                            "b/gate.yml": CONFIG.format(name="'../b'")})
    assert "output folder" in _refusal(root, "s.yml")


def test_several_suites_need_names_that_differ_beyond_case(tmp_path):
    root = _repo(tmp_path, {"s.yml": "suites: [a/gate.yml, b/gate.yml]\n", "a/gate.yml": CONFIG.format(name="Docs"),
                            "b/gate.yml": CONFIG.format(name="docs")})
    said = _refusal(root, "s.yml")
    assert said.startswith("b/gate.yml: key 'suite': 'docs' and 'Docs' (of a/gate.yml) differ only in case")


def test_other_commands_refuse_a_suites_file_in_one_line(tmp_path):
    from gate.inputs.config import load_config

    root = _two(tmp_path)
    with pytest.raises(InputError, match="a suites file"):
        load_config(root / ".retrieval-gate.yml")


def test_the_base_commit_s_set_is_the_one_judged(tmp_path):
    root = _two(tmp_path)
    base = _git(root, "rev-parse", "HEAD")
    # The PR narrows the suites file to docs, deletes nothing: code is still judged (the base's set).
    (root / ".retrieval-gate.yml").write_text("suites: [search/docs/.retrieval-gate.yml]\n")
    found = suites_at_base(".retrieval-gate.yml", root, base)
    assert [(s.name, s.state) for s in found.suites] == [("code", ""), ("docs", "")]
    assert [s.name for s in discover(".retrieval-gate.yml", root).suites] == ["docs"]


def test_a_suite_the_pr_deletes_is_removed_and_one_it_adds_is_new(tmp_path):
    root = _two(tmp_path)
    base = _git(root, "rev-parse", "HEAD")
    (root / "search/code/.retrieval-gate.yml").unlink()
    (root / "search/faq").mkdir()
    (root / "search/faq/.retrieval-gate.yml").write_text(CONFIG.format(name="faq"))
    found = suites_at_base(".retrieval-gate.yml", root, base)
    assert [(s.name, s.state) for s in found.suites] == [("code", REMOVED), ("docs", ""), ("faq", NEW)]


def test_without_the_suites_file_at_the_base_the_pr_s_set_counts(tmp_path):
    root = _repo(tmp_path, {"README.md": "x\n"})
    base = _git(root, "rev-parse", "HEAD")
    (root / "s.yml").write_text("suites: [a/gate.yml]\n")
    (root / "a").mkdir()
    (root / "a/gate.yml").write_text(CONFIG.format(name="a"))
    found = suites_at_base("s.yml", root, base)
    assert found.several and [(s.name, s.state) for s in found.suites] == [("a", "")]


def test_a_suite_the_pr_renames_is_the_base_s_suite_judged_once(tmp_path):
    """The PR changes code's `suite:` to faq: its config is the base's suite code (old code: also a
    NEW suite faq of the same config, judged twice, and `run` failed with exit 4)."""
    root = _two(tmp_path)
    base = _git(root, "rev-parse", "HEAD")
    (root / "search/code/.retrieval-gate.yml").write_text(CONFIG.format(name="faq"))
    found = suites_at_base(".retrieval-gate.yml", root, base)
    assert [(s.name, s.config_shown, s.state) for s in found.suites] == [
        ("code", "search/code/.retrieval-gate.yml", ""), ("docs", "search/docs/.retrieval-gate.yml", "")]
