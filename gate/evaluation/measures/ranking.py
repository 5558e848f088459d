"""What every measure reads: the rankings of the evaluated queries joined with their labels.

Built once by :func:`gate.evaluation.evaluate.evaluate` and shared by all measures, so the
sort and the qrels join are paid once. Arrays are flat over all queries:

* rows: the kept rows of every query in trec_eval order (query by query, best
  first), with their query index ``seg``, 1-based ``rank`` and ``label``
  (:data:`NONPOOL` when the document is not in the qrels);
* judgments: every qrels label of every query (``qrels_seg``/``qrels_labels``)
  for the denominators (number relevant, ideal DCG).

Measures compute with sparse selections and ``np.bincount`` per query, which
sums in row order like trec_eval does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: Label of a retrieved document that the qrels do not mention.
NONPOOL = int(np.iinfo(np.int64).min)


@dataclass(eq=False)
class Ranking:
    n_queries: int
    retrieved: np.ndarray  # int64 per query: rows in the run (0 when the query is missing)
    seg: np.ndarray  # int64 per kept row: query index
    rank: np.ndarray  # int64 per kept row: 1-based rank in trec_eval order
    labels: np.ndarray  # int64 per kept row: qrels label, NONPOOL when absent
    qrels_seg: np.ndarray  # int64 per judgment: query index
    qrels_labels: np.ndarray  # int64 per judgment
    negative_is_judged: bool = False
    depth: int | None = None  # rows kept per query (None: all)
    _cache: dict = field(default_factory=dict, repr=False)

    # -- per-row selections ---------------------------------------------------

    def relevant_rows(self, rel: int, cutoff: int | None = None) -> np.ndarray:
        """Indices of kept rows with label >= rel (and rank <= cutoff)."""
        key = ("relevant", rel)
        idx = self._cache.get(key)
        if idx is None:
            idx = np.flatnonzero(self.labels >= rel)
            self._cache[key] = idx
        return self._cut(idx, cutoff)

    def gain_rows(self, cutoff: int | None = None) -> np.ndarray:
        """Indices of kept rows with a positive label (the only ones with gain)."""
        idx = self._cache.get("gain")
        if idx is None:
            idx = np.flatnonzero(self.labels > 0)
            self._cache["gain"] = idx
        return self._cut(idx, cutoff)

    def judged_rows(self, cutoff: int | None = None) -> np.ndarray:
        """Indices of kept rows that carry a judgment.

        A negative label is "in the pool, unjudged" (trec_eval) unless the
        qrels say negatives are judged non-relevant.
        """
        idx = self._cache.get("judged")
        if idx is None:
            if self.negative_is_judged:
                idx = np.flatnonzero(self.labels != NONPOOL)
            else:
                idx = np.flatnonzero(self.labels >= 0)
            self._cache["judged"] = idx
        return self._cut(idx, cutoff)

    def _cut(self, idx: np.ndarray, cutoff: int | None) -> np.ndarray:
        if cutoff is None:
            return idx
        if self.depth is not None and cutoff > self.depth:
            raise ValueError(f"cutoff {cutoff} beyond the {self.depth} rows kept per query")
        return idx[self.rank[idx] <= cutoff]

    # -- per-query reductions -------------------------------------------------

    def per_query_count(self, idx: np.ndarray) -> np.ndarray:
        """Number of selected rows per query (float64)."""
        return np.bincount(self.seg[idx], minlength=self.n_queries).astype(np.float64)

    def per_query_sum(self, idx: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """Sum of ``weights`` (one per selected row) per query, in rank order."""
        return np.bincount(self.seg[idx], weights=weights, minlength=self.n_queries).astype(np.float64)

    def first_rank(self, idx: np.ndarray) -> np.ndarray:
        """Rank of the first selected row per query, 0 when none."""
        out = np.zeros(self.n_queries, dtype=np.int64)
        if len(idx):
            seg = self.seg[idx]
            first = np.ones(len(idx), dtype=bool)
            first[1:] = seg[1:] != seg[:-1]
            out[seg[first]] = self.rank[idx[first]]
        return out

    # -- from the qrels -------------------------------------------------------

    def num_relevant(self, rel: int) -> np.ndarray:
        """Judgments with label >= rel per query (all of the qrels, not just retrieved)."""
        key = ("num_relevant", rel)
        out = self._cache.get(key)
        if out is None:
            keep = self.qrels_labels >= rel
            out = np.bincount(self.qrels_seg[keep], minlength=self.n_queries).astype(np.float64)
            self._cache[key] = out
        return out

    def ideal_gains(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(query index, 1-based ideal rank, gain) of every positive judgment, best first per query."""
        out = self._cache.get("ideal")
        if out is None:
            keep = self.qrels_labels > 0
            seg = self.qrels_seg[keep]
            gain = self.qrels_labels[keep]
            order = np.lexsort((-gain, seg))
            seg, gain = seg[order], gain[order]
            counts = np.bincount(seg, minlength=self.n_queries)
            starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
            rank = np.arange(len(seg), dtype=np.int64) - starts[seg] + 1
            out = (seg, rank, gain.astype(np.float64))
            self._cache["ideal"] = out
        return out
