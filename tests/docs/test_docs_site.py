"""The README is a way in, and the docs site holds the rest: the README stays short with the
quickstart on its first screen, every page of docs/ is in the MkDocs nav, the links between them
resolve, placeholders are marked as such, and ``mkdocs build --strict`` passes."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
README = (REPO / "README.md").read_text(encoding="utf-8")
PAGES = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))


def _nav_pages(node) -> list[str]:
    if isinstance(node, str):
        return [node] if node.endswith(".md") else []
    if isinstance(node, dict):
        return [page for value in node.values() for page in _nav_pages(value)]
    if isinstance(node, list):
        return [page for item in node for page in _nav_pages(item)]
    return []


def _mkdocs_config() -> dict:
    return YAML(typ="safe").load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))


def test_the_readme_is_at_most_300_lines():
    assert len(README.splitlines()) <= 300, "move the detail to a page of docs/"


def test_the_readme_opens_with_the_demo_and_test_commands():
    lines = README.splitlines()
    assert lines[2] == "```bash" and lines[3].startswith("./run demo ") and lines[4].startswith("./run test ")
    assert "./run test-full" in lines[4]


def test_the_quickstart_is_on_the_readmes_first_screen():
    first = "\n".join(README.splitlines()[:80])
    assert re.search(r"^retrieval-gate init\b", first, re.M), "the quickstart (retrieval-gate init) within 80 lines"
    assert re.search(r"^retrieval-gate archive\b", first, re.M)
    assert 'pip install "retrieval-gate @ git+https://github.com/OWNER/retrieval-gate@TAG"' in first


def test_every_docs_page_is_in_the_nav_and_every_nav_entry_is_a_page():
    nav = _nav_pages(_mkdocs_config()["nav"])
    assert sorted(set(nav)) == PAGES, "add the page to mkdocs.yml's nav (or remove a stale entry)"
    assert len(nav) == len(set(nav)), "a page is in the nav twice"


def test_the_readmes_links_into_the_repository_resolve():
    for target in re.findall(r"\]\(([^)\s]+)\)", README):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.split("#", 1)[0]
        assert (REPO / path).exists(), target


def test_placeholders_are_marked_where_they_appear():
    """``your-org/retrieval-gate``, ``OWNER`` and ``TAG`` name the repository that hosts the gate;
    wherever they appear, a line nearby says they are placeholders."""
    for path in [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]:
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if re.search(r"your-org/retrieval-gate|OWNER/retrieval-gate|<owner>/retrieval-gate@", line):
                near = " ".join(lines[max(0, i - 6): i + 6]).lower()
                assert "placeholder" in near, f"{path.relative_to(REPO)}:{i + 1}: {line.strip()}"


def test_the_docs_install_from_git_not_from_pypi():
    """The gate is not on PyPI: no bare ``pip install retrieval-gate``."""
    for path in [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"pip install ['\"]?retrieval-gate(\[[\w,]+\])?['\"]?(?!\s*@)(\s|$|`)", text), path.name


def test_the_decision_battery_writer_finds_its_markers_in_its_page():
    """benchmarks/bench_decision.py --write-docs replaces the summary between its markers in
    docs/benchmarks.md; writing back the summary that is there gives the page unchanged."""
    source = (REPO / "benchmarks" / "bench_decision.py").read_text(encoding="utf-8")
    assert 'SUMMARY_PAGE = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"' in source
    markers = {node.targets[0].id: ast.literal_eval(node.value) for node in ast.parse(source).body
               if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
               and node.targets[0].id in ("SUMMARY_START", "SUMMARY_END")}
    start, end = markers["SUMMARY_START"], markers["SUMMARY_END"]
    text = (DOCS / "benchmarks.md").read_text(encoding="utf-8")
    assert text.count(start) == 1 and text.count(end) == 1
    before, rest = text.split(start, 1)
    summary, after = rest.split(end, 1)
    assert summary.startswith("\n") and "| population | n |" in summary
    assert before + start + "\n" + summary[1:] + end + after == text


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None,
                    reason="mkdocs-material is not installed (pip install -e '.[docs]')")
def test_the_site_builds_strictly(tmp_path):
    """``mkdocs build --strict``: a broken link, a missing anchor or a page outside the nav fails."""
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(REPO / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "commands" / "index.html").is_file()
