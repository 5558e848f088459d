"""Where each query's first relevant document sits in trec_eval order, for the movement buckets.

:class:`RankedLookup` answers from a loaded run; :class:`Looked` holds the same answers worked
out while a run file streamed (:mod:`gate.evaluation.streaming`), so the buckets need neither
run in memory. Both give, per query, ``(first relevant rank at any depth, relevant documents
in the top k_recall, tie-sensitive)`` for the relevant set and windows asked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from gate.evaluation.evaluate import OrderedLabels
from gate.evaluation.measures.ordering import compared_scores, trec_order
from gate.inputs.readers.records import Run

__all__ = ["Look", "Looked", "RankedLookup", "look_all", "looked_of", "looks_from_labels",
           "relevant_sets"]

#: (first relevant rank at any depth or None, relevant documents in the top k_recall, tie-sensitive)
Look = tuple[int | None, int, bool]


class RankedLookup:
    """A run in trec_eval order, for the first relevant document of each query."""

    def __init__(self, run: Run, perm: np.ndarray | None = None):
        # Only the order is kept; a query's docnos and scores are taken through it when it is
        # looked at (an ordered copy of the docnos of two 10-million-row runs is gigabytes).
        self.perm = trec_order(run.starts, run.scores, run.doc_ids) if perm is None else perm
        self.run = run
        self.starts = np.asarray(run.starts, dtype=np.int64)
        self.where = run.index()

    def __contains__(self, qid: str) -> bool:
        return qid in self.where

    def look(self, qid: str, relevant: set[str], k_rank: int, k_recall: int) -> tuple[int | None, int, bool]:
        """(first relevant rank at any depth, relevant docs in the top k_recall, tie-sensitive)."""
        i = self.where.get(qid)
        if i is None:
            return None, 0, False
        a, b = int(self.starts[i]), int(self.starts[i + 1])
        order = self.perm[a:b]
        docs = self.run.doc_ids[order]
        # The window (top max(k_rank, k_recall)) decides the bucket and the recall; the rest of
        # the list is searched only for the first relevant rank of a query that has none in it.
        window = max(k_rank, k_recall)
        hits = _positions(docs[:window], relevant)
        if not len(hits) and len(docs) > window:
            hits = _positions(docs[window:], relevant)[:1] + window
        if not len(hits):
            return None, 0, False
        in_recall = int(np.count_nonzero(hits < k_recall))
        first = int(hits[0])
        # Ties at the precision trec_eval orders by (C float), as trec_order does.
        scores = compared_scores(self.run.scores[order])
        value = scores[first]
        lo = first
        while lo > 0 and scores[lo - 1] == value:
            lo -= 1
        hi = first
        while hi + 1 < len(scores) and scores[hi + 1] == value:
            hi += 1
        tie = hi > lo and lo < k_rank and any(docs[j] not in relevant for j in range(lo, hi + 1))
        return first + 1, in_recall, tie


def _positions(docs: np.ndarray, relevant: set[str]) -> np.ndarray:
    """Indexes of ``docs`` that are in ``relevant``, ascending."""
    if len(relevant) <= 16:  # a few equality scans beat np.isin's sort on short lists
        mask = np.zeros(len(docs), dtype=bool)
        for doc in relevant:
            mask |= docs == doc
        return np.flatnonzero(mask)
    return np.flatnonzero(np.fromiter(map(relevant.__contains__, docs.tolist()), dtype=bool, count=len(docs)))


class RelevantSets(Mapping[str, set[str]]):
    """:func:`relevant_sets`: the queries that have a relevant document, found at once (a query's
    first relevant label ends its search), and each query's set of them built when asked for (the
    movement lookups ask for a few: a set per query of a 10,000-query run cost 0.1 s a run).

    Reads ``judgments`` when a set is asked for: use it before the judgments change."""

    def __init__(self, judgments: Mapping[str, Mapping[str, int]], query_ids, rel_threshold: int):
        self._judgments, self._rel = judgments, rel_threshold
        self._sets: dict[str, set[str] | None] = {
            qid: None for qid in query_ids
            if any(label >= rel_threshold for label in (judgments.get(qid) or {}).values())}

    def __getitem__(self, qid: str) -> set[str]:
        found = self._sets[qid]
        if found is None:
            found = self._sets[qid] = {doc for doc, label in self._judgments[qid].items() if label >= self._rel}
        return found

    def __contains__(self, qid: object) -> bool:
        return qid in self._sets

    def __iter__(self):
        return iter(self._sets)

    def __len__(self) -> int:
        return len(self._sets)


def relevant_sets(judgments: Mapping[str, Mapping[str, int]], query_ids, rel_threshold: int) -> RelevantSets:
    """The documents labelled ``>= rel_threshold`` of each of ``query_ids`` that has any (a
    mapping of query id to set, in the order of ``query_ids``).

    Not a snapshot: the sets are read from ``judgments`` when first asked for (see
    :class:`RelevantSets`), so use the mapping before the judgments change."""
    return RelevantSets(judgments, query_ids, rel_threshold)


def _first_hits(run: Run, perm: np.ndarray, qids: list[str], relevant: Mapping[str, set[str]],
                which: np.ndarray, offset: np.ndarray, count: np.ndarray,
                k_recall: int) -> tuple[np.ndarray, np.ndarray]:
    """For each query ``qids[k]``: the trec_eval position of its first relevant document among
    slots ``offset[k] : offset[k] + count[k]`` (-1 when none) and how many of those slots below
    ``k_recall`` hold a relevant document."""
    starts = np.asarray(run.starts, dtype=np.int64)
    before = np.cumsum(count) - count
    position = np.repeat(offset - before, count) + np.arange(int(count.sum()), dtype=np.int64)
    docs = run.doc_ids[perm[np.repeat(starts[which], count) + position]].tolist()
    hit = np.zeros(len(docs), dtype=bool)
    for k in np.flatnonzero(count).tolist():
        a, n = int(before[k]), int(count[k])
        hit[a:a + n] = np.fromiter(map(relevant[qids[k]].__contains__, docs[a:a + n]), dtype=bool, count=n)
    seg = np.repeat(np.arange(len(qids), dtype=np.int64), count)
    hits = np.flatnonzero(hit)
    found = np.bincount(seg[hits[position[hits] < k_recall]], minlength=len(qids))
    has, first_at = np.unique(seg[hits], return_index=True)
    first = np.full(len(qids), -1, dtype=np.int64)
    first[has] = position[hits[first_at]]
    return first, found


def look_all(run: Run, relevant: Mapping[str, set[str]], k_rank: int, k_recall: int) -> dict[str, Look]:
    """:meth:`RankedLookup.look` of every query of ``run`` that ``relevant`` names, at once.

    The top ``max(k_rank, k_recall)`` of every query is joined with its relevant set, then the
    rest of the queries with no relevant document there, with numpy over all queries; a query
    whose first relevant document sits among equal scores is looked at one by one (the same
    answer, slower)."""
    index = run.index()
    qids = [q for q in relevant if q in index]
    if not qids:
        return {}
    starts = np.asarray(run.starts, dtype=np.int64)
    perm = trec_order(starts, run.scores, run.doc_ids)
    which = np.fromiter((index[q] for q in qids), dtype=np.int64, count=len(qids))
    lens = starts[which + 1] - starts[which]
    window = max(k_rank, k_recall)
    top = np.minimum(lens, window)
    first, found = _first_hits(run, perm, qids, relevant, which, np.zeros(len(qids), dtype=np.int64), top,
                               k_recall)
    # Beyond the window only the first relevant rank is wanted (found counts the top k_recall).
    deeper = np.where(first < 0, lens - top, 0)
    if deeper.any():
        beyond, _ = _first_hits(run, perm, qids, relevant, which, top, deeper, k_recall)
        first = np.where(first < 0, beyond, first)
    slow = _tied_first(compared_scores(run.scores)[perm], starts[which], first, lens)
    return _answers(run, qids, range(len(qids)), first, found, slow, relevant, k_rank, k_recall, perm)


def looks_from_labels(run: Run, ordered: OrderedLabels, relevant: Mapping[str, set[str]], rel_threshold: int,
                      k_rank: int, k_recall: int) -> dict[str, Look]:
    """:func:`look_all`'s answers from the labels :func:`gate.evaluation.evaluate.evaluate_ordered`
    joined over every row of ``run`` (``ordered.full_depth``): no second join with the qrels.
    ``relevant`` (:func:`relevant_sets` at ``rel_threshold``) names the queries to answer."""
    if not ordered.full_depth:
        raise ValueError("the labels do not cover every retrieved row")
    qids = ordered.query_ids
    n = len(qids)
    want = np.fromiter((q in relevant for q in qids), dtype=bool, count=n) & (ordered.retrieved > 0)
    lens, starts = ordered.kept_lens, ordered.kept_starts
    seg = np.repeat(np.arange(n, dtype=np.int64), lens)
    position = np.arange(len(ordered.labels), dtype=np.int64) - starts[seg]
    hits = np.flatnonzero(ordered.labels >= rel_threshold)  # NONPOOL (unjudged) is below every threshold
    found = np.bincount(seg[hits[position[hits] < k_recall]], minlength=n)
    has, first_at = np.unique(seg[hits], return_index=True)
    first = np.full(n, -1, dtype=np.int64)
    first[has] = position[hits[first_at]]
    slow = want & _tied_first(ordered.scores, starts[:-1], first, lens)
    return _answers(run, qids, np.flatnonzero(want).tolist(), first, found, slow, relevant, k_rank, k_recall,
                    ordered.run_order)


def _tied_first(slot_scores: np.ndarray, starts: np.ndarray, first: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Per query: its first hit (``first``, -1 for none; slots of query k from ``starts[k]``) has an
    equal score beside it, at trec_eval's precision, so it may be tie-sensitive."""
    if not len(slot_scores):
        return np.zeros(len(first), dtype=bool)
    last = len(slot_scores) - 1
    slot = starts + np.maximum(first, 0)
    score = slot_scores[np.minimum(slot, last)]
    above = (first > 0) & (slot_scores[np.clip(slot - 1, 0, last)] == score)
    below = (first >= 0) & (first + 1 < lens) & (slot_scores[np.minimum(slot + 1, last)] == score)
    return above | below


