"""Runs whose scores do not order their documents: the measures score an order nobody chose.

trec_eval, and this gate (:mod:`gate.evaluation.measures.ordering`), rank a query's documents
by score, highest first, and break equal scores by docno (descending); the rank column is
ignored. That is the rule, and it stays. Two kinds of run are then scored, silently, on another
order than their authors meant:

* constant scores: every document of a query has the same score (every score 0, say): the
  query is ranked by docno alone (DL 2019's p_bert with every score set to 0 reads nDCG@10
  0.0551 instead of 0.7380);
* the rank as the score (1, 2, 3 ...): highest first puts the list's last document first.

Minus the rank (-1, -2, -3 ...: the ``tirex_*`` runs) orders the documents as meant: it is
counted, never warned about. "The rank" is a row's place in its query's list as the file gives
it (the reader keeps file order; a run file lists a query's rows by rank).

The check reads the run itself, after the evaluation and apart from it: :func:`score_order`
on a loaded :class:`Run` (``run``), :func:`score_order_of_file` on a run file read again a
few whole queries at a time (``compare``, whose evaluation keeps only per-query numbers).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gate.common.numbers import counted, listed
from gate.evaluation.measures.ordering import compared_scores
from gate.inputs.readers.records import Run
from gate.inputs.readers.run_chunks import RunNotGrouped, iter_run_chunks
from gate.inputs.readers.runs import read_run

__all__ = ["ScoreOrder", "score_order", "score_order_of_file", "EXAMPLES"]

#: Query ids kept per finding (report.json and the warning name a few; the counts cover all).
EXAMPLES = 5


@dataclass(frozen=True)
class ScoreOrder:
    """What one run's scores say about its order, over the judged queries it ranks."""

    side: str  # "baseline" or "candidate"
    run: str  # the run's file name (never its absolute path)
    queries: int  # judged queries the run ranks
    constant: int  # of them, with more than one document, every document scored alike
    constant_examples: tuple[str, ...]
    rank_as_score: int  # scores 1, 2, 3 ... down the list: read in reverse
    rank_examples: tuple[str, ...]
    minus_rank: int  # scores -1, -2, -3 ... down the list: ordered as meant (counted only)

    @property
    def warning(self) -> str | None:
        """The warning the terminal, report.json and the comment give, or None."""
        said = []
        if self.constant:
            said.append(
                f"gives every document the same score in {self.constant} of "
                f"{counted(self.queries, 'judged query', 'judged queries')} "
                f"({_examples(self.constant_examples, self.constant)}): "
                "tied documents are ranked by docno (trec_eval's rule; the rank column is ignored), so "
                "those queries are scored on an order nobody chose")
        if self.rank_as_score:
            said.append(
                f"scores each document with its rank (1, 2, 3 ...) in {self.rank_as_score} of "
                f"{counted(self.queries, 'judged query', 'judged queries')} "
                f"({_examples(self.rank_examples, self.rank_as_score)}): "
                "ranked by score, highest first, each list is read in reverse")
        if not said:
            return None
        return (f"the {self.side} run {self.run} " + "; it ".join(said)
                + ": write scores that order the documents, highest first (minus the rank will do)")

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "queries": self.queries,
            "constant": self.constant,
            "constant_examples": list(self.constant_examples),
            "rank_as_score": self.rank_as_score,
            "rank_examples": list(self.rank_examples),
            "minus_rank": self.minus_rank,
            "warning": self.warning,
        }


def _examples(ids: Sequence[str], total: int) -> str:
    return ("e.g. " if total > len(ids) else "") + listed(list(ids), EXAMPLES)


