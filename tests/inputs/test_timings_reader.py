"""The timings sidecar reader: strict, one line per problem."""

from __future__ import annotations

import pytest

from gate.common.errors import InputError
from gate.inputs.readers.timings import read_timings, require_answered, timings_path_for


def _write(tmp_path, text: str):
    path = tmp_path / "run.timings.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


def test_reads_queries_costs_and_the_run_line(tmp_path):
    path = _write(tmp_path, '{"query_id": "q1", "latency_ms": 12.5, "cost": 0.00012}\n'
                            '# a comment\n\n'
                            '{"run_wall_time_ms": 8123.0}\n'
                            '{"query_id": "q2", "latency_ms": 3, "cost": 0}\n')
    timings = read_timings(path, ["q1", "q2", "q3"])
    assert timings.query_ids == ("q1", "q2")
    assert timings.latency_ms.tolist() == [12.5, 3.0]
    assert timings.cost is not None and timings.cost.tolist() == [0.00012, 0.0]
    assert timings.run_wall_time_ms == 8123.0
    latency, cost = timings.aligned(["q2", "q1"])
    assert latency.tolist() == [3.0, 12.5] and cost is not None and cost.tolist() == [0.0, 0.00012]


def test_hits_is_optional_on_each_line_and_0_is_an_empty_answer(tmp_path):
    timings = read_timings(_write(tmp_path, '{"query_id": "q1", "latency_ms": 1, "hits": 3}\n'
                                            '{"query_id": "q2", "latency_ms": 2, "hits": 0}\n'
                                            '{"query_id": "q3", "latency_ms": 2}\n'), ["q1", "q2", "q3"])
    assert timings.hits == {"q1": 3, "q2": 0} and timings.answered_empty == {"q2"}
    assert read_timings(_write(tmp_path, '{"query_id": "q1", "latency_ms": 1}\n')).answered_empty == frozenset()


def test_without_cost_the_cost_is_none(tmp_path):
    timings = read_timings(_write(tmp_path, '{"query_id": "q1", "latency_ms": 1}\n'))
    assert timings.cost is None and timings.run_wall_time_ms is None


@pytest.mark.parametrize("text, line, problem", [
    ('{"query_id": "q1", "latency_ms": 1}\n{"query_id": "q1", "latency_ms": 2}\n', 2, "duplicate query id 'q1'"),
    ('{"query_id": "q1", "latency_ms": -1}\n', 1, "'latency_ms' must be 0 or more"),
    ('{"query_id": "q1", "latency_ms": NaN}\n', 1, "NaN is not a JSON number"),
    ('{"query_id": "q1", "latency_ms": Infinity}\n', 1, "Infinity is not a JSON number"),
    ('{"query_id": "q1", "latency_ms": 1e999}\n', 1, "'latency_ms' must be finite"),
    ('{"query_id": "q1", "latency_ms": true}\n', 1, "'latency_ms' must be a number, got the boolean true"),
    ('{"query_id": "q1", "latency_ms": "12"}\n', 1, "'latency_ms' must be a number, got the string '12'"),
    ('{"query_id": "q1", "latency_ms": 1, "cost": -0.5}\n', 1, "'cost' must be 0 or more"),
    # finite, but 60 of them sum to inf: a mean cost or a bootstrap would overflow
    ('{"query_id": "q1", "latency_ms": 1, "cost": 1e308}\n', 1, "'cost' must be at most 1e+12, got 1e+308"),
    ('{"query_id": "q1", "latency_ms": 1e13}\n', 1, "'latency_ms' must be at most 1e+12"),
    ('{"query_id": "q1", "latency_ms": 1, "speed": 3}\n', 1, "unknown key 'speed'"),
    ('{"query_id": "q1"}\n', 1, "missing 'latency_ms'"),
    ('{"query_id": 7, "latency_ms": 1}\n', 1, "'query_id' must be a string"),
    ('{"query_id": "q9", "latency_ms": 1}\n', 1, "query id 'q9' is not one the runner was given"),
    ('{"query_id": "q1", "latency_ms": 1, "cost": 1}\n{"query_id": "q2", "latency_ms": 1}\n', 2,
     "'cost' is all or none"),
    ('{"run_wall_time_ms": 1}\n{"run_wall_time_ms": 2}\n', 2, "a second 'run_wall_time_ms' line (first at line 1)"),
    ('{"run_wall_time_ms": 1, "query_id": "q1"}\n', 1, "a run line holds 'run_wall_time_ms' only"),
    ('[1, 2]\n', 1, "expected a JSON object"),
    ('{"query_id": "q1", "latency_ms": 1, "hits": -1}\n', 1, "'hits' must be between 0 and 1000000000, got -1"),
    ('{"query_id": "q1", "latency_ms": 1, "hits": 1.0}\n', 1, "'hits' must be a whole number of documents, got float"),
    ('{"query_id": "q1", "latency_ms": 1, "hits": "0"}\n', 1, "got the string '0'"),
    ('{"query_id": "q1", "latency_ms": 1, "hits": false}\n', 1, "got the boolean false"),
    ('{"query_id": "q1", "latency_ms": 1, "hits": null}\n', 1, "got null"),
    ('{"query_id": "q1", "latency_ms": 1\n', 1, "invalid JSON"),
])
def test_bad_sidecars_are_one_line_naming_the_line(tmp_path, text, line, problem):
    with pytest.raises(InputError) as caught:
        read_timings(_write(tmp_path, text), ["q1", "q2"])
    assert caught.value.line == line
    assert problem in caught.value.message
    assert "\n" not in str(caught.value)


def test_a_query_the_run_answers_must_have_its_timing(tmp_path):
    timings = read_timings(_write(tmp_path, '{"query_id": "q1", "latency_ms": 1}\n'))
    require_answered(timings, ["q1"])
    with pytest.raises(InputError, match="no timing for 1 query the run answers \\(e.g. 'q2'\\)"):
        require_answered(timings, ["q1", "q2"])


def test_an_overlong_line_is_refused_without_reading_it_whole(tmp_path):
    path = _write(tmp_path, '{"query_id": "' + "x" * 100_000 + '", "latency_ms": 1}\n')
    with pytest.raises(InputError) as caught:
        read_timings(path)
    assert caught.value.line == 1


def test_a_sidecar_padded_with_blank_lines_is_refused_at_the_line_beyond_the_limit(tmp_path):
    # Valid line by line, but 600 MB of newlines took the run cache 640 MB of memory and 100 s.
    from gate.inputs.readers.timings import MAX_SKIPPED_BYTES

    path = _write(tmp_path, '{"query_id": "q1", "latency_ms": 1}\n# a comment\n' + "\n" * (MAX_SKIPPED_BYTES + 10))
    with pytest.raises(InputError) as caught:
        read_timings(path, ["q1"])
    assert caught.value.line == 2 + MAX_SKIPPED_BYTES - len("# a comment\n") + 1
    assert "more than 1 MiB of blank or # lines" in caught.value.message
    kept = _write(tmp_path, '# header\n\n{"query_id": "q1", "latency_ms": 1}\n\n')  # a few are fine
    assert read_timings(kept, ["q1"]).query_ids == ("q1",)


def test_the_sidecar_sits_beside_its_run():
    assert timings_path_for("/r/abc.run") == "/r/abc.timings.jsonl"
    assert timings_path_for("/r/abc.run.gz") == "/r/abc.timings.jsonl"
    assert timings_path_for("abc") == "abc.timings.jsonl"
