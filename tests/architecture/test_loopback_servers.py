"""Every server the tests start listens on a loopback address of its own, without SO_REUSEADDR,
and is closed with no thread left accepting (tests/support/loopback.py says why); the demo's
search service sets no SO_REUSEADDR either."""

from __future__ import annotations

import ipaddress
import re
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from gate.demo import search_service
from tests.publishing.github.fake_github import FakeGitHub
from tests.support import http_faults
from tests.support.loopback import LoopbackHTTPServer, close_listener, loopback_address

REPO = Path(__file__).resolve().parents[2]
SERVER_BASES = r"(?:ThreadingHTTPServer|HTTPServer|WSGIServer|TCPServer|ThreadingTCPServer|LoopbackHTTPServer)"
#: A server class of the stdlib's constructed as it is (it sets SO_REUSEADDR).
STDLIB_SERVER_BUILT = re.compile(r"(?<![\w.])(?:http\.server\.|socketserver\.)?"
                                 r"(?:ThreadingHTTPServer|HTTPServer|TCPServer|ThreadingTCPServer|WSGIServer)\(")
SERVER_CLASS = re.compile(rf"^([ \t]*)class \w+\([^)]*\b{SERVER_BASES}\b[^)]*\):[^\n]*\n"
                          r"((?:\1[ \t]+.*\n|[ \t]*\n)*)", re.M)


def _sources() -> list[Path]:
    return [path for folder in ("gate", "tests", "benchmarks", "tools")
            for path in sorted((REPO / folder).rglob("*.py")) if path.name != "test_loopback_servers.py"]


def test_no_stdlib_server_is_built_as_it_is():
    built = [f"{path.relative_to(REPO)}:{text.count(chr(10), 0, match.start()) + 1}"
             for path in _sources() for text in [path.read_text()] for match in STDLIB_SERVER_BUILT.finditer(text)
             if not text[text.rfind("\n", 0, match.start()) + 1:match.start()].lstrip().startswith("class ")]
    assert built == [], "build LoopbackHTTPServer (tests/support/loopback.py) or a class without SO_REUSEADDR"


def test_every_server_class_turns_so_reuseaddr_off():
    classes = [(path, match) for path in _sources() for match in SERVER_CLASS.finditer(path.read_text())]
    assert len(classes) >= 4  # loopback's, http_faults', fake_github's, the demo service's: the scan sees them
    keeping = [f"{path.relative_to(REPO)}: {match.group(0).splitlines()[0].strip()}" for path, match in classes
               if "allow_reuse_address = False" not in match.group(2)]
    assert keeping == []


def test_make_server_is_always_given_a_server_class():
    calls = [f"{path.relative_to(REPO)}: {line.strip()}" for path in _sources()
             for line in path.read_text().splitlines() if re.search(r"\bmake_server\(", line) and "import" not in line
             and "server_class=" not in line]
    assert calls == []


class _Quiet(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize("server_class", [LoopbackHTTPServer, http_faults._ThreadingServer,
                                          search_service._ThreadingWSGIServer],
                         ids=["loopback", "http_faults", "demo_search_service"])
def test_the_servers_socket_has_no_so_reuseaddr(server_class):
    server = server_class(("127.0.0.1", 0), _Quiet)
    try:
        assert server.socket.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR) == 0
    finally:
        server.server_close()


def test_the_fake_githubs_socket_has_no_so_reuseaddr():
    fake = FakeGitHub().start()
    try:
        assert fake._server.socket.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR) == 0
    finally:
        fake.stop()


#: Servers left on 127.0.0.1, and why.
ON_127_0_0_1 = {
    "tests/browser/test_harness.py": "the canary Chromium must not reach: its proxy bypass rule names loopback",
    "tests/container/registry.py": "Docker pushes over plain HTTP to a registry on 127.0.0.0/8 only",
}
BOUND_TO_127_0_0_1 = re.compile(r"""(?:bind\(|make_server\(|Server\(\(?)\(?["']127\.0\.0\.1["']""")


def test_every_test_server_binds_an_address_of_its_own():
    fixed = [f"{path.relative_to(REPO)}:{number}" for path in _sources() if path.is_relative_to(REPO / "tests")
             and path.relative_to(REPO).as_posix() not in ON_127_0_0_1
             for number, line in enumerate(path.read_text().splitlines(), 1) if BOUND_TO_127_0_0_1.search(line)]
    assert fixed == [], "bind (loopback_address(), 0): tests/support/loopback.py"


def test_the_scan_sees_a_server_bound_to_127_0_0_1():
    assert BOUND_TO_127_0_0_1.search('    server = make_server("127.0.0.1", 0, app)')
    assert BOUND_TO_127_0_0_1.search("        self.listener.bind(('127.0.0.1', 0))")
    assert BOUND_TO_127_0_0_1.search('        self._server = Server(("127.0.0.1", 0), Handler)')
    assert not BOUND_TO_127_0_0_1.search('    dead = "http://127.0.0.1:9"')


def test_loopback_addresses_are_random_bindable_and_reachable():
    addresses = {loopback_address() for _ in range(50)}
    assert len(addresses) > 40 and all(ipaddress.ip_address(a) in ipaddress.ip_network("127.0.0.0/8")
                                       for a in addresses)
    server = LoopbackHTTPServer((loopback_address(), 0), _Quiet)
    try:
        with socket.create_connection(server.server_address[:2], timeout=10):
            pass
    finally:
        server.server_close()


def test_a_closed_listener_leaves_no_thread_accepting_and_nothing_listening():
    """close() alone leaves the accepting thread blocked, the socket still listening on its port."""
    listener = socket.socket()
    listener.bind((loopback_address(), 0))
    listener.listen(4)
    address = listener.getsockname()[:2]
    errors: list[OSError] = []

    def accept() -> None:
        try:
            listener.accept()
        except OSError as error:
            errors.append(error)

    accepting = threading.Thread(target=accept, daemon=True)
    accepting.start()
    while accepting.is_alive() and not _blocked_in_accept(accepting):
        time.sleep(0.01)
    time.sleep(0.2)  # from accept() into the system call (were it not there yet, close() alone would do)
    close_listener(listener, accepting)
    assert not accepting.is_alive() and errors
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(address, timeout=10).close()


def _blocked_in_accept(thread: threading.Thread) -> bool:
    frame = sys._current_frames().get(thread.ident or -1)
    return frame is not None and frame.f_code.co_name == "accept"
