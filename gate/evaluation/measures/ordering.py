"""trec_eval's ranking order, vectorized over every query of a run.

trec_eval (``form_res_rels.c``, ``comp_sim_docno``) sorts each query's rows by
score descending and breaks equal scores by docno descending with ``strcmp``,
i.e. by UTF-8 byte order; the rank column of the run is ignored. Docno byte
order equals code-point order, which is how numpy compares ``'U'`` arrays.

Scores are compared as C ``float`` (32-bit): trec_eval 9.x keeps the score
of a run line in ``TEXT_RESULTS.sim``, declared ``float`` and filled by
``atof`` (usnistgov/trec_eval issue #34; later versions moved to ``double``).
pytrec_eval, hence ir_measures, and NIST's official DL scores inherit it, so
two scores that differ only beyond float precision (e.g. 11.98829954303801
and 11.988299543038) are a tie broken by docno. :data:`SCORE_DTYPE` holds the
choice.

The order is, over all rows at once, ``np.lexsort((-docno_code, -score,
query_index))`` with ``docno_code`` the rank of the docno among the sorted
distinct docnos (``np.unique(return_inverse=True)``). Two shortcuts give the
same permutation faster (see :func:`trec_order_reference` for the plain one,
which the tests compare against):

* rows that are already by score descending within each query (the usual run
  file) are not sorted again; others are sorted by score, then stably by
  query (a radix sort when there are fewer than 65,536 queries);
* docno codes are only needed where scores tie, so ``np.unique`` runs on the
  tied rows only. Sorting a million docno strings costs ~0.3 s, more than the
  whole evaluation otherwise.
"""

from __future__ import annotations

import numpy as np

#: Precision at which scores are compared (trec_eval 9.x: C float).
SCORE_DTYPE = np.float32


def segment_ids(starts: np.ndarray) -> np.ndarray:
    """Query index of every row, for rows grouped by ``starts`` (len = queries + 1)."""
    starts = np.asarray(starts, dtype=np.int64)
    lens = np.diff(starts)
    return np.repeat(np.arange(len(lens), dtype=np.int64), lens)


def concatenated_ranges(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(starts[i], starts[i] + lens[i])``: the rows of chosen segments."""
    lens = lens.astype(np.int64, copy=False)
    before = np.cumsum(lens) - lens
    return np.repeat(starts - before, lens) + np.arange(int(lens.sum()), dtype=np.int64)


def compared_scores(scores: np.ndarray) -> np.ndarray:
    """Scores as trec_eval compares them (rounded to :data:`SCORE_DTYPE`).

    A magnitude beyond float range becomes +-inf, as C's conversion does.
    """
    with np.errstate(over="ignore"):
        return np.asarray(scores).astype(SCORE_DTYPE)


def trec_order(starts: np.ndarray, scores: np.ndarray, doc_ids: np.ndarray, *,
               precision: type = SCORE_DTYPE) -> np.ndarray:
    """Permutation of the rows putting each query's rows in trec_eval order.

    Rows of query ``i`` are ``starts[i]:starts[i+1]``; the result keeps every
    query in its slice (``perm[starts[i]:starts[i+1]]`` are that query's rows,
    best first), so ranks are positions within the slice. Scores are compared
    at :data:`SCORE_DTYPE` precision (``precision=np.float64``: as stored, the
    order :func:`gate.inputs.readers.records.same_rankings` compares).
    """
    scores = compared_scores(scores) if precision == SCORE_DTYPE else np.asarray(scores, dtype=precision)
    n = len(scores)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    seg = segment_ids(starts)
    same_query = seg[1:] == seg[:-1]
    if np.all(~same_query | (scores[1:] <= scores[:-1])):
        perm = np.arange(n, dtype=np.int64)
        ordered = scores
    else:
        perm = _by_query_then_score(seg, scores)
        ordered = scores[perm]
    tie = same_query & (ordered[1:] == ordered[:-1])
    if not tie.any():
        return perm
    # Rows in a group of equal scores within one query: reorder each group by
    # docno descending. Groups are contiguous, so their slots do not move.
    member = np.zeros(n, dtype=bool)
    member[1:] |= tie
    member[:-1] |= tie
    pos = np.flatnonzero(member)
    opens = np.ones(len(pos), dtype=bool)
    opens[1:] = ~tie[pos[1:] - 1]
    group = np.cumsum(opens)
    rows = perm[pos]
    _, code = np.unique(doc_ids[rows], return_inverse=True)
    inner = np.lexsort((-code.reshape(-1), group))
    perm[pos] = rows[inner]
    return perm


def _by_query_then_score(seg: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Rows by query index, then score descending (order among equal scores unspecified)."""
    if len(seg) and seg[-1] < 2**16:
        # Sort by score, then stably by query: numpy's stable sort of 16-bit
        # keys is a radix sort, so this costs ~0.1 s per million rows against
        # ~0.25 s for the two-key lexsort.
        by_score = np.argsort(-scores)
        return by_score[np.argsort(seg.astype(np.uint16)[by_score], kind="stable")].astype(np.int64, copy=False)
    return np.lexsort((-scores, seg)).astype(np.int64, copy=False)


def trec_order_reference(starts: np.ndarray, scores: np.ndarray, doc_ids: np.ndarray) -> np.ndarray:
    """The same permutation as :func:`trec_order`, by one full three-key lexsort."""
    n = len(scores)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    _, code = np.unique(doc_ids, return_inverse=True)
    seg = segment_ids(starts)
    return np.lexsort((-code.reshape(-1), -compared_scores(scores), seg)).astype(np.int64)


def tie_at_cutoff(starts: np.ndarray, ordered_scores: np.ndarray, cutoff: int) -> np.ndarray:
    """bool per query: the scores at ranks ``cutoff`` and ``cutoff + 1`` are equal.

    Then which of the tied documents make the top ``cutoff`` is decided by
    docno order alone. ``ordered_scores`` are the scores in trec_eval order, as
    compared (:func:`compared_scores`).
    """
    starts = np.asarray(starts, dtype=np.int64)
    lens = np.diff(starts)
    out = np.zeros(len(lens), dtype=bool)
    deep = np.flatnonzero(lens > cutoff)
    if len(deep):
        at = starts[deep] + cutoff - 1
        out[deep] = ordered_scores[at] == ordered_scores[at + 1]
    return out
