"""docs/runners.md's runner.http examples (Elasticsearch, OpenSearch hybrid, Vespa, Solr) cannot drift
from the engines' shapes: each block loads through the gate's config loader, and the HTTP runner, its
URL pointed at a 127.0.0.1 server that answers with the response the engine's own documentation
publishes (tests/fixtures/http/, each citing its source at a commit), makes the run those hits are."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from gate.common.errors import InputError
from gate.inputs.config import load_config
from gate.inputs.retrieval_config import load_retrieval_config
from gate.pipeline.stack import make_runner
from gate.runs.http import HttpRunner
from gate.runs.http_answers import Refused, read_answer
from gate.runs.request import RunnerFailed, RunRequest
from tests.support import http_faults as hf

REPO = Path(__file__).resolve().parents[2]
RUNNERS_PAGE = REPO / "docs" / "runners.md"
SECTION = "### Examples: Elasticsearch, OpenSearch, Vespa"
EXAMPLE = re.compile(r"<!-- runner-example: (?P<name>[\w-]+); response: (?P<response>\S+) -->\n"
                     r"```yaml\n(?P<yaml>.*?)```", re.S)
ENGINES = ("elasticsearch", "opensearch-hybrid", "vespa", "solr")
# The retrieval config's keys the examples name ({config.search.fields}, ...), with values such a config holds.
RETRIEVAL = """\
search: {fields: ["title^2", "body"]}
embedding: {model_id: aVeif4oB5Vm0Tdw8zYO2}
ranking: {profile: bm25}
"""
QUERY = 'what is "total eclipse" & {the} heart?'  # quotes, braces, an ampersand: escaped, never syntax
SECRETS = {"ES_API_KEY": "es-key-9f1", "OPENSEARCH_BASIC_AUTH": "b3M6cHc=", "VESPA_TOKEN": "vespa-tok-27"}


def _section() -> str:
    text = RUNNERS_PAGE.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start)
    return text[start:end if end >= 0 else len(text)]


def _examples() -> dict[str, tuple[str, dict[str, Any]]]:
    """name -> (the runner: block, the fixture)."""
    found = {}
    for match in EXAMPLE.finditer(_section()):
        fixture = json.loads((REPO / match["response"]).read_text(encoding="utf-8"))
        found[match["name"]] = (match["yaml"], fixture)
    return found


def test_every_engine_has_an_example_citing_its_published_response():
    examples = _examples()
    assert tuple(examples) == ENGINES
    section = _section()
    for name, (_, fixture) in examples.items():
        url = fixture["source"].rsplit(" ", 1)[-1]
        assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+/blob/[0-9a-f]{40}/\S+", url), name
        assert url in section, f"{name}: the docs cite where the response shape comes from"
    vespa_empty = json.loads((REPO / "tests/fixtures/http/vespa-empty.json").read_text())
    assert vespa_empty["source"].rsplit(" ", 1)[-1] in section


def _gate_config(tmp_path: Path, block: str, url: str) -> Path:
    """A gate config holding the example's runner block, its service moved to ``url``."""
    (tmp_path / "q.tsv").write_text(f"q1\t{QUERY}\n")
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    (tmp_path / "r.yml").write_text(RETRIEVAL)
    served = re.sub(r'url: "https?://[^/"]+', f'url: "{url}', block, count=1)
    assert served != block
    path = tmp_path / "gate.yml"
    path.write_text("golden: {queries: q.tsv, qrels: qrels.txt}\nretrieval: {config: r.yml}\n" + served)
    return path


class _Published:
    """A WSGI app answering every request with the engine's published response, keeping the requests."""

    def __init__(self, response: Any):
        self.body = json.dumps(response).encode()
        self.seen: list[tuple[str, str, dict[str, str], bytes]] = []

    def __call__(self, environ, start_response):
        body = hf.read_body(environ)
        headers = {k[5:].replace("_", "-").lower(): v for k, v in environ.items() if k.startswith("HTTP_")}
        target = environ["PATH_INFO"] + ("?" + environ["QUERY_STRING"] if environ.get("QUERY_STRING") else "")
        self.seen.append((environ["REQUEST_METHOD"], target, headers, body))
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(self.body)))])
        return [self.body]


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return [value] if isinstance(value, str) else []


