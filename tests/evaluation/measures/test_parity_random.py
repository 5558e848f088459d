"""Parity with pytrec_eval and ir_measures on random runs full of edge cases (no shared data needed).

Random rankings with many equal scores (docno tie-breaking), scores that are
distinct doubles but equal floats, negative labels, empty rankings, queries
missing from the run and run queries without qrels.
"""

from __future__ import annotations

import numpy as np
import pytest

from gate.evaluation.evaluate import evaluate
from gate.inputs.readers.records import Qrels, Run
from gate.inputs.universe import query_universe
from tests.evaluation.measures.realdata import cut_run

pytrec_eval = pytest.importorskip("pytrec_eval")

TREC = {
    "nDCG@10": "ndcg_cut_10",
    "nDCG@5": "ndcg_cut_5",
    "nDCG": "ndcg",
    "AP": "map",
    "AP@20": "map_cut_20",
    "RR": "recip_rank",
    "R@10": "recall_10",
    "R@100": "recall_100",
    "P@5": "P_5",
    "P@10": "P_10",
    "Success@1": "success_1",
    "Success@10": "success_10",
}


def _random_case(seed: int):
    rng = np.random.default_rng(seed)
    rankings: dict[str, dict[str, float]] = {}
    judgments: dict[str, dict[str, int]] = {}
    for i in range(120):
        qid = f"q{i}"
        n = int(rng.integers(0, 150))
        docs = [f"D{x}" for x in rng.choice(600, size=n, replace=False)]
        kind = i % 3
        if kind == 0:
            scores = rng.integers(0, 12, size=n) / 4.0  # heavy ties
        elif kind == 1:
            scores = 5.0 + rng.integers(0, 3, size=n) * 1e-12  # equal as floats, not as doubles
        else:
            scores = rng.normal(size=n)
        if i % 17 != 5:  # some judged queries are missing from the run
            rankings[qid] = dict(zip(docs, scores.tolist()))
        if i % 13 != 7:  # some run queries have no qrels
            pool = rng.choice(600, size=int(rng.integers(1, 200)), replace=False)
            judgments[qid] = {f"D{x}": int(r) for x, r in zip(pool, rng.integers(-1, 4, size=len(pool)))}
    return rankings, judgments


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("rel", [1, 2, 3])
def test_random_runs_match_pytrec_eval(seed, rel):
    rankings, judgments = _random_case(seed)
    run = Run.from_rankings("random", rankings)
    qrels = Qrels("random", judgments)
    universe = query_universe(qrels)
    measures = list(TREC) + ["RR@10"]
    pq = evaluate(run, qrels, measures, universe.query_ids, rel=rel)
    params = {"ndcg_cut.5,10", "ndcg", "map", "map_cut.20", "recip_rank", "recall.10,100", "P.5,10", "success.1,10"}
    full = pytrec_eval.RelevanceEvaluator(judgments, params, relevance_level=rel).evaluate(rankings)
    cut10 = pytrec_eval.RelevanceEvaluator(judgments, {"recip_rank"},
                                           relevance_level=rel).evaluate(cut_run(rankings, 10))
    assert set(full) == set(universe.query_ids) - set(pq.missing)
    assert pq.missing and pq.extra  # the case does exercise both
    for name in measures:
        table, key = (cut10, "recip_rank") if name == "RR@10" else (full, TREC[name])
        values = pq[name]
        for i, qid in enumerate(pq.query_ids):
            expected = table[qid][key] if qid in table else 0.0
            assert values[i] == pytest.approx(expected, abs=1e-12), (name, qid)


def test_judged_matches_ir_measures_when_negatives_are_judged():
    ir_measures = pytest.importorskip("ir_measures")
    rankings, judgments = _random_case(4)
    run = Run.from_rankings("random", rankings)
    universe = query_universe(Qrels("random", judgments))
    theirs_qrels = [ir_measures.Qrel(q, d, r) for q, docs in judgments.items() for d, r in docs.items()]
    # ir_measures breaks ties its own way: give it trec_eval's order as distinct scores.
    ordered = cut_run(rankings, 10**6)
    theirs_run = [ir_measures.ScoredDoc(q, d, -r) for q, docs in ordered.items() for r, d in enumerate(docs)]
    theirs = {
        (str(m.measure), m.query_id): m.value
        for m in ir_measures.iter_calc([ir_measures.parse_measure("Judged@10"), ir_measures.parse_measure("Judged@50")],
                                       theirs_qrels, theirs_run)
    }
    as_judged = evaluate(run, Qrels("random", judgments, negative_is_judged=True), ["Judged@10", "Judged@50"],
                         universe.query_ids)
    as_unjudged = evaluate(run, Qrels("random", judgments), ["Judged@10", "Judged@50"], universe.query_ids)
    differs = 0
    for name in ("Judged@10", "Judged@50"):
        for i, qid in enumerate(universe.query_ids):
            assert as_judged.values[name][i] == pytest.approx(theirs.get((name, qid), 0.0), abs=1e-12)
            assert as_unjudged.values[name][i] <= as_judged.values[name][i]
            differs += as_unjudged.values[name][i] < as_judged.values[name][i]
    assert differs  # the -1 labels make the default (trec_eval: unjudged) differ from ir_measures
