"""The sticky PR comment: one *current* comment per suite on a PR, found by a hidden marker
and by its author (:func:`publish_comment`; its docstring has the rules).
"""

from __future__ import annotations

import logging
import re
import urllib.parse
import uuid
from dataclasses import dataclass
from typing import Any

from gate.publishing.github.client import (
    DEFAULT_BOT_LOGIN,
    GitHubClient,
    GitHubError,
    GitHubNotFoundError,
    GitHubPermissionError,
    GitHubUncertainError,
    _backoff,
)
from gate.rendering.markdown_cut import COMMENT_LIMIT, truncate_markdown

log = logging.getLogger("gate.publishing.github.sticky_comment")


# --------------------------------------------------------------------------- sticky comment

_MARKER = re.compile(
    r"<!-- retrieval-gate:suite=(?P<suite>[^;\s<>]*);state=(?P<state>current|outdated);"
    r"head=(?P<head>[0-9A-Fa-f]*);verdict=(?P<verdict>[^;\s<>]*)(?:;run=(?P<run>[0-9a-f]{0,32}))? -->"
)
_SAFE = "_.~"  # plus letters, digits and '-' (quote's unreserved set); everything else is %XX


def _escape_field(value: str) -> str:
    # No '<', '>', '!', ';', '=', whitespace survive; and no '--' (which could start '-->').
    return urllib.parse.quote(str(value), safe=_SAFE).replace("--", "-%2D")


@dataclass(frozen=True)
class Marker:
    suite: str
    state: str  # current | outdated
    head: str
    verdict: str
    run: str = ""  # which run of the gate wrote it (finds a comment whose POST answer was lost)

    def render(self) -> str:
        return comment_marker(self.suite, self.state, self.head, self.verdict, self.run)


def comment_marker(suite: str, state: str, head_sha: str, verdict_kind: str, run: str = "") -> str:
    """``<!-- retrieval-gate:suite=...;state=...;head=...;verdict=...;run=... -->`` with suite and
    verdict percent-escaped (``;run=`` only when given)."""
    if state not in ("current", "outdated"):
        raise ValueError(f"marker state must be current or outdated, got {state!r}")
    if not re.fullmatch(r"[0-9A-Fa-f]*", head_sha or ""):
        raise ValueError(f"not a commit sha: {head_sha!r}")
    if not re.fullmatch(r"[0-9a-f]{0,32}", run or ""):
        raise ValueError(f"not a run id: {run!r}")
    return (
        f"<!-- retrieval-gate:suite={_escape_field(suite)};state={state};"
        f"head={(head_sha or '').lower()};verdict={_escape_field(verdict_kind)}{f';run={run}' if run else ''} -->"
    )


def parse_marker(body: str | None) -> Marker | None:
    """The marker at the very start of a comment body, or None (quoted markers deeper in a body do not count)."""
    match = _MARKER.match((body or "").lstrip())
    if not match:
        return None
    return Marker(
        suite=urllib.parse.unquote(match["suite"]),
        state=match["state"],
        head=match["head"].lower(),
        verdict=urllib.parse.unquote(match["verdict"]),
        run=match["run"] or "",
    )


@dataclass(frozen=True)
class CommentResult:
    """What :func:`publish_comment` did.

    ``action``: created | updated | replaced | skipped_stale | skipped_off | not_posted | forbidden.
    ``url``/``comment_id`` name the current comment (None when none was written).
    ``message`` explains skips and ``forbidden``; ``superseded`` and ``deleted``
    list the ids of comments re-marked outdated and of duplicates removed.
    """

    action: str
    url: str | None = None
    comment_id: int | None = None
    message: str = ""
    superseded: tuple[int, ...] = ()
    deleted: tuple[int, ...] = ()


def is_fork_pull(pull: dict[str, Any] | None) -> bool | None:
    """True when the PR's head lives in another repository (head.repo null or a different full_name);
    None if unknown."""
    if not isinstance(pull, dict):
        return None
    head = pull.get("head") or {}
    base = pull.get("base") or {}
    head_repo = head.get("repo")
    base_repo = base.get("repo") or {}
    if head_repo is None:
        return True
    if not base_repo.get("full_name") or not head_repo.get("full_name"):
        return None
    return str(head_repo["full_name"]).lower() != str(base_repo["full_name"]).lower()


