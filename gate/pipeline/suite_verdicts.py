"""Judging several suites at once: each as one pull request is judged, then the worst of them.

Every suite runs the one path a single suite runs (:func:`gate.pipeline.pull_request.judge_pull_request`,
or :func:`judge_workspace` without a base) into a folder of its own, ``<out>/<suite>/`` (report.json,
report.md, comment.md as ever). A suite the change does not touch is skipped by its own watch
rules (nothing of it runs); a suite whose config the change deletes is judged as removed. The
outcome's verdict is the worst suite's (gate.verdict.kinds.severity), and so is its exit code.

``<out>/suites.json`` lists them (schema 1)::

    {"schema": 1, "source": ".retrieval-gate.yml",
     "suites": [{"suite", "config", "state", "verdict", "exit_code", "headline", "report": "<suite>/report.json"}],
     "worst": {"suite", "verdict", "exit_code", "headline"}}

and ``<out>/comment.md`` is the combined comment (one table, a collapsed section per suite).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate.common.atomic import write_text_atomic
from gate.common.jsontext import json_text
from gate.inputs import git
from gate.inputs.config import load_config
from gate.inputs.suite_set import REMOVED, Suite, SuiteSet
from gate.inputs.yardstick import load_yardstick
from gate.pipeline.pull_request import (
    PullRequest,
    judge_pull_request,
    judge_removed_suite,
    judge_workspace,
    skips_change,
)
from gate.pipeline.result import Result
from gate.pipeline.stack import Progress, RunOptions, check_base, stderr_progress
from gate.rendering.suites import render_suites_comment, render_suites_summary
from gate.verdict.kinds import severity

SCHEMA = 1
SUITES_FILE = "suites.json"
COMMENT_FILE = "comment.md"


@dataclass(frozen=True)
class SuiteResult:
    """One suite's verdict: report.json's content, its kind, exit code and first line."""

    suite: Suite
    report: Mapping[str, Any]
    verdict: str
    exit_code: int
    headline: str

    @property
    def severity(self) -> int:
        """0 is the worst (gate.verdict.kinds.severity: fail, inconclusive that blocks, one that
        does not, pass or accepted, skipped)."""
        return severity(self.verdict, self.exit_code)

    def delta(self) -> Mapping[str, Any] | None:
        """The report's delta (mean and interval), when it measured one."""
        delta = self.report.get("delta")
        return delta if isinstance(delta, Mapping) else None


@dataclass(frozen=True)
class SuitesOutcome:
    """Every suite's result (sorted by suite name) and what names them (a suites file, a glob)."""

    results: tuple[SuiteResult, ...]
    source: str

    @property
    def worst(self) -> SuiteResult:
        """The worst suite (the first by name among equally bad ones)."""
        return min(self.results, key=lambda r: r.severity)  # min keeps the first of equals

    @property
    def exit_code(self) -> int:
        return self.worst.exit_code

    def to_dict(self) -> dict[str, Any]:
        worst = self.worst
        return {"schema": SCHEMA, "source": self.source,
                "suites": [{"suite": r.suite.name, "config": r.suite.config_shown, "state": r.suite.state or "listed",
                            "verdict": r.verdict, "exit_code": r.exit_code, "headline": r.headline,
                            "report": f"{r.suite.name}/report.json"} for r in self.results],
                "worst": {"suite": worst.suite.name, "verdict": worst.verdict, "exit_code": worst.exit_code,
                          "headline": worst.headline}}

    def to_json(self) -> str:
        return json_text(self.to_dict(), ascii=True)

    def to_comment(self) -> str:
        """The combined PR comment (without its marker): the verdict table, then a collapsed
        section per suite; titled by what names the suites."""
        return render_suites_comment([r.report for r in self.results], title=self.source)

    def to_summary(self) -> str:
        """The job summary: the same table over each suite's own job summary."""
        return render_suites_summary([r.report for r in self.results], title=self.source)

    def write(self, out: Path) -> list[Path]:
        """suites.json and the combined comment.md into ``out`` (each suite's files are in its
        folder already)."""
        written = [out / SUITES_FILE, out / COMMENT_FILE]
        write_text_atomic(written[0], self.to_json())
        write_text_atomic(written[1], self.to_comment())
        return written


