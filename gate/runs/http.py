"""The ``http`` runner: a search service asked one request per golden query (docs/runners.md,
the HTTP runner).

The requests are built from ``runner.http``'s templates (:mod:`gate.inputs.http_templates`),
sent by ``concurrency`` workers (a ``requests`` session each) within a rate limit and a time
budget, and tried again on 429, 5xx, timeouts and dropped connections
(:mod:`gate.runs.http_exchange`); each answer is read strictly (:mod:`gate.runs.http_answers`).
The run is written in the query file's order, whatever order the answers came in, with a
timings sidecar (the service's latency or the measured round trip, and the hits: ``"hits": 0`` is a
query answered with nothing, covered and scored 0). A query that is refused or
still fails after its retries makes the run fail (the verdict inconclusive, naming it): never a
run with a query silently left out, and never one cached.

Header values may name environment variables (``${NAME}``); what they hold goes to the service
and nowhere else: every text the runner writes (its log, errors, progress lines) is scrubbed of
them, and the run's identity (its cache key) holds the templates, never a header.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from gate import __version__
from gate.common.atomic import write_text_atomic
from gate.common.environment import scrub_token, token_forms
from gate.common.errors import InputError, one_line
from gate.inputs.config import HttpRunnerConfig
from gate.inputs.http_templates import (
    MISSING,
    BodyTemplate,
    EnvRef,
    Placeholder,
    TemplateError,
    UrlTemplate,
    lookup,
    parse_body,
    parse_header,
    parse_path,
    parse_url,
)
from gate.inputs.readers.queries import load_queries
from gate.inputs.readers.timings import timings_path_for
from gate.runs.http_answers import Answer, AnswerPaths
from gate.runs.http_exchange import Attempts, Clocks, Failed, OutOfTime, RateLimit, Request, ask, new_session
from gate.runs.isolation import SECRETS
from gate.runs.request import RunnerFailed, RunRequest

__all__ = ["HttpRunner", "HttpSettings", "http_settings"]

#: Seconds between two progress lines of a run.
PROGRESS_EVERY = 5.0
#: Failed queries a failure names by id (the count says how many more).
NAMED_FAILURES = 5


@dataclass(frozen=True)
class HttpSettings:
    """``runner.http``, parsed, with the config file's place of each key for errors."""
    url: UrlTemplate
    method: str
    body: BodyTemplate | None
    paths: AnswerPaths
    headers: tuple[tuple[str, tuple[str | EnvRef, ...]], ...]
    depth: int
    concurrency: int
    retries: int
    backoff: float
    rate_limit: float
    timeout: float
    max_queries: int
    max_seconds: float
    written: Mapping[str, Any]  # the templates as the config writes them: the run's identity
    source: str = "runner.http"
    lines: Mapping[str, int | None] = field(default_factory=dict)

    def error(self, key: str, message: str) -> InputError:
        return InputError(self.source, self.lines.get(key), f"key '{key}': {message}")


def http_settings(config: HttpRunnerConfig, source: str, lines: Mapping[str, int | None]) -> HttpSettings:
    """The runner's settings from a checked config; the keys ``runner.type: http`` requires are
    named in one line when missing."""
    for key in ("url", "hits", "id", "score"):
        if getattr(config, key) is None:
            raise InputError(source, lines.get("runner.type"),
                             f"runner.type is 'http' but runner.http.{key} is not set (docs: Runners, the HTTP runner)")
    assert config.url is not None and config.hits is not None and config.id is not None and config.score is not None
    method = config.method or ("POST" if config.body is not None else "GET")
    paths = AnswerPaths(parse_path(config.hits), parse_path(config.id), parse_path(config.score),
                        None if config.latency is None else parse_path(config.latency),
                        absent_hits_are_empty=config.missing_hits == "empty")
    written = {"url": config.url, "method": method, "body": config.body, "hits": config.hits, "id": config.id,
               "score": config.score, "latency": config.latency, "depth": config.depth}
    if config.missing_hits != "refuse":  # it changes the run; left out at the default, so earlier keys still hold
        written["missing_hits"] = config.missing_hits
    return HttpSettings(
        url=parse_url(config.url), method=method, body=None if config.body is None else parse_body(config.body),
        paths=paths, headers=tuple((name, parse_header(name, value)) for name, value in config.headers.items()),
        depth=config.depth, concurrency=config.concurrency, retries=config.retries, backoff=config.backoff,
        rate_limit=config.rate_limit, timeout=config.timeout, max_queries=config.max_queries,
        max_seconds=config.max_seconds, written=written, source=source, lines=dict(lines))


#: The shortest piece of a secret masked on its own (module docstring of _Scrubber).
SECRET_PIECE = 8


