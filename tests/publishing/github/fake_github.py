"""A local HTTP server that plays GitHub's REST API for tests (loopback only: tests/support/loopback.py).

It keeps state (pull requests with their head sha and files, issue comments
with ids/authors/bodies, commit statuses), records every request, validates
each request against GitHub's OpenAPI description when
``../shared/github/openapi_subset_needed_endpoints.json`` is present (method,
path template, path/query parameter types, JSON body against the requestBody
schema with jsonschema; without the file it still serves, unvalidated), and
can be scripted to answer with errors.

API::

    from tests.publishing.github.fake_github import FakeGitHub

    fake = FakeGitHub(owner="octo-org", repo="octo-repo", token="ghs_x")  # all optional
    fake.start()                    # -> fake; binds 127.x.y.z, port 0, daemon thread
    fake.url                        # "http://127.x.y.z:<port>": api_url / GITHUB_API_URL
    fake.repository                 # "octo-org/octo-repo": GITHUB_REPOSITORY
    fake.add_pull(7, head_sha="ab12...", files=["a.yml", ("new.yml", "old.yml")], fork=False)
    fake.push(7, "cd34...")         # the PR's head moves (a newer push)
    fake.add_comment(7, "hi", login="octocat")   # -> the comment dict
    fake.comments(7)                # comments on #7, ascending id (dicts, see below)
    fake.state                      # FakeState: .pulls {n: dict}, .comments {id: dict}, .statuses [dict]
    fake.requests                   # [Recorded(method, path, query, headers, body, json, status)]
    fake.requests_to("POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments")
    fake.script_error("/repos/{owner}/{repo}/pulls/{pull_number}", 500, method="GET", times=2)
    fake.script_rate_limit(path, retry_after=1)          # 429 + retry-after
    fake.script_rate_limit(path, reset_in=30)            # 403 + x-ratelimit-remaining: 0 / reset
    fake.script_secondary_limit(path)                    # 403 "secondary rate limit", no header
    fake.script_integration_error(path)                  # 403 "Resource not accessible by integration"
    fake.script_disconnect(path)                         # close the socket without answering
    fake.script_lost_answer(path, method="POST")         # apply the request, then close without answering
    fake.script_answer(path, None, method="GET")         # answer 200 with this JSON (here null), whatever it is
    held = fake.script_hold(path, method="PATCH")        # the next matching request waits until held.release()
    held.arrived.wait(30); ...; held.release()           # (held.arrived is set when it came in)
    fake.list_lag = 2.5             # a comment is listed only 2.5 s (of fake.clock) after it was made
    fake.clock = ftime.clock        # the clock list_lag counts in (default time.monotonic)
    fake.read_only = True           # every write answers 403 integration (a fork PR's token)
    fake.user_login = "octocat"     # GET /user answers this login (default None: 403 like GITHUB_TOKEN)
    fake.token_login                # author of comments the client writes ("github-actions[bot]")
    fake.validation_errors          # problems found in requests; fake.assert_valid() raises on any
    fake.validating                 # True when the OpenAPI file was found
    fake.now                        # epoch seconds used for x-ratelimit-reset (settable)
    fake.stop()

It is also a context manager (``with FakeGitHub() as fake: ...``).

Script paths are exact paths, OpenAPI templates (``{owner}``, ``{repo}``
... match one segment), or ``"*"``; ``method=None`` matches any method; each
script answers the next ``times`` matching requests. A request that fails
validation is answered 422 (400 for malformed JSON, 404 for an unknown
route) and recorded in ``validation_errors``.

State dicts: a pull is ``{"number", "head_sha", "base_sha", "head_ref",
"base_ref", "files": [{"filename", "previous_filename"?}], "fork"}``; a
comment is ``{"id", "issue_number", "body", "login", "created_at",
"updated_at"}``; a status is ``{"id", "sha", "state", "context",
"description", "target_url"}``.
"""

from __future__ import annotations

import json
import re
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.support.loopback import loopback_address

try:  # the tests' helper; absent when the module is vendored elsewhere
    from tests.shared_data import GITHUB as _GITHUB_SHARED
except Exception:  # pragma: no cover
    _GITHUB_SHARED = Path(__file__).resolve().parents[4] / "shared" / "github"

