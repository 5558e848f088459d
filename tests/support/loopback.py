"""Where the tests' servers listen: each on an address of its own in 127.0.0.0/8, at a port the
kernel picks, without SO_REUSEADDR; and a listener closed so that no thread is left accepting.

Why: CI twice read, in one test, an answer another test's server gives (``{"ok": true}`` or a
Vespa root where the HTTP runner test's service answers Elasticsearch hits; a git fetch that
failed). Nothing here reproduced it. Whatever shares a listener's (address, port) with another
one (another xdist worker or job on the machine; a network stack that gives two SO_REUSEADDR
sockets one system-allocated port, as gVisor's did, google/gvisor#6209), a random one of 16
million loopback addresses makes the pair of the same address and port all but impossible, and
without SO_REUSEADDR no stack has a reason to share a port. ``http.server.HTTPServer`` (so
``ThreadingHTTPServer`` and wsgiref's ``WSGIServer``) sets SO_REUSEADDR, which is for rebinding a
fixed port still in TIME_WAIT: a server at port 0 never needs it.
tests/architecture/test_loopback_servers.py checks that every server is built this way.
"""

from __future__ import annotations

import secrets
import socket
import threading
from functools import lru_cache
from http.server import ThreadingHTTPServer

__all__ = ["LoopbackHTTPServer", "close_listener", "loopback_address"]


@lru_cache(maxsize=1)
def _any_loopback_address_binds() -> bool:
    """Whether this machine's loopback takes all of 127.0.0.0/8 (Linux does; macOS has 127.0.0.1 only)."""
    try:
        with socket.socket() as probe:
            probe.bind(("127.83.201.7", 0))
    except OSError:
        return False
    return True


def loopback_address() -> str:
    """A random address in 127.0.0.0/8 for a server to bind, or 127.0.0.1 where only that one binds."""
    if not _any_loopback_address_binds():
        return "127.0.0.1"
    return f"127.{secrets.randbelow(256)}.{secrets.randbelow(256)}.{1 + secrets.randbelow(254)}"


class LoopbackHTTPServer(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` without SO_REUSEADDR (module docstring); handler threads are
    daemons, so a stalled request never keeps the test process alive. Bind it to
    ``(loopback_address(), 0)``."""

    allow_reuse_address = False
    daemon_threads = True


def close_listener(listener: socket.socket, accepting: threading.Thread | None = None) -> None:
    """Close a listening socket a thread may be blocked accepting on. close() alone leaves that
    accept() waiting on the socket (the kernel keeps it open, still listening) while its number
    is free for the next socket made; shutdown() first ends the accept, and the thread is waited for."""
    try:
        listener.shutdown(socket.SHUT_RDWR)
    except OSError:  # never listened, or already shut
        pass
    listener.close()
    if accepting is not None and accepting is not threading.current_thread():
        accepting.join(timeout=30)
