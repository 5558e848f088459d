"""The HTTP runner end to end on real data: TREC DL 2019 passage, two official runs served by a
real HTTP server on 127.0.0.1, judged by ``retrieval-gate run --base main`` in a git repository,
must give exactly the numbers ``retrieval-gate compare`` gives on the two run files.

The service answers each golden query from the official run its retrieval config names
(``system: bm25base_p`` on main, ``p_bert`` in the PR, sent as ``{config.system}`` in the body):
the run's hits in its file order with its scores, in Elasticsearch's shape. Both runs rank 1,000
passages per query and break ties in an order of their own (20 and 39 of the 43 judged queries,
one of them inside p_bert's top 10), so the runner must write what the service said and the
evaluation must order it by trec_eval's rule (score descending, docno descending), as it does a
run file (in the service's order AP's delta would differ); the same report, whatever the
concurrency and through 503s and 429s that are retried.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from tests.shared_data import REALDATA, need
from tests.support import http_faults as hf

DL19 = REALDATA / "runs" / "trec-dl-2019-passage"
BASELINE, CANDIDATE = "bm25base_p", "p_bert"
DEPTH = 1000
SAMPLES, SEED = 10_000, 7
ALSO = ["AP", "RR@10", "R@100", "Judged@10"]  # compare's default measures beside nDCG@10

Hits = Mapping[str, Sequence[tuple[str, float]]]  # query id -> (docno, score) in the service's order


@dataclass(frozen=True)
class Dl19:
    topics: Path  # the 43 judged topics, qid<TAB>text
    qrels: Path
    runs: Mapping[str, Path]  # system -> the official run file
    hits: Mapping[str, Hits]  # system -> what the service answers


def _read_official_run(path: Path) -> dict[str, list[tuple[str, float]]]:
    hits: dict[str, list[tuple[str, float]]] = {}
    with gzip.open(path, "rt") as handle:
        for line in handle:
            qid, _, docno, _, score, _ = line.split()
            hits.setdefault(qid, []).append((docno, float(score)))
    return hits


@pytest.fixture(scope="module")
def dl19(tmp_path_factory) -> Dl19:
    qrels = need(DL19 / "qrels" / "qrels.dl19-passage.txt")
    runs = {system: need(DL19 / "official_nist" / f"input.{system}.gz") for system in (BASELINE, CANDIDATE)}
    judged = {line.split()[0] for line in qrels.read_text().splitlines() if line.strip()}
    topics = tmp_path_factory.mktemp("dl19") / "topics.tsv"
    lines = [line for line in need(DL19 / "topics" / "topics.dl19-passage.txt").read_text().splitlines()
             if line.split("\t")[0] in judged]
    topics.write_text("\n".join(lines) + "\n")
    assert len(lines) == 43
    return Dl19(topics, qrels, runs, {system: _read_official_run(path) for system, path in runs.items()})


@pytest.fixture(scope="module")
def compared(dl19, tmp_path_factory) -> dict[str, Any]:
    """``retrieval-gate compare`` on the two official run files: the numbers to match."""
    out = tmp_path_factory.mktemp("compare")
    code = main(["compare", "--baseline", str(dl19.runs[BASELINE]), "--candidate", str(dl19.runs[CANDIDATE]),
                 "--qrels", str(dl19.qrels), "--queries", str(dl19.topics), "--metric", "nDCG@10",
                 "--also", ",".join(ALSO), "--samples", str(SAMPLES), "--seed", str(SEED), "--out", str(out)])
    assert code == 0
    return json.loads((out / "report.json").read_text())


# --------------------------------------------------------------------------- the service


def _service(hits: Mapping[str, Hits]) -> hf.App:
    """A search service answering ``{"qid", "system", "size"}`` with that system's hits, in order."""
    def app(environ: hf.Environ, start_response: hf.StartResponse) -> Iterable[bytes]:
        request = json.loads(hf.read_body(environ))
        if request.get("system") not in hits:  # a config value that did not arrive: say so, never guess
            data = json.dumps({"error": f"no system {request.get('system')!r}"}).encode()
            start_response("400 Bad Request", [("Content-Type", "application/json"),
                                               ("Content-Length", str(len(data)))])
            return [data]
        rows = hits[request["system"]].get(request["qid"], [])[: request["size"]]
        answer = {"took": 1, "hits": {"hits": [{"_id": doc, "_score": score} for doc, score in rows]}}
        data = json.dumps(answer).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
        return [data]

    return app


def _system_and_query(environ: hf.Environ, body: bytes) -> str | None:  # noqa: ARG001
    """A request's key for the faults: ``system/qid``, so the archive's and the PR's attempts count apart."""
    request = json.loads(body)
    return f"{request['system']}/{request['qid']}"


