"""The reference retriever served over HTTP: a real search service for ``runner.type: http``.

The demo (``retrieval-gate demo --runner http``) and the HTTP runner's tests run the gate against
it. One request is one query, ``POST /search`` with a JSON body::

    {"query": "how do I rotate a key", "query_id": "q17", "corpus": "/path/corpus-v2.jsonl",
     "config": {...the retrieval config...}, "size": 100, "seed": 0}

``config`` is the retrieval config object the reference runner reads
(:func:`gate.runs.reference.settings_from_config`), ``corpus`` the gate config's corpus as the
runner's ``{corpus}`` gives it (with ``ingestion.parser`` the snapshot beside it is indexed, as in
process); ``size`` (optional) cuts the ranking, ``seed`` (optional, default 0) is the HNSW
insertion order's, ``query_id`` (optional) is not used for ranking. The answer::

    {"hits": [{"id": "page#p3", "score": 0.0312}, ...], "took_ms": 3.481}

holds exactly what the in-process ``reference`` runner ranks for that query: the same ids, scores
and order, and as ``took_ms`` its *modelled* latency (:mod:`gate.runs.reference_latency`), so a run
through the service has the in-process run's numbers whatever the machine, its load or the
number of requests in flight. That holds because the reference retriever ranks each query on its
own (:class:`gate.runs.reference.Searcher`): one query ranked alone has the bits of its row in a
batch.

What a ranking searches (corpus, BM25 index, fitted embedding model, HNSW index) is built on the
first request for a (corpus snapshot, retrieval settings, seed), once however many requests ask
at the same time, and the last :data:`SEARCHERS_KEPT` are kept. Corpus paths outside the folder
the service was given are refused. A request it cannot answer gets a 4xx JSON ``{"error": ...}``
naming the problem; a failure inside the service a 500 with the error's type, never a traceback.
"""

from __future__ import annotations

import hmac
import json
import socketserver
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from gate.common.errors import InputError
from gate.runs.reference import (
    OPTION_DEFAULTS,
    BuildOnceCache,
    RetrievalSettings,
    Searcher,
    searcher,
    settings_from_config,
    snapshot_path,
)
from gate.runs.reference_latency import QueryWork, modelled_latency_ms
from gate.runs.request import RunnerFailed

__all__ = ["SearchQuery", "SearchApp", "ServedSearch", "make_app", "serve", "SEARCHERS_KEPT", "MAX_BODY_BYTES"]

#: Built searchers kept (an HNSW index of the demo's full-scale corpus is tens of MB).
SEARCHERS_KEPT = 8
#: The largest request body read; a query and a retrieval config are a few kB.
MAX_BODY_BYTES = 1 << 20
#: The largest ``size`` asked for (a search API's page, not an export).
MAX_SIZE = 10_000
FIELDS = ("query", "query_id", "corpus", "config", "size", "seed")

StartResponse = Callable[..., Any]


class BadRequest(Exception):
    """A request the service refuses: its HTTP status and the one-line reason sent back."""

    def __init__(self, status: str, message: str, headers: Iterable[tuple[str, str]] = ()):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = tuple(headers)


@dataclass(frozen=True)
class SearchQuery:
    """One request, read and checked."""

    query: str
    corpus: Path  # the snapshot indexed: the request's corpus, with ingestion.parser's beside it
    settings: RetrievalSettings
    size: int | None
    seed: int


def _integer(body: Mapping[str, Any], name: str, low: int, high: int) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise BadRequest("400 Bad Request", f"'{name}' must be an integer in [{low}, {high}], got {value!r:.80}")
    return value


def _inside(path: Path, root: Path) -> Path:
    resolved = path.resolve()
    if not resolved.is_relative_to(root):
        raise BadRequest("400 Bad Request", f"'corpus' {str(path)!r:.200} is outside the folder the service indexes")
    return resolved


def read_query(body: bytes, corpus_root: Path, snapshot_pattern: str) -> SearchQuery:
    """The request body as a :class:`SearchQuery`, or :class:`BadRequest` naming what is wrong."""
    try:
        data = json.loads(body.decode("utf-8"), parse_constant=lambda name: _refuse_constant(name))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BadRequest("400 Bad Request", f"the body is not JSON: {error}") from None
    if not isinstance(data, dict):
        raise BadRequest("400 Bad Request", f"the body must be a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise BadRequest("400 Bad Request", f"unknown field(s) {', '.join(repr(u) for u in unknown):.200} "
                                            f"(known: {', '.join(FIELDS)})")
    for name in ("query", "corpus"):
        if not isinstance(data.get(name), str):
            raise BadRequest("400 Bad Request", f"'{name}' must be a string")
    if "query_id" in data and not isinstance(data["query_id"], str):
        raise BadRequest("400 Bad Request", "'query_id' must be a string")
    config = data.get("config")
    if not isinstance(config, dict):
        raise BadRequest("400 Bad Request", "'config' must be the retrieval config, a JSON object")
    size = _integer(data, "size", 1, MAX_SIZE)
    seed = _integer(data, "seed", 0, 2 ** 63 - 1)
    try:
        settings = settings_from_config(config, "request 'config'")
        named = Path(data["corpus"]) if Path(data["corpus"]).is_absolute() else corpus_root / data["corpus"]
        _inside(named, corpus_root)
        corpus = _inside(Path(snapshot_path(str(named), settings.parser, snapshot_pattern)), corpus_root)
    except InputError as error:
        raise BadRequest("400 Bad Request", str(error)) from None
    if not corpus.is_file():
        raise BadRequest("400 Bad Request", f"'corpus' {data['corpus']!r:.200} is not a corpus file")
    return SearchQuery(data["query"], corpus, settings, size, 0 if seed is None else seed)


