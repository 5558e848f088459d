"""Every measure on a tiny hand-computed example (the arithmetic is in the comments)."""

from __future__ import annotations

from math import log2

import pytest

from gate.evaluation.evaluate import evaluate
from gate.inputs.readers.records import Qrels, Run

# Query q1, listed in the file out of score order (the order must come from the scores):
#   rank  doc  score  label
#   1     d1   0.9     0     judged, not relevant
#   2     d2   0.8     2
#   3     d3   0.7     -     not in the qrels
#   4     d4   0.6     1
#   5     d5   0.5     -
#   6     d7   0.4    -1     "in the pool, unjudged" (trec_eval) unless negative_is_judged
# Not retrieved: d6 with label 3.
RUN = Run.from_rankings(
    "run",
    {
        "q1": {"d4": 0.6, "d1": 0.9, "d7": 0.4, "d3": 0.7, "d2": 0.8, "d5": 0.5},
        "q2": {"x": 1.0},
        "zz": {"d1": 1.0},  # not judged: outside the universe
    },
)
JUDGMENTS = {
    "q1": {"d1": 0, "d2": 2, "d4": 1, "d6": 3, "d7": -1},
    "q2": {"x": 0, "y": -1},  # nothing relevant
    "q3": {"z": 1},  # judged but absent from the run
}
QRELS = Qrels("qrels", JUDGMENTS)
QIDS = ("q1", "q2", "q3")

IDCG3 = 3 / log2(2) + 2 / log2(3) + 1 / log2(4)  # ideal ranking: d6 (3), d2 (2), d4 (1)


def _values(*names: str, rel: int = 1, qrels: Qrels = QRELS) -> dict[str, list[float]]:
    pq = evaluate(RUN, qrels, list(names), QIDS, rel=rel)
    return {name: pq[name].tolist() for name in names}


def _q1(name: str, **kw) -> float:
    return _values(name, **kw)[name][0]


@pytest.mark.parametrize(
    "name, expected",
    [
        # DCG@3 = 0/log2(2) + 2/log2(3) + 0 ; IDCG@3 = 3/1 + 2/log2(3) + 1/2
        ("nDCG@3", (2 / log2(3)) / IDCG3),
        # DCG@1 = 0 (d1 has label 0)
        ("nDCG@1", 0.0),
        # ideal at 1 = 3 (d6): DCG@2 = 2/log2(3), IDCG@2 = 3 + 2/log2(3)
        ("nDCG@2", (2 / log2(3)) / (3 + 2 / log2(3))),
        # whole run: DCG = 2/log2(3) + 1/log2(5) (d4 at rank 4); IDCG over all 3 positive labels
        ("nDCG", (2 / log2(3) + 1 / log2(5)) / IDCG3),
        # relevant (>=1): d2, d4, d6 -> R = 3; precisions at ranks 2 and 4: 1/2, 2/4
        ("AP", (1 / 2 + 2 / 4) / 3),
        # rel >= 2: d2, d6 -> R = 2; only rank 2 retrieved: 1/2
        ("AP(rel=2)", (1 / 2) / 2),
        # cut at 3: only rank 2 counts, still divided by all 3 relevant
        ("AP@3", (1 / 2) / 3),
        ("AP@1", 0.0),
        ("RR", 1 / 2),
        ("RR@10", 1 / 2),
        ("RR@1", 0.0),
        ("RR(rel=2)@2", 1 / 2),
        ("RR(rel=3)", 0.0),  # d6 (3) never retrieved
        # relevant in the top 3: d2 -> 1 of 3
        ("R@3", 1 / 3),
        # top 5: d2, d4 -> 2 of 3
        ("R@5", 2 / 3),
        ("R(rel=2)@5", 1 / 2),
        ("R(rel=3)@10", 0.0),
        ("P@3", 1 / 3),
        ("P@1", 0.0),
        # P divides by k even though only 6 were retrieved: 2/10
        ("P@10", 2 / 10),
        ("P(rel=2)@2", 1 / 2),
        ("Success@1", 0.0),
        ("Success@2", 1.0),
        ("Success(rel=3)@10", 0.0),
        # top 3: d1 (0) and d2 (2) are judged, d3 is not -> 2/3
        ("Judged@3", 2 / 3),
        ("Judged@1", 1.0),
        # top 10 of 6 retrieved: d1, d2, d4 judged; d7 (-1) is NOT -> 3 / min(10, 6)
        ("Judged@10", 3 / 6),
    ],
)
def test_hand_computed_values(name, expected):
    assert _q1(name) == pytest.approx(expected, abs=1e-15)


