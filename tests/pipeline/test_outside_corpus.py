"""A corpus outside the repository, never archived: a pull request cannot change it, so a leak it
already held is not new (found by the breaker: "1 golden query newly appears in the candidate's
corpus" failed a PR that only changed title_weight)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gate.cli import main
from tests.support.small_world import small_world


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=dev@example.com", "-c", "user.name=dev", *args], cwd=root,
                          check=True, capture_output=True, text=True).stdout.strip()


def test_an_old_leak_in_a_corpus_outside_the_repository_does_not_fail_a_pr_that_never_touched_it(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    config = small_world(root, leak_in_new=True)
    outside = tmp_path / "data" / "corpus.jsonl"
    outside.parent.mkdir()
    (root / "corpus-v2.jsonl").rename(outside)  # the corpus with the FAQ page quoting 3 golden queries
    (root / "corpus-v1.jsonl").unlink()
    config.write_text(config.read_text().replace("corpus: corpus-{ingestion.parser}.jsonl", f"corpus: {outside}"))
    (root / ".gitignore").write_text(".retrieval-gate/\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    (root / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 1.5\n")
    _git(root, "commit", "-qam", "PR: only the boost")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        code = main(["run", "--config", "gate.yml", "--base", "HEAD^1", "--out", str(tmp_path / "out")])
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    reasons = [r["code"] for r in report["verdict"]["reasons"]]
    headline = report["verdict"]["headline"]
    assert "new_leaked_queries" not in reasons and "newly appear" not in headline, headline
    assert code in (0, 1, 3), report["verdict"]["headline"]
    assert report["baseline"]["resolution"] == "reconstructed"
