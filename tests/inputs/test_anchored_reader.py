"""The anchored judgments reader: documents, spans, quotes and chunks; one-line errors; detection."""

from __future__ import annotations

import json

import pytest

from gate.inputs.readers.anchored import Judgment, is_anchored_file, read_anchored
from tests.inputs.readers.helpers import expect_error, write


def jsonl(*objs) -> str:
    return "".join((o if isinstance(o, str) else json.dumps(o)) + "\n" for o in objs)


MIXED = jsonl(
    {"query_id": "q1", "doc_id": "guides/setup", "grade": 2},
    {"query_id": "q1", "doc_id": "guides/setup", "start": 120, "end": 380, "grade": 3},
    "# a comment line, skipped",
    "",
    {"query_id": "q1", "doc_id": "guides/setup", "quote": "the exact passage", "grade": 3},
    {"query_id": "q2", "chunk_id": "guides/setup#2", "grade": 1},
    {"query_id": "q2", "doc_id": "faq", "start": 0, "end": 10, "grade": 0},
    {"query_id": 7, "doc_id": 42, "grade": -1},
)


@pytest.mark.parametrize("gz", [False, True])
def test_counted_fixture(tmp_path, gz):
    path = write(tmp_path, "judged.jsonl.gz" if gz else "judged.jsonl", MIXED, gz=gz)
    found = read_anchored(path)
    assert len(found.judgments) == 6
    assert list(dict.fromkeys(j.query_id for j in found.judgments)) == ["q1", "q2", "7"]
    assert found.counts() == {"document": 2, "span": 2, "quote": 1, "chunk": 1}
    assert found.judgments[0] == Judgment("q1", 2, doc_id="guides/setup", line=1)
    assert found.judgments[1] == Judgment("q1", 3, doc_id="guides/setup", start=120, end=380, line=2)
    assert found.judgments[2].quote == "the exact passage" and found.judgments[2].line == 5
    assert found.judgments[3] == Judgment("q2", 1, chunk_id="guides/setup#2", line=6)
    assert found.judgments[-1] == Judgment("7", -1, doc_id="42", line=8)  # integer ids read as text
    assert is_anchored_file(path)


def test_as_qrels_keys_every_anchor_apart(tmp_path):
    found = read_anchored(write(tmp_path, "j.jsonl", MIXED))
    qrels = found.as_qrels()
    assert len(qrels) == 6 and qrels.query_ids() == ["q1", "q2", "7"]
    assert set(qrels.judgments["q1"]) == {"doc:guides/setup", "span:guides/setup[120,380)",
                                          next(k for k in qrels.judgments["q1"] if k.startswith("quote:"))}
    assert qrels.highest_label() == 3


BROKEN = [
    ('{"query_id": "q1", "doc_id": "d", "grade": 1, "score": 2}', "unknown key 'score' (a judgment has query_id, "
     "doc_id or chunk_id, start and end or quote, and grade)"),
    ('{"query_id": "q1", "doc_id": "d"}', "missing 'grade'"),
    ('{"query_id": "q1", "doc_id": "d", "grade": 1.5}', "'grade' must be an integer, got 1.5 (integer grades only)"),
    ('{"query_id": "q1", "doc_id": "d", "grade": "2"}', "'grade' must be an integer, got '2' (integer grades only)"),
    ('{"query_id": "q1", "doc_id": "d", "grade": true}', "'grade' must be an integer, got True "
     "(integer grades only)"),
    ('{"doc_id": "d", "grade": 1}', "missing 'query_id'"),
    ('{"query_id": "q1", "grade": 1}', "missing 'doc_id' (or 'chunk_id'): what the judgment is about"),
    ('{"query_id": "q1", "doc_id": ["a", "b"], "grade": 1}', "'doc_id' must be a string, got list"),
    ('{"query_id": "q1", "doc_id": "d", "start": 5, "end": 5, "grade": 1}',
     "span start 5 is not before its end 5 (offsets are [start, end))"),
    ('{"query_id": "q1", "doc_id": "d", "start": -1, "end": 5, "grade": 1}',
     "'start' is -1: character offsets are not negative"),
    ('{"query_id": "q1", "doc_id": "d", "start": 1, "grade": 1}',
     "a span needs both 'start' and 'end' (found only 'start')"),
    ('{"query_id": "q1", "doc_id": "d", "start": 1.0, "end": 4, "grade": 1}',
     "'start' must be an integer character offset, got 1.0"),
    ('{"query_id": "q1", "doc_id": "d", "start": 1, "end": 4, "quote": "x", "grade": 1}',
     "a judgment has a span ('start', 'end') or a 'quote', not both"),
    ('{"query_id": "q1", "doc_id": "d", "quote": "  ", "grade": 1}', "empty 'quote'"),
    ('{"query_id": "q1", "doc_id": "d", "quote": 3, "grade": 1}', "'quote' must be a string, got int"),
    ('{"query_id": "q1", "chunk_id": "c", "doc_id": "d", "grade": 1}',
     "a chunk judgment has 'chunk_id' and 'grade' only (no doc_id, span or quote: the chunk is the anchor)"),
    ('["q1", "d", 1]', "expected a JSON object (one judgment), got list"),
    ('{"query_id": "", "doc_id": "d", "grade": 1}', "empty query_id"),
]


