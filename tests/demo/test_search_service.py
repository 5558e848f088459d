"""The reference retriever served over HTTP (gate.demo.search_service): a real threaded server on
127.0.0.1, asked concurrently, answers every demo query exactly as the in-process reference runner
ranks it (ids, scores, order, modelled latency), builds each index once however many first
requests race for it, and refuses bad requests with a JSON 4xx naming the problem."""

from __future__ import annotations

import http.client
import json
import random
import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

pytest.importorskip("faiss")
pytest.importorskip("bm25s")

from gate.demo import search_service as S  # noqa: E402
from gate.demo import world as W  # noqa: E402
from gate.inputs.readers.queries import read_queries  # noqa: E402
from gate.inputs.readers.timings import timings_path_for  # noqa: E402
from gate.inputs.retrieval_config import load_retrieval_config  # noqa: E402
from gate.runs.reference import ReferenceRunner, clear_caches  # noqa: E402
from gate.runs.request import RunRequest  # noqa: E402

SECRET = "service-test-token-5d0f"  # noqa: S105 - a test token, not a credential


@pytest.fixture()
def world(demo_world) -> W.World:
    return demo_world  # tests/demo/conftest.py: the demo's world at a tenth of the scale, built once


def post(url: str, body: Any, headers: dict[str, str] | None = None, method: str = "POST",
         raw: bytes | None = None) -> tuple[int, dict[str, Any], str]:
    """One request over a fresh connection: (status, the JSON answer, the raw text)."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=300)
    try:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        connection.request(method, parts.path, body=data,
                           headers={"Content-Type": "application/json", **(headers or {})})
        response = connection.getresponse()
        text = response.read().decode("utf-8")
        return response.status, json.loads(text), text
    finally:
        connection.close()


def in_process(world: W.World, tmp: Path, config_path: Path, seed: int) -> tuple[dict, dict]:
    """The reference runner's run of ``config_path`` on golden v5 (as the gate makes it): each
    query's [(id, score)] in rank order, read back from the TREC file, and its modelled latency."""
    retrieval = load_retrieval_config(config_path)
    out = tmp / f"{config_path.stem}-{seed}.run"
    request = RunRequest(purpose="test", config=retrieval, queries=str(world.golden_v5), queries_sha256="q",
                         corpus=str(world.corpus_v1), corpus_sha256="c", seed=seed)
    ReferenceRunner({}).produce(request, tmp / "config.yml", out, tmp / f"{config_path.stem}-{seed}.log")
    ranked: dict[str, list[tuple[str, float]]] = {}
    for line in out.read_text().splitlines():
        qid, _, doc, _, score, _ = line.split()
        ranked.setdefault(qid, []).append((doc, float(score)))  # scores are written with repr: exact
    latency = {}
    for line in Path(timings_path_for(out)).read_text().splitlines():
        row = json.loads(line)
        if "query_id" in row:
            latency[row["query_id"]] = row["latency_ms"]
    return ranked, latency


def _configs(world: W.World) -> list[tuple[Path, int]]:
    # the baseline (parser v1) at the gate's seed, the candidate (v2) at a noise repeat's
    return [(world.retrieval_old, 0), (world.retrieval_new, 3)]


def test_every_demo_query_through_the_service_is_the_in_process_runs_row(world, tmp_path):
    queries = read_queries(world.golden_v5).queries
    configs = _configs(world)
    expected = [in_process(world, tmp_path, path, seed) for path, seed in configs]
    clear_caches()  # the service builds its own indexes: nothing is shared with the runs above
    app = S.make_app(world.corpus_v1.parent, token=SECRET)
    requests = [(n, load_retrieval_config(path).data, seed, q) for n, (path, seed) in enumerate(configs)
                for q in queries]
    random.Random(1).shuffle(requests)  # both configs interleaved, queries out of order

    def ask(item):
        n, config, seed, q = item
        body = {"query": q.text, "query_id": q.query_id, "corpus": str(world.corpus_v1), "config": config,
                "size": 100, "seed": seed}
        return n, q.query_id, post(service.url, body, {"Authorization": f"Bearer {SECRET}"})

    with S.serve(app) as service, ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(ask, requests))
    assert app.builds == len(configs)  # the eight first requests racing for an index built it once
    for n, qid, (status, answer, text) in answers:
        assert status == 200, text
        ranked, latency = expected[n]
        assert [(hit["id"], hit["score"]) for hit in answer["hits"]] == ranked[qid], qid
        assert answer["took_ms"] == latency[qid], qid
    assert len(answers) == len(configs) * len(queries) == 280


