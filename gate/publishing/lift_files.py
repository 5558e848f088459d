"""The lift command's four files: JSON, the per-bucket CSV, example queries (JSONL), Markdown."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gate.common.atomic import write_text_atomic
from gate.common.jsontext import json_line, json_text
from gate.inputs.readers.records import Qrels, QuerySet, Run
from gate.rendering.sections import render_lift_markdown
from gate.statistics.movement import CSV_COLUMNS, NO_RELEVANT, LiftResult, compute_lift

FILES = {
    "json": "retrieval_lift.json",
    "csv": "retrieval_lift_by_bucket.csv",
    "examples": "retrieval_lift_examples.jsonl",
    "markdown": "retrieval_lift.md",
}


def _csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(round(value, 6) + 0.0) if math.isfinite(value) else ""  # + 0.0: -0.0 reads 0.0
    return str(value)


def bucket_csv(result: LiftResult) -> str:
    """``retrieval_lift_by_bucket.csv``: one row per bucket, then a ``no_relevant`` row (count only)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for s in result.buckets:
        writer.writerow([_csv_cell(v) for v in (s.bucket, s.count, s.share, s.mean_rr_delta, s.mean_rank_movement,
                                                s.mean_recall_delta, s.tie_sensitive)])
    writer.writerow([NO_RELEVANT, len(result.no_relevant), "", "", "", "", ""])
    return buf.getvalue()


def write_lift(
    before: Run,
    after: Run,
    qrels: Qrels,
    output_dir: str | Path,
    rel_threshold: int = 1,
    k_rank: int = 10,
    k_recall: int = 100,
    queries: QuerySet | None = None,
    *,
    strata: Mapping[str, str | None] | None = None,
) -> LiftResult:
    """Compute the lift (:func:`compute_lift`) and write the four files into ``output_dir``.

    Files (atomic writes): ``retrieval_lift.json`` (headline counts, mean
    deltas, per-bucket and per-stratum stats), ``retrieval_lift_by_bucket.csv``,
    ``retrieval_lift_examples.jsonl`` (up to 3 queries per bucket, largest
    |rr_delta| first) and ``retrieval_lift.md``. The returned result's
    ``files`` maps ``json``/``csv``/``examples``/``markdown`` to the paths.
    """
    result = compute_lift(before, after, qrels, rel_threshold, k_rank, k_recall, queries,
                          strata=strata)
    out = Path(output_dir)  # created by the first atomic write; a file in the way is an InputError
    paths = {key: out / name for key, name in FILES.items()}
    write_text_atomic(paths["json"], json_text(result.to_dict()))
    write_text_atomic(paths["csv"], bucket_csv(result))
    write_text_atomic(paths["examples"], "".join(
        json_line(e) for e in result.examples()))
    write_text_atomic(paths["markdown"], render_lift_markdown(result))
    return LiftResult(**{**result.__dict__, "files": paths})
