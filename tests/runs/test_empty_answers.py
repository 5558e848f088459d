"""A query the search service answers with no hits is covered and scores 0; a query the runner
never answered still fails the run. The carrier is the timings sidecar's ``"hits": 0``
(docs/runners.md, Timings): written by the HTTP runner for every query, by a command runner
through ``{timings}``, given with ``--candidate-timings``, kept with the archive, the cache and
the stored noise repeats. The HTTP tests run a real server on 127.0.0.1 (tests/support/http_faults.py).
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from gate.cli import main
from gate.common.errors import InputError
from gate.evaluation.measures import parse_measure
from gate.inputs.config import load_config
from gate.inputs.readers.qrels import load_qrels
from gate.inputs.readers.records import Run
from gate.inputs.retrieval_config import RetrievalConfig
from gate.pipeline.archive import archive
from gate.runs.command import CommandRunner
from gate.runs.produce import RunProducer, missing_queries
from gate.runs.request import RunnerFailed, RunRequest
from gate.statistics.band import noise_from_runs
from tests.runs.test_http_runner import _point_at, _small_http_world
from tests.support import http_faults as hf

EMPTY = "q_0005"  # the golden query the service finds nothing for
NO_HITS = json.dumps({"took": 1, "hits": {"hits": []}}).encode()


def _empty_for(app: hf.App, query_id: str = EMPTY) -> hf.App:
    """``app``, except that ``query_id`` is answered ``{"hits": []}`` (a 200, not an error)."""
    def answer(environ, start_response):
        body = hf.read_body(environ)
        if json.loads(body)["qid"] == query_id:
            start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(NO_HITS)))])
            return [NO_HITS]
        environ["wsgi.input"], environ["CONTENT_LENGTH"] = io.BytesIO(body), str(len(body))
        return app(environ, start_response)

    return answer


def _report(tmp_path: Path, name: str = "out") -> dict:
    return json.loads((tmp_path / name / "report.json").read_text())


def _archived_http_world(tmp_path: Path) -> tuple[Path, hf.Faults]:
    """The small world over HTTP, archived while the service answers EMPTY with no hits; then a
    PR's change of the boost."""
    path, app = _small_http_world(tmp_path)
    faults = hf.Faults(_empty_for(app), {}, hf.json_field("qid"))
    return path, faults


# --------------------------------------------------------------------------- end to end, over HTTP