SPEC_PATH = _GITHUB_SHARED / "openapi_subset_needed_endpoints.json"
INTEGRATION_MESSAGE = "Resource not accessible by integration"
COMMENT_LIMIT = 65_536
DESCRIPTION_LIMIT = 140


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-case names
    body: bytes
    json: Any
    status: int | None = None  # what the fake answered (None: connection dropped)

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


@dataclass
class FakeState:
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    comments: dict[int, dict[str, Any]] = field(default_factory=dict)
    statuses: list[dict[str, Any]] = field(default_factory=list)
    next_id: int = 1_000_001


LOST_ANSWER = -1


class _Sink:
    """A handler that swallows the answer (for script_lost_answer)."""

    def __init__(self) -> None:
        import io

        self.wfile = io.BytesIO()

    def send_response(self, *args: Any) -> None:
        pass

    def send_header(self, *args: Any) -> None:
        pass

    def end_headers(self) -> None:
        pass


@dataclass
class _Script:
    method: str | None
    pattern: re.Pattern[str]
    status: int | None  # None: drop the connection
    headers: dict[str, str]
    body: Any
    remaining: int
    raw: bool = False  # body is sent as it is, None as JSON null


class Held:
    """A request the fake holds before it applies it (a write the network delays), until release()."""

    def __init__(self, method: str | None, pattern: re.Pattern[str]):
        self.method = method
        self.pattern = pattern
        self.arrived = threading.Event()
        self._released = threading.Event()
        self.taken = False

    def release(self) -> None:
        self._released.set()

    def wait(self) -> None:
        self.arrived.set()
        self._released.wait(120)  # never hang a test for ever


def _template_regex(template: str) -> re.Pattern[str]:
    if template == "*":
        return re.compile(r".*")
    parts = re.split(r"(\{[^/{}]+\})", template)
    return re.compile("".join("[^/]+" if p.startswith("{") and p.endswith("}") else re.escape(p) for p in parts))


# ---------------------------------------------------------------------- OpenAPI -> jsonschema


