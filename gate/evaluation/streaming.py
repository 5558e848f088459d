"""A run file evaluated a few whole queries at a time: what ``compare`` keeps of a run.

:func:`digest_run` reads a run in pieces of whole queries
(:func:`gate.inputs.readers.run_chunks.iter_run_chunks`), evaluates each piece as
:func:`gate.evaluation.evaluate.evaluate` evaluates a whole run, and keeps per query only what
the statistics and the report use: every measure's value, the ties at each cutoff, where the
first relevant document sits (the movement buckets) and a fingerprint of the ranking (to tell
identical rankings apart). The result, a :class:`RunDigest`, holds a few numbers per query;
memory is one piece (about 60,000 rows), not two runs of ten million.

A query is evaluated on its own rows only, so a piece gives exactly the numbers the whole run
gives (:func:`gate.evaluation.evaluate.evaluate` is per query; the tests compare both on every
measure). A file whose queries are not grouped is read whole instead, with the same result.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from gate.common.errors import InputError
from gate.evaluation import digest_child
from gate.evaluation.evaluate import PerQuery, evaluate, evaluate_ordered
from gate.evaluation.first_relevant import Look, Looked, look_all, looks_from_labels, relevant_sets
from gate.evaluation.measures import Measure
from gate.evaluation.measures.ordering import trec_order
from gate.inputs.fingerprint import file_sha256
from gate.inputs.readers.records import Qrels, Run
from gate.inputs.readers.run_chunks import CHUNK_BYTES, PIECE_BLOCK_SIZE, RunNotGrouped, iter_run_chunks
from gate.inputs.readers.runs import read_run

__all__ = ["RunDigest", "digest_loaded_run", "digest_run", "digest_runs", "piece_bytes", "start_side_digest",
           "ranking_fingerprints"]

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_LANE = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xD6E8FEB86659FD93))


@dataclass(frozen=True, eq=False)
class RunDigest:
    """What a comparison needs of one run, kept per query (a few numbers each).

    Stands in for the :class:`Run` where only these are read: ``source``, ``tag``,
    ``query_ids`` (every query of the run, UTF-8 byte order) and ``len()`` (rows) for the
    checks and the report's inputs; ``per_query`` for the statistics; ``looked`` for the
    movement buckets; :meth:`same_rankings_as` reads the file again (rarely needed).
    """

    source: str
    tag: str | None
    query_ids: tuple[str, ...]
    rows: int
    per_query: PerQuery
    looked: Looked
    loaded: Run | None = None  # the run itself, when it was read whole
    sha256: str | None = None  # of the file's bytes, for the report's inputs (digest_run(..., sha256=True))
    chunk_bytes: int = CHUNK_BYTES  # the pieces it was read in

    def __len__(self) -> int:
        return self.rows

    def rankings(self, query_ids: Sequence[str]) -> dict[str, tuple[int, int, int]]:
        """:func:`ranking_fingerprints` of ``query_ids`` (those in the run), from the file again
        (or the run, when it was read whole)."""
        wanted = set(query_ids)

        def fingerprints(pieces) -> dict[str, tuple[int, int, int]]:
            out: dict[str, tuple[int, int, int]] = {}
            for piece in pieces:
                out.update((q, f) for q, f in ranking_fingerprints(piece).items() if q in wanted)
            return out

        if self.loaded is None:
            try:
                return fingerprints(p for p, _ in iter_run_chunks(self.source, self.chunk_bytes))
            except RunNotGrouped:  # the file changed since: read it whole, as the first read would have
                pass
        return fingerprints([self.loaded if self.loaded is not None else read_run(self.source)])

    def same_rankings_as(self, other: RunDigest, query_ids: Sequence[str]) -> bool:
        """:func:`gate.inputs.readers.records.same_rankings` on fingerprints: the same documents
        in the same order (score as stored, descending; docno descending) for every query.

        Only asked when every per-query value is equal (identical rankings score identically),
        so both files are read a second time only then."""
        mine, theirs = self.rankings(query_ids), other.rankings(query_ids)
        return all(mine.get(q) == theirs.get(q) for q in query_ids)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: every input bit reaches every output bit."""
    x = x ^ (x >> np.uint64(30))
    x *= _M1
    x ^= x >> np.uint64(27)
    x *= _M2
    return x ^ (x >> np.uint64(31))


