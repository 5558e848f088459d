"""Redirects: GitHub answers 301/302/307 for a renamed or transferred repository. The client
follows them itself, on the API host only and a few hops at most, and never reads a
redirect's body: requests' own following read each one whole, past the MAX_BODY_BYTES cap (a
302 with an endless body grew the job's memory by gigabytes). The servers are raw sockets on
127.0.0.1."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from gate.publishing.github.client import MAX_BODY_BYTES, GitHubClient, GitHubError
from tests.publishing.github.raw_server import RawServer

TOKEN = "ghs_Redirects1234567890abcdefghijklmn"
HUGE = 4 * MAX_BODY_BYTES  # far more than the client may read; the server stops there (a test must end)
CHUNK = b"x" * 65536


@dataclass
class Redirector(RawServer):
    """Answers ``/old...`` with ``status`` and ``Location: location`` and then a body of HUGE bytes
    (sent until the client hangs up), and anything else with ``{"ok": true}``; counts what it sent."""

    status: int = 302
    location: str = "/new"
    requests: list[bytes] = field(default_factory=list)
    body_bytes_sent: int = 0
    hung_up: threading.Event = field(default_factory=threading.Event)  # the client closed mid-body

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            head = conn.recv(65536)
            self.requests.append(head)
            target = head.split(b" ", 2)[1]
            if not target.startswith(b"/old"):
                body = json.dumps({"ok": True}).encode()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
                return
            conn.sendall(b"HTTP/1.1 %d Moved\r\nLocation: %s\r\nContent-Length: %d\r\n\r\n"
                         % (self.status, self.location.encode(), HUGE))
            while self.body_bytes_sent < HUGE:
                try:
                    conn.sendall(CHUNK)
                except OSError:
                    self.hung_up.set()
                    return
                self.body_bytes_sent += len(CHUNK)



@pytest.fixture
def server() -> Iterator[Redirector]:
    made = Redirector().start()
    try:
        yield made
    finally:
        made.close()


def _client(url: str) -> GitHubClient:
    return GitHubClient(url, TOKEN, "octo-org/octo-repo", max_wait=60, sleep=lambda s: None)


def test_a_redirect_is_followed_without_reading_its_body(server):
    answer = _client(server.url).request("GET", "/old/path")
    assert answer.json() == {"ok": True}
    assert [r.split(b" ", 2)[1] for r in server.requests] == [b"/old/path", b"/new"]
    assert all(b"authorization: bearer" in r.lower() for r in server.requests)  # the same host keeps it
    assert server.hung_up.wait(60)  # the client closed the redirect's connection mid-body
    assert server.body_bytes_sent < MAX_BODY_BYTES  # what the socket buffers held, not the body


def test_a_307_keeps_a_write(server):
    server.status = 307
    _client(server.url).request("POST", "/old/comments", json={"body": "x"}, idempotent=False)
    assert [r.split(b" ", 1)[0] for r in server.requests] == [b"POST", b"POST"]


def test_a_302_does_not_turn_a_write_into_a_get(server):
    with pytest.raises(GitHubError, match="into a GET"):
        _client(server.url).request("POST", "/old/comments", json={"body": "x"}, idempotent=False)
    assert len(server.requests) == 1


def test_a_redirect_to_another_host_is_refused(server):
    other = Redirector().start()
    server.location = other.url + "/new"
    try:
        with pytest.raises(GitHubError, match="not the API host") as info:
            _client(server.url).request("GET", "/old/path")
        assert TOKEN not in str(info.value)
        assert other.requests == []  # the token never went there
    finally:
        other.close()


def test_a_redirect_loop_ends(server):
    server.location = "/old/again"
    with pytest.raises(GitHubError, match="redirects"):
        _client(server.url).request("GET", "/old/path")
    assert len(server.requests) == 6
