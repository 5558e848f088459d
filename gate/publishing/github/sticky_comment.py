"""The sticky PR comment: one *current* comment per suite on a PR, found by a hidden marker
and by its author (:func:`publish_comment`; its docstring has the rules), and one per set of
suites for their combined comment (:func:`publish_suites_comment`), kept by the same rules.
"""

from __future__ import annotations

import hashlib
import logging
import re
import urllib.parse
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from gate.publishing.github.answers import IssueComment, PullRequestState
from gate.publishing.github.client import (
    DEFAULT_BOT_LOGIN,
    GitHubClient,
    GitHubError,
    GitHubNotFoundError,
    GitHubPermissionError,
    GitHubUncertainError,
    GitHubWaitCapError,
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

    ``action``: created | updated | replaced | retired | skipped_stale | skipped_off | not_posted |
    forbidden. ``url``/``comment_id`` name the current comment (None when none was written).
    ``message`` explains skips and ``forbidden``; ``superseded`` and ``deleted`` list the ids of
    comments re-marked outdated and of comments removed.
    """

    action: str
    url: str | None = None
    comment_id: int | None = None
    message: str = ""
    superseded: tuple[int, ...] = ()
    deleted: tuple[int, ...] = ()


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


def _superseded_body(old_body: str, old: Marker, new_url: str | None, note: str | None = None) -> str:
    """``old_body`` re-marked outdated, under ``note`` (default: a pointer to the newer result)."""
    rest = old_body.lstrip()
    match = _MARKER.match(rest)
    rest = rest[match.end():].lstrip("\n") if match else rest
    where = f" ({new_url})" if new_url else ""
    note = note or f"> **Superseded by a newer result**{where}; this one is kept for history."
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
    (an App's ``<slug>[bot]``). All pages are read.

    GitHub has no conditional write: a PATCH sent before another run's lands after it when the
    network delays it. So a comment's text is only ever written by runs of the head its marker
    names, and which head is newest is what ``GET /pulls/{n}`` says the PR's head is now, never a
    clock. The steps:

    * ``mode="off"``: nothing (``skipped_off``);
    * the PR's head is read first, and again right before every write; when it is no longer
      ``head_sha`` a newer push exists and nothing is written (``skipped_stale``);
    * ``mode="update"``: a current comment of this head with the same verdict is edited in
      place (``updated``; one deleted meanwhile, PATCH 404, is posted anew). Otherwise a new
      comment is posted and the current ones are retired: an older head's comment with the same
      verdict is deleted (the conversation then reads as an edit would), a flipped verdict's is
      marked outdated with a "Superseded" note (``replaced``; ``created`` when there was none);
    * ``mode="new"``: always post a new comment and mark every current one outdated;
    * ``only_update`` with only an older head's comment: that comment is marked outdated with a
      note that this head is skipped (``retired``), nothing is posted;
    * a POST whose answer was lost (5xx, timeout) is not repeated blindly: the marker carries
      this run's id, and the comments are listed again, with backoff (GitHub's list can lag
      its writes by seconds), before it is posted once more;
    * afterwards the list is read until it shows the comment written (or the lag allowance
      is spent), and the PR's head is read: of the current comments, the newest of the PR's
      current head stays, other comments of that head are deleted, other heads' are retired as
      above. When the PR moved on meanwhile, this run's own comment is marked outdated and the
      newer head's run settles the rest. Every run applies the same rule, so racing runs
      converge on exactly one current comment, the newest head's;
    * a 403 on any call -> ``forbidden`` with a message explaining how to enable comments.
      Other :class:`GitHubError` propagate.
    """
    if mode == "off":
        return CommentResult("skipped_off", message="comment-mode is off")
    if mode not in ("update", "new"):
        raise ValueError(f"comment mode must be update, new or off, got {mode!r}")
    publisher = _Publisher(client, pr_number, suite, (head_sha or "").lower(), verdict_kind, mode, bot_login)
    try:
        return publisher.publish(body, only_update)
    except GitHubPermissionError as exc:
        message = forbidden_help(pr_number, publisher.pull.from_fork if publisher.pull else None, exc)
        log.warning("%s", message)
        return CommentResult("forbidden", message=message)


#: A set of suites' combined comment is kept as one suite's is, under a name no suite can have:
#: this prefix, then the suites file as the workflow names it ('|' is refused in a suite's name,
#: gate.inputs.config.suite_name, so the set's comment and a suite's own never take each other's place).
SUITE_SET_PREFIX = "suites|"
_SET_NAME_LIMIT = 200  # characters of the suites file's path kept in the marker; a longer one is hashed


def suite_set_name(suites_config: str) -> str:
    """The marker's name for the combined comment of the suites ``suites_config`` finds: the
    suites file's path, or the glob of configs, relative to the repository's root, as the
    workflow gives it (``./.retrieval-gate.yml`` and ``.retrieval-gate.yml`` are one set)."""
    shown = re.sub(r"/+", "/", str(suites_config).replace("\\", "/"))
    while shown.startswith("./"):
        shown = shown[2:]
    if not shown.strip():
        raise ValueError("the suites file's path is empty")
    if len(shown) > _SET_NAME_LIMIT:
        shown = "sha256:" + hashlib.sha256(shown.encode("utf-8")).hexdigest()
    return SUITE_SET_PREFIX + shown


def publish_suites_comment(
    client: GitHubClient,
    pr_number: int,
    head_sha: str,
    suites_config: str,
    worst_kind: str,
    body: str,
    *,
    mode: str = "update",
    bot_login: str = DEFAULT_BOT_LOGIN,
    only_update: bool = False,
) -> CommentResult:
    """Post or refresh the combined comment of the suites ``suites_config`` names (the body from
    :func:`gate.rendering.suites.render_suites_comment`), its marker carrying the set's name
    (:func:`suite_set_name`) and the worst suite's verdict ``worst_kind``.

    Every rule of :func:`publish_comment` holds for the set as for one suite: the newest head's
    comment wins, duplicates are deleted, a new head's result with another worst verdict marks
    the older comment outdated, one with the same worst verdict replaces it. ``only_update``
    when every suite was skipped: no comment is posted, an earlier head's is marked outdated."""
    return publish_comment(client, pr_number, suite_set_name(suites_config), head_sha, worst_kind, body, mode=mode,
                           bot_login=bot_login, only_update=only_update)


@dataclass(frozen=True)
class _Ours:
    comment: IssueComment
    marker: Marker


# Waits (seconds) between listings while GitHub's list has not caught up with a write: a lost
# POST's comment, or the one just written, can take a few seconds to be listed.
LIST_LAG_WAITS = (0.5, 1.0, 2.0, 4.0, 8.0)


class _Stale(Exception):
    def __init__(self, result: CommentResult):
        self.result = result


@dataclass
class _Publisher:
    """One run's publishing: its identity (the run id in its markers, the logins it writes as)
    and the steps of :func:`publish_comment`."""

    client: GitHubClient
    pr_number: int
    suite: str
    head_sha: str
    verdict_kind: str
    mode: str
    bot_login: str
    run: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    logins: set[str] = field(default_factory=set)
    written_as: str | None = None  # the login this run's writes came back with: who it surely is
    pull: PullRequestState | None = None

    def __post_init__(self) -> None:
        self.logins.add(self.bot_login.lower())

    # ---------------------------------------------------------------- reading

    def pr_head(self) -> str:
        self.pull = self.client.get_pull(self.pr_number)
        return self.pull.head_sha

    def check_not_stale(self) -> None:
        head = self.pr_head()
        if head != self.head_sha:
            raise _Stale(CommentResult("skipped_stale", message=(
                f"PR #{self.pr_number} head is now {head[:12] or '?'}, not {self.head_sha[:12]}: "
                "a newer push will publish its own result, so this one is not posted")))

    def ours(self) -> list[_Ours]:
        found = []
        for comment in self.client.list_issue_comments(self.pr_number):
            marker = parse_marker(comment.body)
            if marker is None or marker.suite != self.suite:
                continue
            if comment.author in self.logins or self.is_lost_write(comment, marker):
                found.append(_Ours(comment, marker))
        return sorted(found, key=lambda o: o.comment.id)

    def is_lost_write(self, comment: IssueComment, marker: Marker) -> bool:
        """A comment this run wrote under a login it did not know (an App's ``<slug>[bot]``, its POST's
        answer lost): its run id, by a bot account. The marker is visible to anyone in the comment's
        source, so a person's copy of it is never this run's; and once a write told the run its
        login, only that login's comments are."""
        return bool(marker.run) and marker.run == self.run and self.written_as is None and comment.by_bot

    def listed_until(self, seen: Callable[[list[_Ours]], bool], *, required: bool) -> list[_Ours]:
        """The list, read again with backoff until ``seen`` holds of it (GitHub's list lags its
        writes). ``required``: the budget running out raises; else the last list is returned."""
        listed = self.ours()
        for seconds in LIST_LAG_WAITS:
            if seen(listed):
                break
            try:
                self.client.pause(seconds, "GitHub's comment list has not caught up with a write yet")
            except GitHubWaitCapError:
                if required:
                    raise
                break
            listed = self.ours()
        return listed

    # ---------------------------------------------------------------- writing

    def learn(self, written: IssueComment) -> IssueComment:
        if written.author:
            self.logins.add(written.author)
            self.written_as = written.author
        return written

    def create(self, text: str) -> IssueComment:
        """POST ``text``; after a lost answer, look for this run's comment (the list lagging) before
        posting once more. Both copies, should both exist, are settled afterwards."""
        try:
            return self.learn(self.client.create_comment(self.pr_number, text))
        except GitHubUncertainError:
            def mine(listed: list[_Ours]) -> bool:
                return any(o.marker.run == self.run for o in listed)

            listed = self.listed_until(mine, required=True)
            if mine(listed):
                return self.learn([o for o in listed if o.marker.run == self.run][-1].comment)
        self.check_not_stale()
        return self.learn(self.client.create_comment(self.pr_number, text))

    def retire(self, old: _Ours, keep: Marker, new_url: str | None) -> str | None:
        """Take ``old`` out of the current ones now that ``keep`` stands: deleted when it says
        what ``keep`` says (update mode, same verdict), else marked outdated. Returns "deleted",
        "superseded", or None when it was gone already."""
        if self.mode == "update" and old.marker.verdict == keep.verdict:
            return "deleted" if self.client.delete_comment(old.comment.id) else None
        try:
            self.client.update_comment(old.comment.id, _superseded_body(old.comment.body, old.marker, new_url))
        except GitHubNotFoundError:
            return None
        return "superseded"

    # ---------------------------------------------------------------- the steps

    def publish(self, body: str, only_update: bool) -> CommentResult:
        try:
            self.check_not_stale()
            self.logins.add(self.client.authenticated_login(default=self.bot_login).lower())
            current = [o for o in self.ours() if o.marker.state == "current"]
            if only_update and not current:
                return CommentResult("not_posted", message="no comment to refresh, and this result does not need one")
            marker = Marker(self.suite, "current", self.head_sha, self.verdict_kind, self.run)
            text = _compose(marker.render(), body)
            self.check_not_stale()
            same_head = [o for o in current if o.marker.head == self.head_sha]
            if self.mode == "update" and same_head and (same_head[-1].marker.verdict == self.verdict_kind
                                                        or only_update):
                return self.edit_in_place(same_head[-1], text, only_update)
            if only_update:
                return self.retire_for_skipped(current)
            return self.replace(current, marker, text)
        except _Stale as stale:
            return stale.result

    def edit_in_place(self, mine: _Ours, text: str, only_update: bool) -> CommentResult:
        """A rerun of this head: edit its comment in place (an edit notifies nobody)."""
        try:
            written = self.learn(self.client.update_comment(mine.comment.id, text))
            action = "updated"
        except GitHubNotFoundError:  # deleted meanwhile
            if only_update:
                return CommentResult("not_posted", message="the comment to refresh was deleted meanwhile")
            self.check_not_stale()
            written, action = self.create(text), "created"
        return self.settle(written, action, ())

    def replace(self, current: list[_Ours], marker: Marker, text: str) -> CommentResult:
        """A new head's result: posted first, then the old ones retired (a failure between the two
        leaves the old result current, never none)."""
        written = self.create(text)
        outcomes = []
        newest_of: dict[tuple[str, str], int] = {(o.marker.head, o.marker.verdict): o.comment.id for o in current}
        for old in current:
            if old.comment.id == written.id:
                continue
            if newest_of[(old.marker.head, old.marker.verdict)] != old.comment.id:  # a duplicate: not history
                outcomes.append((old.comment.id, "deleted" if self.client.delete_comment(old.comment.id) else None))
            else:
                outcomes.append((old.comment.id, self.retire(old, marker, written.html_url)))
        return self.settle(written, "replaced" if current else "created",
                           tuple(i for i, done in outcomes if done == "superseded"),
                           tuple(i for i, done in outcomes if done == "deleted"))

    def retire_for_skipped(self, current: list[_Ours]) -> CommentResult:
        """A skipped head with only older heads' comments: they stop standing, and nothing is
        posted (the job's status is the check; nobody needs a notification)."""
        note = (f"> **No longer applies**: the PR's head {self.head_sha[:12]} was skipped (it touches nothing "
                "the gate watches); this result is kept for history.")
        superseded = []
        for old in current:
            try:
                self.client.update_comment(old.comment.id, _superseded_body(old.comment.body, old.marker, None, note))
                superseded.append(old.comment.id)
            except GitHubNotFoundError:
                pass
        return CommentResult("retired", message="the comment of an earlier head was marked outdated",
                             superseded=tuple(superseded))

    def settle(self, written: IssueComment, action: str, superseded: tuple[int, ...],
               deleted: tuple[int, ...] = ()) -> CommentResult:
        """After writing: exactly one current comment, the newest of the PR's current head."""
        listed = self.listed_until(lambda found: any(o.comment.id == written.id for o in found), required=False)
        head = self.pr_head()
        current = [o for o in listed if o.marker.state == "current"]
        if head != self.head_sha:
            # The PR moved on while this run wrote: its comment must not stand. The newer head's
            # run posts its own and settles the rest.
            marker = parse_marker(written.body)
            if marker is not None and marker.state == "current":
                try:
                    self.client.update_comment(written.id, _superseded_body(written.body, marker, None))
                except GitHubNotFoundError:
                    pass
            return CommentResult("skipped_stale", message=(
                f"PR #{self.pr_number} moved on to {head[:12]} while this run wrote its comment: marked outdated"))
        of_head = [o for o in current if o.marker.head == head]
        if not of_head:  # not listed yet: what this run wrote is the newest head's
            return CommentResult(action, written.html_url, written.id, superseded=superseded, deleted=deleted)
        keep = of_head[-1]
        more_superseded, more_deleted = list(superseded), list(deleted)
        for other in current:
            if other.comment.id == keep.comment.id:
                continue
            if other.marker.head == head:  # a duplicate of this head (two runs, or a lost POST's twin)
                if self.client.delete_comment(other.comment.id):
                    more_deleted.append(other.comment.id)
                continue
            done = self.retire(other, keep.marker, keep.comment.html_url)
            if done == "deleted":
                more_deleted.append(other.comment.id)
            elif done == "superseded":
                more_superseded.append(other.comment.id)
        return CommentResult(action, keep.comment.html_url, keep.comment.id,
                             superseded=tuple(dict.fromkeys(more_superseded)),
                             deleted=tuple(dict.fromkeys(more_deleted)))
