"""``retrieval-gate leakcheck``: golden queries found in a corpus (exact, normalized or near
matches), streamed over the corpus."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from gate.checks.leak_stream import iter_normalized
from gate.checks.leakage import MODES, LeakageResult, find_leaks
from gate.common.errors import InputError, UsageError
from gate.inputs.readers.beir import beir_corpus
from gate.inputs.readers.corpus import is_file_tree
from gate.inputs.readers.queries import load_queries

#: A progress line every this many chunks scanned.
PROGRESS_EVERY = 100_000


def leakcheck(queries_path: str, corpus: str, modes: Sequence[str], *, threshold: float, min_tokens: int,
              progress: Callable[[str], None] = lambda message: None) -> LeakageResult:
    """The golden queries of ``queries_path`` that ``corpus`` holds, by each of ``modes``."""
    for mode in modes:
        if mode not in MODES:
            raise UsageError(f"--mode {mode[:40]!r}: not one of {', '.join(MODES)}")
    if not modes:
        raise UsageError(f"--mode: choose one or more of {', '.join(MODES)}")
    queries = load_queries(queries_path)
    if not len(queries):
        raise InputError(queries_path, None, "holds no queries: nothing to look for")
    due = {"next": PROGRESS_EVERY}

    def scanned_so_far(scanned: int) -> None:
        if scanned >= due["next"]:
            progress(f"leakcheck: {scanned:,} chunks scanned")
            due["next"] += PROGRESS_EVERY

    scanned = {"chunks": 0}

    def counted() -> Iterator[Any]:
        # A large corpus is read and normalized by a child process while this one scans.
        for chunk in iter_normalized(corpus):
            scanned["chunks"] += 1
            yield chunk

    result = find_leaks(queries.queries, counted(), modes=list(modes), threshold=threshold, min_tokens=min_tokens,
                        progress=scanned_so_far)
    if not scanned["chunks"]:
        shown = corpus
        if os.path.isdir(corpus) and not is_file_tree(corpus):
            shown = str(beir_corpus(corpus))
        raise InputError(shown, None, "holds no chunks: nothing to scan")
    return result
