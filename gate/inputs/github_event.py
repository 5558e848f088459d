"""The event a GitHub workflow runs on: its payload read strictly (GITHUB_EVENT_PATH; nothing in
it is trusted), and the base commit a change is judged against (the merge commit's first parent,
a merge group's base_sha, or a PR's base.sha fetched by its sha)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate.common.errors import InputError
from gate.common.limits import MAX_RECORD_FILE_BYTES
from gate.inputs import git
from gate.inputs.readers.fields import parse_json_document
from gate.inputs.readers.textlines import read_text_file


@dataclass(frozen=True)
class Event:
    name: str
    pr_number: int | None
    head_sha: str | None
    base_sha: str | None
    labels: tuple[str, ...]
    body: str | None
    fork: bool | None
    repository: str | None


_SHA = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


class _Payload:
    """Typed reads from the event payload: a value of the wrong type is one line naming the
    file and the field, exit 2 (the payload is GitHub's, but a workflow can hand the gate any
    file as GITHUB_EVENT_PATH, and nothing in it is trusted)."""

    def __init__(self, path: str, data: Any):
        self.path = path
        self.data = data

    def fail(self, field: str, problem: str) -> InputError:
        return InputError(self.path, None, f"event payload field '{field}' {problem}")

    def get(self, node: Any, field: str, kinds: tuple[type, ...], *, required: bool = False) -> Any:
        value = node.get(field.rsplit(".", 1)[-1]) if isinstance(node, dict) else None
        if value is None:
            if required:
                raise self.fail(field, "is missing")
            return None
        if isinstance(value, bool) or not isinstance(value, kinds):
            names = " or ".join(k.__name__.replace("dict", "an object").replace("str", "a string")
                                .replace("int", "an integer").replace("list", "a list") for k in kinds)
            raise self.fail(field, f"must be {names}, got {type(value).__name__}")
        return value

    def sha(self, node: Any, field: str, *, required: bool = False) -> str | None:
        value = self.get(node, field, (str,), required=required)
        if value is not None and not _SHA.fullmatch(value):
            raise self.fail(field, f"is not a commit id: {value[:80]!r}")
        return value


def read_event(env: Mapping[str, str]) -> Event:
    name = env.get("GITHUB_EVENT_NAME", "")
    path = env.get("GITHUB_EVENT_PATH")
    data: Any = {}
    needs_payload = name.startswith("pull_request") or name == "merge_group"
    if path and not Path(path).is_file():
        # Read as "no payload", a PR checked out at its head would be judged against HEAD^1,
        # its own previous commit: its own yardstick.
        raise InputError(path, None, "the event payload (GITHUB_EVENT_PATH) is not a file"
                         + (" that exists" if not Path(path).exists() else ""))
    if not path and needs_payload:
        raise InputError("GITHUB_EVENT_PATH", None, f"is not set: a {name} event cannot be judged without its payload")
    if path:
        data = parse_json_document(path, read_text_file(Path(path), "an event payload", limit=MAX_RECORD_FILE_BYTES))
        if not isinstance(data, dict):
            raise InputError(path, None, f"the event payload must be a JSON object, got {type(data).__name__}")
    payload = _Payload(path or "GITHUB_EVENT_PATH", data)
    repository = payload.get(payload.get(data, "repository", (dict,)), "repository.full_name", (str,))
    pr = payload.get(data, "pull_request", (dict,))
    if pr is not None:
        head = payload.get(pr, "pull_request.head", (dict,), required=True)
        base = payload.get(pr, "pull_request.base", (dict,))
        number = payload.get(pr, "pull_request.number", (int,), required=True)
        if not 0 < number < 1 << 31:
            raise payload.fail("pull_request.number", f"is not a pull request number: {number}")
        head_repo = payload.get(head, "pull_request.head.repo", (dict,))
        base_repo = payload.get(base, "pull_request.base.repo", (dict,)) or {}
        # A fork: no head repository (deleted), or another full name (not head.repo.fork).
        fork = head_repo is None or head_repo.get("full_name") != base_repo.get("full_name")
        labels = []
        for label in payload.get(pr, "pull_request.labels", (list,)) or []:
            labels.append(payload.get(label, "pull_request.labels[].name", (str,)) or "")
        return Event(name, number, payload.sha(head, "pull_request.head.sha", required=True),
                     payload.sha(base, "pull_request.base.sha"), tuple(labels),
                     payload.get(pr, "pull_request.body", (str,)), fork, repository)
    if name.startswith("pull_request"):
        # Without its pull_request object a PR cannot be judged (its head and base are in it).
        raise payload.fail("pull_request", "is missing: a pull_request event's payload names the PR")
    group_ = payload.get(data, "merge_group", (dict,))
    if name == "merge_group" and group_ is not None:
        return Event(name, None, payload.sha(group_, "merge_group.head_sha", required=True),
                     payload.sha(group_, "merge_group.base_sha"), (), None, None, repository)
    return Event(name, None, env.get("GITHUB_SHA"), None, (), None, None, env.get("GITHUB_REPOSITORY"))


#: The conclusions GitHub gives a completed workflow run (``workflow_run.conclusion``).
RUN_CONCLUSIONS = ("success", "failure", "cancelled", "timed_out", "action_required", "neutral", "skipped",
                   "stale", "startup_failure")


@dataclass(frozen=True)
class WorkflowRun:
    """The run a ``workflow_run`` event is about (what started the comment job): its head commit
    and how it ended (None while it has not)."""
    head_sha: str | None
    conclusion: str | None


def read_workflow_run(env: Mapping[str, str]) -> WorkflowRun | None:
    """The triggering run of a ``workflow_run`` event (GITHUB_EVENT_NAME, its payload at
    GITHUB_EVENT_PATH), or None for any other event. The runner writes that payload, but a
    workflow can point GITHUB_EVENT_PATH at any file: read as strictly as :func:`read_event`."""
    if env.get("GITHUB_EVENT_NAME") != "workflow_run":
        return None
    path = env.get("GITHUB_EVENT_PATH")
    if not path:
        raise InputError("GITHUB_EVENT_PATH", None, "is not set: a workflow_run event's payload names the run")
    if not Path(path).is_file():
        raise InputError(path, None, "the event payload (GITHUB_EVENT_PATH) is not a file")
    data = parse_json_document(path, read_text_file(Path(path), "an event payload", limit=MAX_RECORD_FILE_BYTES))
    if not isinstance(data, dict):
        raise InputError(path, None, f"the event payload must be a JSON object, got {type(data).__name__}")
    payload = _Payload(path, data)
    run = payload.get(data, "workflow_run", (dict,), required=True)
    conclusion = payload.get(run, "workflow_run.conclusion", (str,))
    if conclusion is not None and conclusion not in RUN_CONCLUSIONS:
        raise payload.fail("workflow_run.conclusion", f"is {conclusion[:40]!r}, not a conclusion GitHub gives "
                                                      f"({', '.join(RUN_CONCLUSIONS)})")
    return WorkflowRun(payload.sha(run, "workflow_run.head_sha"), conclusion)


def base_commit(workspace: Path, event: Event, warnings: list[str], token: str | None = None,
                 remote_url: str | None = None) -> tuple[str | None, str | None]:
    """The commit the change is judged against, and why there is none when a PR or a merge group
    cannot be judged: without its base, the yardstick would be the change's own files. A base the
    checkout lacks (fetch-depth 1; a merge group several commits deep) is fetched by its sha."""

    def present(sha: str) -> str | None:
        found = git.rev_parse(workspace, sha)
        # From the repository's own address with the token; then from origin without it (a
        # commit fetched by its sha is what its sha says, wherever it comes from).
        attempts = ([(remote_url, token)] if remote_url else []) + [(None, None)]
        for url, credential in attempts:
            if found is not None:
                break
            try:
                git.fetch(workspace, sha, token=credential, url=url, depth=1)
            except (OSError, subprocess.TimeoutExpired):
                continue
            found = git.rev_parse(workspace, sha)
        return found

    if event.name == "merge_group":
        # The queue's commit may hold several commits of the PR (rebased): HEAD^1 is only the
        # last one's parent. merge_group.base_sha is what the group is judged against.
        if not event.base_sha:
            return None, "the merge_group event has no base_sha: the group cannot be judged against its base"
        found = present(event.base_sha)
        if found is None:
            return None, (f"merge_group.base_sha {event.base_sha[:12]} is not in the checkout and could not be "
                          "fetched: check out merge groups with fetch-depth: 0 (the group may hold several "
                          "commits; HEAD^1 would judge only the last)")
        return found, None
    base = git.rev_parse(workspace, "HEAD^1")
    pull_request = event.name.startswith("pull_request")
    if pull_request and base is not None and event.head_sha:
        # HEAD^1 is the base only on GitHub's merge commit, whose second parent is the PR's
        # head. A checkout of the head itself (ref: head.sha) has the PR's own previous commit
        # there: judged against it, the PR would set its own yardstick.
        second = git.rev_parse(workspace, "HEAD^2")
        head = git.rev_parse(workspace, "HEAD")
        if second != event.head_sha.lower():
            if event.base_sha:
                found = present(event.base_sha)
                if found is not None:
                    why = "the PR's head itself" if head == event.head_sha.lower() else "not GitHub's merge commit"
                    warnings.append(f"the checkout is {why}: judged against pull_request.base.sha "
                                    f"({event.base_sha[:12]}), not HEAD^1")
                    return found, None
            return None, ("the checkout is not GitHub's merge commit of this PR and pull_request.base.sha is not "
                          "available: check out the default ref (the merge commit) with fetch-depth: 2")
    if base is None:
        if event.base_sha:
            found = present(event.base_sha)
            if found is not None:
                return found, None
        if pull_request:
            return None, (f"the base commit ({(event.base_sha or 'HEAD^1')[:12]}) is not in the checkout and could "
                          "not be fetched: check out with fetch-depth: 2, so the PR is held to its base's yardstick")
        return None, None
    if event.base_sha and base != event.base_sha and pull_request:
        warnings.append(_base_moved(workspace, base, event.base_sha))
    return base, None


def _base_moved(workspace: Path, merge_base: str, event_base: str) -> str:
    """Why HEAD^1 (the base GitHub merged the PR onto) is not the event's base.sha, which way
    round: the event older (the base branch moved after the push, and the merge commit, made
    later, has the newer base) or the merge commit older (the branch moved after the merge
    commit was made: a rerun of an old job). Ancestry says which; without it, neither is claimed."""
    shown = f"HEAD^1 ({merge_base[:12]}) is not pull_request.base.sha ({event_base[:12]})"
    if _is_ancestor(workspace, event_base, merge_base):
        return (f"{shown}: the base branch moved after the event was made (HEAD^1, the base of GitHub's newer "
                "merge commit, descends from the event's base); HEAD^1 is used")
    if _is_ancestor(workspace, merge_base, event_base):
        return (f"{shown}: the base branch moved since the merge commit was made (the event's base descends "
                "from HEAD^1: the checkout is older than the event); HEAD^1 is used")
    return (f"{shown}: the base branch changed (neither descends from the other, or the checkout lacks one); "
            "HEAD^1 is used")


def _is_ancestor(workspace: Path, older: str, newer: str) -> bool:
    """``git merge-base --is-ancestor``: False when git cannot say (a commit missing from a shallow clone)."""
    try:
        return git.run(workspace, "merge-base", "--is-ancestor", older, newer, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def event_base(env: Mapping[str, str], workspace: Path) -> tuple[str | None, str]:
    """The base the Action would judge this job's change against (its event and checkout), for
    the CLI's ``plan`` inside a workflow: (sha, how it was found), or (None, why) for an event
    without one (a push of a root commit). A pull request or merge group whose base cannot be
    found is an :class:`InputError`: runs planned against another base would all be wasted.
    Read-only except for fetching a missing base commit without credentials."""
    event = read_event(env)
    notes: list[str] = []
    base, problem = base_commit(workspace, event, notes)
    judged = event.name.startswith("pull_request") or event.name == "merge_group"
    if base is None:
        if judged:
            raise InputError(env.get("GITHUB_EVENT_PATH") or "GITHUB_EVENT_PATH", None,
                             f"no base to plan against: {problem} (or pass --base)")
        return None, problem or f"a {event.name or 'local'} event without a parent commit"
    if event.name == "merge_group":
        how = "merge_group.base_sha"
    elif any("pull_request.base.sha" in note for note in notes):
        how = "pull_request.base.sha"
    elif event.name.startswith("pull_request"):
        how = "HEAD^1, the base of GitHub's merge commit"
    else:
        how = f"HEAD^1, the commit before this {event.name or 'local'} one"
    return base, "; ".join([how, *[n for n in notes if "pull_request.base.sha" not in n]])
