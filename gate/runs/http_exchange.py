"""One query of the HTTP runner: its attempts, each bounded by one deadline, with retries.

An attempt has ``runner.http.timeout`` seconds in all: connecting, the headers and the body (a
socket watchdog, :mod:`gate.common.http_deadline`, shuts the connection down at the deadline, so a
server dripping a byte a second cannot hold the run). The body is read as it arrives, up to
:data:`MAX_ANSWER_BYTES`. A 429, a 5xx, a timeout or a dropped connection is retried after a wait
(``backoff`` doubled each time, at most :data:`MAX_BACKOFF` seconds; a ``Retry-After`` is waited as
asked, at most ``timeout`` seconds); a redirect is not followed (the request and its headers go
to the configured host only), and any other status fails the query at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import requests
import urllib3

from gate.common import limits
from gate.common.http_deadline import DeadlineAdapter, UnredirectedSession, parse_retry_after, watched
from gate.runs.http_answers import Answer, AnswerPaths, Refused, read_answer

__all__ = ["MAX_ANSWER_BYTES", "MAX_BACKOFF", "Attempts", "Clocks", "Failed", "OutOfTime", "Request", "RateLimit",
           "new_session", "ask"]

#: The largest answer read: a page of hits, not a dump of the index.
MAX_ANSWER_BYTES = 16 * limits.MIB
#: The longest wait between two attempts without a Retry-After.
MAX_BACKOFF = 30.0


@dataclass(frozen=True)
class Request:
    """One query's request, as sent (the headers hold the secrets: never printed)."""
    method: str
    url: str
    body: bytes | None
    headers: Mapping[str, str]


@dataclass(frozen=True)
class Attempts:
    """How a query is tried: ``retries`` after the first attempt, each ``timeout`` seconds."""
    retries: int
    backoff: float
    timeout: float
    depth: int
    paths: AnswerPaths


class Failed(Exception):
    """A query without an answer: refused (``retried`` False) or failed after its retries."""

    def __init__(self, reason: str, attempts: int):
        self.reason = reason
        self.attempts = attempts
        super().__init__(reason)


class OutOfTime(Exception):
    """``runner.http.max_seconds`` ran out before the query had its answer."""


class _Transient(Exception):
    """An attempt worth repeating: a 429 or 5xx, a timeout, a dropped connection."""

    def __init__(self, reason: str, retry_after: float | None = None):
        self.reason = reason
        self.retry_after = retry_after
        super().__init__(reason)


class _NoNetrc(requests.auth.AuthBase):
    """Set as the session's auth so that requests never adds ~/.netrc credentials for the host."""

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        return request


class RateLimit:
    """``runner.http.rate_limit``: request slots spaced ``1 / per_second`` apart across every
    worker (0: none). ``take`` waits for the next slot; False when it is past ``deadline``."""

    def __init__(self, per_second: float, clock: Callable[[], float], sleep: Callable[[float], None]):
        self.interval = 1.0 / per_second if per_second > 0 else 0.0
        self.clock, self.sleep = clock, sleep
        self._next = -float("inf")
        self._lock = threading.Lock()

    def take(self, deadline: float) -> bool:
        if not self.interval:
            return True
        with self._lock:
            now = self.clock()
            slot = max(now, self._next)
            if slot > deadline:
                return False
            self._next = slot + self.interval
        if slot > now:
            self.sleep(slot - now)
        return True


def new_session() -> requests.Session:
    """A worker's session: connections the deadline can shut down, no redirect prepared, no netrc."""
    session = UnredirectedSession()
    session.auth = _NoNetrc()
    for prefix in ("http://", "https://"):
        session.mount(prefix, DeadlineAdapter())
    return session


@dataclass
class Clocks:
    clock: Callable[[], float] = time.monotonic  # measures attempts and waits
    sleep: Callable[[float], None] = time.sleep
    now: Callable[[], float] = time.time  # epoch seconds: a Retry-After's HTTP date


