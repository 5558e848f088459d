"""A team's repository, as the container suite's remote holds it.

The base commit on ``main`` carries the gate config, a golden set of 20 queries with qrels, two
corpus snapshots, the retrieval config and the team's own search command (``search/run.py``, a
token-overlap ranker: the container runs it, so it lives in the repository). Its baseline is
archived on ``main`` (``.retrieval-gate/baseline``) or on the baselines branch. A pull request
is a branch plus the merge commit GitHub makes, published as ``refs/pull/<n>/head`` and
``refs/pull/<n>/merge``. :class:`SuitesRepo` is a repository with two such worlds, each a suite,
named by a suites file at the top.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.support.small_world import RUNNER, small_world

GOOD = "ingestion: {parser: v1}\nboost: 2.0\nprefer_suffix: '#c0'\n"  # moves every query up
BAD = "ingestion: {parser: v1}\nboost: -5.0\n"  # the title counts against a page: every query falls
GITIGNORE = (".retrieval-gate/cache/\n.retrieval-gate/work/\n.retrieval-gate/out/\n**/.retrieval-gate/cache/\n"
             "**/.retrieval-gate/work/\n**/.retrieval-gate/out/\n")


def git(cwd: Path, *args: str, env: dict | None = None) -> str:
    done = subprocess.run(["git", "-c", "user.email=dev@example.com", "-c", "user.name=dev",
                           "-c", "init.defaultBranch=main", *args], cwd=cwd, check=True, capture_output=True,
                          text=True, env={**os.environ, **(env or {})})
    return done.stdout.strip()



def _team_world(folder: Path, extra_config: str = "") -> Path:
    """The small world in ``folder`` (golden set, qrels, corpora, retrieval.yml) with the team's
    search command at search/run.py; returns the world's gate config (gate.yml)."""
    folder.mkdir(parents=True, exist_ok=True)
    config = small_world(folder, leak_in_new=True,
                         extra_config="strata:\n  shares: {how_to: 0.6, navigational: 0.4}\n" + extra_config)
    (folder / "search").mkdir(exist_ok=True)
    shutil.copyfile(RUNNER, folder / "search" / "run.py")
    return config


def _team_config(config: Path, suite: str, runner_inputs: str = "") -> None:
    """``config`` (gate.yml) becomes the team's .retrieval-gate.yml beside it: suite ``suite``, the
    command ``python3 search/run.py`` (relative to the config's folder: the container runs it),
    ``runner_inputs`` (a YAML list) as runner.inputs when given."""
    text = config.read_text().replace(f"{sys.executable} {RUNNER}", "python3 search/run.py")
    text = text.replace("suite: small\n", f"suite: {suite}\n")
    if runner_inputs:
        text = text.replace("--output {run}\"\n", f"--output {{run}}\"\n  inputs: {runner_inputs}\n")
    assert "python3 search/run.py" in text and f"suite: {suite}\n" in text and runner_inputs in text
    (config.parent / ".retrieval-gate.yml").write_text(text)
    config.unlink()

@dataclass
class PullRequest:
    number: int
    head: str
    merge: str
    base: str
    files: list[str]