class _Scrubber:
    """Text with every header secret (in every form :func:`scrub_token` knows) replaced by ***,
    and every run of :data:`SECRET_PIECE` or more characters of one: a message is cut (an error
    page's first 200 characters, an id shortened to 60) before it reaches the scrubber, and the
    cut can fall inside an echoed secret, leaving its start or end, never the whole."""

    def __init__(self, secrets: Sequence[str]):
        self.secrets = sorted(set(secrets), key=len, reverse=True)
        self.pieces = frozenset(form[i:i + SECRET_PIECE] for secret in self.secrets for form in token_forms(secret)
                                for i in range(len(form) - SECRET_PIECE + 1))

    def __call__(self, text: str) -> str:
        return one_line(self._masked(text), 500)

    def holds_secret(self, text: str) -> bool:
        """Whether ``text`` holds a piece of a secret (a header value of fewer characters, a
        tenant number say, is masked in messages but no id is refused for holding it)."""
        return any(text[start:start + SECRET_PIECE] in self.pieces for start in range(len(text) - SECRET_PIECE + 1))

    def _masked(self, text: str) -> str:
        for secret in self.secrets:
            text = scrub_token(text, secret)
        if not self.pieces:
            return text
        covered = [False] * len(text)  # the characters of some piece
        for start in range(len(text) - SECRET_PIECE + 1):
            if text[start:start + SECRET_PIECE] in self.pieces:
                covered[start:start + SECRET_PIECE] = [True] * SECRET_PIECE
        out: list[str] = []
        for index, char in enumerate(text):
            if not covered[index]:
                out.append(char)
            elif index == 0 or not covered[index - 1]:
                out.append("***")
        return "".join(out)


class HttpRunner:
    name = "http"
    writes_timings = True  # the service's latency, or the measured round trip, beside every run

    def __init__(self, settings: HttpSettings, *, progress: Callable[[str], None] | None = None,
                 environ: Mapping[str, str] | None = None, clocks: Clocks | None = None,
                 progress_every: float = PROGRESS_EVERY):
        self.settings = settings
        self.progress = progress or (lambda message: None)
        self.environ = environ
        self.clocks = clocks or Clocks()
        self.progress_every = progress_every

    def identity(self) -> dict[str, Any]:
        # The templates and paths, never a header (they hold secrets) nor how the requests are
        # paced (concurrency, retries, timeouts, rate limit): those do not change the run.
        return {"type": "http", **self.settings.written}

    def produce(self, request: RunRequest, config_file: Path, out_path: Path, log_path: Path) -> None:
        settings = self.settings
        headers, scrub = self._headers(request.purpose)
        values = self._config_values(request)
        queries = [(q.query_id, q.text) for q in load_queries(request.queries).queries]
        if settings.max_queries and len(queries) > settings.max_queries:
            raise RunnerFailed(request.purpose, f"{len(queries)} queries, more than runner.http.max_queries "
                                                f"({settings.max_queries}): no request was sent")
        requests_ = [self._request(values, qid, text, headers) for qid, text in queries]
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "w", encoding="utf-8") as log:
            batch = _Batch(self, request.purpose, [qid for qid, _ in queries], requests_, scrub, log)
            batch.run()
            if batch.failures or batch.unsent:
                raise RunnerFailed(request.purpose, batch.failure_message(), log_path)
            empty = sum(1 for item in batch.answers if item is not None and not item[0].hits)
            log.write(f"{len(queries)} queries answered ({empty} with no hits), {batch.retried} retried\n")
        _write_run(out_path, [qid for qid, _ in queries], batch.answers, batch.wall_ms)

    # ---------------------------------------------------------------- building the requests

    def _headers(self, purpose: str) -> tuple[dict[str, str], _Scrubber]:
        """The headers with ``${NAME}`` filled from the environment, and a scrubber of those values."""
        environ = os.environ if self.environ is None else self.environ
        out = {"User-Agent": f"retrieval-gate/{__version__}", "Accept": "application/json"}
        if self.settings.body is not None:
            out["Content-Type"] = "application/json"
        secrets: list[str] = []
        for name, parts in self.settings.headers:
            text = []
            for part in parts:
                if isinstance(part, str):
                    text.append(part)
                    continue
                text.append(self._variable(name, part.name, environ, purpose))
                secrets.append(text[-1])
            for known in [k for k in out if k.lower() == name.lower()]:
                del out[known]
            out[name] = "".join(text)
        return out, _Scrubber(secrets)

    def _variable(self, header: str, variable: str, environ: Mapping[str, str], purpose: str) -> str:
        if variable.upper() in SECRETS:  # refused by the config's checks too: never read, whatever the config
            raise self.settings.error("runner.http.headers", f"header '{header}': ${{{variable}}} is never sent")
        value = environ.get(variable)
        if not value:
            # Not the config's fault: a pull request from a fork runs without the repository's
            # secrets. The run cannot be made here, so the verdict is inconclusive, saying why.
            said = "is not set" if value is None else "is empty"
            raise RunnerFailed(purpose, f"header '{header}' names ${{{variable}}}, which {said} in the environment "
                                        "(a pull request from a fork gets no repository secrets): no request was sent")
        if any(c in value for c in "\r\n\0"):
            raise self.settings.error("runner.http.headers", f"header '{header}': ${{{variable}}} holds a line break "
                                      "or NUL, which no header value may")
        return value

    def _config_values(self, request: RunRequest) -> dict[str, Any]:
        """The values every query shares: depth, seed, repeat, corpus and the retrieval config's."""
        values: dict[str, Any] = {"depth": self.settings.depth, "seed": request.seed, "repeat": request.repeat,
                                  "corpus": request.corpus or "", "config": request.config.data}
        templates: list[tuple[str, list[Placeholder]]] = [("runner.http.url", self.settings.url.placeholders())]
        if self.settings.body is not None:
            templates.append(("runner.http.body", self.settings.body.placeholders()))
        for key, placeholders in templates:
            for placeholder in placeholders:
                dotted = placeholder.config_key
                if dotted is None:
                    continue
                value = lookup(request.config.data, tuple(dotted.split(".")))
                if value is MISSING:
                    raise self.settings.error(key, f"{{config.{dotted}}} names no key of the retrieval config "
                                                   f"({request.config.source})")
                values[placeholder.name] = value
        return values

    def _request(self, shared: Mapping[str, Any], query_id: str, text: str, headers: Mapping[str, str]) -> Request:
        values = {**shared, "query": text, "query_id": query_id}
        body = None
        if self.settings.body is not None:
            try:
                rendered = self.settings.body.render(values)
            except TemplateError as error:  # two keys made one by a value (a query text, a config value)
                raise self.settings.error("runner.http.body", f"query {query_id}: {error.message}") from None
            body = json.dumps(rendered, ensure_ascii=False, allow_nan=False).encode("utf-8")
        try:
            url = self.settings.url.render(values)
        except TemplateError as error:
            raise self.settings.error("runner.http.url", f"query {query_id}: {error.message}") from None
        return Request(self.settings.method, url, body, headers)