def judge_suites(suites: Sequence[Suite], change: PullRequest | None, options: RunOptions, source: str,
                 progress: Progress = stderr_progress) -> SuitesOutcome:
    """Every suite of ``suites`` judged into ``<options.out>/<suite>/``: against ``change``'s base
    as a pull request (its ``config_path`` replaced by each suite's), or, with no change, on the
    workspace as it is (``run`` without ``--base``). Writes suites.json and the combined
    comment.md into ``options.out``."""
    out = options.out or Path(".retrieval-gate/out")
    results = []
    for suite in suites:
        folder = out / suite.name
        said = _prefixed(progress, suite.name)
        said(f"suite {suite.name} ({suite.config_shown})" + (f": {suite.state}" if suite.state else ""))
        result = _judge_one(suite, change, dataclasses.replace(options, out=folder), said)
        result.write(folder)
        report = json.loads(result.to_json())
        headline = (report.get("verdict") or {}).get("headline") or result.verdict.headline_reason
        results.append(SuiteResult(suite, report, result.verdict.kind, result.verdict.exit_code, str(headline)))
    outcome = SuitesOutcome(tuple(results), source)
    outcome.write(out)
    return outcome


def _judge_one(suite: Suite, change: PullRequest | None, options: RunOptions, progress: Progress) -> Result:
    if change is None:
        return judge_workspace(suite.config_path, suite.config_shown, options, progress)
    own = dataclasses.replace(change, config_path=suite.config_path, config_shown=suite.config_shown)
    if suite.state == REMOVED:
        return judge_removed_suite(own, _repository_of(suite.config_path))
    return judge_pull_request(own, options, progress).result


def _repository_of(path: Path) -> Path:
    """The repository holding ``path`` (which may be deleted, with its folders)."""
    for folder in path.parents:
        if folder.is_dir():
            return git.repo_root(folder) or folder
    return Path.cwd()


def _prefixed(progress: Progress, name: str) -> Progress:
    return lambda message: progress(f"[{name}] {message}")


def touched(suite: Suite, base: str | None, changed: Sequence[str] | None) -> bool:
    """Whether the change (``changed`` since ``base``) touches a file ``suite`` watches, by its
    watch rules as of the base (the rules that skip it when the gate runs). Unknown changes
    touch every suite; a removed suite is touched (its deletion is judged)."""
    if changed is None or suite.state == REMOVED:
        return True
    overlay = Path(tempfile.mkdtemp(prefix="retrieval-gate-suite-"))
    try:
        watch = load_yardstick(suite.config_path, base, overlay, changed).watch
    finally:
        shutil.rmtree(overlay, ignore_errors=True)
    return not skips_change(changed, watch)


#: GitHub lists at most this many files of a pull request (GET /pulls/{n}/files).
PULL_FILES_LISTED = 3000


def touched_by_pull(found: SuiteSet, changed: Sequence[str]) -> frozenset[str]:
    """The suites of ``found`` (the default branch's: their watch rules are trusted) that a pull
    request changing ``changed`` (GitHub's list of its files) may touch. A list GitHub may have
    cut (:func:`files_may_be_cut`) may touch every suite: the files past the cut are unknown, and
    a pull request padded to 3,000 files with names listed first would push a watched one out."""
    if files_may_be_cut(changed):
        return frozenset(suite.name for suite in found.suites)
    return frozenset(suite.name for suite in found.suites if touched(suite, None, changed))


def files_may_be_cut(changed: Sequence[str]) -> bool:
    """Whether GitHub's list of a pull request's files may be cut (it stops at :data:`PULL_FILES_LISTED`)."""
    return len(changed) >= PULL_FILES_LISTED


def run_suites(found: SuiteSet, *, base: str | None = None, runs_dir: Path | None = None, out: Path,
               progress: Progress = stderr_progress, changed: Sequence[str] | None = None) -> SuitesOutcome:
    """``retrieval-gate run`` with several suites: each judged as :func:`gate.pipeline.pull_request.run`
    judges one (``base``: as a pull request against it, the files changed since it read from git),
    into ``<out>/<suite>/``."""
    assert found.source is not None  # one config is run as one suite (gate.pipeline.pull_request.run)
    options = RunOptions(runs_dir=runs_dir, base=base, out=out)
    if base is None:
        return judge_suites(found.suites, None, options, found.source, progress)
    present = [suite for suite in found.suites if suite.state != REMOVED]
    root = Path.cwd()
    if present:
        config = load_config(present[0].config_path)
        check_base(config, base)
        root = config.workspace_root
    if changed is None:
        listed = git.changed_since(root, base)
        changed = None if listed is None else tuple(listed)
    first = found.suites[0]
    change = PullRequest(first.config_path, first.config_shown, base, None if changed is None else tuple(changed))
    return judge_suites(found.suites, change, options, found.source, progress)