@pytest.mark.parametrize(("line", "message"), BROKEN)
def test_broken_shapes_are_one_line_at_their_line(tmp_path, line, message):
    path = write(tmp_path, "j.jsonl", jsonl({"query_id": "q0", "doc_id": "d", "grade": 1}, line))
    expect_error(read_anchored, path, 2, message)


@pytest.mark.parametrize(("second", "message"), [
    ({"query_id": "q1", "doc_id": "d", "grade": 0}, "document 'd' (doc-level) is judged twice for query 'q1' "
                                                   "(first at line 1)"),
    ({"query_id": "q1", "doc_id": "d", "start": 1, "end": 9, "grade": 0},
     "the span [1, 9) of document 'd' is judged twice for query 'q1' (first at line 2)"),
    ({"query_id": "q1", "doc_id": "d", "quote": "some words", "grade": 2},
     "the same quote of document 'd' is judged twice for query 'q1' (first at line 3)"),
    ({"query_id": "q1", "chunk_id": "d#1", "grade": 2}, "chunk 'd#1' is judged twice for query 'q1' (first at line 4)"),
])
def test_the_same_anchor_twice_is_refused(tmp_path, second, message):
    first = [{"query_id": "q1", "doc_id": "d", "grade": 1},
             {"query_id": "q1", "doc_id": "d", "start": 1, "end": 9, "grade": 1},
             {"query_id": "q1", "doc_id": "d", "quote": "some words", "grade": 1},
             {"query_id": "q1", "chunk_id": "d#1", "grade": 1}]
    path = write(tmp_path, "j.jsonl", jsonl(*first, second))
    expect_error(read_anchored, path, 5, message)


def test_the_same_anchor_for_another_query_is_fine(tmp_path):
    path = write(tmp_path, "j.jsonl", jsonl({"query_id": "q1", "doc_id": "d", "grade": 1},
                                            {"query_id": "q2", "doc_id": "d", "grade": 1}))
    assert len(read_anchored(path).judgments) == 2


def test_invalid_json_and_overlong_lines_are_one_line(tmp_path):
    path = write(tmp_path, "j.jsonl", '{"query_id": "q1", "doc_id": "d", "grade": 1,}\n')
    expect_error(read_anchored, path, 1, "invalid JSON: Expecting property name enclosed in double quotes "
                                         "(column 46)")
    huge = write(tmp_path, "huge.jsonl", '{"query_id": "q1", "doc_id": "d", "quote": "' + "x" * (2 << 20) + '"}\n')
    with pytest.raises(Exception) as info:
        read_anchored(huge)
    assert "\n" not in str(info.value) and ":1:" in str(info.value)


@pytest.mark.parametrize(("name", "content", "anchored"), [
    ("j.jsonl", '{"query_id": "q", "doc_id": "d", "grade": 1}\n', True),
    ("j.jsonl", '# note\n{"query_id": "q", "chunk_id": "c", "grade": 1}\n', True),
    ("j.jsonl", '{"query-id": "q", "corpus-id": "d", "score": 1}\n', False),  # no grade
    ("j.jsonl", "not json\n", False),
    ("j.tsv", '{"query_id": "q", "doc_id": "d", "grade": 1}\n', False),  # named otherwise
    ("qrels.txt", "q 0 d 1\n", False),
])
def test_detection(tmp_path, name, content, anchored):
    assert is_anchored_file(write(tmp_path, name, content)) is anchored


def test_detection_of_a_missing_file_is_false(tmp_path):
    assert not is_anchored_file(tmp_path / "absent.jsonl")
