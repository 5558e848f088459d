"""A small GitHub REST client: the few routes the gate needs, written for CI.

:class:`GitHubClient` speaks the few routes the gate needs (a pull request, its
files, issue comments, commit statuses) with ``requests``. It is written for
CI, where a flaky API must neither fail the gate for no reason nor stall the
job for an hour:

* every request sends ``Authorization: Bearer <token>``,
  ``Accept: application/vnd.github+json`` and ``X-GitHub-Api-Version``;
  the token never appears in an exception message, a log line or ``repr``;
* rate limits (403/429) are waited out: ``retry-after`` first, then
  ``x-ratelimit-remaining: 0`` until ``x-ratelimit-reset`` (wall clock ``now``),
  then a limit without a usable time (no header, or nan, inf, a negative number) waits
  60 s, 120 s, ... ;
* 5xx answers, connection errors and timeouts are retried ``max_retries``
  times with exponential backoff (1, 2, 4, 8 s);
* one budget of ``max_wait`` wall-clock seconds bounds the time spent inside its
  calls: waits, connecting, and the reading of the answer's headers and body. A
  socket timeout alone bounds each read, not the call (a server that sends its
  headers a byte at a time would hold it for ever), so a watchdog shuts the
  call's socket down when the budget runs out; what would pass it raises
  :class:`GitHubWaitCapError` instead. Time between calls (the gate running the
  stack for minutes) does not count: the budget is for GitHub, not for the run;
* every answer is checked against the shape GitHub documents
  (:mod:`gate.publishing.github.answers`) and returned as a typed value; an answer
  of another shape raises :class:`GitHubAnswerError`, a GitHub problem like an outage;
* a request that creates something (a comment) is not retried after a 5xx or a
  lost answer (:class:`GitHubUncertainError`): the caller looks first;
* a redirect (301/302/307: a renamed or transferred repository) is followed on the API
  host only (the token goes nowhere else), at most five hops, a write only by 307/308; a
  redirect's body is never read;
* a 403 that is not a rate limit (``Resource not accessible by integration``:
  a fork PR's read-only token, or a missing ``permissions:`` entry) is never
  retried and raises :class:`GitHubPermissionError`.

``sleep``, ``clock`` (monotonic, measures the sleeps) and ``now`` (epoch
seconds, compared with ``x-ratelimit-reset``) are injectable so tests simulate
waits without sleeping.

The sticky comment built on it is :mod:`gate.publishing.github.sticky_comment`.
"""

from __future__ import annotations

import functools
import logging
import math
import re
import time
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any

import requests
import urllib3

from gate import __version__
from gate.common.environment import scrub_token
from gate.common.http_deadline import CallWatch, DeadlineAdapter, UnredirectedSession, parse_retry_after, watched
from gate.common.limits import MAX_GITHUB_WAIT
from gate.publishing.github.answers import (
    AnswerShapeError,
    IssueComment,
    PullRequestState,
    parse_changed_paths,
    parse_comment,
    parse_login,
    parse_pull,
    parse_rate_limit,
    parse_status,
)
from gate.rendering.markdown_cut import COMMENT_LIMIT

log = logging.getLogger("gate.publishing.github.client")

__all__ = [
    "API_VERSION",
    "STATUS_DESCRIPTION_LIMIT",
    "DEFAULT_BOT_LOGIN",
    "GitHubError",
    "GitHubPermissionError",
    "GitHubNotFoundError",
    "GitHubWaitCapError",
    "GitHubUncertainError",
    "GitHubAnswerError",
    "GitHubClient",
    "max_wait_problem",
]

API_VERSION = "2022-11-28"
STATUS_DESCRIPTION_LIMIT = 140
STATUS_STATES = ("error", "failure", "pending", "success")
DEFAULT_BOT_LOGIN = "github-actions[bot]"
INTEGRATION_MESSAGE = "Resource not accessible by integration"
SECONDARY_MIN_WAIT = 60.0
RESET_MARGIN = 1.0  # seconds added to x-ratelimit-reset against clock skew
MAX_RATE_LIMIT_RETRIES = 8
MAX_PAGES = 100  # 10,000 items at per_page=100
MAX_BODY_BYTES = 16 * 1024 * 1024  # one page of 100 comments of 65,536 characters is under 10 MiB
MAX_REDIRECTS = 5  # a renamed or transferred repository answers one (301, 302 or 307); a chain is not GitHub
KEEPS_METHOD = (307, 308)  # 301/302/303 turn a write into a GET: never followed for one


