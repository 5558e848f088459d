"""BEIR dataset folders: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``.

All queries are returned, not only those judged in the split: the evaluation
layer decides the query universe.  Each file may also be gzipped
(``corpus.jsonl.gz``).

The split is ``test`` unless one is named: in a config with ``golden.split: dev``, on the
command line (and wherever a qrels or queries spec is taken) as ``DIR#split=dev``, the form
of ``irds:<id>#field=<name>``. A split the folder does not hold is refused with the splits its
``qrels/`` holds.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from gate.inputs.readers.beir_folder import (
    DEFAULT_SPLIT,
    SPLIT_SUFFIX,
    BeirFolder,
    beir_corpus,
    beir_file,
    beir_folder_of,
    beir_splits,
    check_split_name,
    is_beir_folder,
)
from gate.inputs.readers.qrels import beir_qrels
from gate.inputs.readers.queries import beir_queries
from gate.inputs.readers.records import Qrels, QuerySet

__all__ = ["BeirData", "BeirFolder", "read_beir", "beir_file", "is_beir_folder", "beir_folder_of", "beir_queries",
           "beir_qrels", "beir_corpus", "beir_splits", "check_split_name", "DEFAULT_SPLIT", "SPLIT_SUFFIX"]


class BeirData(NamedTuple):
    queries: QuerySet
    qrels: Qrels
    corpus: Path | None  # corpus.jsonl (or .gz) for iter_corpus / leak checks; None when absent


def read_beir(folder: str | os.PathLike, split: str = DEFAULT_SPLIT) -> BeirData:
    """Queries (all of them), the split's qrels and the corpus path of a BEIR folder.

    ``queries.jsonl`` and ``qrels/<split>.tsv`` must exist; a folder without a
    corpus gives ``corpus=None`` (use :func:`beir_corpus` to require it).
    """
    queries = beir_queries(folder)
    qrels = beir_qrels(folder, split)
    base = Path(folder)
    corpus = next((p for p in (base / "corpus.jsonl", base / "corpus.jsonl.gz") if p.is_file()), None)
    return BeirData(queries, qrels, corpus)
