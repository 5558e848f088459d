"""The judgment formats search teams keep: each read from a hand-made file following the
project's documentation and from one shaped like the project's own sample (tests/fixtures/
judgments, each citing what it follows), counted; broken files refused in one line."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from gate.common.errors import InputError
from gate.inputs.readers.judgment_formats import judgment_format, read_judgment_file
from gate.inputs.readers.judgment_formats.text_keys import normalized, text_id
from gate.inputs.readers.qrels import load_qrels
from gate.inputs.readers.queries import load_queries
from gate.inputs.readers.records import Qrel

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "judgments"
GOLDEN = FIXTURES / "golden_queries.tsv"


def _golden():
    return load_queries(GOLDEN)


# (file, with the golden queries?, queries, judgments, first row, last row)
COUNTED = [
    ("rank_eval_docs.json", False, 2, 3, Qrel("q1", "d1", 3), Qrel("q2", "d7", 1)),
    ("rank_eval_real.json", False, 2, 4, Qrel("amsterdam_query", "doc1", 0), Qrel("berlin_query", "doc1", 1)),
    ("search_relevance_docs.json", True, 3, 4, Qrel("q1", "d1", 3), Qrel(text_id("not a golden query"), "d4", 2)),
    ("search_relevance_real.json", False, 2, 4, Qrel(text_id("button"), "B07D29PHFY", 1),
     Qrel(text_id("keyboard"), "B01D8YNJH0", 2)),
    ("rre_docs.json", True, 3, 7, Qrel("q1", "d1", 3), Qrel("q2", "d9", 1)),
    ("rre_real.json", False, 4, 7, Qrel(text_id("fender"), "1", 3), Qrel(text_id("Jazz Bass"), "1", 3)),
    ("quepid_rre_real.json", False, 2, 6, Qrel(text_id("star trek"), "193", 1),
     Qrel(text_id("star wars"), "1895", 2)),
    ("quepid_docs.csv", True, 3, 4, Qrel("q1", "d1", 3), Qrel("q2", "d7", 1)),
    ("quepid_basic_real.csv", False, 2, 2, Qrel(text_id("star wars"), "3574597", 3),
     Qrel(text_id("star trek"), "193", 1)),
    ("quepid_detailed_real.csv", False, 2, 2, Qrel(text_id("star wars"), "3574597", 3),
     Qrel(text_id("star trek"), "193", 2)),
]


@pytest.mark.parametrize("name,golden,queries,judgments,first,last", COUNTED, ids=[c[0] for c in COUNTED])
def test_each_format_reads_counted(name, golden, queries, judgments, first, last):
    qrels = load_qrels(FIXTURES / name, queries=_golden() if golden else None)
    rows = list(qrels)
    assert (len(qrels.judgments), len(qrels), rows[0], rows[-1]) == (queries, judgments, first, last)


def test_rre_group_variants_each_get_the_group_judgments():
    qrels = load_qrels(FIXTURES / "rre_docs.json", queries=_golden())
    # 'install the agent' (q1) and 'agent install' (q3) are two variants of one group
    assert qrels.judgments["q1"] == qrels.judgments["q3"] == {"d1": 3, "d2": 1}
    assert qrels.judgments["q2"] == {"d7": 2, "d8": 2, "d9": 1}  # grouped by gain, on the query itself


def test_text_matching_collapses_whitespace_keeps_case_and_counts_the_unmatched():
    qrels = load_qrels(FIXTURES / "search_relevance_docs.json", queries=_golden())
    assert "q2" in qrels.judgments  # 'rotate  logs' (two spaces) is golden 'rotate logs'
    assert [q for q in qrels.judgments if q.startswith("t-")] == [text_id("not a golden query")]
    ids = set(load_qrels(FIXTURES / "rre_real.json").judgments)
    assert text_id("fender") in ids and text_id("Fender") in ids  # case kept: two queries
    assert normalized(" a \u00a0 b\t") == "a b" and text_id("a  b") == text_id("a b")


def test_quepid_formula_guard_is_read_back_as_the_text():
    qrels = load_qrels(FIXTURES / "quepid_docs.csv", queries=_golden())
    assert qrels.judgments["q4"] == {"d5": 1}  # '" =cmd"' in the CSV, '=cmd' in the golden set


def test_rank_eval_indices_same_rating_kept_once_null_rating_skipped():
    judged = read_judgment_file(FIXTURES / "rank_eval_docs.json")
    assert judged is not None and judged.format == "rank-eval" and not judged.keyed_by_text
    assert [(r.query, r.doc_id) for r in judged.ratings] == [("q1", "d1"), ("q1", "d2"), ("q2", "d7")]


def test_detection_by_content_not_extension(tmp_path):
    body = (FIXTURES / "rank_eval_real.json").read_text()
    (tmp_path / "ratings.txt").write_text(body)
    assert judgment_format(tmp_path / "ratings.txt") == "json"
    assert len(load_qrels(tmp_path / "ratings.txt")) == 4
    (tmp_path / "judgments.tsv").write_text("query,docid,rating\nstar wars,1,3\n")
    assert len(load_qrels(tmp_path / "judgments.tsv")) == 1
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    assert judgment_format(tmp_path / "qrels.txt") is None


def test_bom_and_crlf_read_as_the_plain_file(tmp_path):
    plain = (FIXTURES / "quepid_docs.csv").read_bytes()
    (tmp_path / "bom.csv").write_bytes(b"\xef\xbb\xbf" + plain.replace(b"\n", b"\r\n"))
    assert load_qrels(tmp_path / "bom.csv").judgments == load_qrels(FIXTURES / "quepid_docs.csv").judgments
    body = (FIXTURES / "rre_real.json").read_bytes()
    (tmp_path / "bom.json").write_bytes(b"\xef\xbb\xbf" + body.replace(b"\n", b"\r\n"))
    assert load_qrels(tmp_path / "bom.json").judgments == load_qrels(FIXTURES / "rre_real.json").judgments


_RE = '{"requests": [{"id": "q1", "request": {}, "ratings": [%s]}]}'
BROKEN = [
    ("truncated.json", '{"requests": [{"id": "q1", "request": {}, "ratings": [',
     r"truncated\.json:1: invalid JSON: Expecting"),
    ("types.json", '{"requests": {"id": "q1"}}', r"types\.json: requests: expected an array"),
    ("rating.json", _RE % '{"_index": "i", "_id": "d1", "rating": 1.5}',
     r"rating\.json: requests\[0\]\.ratings\[0\]\.rating: rating '1\.5' is not a whole number"),
    ("ratingtext.json", _RE % '{"_index": "i", "_id": "d1", "rating": "high"}',
     r"requests\[0\]\.ratings\[0\]\.rating: rating 'high' is not a number"),
    ("noid.json", _RE % '{"_index": "i", "rating": 1}', r"requests\[0\]\.ratings\[0\]: missing '_id'"),
    ("noreqid.json", '{"requests": [{"request": {}, "ratings": []}]}', r"requests\[0\]: missing 'id'"),
    ("dup.json", _RE % '{"_index": "i", "_id": "d1", "rating": 1}, {"_index": "i", "_id": "d1", "rating": 1}',
     r"requests\[0\]\.ratings\[1\]: duplicate rating of 'd1' in index 'i' \(first at requests\[0\]\.ratings\[0\]\)"),
    ("twoidx.json", _RE % '{"_index": "a", "_id": "d1", "rating": 1}, {"_index": "b", "_id": "d1", "rating": 2}',
     r"'d1' is rated 2 here and 1 at requests\[0\]\.ratings\[0\] \(another index\)"),
    ("dupkey.json", '{"requests": [], "requests": []}', r"key 'requests' appears twice"),
    ("empty.json", "", r"empty\.json: no judgments \(the file is empty\)"),
    ("nothing.json", '{"requests": []}', r"nothing\.json: no judgments"),
    ("other.json", '{"hits": []}', r"other\.json: not a judgment format the gate reads \(keys 'hits'\): expected "
                                   r"Elasticsearch/OpenSearch _rank_eval"),
    ("srw.json", '{"judgmentRatings": [{"query": "a", "ratings": [{"rating": "1"}]}]}',
     r"judgmentRatings\[0\]\.ratings\[0\]: missing 'docId'"),
    ("srwdup.json", '{"judgmentRatings": [{"query": "a b", "ratings": [{"docId": "d", "rating": "1"}]}, '
                    '{"query": "a  b", "ratings": [{"docId": "d", "rating": "2"}]}]}',
     r"judgmentRatings\[1\]\.ratings\[0\]: duplicate rating of document 'd' for query 'a b' \(first at "
     r"judgmentRatings\[0\]\.ratings\[0\]\)"),
    ("rre.json", '{"topics": [{"query_groups": [{"queries": [{"placeholders": {"$q": "x"}}]}]}]}',
     r"topics\[0\]\.query_groups\[0\]\.queries\[0\]\.placeholders: missing '\$query'"),
    ("rrenodocs.json", '{"topics": [{"query_groups": [{"queries": [{"placeholders": {"$query": "x"}}]}]}]}',
     r"topics\[0\]\.query_groups\[0\]\.queries\[0\]: missing 'relevant_documents'"),
    ("rregain.json", '{"topics": [{"query_groups": [{"queries": [{"placeholders": {"$query": "x"}}], '
                     '"relevant_documents": {"d1": {"gain": "3.5"}}}]}]}',
     r"relevant_documents\.d1\.gain: rating '3\.5' is not a whole number"),
    ("rrevariants.json", '{"topics": [{"query_groups": [{"queries": [{"placeholders": {"$query": "fender"}}, '
                         '{"placeholders": {"$query": "fender "}}], "relevant_documents": {"d1": {"gain": 3}}}]}]}',
     r"topics\[0\]\.query_groups\[0\]\.queries\[1\]: query text 'fender' is also "
     r"topics\[0\]\.query_groups\[0\]\.queries\[0\]'s"),
    ("tworatings.csv", "query,docid,rating,Rating\nstar wars,1,3,0\n",
     r"tworatings\.csv:1: the header names the 'rating' column twice \(columns 3, 4\)"),
    ("missingcol.csv", "query,docid\nstar wars,1\n", r"missingcol\.csv:1: expected a Quepid header naming query, "
                                                      r"docid, rating"),
    ("shortrow.csv", "query,docid,rating\nstar wars,1,3\nstar trek,2\n",
     r"shortrow\.csv:3: expected 3 columns like the header, got 2"),
    ("csvrating.csv", "query,docid,rating\nstar wars,1,0.5\n", r"csvrating\.csv:2: rating '0\.5' is not a whole"),
    ("csvdup.csv", "query,docid,rating\nstar wars,1,3\nstar  wars,1,3\n",
     r"csvdup\.csv:3: duplicate rating of document '1' for query 'star wars' \(first at line 2\)"),
    ("csvempty.csv", "", r"csvempty\.csv: no judgments"),
    ("csvquote.csv", 'query,docid,rating\n"star wars,1,3\n', r"csvquote\.csv:\d+: invalid CSV"),
    ("header.csv", "query,docid,rating\n", r"header\.csv: no judgments"),
]


@pytest.mark.parametrize("name,text,message", BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_files_one_line(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        load_qrels(path)
    line = str(caught.value)
    assert "\n" not in line and len(line) < 400
    assert re.search(message, line), line


def test_a_json_file_is_size_bounded(tmp_path, monkeypatch):
    from gate.inputs.readers.judgment_formats import model

    monkeypatch.setattr(model, "MAX_JUDGMENT_FILE_BYTES", 100)
    (tmp_path / "big.json").write_text('{"requests": [' + " " * 200 + "]}")
    with pytest.raises(InputError, match=r"big\.json: larger than 100 bytes \(the limit for a judgment file\)"):
        load_qrels(tmp_path / "big.json")


def test_two_golden_queries_with_one_judged_text_are_refused(tmp_path):
    (tmp_path / "golden.tsv").write_text("a\tstar wars\nb\tstar  wars\n")
    with pytest.raises(InputError, match=r"golden queries 'a' and 'b' have the same text 'star wars'"):
        load_qrels(FIXTURES / "quepid_basic_real.csv", queries=load_queries(tmp_path / "golden.tsv"))


def test_gzip_json_is_refused_in_one_line(tmp_path):
    (tmp_path / "r.json.gz").write_bytes(gzip.compress((FIXTURES / "rank_eval_real.json").read_bytes()))
    with pytest.raises(InputError):
        load_qrels(tmp_path / "r.json.gz")
