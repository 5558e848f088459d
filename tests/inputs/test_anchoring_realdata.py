"""Anchored judgments on real data: SciFact (BEIR test split), its 5,183 abstracts chunked two ways
by the test, its official doc-level qrels plus a span and a quote per judged pair taken from the
real text, mapped through corpus files the corpus reader reads: equal per-document relevance."""

from __future__ import annotations

import json
from pathlib import Path

from gate.inputs.anchoring import map_judgments
from gate.inputs.readers.anchored import read_anchored
from gate.inputs.readers.corpus import iter_corpus
from gate.inputs.readers.qrels import read_qrels
from tests.shared_data import REALDATA, need

SCIFACT = REALDATA / "scifact"


def _write_chunks(path: Path, docs: dict[str, str], width: int, step: int) -> None:
    """Windows of ``width`` characters every ``step`` (step < width: sliding windows that overlap)."""
    with path.open("w", encoding="utf-8") as out:
        for doc, text in docs.items():
            starts = list(range(0, max(len(text) - width, 0) + 1, step))
            if starts[-1] + width < len(text):
                starts.append(len(text) - width if len(text) > width else 0)
            for k, start in enumerate(starts):
                end = min(start + width, len(text))
                out.write(json.dumps({"id": f"{doc}#{width}-{k}", "doc_id": doc, "text": text[start:end],
                                      "start_char_idx": start, "end_char_idx": end}) + "\n")


def _per_document(qrels, chunks_path: Path) -> dict[tuple[str, str], int]:
    doc_of = {c.chunk_id: c.doc_id for c in iter_corpus(chunks_path)}
    best: dict[tuple[str, str], int] = {}
    for qid, chunk, grade in qrels:
        key = (qid, doc_of[chunk])
        best[key] = max(best.get(key, grade), grade)
    return best


def test_scifact_chunked_two_ways_gives_equal_per_document_relevance(tmp_path):
    corpus = need(SCIFACT / "derived_beir_format" / "corpus.jsonl")
    qrels = read_qrels(need(SCIFACT / "beir_test_qrels_topics" / "qrels.beir-v1.0.0-scifact.test.txt"))
    docs = {}
    with corpus.open(encoding="utf-8") as rows:
        for line in rows:
            row = json.loads(line)
            if row["text"].strip():
                docs[row["_id"]] = row["text"]
    assert len(docs) >= 5000 and len(qrels) == 339
    lines = []
    for qid, doc, grade in qrels:
        text = docs[doc]
        lines.append({"query_id": qid, "doc_id": doc, "grade": grade})
        first = text.find(". ") + 1 or min(len(text), 200)  # the abstract's first sentence, as a span
        lines.append({"query_id": qid, "doc_id": doc, "start": 0, "end": first, "grade": grade + 1})
        middle = len(text) // 2  # a quote of real text around the middle, with its own spacing
        lines.append({"query_id": qid, "doc_id": doc, "quote": " ".join(text[middle:middle + 120].split()) or "x",
                      "grade": grade + 2})
    judgments_path = tmp_path / "judged.jsonl"
    judgments_path.write_text("".join(json.dumps(j) + "\n" for j in lines))
    found = read_anchored(judgments_path)
    assert found.counts() == {"document": 339, "span": 339, "quote": 339, "chunk": 0}
    coarse, sliding = tmp_path / "coarse.jsonl", tmp_path / "sliding.jsonl"
    _write_chunks(coarse, docs, 500, 500)
    _write_chunks(sliding, docs, 256, 192)
    a = map_judgments(found, iter_corpus(coarse), corpus="coarse.jsonl")
    b = map_judgments(found, iter_corpus(sliding), corpus="sliding.jsonl")
    expected = {(qid, doc): grade + 2 for qid, doc, grade in qrels}
    assert _per_document(a.qrels, coarse) == _per_document(b.qrels, sliding) == expected
    assert a.summary.not_landed == b.summary.not_landed == 0
    assert a.summary.chunks_judged < b.summary.chunks_judged  # the sliding windows are more, smaller chunks
