"""NIST's official TREC DL 2019/2020 passage scores are reproduced to 4 decimals.

Conventions behind ``nist_metadata/nist_summary_scores.tsv`` (see
../shared/realdata/README.md and ``verification_computed_vs_nist.tsv``):

* DL 2019 "trec_eval": trec_eval defaults (binary measures at rel >= 1);
* DL 2019 "passages-eval": binary measures at rel >= 2 (grade 1 is "related,
  does not answer"), nDCG on the graded labels unchanged;
* DL 2020 "trec_eval": ``-l 2`` for every measure, and nDCG with grade 1
  zeroed (the qrels were mapped 1 -> 0 before evaluation: trec_eval's nDCG
  itself ignores ``-l``);
* DL 2020 "passages-eval": graded nDCG only.

The mean is trec_eval's without ``-c``: over the queries in both the run and
the qrels (every official run covers all 200 topics, so this is all judged
topics).
"""

from __future__ import annotations

import csv
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from gate.evaluation.evaluate import evaluate
from gate.inputs.readers.qrels import read_qrels
from gate.inputs.readers.records import Qrels
from gate.inputs.readers.runs import read_run
from gate.inputs.universe import query_universe
from tests.evaluation.measures.realdata import four_decimals_match, ours
from tests.shared_data import REALDATA, need

YEARS = {
    "dl19": (REALDATA / "runs/trec-dl-2019-passage", "qrels/qrels.dl19-passage.txt"),
    "dl20": (REALDATA / "runs/trec-dl-2020-passage", "qrels/qrels.dl20-passage.txt"),
}
# (year, evaluator) -> (rel for binary measures, zero grade 1 for nDCG)
CONVENTIONS = {
    ("dl19", "trec_eval"): (1, False),
    ("dl19", "passages-eval"): (2, False),
    ("dl20", "trec_eval"): (2, True),
    ("dl20", "passages-eval"): (1, False),
}


@cache
def _nist(year: str) -> dict[tuple[str, str, str], str]:
    folder, _ = YEARS[year]
    with open(need(folder / "nist_metadata/nist_summary_scores.tsv"), encoding="utf-8", newline="") as f:
        return {(r["run_id"], r["evaluator"], r["measure"]): r["value"] for r in csv.DictReader(f, delimiter="\t")
                if r["query"] == "all"}


@cache
def _qrels(year: str, zero_grade_one: bool) -> Qrels:
    folder, name = YEARS[year]
    qrels = read_qrels(need(folder / name))
    if not zero_grade_one:
        return qrels
    judgments = {q: {d: (0 if r == 1 else r) for d, r in docs.items()} for q, docs in qrels.judgments.items()}
    return Qrels(qrels.source + " (grade 1 -> 0)", judgments, qrels.negative_is_judged)


def _runs() -> list:
    params = []
    for year, (folder, _) in YEARS.items():
        for path in sorted((folder / "official_nist").glob("input.*.gz")) if folder.exists() else []:
            params.append(pytest.param(year, path, id=f"{year}-{path.name[len('input.'):-len('.gz')]}"))
    if not params:
        params.append(pytest.param(None, None, marks=pytest.mark.skip(reason=f"{REALDATA}/runs not present")))
    return params


def _nist_means(year: str, run_path: Path, evaluator: str, measures: list[str]) -> dict[str, float]:
    rel, zero = CONVENTIONS[(year, evaluator)]
    qrels = _qrels(year, zero)
    pq = evaluate(read_run(run_path), qrels, measures, query_universe(qrels).query_ids, rel=rel)
    present = np.array([q not in set(pq.missing) for q in pq.query_ids])
    return {m: float(np.mean(pq[m][present])) for m in measures}


@pytest.mark.parametrize("year, path", _runs())
def test_official_summary_scores(year, path: Path):
    run_id = path.name[len("input.") : -len(".gz")]
    rows = {k: v for k, v in _nist(year).items() if k[0] == run_id}
    assert rows, f"no NIST scores for {run_id}"
    checked = 0
    for evaluator in ("trec_eval", "passages-eval"):
        wanted = {measure: ours(measure) for (_, ev, measure) in rows if ev == evaluator and ours(measure) is not None}
        if not wanted:
            continue
        means = _nist_means(year, path, evaluator, [str(m) for m in wanted.values()])
        for measure, ours_measure in wanted.items():
            printed = rows[(run_id, evaluator, measure)]
            value = means[str(ours_measure)]
            assert four_decimals_match(value, printed), f"{run_id} {evaluator} {measure}: {value:.6f} vs NIST {printed}"
            checked += 1
    # DL19: 12 supported measures x 2 evaluators; DL20: 12 + 3 (bpref is not ours).
    assert checked == (24 if year == "dl19" else 15)


@pytest.mark.parametrize("run_id, official", [("bm25base_p", "0.5058"), ("p_bert", "0.7380")])
def test_dl19_ndcg_at_10_of_two_official_runs(run_id, official):
    folder, _ = YEARS["dl19"]
    path = need(folder / f"official_nist/input.{run_id}.gz")
    assert _nist("dl19")[(run_id, "trec_eval", "ndcg_cut_10")] == official
    qrels = _qrels("dl19", False)
    pq = evaluate(read_run(path), qrels, ["nDCG@10"], query_universe(qrels).query_ids)
    assert len(pq.query_ids) == 43 and not pq.missing
    assert f"{pq.mean('nDCG@10'):.4f}" == official
