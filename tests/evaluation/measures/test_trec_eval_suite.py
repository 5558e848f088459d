"""trec_eval's own test suite: its printed outputs are reproduced for the measures we have.

Each case is one line of ``QUICKTEST_COMMANDS.txt``:

* without ``-c`` trec_eval evaluates and averages only the queries present in
  both the run and the qrels;
* with ``-c`` the average runs over every qrels query, absent ones scoring 0
  (our ``evaluate`` always scores a universe query missing from the run as 0;
  the test averages the way the command did);
* ``-M100`` keeps each query's first 100 documents after trec_eval's sort;
* ``-l2`` makes binary measures count labels >= 2 (nDCG keeps the grades).

Values are printed with ``%.4f``: compared to 4 decimals.
"""

from __future__ import annotations

import numpy as np
import pytest

from gate.evaluation.evaluate import evaluate
from gate.inputs.readers.qrels import read_qrels
from gate.inputs.readers.runs import read_run
from gate.inputs.universe import query_universe
from tests.evaluation.measures.realdata import (
    cut_run,
    four_decimals_match,
    oracle_run,
    ours,
    read_trec_eval_output,
    run_from_dict,
)
from tests.shared_data import REALDATA, need

SUITE = REALDATA / "trec_eval_tests"

# (expected output, qrels, results, -c, -M, -l)
CASES = [
    ("out.test", "qrels.test", "results.test", False, None, 1),
    ("out.test.a", "qrels.test", "results.test", False, None, 1),
    ("out.test.aq", "qrels.test", "results.test", False, None, 1),
    ("out.test.aqc", "qrels.test", "results.trunc", True, None, 1),
    ("out.test.aqcM", "qrels.test", "results.trunc", True, 100, 1),
    ("out.test.aql", "qrels.rel_level", "results.test", False, None, 2),
    ("out.test.meas_params", "qrels.test", "results.test", False, None, 1),
]
# out.test.aqZ is left out: -Z turns every value into a z-score against a reference file.


def _check(version: str, out_name: str, qrels_name: str, results_name: str, complete: bool, max_docs, rel: int):
    folder = need(SUITE / version)
    expected = read_trec_eval_output(need(folder / out_name))
    qrels = read_qrels(folder / qrels_name)
    run = read_run(folder / results_name)
    if max_docs is not None:
        run = run_from_dict(cut_run(oracle_run(folder / results_name), max_docs))
    wanted = {name: ours(name) for name in expected if ours(name) is not None}
    assert wanted, "no comparable measure in the file"
    universe = query_universe(qrels)
    pq = evaluate(run, qrels, list(wanted.values()), universe.query_ids, rel=rel)
    averaged = [i for i, q in enumerate(pq.query_ids) if complete or q not in pq.missing]
    checked = 0
    for trec_name, measure in wanted.items():
        values = pq[measure]
        for qid, printed in expected[trec_name].items():
            if qid == "all":
                value = float(np.mean(values[averaged]))
            else:
                value = float(values[pq.query_ids.index(qid)])
            assert four_decimals_match(value, printed), \
                f"{version}/{out_name} {trec_name} {qid}: {value:.6f} vs {printed}"
            checked += 1
    if "num_q" in expected:
        assert int(expected["num_q"]["all"]) == len(averaged)
    return checked


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_trec_eval_9_0_8_outputs(case):
    checked = _check("v9.0.8", *case)
    assert checked >= 10


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_trec_eval_10_0_outputs(case):
    # v10.0 changed only interpolated precision (and added measures we do not have).
    checked = _check("v10.0", *case)
    assert checked >= 10


def test_the_suite_exercises_the_measures_and_conventions_it_should():
    folder = need(SUITE / "v9.0.8")
    aq = read_trec_eval_output(folder / "out.test.aq")
    for name in ("map", "P_10", "recall_100", "ndcg_cut_10", "recip_rank", "success_10", "ndcg", "map_cut_10"):
        assert set(aq[name]) == {"301", "302", "303", "all"}
    # results.trunc has no topic 302: with -c it scores 0 and still counts in "all".
    aqc = read_trec_eval_output(folder / "out.test.aqc")
    assert set(aqc["map"]) == {"301", "303", "all"} and aqc["num_q"]["all"] == "3"
    printed = set(read_trec_eval_output(folder / "out.test.meas_params"))
    assert {"P_7", "recall_2000", "ndcg_cut_23", "success_2"} <= printed


def test_negative_labels_in_the_qrels_are_unjudged_like_trec_eval():
    # qrels.rel_level has 304 judgments of -1: they must not count as relevant
    # nor carry gain, which out.test.aql confirms per query (checked above);
    # here: they are not judged for Judged@k either.
    folder = need(SUITE / "v9.0.8")
    qrels = read_qrels(folder / "qrels.rel_level")
    assert any(label < 0 for docs in qrels.judgments.values() for label in docs.values())
    run = read_run(folder / "results.test")
    pq = evaluate(run, qrels, ["Judged@1000"], query_universe(qrels).query_ids)
    for i, qid in enumerate(pq.query_ids):
        docs, _ = run.ranking(qid)
        judged = sum(qrels.judgments[qid].get(str(d), -1) >= 0 for d in docs)
        assert pq.values["Judged@1000"][i] == pytest.approx(judged / len(docs))
