"""Named inputs loaded from a spec, described (path, fingerprint, count) for reports."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gate.common.errors import InputError, UsageError
from gate.inputs.fingerprint import file_sha256, qrels_fingerprint, queries_fingerprint
from gate.inputs.readers.irds import load_irds_qrels, quiet_irds
from gate.inputs.readers.qrels import load_qrels
from gate.inputs.readers.queries import load_queries
from gate.inputs.readers.records import Qrels, QuerySet, Run
from gate.inputs.readers.runs import read_run

#: The lift command's qrels when none is given (MS MARCO passage dev/small, from the cache only).
DEFAULT_QRELS = "irds:msmarco-passage/dev/small"


def load_run_file(path: str) -> Run:
    return read_run(path)


def load_qrels_spec(spec: str, queries: str | None = None) -> Qrels:
    """Qrels; judgments keyed by query text meet the golden queries of ``queries`` by text."""
    return load_qrels(spec, queries=load_queries(queries) if queries else None)


def load_queries_spec(spec: str) -> QuerySet:
    return load_queries(spec)


def describe(spec: str, loaded: Run | Qrels | QuerySet) -> dict[str, Any]:
    """Where an input came from and what it held, for the reproducibility footer (a run file's
    SHA-256 is read here unless ``loaded`` carries it: a streamed run's digest)."""
    entry: dict[str, Any] = {"path": str(spec)}
    if isinstance(loaded, Qrels):
        fp = qrels_fingerprint(loaded)
        entry.update(sha256=fp.sha256, count=fp.count, unit="judgments", canonical=True)
    elif isinstance(loaded, QuerySet):
        fp = queries_fingerprint(loaded)
        entry.update(sha256=fp.sha256, count=fp.count, unit="queries", canonical=True)
    else:
        path = Path(spec)
        sha256 = getattr(loaded, "sha256", None)
        if sha256 is None:
            sha256 = file_sha256(path) if path.is_file() else ""
        entry.update(sha256=sha256, count=len(loaded), unit="rows",
                     canonical=False)
    return entry


def describe_inputs(**named: tuple[str, Any] | None) -> dict[str, dict[str, Any]]:
    """:func:`describe` of each ``name=(spec, loaded)`` given (None: left out)."""
    return {name: describe(*pair) for name, pair in named.items() if pair is not None}


def _irds_qrels_path(dataset_id: str) -> Path | None:
    """Where ir_datasets keeps ``dataset_id``'s qrels once downloaded (None if it cannot tell)."""
    try:
        import ir_datasets  # noqa: WPS433 - heavy: imported on first use
    except ImportError:
        return None
    try:
        with quiet_irds():
            handler = ir_datasets.load(dataset_id).qrels_handler()
        path = getattr(getattr(handler, "_qrels_dlc", None), "_path", None)
        return Path(path) if path is not None else None
    except Exception:  # noqa: BLE001 - unknown id or layout: let the loader say
        return None


def default_qrels() -> Qrels:
    """MS MARCO passage dev/small qrels through ir_datasets (``irds:msmarco-passage/dev/small``).

    Never downloads (that archive is 1 GB): when the qrels are not in the
    ir_datasets cache (``IR_DATASETS_HOME``, default ``~/.ir_datasets``) this
    raises a one-line :class:`InputError` saying which ``--qrels`` to pass.
    """
    path = _irds_qrels_path(DEFAULT_QRELS.split(":", 1)[1])
    if path is None or not path.is_file():
        home = os.environ.get("IR_DATASETS_HOME", str(Path.home() / ".ir_datasets"))
        raise InputError(DEFAULT_QRELS, None,
                         f"no --qrels given, and the default MS MARCO passage dev/small qrels are not in the "
                         f"ir_datasets cache ({home}); pass the qrels your runs were judged with, e.g. "
                         "--qrels qrels.dev.small.tsv (MS MARCO dev) or --qrels qrels.dl19-passage.txt "
                         "--rel-threshold 2 (TREC DL 2019)")
    return load_irds_qrels(DEFAULT_QRELS)


def check_rel(qrels: Qrels, rel: int, option: str = "rel") -> None:
    """A binary threshold above every label makes every binary measure 0: a typo, not a result."""
    top = qrels.highest_label()
    if top is not None and rel > top:
        raise UsageError(f"{option} {rel}: no judgment in {qrels.source} has a label of {rel} or more (the highest "
                         f"is {top}): every binary measure would be 0")
