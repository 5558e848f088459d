"""A repository with a gate config on main and a ``retrieval-gate-baselines`` branch holding
``baselines/<sha>/`` folders written by the archiver's own ``write_manifest``: a few main commits,
one of them changing the golden set (the break)."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gate.demo.archive_branch import commit_baseline
from gate.inputs.manifest import InputRecord, write_manifest
from gate.inputs.readers.records import Run
from gate.inputs.retrieval_config import RetrievalConfig

BRANCH = "retrieval-gate-baselines"
STRATA = ("how_to", "navigational")


def git_env(repo: Path, date: str) -> dict[str, str]:
    return {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date, "HOME": str(repo), "PATH": os.environ["PATH"],
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}


def git(repo: Path, *args: str, date: str = "2025-01-01T12:00:00Z") -> str:
    proc = subprocess.run(["git", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args], cwd=repo,
                          capture_output=True, text=True, env=git_env(repo, date), check=True)
    return proc.stdout.strip()


def _queries(count: int) -> list[dict]:
    return [{"query_id": f"q_{i:04d}", "text": f"query {i}", "stratum": STRATA[i % 2]} for i in range(count)]


def write_golden(repo: Path, count: int) -> None:
    (repo / "golden.jsonl").write_text("".join(json.dumps(q) + "\n" for q in _queries(count)))
    (repo / "qrels.txt").write_text("".join(f"q_{i:04d} 0 d{i} 1\n" for i in range(count)))


@dataclass
class HistoryWorld:
    repo: Path
    commits: list[str] = field(default_factory=list)
    archived: list[str] = field(default_factory=list)

    def commit(self, subject: str, date: str, count: int | None = None) -> str:
        if count is not None:
            write_golden(self.repo, count)
        (self.repo / "retrieval.yml").write_text(f"ingestion: {{parser: v1}}\nk: {len(self.commits)}\n")
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-qm", subject, date=date)
        sha = git(self.repo, "rev-parse", "HEAD")
        self.commits.append(sha)
        return sha

    def archive(self, sha: str, mean: float, count: int, *, band: float | None = 0.01, metric: str = "nDCG@10",
                qrels_tag: str = "a", date: str = "2025-01-01T12:00:00Z") -> None:
        """baselines/<sha>/ on the baselines branch, as the archive workflow commits it."""
        folder = self.repo.parent / f"archive-{sha[:12]}"
        rng = np.random.default_rng(len(self.archived))
        values = np.clip(mean + rng.normal(0, 0.2, count), 0, 1)
        ids = [f"q_{i:04d}" for i in range(count)]
        run = Run("t", tuple(ids), np.arange(count + 1, dtype=np.int64), np.array([f"d{i}" for i in range(count)]),
                  np.ones(count))
        extra = None if band is None else {"noise_band": {"metric": metric, "threshold": band, "strata": {
            s: {"threshold": band * 2} for s in STRATA}}}
        write_manifest(folder, suite="t", config_path="retrieval.yml",
                       config=RetrievalConfig("retrieval.yml", {"k": len(self.archived)}),
                       corpus=None, queries=InputRecord("golden.jsonl", f"{count:064x}", count),
                       qrels=InputRecord("qrels.txt", (qrels_tag * 64)[:64], count), metric=metric,
                       measures=(metric,), rel=1, runner={"type": "command"}, run=run,
                       per_query={metric: dict(zip(ids, map(float, values)))}, environment={}, git_commit=sha,
                       extra=extra)
        self._commit_folder(sha, folder, date)
        self.archived.append(sha)

    def _commit_folder(self, sha: str, folder: Path, date: str) -> None:
        commit_baseline(self.repo, sha, folder, git_env(self.repo, date))


def make_world(tmp: Path) -> HistoryWorld:
    """Four archived main commits: three on an 20-query golden set, then one on 30 queries (a break)."""
    repo = tmp / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "gate.yml").write_text(
        "suite: t\ngolden: {queries: golden.jsonl, qrels: qrels.txt, rel: 1}\nretrieval: {config: retrieval.yml}\n"
        "runner: {command: 'true {run}'}\nmetric: nDCG@10\nstatistics: {samples: 500, seed: 11}\n")
    world = HistoryWorld(repo)
    first = world.commit("Initial gate setup", "2025-01-01T12:00:00Z", count=20)
    world.archive(first, 0.50, 20)
    second = world.commit("Merge pull request #3 from someone/bm25-k1", "2025-01-02T12:00:00Z")
    world.archive(second, 0.55, 20)
    third = world.commit("Tune fusion weights (#4)", "2025-01-03T12:00:00Z")
    world.archive(third, 0.57, 20)
    fourth = world.commit("Golden set v2 (#5)", "2025-01-04T12:00:00Z", count=30)
    world.archive(fourth, 0.60, 30)
    return world