def test_size_cuts_the_ranking_and_a_relative_corpus_is_read_under_the_root(world):
    config = load_retrieval_config(world.retrieval_old).data
    body = {"query": read_queries(world.golden_v5).queries[0].text, "corpus": world.corpus_v1.name,
            "config": config}
    with S.serve(S.make_app(world.corpus_v1.parent)) as service:
        status, full, text = post(service.url, body)
        assert status == 200, text
        status, cut, text = post(service.url, {**body, "size": 7})
    assert status == 200, text
    assert len(full["hits"]) == 100 and cut["hits"] == full["hits"][:7]
    assert cut["took_ms"] == full["took_ms"] > 0


def _body(world: W.World, **changes: Any) -> dict[str, Any]:
    body = {"query": "rotate an api key", "query_id": "q1", "corpus": str(world.corpus_v1),
            "config": load_retrieval_config(world.retrieval_old).data, "size": 10, "seed": 0}
    body.update(changes)
    return {k: v for k, v in body.items() if v is not None}


BAD_BODIES: list[tuple[str, Any, str]] = [
    ("no query", {"query": None}, "'query' must be a string"),
    ("a number for a query", {"query": 17}, "'query' must be a string"),
    ("config not an object", {"config": "lsa-128"}, "'config' must be the retrieval config"),
    ("an unknown model", {"config": {"embedding": {"model": "bert"}}}, "is not a reference model"),
    ("a weight out of range", {"config": {"fusion": {"weight": 2}}}, "'fusion.weight' must be in [0, 1]"),
    ("size 0", {"size": 0}, "'size' must be an integer in [1, 10000]"),
    ("size a string", {"size": "10"}, "'size' must be an integer"),
    ("a negative seed", {"seed": -1}, "'seed' must be an integer"),
    ("an unknown field", {"sise": 10}, "unknown field(s) 'sise'"),
    ("a corpus outside the root", {"corpus": "/etc/passwd"}, "outside the folder the service indexes"),
    ("a corpus escaping the root", {"corpus": "../../etc/passwd"}, "outside the folder the service indexes"),
    ("no such corpus", {"corpus": "nothing-here.jsonl", "config": {}}, "is not a corpus file"),
    ("a folder for a corpus", {"corpus": ".", "config": {}}, "is not a corpus file"),
    ("a parser without a snapshot", {"config": {"ingestion": {"parser": "v9"}}}, "no corpus snapshot"),
]


@pytest.mark.parametrize("changes,message", [(c, m) for _, c, m in BAD_BODIES], ids=[n for n, _, _ in BAD_BODIES])
def test_a_bad_request_gets_a_json_400_naming_the_problem(world, changes, message):
    with S.serve(S.make_app(world.corpus_v1.parent)) as service:
        status, answer, text = post(service.url, _body(world, **changes))
    assert status == 400, text
    assert message in answer["error"]
    assert "Traceback" not in text


@pytest.mark.parametrize("raw,message", [
    (b"{not json", "the body is not JSON"),
    (b"[1, 2]", "must be a JSON object, got list"),
    (b'{"query": NaN}', "NaN, which is not JSON"),
    (b"\xff\xfe", "the body is not JSON"),
    (b"", "the body is empty"),
], ids=["broken", "array", "nan", "not-utf8", "empty"])
def test_a_body_that_is_not_a_json_object_gets_a_400(world, raw, message):
    with S.serve(S.make_app(world.corpus_v1.parent)) as service:
        status, answer, text = post(service.url, None, raw=raw)
    assert status == 400, text
    assert message in answer["error"]


def test_paths_methods_tokens_and_sizes_are_refused_in_json(world):
    with S.serve(S.make_app(world.corpus_v1.parent, token=SECRET)) as service:
        root = service.url.rsplit("/", 1)[0]
        assert post(root + "/index", _body(world))[:2] == (404, {"error": "no such path '/index': POST /search"})
        status, answer, _ = post(service.url, None, method="GET")
        assert status == 405 and "POST /search" in answer["error"]
        status, answer, _ = post(service.url, _body(world))
        assert status == 401 and answer["error"] == "missing or wrong Authorization header"
        status, answer, _ = post(service.url, _body(world), {"Authorization": "Bearer wrong"})
        assert status == 401 and SECRET not in json.dumps(answer)
        status, answer, _ = post(service.url, _body(world), {"Authorization": f"Bearer {SECRET}"})
        assert status == 200 and len(answer["hits"]) == 10
        # a Content-Length beyond the limit is refused before a byte of the body is read
        parts = urlsplit(service.url)
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        connection.putrequest("POST", parts.path)
        connection.putheader("Content-Length", str(S.MAX_BODY_BYTES + 1))
        connection.putheader("Authorization", f"Bearer {SECRET}")
        connection.endheaders()
        response = connection.getresponse()
        assert response.status == 413 and "at most" in json.loads(response.read())["error"]
        connection.close()


def test_stop_closes_the_port(world):
    service = S.serve(S.make_app(world.corpus_v1.parent))
    parts = urlsplit(service.url)
    service.stop()
    service.stop()  # idempotent
    with pytest.raises(OSError), socket.create_connection((parts.hostname, parts.port), timeout=10):
        pass
