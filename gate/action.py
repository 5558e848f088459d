"""The GitHub Action's shell: from the runner's environment to the verdict's outputs, comment, exit code.

``entrypoint.py`` calls :func:`main` with the environment :func:`gate.runs.isolation.isolate`
returns (the secrets are no longer in ``os.environ``, nor in ``/proc/<pid>/environ``).
Inputs arrive as ``INPUT_<NAME>`` with hyphens kept; ``required`` is enforced here because
the runner does not. Every git call names the repository's top level as a
``safe.directory`` through its environment (gate.inputs.git). The token is masked at once and
never reaches a subprocess (runners get a scrubbed environment), a log line, a report or an
output.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TextIO, overload

from gate.common.environment import scrub_token
from gate.common.errors import InputError, UsageError
from gate.common.numbers import fixed
from gate.inputs import git
from gate.inputs.github_event import Event, base_commit, read_event
from gate.inputs.suite_set import SuiteSet, discover, suites_at_base
from gate.pipeline.pull_request import Fetch, Judgement, PullRequest, judge_pull_request
from gate.pipeline.result import Result
from gate.pipeline.stack import RunOptions
from gate.pipeline.suite_verdicts import SuitesOutcome, judge_suites
from gate.publishing.github.client import GitHubClient, GitHubError, max_wait_problem, truncate_description
from gate.publishing.github.sticky_comment import CommentResult, publish_comment, publish_suites_comment
from gate.publishing.workflow_commands import (
    annotation,
    append_summary,
    escape_data,
    group,
    mask,
    stop_commands,
    write_outputs,
)
from gate.rendering.comment import render_summary
from gate.report.spine import Report
from gate.report.typed import Absent
from gate.verdict.rules import Verdict, commit_state

COMMENT_MODES = ("update", "new", "off")


class ActionInputError(Exception):
    pass


@dataclass(frozen=True)
class Inputs:
    config_path: str
    token: str
    candidate_run: str | None
    runs_dir: str | None
    comment_mode: str
    github_max_wait: float
    working_directory: str
    commit_status: bool


@overload
def _input(env: Mapping[str, str], name: str, default: str, required: bool = False) -> str: ...
@overload
def _input(env: Mapping[str, str], name: str, default: None = None, *, required: Literal[True]) -> str: ...
@overload
def _input(env: Mapping[str, str], name: str, default: None = None, required: bool = False) -> str | None: ...
def _input(env: Mapping[str, str], name: str, default: str | None = None, required: bool = False) -> str | None:
    # The runner upper-cases the name and keeps hyphens: config-path -> INPUT_CONFIG-PATH.
    value = env.get(f"INPUT_{name.upper()}")
    if value is None:
        value = env.get(f"INPUT_{name.upper().replace('-', '_')}")
    value = (value or "").strip()
    if not value:
        if required:
            raise ActionInputError(f"input '{name}' is required")
        return default
    return value


def read_inputs(env: Mapping[str, str]) -> Inputs:
    mode = _input(env, "comment-mode", "update")
    if mode not in COMMENT_MODES:
        raise ActionInputError(f"input 'comment-mode' must be one of {', '.join(COMMENT_MODES)}, got '{mode}'")
    wait_text = _input(env, "github-max-wait", "120")
    try:
        wait = float(wait_text)
    except ValueError:
        raise ActionInputError(f"input 'github-max-wait' must be a number of seconds, got '{wait_text}'") from None
    problem = max_wait_problem(wait)
    if problem:
        raise ActionInputError(f"input 'github-max-wait' {problem}, got '{wait_text[:30]}'")
    status = (_input(env, "commit-status", "false") or "false").lower()
    if status not in ("true", "false"):
        raise ActionInputError(f"input 'commit-status' must be true or false, got '{status}'")
    return Inputs(
        config_path=_input(env, "config-path", ".retrieval-gate.yml"),
        token=_input(env, "token", required=True),
        candidate_run=_input(env, "candidate-run"),
        runs_dir=_input(env, "runs-dir"),
        comment_mode=mode,
        github_max_wait=wait,
        working_directory=_input(env, "working-directory", "."),
        commit_status=status == "true",
    )


def _print(stream: TextIO, text: str) -> None:
    stream.write(text + "\n")
    stream.flush()


def main(env: Mapping[str, str] | None = None, stdout: TextIO | None = None, identity: str | None = None) -> int:
    """``env``: the runner's environment, secrets included (from :func:`gate.runs.isolation.isolate`,
    which keeps them out of ``os.environ``); ``identity``: what isolate did, for the log."""
    env = dict(os.environ if env is None else env)
    out = stdout or sys.stdout
    if identity:
        _print(out, f"retrieval-gate: {identity}")
    try:
        inputs = read_inputs(env)
    except ActionInputError as error:
        _print(out, annotation("error", str(error), title="retrieval-gate"))
        return 2
    _print(out, mask(inputs.token))
    # The token goes to the API client only; nothing below passes env to a child process.
    for name in ("INPUT_TOKEN", "GITHUB_TOKEN"):
        os.environ.pop(name, None)
    try:
        return _run(env, inputs, out)
    except InputError as error:
        _print(out, annotation("error", f"bad input: {error}", title="retrieval-gate"))
        return 2
    except Exception:  # noqa: BLE001 - the edge
        _print(out, annotation("error", f"internal error (traceback saved to {_save_crash(env, inputs)})",
                               title="retrieval-gate"))
        return 4


def output_folder(env: Mapping[str, str]) -> Path:
    """Where the Action writes report.json, report.md, comment.md (and a crash's traceback)."""
    return Path(env.get("GITHUB_WORKSPACE", ".")).resolve() / ".retrieval-gate" / "out"


def _save_crash(env: Mapping[str, str], inputs: Inputs) -> str:
    """The traceback, where the job keeps it: the output folder (uploaded with the report; a
    container's /tmp goes with the container), and a line in the job summary. Returns where."""
    text = scrub_token(traceback.format_exc(), inputs.token)
    place = output_folder(env) / "crash-traceback.txt"
    try:
        place.parent.mkdir(parents=True, exist_ok=True)
        place.write_text(text, encoding="utf-8")
        where = _workspace_relative(env, place)
    except OSError:
        fd, name = tempfile.mkstemp(prefix="retrieval-gate-crash-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        where = name
    try:
        append_summary(env.get("GITHUB_STEP_SUMMARY", ""), f"**retrieval-gate: internal error** (exit 4, a bug in "
                       f"the gate, not a verdict): the traceback is in `{where}`.\n")
    except OSError:
        pass
    return where


def _changed_files(workspace: Path, base: str | None, event: Event, client, out: TextIO) -> list[str] | None:
    if base is not None:
        files = git.changed_files(workspace, base, "HEAD")
        if files is not None:
            return files
    if client is not None and event.pr_number is not None:
        try:
            return client.list_pull_files(event.pr_number)
        except GitHubError as error:  # the gate still decides without the list
            _print(out, annotation("warning", f"the PR's changed files were not read from GitHub "
                                              f"({_describe(error)}); deciding without them", title="retrieval-gate"))
            return None
    return None


def _run(env: Mapping[str, str], inputs: Inputs, out: TextIO) -> int:
    started = time.monotonic()
    event = read_event(env)
    workspace = (Path(env.get("GITHUB_WORKSPACE", ".")) / inputs.working_directory).resolve()
    # Only the runner's own variable: a payload cannot point the token at another repository.
    repository = env.get("GITHUB_REPOSITORY")
    client = None
    if repository:
        client = GitHubClient(env.get("GITHUB_API_URL", "https://api.github.com"), inputs.token, repository,
                              max_wait=inputs.github_max_wait)
    warnings: list[str] = []

    with group("retrieval-gate: inputs", stream=out):
        remote_url = git.repository_url(env)  # the repository's own address: the token goes only there
        base, base_problem = base_commit(workspace, event, warnings, inputs.token, remote_url)
        changed = _changed_files(workspace, base, event, client, out)
        _print(out, f"event {escape_data(event.name)}; PR {event.pr_number}; head {event.head_sha}; base {base}; "
                    f"{'unknown' if changed is None else len(changed)} changed files")
    labels, body = _current_labels_and_body(event, client, out)
    change = PullRequest(
        config_path=workspace / inputs.config_path, config_shown=inputs.config_path, base=base,
        changed=None if changed is None else tuple(changed), base_problem=base_problem, labels=labels, body=body,
        event={"name": event.name, "pr": event.pr_number, "head_sha": event.head_sha, "base_sha": base},
        fetch=Fetch(remote_url=remote_url, token=inputs.token), warnings=tuple(warnings))
    # At the workspace's top, whatever working-directory is: the workflow's next steps (record
    # the PR, upload the report) find it at one documented place.
    out_dir = output_folder(env)
    options = RunOptions(
        candidate_run=(workspace / inputs.candidate_run) if inputs.candidate_run else None,
        runs_dir=(workspace / inputs.runs_dir) if inputs.runs_dir else None,
        base=base,
        out=out_dir,
    )
    found = discover(inputs.config_path, workspace)
    if found.several:
        if inputs.candidate_run:
            raise UsageError("input 'candidate-run' is one suite's run: with several suites "
                                            f"('{inputs.config_path}') give each suite its own job")
        found = suites_at_base(inputs.config_path, workspace, base)
        return _run_suites(env, inputs, out, event, client, change, options, found, started)
    with group("retrieval-gate: run", stream=out):
        judgement = judge_pull_request(change, options,
                                       progress=lambda m: _print(out, f"[retrieval-gate] {escape_data(m)}"))
    result, verdict = judgement.result, judgement.verdict
    result.write(out_dir)

    # The verdict is decided and on disk. What follows is publishing, in order of importance:
    # the outputs and the job summary first (the workflow's next steps need them), then GitHub.
    # A GitHub failure (a 502, a deleted comment, the wait cap) is a warning: the job still
    # exits with the verdict's code, never 4.
    output_file = env.get("GITHUB_OUTPUT", "")
    delta = result.report.delta
    write_outputs(output_file, {
        "verdict": verdict.kind,
        "delta": _fixed6(delta.mean if delta else None),
        "ci-low": _fixed6(delta.ci_low if delta else None),
        "ci-high": _fixed6(delta.ci_high if delta else None),
        "report-path": _workspace_relative(env, out_dir / "report.json"),
    })
    append_summary(env.get("GITHUB_STEP_SUMMARY", ""),
                   render_summary(result.report, reproduce_command=result.reproduce_command))
    comment_url = ""
    if event.name.startswith("pull_request") and event.pr_number is not None and client is not None:
        comment_url = _publish_on_github(client, event, inputs, judgement, out)
    write_outputs(output_file, {"comment-url": comment_url})
    _log_verdict(result, out)
    _print(out, f"retrieval-gate: {verdict.kind} (exit {verdict.exit_code}) in {time.monotonic() - started:.1f}s")
    return verdict.exit_code


def _run_suites(env: Mapping[str, str], inputs: Inputs, out: TextIO, event: Event, client: GitHubClient | None,
                change: PullRequest, options: RunOptions, found: SuiteSet, started: float) -> int:
    """Several suites in one job (``config-path`` a suites file or a glob): each judged into
    ``<out>/<suite>/``, suites.json and the combined comment beside them; one sticky comment,
    a status per suite and one for the worst; the exit code is the worst suite's."""
    assert found.source is not None and options.out is not None
    with group("retrieval-gate: run", stream=out):
        outcome = judge_suites(found.suites, change, options, found.source,
                               progress=lambda m: _print(out, f"[retrieval-gate] {escape_data(m)}"))
    worst = outcome.worst
    output_file = env.get("GITHUB_OUTPUT", "")
    # One suite's delta is no set's: with several suites the numbers are each report's.
    write_outputs(output_file, {"verdict": worst.verdict, "delta": "", "ci-low": "", "ci-high": "",
                                "report-path": _workspace_relative(env, options.out / "suites.json")})
    append_summary(env.get("GITHUB_STEP_SUMMARY", ""), outcome.to_summary())
    comment_url = ""
    if event.name.startswith("pull_request") and event.pr_number is not None and client is not None:
        comment_url = _publish_suites_on_github(client, event, inputs, outcome, found.source, out)
    write_outputs(output_file, {"comment-url": comment_url})
    for result in outcome.results:
        kind = "error" if result.exit_code else "notice"
        _print(out, annotation(kind, result.headline[:1000], title=f"retrieval-gate {result.suite.name}: "
                                                                   f"{result.verdict}"))
    name = escape_data(worst.suite.name)
    _print(out, f"retrieval-gate: {worst.verdict} (worst of {len(outcome.results)} suites: {name}; "
                f"exit {outcome.exit_code}) in {time.monotonic() - started:.1f}s")
    return outcome.exit_code


def _comment(out: TextIO, publish: Callable[[], CommentResult]) -> str:
    """The sticky comment written by ``publish``; its address, or "" when GitHub would not (a
    warning: the verdict stands whatever GitHub answers)."""
    comment_url = ""
    with group("retrieval-gate: comment", stream=out):
        try:
            posted = publish()
        except Exception as error:  # noqa: BLE001 - GitHub's failure is never the verdict's
            _print(out, annotation("warning", f"the PR comment was not written ({_describe(error)}); the "
                                              f"verdict stands", title="retrieval-gate comment"))
        else:
            comment_url = posted.url or ""
            _print(out, f"comment: {posted.action} {comment_url}")
            if posted.action == "forbidden":
                _print(out, annotation("warning", posted.message or "no permission to comment",
                                       title="retrieval-gate comment"))
    return comment_url


def _publish_suites_on_github(client: GitHubClient, event: Event, inputs: Inputs, outcome: SuitesOutcome,
                              source: str, out: TextIO) -> str:
    """The one combined comment, and (if asked for) a status per suite and ``retrieval-gate``
    for the worst. Returns the comment's address."""
    assert event.pr_number is not None
    every_suite_skipped = all(r.verdict == "skipped" for r in outcome.results)
    comment_url = _comment(out, lambda: publish_suites_comment(
        client, event.pr_number or 0, event.head_sha or "", source, outcome.worst.verdict, outcome.to_comment(),
        mode=inputs.comment_mode, only_update=every_suite_skipped))
    if inputs.commit_status and event.head_sha:
        worst = outcome.worst
        statuses = [(f"retrieval-gate/{r.suite.name}", r.verdict, r.exit_code, r.headline) for r in outcome.results]
        statuses.append(("retrieval-gate", worst.verdict, worst.exit_code,
                         f"worst of {len(outcome.results)} suites: {worst.suite.name}: {worst.headline}"))
        for context, kind, exit_code, headline in statuses:
            try:
                client.create_status(event.head_sha, commit_state(Verdict(kind, (), exit_code=exit_code)), context,
                                     truncate_description(headline))
            except Exception as error:  # noqa: BLE001 - as above
                _print(out, annotation("warning", f"commit status {context} not written: {_describe(error)}"))
    return comment_url


def _publish_on_github(client: GitHubClient, event: Event, inputs: Inputs, judgement: Judgement, out: TextIO) -> str:
    """The PR comment (and the commit status, if asked for). Returns the comment's address."""
    verdict, record, suite = judgement.verdict, judgement.result.report, judgement.config.suite
    assert event.pr_number is not None
    # A skipped PR gets no comment; one judged on an earlier head gets it corrected.
    comment_url = _comment(out, lambda: publish_comment(
        client, event.pr_number or 0, suite, event.head_sha or "", verdict.kind, judgement.result.to_comment(),
        mode=inputs.comment_mode, only_update=verdict.kind == "skipped"))
    if inputs.commit_status and event.head_sha:
        try:
            client.create_status(event.head_sha, commit_state(verdict), f"retrieval-gate/{suite}",
                                 truncate_description(_headline(record)))
        except Exception as error:  # noqa: BLE001 - as above
            _print(out, annotation("warning", f"commit status not written: {_describe(error)}"))
    return comment_url


def _log_verdict(result: Result, out: TextIO) -> None:
    """The verdict in the job's log: its reasons, its headline and warnings as annotations."""
    verdict, record = result.verdict, result.report
    kind = "error" if verdict.exit_code else "notice"
    with stop_commands(stream=out):
        # Untrusted text (reasons quote data) is printed with workflow commands switched off.
        for reason in verdict.to_dict()["reasons"]:
            _print(out, f"{reason['code']}: {reason['message']}")
    _print(out, annotation(kind, _headline(record)[:1000], title=f"retrieval-gate {verdict.kind}"))
    assert not isinstance(record.warnings, Absent)  # judge_pull_request writes them, an empty list too
    for warning in record.warnings:
        _print(out, annotation("warning", warning[:1000], title="retrieval-gate"))


def _headline(record: Report) -> str:
    """The verdict's first line, which judge_pull_request's report always holds (``headlined``)."""
    assert record.verdict and isinstance(record.verdict.headline, str)
    return record.verdict.headline


def _current_labels_and_body(event: Event, client: GitHubClient | None,
                              out: TextIO) -> tuple[tuple[str, ...], str | None]:
    """The PR's labels and body now, not the event's snapshot (a reviewer's acceptance may have
    come after the push); the event's when GitHub cannot say (an outage, an odd answer: one
    warning line)."""
    if event.pr_number is not None and client is not None:
        try:
            pull = client.get_pull(event.pr_number)
        except GitHubError as error:
            _print(out, annotation("warning", f"the PR's current labels and body were not read from GitHub "
                                              f"({_describe(error)}); the event's are used", title="retrieval-gate"))
            return event.labels, event.body
        return pull.labels, pull.body
    return event.labels, event.body


def _fixed6(value: float | None) -> str:
    """An output's number: six decimals (never a negative zero), or empty where the report has none."""
    return "" if value is None else fixed(value, 6)


def _describe(error: BaseException) -> str:
    """One line about a publishing failure, without anything the token could be in."""
    if isinstance(error, GitHubError):
        return escape_data(str(error))[:300]
    return type(error).__name__


def _workspace_relative(env: Mapping[str, str], path: Path) -> str:
    """``path`` as later steps can open it: relative to the workspace (inside a Docker action the
    workspace is /github/workspace, which the steps after it do not have)."""
    workspace = Path(env.get("GITHUB_WORKSPACE", ".")).resolve()
    try:
        return path.resolve().relative_to(workspace).as_posix()
    except ValueError:
        return str(path)
