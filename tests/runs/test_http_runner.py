"""The ``http`` runner against a real HTTP server on 127.0.0.1 (stdlib wsgiref, threaded), with
faults injected by tests/support/http_faults.py: retries that end in the same run as no faults,
Retry-After waited, each refusal one line naming the query, secrets kept from everything the
gate writes, concurrency that changes nothing, the rate limit and the budgets, and the config's
errors at their line. No mocked client: every request crosses a socket.

No test has a wall-clock limit: waits are asserted from below (the server's arrival times), and a
deadline is shown by what fails, never by how fast.
"""

from __future__ import annotations

import itertools
import json
import re
import socket
import textwrap
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gate.cli import main
from gate.common import limits
from gate.common.errors import InputError
from gate.inputs.config import load_config
from gate.inputs.readers.runs import field_problem, read_run
from gate.inputs.retrieval_config import load_retrieval_config
from gate.pipeline.archive import archive
from gate.pipeline.stack import make_runner
from gate.runs.http import HttpRunner
from gate.runs.http_exchange import MAX_ANSWER_BYTES
from gate.runs.isolation import SECRETS
from gate.runs.produce import RunProducer
from gate.runs.request import RunnerFailed, RunRequest
from tests.publishing.github.raw_server import RawServer
from tests.support import http_faults as hf
from tests.support.small_world import small_world

QUERIES = [(f"q{i}", f"what is topic {i} & why/how") for i in range(12)]


def _hits(qid: str, count: int = 5) -> list[tuple[str, float]]:
    n = int(qid[1:])
    return [(f"doc-{(n * 7 + j) % 50}", round(10.0 - j * 0.75 - n * 0.01, 4)) for j in range(count)]


HITS = {qid: _hits(qid) for qid, _ in QUERIES}
POST = """\
url: "{base}/idx/_search"
body:
  qid: "{{query_id}}"
  query: {{match: {{text: "{{query}}"}}}}
  size: "{{depth}}"
hits: hits.hits
id: _id
score: _score
latency: took
backoff: 0.01
"""


def _world(tmp_path: Path, http: str, retrieval: str = "index: docs-v1\nboost: 1.0\n") -> Path:
    (tmp_path / "q.tsv").write_text("".join(f"{qid}\t{text}\n" for qid, text in QUERIES))
    (tmp_path / "qrels.txt").write_text("".join(f"{qid} 0 {_hits(qid)[0][0]} 1\n" for qid, _ in QUERIES))
    (tmp_path / "r.yml").write_text(retrieval)
    (tmp_path / "gate.yml").write_text(
        "golden: {queries: q.tsv, qrels: qrels.txt}\nretrieval: {config: r.yml}\n"
        "runner:\n  type: http\n  http:\n" + textwrap.indent(http, "    "))
    return tmp_path / "gate.yml"


def _request(tmp_path: Path, purpose: str = "candidate") -> RunRequest:
    config = load_retrieval_config(tmp_path / "r.yml")
    return RunRequest(purpose=purpose, config=config, queries=str(tmp_path / "q.tsv"), queries_sha256="q",
                      corpus=None, corpus_sha256=None)


def _runner(tmp_path: Path, http: str, progress: list[str] | None = None, **kwargs) -> HttpRunner:
    config = load_config(_world(tmp_path, http))
    runner = make_runner(config, progress.append if progress is not None else (lambda line: None))
    assert isinstance(runner, HttpRunner)
    for name, value in kwargs.items():
        setattr(runner, name, value)
    return runner


def _produce(tmp_path: Path, runner: HttpRunner, name: str = "run") -> tuple[str, str]:
    out = tmp_path / "out" / f"{name}.run"
    runner.produce(_request(tmp_path), tmp_path / "r.yml", out, tmp_path / "out" / f"{name}.log")
    return out.read_text(), (tmp_path / "out" / f"{name}.timings.jsonl").read_text()


def _faults(plan: hf.Plan, app=None) -> hf.Faults:
    return hf.Faults(app or hf.fixed_hits_app(HITS, hf.json_field("qid")), plan, hf.json_field("qid"))


def _expected_run(depth: int = 100) -> str:
    return "".join(f"{qid} Q0 {doc} {rank} {score!r} http\n" for qid, _ in QUERIES
                   for rank, (doc, score) in enumerate(HITS[qid][:depth], 1))


# --------------------------------------------------------------------------- the run


def test_a_run_is_the_services_hits_in_the_query_files_order_with_their_latency(tmp_path):
    faults = _faults({})
    with hf.serve(faults) as base:
        run, timings = _produce(tmp_path, _runner(tmp_path, POST.format(base=base)))
    assert run == _expected_run()
    lines = [json.loads(line) for line in timings.splitlines()]
    assert [line.get("query_id") for line in lines[:-1]] == [qid for qid, _ in QUERIES]
    assert all(line["latency_ms"] == 3 for line in lines[:-1])  # the service's `took`
    assert set(lines[-1]) == {"run_wall_time_ms"}
    sent = json.loads(faults.requests_of("q3")[0].body)
    # JSON-escaped by construction: the text with its '&' and '/' is a JSON string, depth a number.
    assert sent == {"qid": "q3", "query": {"match": {"text": QUERIES[3][1]}}, "size": 100}
    assert faults.requests_of("q3")[0].headers["Content-Type"] == "application/json"


def test_get_fills_the_url_percent_encoded_and_the_round_trip_is_the_latency(tmp_path):
    app = hf.fixed_hits_app(HITS, hf.query_param("id"), took=None)
    faults = hf.Faults(app, {}, hf.query_param("id"))
    http = ('url: "{base}/search/{{config.index}}?q={{query}}&id={{query_id}}&k={{depth}}"\n'
            "hits: hits.hits\nid: _id\nscore: _score\ndepth: 3\n")
    with hf.serve(faults) as base:
        run, timings = _produce(tmp_path, _runner(tmp_path, http.format(base=base)))
    assert run == _expected_run(depth=3)
    seen = faults.requests_of("q1")[0]
    assert seen.path == "/search/docs-v1?q=what%20is%20topic%201%20%26%20why%2Fhow&id=q1&k=3" and seen.body == b""
    assert all(json.loads(line)["latency_ms"] > 0 for line in timings.splitlines()[:-1])  # measured