class _Batch:
    """One run's queries, asked by the runner's workers; answers kept by query position."""

    def __init__(self, runner: HttpRunner, purpose: str, query_ids: list[str], requests_: list[Request],
                 scrub: _Scrubber, log: Any):
        self.runner, self.purpose, self.query_ids, self.requests = runner, purpose, query_ids, requests_
        self.settings, self.clocks, self.scrub, self.log = runner.settings, runner.clocks, scrub, log
        self.answers: list[tuple[Answer, float] | None] = [None] * len(requests_)
        self.failures: dict[int, Failed] = {}
        self.next = 0
        self.done = 0
        self.retried = 0
        self.stopped_by_time = False
        self.in_flight_at_deadline: list[int] = []  # asked, and cut by max_seconds before the answer
        self.lock = threading.Lock()
        self.errors: list[BaseException] = []
        started = self.clocks.clock()
        self.started = started
        self.deadline = started + self.settings.max_seconds if self.settings.max_seconds else float("inf")
        self.last_progress = started
        self.limit = RateLimit(self.settings.rate_limit, self.clocks.clock, self.clocks.sleep)
        self.attempts = Attempts(self.settings.retries, self.settings.backoff, self.settings.timeout,
                                 self.settings.depth, self.settings.paths)
        self.wall_ms = 0.0

    @property
    def unsent(self) -> int:
        return sum(1 for i, answer in enumerate(self.answers) if answer is None and i not in self.failures)

    def run(self) -> None:
        workers = [threading.Thread(target=self._work, name=f"http-runner-{n}", daemon=True)
                   for n in range(min(self.settings.concurrency, max(len(self.requests), 1)))]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        self.wall_ms = (self.clocks.clock() - self.started) * 1000.0
        if self.errors:  # a bug in the gate, not the service's doing: raised as it is (exit 4)
            raise self.errors[0]

    def _take(self) -> int | None:
        with self.lock:
            if self.failures or self.errors or self.stopped_by_time or self.next >= len(self.requests):
                return None
            if self.clocks.clock() >= self.deadline:
                self.stopped_by_time = True
                return None
            index, self.next = self.next, self.next + 1
            return index

    def _work(self) -> None:
        session = new_session()
        try:
            while (index := self._take()) is not None:
                self._ask(session, index)
        except BaseException as error:  # noqa: BLE001 - handed to the main thread, raised there
            with self.lock:
                self.errors.append(error)
        finally:
            session.close()

    def _ask(self, session: requests.Session, index: int) -> None:
        qid = self.query_ids[index]

        def on_retry(attempt: int, reason: str, wait: float) -> None:
            self._say(f"query {qid}: attempt {attempt}: {reason}; trying again in {wait:.1f} s")

        try:
            answer, measured_ms, attempts = ask(session, self.requests[index], self.attempts, self.limit,
                                                self.deadline, self.clocks, on_retry)
        except Failed as failed:
            self._fail(index, failed)
            return
        except OutOfTime:
            self._say(f"query {qid}: runner.http.max_seconds ran out before its answer")
            with self.lock:
                self.stopped_by_time = True
                self.in_flight_at_deadline.append(index)
            return
        secret = next((rank for rank, (doc, _) in enumerate(answer.hits, 1) if self.scrub.holds_secret(doc)), None)
        if secret is not None:  # a run, its cache entry and the report would carry the key on
            self._fail(index, Failed(f"hit {secret}'s {'.'.join(self.settings.paths.id)} holds a header's secret "
                                     "(runner.http.headers): no file may hold it", attempts))
            return
        latency = answer.latency_ms if answer.latency_ms is not None else measured_ms
        with self.lock:
            self.answers[index] = (answer, latency)
            self.done += 1
            self.retried += attempts > 1
            now = self.clocks.clock()
            due = now - self.last_progress >= self.runner.progress_every
            if due:
                self.last_progress = now
            counts = f"http: {self.done}/{len(self.requests)} queries, {self.retried} retried"
        if not answer.hits:
            self._say(f"query {qid}: the answer holds no hits")
        if due:
            self.runner.progress(f"{self.purpose}: {counts}")

    def _fail(self, index: int, failed: Failed) -> None:
        self._say(f"query {self.query_ids[index]}: {failed.reason}")
        with self.lock:
            self.failures[index] = failed

    def _say(self, line: str) -> None:
        with self.lock:
            self.log.write(self.scrub(line) + "\n")
            self.log.flush()

    def failure_message(self) -> str:
        """Why the run is incomplete: the failed queries (the first few by id, and the count) and
        the first one's reason, or how far the time budget let it get."""
        total = len(self.requests)
        answered = sum(answer is not None for answer in self.answers)
        if not self.failures:
            unanswered = [i for i, answer in enumerate(self.answers) if answer is None]
            cut = sorted(self.in_flight_at_deadline)
            in_flight = f"; in flight when it ran out: {self._named(cut)}" if cut else ""
            return self.scrub(f"runner.http.max_seconds ({self.settings.max_seconds:g} s) ran out after {answered} "
                              f"of {total} queries: the run is incomplete, {len(unanswered)} not answered "
                              f"({self._named(unanswered)}){in_flight}")
        failed = sorted(self.failures)
        first = self.failures[failed[0]]
        unsent = self.unsent
        tail = f"; {unsent} not answered once a query had failed" if unsent else ""
        return self.scrub(f"{len(failed)} of {total} queries failed ({self._named(failed)}); query "
                          f"{self.query_ids[failed[0]]}: {first.reason}{tail}")

    def _named(self, indexes: Sequence[int]) -> str:
        """The first :data:`NAMED_FAILURES` of these queries by id, and how many more."""
        named = ", ".join(self.query_ids[i] for i in indexes[:NAMED_FAILURES])
        return named + (f" and {len(indexes) - NAMED_FAILURES} more" if len(indexes) > NAMED_FAILURES else "")


def _write_run(out_path: Path, query_ids: Sequence[str], answers: Sequence[tuple[Answer, float] | None],
               wall_ms: float) -> None:
    """The TREC run (rank: the position in the answer; score: the service's) and its timings
    sidecar, queries in the query file's order; a query answered with no hits has no run line
    and ``"hits": 0`` in the sidecar."""
    rows: list[str] = []
    timings: list[str] = []
    for qid, item in zip(query_ids, answers):
        assert item is not None  # a failed or unsent query failed the run before this
        answer, latency = item
        rows.extend(f"{qid} Q0 {doc} {rank} {score!r} http\n" for rank, (doc, score) in enumerate(answer.hits, 1))
        # "hits" on every line: a query answered with none is covered (and scores 0), not dropped.
        timings.append(json.dumps({"query_id": qid, "latency_ms": round(latency, 3), "hits": len(answer.hits)},
                                  ensure_ascii=True) + "\n")
    timings.append(json.dumps({"run_wall_time_ms": round(max(wall_ms, 0.0), 3)}) + "\n")
    write_text_atomic(out_path, "".join(rows))
    write_text_atomic(Path(timings_path_for(out_path)), "".join(timings))

