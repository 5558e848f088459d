"""A repository with two suites (tests of gate.inputs.suite_set and gate.pipeline.suite_verdicts): ``alpha``
in a/ and ``beta`` in b/, each a small real world (tests.support.small_world) with its own
runner.inputs, named by a suites file at the top. Moving alpha's ingestion parser to v2 leaks 3
golden queries into its corpus (a fail); a key beta's runner ignores changes nothing (a pass)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.small_world import small_world

SUITES_FILE = 'suites:\n  - "*/gate.yml"\n'


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=root,
                          check=True, capture_output=True, text=True).stdout.strip()


def suites_repo(root: Path) -> str:
    """The repository at ``root`` with both suites committed; returns the base commit."""
    for name in ("alpha", "beta"):
        folder = root / name[0]
        folder.mkdir(parents=True)
        config = small_world(folder, leak_in_new=name == "alpha", extra_config="runner_inputs_placeholder")
        text = config.read_text().replace("suite: small", f"suite: {name}")
        text = text.replace("--output {run}\"\n", "--output {run}\"\n  inputs: [retrieval.yml]\n")
        config.write_text(text.replace("runner_inputs_placeholder", ""))
    (root / ".retrieval-gate.yml").write_text(SUITES_FILE)
    (root / "README.md").write_text("# two suites\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "two suites")
    return git(root, "rev-parse", "HEAD")


def touch_alpha(root: Path) -> None:
    """alpha's ingestion parser to v2: its corpus leaks 3 golden queries (a fail)."""
    (root / "a" / "retrieval.yml").write_text("ingestion: {parser: v2}\nboost: 1.0\n")


def touch_beta(root: Path) -> None:
    """A key beta's runner does not read: the same run, a pass ("unchanged")."""
    (root / "b" / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 1.0\nnote: reviewed\n")


def commit(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)
    return git(root, "rev-parse", "HEAD")
