"""The budget is a total deadline over a call: connecting, the answer's headers and its body.

requests' ``timeout`` bounds each socket read; a server that sends a byte every 50 ms never
trips it, and before the watchdog a call to such a server took as long as the server liked
(217 s under github-max-wait 15, in the issue's harness). These servers are real sockets on
127.0.0.1 that trickle for far longer than any test runs: a client that returns at all gave
up on its own, and each test checks the server was still sending when it did.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from gate.publishing.github.client import GitHubClient, GitHubWaitCapError
from gate.publishing.github.sticky_comment import publish_comment
from tests.publishing.github.raw_server import RawServer

TOKEN = "ghs_Deadline1234567890abcdefghijklmno"
MAX_WAIT = 2.0
MARGIN = 30.0  # far above any scheduling delay, far below the seconds the server would trickle

# What the servers send, a byte every TRICKLE seconds: 20,000 bytes take 1,000 s.
TRICKLE = 0.05
HEADERS = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
           + b"".join(b"X-Padding-%d: %s\r\n" % (i, b"p" * 400) for i in range(50)) + b"\r\n")
BODY = b"[" + b" " * 20_000 + b"]"


@dataclass
class Trickler(RawServer):
    """A server that answers every request a byte at a time: ``what`` is "headers" (the status
    line and headers trickle), "body" (headers at once, then the body trickles) or "second" (the
    first request on a connection is answered whole, the second one's headers trickle)."""

    what: str
    connections: int = 0
    stop: threading.Event = field(default_factory=threading.Event)
    sending: int = 0  # connections still trickling
    finished: int = 0  # connections whose whole answer went out
    dropped: int = 0  # connections the client closed while the server was still trickling
    held_for: list[float] = field(default_factory=list)  # seconds each connection ended after it opened

    def _stopping(self) -> bool:
        return self.stop.is_set()

    def _answer(self, conn: socket.socket) -> None:
        self.connections += 1
        self.sending += 1
        opened = time.monotonic()
        with conn:
            conn.recv(65536)
            if self.what == "second":  # a whole first answer, kept alive; the second one trickles
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
                conn.recv(65536)
            if self.what == "body":
                conn.sendall(HEADERS.replace(b"\r\n\r\n", b"\r\nContent-Length: %d\r\n\r\n" % len(BODY)))
            answer = BODY if self.what == "body" else HEADERS
            for i in range(len(answer)):
                if self.stop.is_set():
                    break
                try:
                    conn.sendall(answer[i:i + 1])
                except OSError:  # the client shut the connection: it gave up mid-answer
                    self.dropped += 1
                    break
                time.sleep(TRICKLE)
            else:
                self.finished += 1
        self.held_for.append(time.monotonic() - opened)
        self.sending -= 1

    def close(self) -> None:
        self.stop.set()
        super().close()


@pytest.fixture(params=["headers", "body"])
def trickler(request) -> Iterator[Trickler]:
    server = Trickler(request.param).start()
    try:
        yield server
    finally:
        server.close()


def _gave_up_while_trickling(server: Trickler) -> None:
    assert server.finished == 0  # the server never got to the end of an answer
    assert server.sending > 0 or server.dropped > 0  # and was still at it (or saw the client hang up)


def test_a_trickled_answer_ends_by_the_deadline(trickler):
    client = GitHubClient(trickler.url, TOKEN, "octo-org/octo-repo", max_wait=MAX_WAIT, timeout=300)
    started = time.monotonic()
    with pytest.raises(GitHubWaitCapError) as info:
        client.get_pull(7)
    took = time.monotonic() - started
    _gave_up_while_trickling(trickler)
    assert took < MAX_WAIT + MARGIN
    assert "github-max-wait" in str(info.value) and TOKEN not in str(info.value)


def test_the_deadline_bounds_a_whole_publish(trickler):
    """The sticky comment's several calls share the one budget: the publish ends as a GitHub
    problem (the Action's warning), within the budget plus a margin."""
    client = GitHubClient(trickler.url, TOKEN, "octo-org/octo-repo", max_wait=MAX_WAIT, timeout=300)
    started = time.monotonic()
    with pytest.raises(GitHubWaitCapError):
        publish_comment(client, 7, "main", "1" * 40, "pass", "body")
    assert time.monotonic() - started < MAX_WAIT + MARGIN
    _gave_up_while_trickling(trickler)
    assert client.budget_left() == 0


def test_a_kept_alive_connection_is_watched_too():
    """The second call reuses the first one's connection (HTTP/1.1 keep-alive), and the server
    trickles only that second answer: the reused socket is under the second call's watch."""
    server = Trickler("second").start()
    try:
        client = GitHubClient(server.url, TOKEN, "octo-org/octo-repo", max_wait=MAX_WAIT + MARGIN, timeout=300)
        first = client.request("GET", "/rate_limit")
        assert first.status_code == 200 and server.connections == 1
        client.max_wait = client.spent + MAX_WAIT  # what is left of the budget: MAX_WAIT seconds
        started = time.monotonic()
        with pytest.raises(GitHubWaitCapError):
            client.request("GET", "/rate_limit")
        assert time.monotonic() - started < MAX_WAIT + MARGIN
        assert server.connections == 1  # the same connection: the watch found its socket
        _gave_up_while_trickling(server)
    finally:
        server.close()
