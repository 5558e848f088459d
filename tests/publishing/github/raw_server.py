"""A raw HTTP server on 127.0.0.1 for the tests that need what no well-behaved server sends
(an answer trickled a byte at a time, a redirect with an endless body): a thread per
connection, each answered by the subclass's ``_answer``."""

from __future__ import annotations

import socket
import threading
from typing import TypeVar

Server = TypeVar("Server", bound="RawServer")


class RawServer:
    """Not a dataclass: the subclasses are, with their own fields first (``Trickler("body")``)."""

    listener: socket.socket

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def start(self: Server) -> Server:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        threading.Thread(target=self._serve, daemon=True).start()
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
        self.listener.close()