@pytest.mark.parametrize("name", ENGINES)
def test_the_example_loads_and_makes_the_run_of_its_engines_published_response(tmp_path, monkeypatch, name):
    block, fixture = _examples()[name]
    for variable, value in SECRETS.items():
        monkeypatch.setenv(variable, value)
    service = _Published(fixture["response"])
    with hf.serve(service) as base:
        runner = make_runner(load_config(_gate_config(tmp_path, block, base)))
        assert isinstance(runner, HttpRunner)
        request = RunRequest(purpose="candidate", config=load_retrieval_config(tmp_path / "r.yml"),
                             queries=str(tmp_path / "q.tsv"), queries_sha256="q", corpus=None, corpus_sha256=None)
        out = tmp_path / "out" / "run.run"
        runner.produce(request, tmp_path / "r.yml", out, tmp_path / "out" / "run.log")

    expected = fixture["expect"]
    rows = [line.split() for line in out.read_text().splitlines()]
    assert [(row[2], float(row[4])) for row in rows] == [(doc, score) for doc, score in expected["hits"]]
    assert [int(row[3]) for row in rows] == list(range(1, len(rows) + 1))
    timing = json.loads((tmp_path / "out" / "run.timings.jsonl").read_text().splitlines()[0])
    if expected["latency_ms"] is not None:
        assert timing["latency_ms"] == expected["latency_ms"]
    else:  # no server-reported latency in ms: the runner's measured round trip
        assert runner.settings.paths.latency is None and timing["latency_ms"] >= 0

    # The request: the query text arrived whole (JSON-escaped in a body, percent-encoded in a URL),
    # the retrieval config's values in place, and the header's secret from the environment.
    ((method, target, headers, body),) = service.seen
    if method == "POST":
        sent = json.loads(body)
        assert QUERY in _strings(sent)
        assert not any("{" in s and "}" in s and s != QUERY for s in _strings(sent)), "a placeholder left unfilled"
    else:
        assert method == "GET" and not body
        assert QUERY in [unquote(value.replace("+", " ")) for value in re.split(r"[?&]q=|&", target)]
    rendered = target + body.decode()
    for needed in {"elasticsearch": ["title^2"], "opensearch-hybrid": ["aVeif4oB5Vm0Tdw8zYO2", "search_pipeline"],
                   "vespa": ['"ranking": "bm25"'], "solr": ["fl=id,score"]}[name]:
        assert needed in rendered
    secret = {"elasticsearch": "es-key-9f1", "opensearch-hybrid": "b3M6cHc=", "vespa": "vespa-tok-27"}.get(name)
    if secret:
        assert secret in headers["authorization"]
        assert secret not in (tmp_path / "out" / "run.log").read_text()
    assert urlsplit(base).port is not None


def test_a_vespa_answer_without_children_is_a_query_with_no_hits_as_the_docs_say(tmp_path, monkeypatch):
    """Vespa leaves root.children out of an answer with no hits: the docs' block (missing_hits:
    empty) reads it as a query answered with nothing; without that line it is refused (docs: Vespa)."""
    block, _ = _examples()["vespa"]
    without = re.sub(r"    missing_hits: empty[^\n]*\n", "", block)
    assert without != block
    monkeypatch.setenv("VESPA_TOKEN", "t")
    empty = json.loads((REPO / "tests/fixtures/http/vespa-empty.json").read_text())["response"]
    request_for = lambda: RunRequest(  # noqa: E731 - the retrieval config as each world writes it
        purpose="candidate", config=load_retrieval_config(tmp_path / "r.yml"), queries=str(tmp_path / "q.tsv"),
        queries_sha256="q", corpus=None, corpus_sha256=None)
    with hf.serve(_Published(empty)) as base:
        runner = make_runner(load_config(_gate_config(tmp_path, block, base)))
        assert isinstance(runner, HttpRunner)
        assert read_answer(json.dumps(empty).encode(), runner.settings.paths, runner.settings.depth).hits == ()
        runner.produce(request_for(), tmp_path / "r.yml", tmp_path / "x.run", tmp_path / "x.log")
        assert (tmp_path / "x.run").read_text() == ""
        timing = json.loads((tmp_path / "x.timings.jsonl").read_text().splitlines()[0])
        assert timing["query_id"] == "q1" and timing["hits"] == 0

        refusing = make_runner(load_config(_gate_config(tmp_path, without, base)))
        assert isinstance(refusing, HttpRunner)
        with pytest.raises(Refused, match=r"the answer has no root\.children"):
            read_answer(json.dumps(empty).encode(), refusing.settings.paths, refusing.settings.depth)
        with pytest.raises(RunnerFailed, match="q1"):
            refusing.produce(request_for(), tmp_path / "r.yml", tmp_path / "y.run", tmp_path / "y.log")


def test_a_docs_example_with_a_typo_would_be_caught(tmp_path):
    """The loader is strict, so the examples above are checked, not just parsed."""
    block, _ = _examples()["elasticsearch"]
    with pytest.raises(InputError, match="hitz"):
        load_config(_gate_config(tmp_path, block.replace("hits: hits.hits", "hitz: hits.hits"), "http://127.0.0.1:9"))
    assert textwrap.dedent(block) == block  # a top-level runner: block, as a gate config holds it
