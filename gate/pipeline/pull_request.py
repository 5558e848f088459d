"""Judging a pull request: the one path ``retrieval-gate run --base`` and the Action share.

A change is held to its base's yardstick (gate config, golden set, qrels, strata, policy,
manifest), not its own. Here, and only here, it is decided whether the stack runs at all
(``skipped``: no changed file can move the runs; ``inconclusive``: the base cannot be found),
whether the change moves the goalposts, and whether a reviewer accepted a failing verdict. The
Action adds only what it reads from its event and inputs, and the publishing; the CLI, what it
reads from git.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate.common.errors import InputError
from gate.inputs import git
from gate.inputs.config import Config, Policy, load_config
from gate.inputs.globs import matches
from gate.inputs.yardstick import (
    BASELINES_BRANCH,
    EVERYTHING,
    Yardstick,
    baseline_from_branch,
    fetch_archived_commit,
    load_yardstick,
)
from gate.pipeline.history import Trend, pull_request_trend
from gate.pipeline.judgments import unjudged_export
from gate.pipeline.result import Result
from gate.pipeline.run import run_gate
from gate.pipeline.stack import Progress, RunOptions, check_base, stderr_progress
from gate.rendering.comment import headlined, reproduce_command
from gate.report.build import GateRun, Head, NoBaseline, PullRequestFacts, build_report, unjudged_rows
from gate.runs.code import open_for_reading
from gate.verdict.rules import Verdict, accept, goalposts_changed, inconclusive, skipped


@dataclass(frozen=True)
class Fetch:
    """Where the baselines branch and a baseline's archived commit are fetched from when the
    checkout lacks them: the repository's own address with its token (the Action; ``plan`` in a
    workflow), or ``origin`` without credentials (a developer's clone)."""

    remote_url: str | None = None
    token: str | None = None


@dataclass(frozen=True)
class PullRequest:
    """A change to judge, however it was found."""

    config_path: Path  # the gate config in the workspace (the PR's copy; the base's is what counts)
    config_shown: str  # the config path as the user gave it: the comment's reproduce command quotes it
    base: str | None  # the commit the change is judged against
    changed: tuple[str, ...] | None  # the files it changes; None: not known (then it is judged)
    base_problem: str | None = None  # why a change that must have a base has none (inconclusive)
    labels: tuple[str, ...] = ()  # the PR's current labels and body: a reviewer's acceptance
    body: str | None = None
    event: dict[str, Any] | None = None  # the Action's event (name, PR, head and base): shown in the report
    fetch: Fetch = Fetch()
    warnings: tuple[str, ...] = ()  # what finding the base said (the report's warnings, first)


@dataclass(frozen=True)
class Judgement:
    """The verdict on a pull request, its typed report, and the yardstick it was held to."""

    result: Result
    yardstick: Yardstick

    @property
    def verdict(self) -> Verdict:
        return self.result.verdict

    @property
    def config(self) -> Config:
        return self.yardstick.config


def judge_pull_request(change: PullRequest, options: RunOptions, progress: Progress = stderr_progress) -> Judgement:
    """The gate's verdict on ``change``: the yardstick as of its base, the code under test from
    the workspace (``options``: a candidate run, the runs folder, where reports go)."""
    warnings: list[str] = list(change.warnings)
    overlay = Path(tempfile.mkdtemp(prefix="retrieval-gate-yardstick-"))
    # The runner command reads the base's golden queries from here, as the box's uid: readable by
    # all, writable by the gate alone (mkdtemp makes it 0700).
    overlay.chmod(0o755)
    try:
        yard = load_yardstick(change.config_path, change.base, overlay, change.changed)
        open_for_reading(overlay)  # what load_yardstick wrote there, under any umask
        config = yard.config
        if yard.warning:
            warnings.append(yard.warning)
        baseline_source = _archived_baseline(config, change, warnings)
        warnings.extend(_undeclared_inputs(yard, change.changed))
        policy = config.policy
        if change.base_problem is not None:
            # The default policy, not the change's own: its config is what cannot be checked.
            policy = Policy()
            run = _not_run(config, inconclusive("base_unavailable", change.base_problem, policy), BASE_UNREADABLE)
        elif skips_change(change.changed, yard.watch):
            assert change.changed is not None
            run = _not_run(config, skipped(len(change.changed), policy, change.changed), SKIPPED)
        else:
            run = run_gate(config, dataclasses.replace(options, base=change.base), progress).run
    finally:
        shutil.rmtree(overlay, ignore_errors=True)
    verdict = goalposts_changed(run.verdict, yard.goalposts, policy)
    verdict, accepted = accept(verdict, change.labels, change.body, policy)
    trend = _trend(config, change, run, warnings)
    facts = PullRequestFacts(goalposts=tuple(yard.goalposts), accepted=accepted or None, warnings=tuple(warnings),
                             yardstick={"source": yard.source, "baseline_source": baseline_source},
                             event=change.event, trend=None if trend is None else trend.to_dict(),
                             history_url=config.history.url)
    reproduce = reproduce_command(change.config_shown, change.base)
    # The headline and the command go into report.json: comment.md and a later `retrieval-gate
    # comment` of this report read the same first line and command.
    record = headlined(build_report(dataclasses.replace(run, verdict=verdict), facts), reproduce)
    return Judgement(Result(record, verdict, "run.md.j2", unjudged_rows(run), reproduce, unjudged_export(config)),
                     yard)


def judge_workspace(config_path: Path, config_shown: str, options: RunOptions,
                    progress: Progress = stderr_progress) -> Result:
    """The gate on the workspace as it is, with no base to hold it to: the workspace's own
    yardstick (``run`` without ``--base``)."""
    config = load_config(config_path)
    run = run_gate(config, options, progress).run
    reproduce = reproduce_command(config_shown, None)
    return Result(headlined(build_report(run), reproduce), run.verdict, "run.md.j2", unjudged_rows(run), reproduce,
                  unjudged_export(config))


def judge_removed_suite(change: PullRequest, repository: Path) -> Result:
    """A suite of the base commit's set whose gate config ``change`` deletes: the base's config
    (read from the commit) is its yardstick, and deleting it moves the goalposts - the suite
    fails unless a reviewer accepts the removal (the accept label and a justification line).
    ``repository``: the checkout's top (the config's folder may be gone too)."""
    assert change.base is not None  # a suite is removed only against a base's set
    relative = git.repository_path(repository, change.config_path)
    content = None if relative is None else git.show_file(repository, change.base, repository / relative)
    if relative is None or content is None:
        raise InputError(change.config_shown, None, f"not in the base commit {change.base[:12]}, so it cannot be a "
                                                    "suite this change removes")
    config = load_config(change.config_path, text_override=content.decode("utf-8", "replace"))
    policy = config.policy
    goalposts = ({"path": relative.as_posix(), "change": "deleted"},)
    verdict = goalposts_changed(Verdict("pass", ()), goalposts, policy)
    verdict, accepted = accept(verdict, change.labels, change.body, policy)
    run = GateRun(Head(config.suite, config.metric), verdict, NoBaseline(REMOVED))
    facts = PullRequestFacts(goalposts=goalposts, accepted=accepted or None, warnings=change.warnings,
                             yardstick={"source": f"base commit {change.base[:12]}", "baseline_source": None},
                             event=change.event)
    reproduce = reproduce_command(change.config_shown, change.base)
    return Result(headlined(build_report(run, facts), reproduce), verdict, "run.md.j2", None, reproduce)


def skips_change(changed: Sequence[str] | None, watch: Sequence[str]) -> bool:
    """A change that touches no watched file cannot move the runs: it is skipped, not judged."""
    return changed is not None and not any(matches(path, watch) for path in changed)


def _undeclared_inputs(yard: Yardstick, changed: Sequence[str] | None) -> list[str]:
    """Loud when a change is judged only because runner.inputs is not declared."""
    declared = [glob for glob in yard.watch if glob != EVERYTHING]
    if not changed or EVERYTHING not in yard.watch or any(matches(path, declared) for path in changed):
        return []
    names = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
    return [f"runner.inputs is not declared, so every file is code under test: this change ({names}) is judged. "
            "Declare runner.inputs (the globs of the code the runs depend on) to skip changes that cannot move "
            "them"]


def _archived_baseline(config: Config, change: PullRequest, warnings: list[str]) -> str | None:
    """The base's archived baseline from the baselines branch when the checkout has none, and the
    commit it was archived on (its code replays it). Returns where the baseline came from.

    The Action fetches both from the repository's own address; a developer's clone (no address
    given) reads the branch only when it has it, and fetches nothing: an unreachable remote must
    not stall a local run."""
    manifest = config.resolve(config.manifest)
    assert manifest is not None  # resolve() of a str is a Path
    remote_url, token = change.fetch.remote_url, change.fetch.token
    source = None
    if change.base is not None and not manifest.exists() and (
            remote_url is not None or _has_baselines_branch(config.workspace_root)):
        source = baseline_from_branch(config.workspace_root, change.base, manifest.parent, token=token,
                                      remote_url=remote_url, warnings=warnings)
    if remote_url is not None:
        fetch_archived_commit(config.workspace_root, manifest, token=token, remote_url=remote_url,
                              warnings=warnings)
    return source


def _trend(config: Config, change: PullRequest, run: GateRun, warnings: list[str]) -> Trend | None:
    """The comment's trend, from the baselines branch the baseline is read from (fetched from the
    repository's own address in the Action; a developer's clone reads it only when it has it)."""
    remote_url = change.fetch.remote_url
    if remote_url is None and not _has_baselines_branch(config.workspace_root):
        return None
    return pull_request_trend(config, change.base, run, token=change.fetch.token, remote_url=remote_url,
                              warnings=warnings)


def _has_baselines_branch(workspace: Path) -> bool:
    """The clone has the baselines branch (fetched by the developer): reading it costs no fetch."""
    return any(git.rev_parse(workspace, ref) is not None
               for ref in (f"refs/remotes/origin/{BASELINES_BRANCH}", f"refs/heads/{BASELINES_BRANCH}"))


# What the report's baseline says when nothing was measured: a reviewer reads it under "No
# baseline" in the comment, so it says what happened, not the gate's internal state.
SKIPPED = ("the change was skipped (it touches none of the files the gate watches), so neither the baseline "
           "nor the PR's retrieval was run")
REMOVED = ("this PR deletes the suite's gate config, so neither the baseline nor the PR's retrieval was run: the "
           "suite was removed")
BASE_UNREADABLE = ("the base commit could not be read, so there was nothing to measure the PR against: neither "
                   "the baseline nor the PR's retrieval was run")


def _not_run(config: Config, verdict: Verdict, why: str) -> GateRun:
    """A change the stack did not run on (skipped, or no base to judge against), and ``why``."""
    return GateRun(Head(config.suite, config.metric), verdict, NoBaseline(why))


def run(config_path: str | Path, *, base: str | None = None, runs_dir: str | Path | None = None,
        candidate_run: str | Path | None = None, progress: Progress = stderr_progress,
        out: str | Path | None = None, changed: Sequence[str] | None = None,
        candidate_timings: str | Path | None = None) -> Result:
    """``retrieval-gate run`` as a function (``gate.run``): the gate on the config at
    ``config_path``; with ``base`` (a commit), the change in the working tree judged as the Action
    judges a PR (see :func:`judge_pull_request`). ``changed``: the files the change touches
    (default: the working tree against ``base``). Returns a :class:`Result` (the typed report,
    the verdict, the candidate's unjudged documents) that writes and renders itself."""
    options = RunOptions(candidate_run=Path(candidate_run) if candidate_run is not None else None,
                         runs_dir=Path(runs_dir) if runs_dir is not None else None, base=base,
                         out=Path(out) if out is not None else None,
                         candidate_timings=Path(candidate_timings) if candidate_timings is not None else None)
    if base is None:
        return judge_workspace(Path(config_path), str(config_path), options, progress)
    workspace = load_config(config_path)
    check_base(workspace, base)
    if changed is None:
        found = git.changed_since(workspace.workspace_root, base)
        changed = None if found is None else tuple(found)
    # From origin, without credentials: a developer's clone (the Action fetches with its token).
    change = PullRequest(Path(config_path), str(config_path), base, None if changed is None else tuple(changed))
    return judge_pull_request(change, options, progress).result
