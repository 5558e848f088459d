"""Streaming corpus reader: JSONL, TSV (2 or 3 columns), BEIR folder; strict errors."""

from __future__ import annotations

import json

import pytest

from gate.common.errors import InputError
from gate.inputs.readers.corpus import iter_corpus
from gate.inputs.readers.records import Chunk
from tests.inputs.readers.helpers import expect_error, write


def read(path, **kw):
    return list(iter_corpus(path, **kw))


def jsonl(*objs) -> str:
    return "".join((o if isinstance(o, str) else json.dumps(o)) + "\n" for o in objs)


def test_jsonl_ids_titles_and_doc_ids(tmp_path):
    path = write(
        tmp_path,
        "c.jsonl",
        jsonl(
            {"chunk_id": "doc7#0", "id": "ignored", "text": "first part"},
            {"id": "doc7#1", "text": "second", "title": "Title"},
            "# comment",
            {"_id": "4983", "title": "", "text": "beir style", "metadata": {}},
            {"doc_id": "whole", "text": ""},
            {"id": 12, "doc_id": "parent", "text": "explicit parent"},
        ),
    )
    assert read(path) == [
        Chunk("doc7#0", "doc7", "first part"),
        Chunk("doc7#1", "doc7", "Title second"),
        Chunk("4983", "4983", "beir style"),
        Chunk("whole", "whole", ""),
        Chunk("12", "parent", "explicit parent"),
    ]


def test_streaming_is_lazy(tmp_path):
    path = write(tmp_path, "c.jsonl", jsonl({"id": "a", "text": "x"}) + "not json\n")
    it = iter_corpus(path)
    assert next(it) == Chunk("a", "a", "x")
    with pytest.raises(InputError, match="invalid JSON"):
        next(it)


@pytest.mark.parametrize(
    "line, message",
    [
        ("{bad", "invalid JSON: Expecting property name enclosed in double quotes (column 2)"),
        ('"text"', "expected a JSON object, got str"),
        ('{"text": "x"}', "missing chunk id (one of 'chunk_id', 'id', '_id', 'doc_id')"),
        ('{"id": "b"}', "'text' of chunk 'b' must be a string, got missing"),
        ('{"id": "b", "text": null}', "'text' of chunk 'b' must be a string, got a NoneType"),
        ('{"id": "b", "text": "x", "title": 3}', "'title' of chunk 'b' must be a string, got int"),
        ('{"id": "a", "text": "again"}', "duplicate chunk id 'a' (first at line 1)"),
    ],
)
def test_jsonl_errors(tmp_path, line, message):
    path = write(tmp_path, "c.jsonl", jsonl({"id": "a", "text": "x"}) + "\n" + line + "\n")
    expect_error(read, path, 3, message)


def test_duplicates_can_be_left_unchecked(tmp_path):
    path = write(tmp_path, "c.jsonl", jsonl({"id": "a", "text": "x"}, {"id": "a", "text": "y"}))
    assert len(read(path, check_duplicates=False)) == 2


def test_tsv_two_and_three_columns(tmp_path):
    two = write(tmp_path, "c.tsv", "id\ttext\nd1#0\tsome text\nd2\twith\ttab\n")
    assert read(two) == [Chunk("d1#0", "d1", "some text"), Chunk("d2", "d2", "with\ttab")]
    three = write(tmp_path, "c3.tsv", "d0#0\td0\tchunk zero\n\nd0#1\t\tno doc column\n", gz=False)
    assert read(three) == [Chunk("d0#0", "d0", "chunk zero"), Chunk("d0#1", "d0", "no doc column")]


def test_tsv_gz_and_errors(tmp_path):
    path = write(tmp_path, "c.tsv.gz", "a\tx\nb\ty\n", gz=True)
    assert [c.chunk_id for c in read(path)] == ["a", "b"]
    expect_error(read, write(tmp_path, "c.tsv", "a\tx\nno tab\n"), 2, "expected 'id<TAB>text', found 0 tab(s)")
    expect_error(read, write(tmp_path, "c.tsv", "a\tx\n\tempty id\n"), 2, "empty chunk id")
    expect_error(read, write(tmp_path, "c.tsv", "a\tx\nb\ty\na\tz\n"), 3, "duplicate chunk id 'a' (first at line 1)")


def test_missing_file(tmp_path):
    expect_error(read, tmp_path / "corpus.jsonl", None, "no such file")


@pytest.mark.parametrize("name", ["c.jsonl", "c.tsv"])
def test_at_end_duplicate_check_finds_a_repeat_after_the_stream_and_names_both_lines(tmp_path, name):
    from gate.inputs.readers.corpus import iter_corpus

    rows = [("a", "one"), ("b", "two"), ("c", "three"), ("b", "again"), ("d", "four")]
    path = tmp_path / name
    if name.endswith(".jsonl"):
        path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in rows))
    else:
        path.write_text("".join(f"{i}\t{t}\n" for i, t in rows))
    stream = iter_corpus(path, check_duplicates="at-end")
    got = [next(stream).chunk_id for _ in range(5)]  # every chunk is handed on first
    assert got == ["a", "b", "c", "b", "d"]
    with pytest.raises(InputError) as caught:
        next(stream)
    assert str(caught.value) == f"{path}:4: duplicate chunk id 'b' (first at line 2)"
    path.write_text(path.read_text().replace("b\tagain", "e\tagain").replace('"b", "text": "again"',
                                                                             '"e", "text": "again"'))
    assert [c.chunk_id for c in iter_corpus(path, check_duplicates="at-end")] == ["a", "b", "c", "e", "d"]


def test_json_nesting_is_refused_past_the_limit_at_the_same_depth_in_every_process():
    # Not left to the recursion limit, which moves with the stack in use (a child process, the
    # fast path and decode() refused at different depths: one line accepted here, refused there).
    import subprocess
    import sys

    from gate.common import limits
    from gate.inputs.readers.fields import parse_json_line

    deep = limits.MAX_NESTING
    assert parse_json_line("c.jsonl", 3, "[" * deep + "]" * deep) is not None
    assert parse_json_line("c.jsonl", 3, '{"t": "' + "[{" * 300 + '"}') == {"t": "[{" * 300}  # inside a string
    for line in ("[" * (deep + 1) + "]" * (deep + 1), '{"a":' * (deep + 1) + "1" + "}" * (deep + 1),
                 "[" * 988 + "]" * 988):
        with pytest.raises(InputError, match=rf"^c\.jsonl:3: invalid JSON: nested deeper than {deep} levels$"):
            parse_json_line("c.jsonl", 3, line)
    child = subprocess.run([sys.executable, "-c", "import sys; from gate.inputs.readers.fields import parse_json_line\n"
                            "try:\n parse_json_line('c.jsonl', 3, '[' * 988 + ']' * 988)\n"
                            "except Exception as e: print(e)"], capture_output=True, text=True)
    assert child.stdout.strip() == f"c.jsonl:3: invalid JSON: nested deeper than {deep} levels"
