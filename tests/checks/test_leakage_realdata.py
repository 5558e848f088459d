"""Leakage on real collections: the known verbatim leaks of ../shared/realdata.

Cranfield query 172 (sequential numbering 1..225, the qrels' numbering; it is
``.I 261`` in cran.qry) sits inside docs 320-322, Vaswani query 72 inside doc
2213, SciFact test query 845 inside doc 17741440. The collections are parsed
here with a few lines each (formats in each folder's README.txt). Each test
also changes or inflects one word of the leaked query and checks that trigram
mode still finds it, at the score computed from the definition.
"""

from __future__ import annotations

import gzip
import json
import re
from typing import NamedTuple

import pytest

from gate.checks.leakage import find_leaks
from gate.checks.normalize import window_score
from gate.inputs.readers.records import Query
from tests.shared_data import REALDATA, need


class Chunk(NamedTuple):
    chunk_id: str
    doc_id: str
    text: str


def cranfield():
    folder = need(REALDATA / "cranfield")
    queries = []
    for number, block in enumerate(re.split(r"^\.I \d+\s*$", (folder / "cran.qry").read_text(), flags=re.M)[1:],
                                   start=1):
        queries.append(Query(str(number), block.split(".W", 1)[1].strip()))
    docs = []
    for block in re.split(r"^(?=\.I \d+\s*$)", (folder / "cran.all.1400").read_text(), flags=re.M):
        if not block.startswith(".I"):
            continue
        doc_id = block.split()[1]
        fields = dict(re.findall(r"^\.([TABW])\n(.*?)(?=^\.[TABW]\n|\Z)", block, flags=re.M | re.S))
        docs.append(Chunk(doc_id, doc_id, (fields.get("T", "") + "\n" + fields.get("W", "")).strip()))
    assert len(queries) == 225 and len(docs) == 1400
    return queries, docs


def vaswani():
    folder = need(REALDATA / "vaswani")
    text = (folder / "query-text.trec").read_text()
    queries = [Query(n, t.strip())
               for n, t in re.findall(r"<num>\s*(\d+)\s*</num>\s*<title>(.*?)</title>", text, flags=re.S)]
    text = (folder / "doc-text.trec").read_text()
    docs = [Chunk(n, n, t.strip()) for n, t in re.findall(r"<DOCNO>\s*(\d+)\s*</DOCNO>(.*?)</DOC>", text, flags=re.S)]
    assert len(queries) == 93 and len(docs) == 11429
    return queries, docs


def scifact():
    folder = need(REALDATA / "scifact")
    with gzip.open(folder / "beir_test_qrels_topics" / "topics.beir-v1.0.0-scifact.test.tsv.gz", "rt",
                   encoding="utf-8") as f:
        queries = [Query(*line.rstrip("\n").split("\t", 1)) for line in f if line.strip()]

    def docs():
        with open(folder / "derived_beir_format" / "corpus.jsonl", encoding="utf-8") as f:
            for line in f:
                d = json.loads(line)
                yield Chunk(d["_id"], d["_id"], f"{d['title']} {d['text']}")

    assert len(queries) == 300
    return queries, docs


def changed(queries, qid, old, new):
    out = []
    for q in queries:
        if q.query_id == qid:
            assert old in q.text
            q = Query(qid, q.text.replace(old, new, 1))
        out.append(q)
    return out


def text_of(docs, doc_id):
    return next(d.text for d in docs if d.doc_id == doc_id)


def test_cranfield_query_172_leaks_into_docs_320_to_322():
    queries, docs = cranfield()
    by_id = {q.query_id: q for q in queries}
    assert by_id["172"].text.startswith("solution of the blasius problem with three-point boundary conditions")
    result = find_leaks(queries, iter(docs), modes=("exact",))
    m = {m.query_id: m for m in result.matched}["172"]
    assert (m.doc_id, m.mode, m.chunks_matched) == ("320", "exact", 3)  # 320, 321, 322
    for doc in ("320", "321", "322"):
        assert "blasius problem with three-point" in text_of(docs, doc).replace("\n", " ")

    # one word inflected: "conditions" -> "condition"
    edited = changed(queries, "172", "boundary conditions", "boundary condition")
    score = window_score(edited[171].text, text_of(docs, "320"))
    assert 0.85 <= score < 1.0
    exact = find_leaks(edited, iter(docs), modes=("exact",))
    assert "172" not in exact.matched_ids()
    tri = {m.query_id: m for m in find_leaks(edited, iter(docs), modes=("trigram-jaccard",)).matched}["172"]
    assert tri.doc_id == "320" and tri.mode == "trigram-jaccard" and tri.chunks_matched == 3
    assert tri.score == pytest.approx(score)


def test_vaswani_query_72_leaks_into_doc_2213():
    queries, docs = vaswani()
    result = find_leaks(queries, iter(docs))
    m = {m.query_id: m for m in result.matched}["72"]
    assert m.text.strip() == "VARIABLE CAPACITANCE AMPLIFIERS"
    assert (m.doc_id, m.mode, m.score) == ("2213", "exact", 1.0)

    # one word inflected: AMPLIFIERS -> AMPLIFIER. (Shorter edits of this 3-word
    # query fall below 0.85, e.g. CAPACITANCES scores 0.84.) The singular happens
    # to occur verbatim in docs 10065 and 10512, which then rank first at 1.0;
    # without them, doc 2213 is still found, at the computed score.
    edited = changed(queries, "72", "AMPLIFIERS", "AMPLIFIER")
    score = window_score("VARIABLE CAPACITANCE AMPLIFIER", text_of(docs, "2213"))
    assert 0.85 <= score < 1.0
    tri = {m.query_id: m for m in find_leaks(edited, iter(docs), modes=("trigram-jaccard",)).matched}["72"]
    assert (tri.doc_id, tri.score, tri.chunks_matched) == ("10065", 1.0, 3)  # 2213, 10065, 10512
    rest = [d for d in docs if d.doc_id not in ("10065", "10512")]
    tri = {m.query_id: m for m in find_leaks(edited, iter(rest)).matched}["72"]
    assert (tri.doc_id, tri.mode, tri.chunks_matched) == ("2213", "trigram-jaccard", 1)
    assert tri.score == pytest.approx(score)


def test_scifact_test_query_845_leaks_into_doc_17741440():
    queries, docs = scifact()
    result = find_leaks(queries, docs())
    m = {m.query_id: m for m in result.matched}["845"]
    assert m.text == "Neutrophil extracellular traps (NETs) are released by ANCA-stimulated neutrophils."
    assert (m.doc_id, m.mode, m.score) == ("17741440", "exact", 1.0)

    # one word inflected: "released" -> "release" (a changed word, "secreted", scores 0.79)
    edited = changed(queries, "845", "are released by", "are release by")
    score = window_score(edited[[q.query_id for q in queries].index("845")].text, text_of(docs(), "17741440"))
    assert 0.85 <= score < 1.0
    tri = {m.query_id: m for m in find_leaks(edited, docs(), modes=("trigram-jaccard",)).matched}["845"]
    assert (tri.doc_id, tri.mode) == ("17741440", "trigram-jaccard")
    assert tri.score == pytest.approx(score)
