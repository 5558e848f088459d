"""Parity with pytrec_eval (trec_eval 9.0.8's code) on the official TREC DL 2019/2020 passage runs.

Every per-query value of nDCG@10, AP, R@100, P@10 and the rel=2 variants
equals pytrec_eval's within 1e-9 on the queries pytrec_eval evaluates (judged
and present in the run); universe queries missing from the run score 0.
RR@10 is trec_eval's recip_rank on the run cut to its top 10 after
trec_eval's sort. pytrec_eval is fed by an independent parse of the files.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.evaluation.evaluate import evaluate
from gate.inputs.readers.qrels import read_qrels
from gate.inputs.readers.runs import read_run
from gate.inputs.universe import query_universe
from tests.evaluation.measures.realdata import cut_run, oracle_qrels, oracle_run
from tests.shared_data import REALDATA

pytrec_eval = pytest.importorskip("pytrec_eval")

DL = {
    "dl19": (REALDATA / "runs/trec-dl-2019-passage", "qrels/qrels.dl19-passage.txt"),
    "dl20": (REALDATA / "runs/trec-dl-2020-passage", "qrels/qrels.dl20-passage.txt"),
}


def _official_runs() -> list:
    params = []
    for year, (folder, _) in DL.items():
        for path in sorted((folder / "official_nist").glob("input.*.gz")) if folder.exists() else []:
            params.append(pytest.param(year, path, id=f"{year}-{path.name[len('input.'):-len('.gz')]}"))
    if not params:
        params.append(pytest.param(None, None, marks=pytest.mark.skip(reason=f"{REALDATA}/runs not present")))
    return params


# ours (with the primary rel) -> pytrec_eval measure; "cut10:" = computed on the run cut to 10
PAIRS = {
    1: {"nDCG@10": "ndcg_cut_10", "AP": "map", "R@100": "recall_100", "P@10": "P_10", "RR@10": "cut10:recip_rank"},
    2: {
        "AP(rel=2)": "map",
        "R(rel=2)@100": "recall_100",
        "P(rel=2)@10": "P_10",
        "RR(rel=2)@10": "cut10:recip_rank",
        "nDCG@10": "ndcg_cut_10",
    },
}


@pytest.mark.full  # every official run, ~10 s: the full tier (test_parity_random and the trec_eval suite are fast)
@pytest.mark.parametrize("year, path", _official_runs())
def test_per_query_values_equal_pytrec_eval(year, path: Path):
    folder, qrels_name = DL[year]
    qrels_path = folder / qrels_name
    qrels = read_qrels(qrels_path)
    run = read_run(path)
    universe = query_universe(qrels)
    oracle_q = oracle_qrels(qrels_path)
    oracle_r = oracle_run(path)
    top10 = cut_run(oracle_r, 10)
    assert set(universe.query_ids) == set(oracle_q)
    for rel, pairs in PAIRS.items():
        pq = evaluate(run, qrels, list(pairs), universe.query_ids, rel=rel)
        full = pytrec_eval.RelevanceEvaluator(oracle_q, {"ndcg_cut.10", "map", "recall.100", "P.10"},
                                              relevance_level=rel)
        cut = pytrec_eval.RelevanceEvaluator(oracle_q, {"recip_rank"}, relevance_level=rel)
        expected = {"": full.evaluate(oracle_r), "cut10:": cut.evaluate(top10)}
        evaluated = set(expected[""])
        assert evaluated == set(universe.query_ids) - set(pq.missing)
        for ours_name, theirs in pairs.items():
            prefix, _, measure = theirs.rpartition(":")
            table = expected[prefix + ":" if prefix else ""]
            values = pq[ours_name]
            for i, qid in enumerate(pq.query_ids):
                if qid in table:
                    assert values[i] == pytest.approx(table[qid][measure], abs=1e-9), (ours_name, qid)
                else:
                    assert values[i] == 0.0, (ours_name, qid)


def test_the_rel2_variants_differ_from_rel1_somewhere():
    # Guards the parity test against comparing the same thing twice.
    folder, qrels_name = DL["dl19"]
    path = folder / "official_nist/input.bm25base_p.gz"
    if not path.exists():
        pytest.skip(f"{path} not present")
    qrels = read_qrels(folder / qrels_name)
    pq = evaluate(read_run(path), qrels, ["AP", "AP(rel=2)", "P@10", "P(rel=2)@10"], query_universe(qrels).query_ids)
    assert pq.mean("AP") != pq.mean("AP(rel=2)")
    assert pq.mean("P@10") > pq.mean("P(rel=2)@10")
