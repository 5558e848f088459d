"""{timings}: a command writes its run's timings sidecar, the box copies it out, the producer reads it
strictly and the run cache keeps it beside the run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gate.common.errors import InputError
from gate.inputs.retrieval_config import RetrievalConfig
from gate.runs.command import CommandRunner
from gate.runs.produce import RunProducer
from gate.runs.request import RunnerFailed, RunRequest

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the box is Linux's")

WRITE = """
import sys
run, timings = sys.argv[1], sys.argv[2]
open(run, "w").write("q1 Q0 d1 1 2.0 x\\nq2 Q0 d2 1 1.0 x\\n")
if timings != "-":
    open(timings, "w").write(open(sys.argv[3]).read())
"""
GOOD = ('{"query_id": "q1", "latency_ms": 12.5, "cost": 0.001}\n{"query_id": "q2", "latency_ms": 3, "cost": 0}\n'
        '{"run_wall_time_ms": 40}\n')


def _producer(tmp_path: Path, timings_arg: str, sidecar: str = GOOD) -> RunProducer:
    script = tmp_path / "search.py"
    script.write_text(WRITE)
    (tmp_path / "sidecar.jsonl").write_text(sidecar)  # what the command writes to {timings}
    template = f"{sys.executable} {script} {{run}} {timings_arg} {tmp_path / 'sidecar.jsonl'}"
    return RunProducer(CommandRunner(template), tmp_path / "work", cache_dir=tmp_path / "cache",
                       progress=lambda message: None)


def _request() -> RunRequest:
    return RunRequest(purpose="candidate", config=RetrievalConfig("r.yml", {"bm25": {"k1": 0.9}}), queries="q.tsv",
                      queries_sha256="q", corpus=None, corpus_sha256=None)


def test_the_sidecar_comes_back_with_the_run_and_is_kept_by_the_cache(tmp_path):
    producer = _producer(tmp_path, "{timings}")
    _, produced = producer.produce(_request(), ["q1", "q2"], ["q1", "q2", "q3"])
    assert produced.source == "runner" and produced.timings is not None
    assert produced.timings.latency_ms.tolist() == [12.5, 3.0] and produced.timings.origin == "run"
    assert produced.timings.cost is not None and produced.timings.run_wall_time_ms == 40.0
    _, again = producer.produce(_request(), ["q1", "q2"], ["q1", "q2", "q3"])
    assert again.source == "cache" and again.timings is not None and again.timings.origin == "cache"
    assert again.timings.latency_ms.tolist() == [12.5, 3.0]


def test_a_command_without_the_placeholder_has_no_timings(tmp_path):
    _, produced = _producer(tmp_path, "-").produce(_request(), ["q1", "q2"])
    assert produced.timings is None


def test_a_command_that_names_the_placeholder_and_writes_none_failed(tmp_path):
    script = tmp_path / "search.py"
    script.write_text(WRITE)
    runner = CommandRunner(f"{sys.executable} {script} {{run}} - {{timings}}")
    producer = RunProducer(runner, tmp_path / "work", progress=lambda message: None)
    with pytest.raises(RunnerFailed, match=r"did not write the timings file \{timings\}"):
        producer.produce(_request(), ["q1", "q2"])


def test_a_bad_sidecar_is_one_line_naming_its_file_and_line(tmp_path):
    bad = '{"query_id": "q1", "latency_ms": 1}\n{"query_id": "q2", "latency_ms": -4}\n'
    with pytest.raises(InputError) as caught:
        _producer(tmp_path, "{timings}", bad).produce(_request(), ["q1", "q2"])
    assert caught.value.line == 2 and "'latency_ms' must be 0 or more" in caught.value.message
    assert caught.value.path is not None and caught.value.path.endswith(".timings.jsonl")


def test_a_sidecar_that_misses_a_query_the_run_answers_is_refused(tmp_path):
    with pytest.raises(InputError, match="no timing for 1 query the run answers"):
        _producer(tmp_path, "{timings}", '{"query_id": "q1", "latency_ms": 1}\n').produce(_request(), ["q1", "q2"])


def test_a_cache_entry_without_timings_is_a_miss_for_a_runner_that_writes_them(tmp_path):
    producer = _producer(tmp_path, "{timings}")
    _, first = producer.produce(_request(), ["q1", "q2"])
    cached = next((tmp_path / "cache").rglob("*.timings.jsonl"))
    cached.unlink()
    _, again = producer.produce(_request(), ["q1", "q2"])
    assert first.source == "runner" and again.source == "runner" and again.timings is not None