# --------------------------------------------------------------------------- errors


class GitHubError(Exception):
    """A GitHub API call that failed for good (after any retries).

    ``status`` is the HTTP status (None for connection errors and the wait
    cap), ``api_message`` GitHub's ``message`` field. The text never holds the
    token: the client scrubs it before raising.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        method: str | None = None,
        path: str | None = None,
        api_message: str | None = None,
        documentation_url: str | None = None,
    ):
        super().__init__(message)
        self.message = message
        self.status = status
        self.method = method
        self.path = path
        self.api_message = api_message
        self.documentation_url = documentation_url


class GitHubPermissionError(GitHubError):
    """403 that is not a rate limit: read-only token (fork PR) or a missing permission. Never retried."""

    @property
    def integration(self) -> bool:
        """True for "Resource not accessible by integration" (GITHUB_TOKEN / App token without the permission)."""
        return INTEGRATION_MESSAGE.lower() in (self.api_message or "").lower()


class GitHubNotFoundError(GitHubError):
    """404 (or 410): no such PR/comment, or a private repository the token cannot see."""


class GitHubUncertainError(GitHubError):
    """A request that changes something failed in a way that leaves open whether it was applied
    (a 5xx, a timeout, a dropped connection): not retried blindly."""


class GitHubWaitCapError(GitHubError):
    """Waiting out a rate limit or backoff, or an answer still arriving, would exceed the client's
    ``max_wait`` budget."""


class GitHubAnswerError(GitHubError):
    """GitHub answered, but not with what its API documents (``[]`` for a pull request, a comment
    id that is not an integer, a body that is not JSON): a GitHub problem, as an outage is."""


# --------------------------------------------------------------------------- client


def max_wait_problem(seconds: float) -> str | None:
    """Why ``seconds`` cannot be a budget for GitHub calls (not finite: inf overflows the
    watchdog's timer, nan compares false with everything; or past MAX_GITHUB_WAIT), or None."""
    if not math.isfinite(seconds) or not 0.0 <= seconds <= MAX_GITHUB_WAIT:
        return f"must be at least 0 and at most {MAX_GITHUB_WAIT:g} seconds"
    return None



class _BearerAuth(requests.auth.AuthBase):
    """Sets the Authorization header; passing auth explicitly also keeps ~/.netrc from overriding it."""

    def __init__(self, token: str):
        self._token = token

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = f"Bearer {self._token}"
        return request

    def __repr__(self) -> str:
        return "_BearerAuth(token='***')"


_REPOSITORY = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


class GitHubClient:
    """GitHub REST v3 for one repository (``owner/name``).

    ``max_wait`` caps the total seconds spent inside its calls over the client's
    lifetime (waits, connecting, reading answers); ``max_retries`` bounds retries
    of 5xx answers and connection errors per request; ``timeout`` is the socket
    timeout of each read in seconds. Its session mounts the client's adapter (the one
    whose sockets the deadline can shut down) for http and https, and follows no redirect
    (the client does, on the API host only).
    """

    def __init__(
        self,
        api_url: str,
        token: str,
        repository: str,
        *,
        max_wait: float = 120.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], float] = time.time,
        user_agent: str = f"retrieval-gate/{__version__}",
        timeout: float = 30,
        max_retries: int = 4,
    ):
        if not token or not isinstance(token, str):
            raise ValueError("a GitHub token is required (GITHUB_TOKEN or the action's github-token input)")
        if not isinstance(repository, str) or not _REPOSITORY.match(repository):
            raise ValueError(f"repository must look like 'owner/name', got {repository!r}")
        parts = urllib.parse.urlsplit(api_url or "")
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"api_url must be an http(s) URL, got {api_url!r}")
        self.api_url = api_url.rstrip("/")
        self._origin = (parts.scheme, parts.netloc.lower())
        self.repository = repository
        self.owner, self.repo = repository.split("/", 1)
        self.max_wait = float(max_wait)
        self.max_retries = int(max_retries)
        self.timeout = timeout
        self.user_agent = user_agent
        self._token = token
        self._auth = _BearerAuth(token)
        self._sleep = sleep
        self._clock = clock
        self._now = now
        self._session = UnredirectedSession()
        for prefix in ("http://", "https://"):
            self._session.mount(prefix, DeadlineAdapter())
        self.waited = 0.0  # seconds spent waiting so far (counts against max_wait)
        self.spent = 0.0  # wall-clock seconds spent inside calls so far: the budget's use
        # The deadline of the call under way: its start plus what is left of the budget.
        self._deadline = clock() + self.max_wait
        self.wait_log: list[tuple[float, str]] = []  # (seconds, reason) of every wait

    def __repr__(self) -> str:
        return f"GitHubClient(api_url={self.api_url!r}, repository={self.repository!r}, token='***')"

    def close(self) -> None:
        self._session.close()

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------- plumbing

    def _scrub(self, text: str) -> str:
        return scrub_token(text, self._token)

    @property
    def _headers(self) -> dict[str, str]:
        return {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": self.user_agent,
        }

    def _repo_path(self, suffix: str) -> str:
        owner = urllib.parse.quote(self.owner, safe="")
        repo = urllib.parse.quote(self.repo, safe="")
        return f"/repos/{owner}/{repo}{suffix}"

    def _url(self, path_or_url: str) -> str:
        if path_or_url.startswith(("http://", "https://")):
            parts = urllib.parse.urlsplit(path_or_url)
            if (parts.scheme, parts.netloc.lower()) != self._origin:
                # Never send the token to another host, whatever a Link header says.
                raise GitHubError(self._scrub(f"refusing to follow {parts.scheme}://{parts.netloc}{parts.path}: "
                                              "not the API host"))
            return path_or_url
        return self.api_url + path_or_url

    def budget_left(self) -> float:
        """Seconds of the ``max_wait`` budget not yet spent inside calls."""
        return max(0.0, self.max_wait - self.spent)

    def pause(self, seconds: float, reason: str) -> None:
        """Wait between calls for GitHub's sake (a list that has not caught up with a write yet),
        counted against the budget like a rate-limit wait; raises :class:`GitHubWaitCapError`
        when the budget cannot pay for it."""
        entered = self._clock()
        self._deadline = entered + self.budget_left()
        try:
            self._wait(seconds, reason, "", "")
        finally:
            self.spent += max(0.0, self._clock() - entered)

    def _wait(self, seconds: float, reason: str, method: str, path: str) -> None:
        seconds = max(0.0, float(seconds))
        left = self._deadline - self._clock()
        what = f"GitHub API {method} {path}" if method else "GitHub API"
        if seconds > left:
            raise GitHubWaitCapError(
                self._scrub(
                    f"{what}: wait cap hit: {reason} asks for a {seconds:.0f} s wait, "
                    f"but only {max(left, 0):.0f} s of the {self.max_wait:.0f} s budget (max_wait) is left; giving up"
                ),
                method=method or None,
                path=path or None,
            )
        log.warning("%s: %s, waiting %.1f s", self._scrub(what), reason, seconds)
        started = self._clock()
        self._sleep(seconds)
        slept = self._clock() - started
        self.waited += max(seconds, slept)
        self.wait_log.append((seconds, reason))

    @staticmethod
    def _error_fields(response: requests.Response) -> tuple[str, str | None]:
        try:
            data = response.json()
        except (ValueError, RecursionError):  # RecursionError: JSON nested deeper than Python's stack
            return (response.text or "").strip()[:300], None
        if isinstance(data, dict):
            message = str(data.get("message") or "")
            errors = data.get("errors")
            if isinstance(errors, list) and errors:
                details = "; ".join(
                    str(e.get("message") or e.get("code") or e) if isinstance(e, dict) else str(e) for e in errors[:5]
                )
                message = f"{message} ({details})" if message else details
            doc = data.get("documentation_url")
            return message[:500], (str(doc) if doc else None)
        return str(data)[:300], None

    def _rate_limit_delay(self, response: requests.Response, api_message: str,
                          secondary_hits: int) -> tuple[float, str, bool] | None:
        """Seconds to wait for a 403/429 that is a rate limit, why, and whether it is the
        backoff of a limit that gave no usable time (60 s, 120 s, ...); None when it is not one."""
        if response.status_code == 403 and INTEGRATION_MESSAGE.lower() in api_message.lower():
            return None
        headers = response.headers
        retry_after = headers.get("retry-after")
        if retry_after is not None:
            seconds = parse_retry_after(retry_after, self._now)
            if seconds is not None:
                return seconds, f"rate limited ({response.status_code}, retry-after {retry_after.strip()[:40]})", False
        exhausted = headers.get("x-ratelimit-remaining", "").strip() == "0"
        reset = _epoch(headers.get("x-ratelimit-reset", ""))
        if exhausted and reset is not None:
            seconds = max(reset - self._now(), 0.0) + RESET_MARGIN
            return seconds, f"rate limit exhausted ({response.status_code}, resets at epoch {reset:.0f})", False
        lowered = api_message.lower()
        if exhausted or "secondary rate limit" in lowered or "abuse" in lowered or response.status_code == 429:
            seconds = SECONDARY_MIN_WAIT * (2 ** secondary_hits)
            kind = "rate limit exhausted" if exhausted else "secondary rate limit"
            return seconds, f"{kind} ({response.status_code}, no usable retry-after or x-ratelimit-reset)", True
        return None

    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json: Any = None,
        idempotent: bool = True,
    ) -> requests.Response:
        """One API call with the retry policy; ``path`` is relative to ``api_url`` (or an absolute URL on
        the same host).

        ``idempotent=False`` (creating a comment): a 5xx or a lost answer is not retried but
        raised as :class:`GitHubUncertainError`, since the request may have been applied.
        Every attempt, waits included, ends by the client's budget (``max_wait`` seconds spent
        inside its calls, whenever they were made), and a body is read against it too (a server that trickles an
        answer byte by byte cannot hold the job)."""
        entered = self._clock()
        self._deadline = entered + (self.max_wait - self.spent)
        try:
            return self._request(method, path, params=params, json=json, idempotent=idempotent)
        finally:
            self.spent += max(0.0, self._clock() - entered)

    def _request(self, method: str, path: str, *, params: dict[str, Any] | None, json: Any,
                 idempotent: bool) -> requests.Response:
        method = method.upper()
        url = self._url(path)
        shown = urllib.parse.urlsplit(url).path  # for messages: no query string, no host
        transient = 0
        rate_limited = 0
        secondary_hits = 0
        redirects = 0
        attempts = 1 + self.max_retries + MAX_RATE_LIMIT_RETRIES + MAX_REDIRECTS
        for _attempt in range(attempts):
            remaining = self._deadline - self._clock()
            if remaining <= 0:
                raise GitHubWaitCapError(self._scrub(
                    f"GitHub API {method} {shown}: the {self.max_wait:.0f} s budget for all GitHub calls "
                    "(github-max-wait) is spent; giving up"), method=method, path=shown)
            try:
                response = self._exchange(method, url, shown, remaining, params=params, json=json)
            except (requests.ConnectionError, requests.Timeout) as exc:
                transient += 1
                kind = "timeout" if isinstance(exc, requests.Timeout) else "connection error"
                if not idempotent:
                    # The request may have been applied (a comment created, its answer lost):
                    # repeating it would duplicate it. The caller looks before it tries again.
                    raise GitHubUncertainError(self._scrub(
                        f"GitHub API {method} {shown}: {kind} ({type(exc).__name__}); it may or may not have "
                        "been applied"), method=method, path=shown) from None
                if transient > self.max_retries:
                    raise GitHubError(
                        self._scrub(f"GitHub API {method} {shown}: {kind} ({type(exc).__name__}) after {transient} "
                                    "attempts"),
                        method=method,
                        path=shown,
                    ) from None
                self._wait(_backoff(transient), f"{kind} ({type(exc).__name__})", method, shown)
                continue
            except requests.RequestException as exc:  # a broken answer: bad encoding, redirect loop, ...
                raise GitHubError(self._scrub(f"GitHub API {method} {shown}: {type(exc).__name__}"),
                                  method=method, path=shown) from None

            status = response.status_code
            if response.is_redirect:
                redirects += 1
                url = self._redirect_target(response, method, shown, redirects)
                shown, params = urllib.parse.urlsplit(url).path, None  # the new URL carries its own query
                continue
            if status < 400:
                return response
            api_message, doc_url = self._error_fields(response)
            api_message = self._scrub(api_message)

            error = functools.partial(self._status_error, method=method, shown=shown, status=status,
                                      api_message=api_message, reason=response.reason, doc_url=doc_url)

            if status in (403, 429):
                delay = self._rate_limit_delay(response, api_message, secondary_hits)
                if delay is not None:
                    rate_limited += 1
                    if rate_limited > MAX_RATE_LIMIT_RETRIES:
                        raise error(GitHubError, f" (still rate limited after {rate_limited - 1} retries)")
                    seconds, reason, backoff = delay
                    if backoff:
                        secondary_hits += 1
                    self._wait(seconds, reason, method, shown)
                    continue
                raise error(GitHubPermissionError)
            if status >= 500:
                transient += 1
                if not idempotent:
                    raise error(GitHubUncertainError, " (it may or may not have been applied)")
                if transient > self.max_retries:
                    raise error(GitHubError, f" (after {transient} attempts)")
                retry_after = parse_retry_after(response.headers.get("retry-after", ""), self._now)
                self._wait(retry_after if retry_after is not None else _backoff(transient), f"server error {status}",
                           method, shown)
                continue
            if status in (404, 410):
                raise error(GitHubNotFoundError)
            raise error(GitHubError)
        raise GitHubError(self._scrub(f"GitHub API {method} {shown}: gave up after {attempts} attempts"),
                          method=method, path=shown)

    def _redirect_target(self, response: requests.Response, method: str, shown: str, hops: int) -> str:
        """Where a 3xx answer sends the request: on the API host only (``_url`` refuses another one,
        so the token never leaves it), at most MAX_REDIRECTS hops, and a write only by 307/308."""
        status = response.status_code
        if hops > MAX_REDIRECTS:
            raise GitHubError(self._scrub(f"GitHub API {method} {shown} answered {status}: more than "
                                          f"{MAX_REDIRECTS} redirects"), status=status, method=method, path=shown)
        if method not in ("GET", "HEAD") and status not in KEEPS_METHOD:
            raise GitHubError(self._scrub(f"GitHub API {method} {shown} answered {status}: a redirect that would "
                                          f"turn the {method} into a GET (was the repository moved?)"),
                              status=status, method=method, path=shown)
        return self._url(urllib.parse.urljoin(response.url, response.headers["location"]))

    def _exchange(self, method: str, url: str, shown: str, remaining: float, *, params: dict[str, Any] | None,
                  json: Any) -> requests.Response:
        """One request and its whole answer, within ``remaining`` seconds: connecting, the headers
        and the body. At the deadline a watchdog shuts the socket down (the per-read ``timeout``
        alone lets a trickling server hold the call for ever). A redirect is not followed here
        (requests would read each redirect's whole body, past MAX_BODY_BYTES): its body is left
        unread and its connection closed; ``_request`` follows it."""
        with watched(remaining) as watch:
            response = self._exchange_watched(watch, method, url, shown, remaining, params=params, json=json)
        if watch.fired:
            # A socket shut down mid-answer reads as its end: headers and body cut short, not an answer.
            response.close()
            raise self._cut_off(method, shown)
        return response

    def _exchange_watched(self, watch: CallWatch, method: str, url: str, shown: str, remaining: float, *,
                          params: dict[str, Any] | None, json: Any) -> requests.Response:
        try:
            response = self._session.request(
                method,
                url,
                params=params,
                json=json,
                headers=self._headers,
                auth=self._auth,
                timeout=max(0.1, min(self.timeout, remaining)),
                stream=True,
                allow_redirects=False,
            )
            if response.is_redirect:
                response.close()
            else:
                self._read_body(response, method, shown)
        except Exception:
            if watch.fired:  # whatever the shut socket made requests raise, the budget ran out
                raise self._cut_off(method, shown) from None
            raise
        return response

    def _cut_off(self, method: str, shown: str) -> GitHubWaitCapError:
        return GitHubWaitCapError(self._scrub(
            f"GitHub API {method} {shown}: no whole answer within the {self.max_wait:.0f} s budget for all GitHub "
            "calls (github-max-wait); the connection was closed"), method=method, path=shown)

    def _status_error(self, cls: type[GitHubError], extra: str = "", *, method: str, shown: str, status: int,
                      api_message: str, reason: str, doc_url: str | None) -> GitHubError:
        """The error for an answer of HTTP ``status``: GitHub's message (or the reason phrase) and
        its documentation link, scrubbed of the token."""
        text = f"GitHub API {method} {shown} answered {status}: {api_message or reason}{extra}"
        if doc_url:
            text += f" ({doc_url})"
        return cls(
            self._scrub(text),
            status=status,
            method=method,
            path=shown,
            api_message=api_message,
            documentation_url=doc_url,
        )

    def _read_body(self, response: requests.Response, method: str, shown: str) -> None:
        chunks: list[bytes] = []
        size = 0
        raw = response.raw
        while True:
            # read1: what one socket read brings (read(n) would wait for n bytes, and a server
            # trickling a byte at a time would never let the deadline be checked).
            try:
                chunk = raw.read1(65536, decode_content=True)
            except urllib3.exceptions.ReadTimeoutError as exc:  # as requests would have raised them
                raise requests.Timeout(str(exc)) from None
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                raise requests.ConnectionError(str(exc)) from None
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                response.close()
                raise GitHubError(self._scrub(f"GitHub API {method} {shown}: the answer is larger than "
                                              f"{MAX_BODY_BYTES // (1024 * 1024)} MiB"), method=method, path=shown)
            chunks.append(chunk)
            if self._clock() > self._deadline:
                response.close()
                raise GitHubWaitCapError(self._scrub(
                    f"GitHub API {method} {shown}: the answer was still arriving when the {self.max_wait:.0f} s "
                    "budget for all GitHub calls (github-max-wait) ran out"), method=method, path=shown)
        response._content = b"".join(chunks)  # what .json() and .text read

    def _json(self, response: requests.Response) -> Any:
        try:
            return response.json()
        except ValueError:
            raise self._odd(response, "the answer is not JSON") from None
        except RecursionError:  # a body of 200 KB of '[': no answer GitHub documents is that deep
            raise self._odd(response, "the answer is JSON nested too deeply") from None

    def _odd(self, response: requests.Response, problem: str) -> GitHubAnswerError:
        """The error for an answer not shaped as GitHub documents it."""
        method = response.request.method if response.request is not None else None
        path = urllib.parse.urlsplit(response.url).path
        return GitHubAnswerError(self._scrub(f"GitHub API {method or ''} {path} answered {response.status_code} with "
                                             f"what GitHub does not document: {problem}"[:500]),
                                 status=response.status_code, method=method, path=path)

    def _parsed(self, response: requests.Response, parse: Callable[[Any], Any]) -> Any:
        try:
            return parse(self._json(response))
        except AnswerShapeError as problem:
            raise self._odd(response, str(problem)) from None

    def paginate(self, path: str, params: dict[str, Any] | None = None, *,
                 max_pages: int = MAX_PAGES) -> Iterator[Any]:
        """Items of a list route, following ``Link: rel="next"`` (per_page=100), at most ``max_pages`` pages;
        a page that is not a list raises :class:`GitHubAnswerError`."""
        query: dict[str, Any] | None = {"per_page": 100, **(params or {})}
        target = path
        for _page in range(max_pages):
            response = self.request("GET", target, params=query)
            data = self._json(response)
            if not isinstance(data, list):
                raise self._odd(response, f"a page of a list is {type(data).__name__}, not an array")
            yield from data
            following = response.links.get("next", {}).get("url")
            if not following:
                return
            target, query = following, None  # the next URL carries its own query
        log.warning("GitHub API GET %s: stopped after %d pages", path, max_pages)

    def _paginate_parsed(self, path: str, parse: Callable[[Any, int], Any]) -> Iterator[Any]:
        """``paginate``'s items, each through ``parse(item, index)``; a wrong shape is a GitHubAnswerError."""
        for index, item in enumerate(self.paginate(path)):
            try:
                yield parse(item, index)
            except AnswerShapeError as problem:
                raise GitHubAnswerError(self._scrub(f"GitHub API GET {path} answered with what GitHub does not "
                                                    f"document: {problem}"[:500]), method="GET", path=path) from None

    # ------------------------------------------------------------- routes

    def get_pull(self, number: int) -> PullRequestState:
        """GET /repos/{owner}/{repo}/pulls/{number}."""
        pull: PullRequestState = self._parsed(self.request("GET", self._repo_path(f"/pulls/{int(number)}")),
                                              parse_pull)
        if pull.number != int(number):
            raise GitHubAnswerError(f"GitHub API GET /pulls/{int(number)} answered with pull request #{pull.number}",
                                    method="GET", path=self._repo_path(f"/pulls/{int(number)}"))
        return pull

    def list_pull_files(self, number: int) -> list[str]:
        """Paths changed by the PR (all pages), in GitHub's order, without duplicates.

        A renamed file contributes its new path and then its previous one:
        moving a retrieval config away is a change to that config. GitHub
        lists at most 3,000 files per PR.
        """
        seen: dict[str, None] = {}
        for names in self._paginate_parsed(self._repo_path(f"/pulls/{int(number)}/files"), parse_changed_paths):
            for name in names:
                seen.setdefault(name, None)
        return list(seen)

    def list_issue_comments(self, number: int) -> list[IssueComment]:
        """Every comment on the PR's conversation (all pages, ascending id)."""
        return list(self._paginate_parsed(self._repo_path(f"/issues/{int(number)}/comments"),
                                          lambda item, index: parse_comment(item, f"comment {index}")))

    def create_comment(self, number: int, body: str) -> IssueComment:
        """POST a comment, once: a failure that may have created it raises GitHubUncertainError."""
        _check_body(body)
        return self._parsed(self.request("POST", self._repo_path(f"/issues/{int(number)}/comments"),
                                         json={"body": body}, idempotent=False), parse_comment)

    def update_comment(self, comment_id: int, body: str) -> IssueComment:
        _check_body(body)
        return self._parsed(self.request("PATCH", self._repo_path(f"/issues/comments/{int(comment_id)}"),
                                         json={"body": body}), parse_comment)

    def delete_comment(self, comment_id: int) -> bool:
        """Delete a comment; False when it was already gone (404), so concurrent cleanups do not fail."""
        try:
            self.request("DELETE", self._repo_path(f"/issues/comments/{int(comment_id)}"))
        except GitHubNotFoundError:
            return False
        return True

    def create_status(
        self,
        sha: str,
        state: str,
        context: str,
        description: str,
        target_url: str | None = None,
    ) -> dict[str, Any]:
        """POST /repos/{owner}/{repo}/statuses/{sha}; ``description`` is cut to 140 characters."""
        if state not in STATUS_STATES:
            raise ValueError(f"status state must be one of {', '.join(STATUS_STATES)}, got {state!r}")
        if not re.fullmatch(r"[0-9a-fA-F]{7,64}", sha or ""):
            raise ValueError(f"not a commit sha: {sha!r}")
        payload: dict[str, Any] = {
            "state": state,
            "context": context,
            "description": truncate_description(description),
        }
        if target_url:
            payload["target_url"] = target_url
        return self._parsed(self.request("POST", self._repo_path(f"/statuses/{sha}"), json=payload), parse_status)

    def rate_limit(self) -> dict[str, Any]:
        """GET /rate_limit (does not count against the limit)."""
        return self._parsed(self.request("GET", "/rate_limit"), parse_rate_limit)

    def authenticated_login(self, default: str = DEFAULT_BOT_LOGIN) -> str:
        """The token's login via GET /user, or ``default`` when GitHub will not say.

        GITHUB_TOKEN and App installation tokens answer 403 there, and their
        comments are authored by ``github-actions[bot]`` (or ``<app-slug>[bot]``
        for an App: pass that explicitly as the bot login). An odd answer is GitHub
        not saying, too.
        """
        try:
            login: str = self._parsed(self.request("GET", "/user"), parse_login)
        except GitHubError as exc:
            log.info("GET /user unavailable (%s); assuming %s", exc.status, default)
            return default
        return login or default


def _backoff(attempt: int) -> float:
    return float(min(2 ** (attempt - 1), 30))


def _epoch(value: str) -> float | None:
    """x-ratelimit-reset's epoch seconds; None when absent or not a time (nan, inf, negative)."""
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _check_body(body: str) -> None:
    if not isinstance(body, str):
        raise TypeError("a comment body must be a string")
    if len(body) > COMMENT_LIMIT:
        raise ValueError(f"comment body is {len(body):,} characters; GitHub accepts at most {COMMENT_LIMIT:,} "
                         "(use fit_comment)")


def truncate_description(text: str, limit: int = STATUS_DESCRIPTION_LIMIT) -> str:
    """One line of at most ``limit`` characters (an ellipsis marks a cut)."""
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
