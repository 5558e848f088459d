"""Named inputs loaded from a spec, described (path, fingerprint, count) for reports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gate.inputs.fingerprint import file_sha256, qrels_fingerprint, queries_fingerprint
from gate.inputs.readers.qrels import load_qrels
from gate.inputs.readers.queries import load_queries
from gate.inputs.readers.records import Qrels, QuerySet, Run
from gate.inputs.readers.runs import read_run


def load_run_file(path: str) -> Run:
    return read_run(path)


def load_qrels_spec(spec: str) -> Qrels:
    return load_qrels(spec)


def load_queries_spec(spec: str) -> QuerySet:
    return load_queries(spec)


def describe(spec: str, loaded: Run | Qrels | QuerySet) -> dict[str, Any]:
    """Where an input came from and what it held, for the reproducibility footer."""
    entry: dict[str, Any] = {"path": str(spec)}
    if isinstance(loaded, Qrels):
        fp = qrels_fingerprint(loaded)
        entry.update(sha256=fp.sha256, count=fp.count, unit="judgments", canonical=True)
    elif isinstance(loaded, QuerySet):
        fp = queries_fingerprint(loaded)
        entry.update(sha256=fp.sha256, count=fp.count, unit="queries", canonical=True)
    else:
        path = Path(spec)
        entry.update(sha256=file_sha256(path) if path.is_file() else "", count=len(loaded), unit="rows",
                     canonical=False)
    return entry


def describe_inputs(**named: tuple[str, Any] | None) -> dict[str, dict[str, Any]]:
    return {name: describe(*pair) for name, pair in named.items() if pair is not None}
