"""A real HTTP server on loopback for the HTTP runner's tests, and faults to inject into it.

:func:`serve` runs any WSGI app on a threaded stdlib ``wsgiref`` server (port 0) and yields its
base URL. :class:`Faults` is WSGI middleware around any app (a small fixed-hits app here, the
demo's search service): it tells the queries apart by a key read from each request
(:func:`json_field`, :func:`query_param`), counts each query's attempts, records every request
(time, key, attempt, headers, body), and answers the attempts its plan names with a fault
instead of (or made from) the inner app's answer. A plan maps a query's key to one
:class:`Fault` (every attempt) or to a list (attempt 1, 2, ...; ``None`` passes through).

Faults: 429 with Retry-After (seconds or an HTTP date), any status (500/502/503, 301, 400), an
HTML error page, slow (sleeps before answering), slow drip (the answer a byte at a time), a
dropped connection (a Content-Length larger than what is sent, then the connection closes), an
answer that is not JSON, a hit without an id, a string score, a NaN score, duplicate ids, a huge
body.
"""

from __future__ import annotations

import email.utils
import json
import socketserver
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from tests.support.loopback import loopback_address

Environ = dict[str, Any]
StartResponse = Callable[..., Any]
App = Callable[[Environ, StartResponse], Iterable[bytes]]


# --------------------------------------------------------------------------- the server


class _ThreadingServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = False  # never two listeners on one port (tests/support/loopback.py)


class _QuietHandler(WSGIRequestHandler):
    def get_environ(self) -> dict[str, Any]:
        environ = super().get_environ()
        environ["RAW_URI"] = self.path  # PATH_INFO is percent-decoded: what was sent is this
        return environ

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        pass


