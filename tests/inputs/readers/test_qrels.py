"""Qrels reader: TREC 4-column, compact 3-column, BEIR TSV; strict errors."""

from __future__ import annotations

import pytest

from gate.inputs.readers.qrels import load_qrels, read_qrels
from tests.inputs.readers.helpers import expect_error, write

TREC = "q1 0 d1 1\nq1 0 d2 0\n# c\n\nq2 0 d1 2\nq1 0 d3 -1\n"


def test_trec_four_columns(tmp_path):
    qrels = read_qrels(write(tmp_path, "qrels.txt", TREC))
    assert {q: dict(d) for q, d in qrels.judgments.items()} == {
        "q1": {"d1": 1, "d2": 0, "d3": -1},
        "q2": {"d1": 2},
    }
    assert list(qrels.judgments) == ["q1", "q2"]  # file order of first appearance
    assert list(qrels.judgments["q1"]) == ["d1", "d2", "d3"]
    assert len(qrels) == 4 and qrels.negative_is_judged is False
    assert qrels.source == str(tmp_path / "qrels.txt")


def test_compact_three_columns_with_trailing_blanks(tmp_path):
    qrels = read_qrels(write(tmp_path, "cranqrel", "1 184 2 \n1 29 -1 \n2 5 4\n"))
    assert {q: dict(d) for q, d in qrels.judgments.items()} == {"1": {"184": 2, "29": -1}, "2": {"5": 4}}


def test_beir_tsv_header_and_tabs(tmp_path):
    path = write(tmp_path, "test.tsv", "query-id\tcorpus-id\tscore\n1\tdoc a\t1\n2\t31715818\t0\n")
    qrels = read_qrels(path)
    assert {q: dict(d) for q, d in qrels.judgments.items()} == {"1": {"doc a": 1}, "2": {"31715818": 0}}


def test_beir_header_only_on_first_line(tmp_path):
    path = write(tmp_path, "test.tsv", "1\td\t1\nquery-id\tcorpus-id\tscore\n")
    expect_error(read_qrels, path, 2, "relevance 'score' is not an integer (integer labels only)")


def test_gzip_and_crlf(tmp_path):
    path = write(tmp_path, "qrels.txt.gz", TREC.replace("\n", "\r\n"), gz=True)
    assert len(read_qrels(path)) == 4


def test_empty_file_gives_empty_qrels(tmp_path):
    assert len(read_qrels(write(tmp_path, "qrels.txt", "# nothing\n"))) == 0


def test_load_qrels_dispatches_files(tmp_path):
    assert len(load_qrels(str(write(tmp_path, "qrels.txt", TREC)))) == 4


@pytest.mark.parametrize("label", ["1.5", "1.0", "x", "", "1e0", "0x1"])
def test_non_integer_relevance(tmp_path, label):
    path = write(tmp_path, "qrels.txt", f"q 0 a 1\nq 0 b 0\nq 0 c 2\nq 0 d {label}\n".replace(" \n", " ?\n"))
    shown = label if label else "?"
    expect_error(read_qrels, path, 4, f"relevance '{shown}' is not an integer (integer labels only)")


def test_relevance_message_text(tmp_path):
    path = write(tmp_path, "qrels.txt", "q 0 a 1\nq 0 b 0\nq 0 c 2\nq 0 d 1.5\n")
    expect_error(read_qrels, path, 4, "relevance '1.5' is not an integer (integer labels only)")


def test_bad_first_line_width(tmp_path):
    expect_error(
        read_qrels,
        write(tmp_path, "qrels.txt", "\nq 0 a 1 extra\n"),
        2,
        "expected 4 fields 'qid iter docno rel' or 3 fields 'qid docno rel', got 5",
    )


def test_later_line_with_other_width(tmp_path):
    expect_error(
        read_qrels,
        write(tmp_path, "qrels.txt", "q 0 a 1\nq 0 b 0\nq c 1\n"),
        3,
        "expected 4 fields 'qid iter docno rel', like the first line, got 3",
    )
    expect_error(
        read_qrels,
        write(tmp_path, "qrels.txt", "q a 1\nq 0 b 1\n"),
        2,
        "expected 3 fields 'qid docno rel', like the first line, got 4",
    )


def test_beir_line_without_three_tab_fields(tmp_path):
    path = write(tmp_path, "test.tsv", "query-id\tcorpus-id\tscore\n1\td 1\n")
    expect_error(read_qrels, path, 2, "expected 3 fields 'qid docno rel' (BEIR qrels: tab separated), got 2")


def test_duplicate_judgment_names_both_lines(tmp_path):
    path = write(tmp_path, "qrels.txt", "q 0 a 1\n# c\nq 0 b 0\nr 0 a 1\nq 0 a 1\n")
    expect_error(read_qrels, path, 5, "duplicate judgment of document 'a' for query 'q' (first at line 1)")


def test_duplicate_in_other_judgment_group(tmp_path):
    path = write(tmp_path, "qrels.txt", "q 0 a 1\nq 1 a 0\n")
    expect_error(
        read_qrels,
        path,
        2,
        "duplicate judgment of document 'a' for query 'q' (first at line 1); "
        "column 2 differs ('0', '1'): multiple judgment groups are not supported",
    )


def test_missing_file(tmp_path):
    expect_error(read_qrels, tmp_path / "q.txt", None, "no such file")
