"""trec_eval's order: score descending, then docno descending in byte order; rank column ignored."""

from __future__ import annotations

import numpy as np
import pytest

from gate.evaluation.measures.ordering import segment_ids, tie_at_cutoff, trec_order, trec_order_reference


def _order(queries: list[list[tuple[str, float]]]) -> list[list[str]]:
    starts = np.cumsum([0] + [len(q) for q in queries])
    docs = np.array([d for q in queries for d, _ in q] or [""], dtype=str)[: starts[-1]]
    scores = np.array([s for q in queries for _, s in q], dtype=np.float64)
    perm = trec_order(starts, scores, docs)
    assert np.array_equal(perm, trec_order_reference(starts, scores, docs))
    return [[str(docs[i]) for i in perm[a:b]] for a, b in zip(starts[:-1], starts[1:])]


def test_score_descending_within_each_query():
    assert _order([[("a", 1.0), ("b", 3.0), ("c", 2.0)], [("x", 0.5), ("y", 0.7)]]) == [["b", "c", "a"], ["y", "x"]]


def test_equal_scores_break_by_docno_descending():
    # File order a, b, c with one score: trec_eval ranks c, b, a.
    assert _order([[("a", 1.0), ("b", 1.0), ("c", 1.0)]]) == [["c", "b", "a"]]
    assert _order([[("d10", 2.0), ("d9", 2.0), ("d2", 5.0)]]) == [["d2", "d9", "d10"]]  # "d9" > "d10" as strings


def test_ties_are_reordered_even_when_the_file_is_sorted_by_score():
    # Already by score descending (the fast path) but the tie is in docno ascending order.
    assert _order([[("z", 9.0), ("a", 5.0), ("b", 5.0), ("c", 1.0)]]) == [["z", "b", "a", "c"]]


def test_docno_order_is_utf8_byte_order():
    # U+FF5E sorts above U+1F600 in UTF-16 code units but below it in UTF-8 bytes
    # (EF BD 9E < F0 9F 98 80) and in code points; trec_eval uses strcmp on UTF-8.
    wide, astral = "\uff5e", "\U0001f600"
    assert wide.encode() < astral.encode()
    assert _order([[(wide, 1.0), (astral, 1.0), ("z", 1.0), ("é", 1.0)]]) == [[astral, wide, "é", "z"]]


def test_scores_are_compared_as_c_floats_like_trec_eval_9():
    # Distinct doubles, one float: trec_eval 9.x stores sim as float, so they tie
    # and docno decides (seen in the official DL 2019 run TUA1-1).
    high, low = 11.98829954303801, 11.988299543038
    assert high > low and np.float32(high) == np.float32(low)
    assert _order([[("a", high), ("b", low)]]) == [["b", "a"]]
    # Beyond float range both become +inf: a tie as well.
    assert _order([[("a", 1e300), ("b", 1e301)]]) == [["b", "a"]]


def test_negative_zero_ties_with_zero():
    assert _order([[("a", -0.0), ("b", 0.0)]]) == [["b", "a"]]


def test_empty_queries_and_empty_runs():
    assert _order([[], [("a", 1.0)], []]) == [[], ["a"], []]
    assert len(trec_order(np.array([0]), np.zeros(0), np.array([], dtype="U1"))) == 0


@pytest.mark.parametrize("presorted", [False, True])
def test_fast_order_equals_the_full_lexsort(presorted):
    rng = np.random.default_rng(3)
    lens = rng.integers(0, 60, size=300)
    starts = np.concatenate(([0], np.cumsum(lens)))
    n = int(starts[-1])
    # Distinct docnos within a query (trec_eval refuses duplicates), shared across queries.
    docs = np.array([f"D{x}" for k in lens for x in rng.choice(500, size=k, replace=False)], dtype=str)
    scores = rng.integers(0, 8, size=n).astype(np.float64) / 2  # many ties
    if presorted:
        seg = segment_ids(starts)
        order = np.lexsort((-scores, seg))
        scores, docs = scores[order], docs[order]
    assert np.array_equal(trec_order(starts, scores, docs), trec_order_reference(starts, scores, docs))


def test_duplicate_rows_sort_together():
    starts = np.array([0, 5])
    docs = np.array(["a", "b", "a", "c", "a"])
    scores = np.array([1.0, 1.0, 1.0, 2.0, 0.5])
    perm = trec_order(starts, scores, docs)
    assert [(str(docs[i]), float(scores[i])) for i in perm] == [("c", 2.0), ("b", 1.0), ("a", 1.0), ("a", 1.0),
                                                                ("a", 0.5)]


def test_many_queries_use_the_general_sort():
    # More than 65,535 queries: the lexsort branch.
    lens = np.full(70_000, 2)
    starts = np.concatenate(([0], np.cumsum(lens)))
    scores = np.tile([1.0, 2.0], 70_000)
    docs = np.tile(np.array(["a", "b"]), 70_000)
    perm = trec_order(starts, scores, docs)
    assert np.array_equal(perm, trec_order_reference(starts, scores, docs))
    assert np.array_equal(perm[:4], [1, 0, 3, 2])


def test_tie_at_cutoff_flags_equal_scores_straddling_rank_k():
    starts = np.array([0, 4, 8, 10])
    ordered = np.array(
        [
            *[4.0, 3.0, 2.0, 2.0],  # ranks 3 and 4 tie: straddles k=3, not k=2
            *[4.0, 3.0, 2.0, 1.0],  # no ties
            *[1.0, 1.0],  # only 2 rows: nothing beyond k=2 or 3
        ]
    )
    assert tie_at_cutoff(starts, ordered, 3).tolist() == [True, False, False]
    assert tie_at_cutoff(starts, ordered, 2).tolist() == [False, False, False]
    assert tie_at_cutoff(starts, ordered, 1).tolist() == [False, False, True]
