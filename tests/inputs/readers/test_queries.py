"""Golden query readers: TSV and JSONL, strict errors."""

from __future__ import annotations

import json

import pytest

from gate.inputs.readers.queries import load_queries, read_queries
from gate.inputs.readers.records import Query
from tests.inputs.readers.helpers import expect_error, write


def test_tsv_splits_on_first_tab(tmp_path):
    path = write(tmp_path, "q.tsv", "# golden\n1\tdo goldfish grow\n\n2\ta\tb  \n")
    qs = read_queries(path)
    assert qs.queries == (Query("1", "do goldfish grow"), Query("2", "a\tb"))
    assert qs.ids() == ["1", "2"] and len(qs) == 2 and qs.source == str(path)


@pytest.mark.parametrize("name", ["topics.txt", "queries.tsv", "queries", "q.tsv.gz"])
def test_tsv_for_other_extensions(tmp_path, name):
    path = write(tmp_path, name, "7\tseven\n", gz=name.endswith(".gz"))
    assert read_queries(path).queries == (Query("7", "seven"),)


def test_tsv_missing_tab(tmp_path):
    expect_error(read_queries, write(tmp_path, "q.tsv", "1\tok\n2 no tab here\n"), 2,
                 "expected 'qid<TAB>text', found no tab")


def test_tsv_empty_text_and_id(tmp_path):
    expect_error(read_queries, write(tmp_path, "q.tsv", "1\tok\n2\t   \n"), 2, "empty text for query '2'")
    expect_error(read_queries, write(tmp_path, "q.tsv", "\ttext\n"), 1, "empty query id")


def test_tsv_duplicate_id(tmp_path):
    path = write(tmp_path, "q.tsv", "1\ta\n2\tb\n1\tc\n")
    expect_error(read_queries, path, 3, "duplicate query id '1' (first at line 1)")


def jsonl(*objs) -> str:
    return "".join((o if isinstance(o, str) else json.dumps(o)) + "\n" for o in objs)


def test_jsonl_id_keys_stratum_and_metadata(tmp_path):
    path = write(
        tmp_path,
        "q.jsonl",
        jsonl(
            {"query_id": "a", "_id": "ignored", "text": "first", "stratum": "billing", "lang": "en"},
            "# comment",
            {"_id": "b", "text": " second ", "metadata": {"source": "beir"}},
            {"qid": 3, "text": "third"},
        ),
    )
    qs = read_queries(path)
    assert [q.query_id for q in qs.queries] == ["a", "b", "3"]
    a, b, c = qs.queries
    assert a.stratum == "billing" and a.metadata == {"_id": "ignored", "lang": "en"}
    assert b.text == "second" and b.metadata == {"source": "beir"} and b.stratum is None
    assert c.text == "third"


@pytest.mark.parametrize("name", ["q.json", "q.jsonl.gz"])
def test_jsonl_by_extension(tmp_path, name):
    path = write(tmp_path, name, jsonl({"qid": "1", "text": "x"}), gz=name.endswith(".gz"))
    assert read_queries(path).queries == (Query("1", "x"),)


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"qid": "2", "text": "x"', "invalid JSON: Expecting ',' delimiter (column 25)"),
        ('["qid", "text"]', "expected a JSON object, got list"),
        ('{"id": "2", "text": "x"}', "missing query id (one of 'query_id', '_id', 'qid')"),
        ('{"qid": "2"}', "missing 'text' for query '2'"),
        ('{"qid": "2", "text": 5}', "'text' of query '2' must be a string, got int"),
        ('{"qid": "2", "text": ""}', "empty text for query '2'"),
        ('{"qid": true, "text": "x"}', "query id 'qid' must be a string or an integer, got bool"),
        ('{"qid": "2", "text": "x", "stratum": 3}', "'stratum' of query '2' must be a string, got int"),
        ('{"qid": "1", "text": "again"}', "duplicate query id '1' (first at line 1)"),
    ],
)
def test_jsonl_errors(tmp_path, line, message):
    path = write(tmp_path, "q.jsonl", '{"qid": "1", "text": "ok"}\n\n' + line + "\n")
    expect_error(read_queries, path, 3, message)


def test_json_array_file_is_explained(tmp_path):
    path = write(tmp_path, "q.json", '[\n  {"qid": "1", "text": "x"}\n]\n')
    expect_error(read_queries, path, 1, "expected JSON Lines (one object per line), found a JSON array")


def test_load_queries_dispatch(tmp_path):
    path = write(tmp_path, "q.tsv", "1\tone\n")
    assert load_queries(str(path)).ids() == ["1"]
    beir = tmp_path / "beir"
    write(beir, "queries.jsonl", jsonl({"_id": "9", "text": "nine"}))
    assert load_queries(beir).ids() == ["9"]


def test_missing_file(tmp_path):
    expect_error(read_queries, tmp_path / "none.jsonl", None, "no such file")