@contextmanager
def serve(app: App) -> Iterator[str]:
    """``app`` served on loopback (tests/support/loopback.py: an address of its own, a free port)
    while the block runs; yields ``http://127.x.y.z:PORT``."""
    server = make_server(loopback_address(), 0, app, server_class=_ThreadingServer, handler_class=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://{server.server_address[0]}:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)


def read_body(environ: Environ) -> bytes:
    length = int(environ.get("CONTENT_LENGTH") or 0)
    return environ["wsgi.input"].read(length) if length else b""


# --------------------------------------------------------------------------- a small inner app


def fixed_hits_app(hits: Mapping[str, Sequence[tuple[str, float]]], key: Callable[[Environ, bytes], str | None],
                   took: int | None = 3) -> App:
    """Answers each query (by ``key``) with its fixed hits in Elasticsearch's shape:
    ``{"took": 3, "hits": {"hits": [{"_id": ..., "_score": ...}]}}``; an unknown query: no hits."""
    def app(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        body = read_body(environ)
        rows = hits.get(key(environ, body) or "", ())
        answer: dict[str, Any] = {"hits": {"hits": [{"_id": doc, "_score": score} for doc, score in rows]}}
        if took is not None:
            answer["took"] = took
        data = json.dumps(answer).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
        return [data]

    return app


def json_field(name: str) -> Callable[[Environ, bytes], str | None]:
    """The key of a request: field ``name`` at the top of its JSON body."""
    def key(environ: Environ, body: bytes) -> str | None:  # noqa: ARG001
        try:
            value = json.loads(body).get(name)
        except (ValueError, AttributeError):
            return None
        return None if value is None else str(value)

    return key


def query_param(name: str) -> Callable[[Environ, bytes], str | None]:
    """The key of a request: its query-string parameter ``name``."""
    def key(environ: Environ, body: bytes) -> str | None:  # noqa: ARG001
        values = urllib.parse.parse_qs(environ.get("QUERY_STRING", "")).get(name)
        return values[0] if values else None

    return key


# --------------------------------------------------------------------------- faults


@dataclass(frozen=True)
class Fault:
    """One way to answer an attempt badly (the constructors below make them)."""
    kind: str
    status: int = 200
    seconds: float = 0.0
    retry_after: str | None = None
    size: int = 0


def too_many_requests(retry_after: float | None = None, *, http_date: bool = False) -> Fault:
    """429, with ``Retry-After`` in seconds or (``http_date``) as the date that many seconds ahead."""
    if retry_after is None:
        return Fault("status", 429)
    text = email.utils.formatdate(time.time() + retry_after, usegmt=True) if http_date else f"{retry_after:g}"
    return Fault("status", 429, retry_after=text)


def status(code: int, retry_after: str | None = None) -> Fault:
    return Fault("status", code, retry_after=retry_after)


def html_error(code: int = 502) -> Fault:
    return Fault("html", code)


def slow(seconds: float) -> Fault:
    """The inner answer, after ``seconds``."""
    return Fault("slow", seconds=seconds)


def drip(seconds_per_byte: float) -> Fault:
    """The inner answer one byte at a time, ``seconds_per_byte`` apart."""
    return Fault("drip", seconds=seconds_per_byte)


DROPPED = Fault("dropped")  # a Content-Length larger than what is sent, then the connection closes
NOT_JSON = Fault("not_json")
NO_ID = Fault("no_id")
STRING_SCORE = Fault("string_score")
NAN_SCORE = Fault("nan_score")
DUPLICATE_IDS = Fault("duplicate_ids")


def huge(size: int) -> Fault:
    """A JSON answer of ``size`` bytes (hits padded with a long field)."""
    return Fault("huge", size=size)


Plan = Mapping[str, "Fault | Sequence[Fault | None]"]


@dataclass(frozen=True)
class Seen:
    """One request the server received."""
    at: float  # time.monotonic() on arrival
    key: str | None
    attempt: int  # 1 for the query's first request
    headers: Mapping[str, str]
    path: str
    body: bytes


@dataclass
class Faults:
    """WSGI middleware: ``app`` with the faults of ``plan`` injected (module docstring).
    ``hits``, ``id`` and ``score`` name the answer's shape, for the faults that edit a hit."""
    app: App
    plan: Plan
    key: Callable[[Environ, bytes], str | None]
    hits: tuple[str, ...] = ("hits", "hits")
    id: str = "_id"
    score: str = "_score"
    seen: list[Seen] = field(default_factory=list)
    _attempts: dict[str | None, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def requests_of(self, key: str) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.key == key]

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        body = read_body(environ)
        key = self.key(environ, body)
        headers = {name[5:].replace("_", "-").title(): value for name, value in environ.items()
                   if name.startswith("HTTP_")}
        if environ.get("CONTENT_TYPE"):
            headers["Content-Type"] = environ["CONTENT_TYPE"]
        with self._lock:
            attempt = self._attempts[key] = self._attempts.get(key, 0) + 1
            path = environ.get("RAW_URI", "")
            self.seen.append(Seen(time.monotonic(), key, attempt, headers, path, body))
        fault = self._fault(key, attempt)
        inner = {**environ, "wsgi.input": _Replay(body), "CONTENT_LENGTH": str(len(body))}
        if fault is None:
            return self.app(inner, start_response)
        return _inject(fault, self, inner, start_response)

    def _fault(self, key: str | None, attempt: int) -> Fault | None:
        planned = self.plan.get(key or "")
        if planned is None or isinstance(planned, Fault):
            return planned
        return planned[attempt - 1] if attempt <= len(planned) else None


class _Replay:
    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def read(self, size: int = -1) -> bytes:
        end = len(self.data) if size < 0 else self.at + size
        out, self.at = self.data[self.at:end], min(end, len(self.data))
        return out


def _inner_answer(faults: Faults, environ: Environ) -> tuple[str, list[tuple[str, str]], bytes]:
    captured: dict[str, Any] = {}

    def start(status_line: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:  # noqa: ARG001
        captured["status"], captured["headers"] = status_line, headers

    data = b"".join(faults.app(environ, start))
    return captured["status"], captured["headers"], data


def _inject(fault: Fault, faults: Faults, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    if fault.kind == "status":
        extra = [("Retry-After", fault.retry_after)] if fault.retry_after is not None else []
        if 300 <= fault.status < 400:
            extra.append(("Location", "http://127.0.0.1:9/elsewhere"))
        data = json.dumps({"error": f"fault {fault.status}"}).encode()
        start_response(f"{fault.status} Fault", [("Content-Type", "application/json"),
                                                 ("Content-Length", str(len(data))), *extra])
        return [data]
    if fault.kind == "html":
        data = b"<html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1></body></html>"
        start_response(f"{fault.status} Fault", [("Content-Type", "text/html"), ("Content-Length", str(len(data)))])
        return [data]
    if fault.kind == "not_json":
        return _answer(start_response, b"results: d1 d2 d3\n", "text/plain")
    status_line, headers, data = _inner_answer(faults, environ)
    if fault.kind == "slow":
        time.sleep(fault.seconds)
        start_response(status_line, headers)
        return [data]
    if fault.kind == "drip":
        start_response(status_line, [(k, v) for k, v in headers if k.lower() != "content-length"])
        return _dripping(data, fault.seconds)
    if fault.kind == "dropped":
        start_response(status_line, [(k, v) for k, v in headers if k.lower() != "content-length"]
                       + [("Content-Length", str(len(data) + 1000))])
        return [data[: len(data) // 2]]
    return _answer(start_response, _edited(fault, faults, json.loads(data)))


def _answer(start_response: StartResponse, data: bytes, content_type: str = "application/json") -> list[bytes]:
    start_response("200 OK", [("Content-Type", content_type), ("Content-Length", str(len(data)))])
    return [data]


def _dripping(data: bytes, seconds: float) -> Iterator[bytes]:
    for index in range(len(data)):
        yield data[index:index + 1]
        time.sleep(seconds)


def _edited(fault: Fault, faults: Faults, answer: Any) -> bytes:
    """The inner answer with its hits edited as ``fault`` says (the JSON text, NaN included)."""
    hits = answer
    for part in faults.hits:
        hits = hits[part]
    if not hits:
        hits.append({faults.id: "filler", faults.score: 1.0})
    if fault.kind == "no_id":
        del hits[-1][faults.id]
    elif fault.kind == "string_score":
        hits[-1][faults.score] = str(hits[-1][faults.score])
    elif fault.kind == "nan_score":
        hits[-1][faults.score] = float("nan")  # json.dumps writes NaN, which a JSON parser may read
    elif fault.kind == "duplicate_ids":
        hits.append(dict(hits[0]))
    elif fault.kind == "huge":
        hits[0]["padding"] = "x" * fault.size
    return json.dumps(answer).encode()