def _answers(run: Run, qids, chosen, first: np.ndarray, found: np.ndarray, slow: np.ndarray,
             relevant: Mapping[str, set[str]], k_rank: int, k_recall: int, perm: np.ndarray | None = None
             ) -> dict[str, Look]:
    """The looks of ``qids[k]`` for k in ``chosen``: one by one where ``slow``, else from ``first``/``found``."""
    lookup = RankedLookup(run, perm) if slow.any() else None
    out: dict[str, Look] = {}
    for k in chosen:
        qid = qids[k]
        if slow[k]:
            assert lookup is not None  # made when any is slow
            out[qid] = lookup.look(qid, relevant[qid], k_rank, k_recall)
        elif first[k] < 0:
            out[qid] = (None, 0, False)
        else:
            out[qid] = (int(first[k]) + 1, int(found[k]), False)
    return out


@dataclass(frozen=True)
class Looked:
    """:meth:`RankedLookup.look` answers kept per query, for one relevance threshold and window."""

    rel_threshold: int
    k_rank: int
    k_recall: int
    answers: Mapping[str, Look]  # the queries of the run that were looked at (those with a relevant document)
    present: frozenset[str]  # every query of the run

    def __contains__(self, qid: str) -> bool:
        return qid in self.present

    def look(self, qid: str, relevant: set[str], k_rank: int, k_recall: int) -> Look:
        if (k_rank, k_recall) != (self.k_rank, self.k_recall):
            raise ValueError(f"looked at k_rank={self.k_rank}, k_recall={self.k_recall}; "
                             f"asked for {k_rank}, {k_recall}")
        return self.answers.get(qid, (None, 0, False))


def looked_of(run, relevant: Mapping[str, set[str]], rel_threshold: int, k_rank: int, k_recall: int) -> Looked:
    """The answers for a loaded :class:`Run` (``relevant``: :func:`relevant_sets` at
    ``rel_threshold``), or those a streamed run kept (``run.looked``, which must have been
    looked at with the same threshold and windows)."""
    if isinstance(run, Run):
        return Looked(rel_threshold, k_rank, k_recall, look_all(run, relevant, k_rank, k_recall),
                      frozenset(run.query_ids))
    looked = run.looked
    if (looked.rel_threshold, looked.k_rank, looked.k_recall) != (rel_threshold, k_rank, k_recall):
        raise ValueError(f"{run.source} was looked at with rel {looked.rel_threshold}, k_rank {looked.k_rank}, "
                         f"k_recall {looked.k_recall}; asked for {rel_threshold}, {k_rank}, {k_recall}")
    return looked
