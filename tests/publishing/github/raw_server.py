"""A raw HTTP server on loopback (tests/support/loopback.py) for the tests that need what no well-behaved server sends
(an answer trickled a byte at a time, a redirect with an endless body): a thread per
connection, each answered by the subclass's ``_answer``."""

from __future__ import annotations

import socket
import threading
from typing import TypeVar

from tests.support.loopback import close_listener, loopback_address

Server = TypeVar("Server", bound="RawServer")


class RawServer:
    """Not a dataclass: the subclasses are, with their own fields first (``Trickler("body")``)."""

    listener: socket.socket
    accepting: threading.Thread

    @property
    def url(self) -> str:
        host, port = self.listener.getsockname()[:2]
        return f"http://{host}:{port}"

    def start(self: Server) -> Server:
        self.listener = socket.socket()
        self.listener.bind((loopback_address(), 0))
        self.listener.listen(16)
        self.accepting = threading.Thread(target=self._serve, daemon=True)
        self.accepting.start()
        return self

    def _serve(self) -> None:
        while not self._stopping():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _stopping(self) -> bool:
        return False

    def _answer(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        close_listener(self.listener, self.accepting)