def test_a_query_answered_with_no_hits_scores_0_and_the_gate_decides_then_serves_it_from_the_cache(tmp_path):
    path, faults = _archived_http_world(tmp_path)
    with hf.serve(faults) as base:
        _point_at(path, base)
        archive(load_config(path), progress=lambda m: None)  # old code: "misses 1 of 20 golden queries"
        (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 1.5\n")
        code = main(["run", "--config", str(path), "--out", str(tmp_path / "out")])
        asked = len(faults.seen)
        again = main(["run", "--config", str(path), "--out", str(tmp_path / "again")])
    report = _report(tmp_path)
    assert code in (0, 1) and code == report["verdict"]["exit_code"]
    scored = next(q for q in report["per_query"] if q["query_id"] == EMPTY)
    assert scored["baseline"] == 0.0 and scored["candidate"] == 0.0
    assert report["query_count"] == 20 and report["queries"]["missing_in_candidate"] == [EMPTY]
    assert ("1 golden query was answered with no documents by the candidate's runner: it scores 0 on every measure"
            in report["warnings"])
    # The archived baseline is reused (not replayed): 20 requests to archive, 20 for the candidate.
    assert report["baseline"]["resolution"] == "reused" and asked == 40
    # The second run is a cache hit: no request more, the same verdict.
    second = _report(tmp_path, "again")
    assert len(faults.seen) == asked and second["candidate"]["source"] == "cache"
    assert again == code and second["per_query"] == report["per_query"]


def test_the_run_log_counts_the_queries_answered_with_no_hits(tmp_path):
    path, faults = _archived_http_world(tmp_path)
    with hf.serve(faults) as base:
        _point_at(path, base)
        archive(load_config(path), progress=lambda m: None)
    log = next((tmp_path / ".retrieval-gate").rglob("logs/*.log")).read_text()
    assert f"query {EMPTY}: the answer holds no hits" in log and "20 queries answered (1 with no hits)" in log
    sidecar = next((tmp_path / ".retrieval-gate").rglob("runs/*.timings.jsonl")).read_text().splitlines()
    lines = {line["query_id"]: line for line in map(json.loads, sidecar) if "query_id" in line}
    assert lines[EMPTY]["hits"] == 0 and lines["q_0004"]["hits"] == 20


def test_an_archived_baseline_with_an_empty_answer_is_rescored_and_plan_needs_no_replay(tmp_path, capsys):
    """The qrels change after the archive: the archived lists cover today's queries (the empty
    answer is in the timings kept with the manifest), so the baseline is re-scored, not replayed."""
    path, faults = _archived_http_world(tmp_path)
    with hf.serve(faults) as base:
        _point_at(path, base)
        archive(load_config(path), progress=lambda m: None)
        qrels = tmp_path / "qrels.txt"
        qrels.write_text(qrels.read_text().replace("q_0003 0 guide/errors-3#c1 1", "q_0003 0 guide/errors-3#c1 0"))
        (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 1.5\n")
        capsys.readouterr()
        assert main(["plan", "--config", str(path), "--format", "json"]) == 0
        planned = {p["purpose"]: p for p in json.loads(capsys.readouterr().out)}
        code = main(["run", "--config", str(path), "--out", str(tmp_path / "out")])
    assert not planned["baseline replay"]["needed"], planned["baseline replay"]["why"]
    report = _report(tmp_path)
    assert code in (0, 1) and report["baseline"]["resolution"] == "rescored"
    assert len(faults.seen) == 40  # archive and candidate: no replay


def test_a_candidate_run_file_covers_an_empty_answer_only_with_its_timings(tmp_path, capsys):
    path, faults = _archived_http_world(tmp_path)
    with hf.serve(faults) as base:
        _point_at(path, base)
        archive(load_config(path), progress=lambda m: None)
    run = next((tmp_path / ".retrieval-gate").rglob("runs/*.run"))
    timings = run.with_name(run.name.replace(".run", ".timings.jsonl"))
    given = tmp_path / "candidate.run"
    given.write_text(run.read_text())
    without = main(["run", "--config", str(path), "--candidate-run", str(given), "--out", str(tmp_path / "no")])
    said = json.dumps(_report(tmp_path, "no")["verdict"])
    code = main(["run", "--config", str(path), "--candidate-run", str(given), "--candidate-timings", str(timings),
                 "--out", str(tmp_path / "out")])
    assert without == 3 and "misses 1 of 20 golden queries (e.g. q_0005)" in said and '\\"hits\\": 0' in said
    assert code in (0, 1) and next(q for q in _report(tmp_path)["per_query"] if q["query_id"] == EMPTY)[
        "candidate"] == 0.0


def test_stored_noise_repeats_with_an_empty_answer_are_rescored_not_stale(tmp_path):
    path, faults = _archived_http_world(tmp_path)
    with hf.serve(faults) as base:
        _point_at(path, base)
        manifest = archive(load_config(path), noise_repeats=2, progress=lambda m: None).manifest
        band = manifest.extra["noise_band"]
        assert band["runs_answered_empty"] == [[EMPTY], [EMPTY]]
        qrels = tmp_path / "qrels.txt"
        qrels.write_text(qrels.read_text().replace("q_0003 0 guide/errors-3#c1 1", "q_0003 0 guide/errors-3#c1 0"))
        (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 1.5\n")
        code = main(["run", "--config", str(path), "--out", str(tmp_path / "out")])
    report = _report(tmp_path)
    assert code in (0, 1) and report["noise_band"]["state"] == "rescored", report["noise_band"]["reason"]


# --------------------------------------------------------------------------- a command runner's {timings}


WRITE = """
import sys
run, timings = sys.argv[1], sys.argv[2]
open(run, "w").write("q1 Q0 d1 1 2.0 x\\nq1 Q0 d3 2 1.5 x\\n")
open(timings, "w").write(open(sys.argv[3]).read())
"""


def _command_producer(tmp_path: Path, sidecar: str) -> RunProducer:
    script = tmp_path / "search.py"
    script.write_text(WRITE)
    (tmp_path / "sidecar.jsonl").write_text(sidecar)  # what the command writes to {timings}
    runner = CommandRunner(f"{sys.executable} {script} {{run}} {{timings}} {tmp_path / 'sidecar.jsonl'}")
    return RunProducer(runner, tmp_path / "work", cache_dir=tmp_path / "cache", progress=lambda message: None)


def _request() -> RunRequest:
    return RunRequest(purpose="candidate", config=RetrievalConfig("r.yml", {"bm25": {"k1": 0.9}}), queries="q.tsv",
                      queries_sha256="q", corpus=None, corpus_sha256=None)


ANSWERED_EMPTY = '{"query_id": "q1", "latency_ms": 3, "hits": 2}\n{"query_id": "q2", "latency_ms": 1, "hits": 0}\n'


def test_a_command_runner_names_its_empty_answer_in_timings_and_the_cache_keeps_it(tmp_path):
    producer = _command_producer(tmp_path, ANSWERED_EMPTY)
    run, produced = producer.produce(_request(), ["q1", "q2"], ["q1", "q2"])
    assert run.query_ids == ("q1",) and produced.timings is not None
    assert produced.timings.answered_empty == {"q2"}
    _, again = producer.produce(_request(), ["q1", "q2"], ["q1", "q2"])
    assert again.source == "cache" and again.timings is not None and again.timings.answered_empty == {"q2"}


def test_a_baseline_run_whose_queries_are_not_given_may_name_an_empty_golden_query(tmp_path):
    _, produced = _command_producer(tmp_path, ANSWERED_EMPTY).produce(_request(), ["q1", "q2"])
    assert produced.timings is not None and produced.timings.answered_empty == {"q2"}


@pytest.mark.parametrize("sidecar", [
    '{"query_id": "q1", "latency_ms": 3}\n',  # no line for q2 at all
    '{"query_id": "q1", "latency_ms": 3}\n{"query_id": "q2", "latency_ms": 1}\n',  # timed, but no "hits": 0
    '{"query_id": "q1", "latency_ms": 3, "hits": 2}\n{"query_id": "q2", "latency_ms": 1, "hits": 4}\n',
], ids=["no-line", "no-hits-key", "hits-4"])
def test_a_query_the_runner_dropped_still_fails_the_run(tmp_path, sidecar):
    producer = _command_producer(tmp_path, sidecar)
    if '"hits": 4' in sidecar:  # a count the run does not hold: the sidecar is not this run's
        with pytest.raises(InputError) as caught:
            producer.produce(_request(), ["q1", "q2"])
        assert caught.value.line == 2 and "'hits' is 4 but the run" in caught.value.message
        return
    with pytest.raises(RunnerFailed, match=r"misses 1 of 2 golden queries \(e\.g\. q2\)"):
        producer.produce(_request(), ["q1", "q2"])


def test_hits_0_for_a_query_the_run_ranks_is_refused_at_its_line(tmp_path):
    sidecar = '{"query_id": "q1", "latency_ms": 3, "hits": 0}\n{"query_id": "q2", "latency_ms": 1, "hits": 0}\n'
    with pytest.raises(InputError) as caught:
        _command_producer(tmp_path, sidecar).produce(_request(), ["q1", "q2"])
    assert caught.value.line == 1 and "'hits' is 0 but the run" in caught.value.message
    assert "holds 2 for query 'q1'" in caught.value.message


# --------------------------------------------------------------------------- the one rule, and a band from files


def test_missing_queries_counts_an_empty_answer_as_covered():
    run = Run.from_rankings("r", {"q1": {"d1": 1.0}})
    assert missing_queries(run, ["q1", "q2", "q3"]) == ["q2", "q3"]
    assert missing_queries(run, ["q1", "q2", "q3"], frozenset({"q2"})) == ["q3"]


def test_a_band_from_run_files_covers_their_empty_answers(tmp_path):
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\nq2 0 d2 1\n")
    paths = []
    for n in (1, 2):
        path = tmp_path / f"r{n}.run"
        path.write_text(f"q1 Q0 d1 1 {n}.0 x\n")
        paths.append(path)
    measure = parse_measure("nDCG@10").with_default_rel(1)
    with pytest.raises(InputError, match="misses 1 of 2 judged queries"):
        noise_from_runs(paths, load_qrels(tmp_path / "qrels.txt"), ["q1", "q2"], measure, 1)
    for path in paths:
        path.with_name(path.stem + ".timings.jsonl").write_text(
            '{"query_id": "q1", "latency_ms": 2, "hits": 1}\n{"query_id": "q2", "latency_ms": 1, "hits": 0}\n')
    band = noise_from_runs(paths, load_qrels(tmp_path / "qrels.txt"), ["q1", "q2"], measure, 1)
    assert band.runs == 2 and band.overall.means == (0.5, 0.5)


def test_a_config_sweep_over_a_service_with_an_empty_answer_scores_it_0(tmp_path):
    path, faults = _archived_http_world(tmp_path)
    path.write_text(path.read_text() + "sweep: {params: {boost: [1.0, 2.0]}, folds: 4}\n")
    with hf.serve(faults) as base:
        _point_at(path, base)
        code = main(["sweep", "--config", str(path), "--out", str(tmp_path / "sweep")])  # old code: exit 2, misses
    sweep = json.loads((tmp_path / "sweep" / "report.json").read_text())["sweep"]
    assert code == 0 and [c["params"] for c in sweep["cells"]] == [{"boost": 1.0}, {"boost": 2.0}]


# --------------------------------------------------------------------------- run files given to sweep and factorial

EMPTY_Q2 = '{"query_id": "q1", "latency_ms": 2, "hits": 1}\n{"query_id": "q2", "latency_ms": 1, "hits": 0}\n'


def _cell_runs(tmp_path: Path, names: list[str], sidecar: str | None) -> list[Path]:
    """One run file per name, each ranking d1 for q1 only (q2 answered with nothing), with
    ``sidecar`` beside each when given; qrels judge q1 and q2."""
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\nq2 0 d2 1\n")
    paths = []
    for n, name in enumerate(names, 1):
        path = tmp_path / f"{name}.run"
        path.write_text(f"q1 Q0 d1 1 {n}.0 x\n")
        if sidecar is not None:
            path.with_name(f"{name}.timings.jsonl").write_text(sidecar)
        paths.append(path)
    return paths


def test_sweep_cells_given_as_run_files_read_the_empty_answers_in_their_sidecars(tmp_path, capsys):
    names = ["a", "b"]
    args = ["sweep", "--qrels", str(tmp_path / "qrels.txt"), "--folds", "2", "--format", "json"]
    for name, path in zip(names, _cell_runs(tmp_path, names, None)):
        args += ["--cell", f"{name}={path}"]
    assert main(args) == 2  # no sidecar: q2 is missing from both cells, refused
    assert "misses 1 golden query" in capsys.readouterr().err
    _cell_runs(tmp_path, names, EMPTY_Q2)
    assert main(args) == 0
    cells = json.loads(capsys.readouterr().out)["cells"]
    assert [c["mean"] for c in cells] == [0.5, 0.5]  # q1 scores 1, q2 (answered with nothing) 0


def test_factorial_cells_given_as_run_files_read_the_empty_answers_in_their_sidecars(tmp_path, capsys):
    levels = ["model=old,corpus=old", "model=new,corpus=old", "model=old,corpus=new", "model=new,corpus=new"]
    names = ["oo", "no", "on", "nn"]
    args = ["factorial", "--factor", "model", "--factor", "corpus", "--qrels", str(tmp_path / "qrels.txt"),
            "--samples", "200", "--format", "json"]
    for level, path in zip(levels, _cell_runs(tmp_path, names, None)):
        args += ["--cell", f"{level}={path}"]
    assert main(args) == 2  # no sidecar: q2 is missing from every cell, refused
    assert "q2" in capsys.readouterr().err
    _cell_runs(tmp_path, names, EMPTY_Q2)
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert "missing" not in json.dumps(report.get("notes", [])).lower()


def test_a_bad_sidecar_beside_a_cells_run_is_one_line_naming_it(tmp_path, capsys):
    names = ["a", "b"]
    paths = _cell_runs(tmp_path, names, EMPTY_Q2)
    paths[1].with_name("b.timings.jsonl").write_text('{"query_id": "q1", "latency_ms": 2, "hits": 5}\n')
    args = ["sweep", "--qrels", str(tmp_path / "qrels.txt"), "--folds", "2"]
    for name, path in zip(names, paths):
        args += ["--cell", f"{name}={path}"]
    assert main(args) == 2
    said = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("[retrieval-gate]")]
    assert len(said) == 1 and "b.timings.jsonl:1: 'hits' is 5 but the run" in said[0]


def test_a_sidecar_line_of_a_query_not_scored_is_left_out_unless_it_claims_documents(tmp_path):
    """A runner times every golden query it was given, judged or not: noise --from-runs (and the
    cells of sweep and factorial) score the judged ones, and leave out the line of an unjudged
    query it found nothing for; a line saying that query had documents contradicts the run."""
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\nq2 0 d2 1\n")
    paths = []
    for n in (1, 2):
        path = tmp_path / f"r{n}.run"
        path.write_text(f"q1 Q0 d1 1 {n}.0 x\n")
        path.with_name(f"r{n}.timings.jsonl").write_text(
            EMPTY_Q2 + '{"query_id": "q9-unjudged", "latency_ms": 1, "hits": 0}\n')
        paths.append(path)
    measure = parse_measure("nDCG@10").with_default_rel(1)
    band = noise_from_runs(paths, load_qrels(tmp_path / "qrels.txt"), ["q1", "q2"], measure, 1)
    assert band.runs == 2 and band.overall.means == (0.5, 0.5)
    paths[1].with_name("r2.timings.jsonl").write_text(
        EMPTY_Q2 + '{"query_id": "q9-unjudged", "latency_ms": 1, "hits": 3}\n')
    with pytest.raises(InputError) as caught:
        noise_from_runs(paths, load_qrels(tmp_path / "qrels.txt"), ["q1", "q2"], measure, 1)
    assert caught.value.line == 3 and "'hits' is 3 but the run has no line for query 'q9-unjudged'" in str(caught.value)