@dataclass
class _Tally:
    queries: int = 0
    constant: int = 0
    rank: int = 0
    minus: int = 0

    def __post_init__(self) -> None:
        self.constant_ids: list[str] = []
        self.rank_ids: list[str] = []

    def add(self, run: Run, wanted: set[str] | None) -> None:
        starts = np.asarray(run.starts, dtype=np.int64)
        if len(run.query_ids) == 0:
            return
        lens = np.diff(starts)
        nonempty = lens > 0
        idx = starts[:-1][nonempty]
        ids = [q for q, keep in zip(run.query_ids, nonempty.tolist()) if keep]
        lens = lens[nonempty]
        if idx.size == 0:
            return
        scores = np.asarray(run.scores, dtype=np.float64)
        compared = compared_scores(scores)  # equal as trec_eval compares them (C float)
        constant = np.minimum.reduceat(compared, idx) == np.maximum.reduceat(compared, idx)
        rank, minus = _ranks(scores, idx, lens)
        several = lens > 1
        for j, qid in enumerate(ids):
            if wanted is not None and qid not in wanted:
                continue
            self.queries += 1
            if not several[j]:
                continue
            if constant[j]:
                self.constant += 1
                self.constant_ids.append(qid)
            elif rank[j]:
                self.rank += 1
                self.rank_ids.append(qid)
            elif minus[j]:
                self.minus += 1

    def finish(self, side: str, source: str) -> ScoreOrder:
        def first(ids: list[str]) -> tuple[str, ...]:  # the same whatever pieces the run was read in
            return tuple(sorted(ids, key=lambda q: q.encode("utf-8"))[:EXAMPLES])

        return ScoreOrder(side, Path(str(source)).name or str(source), self.queries, self.constant,
                          first(self.constant_ids), self.rank, first(self.rank_ids), self.minus)


def _ranks(scores: np.ndarray, idx: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per query (rows ``idx[j]`` on, ``lens[j]`` of them): whether its scores are its ranks
    (the integers 1..n, or 0..n-1, each once, rising down the list: read in reverse), and whether
    they are minus its ranks (ordered as meant). "Each once" is checked by the sum and the sum of
    squares; "rising" by the list's first score against its last (a file may list two rows of
    one query out of rank order, as DL 2019's p_bert does)."""
    n = lens.astype(np.float64)
    integral = np.logical_and.reduceat(scores == np.floor(scores), idx)
    low = np.minimum.reduceat(scores, idx)
    high = np.maximum.reduceat(scores, idx)
    total = np.add.reduceat(scores, idx)
    squares = np.add.reduceat(scores * scores, idx)
    first = scores[idx]
    last = scores[idx + lens - 1]

    def ranks(low: np.ndarray, high: np.ndarray, total: np.ndarray) -> np.ndarray:
        """The integers low..high, each once: 1..n or 0..n-1 (sum and sum of squares agree)."""
        want_total = n * low + n * (n - 1) / 2
        want_squares = n * low * low + low * n * (n - 1) + (n - 1) * n * (2 * n - 1) / 6
        return integral & ((low == 0) | (low == 1)) & (high == low + n - 1) & (total == want_total) \
            & (squares == want_squares)

    rising = ranks(low, high, total) & (first < last)
    falling = ranks(-high, -low, -total)
    return rising, falling


def score_order(run: Run, query_ids: Iterable[str] | None, side: str) -> ScoreOrder:
    """The check on a loaded run, over ``query_ids`` (the judged golden queries; None: all)."""
    tally = _Tally()
    tally.add(run, None if query_ids is None else set(query_ids))
    return tally.finish(side, run.source)


def score_order_of_file(path: str, query_ids: Iterable[str] | None, side: str, loaded: Run | None = None) -> ScoreOrder:
    """The check on a run file, read again a few whole queries at a time (or ``loaded``, the run
    when it is already in memory); a file whose queries are not grouped is read whole."""
    wanted = None if query_ids is None else set(query_ids)
    if loaded is not None:
        return score_order(loaded, wanted, side)
    tally = _Tally()
    try:
        for piece, _ in iter_run_chunks(path):
            tally.add(piece, wanted)
    except RunNotGrouped:
        tally = _Tally()
        tally.add(read_run(path), wanted)
    return tally.finish(side, path)
