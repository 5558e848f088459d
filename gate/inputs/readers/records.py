"""Typed records shared by every stage after the readers.

A run is stored column-wise (numpy arrays grouped by query) rather than as a
dict of dicts: a 1,000 x 1,000 run is one million rows, and per-row Python
objects would cost several times the memory of the arrays.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np


class Qrel(NamedTuple):
    """One judgment. A negative relevance means "in the pool, unjudged" (trec_eval)."""

    query_id: str
    doc_id: str
    relevance: int


class RunRow(NamedTuple):
    """One line of a TREC run, as read (the rank column is kept but never used to order)."""

    query_id: str
    doc_id: str
    rank: int
    score: float


class Chunk(NamedTuple):
    """One retrievable unit of a corpus: a document or a chunk of one.

    ``doc_id`` is the document the chunk belongs to (by default the part of
    ``chunk_id`` before ``#``; equal to ``chunk_id`` for whole documents).
    ``start`` / ``end``: the chunk's character offsets ``[start, end)`` in its source
    document when the corpus gives them (span judgments are mapped through them);
    chunks may overlap one another (sliding windows).
    """

    chunk_id: str
    doc_id: str
    text: str
    start: int | None = None
    end: int | None = None


@dataclass(frozen=True)
class Query:
    query_id: str
    text: str
    stratum: str | None = None
    metadata: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class QuerySet:
    """Golden queries in file order. ``source`` names where they came from."""

    source: str
    queries: tuple[Query, ...]

    def ids(self) -> list[str]:
        return [q.query_id for q in self.queries]

    def by_id(self) -> dict[str, Query]:
        return {q.query_id: q for q in self.queries}

    def __len__(self) -> int:
        return len(self.queries)


@dataclass(frozen=True)
class Qrels:
    """Judgments: ``judgments[query_id][doc_id] = relevance`` (ints, negatives kept)."""

    source: str
    judgments: Mapping[str, Mapping[str, int]]
    # Set when the source defines its negative grade as "judged, not relevant"
    # (e.g. Cranfield's -1 through ir_datasets); trec_eval's default is unjudged.
    negative_is_judged: bool = False

    def query_ids(self) -> list[str]:
        return list(self.judgments)

    def highest_label(self) -> int | None:
        """The largest label of any judgment (None for no judgment)."""
        return max((label for docs in self.judgments.values() for label in docs.values()), default=None)

    def __len__(self) -> int:
        """Number of judgments (rows)."""
        return sum(len(docs) for docs in self.judgments.values())

    def __iter__(self) -> Iterator[Qrel]:
        for qid, docs in self.judgments.items():
            for doc_id, rel in docs.items():
                yield Qrel(qid, doc_id, rel)


@dataclass(frozen=True, eq=False)
class Run:
    """A ranked run, column-wise, grouped by query.

    Rows of ``query_ids[i]`` are ``starts[i]:starts[i + 1]`` of ``doc_ids`` and
    ``scores``, in file order (no ordering applied: that is trec_eval's sort in
    :mod:`gate.evaluation.measures.ordering`). ``query_ids`` are in byte order.
    """

    source: str
    query_ids: tuple[str, ...]
    starts: np.ndarray  # int64, len(query_ids) + 1
    # dtype str ('U'), or object (Python str) when a few docnos are far longer than the rest;
    # either compares in code-point = UTF-8 byte order.
    doc_ids: np.ndarray
    scores: np.ndarray  # float64, finite
    tag: str | None = None

    def __len__(self) -> int:
        return int(self.starts[-1]) if len(self.starts) else 0

    def index(self) -> dict[str, int]:
        return {qid: i for i, qid in enumerate(self.query_ids)}

    def ranking(self, query_id: str) -> tuple[np.ndarray, np.ndarray]:
        """(doc_ids, scores) of one query in file order; empty arrays when absent."""
        i = self.index().get(query_id)
        if i is None:
            return self.doc_ids[:0], self.scores[:0]
        a, b = int(self.starts[i]), int(self.starts[i + 1])
        return self.doc_ids[a:b], self.scores[a:b]

    def rows(self) -> Iterator[RunRow]:
        """Rows in stored order, rank numbered 1.. within each query (for writing)."""
        for i, qid in enumerate(self.query_ids):
            a, b = int(self.starts[i]), int(self.starts[i + 1])
            for r, j in enumerate(range(a, b), start=1):
                yield RunRow(qid, str(self.doc_ids[j]), r, float(self.scores[j]))

    @staticmethod
    def from_rankings(source: str, rankings: Mapping[str, Mapping[str, float]], tag: str | None = None) -> Run:
        """Build from ``{query_id: {doc_id: score}}`` (tests, runners, the demo)."""
        qids = sorted(rankings, key=lambda q: q.encode("utf-8"))
        starts = np.zeros(len(qids) + 1, dtype=np.int64)
        docs: list[str] = []
        scores: list[float] = []
        for i, qid in enumerate(qids):
            for doc, score in rankings[qid].items():
                docs.append(doc)
                scores.append(float(score))
            starts[i + 1] = len(docs)
        return Run(
            source=source,
            query_ids=tuple(qids),
            starts=starts,
            doc_ids=np.array(docs, dtype=str) if docs else np.array([], dtype="U1"),
            scores=np.array(scores, dtype=np.float64),
            tag=tag,
        )


def same_rankings(a: Run, b: Run, query_ids) -> bool:
    """Whether ``a`` and ``b`` rank every one of ``query_ids`` the same: the same documents in
    trec_eval's order (score descending, then docno descending); the scores themselves may differ."""
    for qid in query_ids:
        docs_a, scores_a = a.ranking(qid)
        docs_b, scores_b = b.ranking(qid)
        if len(docs_a) != len(docs_b):
            return False
        if _trec_order(docs_a, scores_a) != _trec_order(docs_b, scores_b):
            return False
    return True


def _trec_order(docs, scores) -> list[str]:
    by_docno = sorted(range(len(docs)), key=lambda i: str(docs[i]), reverse=True)
    return [str(docs[i]) for i in sorted(by_docno, key=lambda i: -float(scores[i]))]