# --------------------------------------------------------------------------- the repository


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=dev@example.com", "-c", "user.name=dev", *args], cwd=root,
                          check=True, capture_output=True, text=True).stdout.strip()


def _gate_config(base_url: str, concurrency: int) -> str:
    return (
        "suite: dl19-passage\n"
        "golden: {queries: topics.tsv, qrels: qrels.txt, rel: 1}\n"
        f"metric: nDCG@10\nalso: [{', '.join(ALSO)}]\n"
        "retrieval: {config: retrieval.yml}\n"
        "runner:\n  type: http\n  http:\n"
        f'    url: "{base_url}/passages/_search"\n'
        '    body: {qid: "{query_id}", system: "{config.system}", query: {match: {text: "{query}"}}, '
        'size: "{depth}"}\n'
        "    hits: hits.hits\n    id: _id\n    score: _score\n    latency: took\n"
        f"    depth: {DEPTH}\n    concurrency: {concurrency}\n    retries: 2\n    backoff: 0.01\n"
        f"statistics: {{samples: {SAMPLES}, seed: {SEED}}}\n")


def _gate_on_a_pr(root: Path, dl19: Dl19, base_url: str, concurrency: int, out: Path) -> dict[str, Any]:
    """main archives ``system: bm25base_p`` and commits the baseline; a PR moves to p_bert and is
    judged by ``retrieval-gate run --base main``. Returns the PR's report.json."""
    root.mkdir()
    shutil.copyfile(dl19.topics, root / "topics.tsv")
    shutil.copyfile(dl19.qrels, root / "qrels.txt")
    (root / "retrieval.yml").write_text(f"system: {BASELINE}\n")
    (root / ".retrieval-gate.yml").write_text(_gate_config(base_url, concurrency))
    (root / ".gitignore").write_text(".retrieval-gate/cache/\n.retrieval-gate/work/\n.retrieval-gate/out/\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "the gate on DL 2019 passage, BM25")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        assert main(["archive"]) == 0
        _git(root, "add", "-A")
        _git(root, "commit", "-qm", "the archived baseline")
        _git(root, "checkout", "-q", "-b", "pr")
        (root / "retrieval.yml").write_text(f"system: {CANDIDATE}\n")
        _git(root, "commit", "-qam", "PR: BERT reranking")
        code = main(["run", "--base", "main", "--out", str(out)])
    report = json.loads((out / "report.json").read_text())
    assert code == 0 and report["verdict"]["kind"] == "pass", report["verdict"]["headline"]
    assert report["baseline"]["resolution"] == "reused", report["baseline"]
    return report


def _written_runs(root: Path) -> list[dict[str, list[tuple[str, int, float]]]]:
    """Every run the runner wrote into the cache: query -> (docno, rank, score) in the file's order."""
    runs = []
    for path in sorted((root / ".retrieval-gate" / "cache").rglob("*.run.gz")):
        run: dict[str, list[tuple[str, int, float]]] = {}
        with gzip.open(path, "rt") as handle:
            for line in handle:
                qid, _, docno, rank, score, _ = line.split()
                run.setdefault(qid, []).append((docno, int(rank), float(score)))
        runs.append(run)
    return runs


def _as_served(hits: Hits, topics: Path) -> dict[str, list[tuple[str, int, float]]]:
    qids = [line.split("\t")[0] for line in topics.read_text().splitlines()]
    return {qid: [(doc, rank, score) for rank, (doc, score) in enumerate(hits[qid][:DEPTH], 1)] for qid in qids}


def _trec_eval_order(rows: Sequence[tuple[str, float]]) -> list[str]:
    return [doc for doc, _ in sorted(rows, key=lambda row: (row[1], row[0]), reverse=True)]


def _nist_trec_eval(system: str, measure: str) -> float:
    """NIST's official summary value of ``measure`` for ``system`` (trec_eval, default settings)."""
    for line in need(DL19 / "nist_metadata" / "nist_summary_scores.tsv").read_text().splitlines():
        run_id, evaluator, name, query, value = line.split("\t")
        if (run_id, evaluator, name, query) == (system, "trec_eval", measure, "all"):
            return float(value)
    raise AssertionError(f"NIST's summary has no trec_eval {measure} for {system}")


def _numbers(report: dict[str, Any]) -> dict[str, Any]:
    """What must match: the means, the delta with its interval and counts, each query's values, the other measures."""
    delta = report["delta"]
    return {
        "metric": report["metric"],
        "baseline": report["baseline"]["mean"], "candidate": report["candidate"]["mean"],
        "delta": {key: delta[key] for key in ("mean", "ci_low", "ci_high", "p_le_zero", "samples", "seed", "method",
                                              "wins", "losses", "ties", "p_randomization", "mde")},
        "per_query": sorted((row["query_id"], row["baseline"], row["candidate"], row["delta"])
                            for row in report["per_query"]),
        "measures": report["measures"],
    }


# --------------------------------------------------------------------------- the tests


@pytest.mark.full  # its fixtures read 2 x 200,000 rows and run compare, ~1.5 s
def test_the_official_runs_break_ties_in_an_order_of_their_own_and_it_moves_ap(dl19, compared, tmp_path):
    """The premise of the test below: the services' order is not trec_eval's (one of p_bert's top
    10s differs), and evaluated in that order AP's delta would be another (nDCG@10's happens not
    to move): a runner or an evaluation that kept the service's order among ties fails below."""
    qids = [line.split("\t")[0] for line in dl19.topics.read_text().splitlines()]
    as_served = {}
    for system, differ, differ_top10 in ((BASELINE, 20, 0), (CANDIDATE, 39, 1)):
        served = {qid: [doc for doc, _ in dl19.hits[system][qid]] for qid in qids}
        ranked = {qid: _trec_eval_order(dl19.hits[system][qid]) for qid in qids}
        assert sum(served[q] != ranked[q] for q in qids) == differ
        assert sum(served[q][:10] != ranked[q][:10] for q in qids) == differ_top10
        assert {len(served[q]) for q in qids} == {DEPTH}
        as_served[system] = tmp_path / f"{system}.served.run"  # minus the rank: the service's order, no ties
        as_served[system].write_text("".join(f"{qid} Q0 {doc} {rank} {-rank} served\n" for qid in qids
                                             for rank, doc in enumerate(served[qid], 1)))
    out = tmp_path / "served"
    assert main(["compare", "--baseline", str(as_served[BASELINE]), "--candidate", str(as_served[CANDIDATE]),
                 "--qrels", str(dl19.qrels), "--queries", str(dl19.topics), "--also", ",".join(ALSO),
                 "--samples", "200", "--out", str(out)]) == 0
    in_service_order = json.loads((out / "report.json").read_text())["measures"]
    assert in_service_order["AP"]["delta"] != compared["measures"]["AP"]["delta"]
    assert in_service_order["nDCG@10"]["delta"] == compared["measures"]["nDCG@10"]["delta"]


# Faults on the first attempt of some queries, on both sides (the archive asks bm25base_p, the PR p_bert).
FAULTS: hf.Plan = {
    **{f"{system}/{qid}": [hf.status(503)] for system in (BASELINE, CANDIDATE)
       for qid in ("19335", "1037798", "87452")},
    **{f"{system}/{qid}": [hf.too_many_requests(0)] for system in (BASELINE, CANDIDATE)
       for qid in ("104861", "1133167", "490595")},
}


@pytest.mark.full  # two archives and gate runs over 43 x 1,000 hits per case, ~10 s: the full tier
@pytest.mark.parametrize("concurrency, plan", [(1, {}), (8, {}), (4, FAULTS)], ids=["concurrency-1", "concurrency-8",
                                                                                    "503-and-429"])
def test_run_base_main_through_http_gives_the_numbers_compare_gives_on_the_official_runs(
        dl19, compared, tmp_path, concurrency, plan):
    root = tmp_path / "repo"
    faults = hf.Faults(_service(dl19.hits), plan, _system_and_query)
    with hf.serve(faults) as base_url:
        report = _gate_on_a_pr(root, dl19, base_url, concurrency, tmp_path / "out")
    assert _numbers(report) == _numbers(compared)
    assert report["query_count"] == compared["query_count"] == 43
    # and they are NIST's official trec_eval figures for the two runs (to NIST's 4 decimals)
    for side, system in (("baseline", BASELINE), ("candidate", CANDIDATE)):
        measures = report["measures"]
        assert round(measures["nDCG@10"][side], 4) == _nist_trec_eval(system, "ndcg_cut_10"), side
        assert round(measures["AP"][side], 4) == _nist_trec_eval(system, "map"), side
    # the runner wrote each service's hits as answered (order, rank 1.., score), one run per side
    written = _written_runs(root)
    expected = [_as_served(dl19.hits[system], dl19.topics) for system in (BASELINE, CANDIDATE)]
    assert sorted(written, key=lambda run: run == expected[1]) == expected
    # every query was asked once per side, and each planned fault once more
    for system in (BASELINE, CANDIDATE):
        for qid in expected[0]:
            key = f"{system}/{qid}"
            assert len(faults.requests_of(key)) == (2 if key in plan else 1), key
    assert [json.loads(seen.body)["size"] for seen in faults.seen] == [DEPTH] * len(faults.seen)