def test_negative_labels_are_judged_only_when_the_qrels_say_so():
    judged_negatives = Qrels("qrels", JUDGMENTS, negative_is_judged=True)
    # d7 (-1) now counts: d1, d2, d4, d7 of 6
    assert _q1("Judged@10", qrels=judged_negatives) == pytest.approx(4 / 6)
    # q2: x (0) of 1 retrieved, either way
    assert _values("Judged@10", qrels=judged_negatives)["Judged@10"][1] == 1.0
    # A negative label never gains nor is relevant, judged or not.
    for name in ("nDCG", "AP", "RR", "P@10", "R@10"):
        assert _q1(name, qrels=judged_negatives) == _q1(name)


def test_query_without_relevant_documents_scores_zero_and_missing_query_scores_zero():
    names = ["nDCG@10", "nDCG", "AP", "RR@10", "R@100", "P@10", "Success@10", "Judged@10"]
    values = _values(*names)
    for name in names:
        q2, q3 = values[name][1], values[name][2]
        assert q3 == 0.0, name  # missing from the run (trec_eval -c)
        assert q2 == (1.0 if name == "Judged@10" else 0.0), name  # x is judged (label 0)


def test_default_rel_applies_to_binary_measures_only():
    pq = evaluate(RUN, QRELS, ["AP", "nDCG@3", "RR(rel=1)@10", "Judged@3"], QIDS, rel=2)
    assert list(pq.values) == ["AP(rel=2)", "nDCG@3", "RR@10", "Judged@3"]
    assert pq["AP"][0] == pytest.approx(0.25)  # the open rel is filled with 2
    assert pq.mean("AP") == pytest.approx(0.25 / 3)
    assert pq["RR@10"][0] == pytest.approx(1 / 2)  # "RR(rel=1)@10" fixed rel=1
    assert pq["nDCG@3"][0] == pytest.approx((2 / log2(3)) / IDCG3)


def test_grade_one_counts_at_rel_one_and_not_at_rel_two():
    assert _q1("P@4") == pytest.approx(2 / 4)  # d2 (2) and d4 (1)
    assert _q1("P(rel=2)@4") == pytest.approx(1 / 4)  # d2 only


def test_rank_column_and_file_order_are_ignored():
    shuffled = Run.from_rankings("run", {"q1": {"d2": 0.8, "d5": 0.5, "d1": 0.9, "d4": 0.6, "d7": 0.4, "d3": 0.7}})
    a = evaluate(RUN, QRELS, ["AP", "nDCG", "RR"], ["q1"])
    b = evaluate(shuffled, QRELS, ["AP", "nDCG", "RR"], ["q1"])
    assert all((a.values[k] == b.values[k]).all() for k in a.values)


def test_equal_scores_rank_by_docno_descending():
    # All three tie: trec_eval order is c, b, a.
    run = Run.from_rankings("run", {"q": {"a": 1.0, "b": 1.0, "c": 1.0}})
    for relevant, rr in (("a", 1 / 3), ("b", 1 / 2), ("c", 1.0)):
        qrels = Qrels("qrels", {"q": {relevant: 1}})
        assert evaluate(run, qrels, ["RR"], ["q"]).values["RR"][0] == pytest.approx(rr)