def test_hits_beyond_depth_are_cut(tmp_path):
    with hf.serve(_faults({})) as base:
        run, _ = _produce(tmp_path, _runner(tmp_path, POST.format(base=base) + "depth: 2\n"))
    assert run == _expected_run(depth=2)


def test_a_config_value_in_the_body_keeps_its_json_type(tmp_path):
    http = ('url: "{base}/idx"\nbody:\n  qid: "{{query_id}}"\n  boost: "{{config.boost}}"\n'
            '  field: "title^{{config.boost}}"\n  all: "{{config}}"\n  "{{config.index}}": "{{{{literal}}}}"\n'
            "hits: hits.hits\nid: _id\nscore: _score\n")
    faults = _faults({})
    with hf.serve(faults) as base:
        _produce(tmp_path, _runner(tmp_path, http.format(base=base)))
    sent = json.loads(faults.requests_of("q0")[0].body)
    assert sent == {"qid": "q0", "boost": 1.0, "field": "title^1.0", "all": {"index": "docs-v1", "boost": 1.0},
                    "docs-v1": "{literal}"}


# --------------------------------------------------------------------------- retries


RECOVERED = {
    "q0": [hf.too_many_requests()],
    "q1": [hf.status(500), hf.status(502)],
    "q2": [hf.status(503)],
    "q3": [hf.html_error(502)],
    "q4": [hf.slow(5.0)],
    "q5": [hf.drip(0.05)],
    "q6": [hf.DROPPED, hf.DROPPED, hf.status(503)],
}


def test_retries_then_success_give_the_same_run_as_no_faults(tmp_path):
    http = POST + "timeout: 2\nretries: 3\nconcurrency: 4\n"
    with hf.serve(_faults({})) as base:
        clean, _ = _produce(tmp_path, _runner(tmp_path, http.format(base=base)), "clean")
    faults = _faults(RECOVERED)
    progress: list[str] = []
    with hf.serve(faults) as base:
        faulty, timings = _produce(tmp_path, _runner(tmp_path, http.format(base=base), progress, progress_every=0),
                                   "faulty")
    assert faulty == clean == _expected_run()
    assert {qid: len(faults.requests_of(qid)) for qid in RECOVERED} == {
        "q0": 2, "q1": 3, "q2": 2, "q3": 2, "q4": 2, "q5": 2, "q6": 4}
    assert progress[-1] == f"candidate: http: {len(QUERIES)}/{len(QUERIES)} queries, {len(RECOVERED)} retried"
    log = (tmp_path / "out" / "faulty.log").read_text()
    assert "query q4: attempt 1: no whole answer within 2 s" in log  # the slow one, cut at its deadline
    assert "query q5: attempt 1: no whole answer within 2 s" in log  # the drip too
    assert "query q6: attempt 1: the connection dropped mid-answer" in log


def test_retry_after_in_seconds_is_waited(tmp_path):
    faults = _faults({"q2": [hf.too_many_requests(1.5)]})
    with hf.serve(faults) as base:
        _produce(tmp_path, _runner(tmp_path, POST.format(base=base)))
    first, second = faults.requests_of("q2")
    assert second.at - first.at >= 1.4  # backoff alone would wait 0.01 s


def test_retry_after_as_an_http_date_is_waited(tmp_path):
    faults = _faults({"q2": [hf.too_many_requests(3, http_date=True)]})
    with hf.serve(faults) as base:
        _produce(tmp_path, _runner(tmp_path, POST.format(base=base)))
    first, second = faults.requests_of("q2")
    assert second.at - first.at >= 1.0  # 3 s ahead at a second's resolution: at least 2 s less a margin


def test_a_retry_after_beyond_the_timeout_waits_the_timeout(tmp_path):
    faults = _faults({"q2": [hf.too_many_requests(3600)]})
    with hf.serve(faults) as base:
        run, _ = _produce(tmp_path, _runner(tmp_path, POST.format(base=base) + "timeout: 1.5\n"))
    first, second = faults.requests_of("q2")
    assert 1.4 <= second.at - first.at < 600 and run == _expected_run()


def test_backoff_doubles(tmp_path):
    faults = _faults({"q1": [hf.status(503)] * 3})
    with hf.serve(faults) as base:
        _produce(tmp_path, _runner(tmp_path, POST.format(base=base).replace("backoff: 0.01", "backoff: 0.4")))
    times = [seen.at for seen in faults.requests_of("q1")]
    assert [b - a >= 0.95 * wait for a, b, wait in zip(times, times[1:], (0.4, 0.8, 1.6))] == [True] * 3


def test_a_query_that_fails_after_its_retries_fails_the_run_naming_it(tmp_path):
    faults = _faults({"q5": hf.status(503), "q9": hf.status(503)})
    with hf.serve(faults) as base:
        runner = _runner(tmp_path, (POST + "retries: 2\nconcurrency: 1\n").format(base=base))
        with pytest.raises(RunnerFailed) as caught:
            _produce(tmp_path, runner)
    message = caught.value.message
    assert message == ("1 of 12 queries failed (q5); query q5: HTTP 503 after 3 attempts; 6 not answered once a "
                       "query had failed")
    assert len(faults.requests_of("q5")) == 3 and not faults.requests_of("q9")  # no more queries after a failure


def test_exhausted_retries_make_the_verdict_inconclusive_through_retrieval_gate_run(tmp_path, capsys):
    """End to end: the archived baseline, then a PR whose run meets a service that keeps failing
    one query: exit 3, the report names the query and the last reason, and no partial run is cached."""
    path, app = _small_http_world(tmp_path)
    with hf.serve(hf.Faults(app, {}, hf.json_field("qid"))) as base:
        _point_at(path, base)
        archive(load_config(path), progress=lambda m: None)
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 1.5\n")
    faults = hf.Faults(app, {"q_0007": hf.status(503)}, hf.json_field("qid"))
    with hf.serve(faults) as base:
        _point_at(path, base)
        code = main(["run", "--config", str(path), "--out", str(tmp_path / "out")])
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert code == 3 and report["verdict"]["kind"] == "inconclusive"
    said = json.dumps(report["verdict"])
    assert "q_0007" in said and "HTTP 503 after 2 attempts" in said
    assert len(faults.requests_of("q_0007")) == 2
    cached = list((tmp_path / ".retrieval-gate" / "cache").rglob("*.run.gz"))
    assert len(cached) == 1  # the baseline's, from the archive: the failed candidate left none