def ask(session: requests.Session, request: Request, how: Attempts, limit: RateLimit, run_deadline: float,
        clocks: Clocks, on_retry: Callable[[int, str, float], None]) -> tuple[Answer, float, int]:
    """The answer to ``request``, its round trip in ms (the successful attempt's) and the number of
    attempts; :class:`Failed` when refused or failed after the retries, :class:`OutOfTime` when
    ``run_deadline`` passes first. ``on_retry(attempt, reason, wait)`` hears of each retry."""
    attempt = 0
    while True:
        attempt += 1
        if not limit.take(run_deadline):
            raise OutOfTime()
        started = clocks.clock()
        deadline = min(started + how.timeout, run_deadline)
        try:
            body = _exchange(session, request, deadline - started, how.timeout, clocks)
            if body is None:
                raise Refused(f"the answer is larger than {limits.describe_bytes(MAX_ANSWER_BYTES)}")
            elapsed_ms = (clocks.clock() - started) * 1000.0
            return read_answer(body, how.paths, how.depth), elapsed_ms, attempt
        except Refused as refused:
            raise Failed(refused.reason, attempt) from None
        except _Transient as problem:
            if clocks.clock() >= run_deadline:  # cut by the run's budget, not by the service
                raise OutOfTime() from None
            if attempt > how.retries:
                raise Failed(f"{problem.reason} after {attempt} attempt{'s' if attempt > 1 else ''}", attempt) from None
            wait = _wait(how, attempt, problem.retry_after)
            if clocks.clock() + wait >= run_deadline:
                raise OutOfTime() from None
            on_retry(attempt, problem.reason, wait)
            clocks.sleep(wait)


def _wait(how: Attempts, attempt: int, retry_after: float | None) -> float:
    if retry_after is not None:
        return min(retry_after, how.timeout)
    return min(how.backoff * (2 ** (attempt - 1)), MAX_BACKOFF)


def _exchange(session: requests.Session, request: Request, seconds: float, timeout: float,
              clocks: Clocks) -> bytes | None:
    """One 2xx answer's body within ``seconds`` (None when over the cap); _Transient or Refused else."""
    if seconds <= 0:
        raise OutOfTime()
    with watched(seconds) as watch:
        try:
            response = session.request(request.method, request.url, data=request.body, headers=dict(request.headers),
                                        timeout=seconds, stream=True, allow_redirects=False)
            try:
                _refuse_status(response, clocks)
                body = _read_capped(response, clocks.clock() + seconds, clocks.clock, timeout)
            finally:
                response.close()
        except (_Transient, Refused):
            raise
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as error:
            if watch.fired or isinstance(error, (requests.Timeout, urllib3.exceptions.TimeoutError)):
                # the watchdog or a socket timeout, whichever came first: the same deadline
                raise _Transient(f"no whole answer within {timeout:g} s") from None
            raise _Transient(_connection_reason(error)) from None
    if watch.fired:  # the socket shut down mid-answer: what was read is cut short, not an answer
        raise _Transient(f"no whole answer within {timeout:g} s")
    return body


def _refuse_status(response: requests.Response, clocks: Clocks) -> None:
    """Raise for a status other than 2xx: _Transient for 429 and 5xx, Refused for the rest."""
    status = response.status_code
    if 200 <= status < 300:
        return
    if status == 429 or 500 <= status <= 599:
        raise _Transient(f"HTTP {status}", parse_retry_after(response.headers.get("retry-after", ""), clocks.now))
    if 300 <= status < 400:
        raise Refused(f"HTTP {status}: a redirect, not followed (the request and its headers go to the configured "
                      "host only): give runner.http.url the address it names")
    snippet = _snippet(response)
    raise Refused(f"HTTP {status}" + (f": {snippet}" if snippet else ""))


def _snippet(response: requests.Response) -> str:
    """The start of an error answer (Elasticsearch says there what is wrong with the query)."""
    try:
        data = response.raw.read(300, decode_content=True)
    except (urllib3.exceptions.HTTPError, OSError):
        return ""
    return limits.shorten(" ".join(data.decode("utf-8", errors="replace").split()), 200)


def _read_capped(response: requests.Response, deadline: float, clock: Callable[[], float],
                 timeout: float) -> bytes | None:
    """The body as it arrives (read1: a trickle still lets the deadline be checked), or None past
    :data:`MAX_ANSWER_BYTES`."""
    chunks: list[bytes] = []
    size = 0
    raw = response.raw
    while True:
        chunk = raw.read1(65536, decode_content=True)
        if not chunk:
            break
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            return None
        chunks.append(chunk)
        if clock() > deadline:
            raise _Transient(f"no whole answer within {timeout:g} s")
    return b"".join(chunks)


def _connection_reason(error: BaseException) -> str:
    if isinstance(error, (urllib3.exceptions.ProtocolError, requests.exceptions.ChunkedEncodingError)):
        return "the connection dropped mid-answer"
    if isinstance(error, requests.ConnectionError):
        refused = "refused" in str(error).lower()
        return "the connection was refused" if refused else "could not connect, or the connection dropped"
    return f"the request failed ({type(error).__name__})"