def _docno_hashes(doc_ids: np.ndarray, lane: np.uint64) -> np.ndarray:
    """A 64-bit hash of every docno (its code points; the padding of a 'U' array is not hashed)."""
    n = len(doc_ids)
    if doc_ids.dtype.kind == "U":
        width = doc_ids.dtype.itemsize // 4
        points = np.ascontiguousarray(np.ascontiguousarray(doc_ids).view(np.uint32).reshape(n, width).T)
        h = np.full(n, lane, dtype=np.uint64)
        for column in points:  # NUL never occurs in a docno: zero is padding
            mixed = _mix(h ^ column.astype(np.uint64)) + lane
            h = np.where(column != 0, mixed, h)
        return h
    # Python strings (a piece with a few very long docnos): the same hash, one by one.
    lane_int, out = int(lane), np.empty(n, dtype=np.uint64)
    for i, doc in enumerate(doc_ids.tolist()):
        hashed = lane_int
        for point in map(ord, str(doc)):
            hashed = (_mix_int(hashed ^ point) + lane_int) & _MASK
        out[i] = hashed
    return out


_MASK = (1 << 64) - 1


def _mix_int(x: int) -> int:
    """:func:`_mix` on one Python integer."""
    x ^= x >> 30
    x = (x * int(_M1)) & _MASK
    x ^= x >> 27
    x = (x * int(_M2)) & _MASK
    return x ^ (x >> 31)


def ranking_fingerprints(run: Run) -> dict[str, tuple[int, int, int]]:
    """Per query of ``run``: (rows, two 64-bit sums) identifying its docnos in
    :func:`gate.inputs.readers.records.same_rankings` order (score as stored descending, docno
    descending). Each row's docno hash is mixed with its position, so another order or another
    document gives another fingerprint (two independent 64-bit lanes)."""
    if not len(run.query_ids):
        return {}
    starts = np.asarray(run.starts, dtype=np.int64)
    perm = trec_order(starts, run.scores, run.doc_ids, precision=np.float64)
    ordered = run.doc_ids[perm]
    lens = np.diff(starts)
    position = (np.arange(len(perm), dtype=np.int64) - np.repeat(starts[:-1], lens)).astype(np.uint64)
    nonempty = lens > 0
    sums = []
    for lane in _LANE:
        terms = _mix(_docno_hashes(ordered, lane) ^ _mix(position + lane))
        total = np.zeros(len(lens), dtype=np.uint64)
        if nonempty.any():
            total[nonempty] = np.add.reduceat(terms, starts[:-1][nonempty])
        sums.append(total.tolist())
    return {q: (int(n), a, b) for q, n, a, b in zip(run.query_ids, lens.tolist(), sums[0], sums[1])}