# --------------------------------------------------------------------------- refusals


REFUSALS = [
    (hf.NOT_JSON, "query q4: the answer is not JSON (it starts 'results: d1 d2 d3')"),
    (hf.NO_ID, "query q4: hit 5 has no _id"),
    (hf.STRING_SCORE, "query q4: hit 5's _score is the text '6.96', not a number"),
    (hf.NAN_SCORE, "query q4: hit 5's _score is nan, not a finite number"),
    (hf.DUPLICATE_IDS, "query q4: hit 6 has the _id 'doc-28' of hit 1: an id is ranked once"),
    (hf.huge(MAX_ANSWER_BYTES + 1), "query q4: the answer is larger than 16 MiB"),
    (hf.status(400), 'query q4: HTTP 400: {"error": "fault 400"}'),
    (hf.status(301), "query q4: HTTP 301: a redirect, not followed"),
]


@pytest.mark.parametrize(("fault", "said"), REFUSALS, ids=[f.kind + str(f.status) for f, _ in REFUSALS])
def test_each_refusal_is_one_line_naming_the_query_and_is_not_retried(tmp_path, fault, said):
    faults = _faults({"q4": fault})
    with hf.serve(faults) as base:
        with pytest.raises(RunnerFailed) as caught:
            _produce(tmp_path, _runner(tmp_path, POST.format(base=base) + "concurrency: 1\n"))
    message = caught.value.message
    assert "\n" not in message and said.split(": ", 1)[1] in message
    assert message.startswith("1 of 12 queries failed (q4)")
    assert len(faults.requests_of("q4")) == 1
    assert not (tmp_path / "out" / "run.run").exists()


def _odd_answer_app(answer: object):
    def app(environ, start_response):
        hf.read_body(environ)
        data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
        return [data]

    return app


ODD_ANSWERS = [
    ({"took": 1}, "the answer has no hits.hits"),
    ({"took": 1, "hits": {"hits": {"_id": "a"}}}, "hits.hits is an object, not a list of hits"),
    ({"took": 1, "hits": {"hits": [{"_id": "a b", "_score": 1}]}},
     "hit 1's _id 'a b' cannot be a TREC run's docno: it holds a blank (0x20), where a run line's fields split"),
    ({"took": 1, "hits": {"hits": [{"_id": "", "_score": 1}]}},
     "hit 1's _id '' cannot be a TREC run's docno: it is empty"),
    ({"took": 1, "hits": {"hits": [{"_id": "a\ufeffb", "_score": 1}]}},
     "hit 1's _id 'a\\ufeffb' cannot be a TREC run's docno: it holds a byte-order mark (U+FEFF)"),
    (b'{"took": 1, "hits": {"hits": [{"_id": "a\\ud800", "_score": 1}]}}',
     "hit 1's _id 'a\\ud800' cannot be a TREC run's docno: it holds a lone surrogate"),
    # A key twice: json would keep the last value, here a whole other list of hits.
    (b'{"hits": {"hits": [{"_id": "a", "_score": 1}]}, "hits": {"hits": [{"_id": "evil", "_score": 9}]}}',
     "the answer holds the key 'hits' twice in one object"),
    (b'{"hits": {"hits": [{"_id": "a", "_score": 1, "_id": "b"}]}}',
     "the answer holds the key '_id' twice in one object"),
    (b'{"took": 1, "other": {"x": 1, "x": 2}, "hits": {"hits": []}}',
     "the answer holds the key 'x' twice in one object"),
    (b'{"hits": {"hits": [{"_id": "a", "_score": 1' + b"0" * 5000 + b'}]}}',
     "the answer holds an integer of 5,001 digits, too long for an id or a score (at most 4,300)"),
    (b'{"hits": {"hits": [{"_id": -1' + b"0" * 4300 + b', "_score": 1}]}}',
     "the answer holds an integer of 4,301 digits"),
    ({"took": 1, "hits": {"hits": [{"_id": 1.5, "_score": 1}]}}, "hit 1's _id is the number 1.5, not a text"),
    ({"took": 1, "hits": {"hits": [{"_id": True, "_score": 1}]}}, "hit 1's _id is the boolean true"),
    ({"took": 1, "hits": {"hits": [{"_id": "a", "_score": True}]}}, "hit 1's _score is the boolean true, not a number"),
    ({"took": 1, "hits": {"hits": ["a"]}}, "hit 1 has no _id"),
    (b'{"took": 1, "hits": {"hits": [{"_id": "a", "_score": Infinity}]}}', "hit 1's _score is inf, not a finite"),
    ({"took": "3ms", "hits": {"hits": [{"_id": "a", "_score": 1}]}}, "took (runner.http.latency) is the text '3ms'"),
    ({"took": -1, "hits": {"hits": [{"_id": "a", "_score": 1}]}}, "took (runner.http.latency) is -1: expected"),
    (b"[" * 100_000, "the answer is JSON nested too deeply"),
]


@pytest.mark.parametrize(("answer", "said"), ODD_ANSWERS)
def test_an_answer_of_another_shape_is_refused_in_one_line(tmp_path, answer, said):
    with hf.serve(_odd_answer_app(answer)) as base:
        with pytest.raises(RunnerFailed) as caught:
            _produce(tmp_path, _runner(tmp_path, POST.format(base=base) + "concurrency: 1\n"))
    assert "\n" not in caught.value.message and "query q0: " + said in caught.value.message