def _refuse_constant(name: str) -> Any:
    raise BadRequest("400 Bad Request", f"the body holds {name}, which is not JSON")


class SearchApp:
    """The WSGI application (:func:`make_app`)."""

    def __init__(self, corpus_root: Path, options: Mapping[str, Any] | None = None, token: str | None = None):
        self.corpus_root = Path(corpus_root).resolve()
        self.options = {**OPTION_DEFAULTS, **dict(options or {})}
        self._token = token
        self._searchers = BuildOnceCache(SEARCHERS_KEPT)
        self._lock = threading.Lock()
        self.requests = 0  # answered or refused: how many the service saw
        self.builds = 0  # searchers built (a test checks concurrent first requests build one)

    def __call__(self, environ: Mapping[str, Any], start_response: StartResponse) -> list[bytes]:
        with self._lock:
            self.requests += 1
        headers: tuple[tuple[str, str], ...] = ()
        try:
            status, payload = "200 OK", self._answer(environ)
        except BadRequest as refused:
            status, payload, headers = refused.status, {"error": refused.message}, refused.headers
        except (InputError, RunnerFailed) as error:  # a corpus that cannot be indexed, faiss refusing its level
            status, payload = "400 Bad Request", {"error": str(error)}
        except Exception as error:  # noqa: BLE001 - a 500 that names the error, never a traceback page
            status, payload = "500 Internal Server Error", {"error": f"{type(error).__name__}: {error}"}
        body = json.dumps(payload, ensure_ascii=True, allow_nan=False).encode("ascii")
        start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body))),
                                *headers])
        return [body]

    def _answer(self, environ: Mapping[str, Any]) -> dict[str, Any]:
        if environ.get("PATH_INFO") != "/search":
            raise BadRequest("404 Not Found", f"no such path {str(environ.get('PATH_INFO'))!r:.200}: POST /search")
        if environ.get("REQUEST_METHOD") != "POST":
            raise BadRequest("405 Method Not Allowed", "POST /search with a JSON body", [("Allow", "POST")])
        if self._token is not None:
            sent = str(environ.get("HTTP_AUTHORIZATION", ""))
            if not hmac.compare_digest(sent.encode("utf-8", "replace"), f"Bearer {self._token}".encode()):
                raise BadRequest("401 Unauthorized", "missing or wrong Authorization header",
                                 [("WWW-Authenticate", "Bearer")])
        query = read_query(_body(environ), self.corpus_root, str(self.options["snapshot"]))
        work: dict[str, QueryWork] = {}
        ranked = self._searcher(query).rank([("q", query.query)], work)["q"]
        hits = ranked if query.size is None else ranked[:query.size]
        return {"hits": [{"id": doc, "score": score} for doc, score in hits],
                "took_ms": modelled_latency_ms(work["q"])}

    def _searcher(self, query: SearchQuery) -> Searcher:
        stat = query.corpus.stat()  # an edited corpus file is another key: never searched stale
        key = (str(query.corpus), stat.st_ino, stat.st_size, stat.st_mtime_ns, query.settings, query.seed)

        def build() -> Searcher:
            with self._lock:
                self.builds += 1
            return searcher(query.settings, str(query.corpus), query.seed, self.options)

        return self._searchers.get_or(key, build)


def _body(environ: Mapping[str, Any]) -> bytes:
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise BadRequest("400 Bad Request", "Content-Length is not a number") from None
    if length > MAX_BODY_BYTES:
        raise BadRequest("413 Content Too Large", f"the body is {length} bytes; at most {MAX_BODY_BYTES}")
    if length <= 0:
        raise BadRequest("400 Bad Request", "the body is empty: POST the query as JSON with a Content-Length")
    return environ["wsgi.input"].read(length)


def make_app(corpus_root: Path, options: Mapping[str, Any] | None = None, token: str | None = None) -> SearchApp:
    """The reference retriever as a WSGI application searching the corpora under ``corpus_root``.

    ``options``: the reference runner's (``runner.options``: snapshot pattern, HNSW build
    parameters), so the service ranks as ``ReferenceRunner(options)`` does. ``token``: when given,
    every request must carry ``Authorization: Bearer <token>`` (else 401).
    """
    return SearchApp(corpus_root, options, token)


class _ThreadingWSGIServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True  # a request in flight does not keep the process alive after stop()
    request_queue_size = 64  # the runner's concurrency, and then some
    # HTTPServer sets SO_REUSEADDR, which is for rebinding a fixed port still in TIME_WAIT: a port the
    # kernel picks never needs it, and a network stack that lets two such sockets share a port the
    # kernel picked (gVisor's did: google/gvisor#6209) would hand the runner's requests to another server.
    allow_reuse_address = False


class _QuietHandler(WSGIRequestHandler):
    """No access log on stderr: the demo's output is the gate's, and a request line is no one's business."""

    timeout = 60  # seconds a connection may stall (a body shorter than its Content-Length) before it is closed

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's signature
        pass


@dataclass(frozen=True)
class ServedSearch:
    """A running service: ``url`` is its ``/search`` endpoint; ``stop()`` shuts it down (idempotent)."""

    url: str
    stop: Callable[[], None]

    def __enter__(self) -> ServedSearch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve(app: Callable[..., Any], host: str = "127.0.0.1") -> ServedSearch:
    """Serve ``app`` on ``host`` at a free port in a background thread (a real threaded HTTP server)."""
    server = make_server(host, 0, app, server_class=_ThreadingWSGIServer, handler_class=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name="reference-search-service", daemon=True)
    thread.start()
    stopped = threading.Event()

    def stop() -> None:
        if stopped.is_set():
            return
        stopped.set()
        server.shutdown()
        server.server_close()
        thread.join()

    return ServedSearch(f"http://{host}:{server.server_port}/search", stop)
