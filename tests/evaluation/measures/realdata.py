"""Helpers for the parity tests on ../shared/realdata (not a test module).

The oracles (pytrec_eval, trec_eval's printed outputs, NIST's official
scores) are fed from files parsed here independently of gate.inputs.readers, and the
"cut to k after trec_eval's sort" is done with a plain Python sort, so a bug
in the project's reader or ordering cannot hide on both sides.
"""

from __future__ import annotations

import gzip
import re
from functools import cache
from pathlib import Path

import numpy as np

from gate.evaluation.measures import Measure, parse_measure
from gate.inputs.readers.records import Run

# trec_eval measure name -> ours (the rel comes from the evaluation's primary rel).
_TREC_EVAL_PLAIN = {"map": "AP", "ndcg": "nDCG", "recip_rank": "RR"}
_TREC_EVAL_CUT = {"map_cut": "AP", "ndcg_cut": "nDCG", "P": "P", "recall": "R", "success": "Success"}


def ours(trec_eval_name: str) -> Measure | None:
    """Our measure for a trec_eval measure name, or None when we do not have it."""
    if trec_eval_name in _TREC_EVAL_PLAIN:
        return parse_measure(_TREC_EVAL_PLAIN[trec_eval_name])
    m = re.fullmatch(r"(map_cut|ndcg_cut|P|recall|success)_(\d+)", trec_eval_name)
    if m:
        return parse_measure(f"{_TREC_EVAL_CUT[m.group(1)]}@{m.group(2)}")
    return None


def _open(path: Path):
    return gzip.open(path, "rt", encoding="utf-8") if str(path).endswith(".gz") else open(path, encoding="utf-8")


@cache
def oracle_qrels(path: Path) -> dict[str, dict[str, int]]:
    """``qid iter docno rel`` as pytrec_eval wants it."""
    qrels: dict[str, dict[str, int]] = {}
    with _open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 4:
                qrels.setdefault(parts[0], {})[parts[2]] = int(parts[3])
    return qrels


@cache
def oracle_run(path: Path) -> dict[str, dict[str, float]]:
    """``qid Q0 docno rank score tag`` as pytrec_eval wants it."""
    run: dict[str, dict[str, float]] = {}
    with _open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6:
                run.setdefault(parts[0], {})[parts[2]] = float(parts[4])
    return run


def cut_run(run: dict[str, dict[str, float]], k: int) -> dict[str, dict[str, float]]:
    """Each query's top k in trec_eval 9.x order: score descending (compared as a C
    float, trec_eval's ``TEXT_RESULTS.sim``), then docno descending in byte order."""
    out = {}
    for qid, docs in run.items():
        by_docno = sorted(docs.items(), key=lambda kv: kv[0].encode("utf-8"), reverse=True)
        ranked = sorted(by_docno, key=lambda kv: -float(np.float32(kv[1])))  # stable: docno descending within a score
        out[qid] = dict(ranked[:k])
    return out


def run_from_dict(run: dict[str, dict[str, float]], source: str = "cut") -> Run:
    return Run.from_rankings(source, run)


def read_trec_eval_output(path: Path) -> dict[str, dict[str, str]]:
    """trec_eval's ``measure<TAB>qid|all<TAB>value`` lines -> {measure: {qid: value}}."""
    out: dict[str, dict[str, str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) == 3:
            out.setdefault(parts[0].strip(), {})[parts[1].strip()] = parts[2].strip()
    return out


def four_decimals_match(value: float, printed: str) -> bool:
    """Whether ``value`` prints as ``printed`` with trec_eval's ``%.4f`` (allowing for the
    last-digit rounding of values that sit on a half)."""
    return abs(value - float(printed)) <= 0.5e-4 + 1e-12