class _Spec:
    """Operations of the OpenAPI subset, with schemas converted to JSON Schema (nullable, $ref)."""

    def __init__(self, document: dict[str, Any]):
        self.doc = document
        self.operations: list[tuple[str, str, re.Pattern[str], dict[str, Any]]] = []
        for template, item in document.get("paths", {}).items():
            for method, op in item.items():
                if method in ("get", "post", "patch", "put", "delete") and isinstance(op, dict):
                    pattern = re.compile("".join(
                        f"(?P<{p[1:-1]}>[^/]+)" if p.startswith("{") else re.escape(p)
                        for p in re.split(r"(\{[^/{}]+\})", template)
                    ))
                    self.operations.append((method.upper(), template, pattern, op))

    def resolve(self, node: Any) -> Any:
        while isinstance(node, dict) and "$ref" in node:
            ref = node["$ref"]
            target: Any = self.doc
            for part in ref.lstrip("#/").split("/"):
                target = target[part]
            node = target
        return node

    def to_jsonschema(self, node: Any, seen: tuple[str, ...] = ()) -> Any:
        if isinstance(node, list):
            return [self.to_jsonschema(x, seen) for x in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            ref = node["$ref"]
            if ref in seen:  # recursive schema: accept anything below this point
                return {}
            return self.to_jsonschema(self.resolve(node), seen + (ref,))
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("nullable", "example", "examples", "description", "discriminator", "xml",
                       "externalDocs", "deprecated", "readOnly", "writeOnly") or key.startswith("x-"):
                continue
            if key == "properties":
                out[key] = {k: self.to_jsonschema(v, seen) for k, v in value.items()}
            elif key in ("items", "additionalProperties", "not"):
                out[key] = self.to_jsonschema(value, seen)
            elif key in ("allOf", "anyOf", "oneOf"):
                out[key] = [self.to_jsonschema(v, seen) for v in value]
            else:
                out[key] = value
        if node.get("nullable"):
            return {"anyOf": [out, {"type": "null"}]}
        return out

    def match(self, method: str, path: str) -> tuple[str, dict[str, Any], dict[str, str]] | None | str:
        """(template, operation, path params); the template alone when only the method is wrong; None if no path."""
        path_only = None
        for op_method, template, pattern, op in self.operations:
            m = pattern.fullmatch(path)
            if m:
                if op_method == method:
                    return template, op, m.groupdict()
                path_only = template
        return path_only

    def parameters(self, op: dict[str, Any]) -> list[dict[str, Any]]:
        return [self.resolve(p) for p in op.get("parameters", [])]


def _load_spec() -> _Spec | None:
    try:
        return _Spec(json.loads(SPEC_PATH.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


def _type_ok(value: str, schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    if kind == "integer":
        return re.fullmatch(r"-?\d+", value) is not None
    if kind == "number":
        try:
            float(value)
        except ValueError:
            return False
        return True
    if kind == "boolean":
        return value in ("true", "false")
    if "enum" in schema:
        return value in schema["enum"]
    return True


# ---------------------------------------------------------------------- the fake


class FakeGitHub:
    """See the module docstring for the API."""

    # Routes served, as (method, template). GET /user is not in the OpenAPI subset.
    EXTRA_ROUTES = {("GET", "/user")}

    def __init__(
        self,
        *,
        owner: str = "octo-org",
        repo: str = "octo-repo",
        token: str | None = None,
        token_login: str = "github-actions[bot]",
        validate: bool = True,
        spec_path: Path | None = None,
    ):
        self.owner = owner
        self.repo = repo
        self.token = token
        self.token_login = token_login
        self.user_login: str | None = None
        self.read_only = False
        self.now = float(int(time.time()))
        self.list_lag = 0.0
        self.clock: Callable[[], float] = time.monotonic
        self._holds: list[Held] = []
        self.state = FakeState()
        self.requests: list[Recorded] = []
        self.validation_errors: list[str] = []
        self._scripts: list[_Script] = []
        self._lock = threading.RLock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._spec: _Spec | None = None
        if validate:
            if spec_path is not None:
                try:
                    self._spec = _Spec(json.loads(Path(spec_path).read_text(encoding="utf-8")))
                except (OSError, ValueError):
                    self._spec = None
            else:
                self._spec = _load_spec()
        self._validators: dict[str, Any] = {}

    # ------------------------------------------------------------ lifecycle

    @property
    def validating(self) -> bool:
        return self._spec is not None

    @property
    def repository(self) -> str:
        return f"{self.owner}/{self.repo}"

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("FakeGitHub is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeGitHub:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def _any(self) -> None:
                fake._handle(self)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _any

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            allow_reuse_address = False  # never two listeners on one port (tests/support/loopback.py)

        self._server = Server((loopback_address(), 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------ state helpers

    def _new_id(self) -> int:
        with self._lock:
            value = self.state.next_id
            self.state.next_id += 1
            return value

    @staticmethod
    def _stamp() -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

    def add_pull(
        self,
        number: int,
        head_sha: str,
        *,
        files: list[Any] = (),  # type: ignore[assignment]
        fork: bool = False,
        base_sha: str = "0" * 40,
        head_ref: str = "feature",
        base_ref: str = "main",
        labels: list[str] = (),  # type: ignore[assignment]
        body: str | None = None,
    ) -> dict[str, Any]:
        entries = []
        for f in files:
            if isinstance(f, dict):
                entries.append(dict(f))
            elif isinstance(f, (tuple, list)):
                entries.append({"filename": f[0], "previous_filename": f[1], "status": "renamed"})
            else:
                entries.append({"filename": str(f)})
        pull = {
            "number": int(number), "head_sha": head_sha, "base_sha": base_sha,
            "head_ref": head_ref, "base_ref": base_ref, "files": entries, "fork": fork,
            "labels": list(labels), "body": body,
        }
        with self._lock:
            self.state.pulls[int(number)] = pull
        return pull

    def push(self, number: int, head_sha: str) -> None:
        with self._lock:
            self.state.pulls[int(number)]["head_sha"] = head_sha

    def add_comment(self, number: int, body: str, *, login: str | None = None) -> dict[str, Any]:
        comment = {
            "id": self._new_id(), "issue_number": int(number), "body": body,
            "login": login or self.token_login, "created_at": self._stamp(), "updated_at": self._stamp(),
            "listed_from": self.clock() + self.list_lag,
        }
        with self._lock:
            self.state.comments[comment["id"]] = comment
        return comment

    def comments(self, number: int) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(c) for _, c in sorted(self.state.comments.items()) if c["issue_number"] == int(number)]

    def requests_to(self, method: str | None, path: str) -> list[Recorded]:
        pattern = _template_regex(path)
        return [r for r in list(self.requests) if (method is None or r.method == method.upper())
                and pattern.fullmatch(r.path)]

    def assert_valid(self) -> None:
        if self.validation_errors:
            raise AssertionError("requests GitHub would reject:\n" + "\n".join(self.validation_errors))

    # ------------------------------------------------------------ scripting

    def script_error(
        self,
        path: str,
        status: int | None,
        *,
        method: str | None = None,
        times: int = 1,
        headers: dict[str, str] | None = None,
        message: str | None = None,
        body: Any = None,
    ) -> None:
        """The next ``times`` requests matching (method, path) answer ``status`` (None: drop the connection)."""
        if body is None and status is not None:
            body = {"message": message or f"scripted {status}", "documentation_url": "https://docs.github.com/rest"}
        with self._lock:
            self._scripts.append(_Script(method.upper() if method else None, _template_regex(path), status,
                                         dict(headers or {}), body, int(times)))

    def script_rate_limit(self, path: str, *, method: str | None = None, times: int = 1,
                          retry_after: float | None = None, reset_in: float | None = None,
                          status: int | None = None) -> None:
        """429 with ``retry-after`` (default), or 403 with x-ratelimit-remaining 0 and reset ``now + reset_in``."""
        headers: dict[str, str] = {}
        if reset_in is not None:
            headers.update({"x-ratelimit-limit": "5000", "x-ratelimit-remaining": "0",
                            "x-ratelimit-reset": str(int(self.now + reset_in)), "x-ratelimit-used": "5000"})
            code = status or 403
            message = "API rate limit exceeded for installation ID 1."
        else:
            headers["retry-after"] = str(retry_after if retry_after is not None else 1)
            code = status or 429
            message = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
        self.script_error(path, code, method=method, times=times, headers=headers, message=message)

    def script_secondary_limit(self, path: str, *, method: str | None = None, times: int = 1,
                               status: int = 403) -> None:
        self.script_error(path, status, method=method, times=times, message=(
            "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
            "If you reach out to GitHub Support for help, please include the request ID."))

    def script_integration_error(self, path: str, *, method: str | None = None, times: int = 1) -> None:
        self.script_error(path, 403, method=method, times=times, message=INTEGRATION_MESSAGE)

    def script_answer(self, path: str, payload: Any, *, method: str | None = None, times: int = 1,
                      status: int = 200) -> None:
        """The next ``times`` matching requests answer ``status`` with ``payload`` as JSON (None: ``null``;
        bytes are sent as they are): GitHub, or a proxy in front of it, answering what the API does
        not document."""
        with self._lock:
            self._scripts.append(_Script(method.upper() if method else None, _template_regex(path), status, {},
                                         payload, int(times), raw=True))

    def script_hold(self, path: str, *, method: str | None = None) -> Held:
        """The next matching request is held, unapplied, until the returned ``Held`` is released."""
        held = Held(method.upper() if method else None, _template_regex(path))
        with self._lock:
            self._holds.append(held)
        return held

    def _take_hold(self, method: str, path: str) -> Held | None:
        with self._lock:
            for held in self._holds:
                if not held.taken and (held.method is None or held.method == method) and held.pattern.fullmatch(path):
                    held.taken = True
                    return held
        return None

    def script_disconnect(self, path: str, *, method: str | None = None, times: int = 1) -> None:
        self.script_error(path, None, method=method, times=times)

    def script_lost_answer(self, path: str, *, method: str | None = None, times: int = 1) -> None:
        """The next ``times`` matching requests are applied, and then the connection drops."""
        self.script_error(path, LOST_ANSWER, method=method, times=times, body={})

    def _take_script(self, method: str, path: str) -> _Script | None:
        with self._lock:
            for script in self._scripts:
                if script.remaining > 0 and (script.method is None or script.method == method) \
                        and script.pattern.fullmatch(path):
                    script.remaining -= 1
                    return script
        return None

    # ------------------------------------------------------------ HTTP

    def _rate_headers(self) -> dict[str, str]:
        return {"x-ratelimit-limit": "5000", "x-ratelimit-remaining": "4999",
                "x-ratelimit-reset": str(int(self.now + 3600)), "x-ratelimit-used": "1",
                "x-ratelimit-resource": "core", "x-github-api-version-selected": "2022-11-28"}

    def _send(self, handler: BaseHTTPRequestHandler, record: Recorded, status: int,
              payload: Any = None, headers: dict[str, str] | None = None, raw: bool = False) -> None:
        record.status = status
        if raw:  # as scripted: bytes as they are, anything else as JSON (None: null)
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
        else:
            data = b"" if payload is None or status == 204 else json.dumps(payload).encode("utf-8")
        handler.send_response(status)
        merged = {**self._rate_headers(), **(headers or {})}
        if data:
            merged["Content-Type"] = "application/json; charset=utf-8"
        merged["Content-Length"] = str(len(data))
        for key, value in merged.items():
            handler.send_header(key, value)
        handler.end_headers()
        if data:
            handler.wfile.write(data)

    def _reject(self, handler: BaseHTTPRequestHandler, record: Recorded, status: int, problem: str) -> None:
        self.validation_errors.append(f"{record.method} {record.path}: {problem}")
        self._send(handler, record, status, {"message": "Validation Failed (fake GitHub)", "errors": [problem],
                                             "documentation_url": "https://docs.github.com/rest"})

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        split = urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        parsed: Any = None
        bad_json = False
        if raw:
            try:
                parsed = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                bad_json = True
        record = Recorded(handler.command, split.path, parse_qs(split.query, keep_blank_values=True),
                          {k.lower(): v for k, v in handler.headers.items()}, raw, parsed)
        with self._lock:
            self.requests.append(record)
        try:
            self._dispatch(handler, record, bad_json)
        except Exception as exc:  # a bug in the fake must not hang the client
            self.validation_errors.append(f"{record.method} {record.path}: fake crashed: {exc!r}")
            try:
                self._send(handler, record, 500, {"message": f"fake crashed: {exc!r}"})
            except Exception:
                pass

    def _validate(self, handler: BaseHTTPRequestHandler, record: Recorded, bad_json: bool) -> bool:
        """False when the request was rejected (and answered)."""
        method, path = record.method, record.path
        if bad_json:
            self._reject(handler, record, 400, "body is not JSON")
            return False
        if (method, path) in self.EXTRA_ROUTES:
            return True
        if self._spec is None:
            return True
        found = self._spec.match(method, path)
        if found is None:
            self._reject(handler, record, 404, "no such route in the OpenAPI description")
            return False
        if isinstance(found, str):
            self._reject(handler, record, 404, f"method not allowed on {found}")
            return False
        template, op, path_params = found
        params = self._spec.parameters(op)
        for p in params:
            if p.get("in") == "path" and p["name"] in path_params \
                    and not _type_ok(path_params[p["name"]], p.get("schema", {})):
                self._reject(handler, record, 404,
                             f"path parameter {p['name']}={path_params[p['name']]!r} is not {p['schema'].get('type')}")
                return False
        declared = {p["name"]: p for p in params if p.get("in") == "query"}
        for name, values in record.query.items():
            if name not in declared:
                self._reject(handler, record, 422, f"unknown query parameter {name!r} for {method} {template}")
                return False
            for value in values:
                if not _type_ok(value, declared[name].get("schema", {})):
                    self._reject(handler, record, 422,
                                 f"query parameter {name}={value!r} is not {declared[name]['schema'].get('type')}")
                    return False
        for name, p in declared.items():
            if p.get("required") and name not in record.query:
                self._reject(handler, record, 422, f"missing required query parameter {name!r}")
                return False
        body_spec = op.get("requestBody")
        if body_spec is None:
            if record.body:
                self._reject(handler, record, 422, f"{method} {template} takes no body")
                return False
            return True
        body_spec = self._spec.resolve(body_spec)
        if not record.body:
            if body_spec.get("required"):
                self._reject(handler, record, 422, "missing JSON body")
                return False
            return True
        content_type = (record.header("content-type") or "").split(";")[0].strip()
        if content_type != "application/json":
            self._reject(handler, record, 415, f"Content-Type is {content_type!r}, not application/json")
            return False
        key = f"{method} {template}"
        validator = self._validators.get(key)
        if validator is None:
            import jsonschema

            schema = self._spec.to_jsonschema(body_spec["content"]["application/json"]["schema"])
            validator = jsonschema.Draft7Validator(schema)
            self._validators[key] = validator
        problems = sorted(validator.iter_errors(record.json), key=lambda e: list(e.path))
        if problems:
            self._reject(handler, record, 422, "; ".join(
                f"{'/'.join(map(str, e.path)) or '(body)'}: {e.message}" for e in problems[:5]))
            return False
        return True

    def _dispatch(self, handler: BaseHTTPRequestHandler, record: Recorded, bad_json: bool) -> None:
        if self.token is not None and record.header("authorization") != f"Bearer {self.token}":
            self._send(handler, record, 401, {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"})
            return
        if not self._validate(handler, record, bad_json):
            return
        held = self._take_hold(record.method, record.path)
        if held is not None:
            held.wait()
        script = self._take_script(record.method, record.path)
        if script is not None:
            if script.status == LOST_ANSWER:
                # Applied, then the answer is lost: the route runs against a sink, the client sees
                # the connection drop (what a POST through a flaky proxy can leave behind).
                for method, pattern, fn in self._routes():
                    m = re.fullmatch(pattern, record.path) if method == record.method else None
                    if m:
                        fn(_Sink(), record, *m.groups())
                        break
                script = _Script(script.method, script.pattern, None, {}, None, 0)
            if script.status is None:
                record.status = None
                handler.close_connection = True
                try:  # answer nothing: the client sees the connection drop
                    import socket

                    handler.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return
            self._send(handler, record, script.status, script.body, script.headers, raw=script.raw)
            return
        if self.read_only and record.method in ("POST", "PATCH", "PUT", "DELETE"):
            self._send(handler, record, 403, {"message": INTEGRATION_MESSAGE,
                                             "documentation_url": "https://docs.github.com/rest", "status": "403"})
            return
        for method, pattern, fn in self._routes():
            if method == record.method:
                m = re.fullmatch(pattern, record.path)
                if m:
                    fn(handler, record, *m.groups())
                    return
        self._send(handler, record, 404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})

    def _routes(self) -> list[tuple[str, str, Callable[..., None]]]:
        repo = re.escape(f"/repos/{self.owner}/{self.repo}")
        return [
            ("GET", repo + r"/pulls/(\d+)", self._get_pull),
            ("GET", repo + r"/pulls/(\d+)/files", self._list_files),
            ("GET", repo + r"/issues/(\d+)/comments", self._list_comments),
            ("POST", repo + r"/issues/(\d+)/comments", self._create_comment),
            ("PATCH", repo + r"/issues/comments/(\d+)", self._update_comment),
            ("DELETE", repo + r"/issues/comments/(\d+)", self._delete_comment),
            ("POST", repo + r"/statuses/([^/]+)", self._create_status),
            ("GET", repo + r"/commits/([^/]+)/status", self._combined_status),
            ("GET", r"/rate_limit", self._rate_limit),
            ("GET", r"/user", self._user),
        ]

    # ------------------------------------------------------------ JSON shapes

    def _user_json(self, login: str) -> dict[str, Any]:
        base = f"https://api.github.com/users/{login}"
        kind = "Bot" if login.endswith("[bot]") else "User"
        uid = zlib.crc32(login.encode("utf-8")) % 10_000_000
        return {
            "login": login, "id": uid, "node_id": f"U_{uid}",
            "avatar_url": "https://avatars.githubusercontent.com/in/15368?v=4", "gravatar_id": "",
            "url": base, "html_url": f"https://github.com/{login}", "followers_url": base + "/followers",
            "following_url": base + "/following{/other_user}", "gists_url": base + "/gists{/gist_id}",
            "starred_url": base + "/starred{/owner}{/repo}", "subscriptions_url": base + "/subscriptions",
            "organizations_url": base + "/orgs", "repos_url": base + "/repos", "events_url": base + "/events{/privacy}",
            "received_events_url": base + "/received_events", "type": kind, "site_admin": False,
        }

    def _comment_json(self, comment: dict[str, Any]) -> dict[str, Any]:
        repo_api = f"https://api.github.com/repos/{self.repository}"
        number = comment["issue_number"]
        return {
            "id": comment["id"], "node_id": f"IC_{comment['id']}",
            "url": f"{repo_api}/issues/comments/{comment['id']}",
            "html_url": f"https://github.com/{self.repository}/pull/{number}#issuecomment-{comment['id']}",
            "issue_url": f"{repo_api}/issues/{number}",
            "body": comment["body"], "user": self._user_json(comment["login"]),
            "created_at": comment["created_at"], "updated_at": comment["updated_at"],
            "author_association": "NONE",
        }

    def _pull_json(self, pull: dict[str, Any]) -> dict[str, Any]:
        base_repo = {"id": 1, "name": self.repo, "full_name": self.repository, "fork": False,
                     "owner": self._user_json(self.owner)}
        head_owner = "forker" if pull["fork"] else self.owner
        head_repo = {"id": 2 if pull["fork"] else 1, "name": self.repo, "full_name": f"{head_owner}/{self.repo}",
                     "fork": bool(pull["fork"]), "owner": self._user_json(head_owner)}
        number = pull["number"]
        return {
            "url": f"https://api.github.com/repos/{self.repository}/pulls/{number}",
            "id": 10_000 + number, "node_id": f"PR_{number}", "number": number, "state": "open",
            "html_url": f"https://github.com/{self.repository}/pull/{number}", "title": f"PR {number}",
            "user": self._user_json(head_owner), "draft": False, "merged": False,
            "head": {"label": f"{head_owner}:{pull['head_ref']}", "ref": pull["head_ref"], "sha": pull["head_sha"],
                     "repo": head_repo, "user": self._user_json(head_owner)},
            "base": {"label": f"{self.owner}:{pull['base_ref']}", "ref": pull["base_ref"], "sha": pull["base_sha"],
                     "repo": base_repo, "user": self._user_json(self.owner)},
            "changed_files": len(pull["files"]),
            "body": pull.get("body"),
            "labels": [{"id": 100 + i, "name": name, "color": "ededed", "default": False}
                       for i, name in enumerate(pull.get("labels") or [])],
        }

    def _file_json(self, pull: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
        name = entry["filename"]
        blob = f"https://github.com/{self.repository}/blob/{pull['head_sha']}/{name}"
        out = {
            "sha": "1" * 40, "filename": name, "status": entry.get("status", "modified"),
            "additions": 1, "deletions": 1, "changes": 2, "blob_url": blob,
            "raw_url": blob.replace("/blob/", "/raw/"),
            "contents_url": f"https://api.github.com/repos/{self.repository}/contents/{name}?ref={pull['head_sha']}",
            "patch": "@@ -1 +1 @@\n-a\n+b",
        }
        if entry.get("previous_filename"):
            out["previous_filename"] = entry["previous_filename"]
        return out

    def _status_json(self, status: dict[str, Any]) -> dict[str, Any]:
        return {
            "url": f"https://api.github.com/repos/{self.repository}/statuses/{status['sha']}",
            "avatar_url": None, "id": status["id"], "node_id": f"SC_{status['id']}",
            "state": status["state"], "description": status["description"], "target_url": status["target_url"],
            "context": status["context"], "created_at": status["created_at"], "updated_at": status["created_at"],
            "creator": self._user_json(self.token_login),
        }

    # ------------------------------------------------------------ pagination

    def _page(self, handler: BaseHTTPRequestHandler, record: Recorded, items: list[Any]) -> None:
        try:
            per_page = min(max(int(record.query.get("per_page", ["30"])[0]), 1), 100)
            page = max(int(record.query.get("page", ["1"])[0]), 1)
        except ValueError:
            self._send(handler, record, 422, {"message": "bad pagination"})
            return
        last = max((len(items) + per_page - 1) // per_page, 1)
        chunk = items[(page - 1) * per_page: page * per_page]
        links = []

        def link(n: int, rel: str) -> str:
            return f'<{self.url}{record.path}?per_page={per_page}&page={n}>; rel="{rel}"'

        if page > 1:
            links += [link(page - 1, "prev"), link(1, "first")]
        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        self._send(handler, record, 200, chunk, {"Link": ", ".join(links)} if links else None)

    # ------------------------------------------------------------ handlers

    def _pull_or_404(self, handler: BaseHTTPRequestHandler, record: Recorded, number: str) -> dict[str, Any] | None:
        pull = self.state.pulls.get(int(number))
        if pull is None:
            self._send(handler, record, 404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})
        return pull

    def _get_pull(self, handler, record, number):  # type: ignore[no-untyped-def]
        pull = self._pull_or_404(handler, record, number)
        if pull is not None:
            self._send(handler, record, 200, self._pull_json(pull))

    def _list_files(self, handler, record, number):  # type: ignore[no-untyped-def]
        pull = self._pull_or_404(handler, record, number)
        if pull is not None:
            self._page(handler, record, [self._file_json(pull, e) for e in pull["files"]])

    def _list_comments(self, handler, record, number):  # type: ignore[no-untyped-def]
        if int(number) not in self.state.pulls:
            self._pull_or_404(handler, record, number)
            return
        now = self.clock()
        self._page(handler, record, [self._comment_json(c) for c in self.comments(int(number))
                                     if c.get("listed_from", 0.0) <= now])

    def _too_long(self, handler, record, body: str) -> bool:  # type: ignore[no-untyped-def]
        if len(body) > COMMENT_LIMIT:
            self._send(handler, record, 422, {"message": "Validation Failed", "errors": [
                {"resource": "IssueComment", "code": "custom", "field": "body",
                 "message": f"body is too long (maximum is {COMMENT_LIMIT} characters)"}],
                "documentation_url": "https://docs.github.com/rest/issues/comments"})
            return True
        return False

    def _create_comment(self, handler, record, number):  # type: ignore[no-untyped-def]
        if int(number) not in self.state.pulls:
            self._pull_or_404(handler, record, number)
            return
        body = (record.json or {}).get("body", "")
        if self._too_long(handler, record, body):
            return
        comment = self.add_comment(int(number), body, login=self.token_login)
        self._send(handler, record, 201, self._comment_json(comment),
                   {"Location": self._comment_json(comment)["url"]})

    def _update_comment(self, handler, record, comment_id):  # type: ignore[no-untyped-def]
        with self._lock:
            comment = self.state.comments.get(int(comment_id))
            if comment is None:
                self._send(handler, record, 404, {"message": "Not Found"})
                return
            body = (record.json or {}).get("body", "")
            if self._too_long(handler, record, body):
                return
            comment["body"] = body
            comment["updated_at"] = self._stamp()
            payload = self._comment_json(comment)
        self._send(handler, record, 200, payload)

    def _delete_comment(self, handler, record, comment_id):  # type: ignore[no-untyped-def]
        with self._lock:
            removed = self.state.comments.pop(int(comment_id), None)
        if removed is None:
            self._send(handler, record, 404, {"message": "Not Found"})
        else:
            self._send(handler, record, 204)

    def _create_status(self, handler, record, sha):  # type: ignore[no-untyped-def]
        data = record.json or {}
        description = data.get("description")
        if description is not None and len(description) > DESCRIPTION_LIMIT:
            self._send(handler, record, 422, {"message": "Validation Failed", "errors": [
                {"resource": "Status", "code": "custom", "field": "description",
                 "message": f"description is too long (maximum is {DESCRIPTION_LIMIT} characters)"}]})
            return
        status = {"id": self._new_id(), "sha": sha, "state": data.get("state"),
                  "context": data.get("context", "default"), "description": description,
                  "target_url": data.get("target_url"), "created_at": self._stamp()}
        with self._lock:
            self.state.statuses.append(status)
        self._send(handler, record, 201, self._status_json(status))

    def _combined_status(self, handler, record, ref):  # type: ignore[no-untyped-def]
        latest: dict[str, dict[str, Any]] = {}
        for status in self.state.statuses:
            if status["sha"] == ref:
                latest[status["context"].lower()] = status
        states = [s["state"] for s in latest.values()]
        overall = ("failure" if any(s in ("failure", "error") for s in states)
                   else "pending" if not states or "pending" in states else "success")
        self._send(handler, record, 200, {
            "state": overall, "sha": ref, "total_count": len(latest),
            "statuses": [self._status_json(s) for s in latest.values()],
            "repository": {"full_name": self.repository}, "commit_url": "", "url": "",
        })

    def _rate_limit(self, handler, record):  # type: ignore[no-untyped-def]
        core = {"limit": 5000, "used": 1, "remaining": 4999, "reset": int(self.now + 3600)}
        self._send(handler, record, 200,
                   {"resources": {"core": core, "search": dict(core, limit=30, remaining=30, used=0)},
                                          "rate": core})

    def _user(self, handler, record):  # type: ignore[no-untyped-def]
        if self.user_login is None:
            self._send(handler, record, 403, {"message": INTEGRATION_MESSAGE,
                                             "documentation_url": "https://docs.github.com/rest/users/users#get-the-authenticated-user",
                                             "status": "403"})
        else:
            self._send(handler, record, 200, self._user_json(self.user_login))
