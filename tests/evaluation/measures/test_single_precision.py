"""Scores are compared in single precision, as trec_eval 9.x (the version pytrec_eval wraps, and
NIST's official scores) reads them; trec_eval 10.0 compares in double. The README names the
example: TUA1-1's AP on DL19 query 148538 is 0.3911 in single precision and 0.3915 in double."""

from __future__ import annotations

import gzip

import numpy as np

from gate.evaluation.evaluate import evaluate
from gate.inputs.readers.qrels import read_qrels
from gate.inputs.readers.runs import read_run
from tests.shared_data import REALDATA, need


def _ap(rows, relevant, precision):
    """AP computed here, independently: score descending at ``precision``, then docno descending."""
    by_docno = sorted(rows, key=lambda r: r[0], reverse=True)
    ranked = sorted(by_docno, key=lambda r: -float(precision(r[1])))
    hits = total = 0.0
    for rank, (docno, _) in enumerate(ranked, 1):
        if docno in relevant:
            hits += 1
            total += hits / rank
    return total / len(relevant)


def test_tua1_1_on_query_148538_reads_as_trec_eval_9_does():
    folder = need(REALDATA / "runs" / "trec-dl-2019-passage")
    run_path = folder / "official_nist" / "input.TUA1-1.gz"
    qrels_path = folder / "qrels" / "qrels.dl19-passage.txt"
    gate_ap = float(evaluate(read_run(run_path), read_qrels(qrels_path), ["AP"], ["148538"]).values["AP"][0])
    with gzip.open(run_path, "rt") as handle:
        rows = [(p[2], p[4]) for p in (line.split() for line in handle) if p[0] == "148538"]
    relevant = {p[2] for p in (line.split() for line in qrels_path.read_text().splitlines())
                if p[0] == "148538" and int(p[3]) >= 1}
    assert round(gate_ap, 4) == 0.3911 == round(_ap(rows, relevant, np.float32), 4)
    assert round(_ap(rows, relevant, np.float64), 4) == 0.3915  # what trec_eval 10.0's double comparison gives
    assert abs(gate_ap - _ap(rows, relevant, np.float32)) < 1e-12


def test_pytrec_eval_reads_it_the_same_way():
    pytrec_eval = __import__("pytest").importorskip("pytrec_eval")
    folder = need(REALDATA / "runs" / "trec-dl-2019-passage")
    qrels = {"148538": {p[2]: int(p[3]) for p in (line.split() for line in
                        (folder / "qrels" / "qrels.dl19-passage.txt").read_text().splitlines()) if p[0] == "148538"}}
    with gzip.open(folder / "official_nist" / "input.TUA1-1.gz", "rt") as handle:
        run = {"148538": {p[2]: float(p[4]) for p in (line.split() for line in handle) if p[0] == "148538"}}
    assert round(pytrec_eval.RelevanceEvaluator(qrels, {"map"}).evaluate(run)["148538"]["map"], 4) == 0.3911