def forbidden_help(pr_number: int, fork: bool | None, error: GitHubError | None = None) -> str:
    """How to let the gate comment, for a 403 on a comment write."""
    why = f" ({error.status} {error.api_message})" if error is not None and error.api_message else ""
    head = f"retrieval-gate could not comment on PR #{pr_number}: the token may not write comments{why}."
    fork_help = (
        " This PR comes from a fork, and GitHub gives pull_request workflows from forks a read-only token."
        " Keep comment-mode: off in the pull_request workflow and post the comment from a second workflow"
        " triggered by workflow_run (see examples/workflows/retrieval-gate-comment.yml), which runs with"
        " the base repository's token and `permissions: pull-requests: write`."
    )
    same_help = (
        " Grant the job `permissions: pull-requests: write` (or `issues: write`) in the workflow;"
        " for pull requests from forks use the workflow_run pattern"
        " (examples/workflows/retrieval-gate-comment.yml). The verdict itself is unaffected."
    )
    if fork is True:
        return head + fork_help + " The verdict itself is unaffected."
    return head + same_help


def _superseded_body(old_body: str, old: Marker, new_url: str | None) -> str:
    rest = old_body.lstrip()
    match = _MARKER.match(rest)
    rest = rest[match.end():].lstrip("\n") if match else rest
    where = f" ({new_url})" if new_url else ""
    note = f"> **Superseded by a newer result**{where}; this one is kept for history."
    marker = comment_marker(old.suite, "outdated", old.head, old.verdict, old.run)
    body = f"{marker}\n{note}\n\n{rest}"
    if len(body) > COMMENT_LIMIT:
        body, _ = truncate_markdown(body, COMMENT_LIMIT, "> _(cut to fit GitHub's comment limit)_")
    return body


def _compose(marker: str, body: str) -> str:
    text = f"{marker}\n{body}"
    if len(text) <= COMMENT_LIMIT:
        return text
    note = (
        f"> **Note:** this comment was cut to fit GitHub's {COMMENT_LIMIT:,}-character limit; "
        "the full report is in the job summary and the report artifact."
    )
    fitted, _ = truncate_markdown(body, COMMENT_LIMIT - len(marker) - 1, note)
    return f"{marker}\n{fitted}"


def publish_comment(
    client: GitHubClient,
    pr_number: int,
    suite: str,
    head_sha: str,
    verdict_kind: str,
    body: str,
    *,
    mode: str = "update",
    bot_login: str = DEFAULT_BOT_LOGIN,
    only_update: bool = False,
) -> CommentResult:
    """Post or refresh the gate's comment for ``suite`` on PR ``pr_number``.

    ``only_update``: refresh a current comment if there is one, never post a new one (a PR the
    gate skips gets no comment; one whose earlier head was judged gets that comment corrected,
    so an old "fail" does not stand over a PR that no longer touches retrieval).

    Our comments are those whose body starts with the marker of ``suite`` and whose author is
    the token's identity: ``bot_login`` (``github-actions[bot]`` for GITHUB_TOKEN), the login
    ``GET /user`` names (a personal access token), or the author of a comment this run wrote
    (an App's ``<slug>[bot]``). All pages are read. Steps:

    * ``mode="off"``: nothing (``skipped_off``);
    * the PR's head is read first, and again right before every write; when it is no longer
      ``head_sha`` a newer push exists and nothing is written (``skipped_stale``): an older
      head never overwrites a newer head's comment;
    * ``mode="update"``: no current comment -> create (``created``); the newest current
      comment has the same verdict kind -> edit it in place (``updated``; a comment deleted
      meanwhile, PATCH 404, is created anew); the verdict flipped -> post a new comment (edits
      do not notify anyone) and re-mark the old one outdated with a "Superseded" note
      (``replaced``);
    * ``mode="new"``: always post a new comment and re-mark every current one outdated;
    * a POST whose answer was lost (5xx, timeout) is not repeated blindly: the comments are
      listed again and a comment carrying this run's id is taken as the one created;
    * afterwards the comments are listed once more: of several current comments of the suite
      (two runs raced) the newest is kept and the others are deleted (same head) or marked
      outdated, so concurrent runs converge on exactly one; when the PR moved on meanwhile,
      this run's comment is marked outdated;
    * a 403 on any call -> ``forbidden`` with a message explaining how to enable comments.
      Other :class:`GitHubError` propagate.
    """
    if mode == "off":
        return CommentResult("skipped_off", message="comment-mode is off")
    if mode not in ("update", "new"):
        raise ValueError(f"comment mode must be update, new or off, got {mode!r}")
    head_sha = (head_sha or "").lower()
    run = uuid.uuid4().hex[:16]
    logins = {bot_login.lower()}
    pull: dict[str, Any] | None = None

    def stale() -> CommentResult | None:
        nonlocal pull
        pull = client.get_pull(pr_number)
        current_head = str(((pull or {}).get("head") or {}).get("sha") or "").lower()
        if current_head == head_sha:
            return None
        return CommentResult("skipped_stale", message=(
            f"PR #{pr_number} head is now {current_head[:12] or '?'}, not {head_sha[:12]}: "
            "a newer push will publish its own result, so this one is not posted"))

    def ours() -> list[tuple[dict[str, Any], Marker]]:
        found = []
        for comment in client.list_issue_comments(pr_number):
            author = str(((comment.get("user") or {}).get("login")) or "").lower()
            marker = parse_marker(comment.get("body"))
            if marker is None or marker.suite != suite:
                continue
            if author in logins or (marker.run == run and marker.run):
                found.append((comment, marker))
        return sorted(found, key=lambda cm: int(cm[0].get("id") or 0))

    def learn(written: dict[str, Any]) -> None:
        author = str(((written.get("user") or {}).get("login")) or "").lower()
        if author:
            logins.add(author)

    def create(text: str) -> dict[str, Any]:
        for attempt in range(1, 4):
            try:
                written = client.create_comment(pr_number, text)
                learn(written)
                return written
            except GitHubUncertainError:
                mine = [c for c, m in ours() if m.run == run]
                if mine:
                    learn(mine[-1])
                    return mine[-1]
                if attempt == 3:
                    raise
                client._wait(_backoff(attempt), "a comment POST whose answer was lost", "POST", "comments")
        raise AssertionError("unreachable")

    try:
        skip = stale()
        if skip is not None:
            return skip
        login = client.authenticated_login(default=bot_login)
        logins.add(login.lower())
        current = [(c, m) for c, m in ours() if m.state == "current"]
        if only_update and not current:
            return CommentResult("not_posted", message="no comment to refresh, and this result does not need one")
        text = _compose(comment_marker(suite, "current", head_sha, verdict_kind, run), body)
        skip = stale()
        if skip is not None:
            return skip
        action = ""
        superseded: list[int] = []
        if _edits_in_place(current, mode, verdict_kind, only_update):
            # only_update (a skipped PR) edits in place whatever the old verdict: nobody needs a
            # notification that the gate has nothing to say.
            keep, _ = current[-1]
            try:
                written = client.update_comment(int(keep["id"]), text)
                learn(written)
                action = "updated"
            except GitHubNotFoundError:  # deleted meanwhile
                written = create(text)
                action = "created"
        else:
            # Post first, then retire the old ones: a failure leaves the old result current.
            written = create(text)
            new_url = written.get("html_url")
            superseded = _retire(client, current[-1:] if mode == "update" else current, new_url)
            action = "replaced" if current else "created"
        written_id = int(written["id"])
        deleted = _settle(client, pr_number, written_id, head_sha, ours, stale)
        return CommentResult(action, written.get("html_url"), written_id, superseded=tuple(superseded),
                             deleted=deleted)
    except GitHubPermissionError as exc:
        message = forbidden_help(pr_number, is_fork_pull(pull), exc)
        log.warning("%s", message)
        return CommentResult("forbidden", message=message)