def test_an_integer_of_4300_digits_is_read_as_a_number(tmp_path):
    """The limit is on the digits, not the answer: 4,300 digits parse (a score then beyond a float)."""
    answer = b'{"hits": {"hits": [{"_id": "a", "_score": 1' + b"0" * 4299 + b'}]}}'
    with hf.serve(_odd_answer_app(answer)) as base:
        with pytest.raises(RunnerFailed, match=r"query q0: hit 1's _score is beyond a float's range"):
            _produce(tmp_path, _runner(tmp_path, POST.format(base=base) + "concurrency: 1\n"))


NO_MATCH = {"root": {"fields": {"totalCount": 0}, "id": "toplevel", "relevance": 1.0}}  # Vespa's empty result
VESPA = POST.replace("hits: hits.hits", "hits: root.children").replace("latency: took\n", "")


def _vespa_app(matching: dict) -> hf.App:
    """Vespa's shape: the hits under root.children, none of it for a query ``matching`` leaves out."""
    def app(environ, start_response):
        qid = json.loads(hf.read_body(environ))["qid"]
        hits = [{"_id": doc, "_score": score} for doc, score in HITS[qid]]
        answer = matching.get(qid, {"root": {"children": hits, "fields": {"totalCount": len(hits)}}})
        data = json.dumps(answer).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
        return [data]

    return app


def test_missing_hits_empty_reads_an_absent_last_key_as_a_query_with_no_hits(tmp_path):
    with hf.serve(_vespa_app({"q3": NO_MATCH})) as base:
        run, timings = _produce(tmp_path, _runner(tmp_path, VESPA.format(base=base) + "missing_hits: empty\n"))
    assert not any(line.startswith("q3 ") for line in run.splitlines())
    assert run.count("\n") == 11 * 5
    assert json.loads(timings.splitlines()[3]) | {"latency_ms": 0} == {"query_id": "q3", "latency_ms": 0, "hits": 0}
    assert "query q3: the answer holds no hits" in (tmp_path / "out" / "run.log").read_text()


@pytest.mark.parametrize(("answer", "said"), [
    (NO_MATCH, "query q3: the answer has no root.children (it starts '{\"root\": {\"fields\": {\"totalCount\": 0}, "
               "\"id\": \"toplevel\", \"re'...; runner.http.missing_hits: empty reads that as no hits)"),
    ({"took": 1}, "query q3: the answer has no root.children (it starts '{\"took\": 1}')"),  # the parent is missing too
])
def test_missing_hits_refuse_is_the_default_and_names_the_setting(tmp_path, answer, said):
    with hf.serve(_vespa_app({"q3": answer})) as base:
        with pytest.raises(RunnerFailed) as caught:
            _produce(tmp_path, _runner(tmp_path, VESPA.format(base=base) + "concurrency: 1\n"))
    assert f"{said};" in caught.value.message + ";"


@pytest.mark.parametrize(("answer", "said"), [
    ({"took": 1}, "the answer has no root.children (it starts '{\"took\": 1}')"),  # no root: no empty result
    ({"root": []}, "the answer has no root.children (it starts '{\"root\": []}')"),  # root is there: not an object
    ({"root": {"children": None}}, "root.children is null, not a list of hits"),
    ({"root": {"children": {"a": 1}}}, "root.children is an object, not a list of hits"),
])
def test_missing_hits_empty_still_refuses_a_missing_parent_or_a_value_not_a_list(tmp_path, answer, said):
    with hf.serve(_vespa_app({"q3": answer})) as base:
        with pytest.raises(RunnerFailed) as caught:
            _produce(tmp_path, _runner(tmp_path, VESPA.format(base=base) + "missing_hits: empty\nconcurrency: 1\n"))
    assert f"query q3: {said};" in caught.value.message + ";"


def test_missing_hits_is_part_of_the_runs_identity_when_it_is_not_the_default(tmp_path):
    worlds = [tmp_path / name for name in ("a", "b", "c")]
    for world in worlds:
        world.mkdir()
    default = _runner(worlds[0], VESPA.format(base="http://127.0.0.1:9")).identity()
    refuse = _runner(worlds[1], VESPA.format(base="http://127.0.0.1:9") + "missing_hits: refuse\n").identity()
    empty = _runner(worlds[2], VESPA.format(base="http://127.0.0.1:9") + "missing_hits: empty\n").identity()
    assert default == refuse and "missing_hits" not in default  # the keys of runs cached before it existed
    assert empty == default | {"missing_hits": "empty"}


def _read_back(tmp_path: Path, docnos: list[str]) -> list[str] | None:
    """The docnos of query q1 as the run reader reads a run holding ``docnos``; None when refused."""
    path = tmp_path / "probe.run"
    path.write_text("".join(f"q1 Q0 {doc} {rank} 1.0 t\n" for rank, doc in enumerate(docnos, 1)),
                    encoding="utf-8", errors="surrogatepass", newline="")
    try:
        return [str(doc) for doc in read_run(path).ranking("q1")[0]]
    except InputError:
        return None


