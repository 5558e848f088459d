"""GitHub's answers, checked at the client's boundary and turned into small typed values.

Every answer the gate reads is checked against the shape GitHub's REST description documents
(the fields the gate reads, with their JSON types; :data:`FIELDS_READ` lists them, and a test
holds that list against GitHub's OpenAPI description). An answer of another shape (``[]`` or
``null`` for a pull request, labels as plain strings, a comment id that is not an integer) is
not a bug of the gate but GitHub (or what stands in front of it) answering oddly: it raises
:class:`AnswerShapeError`, which the client turns into a :class:`~gate.publishing.github.client.GitHubAnswerError`,
a GitHub problem like an outage. The rest of the gate sees only the dataclasses below, never a
raw dict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "FIELDS_READ",
    "AnswerShapeError",
    "PullRequestState",
    "IssueComment",
    "parse_pull",
    "parse_comment",
    "parse_changed_paths",
    "parse_status",
    "parse_rate_limit",
    "parse_login",
]

# (OpenAPI schema, field path, JSON type) of every field the gate reads. "a.b" is a field of an
# object field; "a[].b" a field of each item of an array field. The parsers read these and no other.
FIELDS_READ: tuple[tuple[str, str, str], ...] = (
    ("pull-request", "number", "integer"),
    ("pull-request", "head.sha", "string"),
    ("pull-request", "head.repo.full_name", "string"),  # head.repo is null when the fork was deleted
    ("pull-request", "base.repo.full_name", "string"),
    ("pull-request", "labels[].name", "string"),
    ("pull-request", "body", "string"),  # nullable
    ("issue-comment", "id", "integer"),
    ("issue-comment", "body", "string"),  # optional
    ("issue-comment", "user.login", "string"),  # user is null for a deleted account
    ("issue-comment", "user.type", "string"),  # "Bot" for an App's or GitHub Actions' account
    ("issue-comment", "html_url", "string"),
    ("diff-entry", "filename", "string"),
    ("diff-entry", "previous_filename", "string"),  # optional: renames only
    ("status", "id", "integer"),
    ("status", "state", "string"),
    ("rate-limit-overview", "resources", "object"),
    ("simple-user", "login", "string"),
)

_ID_LIMIT = 2**63  # GitHub's ids are int64


class AnswerShapeError(ValueError):
    """An answer that is not shaped as GitHub documents it; the text says where and how."""


@dataclass(frozen=True)
class PullRequestState:
    """What the gate reads of ``GET /pulls/{n}``: the PR as it is now, not as the event saw it."""

    number: int
    head_sha: str
    head_repository: str | None  # owner/name; None when the head repository is gone (a deleted fork)
    base_repository: str | None
    labels: tuple[str, ...]
    body: str | None

    @property
    def from_fork(self) -> bool | None:
        """True when the head lives in another repository (or is gone); None when GitHub did not say."""
        if self.head_repository is None:
            return True
        if self.base_repository is None:
            return None
        return self.head_repository.lower() != self.base_repository.lower()


@dataclass(frozen=True)
class IssueComment:
    """A comment on a PR's conversation."""

    id: int
    body: str
    author: str  # the login, lower-case; "" for a deleted account (GitHub's "ghost")
    html_url: str
    by_bot: bool = False  # the author is a bot account (type "Bot", or a login ending in "[bot]"), not a person


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "an integer" if isinstance(value, int) else "a number")


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise AnswerShapeError(f"{what} is {_kind(value)}, not an object")
    return value


def _string(obj: dict[str, Any], key: str, what: str, *, nullable: bool = False, optional: bool = False) -> Any:
    if key not in obj:
        if optional:
            return None
        raise AnswerShapeError(f"{what} has no {key!r}")
    value = obj[key]
    if value is None and nullable:
        return None
    if not isinstance(value, str):
        raise AnswerShapeError(f"{what}'s {key!r} is {_kind(value)}, not a string")
    return value


def _integer(obj: dict[str, Any], key: str, what: str) -> int:
    value = obj.get(key)
    # bool is an int in Python, not in JSON; GitHub's ids are positive int64.
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < _ID_LIMIT:
        raise AnswerShapeError(f"{what}'s {key!r} is {_kind(value) if key in obj else 'missing'}"
                               f"{f' ({value!r})' if isinstance(value, int) and not isinstance(value, bool) else ''}"
                               ", not a positive integer")
    return value


def _repository(ref: dict[str, Any], what: str) -> str | None:
    repo = ref.get("repo")
    if repo is None:
        return None
    return _string(_object(repo, f"{what}.repo"), "full_name", f"{what}.repo")


def parse_pull(data: Any) -> PullRequestState:
    pull = _object(data, "the pull request")
    head = _object(pull.get("head"), "the pull request's head")
    base = _object(pull.get("base"), "the pull request's base")
    labels = pull.get("labels")
    if not isinstance(labels, list):
        raise AnswerShapeError(f"the pull request's labels are {_kind(labels)}, not an array")
    names = tuple(_string(_object(label, f"label {i}"), "name", f"label {i}") for i, label in enumerate(labels))
    return PullRequestState(
        number=_integer(pull, "number", "the pull request"),
        head_sha=_string(head, "sha", "the pull request's head").lower(),
        head_repository=_repository(head, "head"),
        base_repository=_repository(base, "base"),
        labels=names,
        body=_string(pull, "body", "the pull request", nullable=True),
    )


def parse_comment(data: Any, what: str = "the comment") -> IssueComment:
    comment = _object(data, what)
    user = comment.get("user")
    login, kind = "", None
    if user is not None:
        user = _object(user, f"{what}'s user")
        login = _string(user, "login", f"{what}'s user")
        kind = _string(user, "type", f"{what}'s user", optional=True, nullable=True)
    return IssueComment(
        id=_integer(comment, "id", what),
        body=_string(comment, "body", what, optional=True, nullable=True) or "",
        author=login.lower(),
        html_url=_string(comment, "html_url", what),
        by_bot=kind == "Bot" or login.lower().endswith("[bot]"),
    )


def parse_changed_paths(entry: Any, index: int) -> tuple[str, ...]:
    """The paths one ``diff-entry`` names: its filename, and the previous one of a rename."""
    what = f"changed file {index}"
    item = _object(entry, what)
    names = [_string(item, "filename", what), _string(item, "previous_filename", what, optional=True)]
    return tuple(name for name in names if name)


def parse_status(data: Any) -> dict[str, Any]:
    status = _object(data, "the commit status")
    _integer(status, "id", "the commit status")
    _string(status, "state", "the commit status")
    return status


def parse_rate_limit(data: Any) -> dict[str, Any]:
    overview = _object(data, "the rate limit")
    _object(overview.get("resources"), "the rate limit's resources")
    return overview


def parse_login(data: Any) -> str:
    return _string(_object(data, "the user"), "login", "the user")