class _Digester:
    """Accumulates the pieces of one run on the universe ``query_ids``."""

    def __init__(self, qrels: Qrels, measures: Sequence[Measure | str], query_ids: Sequence[str], rel: int,
                 k_rank: int, k_recall: int):
        self.qrels, self.measures, self.rel = qrels, measures, rel
        self.k_rank, self.k_recall = k_rank, k_recall
        self.universe = tuple(query_ids)
        self.position = {q: i for i, q in enumerate(self.universe)}
        self.values: dict[str, np.ndarray] = {}
        self.ties: dict[str, np.ndarray] = {}
        self.no_relevant: set[str] = set()
        self.seen: list[str] = []  # every run query, file order
        self.rows = 0
        self.answers: dict[str, Look] = {}

    def add(self, piece: Run) -> None:
        self.rows += len(piece)
        self.seen.extend(piece.query_ids)
        wanted = [q for q in piece.query_ids if q in self.position]
        if not wanted:
            return
        per_query, ordered = evaluate_ordered(piece, self.qrels, self.measures, wanted, rel=self.rel)
        self._store(per_query)
        relevant = relevant_sets(self.qrels.judgments, wanted, self.rel)
        if ordered.full_depth:  # a measure without a cutoff (AP): every row's label is at hand
            self.answers.update(looks_from_labels(piece, ordered, relevant, self.rel, self.k_rank, self.k_recall))
        else:
            self.answers.update(look_all(piece, relevant, self.k_rank, self.k_recall))

    def _store(self, part: PerQuery) -> None:
        where = np.fromiter((self.position[q] for q in part.query_ids), dtype=np.int64, count=len(part.query_ids))
        for name, values in part.values.items():
            if name not in self.values:
                self.values[name] = np.zeros(len(self.universe), dtype=values.dtype)
            self.values[name][where] = values
        for name, flags in part.ties.items():
            if name not in self.ties:
                self.ties[name] = np.zeros(len(self.universe), dtype=bool)
            self.ties[name][where] = flags
        self.no_relevant.update(part.no_relevant)

    def finish(self, source: str, tag: str | None, loaded: Run | None = None) -> RunDigest:
        in_run = set(self.seen)
        missing = tuple(q for q in self.universe if q not in in_run)
        if missing or not self.values:
            # Queries the run lacks score as evaluate scores them (trec_eval -c): on no rows.
            empty = Run(source=source, query_ids=(), starts=np.zeros(1, dtype=np.int64),
                        doc_ids=np.array([], dtype="U1"), scores=np.array([], dtype=np.float64))
            self._store(evaluate(empty, self.qrels, self.measures, missing, rel=self.rel))
        run_queries = tuple(sorted(in_run, key=lambda q: q.encode("utf-8")))
        per_query = PerQuery(
            query_ids=self.universe,
            values=self.values,
            missing=missing,
            extra=tuple(q for q in run_queries if q not in self.position),
            no_relevant=tuple(q for q in self.universe if q in self.no_relevant),
            ties=self.ties,
            rel=self.rel,
        )
        looked = Looked(self.rel, self.k_rank, self.k_recall, self.answers, frozenset(in_run))
        return RunDigest(source, tag, run_queries, self.rows, per_query, looked, loaded)