def test_a_hits_id_is_refused_exactly_when_the_run_reader_would_not_read_it_back_whole(tmp_path):
    """One rule (gate.inputs.readers.runs.field_problem) for the ids a command's run may hold
    and those the HTTP runner writes, checked character by character against the reader."""
    chars = [chr(code) for code in range(0x3100)] + ["\ufeff", "\uffff", "\U0001f600", "\U000e0041", "\ud800", "\udfff"]
    accepted = [f"a{char}b" for char in chars if field_problem(f"a{char}b") is None]
    refused = [f"a{char}b" for char in chars if field_problem(f"a{char}b") is not None]
    assert _read_back(tmp_path, accepted) == accepted  # zero-width and bidi controls, DEL, C1, U+00A0 ...
    for doc in refused:
        assert _read_back(tmp_path, [doc]) in (None, ["a"]), repr(doc)  # refused, or cut at a blank
    assert {doc[1] for doc in refused} == {chr(code) for code in range(0x21)} | {"\ufeff", chr(0xD800), chr(0xDFFF)}
    longest = "\u00e9" * (limits.MAX_ID_BYTES // 2)  # 2 bytes each: the run reader's 1 KiB exactly
    assert field_problem(longest) is None and _read_back(tmp_path, [longest]) == [longest]
    assert field_problem(longest + "x") == "it is longer than 1 KiB" and _read_back(tmp_path, [longest + "x"]) is None


def test_ids_with_zero_width_and_bidi_controls_are_kept_as_the_service_wrote_them(tmp_path):
    ids = ["a\u200bb", "\u202eexe.fdp", "x\u2066y\u2069", "\u200e1\u200f", "del\x7f", "nb\u00a0sp"]
    answer = {"took": 1, "hits": {"hits": [{"_id": doc, "_score": 9 - n} for n, doc in enumerate(ids)]}}
    with hf.serve(_odd_answer_app(answer)) as base:
        _produce(tmp_path, _runner(tmp_path, POST.format(base=base)))
    assert [str(doc) for doc in read_run(tmp_path / "out" / "run.run").ranking("q0")[0]] == ids


def test_integer_ids_are_ids(tmp_path):
    with hf.serve(_odd_answer_app({"took": 1, "hits": {"hits": [{"_id": 17, "_score": 2}]}})) as base:
        run, _ = _produce(tmp_path, _runner(tmp_path, POST.format(base=base)))
    assert run.splitlines()[0] == "q0 Q0 17 1 2.0 http"


def test_a_slow_drip_cannot_hold_the_run_past_its_timeout(tmp_path):
    """The answer would take 10 s a byte at a time; the attempt's deadline ends it at 0.5 s and,
    with no retry left, the query fails (a per-read timeout alone would let it finish)."""
    faults = _faults({"q0": hf.drip(0.1)})
    with hf.serve(faults) as base:
        with pytest.raises(RunnerFailed, match=r"query q0: no whole answer within 0\.5 s after 1 attempt$"):
            _produce(tmp_path, _runner(tmp_path, POST.format(base=base) + "timeout: 0.5\nretries: 0\n"))


@dataclass
class _HeaderDrip(RawServer):
    """Sends its status line and one endless header a byte every 0.05 s: each read brings a byte,
    so a per-read timeout never trips; only the attempt's deadline ends it."""

    stop: threading.Event = field(default_factory=threading.Event)
    sent: list[int] = field(default_factory=list)  # bytes sent on each connection before it closed

    def _stopping(self) -> bool:
        return self.stop.is_set()

    def _answer(self, conn: socket.socket) -> None:
        count = 0
        with conn:
            conn.recv(65536)
            for byte in itertools.chain(b"HTTP/1.1 200 OK\r\nX-Slow: ", itertools.repeat(ord("a"))):
                if self.stop.is_set() or count >= 4000:
                    break
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    break
                count += 1
                time.sleep(0.05)
        self.sent.append(count)


def test_headers_dripped_a_byte_at_a_time_are_cut_at_the_attempts_deadline(tmp_path):
    server = _HeaderDrip().start()
    try:
        with pytest.raises(RunnerFailed, match=r"query q0: no whole answer within 0\.5 s after 1 attempt"):
            _produce(tmp_path, _runner(tmp_path, POST.format(base=server.url)
                                       + "timeout: 0.5\nretries: 0\nconcurrency: 1\n"))
        for _ in range(400):  # the server notices the closed connection at its next byte
            if server.sent:
                break
            time.sleep(0.05)
    finally:
        server.stop.set()
        server.close()
    # At 20 bytes a second, 0.5 s is about 10 bytes; 4000 (200 s) would mean nothing cut it.
    assert server.sent and server.sent[0] < 400


# --------------------------------------------------------------------------- secrets


SECRET = "sk-live-9f8e7d6c5b4a39281706"


def _small_http_world(tmp_path: Path, headers: str = "") -> tuple[Path, hf.App]:
    """The small world (tests/support/small_world.py) served over HTTP: token overlap over its corpus,
    the retrieval config's boost on title tokens (carried in the body)."""
    path = small_world(tmp_path, leak_in_new=False)
    docs = [json.loads(line) for line in (tmp_path / "corpus-v1.jsonl").read_text().splitlines()]
    queries = {json.loads(line)["query_id"]: json.loads(line)["text"]
               for line in (tmp_path / "golden.jsonl").read_text().splitlines()}

    def app(environ, start_response):
        request = json.loads(hf.read_body(environ))
        words = set(queries[request["qid"]].split())
        scored = sorted(((len(words & set(d["text"].split())) + request["boost"] * len(words & set(d["title"].split())),
                          d["id"]) for d in docs), key=lambda pair: (-pair[0], pair[1]))
        data = json.dumps({"took": 2, "hits": {"hits": [{"_id": doc, "_score": score}
                                                         for score, doc in scored[:request["size"]]]}}).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
        return [data]

    text = path.read_text().split("runner:")[0] + (
        "runner:\n  type: http\n  http:\n    url: \"BASE/search\"\n"
        "    body: {qid: \"{query_id}\", text: \"{query}\", boost: \"{config.boost}\", size: \"{depth}\"}\n"
        "    hits: hits.hits\n    id: _id\n    score: _score\n    latency: took\n    depth: 20\n    retries: 1\n"
        "    backoff: 0.01\n" + headers + "statistics: {samples: 500}\n")
    path.write_text(text)
    return path, app


def _point_at(path: Path, base: str) -> None:
    path.write_text(re.sub(r'url: "[^"]*/search"', f'url: "{base}/search"', path.read_text()))


def test_a_secret_header_reaches_the_service_and_nothing_the_gate_writes(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SEARCH_API_KEY", SECRET)
    path, app = _small_http_world(tmp_path, '    headers: {Authorization: "ApiKey ${SEARCH_API_KEY}"}\n')

    def echoing(environ, start_response):  # a service that echoes the key in an error
        if b'"q_0003"' in environ["wsgi.input"].data:
            data = f"bad key {environ['HTTP_AUTHORIZATION']}".encode()
            start_response("403 Forbidden", [("Content-Length", str(len(data)))])
            return [data]
        return app(environ, start_response)

    with hf.serve(hf.Faults(app, {}, hf.json_field("qid"))) as base:
        _point_at(path, base)
        archive(load_config(path), progress=lambda m: None)
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 1.5\n")
    faults = hf.Faults(echoing, {}, hf.json_field("qid"))
    with hf.serve(faults) as base:
        _point_at(path, base)
        code = main(["run", "--config", str(path), "--out", str(tmp_path / "out")])
    printed = capsys.readouterr()
    assert code == 3 and faults.seen[0].headers["Authorization"] == f"ApiKey {SECRET}"
    report = (tmp_path / "out" / "report.json").read_text()
    assert "q_0003" in report and "HTTP 403: bad key ApiKey ***" in report
    assert SECRET not in printed.out + printed.err
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "gate.yml"]
    assert any(p.suffix == ".log" for p in written) and any(".retrieval-gate" in p.parts for p in written)
    assert [p for p in written if SECRET.encode() in p.read_bytes()] == []


def _echoing_app(answer):
    """Answers q2 with ``answer(key)`` (the request's X-Key header) as a 401, every other query
    with no hits."""
    def app(environ, start_response):
        request = json.loads(hf.read_body(environ))
        status, data = "200 OK", json.dumps({"took": 1, "hits": {"hits": []}}).encode()
        if request["qid"] == "q2":
            status, data = answer(environ["HTTP_X_KEY"])
        start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
        return [data]

    return app


ECHOES = {
    # the 401's start is cut at 200 characters: the cut falls 12 characters into the echoed key
    "cut error page": lambda key: ("401 Unauthorized", ("x" * 185 + key).encode()),
    # the answer that is not JSON is shown by its first 60 bytes: 15 characters of the key
    "cut answer": lambda key: ("200 OK", ("x" * 45 + key).encode()),
    "whitespace run": lambda key: ("401 Unauthorized", f"bad key {key[:10]}  \t {key[10:]}".encode()),
}


@pytest.mark.parametrize("echo", sorted(ECHOES))
def test_a_secret_echoed_where_a_message_is_cut_leaves_no_piece_of_it(tmp_path, monkeypatch, echo):
    """Messages are cut before they are scrubbed; the cut must not leave the key's start (old code:
    'x...xsk-live-9f8e...' in the run's failure)."""
    monkeypatch.setenv("SEARCH_API_KEY", SECRET)
    http = 'headers: {X-Key: "${SEARCH_API_KEY}"}\nconcurrency: 1\n'
    with hf.serve(_echoing_app(ECHOES[echo])) as base:
        with pytest.raises(RunnerFailed) as caught:
            _produce(tmp_path, _runner(tmp_path, POST.format(base=base) + http))
    message = caught.value.message
    assert "query q2:" in message and "***" in message
    written = message + (tmp_path / "out" / "run.log").read_text()
    assert [SECRET[i:i + 8] for i in range(len(SECRET) - 7) if SECRET[i:i + 8] in written] == []


def test_a_hit_whose_id_is_the_secret_fails_the_query_and_no_file_holds_it(tmp_path, monkeypatch):
    """The run, its cache entry and the report would carry the key on (old code: written to the run)."""
    monkeypatch.setenv("SEARCH_API_KEY", SECRET)
    http = 'headers: {X-Key: "${SEARCH_API_KEY}"}\nconcurrency: 1\n'

    def answer(key):
        return "200 OK", json.dumps({"took": 1, "hits": {"hits": [{"_id": f"doc-{key}", "_score": 1}]}}).encode()

    with hf.serve(_echoing_app(answer)) as base:
        with pytest.raises(RunnerFailed) as caught:
            _produce(tmp_path, _runner(tmp_path, POST.format(base=base) + http))
    assert "query q2: hit 1's _id holds a header's secret (runner.http.headers)" in caught.value.message
    assert [p for p in tmp_path.rglob("*") if p.is_file() and SECRET[:8].encode() in p.read_bytes()] == []


def test_a_short_header_value_is_no_reason_to_refuse_an_id(tmp_path, monkeypatch):
    monkeypatch.setenv("SEARCH_TENANT", "7")
    http = 'headers: {X-Tenant: "${SEARCH_TENANT}"}\n'
    with hf.serve(_faults({})) as base:
        run, _ = _produce(tmp_path, _runner(tmp_path, POST.format(base=base) + http))
    assert run == _expected_run()


def test_the_run_identity_holds_the_templates_and_no_header_or_pacing(tmp_path, monkeypatch):
    monkeypatch.setenv("SEARCH_API_KEY", SECRET)
    http = POST.format(base="http://127.0.0.1:9") + 'headers: {X-Key: "${SEARCH_API_KEY}"}\n'
    worlds = [tmp_path / name for name in ("plain", "paced", "other")]
    for world in worlds:
        world.mkdir()
    one = _runner(worlds[0], http).identity()
    paced = _runner(worlds[1], http + "concurrency: 9\nretries: 7\ntimeout: 3\nrate_limit: 5\n").identity()
    other = _runner(worlds[2], http.replace('size: "{depth}"', 'size: "{seed}"')).identity()
    assert one == paced and other != one
    assert SECRET not in json.dumps(one) and "X-Key" not in json.dumps(one)
    assert one["body"] == {"qid": "{query_id}", "query": {"match": {"text": "{query}"}}, "size": "{depth}"}


@pytest.mark.parametrize("name", sorted({*SECRETS, "GITHUB_TOKEN", "ACTIONS_CACHE_URL", "actions_runtime_url"}))
def test_a_github_or_actions_credential_is_never_a_header(tmp_path, name):
    header = f'headers:\n  Authorization: "Bearer ${{{name}}}"\n'
    path = _world(tmp_path, POST.format(base="http://127.0.0.1:9") + header)
    with pytest.raises(InputError) as caught:
        load_config(path)
    assert caught.value.line == 17 and f"${{{name}}} is a GitHub or Actions credential" in str(caught.value)


def test_a_missing_variable_is_one_line_naming_the_header_and_variable_and_the_run_is_not_made(tmp_path, capsys,
                                                                                                monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY_FOR_TESTS", raising=False)
    header = 'headers: {X-Api-Key: "${NO_SUCH_KEY_FOR_TESTS}"}\n'
    path = _world(tmp_path, POST.format(base="http://127.0.0.1:9") + header)
    code = main(["archive", "--config", str(path)])
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("[retrieval-gate]")]
    # Not a bad input: a fork's pull request runs without the secret, so the run cannot be made.
    assert code == 3 and len(err) == 1
    assert err[0] == ("retrieval-gate: error: archive failed, manifest unchanged: baseline archive run: header "
                      "'X-Api-Key' names ${NO_SUCH_KEY_FOR_TESTS}, which is not set in the environment (a pull "
                      "request from a fork gets no repository secrets): no request was sent")


# --------------------------------------------------------------------------- pacing and budgets


def test_concurrency_1_and_8_give_byte_identical_runs(tmp_path):
    plan = {"q3": hf.slow(0.3), "q7": [hf.status(503)], "q1": hf.slow(0.1)}
    outputs = []
    for concurrency in (1, 8):
        with hf.serve(_faults(plan)) as base:
            run, timings = _produce(tmp_path, _runner(tmp_path, POST.format(base=base)
                                                      + f"concurrency: {concurrency}\n"), f"c{concurrency}")
        outputs.append((run, timings.splitlines()[:-1]))  # the run line (wall time) aside
    assert outputs[0] == outputs[1] and outputs[0][0] == _expected_run()


def test_the_rate_limit_spaces_the_requests_of_all_workers(tmp_path):
    faults = _faults({})
    with hf.serve(faults) as base:
        _produce(tmp_path, _runner(tmp_path, POST.format(base=base) + "concurrency: 8\nrate_limit: 8\n"))
    times = sorted(seen.at for seen in faults.seen)
    # 12 requests at 8 a second: none of the slots is closer than 1/8 s to the one before, so any
    # second holds at most 9 (a delayed worker can bunch two: the bound allows a few more).
    assert max(sum(1 for t in times if start <= t < start + 1.0) for start in times) <= 11
    assert times[-1] - times[0] >= 0.5 * (len(times) - 1) / 8


def test_more_queries_than_max_queries_are_refused_before_any_request(tmp_path):
    faults = _faults({})
    with hf.serve(faults) as base:
        with pytest.raises(RunnerFailed) as caught:
            _produce(tmp_path, _runner(tmp_path, POST.format(base=base) + "max_queries: 10\n"))
    assert caught.value.message == "12 queries, more than runner.http.max_queries (10): no request was sent"
    assert faults.seen == []


def test_max_seconds_ends_the_run_incomplete_naming_how_far_it_got(tmp_path):
    faults = _faults({qid: hf.slow(0.4) for qid, _ in QUERIES})
    with hf.serve(faults) as base:
        with pytest.raises(RunnerFailed) as caught:
            _produce(tmp_path, _runner(tmp_path, POST.format(base=base) + "concurrency: 1\nmax_seconds: 1\n"))
    found = re.fullmatch(r"runner.http.max_seconds \(1 s\) ran out after (\d+) of 12 queries: the run is incomplete, "
                         r"(\d+) not answered \((q\d+)(, q\d+){0,4}(?: and (\d+) more)?\); "
                         r"in flight when it ran out: (q\d+)", caught.value.message)
    assert found, caught.value.message
    answered, unanswered = int(found.group(1)), int(found.group(2))
    assert answered <= len(faults.seen) < 12 and answered + unanswered == 12
    # One worker asks in the file's order: the first query not answered is the one in flight.
    assert found.group(3) == found.group(6) == f"q{answered}"
    assert unanswered <= 5 or int(found.group(5)) == unanswered - 5


def test_progress_lines_count_queries_and_retries(tmp_path):
    progress: list[str] = []
    with hf.serve(_faults({"q2": [hf.status(500)]})) as base:
        _produce(tmp_path, _runner(tmp_path, POST.format(base=base) + "concurrency: 1\n", progress,
                                   progress_every=0))
    assert progress[0] == "candidate: http: 1/12 queries, 0 retried"
    assert progress[-1] == "candidate: http: 12/12 queries, 1 retried"


def test_the_producer_caches_the_run_with_its_timings(tmp_path):
    faults = _faults({})
    with hf.serve(faults) as base:
        runner = _runner(tmp_path, POST.format(base=base))
        producer = RunProducer(runner, tmp_path / "work", cache_dir=tmp_path / "cache", progress=lambda m: None)
        ids = [qid for qid, _ in QUERIES]
        _, first = producer.produce(_request(tmp_path), ids, ids)
        _, again = producer.produce(_request(tmp_path), ids, ids)
    assert first.source == "runner" and again.source == "cache" and len(faults.seen) == len(QUERIES)
    assert again.timings is not None and again.timings.latency_ms.tolist() == [3.0] * len(QUERIES)


# --------------------------------------------------------------------------- config errors


CONFIG_ERRORS = [
    ('url: "http://127.0.0.1:9/{nope}"\nhits: h\nid: i\nscore: s\n', 6,
     "key 'runner.http.url': unknown placeholder {nope}"),
    ('url: "http://{config.host}/x"\nhits: h\nid: i\nscore: s\n', 6,
     "key 'runner.http.url': placeholders go in the path and query string only"),
    ('url: "http://127.0.0.1:9/{config}"\nhits: h\nid: i\nscore: s\n', 6,
     "key 'runner.http.url': {config} (the whole retrieval config) goes in the body only"),
    ('url: "http://user:pw@127.0.0.1:9/x"\nhits: h\nid: i\nscore: s\n', 6,
     "key 'runner.http.url': the address holds a user or password"),
    ('url: "ftp://127.0.0.1/x"\nhits: h\nid: i\nscore: s\n', 6, "is not an http:// or https:// address"),
    ('url: "http://127.0.0.1:9/x/{query:>99}"\nhits: h\nid: i\nscore: s\n', 6,
     "placeholder {query:>99} takes no format spec or conversion"),
    ('url: "http://127.0.0.1:9/x"\nbody:\n  a:\n    - "{query}"\n    - "{query"\nhits: h\nid: i\nscore: s\n', 10,
     "key 'runner.http.body.a.1': expected '}' before end of string"),
    ('url: "http://127.0.0.1:9/x"\nbody: "{query}"\nhits: h\nid: i\nscore: s\n', 7,
     "key 'runner.http.body': expected a mapping or a list"),
    ('url: "http://127.0.0.1:9/x"\nhits: "hits..hits"\nid: i\nscore: s\n', 7, "has an empty part"),
    ('url: "http://127.0.0.1:9/x"\nhits: h\nid: i\nscore: s\nconcurrency: "4"\n', 10,
     "key 'runner.http.concurrency': expected an integer, got the text '4'"),
    ('url: "http://127.0.0.1:9/x"\nhits: h\nid: i\nscore: s\nmethod: PUT\n', 10, "'PUT' is not one of GET, POST"),
    ('url: "http://127.0.0.1:9/x"\nhits: h\nid: i\nscore: s\nretry: 3\n', 10,
     "unknown key 'runner.http.retry' (did you mean 'runner.http.retries'?)"),
    ('url: "http://127.0.0.1:9/x"\nhits: h\nid: i\nscore: s\nheaders: {Content-Length: "3"}\n', 10,
     "header 'Content-Length' is set by the gate"),
    ('url: "http://127.0.0.1:9/x"\nhits: h\nid: i\nscore: s\nheaders: {X-A: "${A"}\n', 10,
     "'${' without its closing '}'"),
]


@pytest.mark.parametrize(("http", "line", "said"), CONFIG_ERRORS)
def test_a_config_error_is_one_line_at_its_line(tmp_path, http, line, said):
    with pytest.raises(InputError) as caught:
        load_config(_world(tmp_path, http))
    assert caught.value.line == line and said in str(caught.value) and "\n" not in str(caught.value)


def test_runner_type_http_needs_its_keys(tmp_path):
    config = load_config(_world(tmp_path, 'url: "http://127.0.0.1:9/x"\nid: i\nscore: s\n'))
    with pytest.raises(InputError) as caught:
        make_runner(config)
    assert caught.value.line == 4 and "runner.type is 'http' but runner.http.hits is not set" in str(caught.value)


def test_a_config_key_the_retrieval_config_lacks_is_one_line_naming_it(tmp_path):
    http = 'url: "http://127.0.0.1:9/{config.index}/{config.shards.0}"\nhits: h\nid: i\nscore: s\n'
    runner = make_runner(load_config(_world(tmp_path, http, retrieval="index: a\nshards: [s1]\n")))
    assert runner.settings.url.render({"config.index": "a b", "config.shards.0": "s1"}) == \
        "http://127.0.0.1:9/a%20b/s1"
    (tmp_path / "r.yml").write_text("shards: [s1]\n")
    with pytest.raises(InputError) as caught:
        runner.produce(_request(tmp_path), tmp_path / "r.yml", tmp_path / "x.run", tmp_path / "x.log")
    assert caught.value.line == 6
    assert "key 'runner.http.url': {config.index} names no key of the retrieval config" in str(caught.value)


def test_a_config_value_cannot_change_the_host(tmp_path):
    """The host is fixed text: a value with '@' or '/' or '..' is percent-encoded into the path."""
    faults = _faults({}, hf.fixed_hits_app(HITS, hf.query_param("id")))
    faults.key = hf.query_param("id")
    http = 'url: "{base}/s/{{config.index}}?id={{query_id}}"\nhits: hits.hits\nid: _id\nscore: _score\n'
    with hf.serve(faults) as base:
        config = load_config(_world(tmp_path, http.format(base=base), retrieval="index: \"@evil.example/../x\"\n"))
        runner = make_runner(config)
        runner.produce(_request(tmp_path), tmp_path / "r.yml", tmp_path / "o.run", tmp_path / "o.log")
    assert faults.requests_of("q0")[0].path == "/s/%40evil.example%2F..%2Fx?id=q0"


@pytest.mark.parametrize("index", ["..", ".", "%2E%2E"])
def test_a_value_that_is_a_dot_segment_of_the_path_is_one_line(tmp_path, index):
    """'/{config.index}/_search' with index '..' was sent as '/_search' (every index of an
    Elasticsearch): the client drops dot segments; '%2E%2E' is sent encoded, as data."""
    faults = _faults({}, hf.fixed_hits_app(HITS, hf.query_param("id")))
    faults.key = hf.query_param("id")
    http = 'url: "{base}/a/{{config.index}}/_search?id={{query_id}}"\nhits: hits.hits\nid: _id\nscore: _score\n'
    with hf.serve(faults) as base:
        runner = make_runner(load_config(_world(tmp_path, http.format(base=base), retrieval=f"index: '{index}'\n")))
        if index == "%2E%2E":
            runner.produce(_request(tmp_path), tmp_path / "r.yml", tmp_path / "o.run", tmp_path / "o.log")
            assert faults.requests_of("q0")[0].path == "/a/%252E%252E/_search?id=q0"
            return
        with pytest.raises(InputError) as caught:
            runner.produce(_request(tmp_path), tmp_path / "r.yml", tmp_path / "o.run", tmp_path / "o.log")
    assert caught.value.line == 6 and faults.seen == []
    assert f"key 'runner.http.url': query q0: the path '/a/{index}/_search' has a '.' or '..' segment" in \
        str(caught.value)


def test_two_body_keys_one_value_makes_are_one_line_naming_the_query(tmp_path):
    """A key rendered from the query text meets a literal key (old code: a TemplateError, exit 4)."""
    http = 'url: "http://127.0.0.1:9/s"\nbody: {"{query}": 1, "q3": 2}\nhits: h\nid: i\nscore: s\n'
    (tmp_path / "world").mkdir()
    runner = _runner(tmp_path / "world", http)
    (tmp_path / "world" / "q.tsv").write_text("q1\tq3\n")
    with pytest.raises(InputError) as caught:
        runner.produce(_request(tmp_path / "world"), tmp_path / "r.yml", tmp_path / "o.run", tmp_path / "o.log")
    assert caught.value.line == 7
    assert str(caught.value).endswith("key 'runner.http.body': query q1: two keys of the body become 'q3'")