def _edits_in_place(current: list[tuple[dict[str, Any], Marker]], mode: str, verdict_kind: str,
                    only_update: bool) -> bool:
    """Whether the newest current comment is edited rather than replaced by a new one: the same
    verdict in ``update`` mode, or any verdict when only refreshing."""
    return bool(current) and ((mode == "update" and current[-1][1].verdict == verdict_kind) or only_update)


def _retire(client: GitHubClient, retire: list[tuple[dict[str, Any], Marker]], new_url: str | None) -> list[int]:
    """Mark the ``retire`` comments outdated, pointing at the new one; the ids of those marked (a
    comment deleted meanwhile is left out)."""
    superseded: list[int] = []
    for old, old_marker in retire:
        try:
            client.update_comment(int(old["id"]), _superseded_body(str(old.get("body") or ""), old_marker, new_url))
            superseded.append(int(old["id"]))
        except GitHubNotFoundError:
            pass
    return superseded


def _settle(client: GitHubClient, pr_number: int, written_id: int, head_sha: str, ours, stale) -> tuple[int, ...]:
    """After writing: one current comment per suite. Of several (concurrent runs, or a stale
    duplicate), the newest stays; the others are deleted when they are of the same head, else
    marked outdated. Each run applies the same rule, so racing runs agree on the survivor."""
    deleted: list[int] = []
    current = [(c, m) for c, m in ours() if m.state == "current"]
    if stale() is not None:
        # The PR moved on while this run wrote: its comment must not stand as the current one.
        for comment, marker in current:
            if int(comment["id"]) == written_id:
                client.update_comment(written_id, _superseded_body(str(comment.get("body") or ""), marker, None))
        return ()
    if len(current) <= 1:
        return ()
    newest, newest_marker = current[-1]
    for comment, marker in current[:-1]:
        if marker.head == newest_marker.head:
            if client.delete_comment(int(comment["id"])):
                deleted.append(int(comment["id"]))
        else:
            try:
                client.update_comment(int(comment["id"]), _superseded_body(str(comment.get("body") or ""), marker,
                                                                           newest.get("html_url")))
            except GitHubNotFoundError:
                pass
    return tuple(deleted)