def piece_bytes(file_bytes: int) -> int:
    """The text of a piece for a run file of ``file_bytes``: a 64th of it, at least
    :data:`~gate.inputs.readers.run_chunks.CHUNK_BYTES` (fewer, larger pieces cost less Python per
    row; the memory they hold stays a fraction of the run's size: 1k x 1k queries peak at trec_eval's
    memory for one run, 10k x 1k at a third of it)."""
    return max(CHUNK_BYTES, file_bytes // 64)


def piece_block_bytes(file_bytes: int) -> int:
    """The reader's block for a run file of ``file_bytes``: a 256th of it, at least
    :data:`~gate.inputs.readers.run_chunks.PIECE_BLOCK_SIZE` and at most 1 MiB (the Python work
    per block is fixed: large runs read in larger blocks; small ones keep their peak low)."""
    return min(max(PIECE_BLOCK_SIZE, file_bytes // 256), 1 << 20)


def digest_loaded_run(run: Run, qrels: Qrels, measures: Sequence[Measure | str], query_ids: Sequence[str], *,
                      rel: int = 1, k_rank: int = 10, k_recall: int = 100) -> RunDigest:
    """:func:`digest_run` of a run already in memory (one piece)."""
    digester = _Digester(qrels, measures, query_ids, rel, k_rank, k_recall)
    digester.add(run)
    return digester.finish(run.source, run.tag, loaded=run)


def digest_run(path: str | os.PathLike, qrels: Qrels, measures: Sequence[Measure | str],
               query_ids: Sequence[str], *, rel: int = 1, k_rank: int = 10, k_recall: int = 100,
               chunk_bytes: int | None = None, block_size: int | None = None,
               sha256: bool = False) -> RunDigest:
    """Evaluate the run file at ``path`` on ``query_ids`` (the universe, byte order) piece by piece.

    ``measures`` and ``rel`` as for :func:`evaluate`; ``rel``, ``k_rank`` and ``k_recall`` also
    fix the movement lookups. Bad input raises the :class:`InputError` :func:`read_run` raises.
    ``chunk_bytes``: the text of a piece (default :func:`piece_bytes`); ``block_size``: the
    reader's block within it (default :func:`piece_block_bytes`). ``sha256``:
    also hash the file's bytes (:attr:`RunDigest.sha256`).
    """
    digester = _Digester(qrels, measures, query_ids, rel, k_rank, k_recall)
    tag = None
    if chunk_bytes is None:
        chunk_bytes = piece_bytes(_size(path))
    if block_size is None:
        block_size = piece_block_bytes(_size(path))
    try:
        for piece, piece_tag in iter_run_chunks(path, chunk_bytes, block_size):
            tag = piece_tag
            digester.add(piece)
    except (RunNotGrouped, InputError):
        # Not grouped: only a whole read groups it. Bad input: the whole read names the problem
        # read_run names (of several, which comes first depends on the blocks read).
        digest = digest_loaded_run(read_run(path), qrels, measures, query_ids, rel=rel, k_rank=k_rank,
                                   k_recall=k_recall)
    else:
        digest = replace(digester.finish(str(path), tag), chunk_bytes=chunk_bytes)
    if sha256:
        digest = replace(digest, sha256=file_sha256(Path(path)))
    return digest


#: Runs smaller than this together are evaluated one after the other (see :func:`digest_runs`).
SIDE_BY_SIDE_BYTES = 64 << 20


def _size(path: str | os.PathLike) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0  # digest_run names the problem


def start_side_digest(paths: Sequence[str | os.PathLike], qrels_spec: str, queries_spec: str | None,
                      measures: Sequence[Measure | str], *, rel: int = 1, k_rank: int = 10, k_recall: int = 100,
                      sha256: bool = False):
    """Start digesting ``paths[1]`` in a child process now, before this process has loaded the
    qrels, when the two runs together are :data:`SIDE_BY_SIDE_BYTES` or more (None otherwise).

    The child loads ``qrels_spec`` and ``queries_spec`` itself and evaluates the universe
    :func:`gate.inputs.universe.query_universe` makes of them, the one this process then makes
    of the same files (:func:`digest_runs` checks it did). Hand the handle to :func:`digest_runs`;
    if this process fails before that, ``stop()`` it."""
    if len(paths) != 2 or sum(_size(path) for path in paths) < SIDE_BY_SIDE_BYTES:
        return None
    return digest_child.start(paths[1], qrels_spec, [str(m) for m in measures], None, queries_spec=queries_spec,
                              rel=rel, k_rank=k_rank, k_recall=k_recall, sha256=sha256)


def digest_runs(paths: Sequence[str | os.PathLike], qrels: Qrels, measures: Sequence[Measure | str],
                query_ids: Sequence[str], *, qrels_spec: str | None = None, rel: int = 1, k_rank: int = 10,
                k_recall: int = 100, sha256: bool = False, side=None,
                meanwhile: Callable[[], object] | None = None) -> list[RunDigest]:
    """:func:`digest_run` of each of ``paths``, as reading them in turn gives them.

    Two runs of :data:`SIDE_BY_SIDE_BYTES` or more together, with the ``qrels_spec`` that
    loaded ``qrels``, are read side by side: the second in a child process on the other core
    (:mod:`gate.evaluation.digest_child`; the work holds the GIL, so threads would not run it
    in parallel), about half the time. ``side``: that child, started earlier by
    :func:`start_side_digest` (it then loads the qrels while this process does). Errors are
    those of reading in turn: the first path's stops the second; the second's is raised once
    the first is read without one. Smaller runs are read in turn here (a second process costs
    ~50 MiB and 0.3 s to start). ``meanwhile`` is called once this process has read its run,
    while the child may still be reading the other (work that needs neither digest)."""
    options: dict[str, Any] = dict(rel=rel, k_rank=k_rank, k_recall=k_recall, sha256=sha256)
    child = side
    if child is None:
        if len(paths) != 2 or qrels_spec is None or sum(_size(path) for path in paths) < SIDE_BY_SIDE_BYTES:
            digests = [digest_run(path, qrels, measures, query_ids, **options) for path in paths]
            if meanwhile is not None:
                meanwhile()
            return digests
        child = digest_child.start(paths[1], qrels_spec, [str(m) for m in measures], query_ids, **options)
    try:
        first = digest_run(paths[0], qrels, measures, query_ids, **options)
        if meanwhile is not None:
            meanwhile()
    except BaseException:
        child.stop()
        raise
    second = child.result()
    if second.per_query.query_ids != tuple(query_ids):
        # The same files gave two universes: one of them changed while it was read.
        raise InputError(str(qrels_spec or qrels.source), None,
                         f"the qrels or the queries changed while the gate read them (one read gave "
                         f"{len(query_ids):,} queries to evaluate, the other {len(second.per_query.query_ids):,})")
    return [first, second]
