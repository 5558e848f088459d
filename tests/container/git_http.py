"""A git remote served over smart HTTP on loopback (tests/support/loopback.py): what github.com is to a checkout.

``git http-backend`` (git's own CGI program) serves bare repositories below ``root``; this
module is the web server in front of it. A repository is public (anyone may fetch) or
private: then every request needs HTTP Basic credentials whose password is the token, as
github.com takes ``x-access-token:<token>``, and is answered 401 otherwise (what a
``persist-credentials: false`` checkout meets when the gate fetches without a token).

    with GitRemote(root, private={"octo-org/private.git": "ghs_x"}) as remote:
        remote.url("octo-org/private.git")   # http://127.x.y.z:<port>/octo-org/private.git
        remote.requests                      # [(method, path, authorized)]
"""

from __future__ import annotations

import base64
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from tests.support.loopback import LoopbackHTTPServer, loopback_address

BACKEND_CANDIDATES = ("/usr/lib/git-core/git-http-backend", "/usr/libexec/git-core/git-http-backend")


def http_backend() -> str | None:
    for candidate in BACKEND_CANDIDATES:
        if os.access(candidate, os.X_OK):
            return candidate
    found = subprocess.run(["git", "--exec-path"], capture_output=True, text=True)
    path = Path(found.stdout.strip()) / "git-http-backend"
    return str(path) if found.returncode == 0 and os.access(path, os.X_OK) else None


class GitRemote:
    def __init__(self, root: Path, private: dict[str, str] | None = None):
        self.root = Path(root)
        self.private = dict(private or {})
        self.requests: list[tuple[str, str, bool]] = []
        self._server: LoopbackHTTPServer | None = None
        self._backend = http_backend()
        if self._backend is None:
            raise RuntimeError("git-http-backend is not installed")

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.server_address[1]

    def url(self, name: str = "") -> str:
        assert self._server is not None
        return f"http://{self._server.server_address[0]}:{self.port}/{name}"

    def _authorized(self, name: str, header: str | None) -> bool:
        token = self.private.get(name)
        if token is None:
            return True
        if not header or not header.lower().startswith("basic "):
            return False
        try:
            user, _, password = base64.b64decode(header[6:].strip()).decode().partition(":")
        except ValueError:
            return False
        return password == token

    def start(self) -> GitRemote:
        remote = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_GET(self) -> None:
                remote._serve(self)

            def do_POST(self) -> None:
                remote._serve(self)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = LoopbackHTTPServer((loopback_address(), 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> GitRemote:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        path, _, query = handler.path.partition("?")
        parts = path.strip("/").split("/")
        if len(parts) >= 2 and not parts[1].endswith(".git") and (self.root / parts[0] / f"{parts[1]}.git").is_dir():
            path = "/" + "/".join([parts[0], parts[1] + ".git", *parts[2:]])  # github.com serves both
        name = next((n for n in sorted(self.private, key=len, reverse=True) if path.startswith(f"/{n}/")), None)
        if name is None:
            parts = path.strip("/").split("/")
            name = "/".join(parts[:2])
        authorized = self._authorized(name, handler.headers.get("Authorization"))
        self.requests.append((handler.command, path, authorized))
        if not authorized:
            handler.send_response(401)
            handler.send_header("WWW-Authenticate", 'Basic realm="GitHub"')
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": str(self.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "REQUEST_METHOD": handler.command,
            "CONTENT_TYPE": handler.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": "127.0.0.1",
            "REMOTE_USER": "x-access-token" if name in self.private else "",
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "safe.directory",
            "GIT_CONFIG_VALUE_0": "*",
        }
        if handler.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = handler.headers["Git-Protocol"]
        proc = subprocess.run([self._backend], input=body, env=env, capture_output=True, timeout=120)
        head, _, payload = proc.stdout.partition(b"\r\n\r\n")
        if not _ or proc.returncode != 0:
            handler.send_response(500)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        status = 200
        headers: list[tuple[str, str]] = []
        for line in head.decode("latin-1").split("\r\n"):
            key, _, value = line.partition(":")
            if key.lower() == "status":
                status = int(value.strip().split()[0])
            elif key:
                headers.append((key, value.strip()))
        handler.send_response(status)
        for key, value in headers:
            handler.send_header(key, value)
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)
