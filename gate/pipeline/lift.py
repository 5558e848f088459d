"""``retrieval-gate lift``: movement buckets between two runs, written as the four lift files."""

from __future__ import annotations

from pathlib import Path

from gate.inputs.named import check_rel, default_qrels
from gate.inputs.readers.qrels import load_qrels
from gate.inputs.readers.queries import load_queries
from gate.inputs.readers.runs import read_run
from gate.publishing.lift_files import write_lift
from gate.statistics.movement import LiftResult


def lift(before: str, after: str, qrels: str | None, out: str | Path, *, rel: int, k_rank: int, k_recall: int,
         queries: str | None = None) -> LiftResult:
    """The lift of ``after`` over ``before`` on ``qrels`` (default: the named default qrels),
    written into ``out``."""
    golden = load_queries(queries) if queries else None
    judgments = load_qrels(qrels, queries=golden) if qrels else default_qrels()
    check_rel(judgments, rel, "--rel-threshold")
    return write_lift(read_run(before), read_run(after), judgments, out, rel_threshold=rel, k_rank=k_rank,
                      k_recall=k_recall, queries=golden)
