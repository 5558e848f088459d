"""U+0085 (NEL), U+2028 and U+2029: line ends to ``str.splitlines()``, not to the gate.

The readers end lines at LF (CRLF), as trec_eval and ir_datasets do. A queries TSV whose lines
ended in U+2028 was read as one query (its text swallowing the others) while a runner splitting
with ``splitlines()`` read them all (issue 35): in the files a runner reads too (queries,
corpus, lists of query ids) a line holding one is refused at its line; run and qrels ids keep
them, as trec_eval reads ids.
"""

from __future__ import annotations

import gzip
import json

import pytest

from gate.common.errors import InputError
from gate.inputs.readers.corpus import iter_corpus
from gate.inputs.readers.qrels import load_qrels
from gate.inputs.readers.queries import load_queries, read_query_ids
from gate.inputs.readers.runs import read_run

SEPARATORS = {"NEL": "\x85", "LS": "\u2028", "PS": "\u2029"}


def _refused(read, path, line: int, char: str) -> None:
    with pytest.raises(InputError) as caught:
        read(path)
    code = f"U+{ord(char):04X}"
    assert caught.value.line == line and code in caught.value.message, str(caught.value)
    assert "LF or CRLF" in caught.value.message and "\n" not in str(caught.value)


@pytest.mark.parametrize("sep", SEPARATORS.values(), ids=SEPARATORS.keys())
def test_a_queries_tsv_whose_lines_end_in_a_unicode_separator_is_refused(tmp_path, sep):
    path = tmp_path / "queries.tsv"
    path.write_text(f"q1\tfirst query{sep}q2\tsecond query{sep}q3\tthird query\n", encoding="utf-8")
    assert len(f"q1\tfirst query{sep}q2\tsecond query{sep}q3\tthird query".splitlines()) == 3
    _refused(load_queries, path, 1, sep)


@pytest.mark.parametrize("sep", SEPARATORS.values(), ids=SEPARATORS.keys())
def test_one_inside_a_later_line_is_refused_at_that_line(tmp_path, sep):
    path = tmp_path / "queries.tsv.gz"
    path.write_bytes(gzip.compress(f"q1\tfine\n# a comment\nq2\tcafé{sep}au lait\n".encode()))
    _refused(load_queries, path, 3, sep)


@pytest.mark.parametrize("sep", SEPARATORS.values(), ids=SEPARATORS.keys())
def test_the_corpus_and_query_id_lists_refuse_them_too(tmp_path, sep):
    tsv = tmp_path / "corpus.tsv"
    tsv.write_text(f"id\ttext\nd1\tone\nd2\ttwo{sep}d3\tthree\n", encoding="utf-8")
    _refused(lambda p: list(iter_corpus(p)), tsv, 3, sep)
    jsonl = tmp_path / "corpus.jsonl"
    jsonl.write_text(json.dumps({"id": "d1", "text": f"a{sep}b"}, ensure_ascii=False) + "\n", encoding="utf-8")
    _refused(lambda p: list(iter_corpus(p)), jsonl, 1, sep)
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"_id": "q0", "text": "x"}\n' + json.dumps({"_id": "q1", "text": f"a{sep}b"},
                                                                    ensure_ascii=False) + "\n", encoding="utf-8")
    _refused(load_queries, queries, 2, sep)
    ids = tmp_path / "tuning.txt"
    ids.write_text(f"q1\nq2{sep}q3\n", encoding="utf-8")
    _refused(read_query_ids, ids, 2, sep)


@pytest.mark.parametrize("sep", SEPARATORS.values(), ids=SEPARATORS.keys())
def test_escaped_in_a_json_string_it_is_text(tmp_path, sep):
    """The way out the message names: JSON's own escape (json.dumps writes it by default)."""
    path = tmp_path / "queries.jsonl"
    path.write_text(json.dumps({"_id": "q1", "text": f"a{sep}b"}) + "\n", encoding="utf-8")
    assert load_queries(path).queries[0].text == f"a{sep}b"


@pytest.mark.parametrize("sep", SEPARATORS.values(), ids=SEPARATORS.keys())
def test_run_and_qrels_ids_keep_them_as_trec_eval_does(tmp_path, sep):
    run = tmp_path / "run.txt"
    run.write_text(f"q1 Q0 d{sep}1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n", encoding="utf-8")
    assert [str(d) for d in read_run(run).ranking("q1")[0]] == [f"d{sep}1", "d2"]
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(f"q1 0 d{sep}1 1\n", encoding="utf-8")
    assert dict(load_qrels(qrels).judgments["q1"]) == {f"d{sep}1": 1}


def test_the_first_problem_is_the_one_named(tmp_path):
    """A separator on line 2 and a control character on line 3 of one block: line 2."""
    path = tmp_path / "queries.tsv"
    path.write_bytes("q1\tfine\nq2\ta\u2028b\nq3\tc\x01d\n".encode())
    _refused(load_queries, path, 2, "\u2028")
    path.write_bytes("q1\tfine\nq2\tc\x01d\nq3\ta\u2028b\n".encode())
    with pytest.raises(InputError) as caught:
        load_queries(path)
    assert caught.value.line == 2 and "control character 0x01" in caught.value.message
