"""HTTP calls bounded by one deadline each, with ``requests``: the GitHub client's and the HTTP
runner's (:mod:`gate.runs.http`).

requests' ``timeout`` bounds each socket read, not the call: a server that sends a byte of its
headers (or body) every second never trips it. :func:`watched` starts a timer that shuts down
every socket the call opens or reuses when its deadline passes; the read blocked in the calling
thread then fails like a dropped connection, and ``watch.fired`` says it was the deadline.
Sessions mount :class:`DeadlineAdapter` (whose connections hand their sockets to the watch) and
are :class:`UnredirectedSession`\\ s (no redirect is prepared, so a 3xx body is never read).
"""

from __future__ import annotations

import email.utils
import math
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import requests
import requests.adapters
import urllib3
import urllib3.connection
import urllib3.connectionpool
import urllib3.poolmanager

__all__ = ["CallWatch", "DeadlineAdapter", "UnredirectedSession", "parse_retry_after", "watched"]


class CallWatch:
    """The sockets one call uses, shut down by a timer when the call's deadline passes.

    Shutting the socket down from the timer's thread wakes the read blocked in the calling
    thread, which then fails like a dropped connection.
    """

    def __init__(self) -> None:
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self.fired = False

    def add(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        with self._lock:
            self._sockets.append(sock)
            fired = self.fired
        if fired:
            _shut(sock)

    def fire(self) -> None:
        with self._lock:
            self.fired = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # already closed
        pass


_watching = threading.local()  # .watch: the CallWatch of the call under way in this thread


@contextmanager
def watched(seconds: float) -> Iterator[CallWatch]:
    """The call made inside the block has ``seconds`` in all: then its sockets are shut down
    (connections of a :class:`DeadlineAdapter`, in this thread)."""
    watch = CallWatch()
    watchdog = threading.Timer(max(seconds, 0.0), watch.fire)
    watchdog.daemon = True
    _watching.watch = watch
    watchdog.start()
    try:
        yield watch
    finally:
        _watching.watch = None
        watchdog.cancel()


def _watch_socket(sock: socket.socket | None) -> None:
    watch = getattr(_watching, "watch", None)
    if watch is not None:
        watch.add(sock)


class _WatchedConnection:
    """Gives every socket a connection opens, or reuses for a request, to the call's watch."""

    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()  # type: ignore[misc]
        _watch_socket(sock)
        return sock

    def request(self, *args: Any, **kwargs: Any) -> Any:
        _watch_socket(getattr(self, "sock", None))  # a kept-alive connection: its socket is not new
        return super().request(*args, **kwargs)  # type: ignore[misc]


class _WatchedHTTPConnection(_WatchedConnection, urllib3.connection.HTTPConnection):
    pass


class _WatchedHTTPSConnection(_WatchedConnection, urllib3.connection.HTTPSConnection):
    pass


class _WatchedHTTPPool(urllib3.connectionpool.HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(urllib3.connectionpool.HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


_WATCHED_POOLS = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}


class DeadlineAdapter(requests.adapters.HTTPAdapter):
    """requests' adapter, with connections whose sockets the call's watchdog can shut down (direct,
    and through an HTTP(S) proxy; a SOCKS proxy keeps its own connections and only the per-read
    timeout)."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _WATCHED_POOLS

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if manager.pool_classes_by_scheme is urllib3.poolmanager.pool_classes_by_scheme:
            manager.pool_classes_by_scheme = _WATCHED_POOLS
        return manager


class UnredirectedSession(requests.Session):
    """A session that never looks for a redirect: requests reads a 3xx answer's whole body to
    prepare the next hop even with ``allow_redirects=False`` (a 302 with an endless body grew the
    job by gigabytes). A caller that follows redirects does it itself."""

    def get_redirect_target(self, resp: requests.Response) -> None:
        return None


def parse_retry_after(value: str, now: Callable[[], float]) -> float | None:
    """Seconds a ``Retry-After`` asks for (a count of seconds or an HTTP date, against ``now``,
    epoch seconds); None when it says nothing usable."""
    value = (value or "").strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:  # nan, inf or a negative count of seconds says nothing: the default backoff, not a 0 s wait
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(when.timestamp() - now(), 0.0)