class TeamRepo:
    def __init__(self, root: Path, remote_root: Path, name: str = "octo-org/octo-repo", *,
                 subfolder: str = "", baselines_branch: bool = False, extra_config: str = "",
                 archived: bool = True, init: bool = False):
        """``init=True``: the gate's files are what ``retrieval-gate init`` writes (config, workflows,
        .gitignore lines), found from the golden set, qrels, corpus and retrieval config alone."""
        self._open(root, remote_root, name, subfolder)
        config = _team_world(self.folder, extra_config)
        if init:
            config.unlink()
            self.init_output = self._gate("init", "--suite", "docs-search", "--command",
                                          "python3 search/run.py --config {config} --queries {queries} "
                                          "--corpus {corpus} --output {run}")
        else:
            _team_config(config, "retrieval")  # the suite the example comment job posts
            (self.work / ".gitignore").write_text(GITIGNORE)
        self._commit_base()
        if archived:
            self._archive(baselines_branch)
        self.publish("main")

    def _open(self, root: Path, remote_root: Path, name: str, subfolder: str) -> None:
        """The remote's bare repository, and the developer's clone with its gate folder, both empty."""
        self.work = Path(root)
        self.name = name
        self.subfolder = subfolder
        self.bare = Path(remote_root) / f"{name}.git"
        self.bare.parent.mkdir(parents=True, exist_ok=True)
        git(self.bare.parent, "init", "-q", "--bare", self.bare.name)
        self.work.mkdir(parents=True, exist_ok=True)
        git(self.work, "init", "-q", "-b", "main")
        self.folder = self.work / subfolder if subfolder else self.work
        self.folder.mkdir(parents=True, exist_ok=True)

    def _commit_base(self, message: str = "the gate and its golden set") -> None:
        git(self.work, "add", "-A")
        git(self.work, "commit", "-qm", message)
        self.base = git(self.work, "rev-parse", "HEAD")

    @property
    def config_path(self) -> str:
        return f"{self.subfolder}/.retrieval-gate.yml" if self.subfolder else ".retrieval-gate.yml"

    def _gate(self, *args: str) -> str:
        """``retrieval-gate ARGS`` on the developer's machine, in the gate's folder; its output."""
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
        done = subprocess.run([sys.executable, "-m", "gate", *args], cwd=self.folder, env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def _archive(self, baselines_branch: bool, configs: tuple[str, ...] = (".retrieval-gate.yml",)) -> None:
        """The baseline of the base commit for each of ``configs`` (relative to the gate's folder):
        committed on main, or (one config) on the baselines branch."""
        for config in configs:
            self._gate("archive", "--config", str(self.folder / config))
        if not baselines_branch:
            self._commit_base("the archived baseline")
            return
        baseline = self.folder / ".retrieval-gate" / "baseline"
        staging = self.work.parent / "baselines-branch"
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(baseline, staging / "baselines" / self.base)
        shutil.rmtree(baseline)
        git(staging, "init", "-q", "-b", "retrieval-gate-baselines")
        git(staging, "add", "-A")
        git(staging, "commit", "-qm", f"baseline for {self.base[:12]}")
        git(staging, "push", "-q", "-f", str(self.bare), "retrieval-gate-baselines:retrieval-gate-baselines")
        shutil.rmtree(staging)

    def _commit(self, files: dict[str, str], message: str) -> None:
        """``files`` (paths relative to the gate's folder) written and committed."""
        for name, text in files.items():
            path = self.folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        git(self.work, "add", "-A")
        git(self.work, "commit", "-qm", message)

    def advance_main(self, files: dict[str, str], message: str) -> str:
        """``files`` (paths relative to the gate's folder) committed on main after the archive, and
        published: the base of later pull requests. Returns its sha."""
        git(self.work, "checkout", "-q", "main")
        self._commit(files, message)
        self.base = git(self.work, "rev-parse", "HEAD")
        self.publish("main")
        return self.base

    def publish(self, *refs: str) -> None:
        git(self.work, "push", "-q", "-f", str(self.bare), *[f"{r}:{r}" if ":" not in r else r for r in refs])

    def pull_request(self, number: int, files: dict[str, str], base: str | None = None) -> PullRequest:
        """A branch from ``base`` (default: main's tip) changing ``files`` (paths relative to the
        gate's folder), and GitHub's merge commit of it into main."""
        base = base or self.base
        git(self.work, "checkout", "-q", "-B", f"pr-{number}", base)
        self._commit(files, f"PR {number}")
        head = git(self.work, "rev-parse", "HEAD")
        git(self.work, "checkout", "-q", "--detach", "main")
        git(self.work, "merge", "-q", "--no-ff", "-m", f"Merge {head} into main", head)
        merge = git(self.work, "rev-parse", "HEAD")
        git(self.work, "checkout", "-q", "main")
        self.publish(f"{head}:refs/pull/{number}/head", f"{merge}:refs/pull/{number}/merge")
        prefix = f"{self.subfolder}/" if self.subfolder else ""
        return PullRequest(number, head, merge, git(self.work, "rev-parse", "main"), [prefix + f for f in files])

    def merge_queue(self, number: int, commits: list[dict[str, str]]) -> tuple[str, str, str]:
        """A merge group: the PR's commits rebased onto main's tip, one commit each, published as
        the queue's branch. Returns (head sha, ref, base sha)."""
        base = git(self.work, "rev-parse", "main")
        git(self.work, "checkout", "-q", "--detach", base)
        for k, files in enumerate(commits):
            self._commit(files, f"PR {number}, commit {k + 1}")
        head = git(self.work, "rev-parse", "HEAD")
        git(self.work, "checkout", "-q", "main")
        ref = f"refs/heads/gh-readonly-queue/main/pr-{number}-{head}"
        self.publish(f"{head}:{ref}")
        return head, ref, base

    def merge_queue_merge(self, number: int, files: dict[str, str]) -> tuple[str, str, str]:
        """A merge group made by the queue's "merge" method: the PR's branch (one commit on an
        older main) merged into main's tip by a merge commit, published as the queue's branch.
        Returns (head sha, ref, base sha)."""
        base = git(self.work, "rev-parse", "main")
        git(self.work, "checkout", "-q", "-B", f"pr-{number}", base)
        self._commit(files, f"PR {number}")
        pr_head = git(self.work, "rev-parse", "HEAD")
        git(self.work, "checkout", "-q", "--detach", base)
        git(self.work, "merge", "-q", "--no-ff", "-m", f"Merge pull request #{number}", pr_head)
        head = git(self.work, "rev-parse", "HEAD")
        git(self.work, "checkout", "-q", "main")
        ref = f"refs/heads/gh-readonly-queue/main/pr-{number}-{head}"
        self.publish(f"{head}:{ref}")
        return head, ref, base



class SuitesRepo(TeamRepo):
    """Two search surfaces in one repository, each a suite of its own: ``alpha/`` and ``beta/``,
    each the team's world (its golden set, corpora, retrieval.yml and search/run.py) with a gate
    config whose runner.inputs is its own search code, and a suites file at the top
    (``.retrieval-gate.yml``, a glob of the two). Both baselines archived on main. Paths given to
    :meth:`pull_request` are relative to the repository's top (``alpha/retrieval.yml``)."""

    SUITES = ("alpha", "beta")
    SUITES_FILE = 'suites:\n  - "*/.retrieval-gate.yml"\n'

    def __init__(self, root: Path, remote_root: Path, name: str = "octo-org/octo-repo"):
        self._open(root, remote_root, name, "")
        for suite in self.SUITES:
            _team_config(_team_world(self.folder / suite), suite, runner_inputs='["search/**"]')
        (self.work / ".retrieval-gate.yml").write_text(self.SUITES_FILE)
        (self.work / ".gitignore").write_text(GITIGNORE)
        self._commit_base("two suites and their golden sets")
        self._archive(False, tuple(f"{suite}/.retrieval-gate.yml" for suite in self.SUITES))
        self.publish("main")
