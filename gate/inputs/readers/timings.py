"""The timings sidecar of a run: per-query latency (and cost), one JSON object a line.

A query line is ``{"query_id": "q1", "latency_ms": 12.5, "cost": 0.00012, "hits": 10}``; ``cost``
is optional but all-or-none within a file (a file where some queries cost nothing and others
have no cost has a hole, not a zero). ``hits`` is optional on every line: how many documents
the run holds for the query. ``"hits": 0`` is the one way a run says "answered, nothing found"
(the TREC format has no line for it): such a query is covered, absent from the run, and scores
0 (:attr:`Timings.answered_empty`). At most one run line ``{"run_wall_time_ms": 8123.0}``
gives the run's wall time (reported, never judged). Blank lines and ``#`` lines are skipped,
as in every text input.

Strict: an unknown key, a duplicate query id, a number that is negative, NaN, infinite, above
:data:`MAX_TIMING_VALUE`, a boolean or a string, a ``hits`` that is not a whole number, an id
the runner was not given, and (:func:`require_answered`) a query the run answers that the
sidecar lacks, and (:func:`require_hits_match`) a ``hits`` the run does not hold are each one
:class:`InputError` naming the file and line. The file is read line by line: memory grows with
the number of queries the runner was given, never with the file; more than
:data:`MAX_SKIPPED_BYTES` of blank and ``#`` lines is refused.
"""

from __future__ import annotations

import math
import os
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from gate.common import limits
from gate.common.errors import InputError
from gate.inputs.readers.fields import check_id, parse_json_line
from gate.inputs.readers.records import Run
from gate.inputs.readers.textlines import is_skipped, iter_all_lines

__all__ = ["Timings", "read_timings", "require_answered", "require_hits_match", "TIMINGS_SUFFIX",
           "timings_path_for"]

#: A sidecar's name beside its run: ``<key>.run`` -> ``<key>.timings.jsonl``.
TIMINGS_SUFFIX = ".timings.jsonl"
_QUERY_KEYS = frozenset({"query_id", "latency_ms", "cost", "hits"})
_RUN_KEY = "run_wall_time_ms"
# A line of the sidecar holds an id (at most 1 KiB) and two numbers.
_MAX_LINE = 4 * limits.KIB
#: Blank and ``#`` lines a sidecar may hold, in bytes: beyond them a file padded with empty lines
#: (valid line by line) would cost the read, the run cache's copy and the archive time and memory
#: that grow with the file, not with the queries.
MAX_SKIPPED_BYTES = limits.MIB
#: The largest latency (ms) or cost a line may give: about 31 years, or 10^12 of any currency. A
#: finite number near 1e308 would overflow the sums behind a mean cost or a bootstrap to inf.
MAX_TIMING_VALUE = 1e12
#: The largest ``hits`` a line may give: far above any run's depth, far below what overflows.
MAX_HITS = 10**9


@dataclass(frozen=True, eq=False)
class Timings:
    """One run's timings, in the sidecar's order. ``cost`` is None when the file gives none;
    ``origin`` says where the gate got them (``run``: the runner wrote them for this run,
    ``cache``: kept beside a cached run, ``archive``: the archived baseline's, ``file``: given).
    ``hits``: the documents the run holds for each query whose line gives ``hits``."""

    source: str
    query_ids: tuple[str, ...]
    latency_ms: np.ndarray  # float64, finite, >= 0
    cost: np.ndarray | None  # float64, finite, >= 0
    run_wall_time_ms: float | None = None
    origin: str = "run"
    hits: Mapping[str, int] = field(default_factory=dict)
    hits_lines: Mapping[str, int] = field(default_factory=dict)  # where each ``hits`` is, for errors

    @property
    def answered_empty(self) -> frozenset[str]:
        """The queries the runner answered with no documents (``"hits": 0``): covered by the run
        though absent from it, each scoring 0 on every measure."""
        return frozenset(qid for qid, count in self.hits.items() if count == 0)

    def index(self) -> dict[str, int]:
        return {qid: i for i, qid in enumerate(self.query_ids)}

    def aligned(self, query_ids: Iterable[str]) -> tuple[np.ndarray, np.ndarray | None]:
        """Latency (and cost) on ``query_ids``, in their order; every id must be present
        (:func:`require_answered` checked it)."""
        index = self.index()
        positions = np.fromiter((index[qid] for qid in query_ids), dtype=np.int64)
        return self.latency_ms[positions], None if self.cost is None else self.cost[positions]


def timings_path_for(run_path: str | os.PathLike) -> str:
    """Where a run's sidecar sits: its name with the run suffixes (``.run``, ``.gz``) replaced."""
    text = os.fspath(run_path)
    folder, name = os.path.split(text)
    for suffix in (".gz", ".run", ".trec", ".txt", ".tsv"):
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
    return os.path.join(folder, name + TIMINGS_SUFFIX)


def _number(src: str, line: int, obj: dict, key: str) -> float:
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(src, line, f"'{key}' must be a number, got {_kind(value)}")
    number = float(value)
    if not math.isfinite(number):
        raise InputError(src, line, f"'{key}' must be finite, got {limits.shorten(repr(value))}")
    if number < 0:
        raise InputError(src, line, f"'{key}' must be 0 or more, got {limits.shorten(repr(value))}")
    if number > MAX_TIMING_VALUE:
        raise InputError(src, line, f"'{key}' must be at most {MAX_TIMING_VALUE:g}, got {limits.shorten(repr(value))}")
    return number


def _hits(src: str, line: int, value: object) -> int:
    """A line's ``hits``: a whole number of documents, 0 or more (1.0 or "3" are not)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(src, line, f"'hits' must be a whole number of documents, got {_kind(value)}")
    if not 0 <= value <= MAX_HITS:
        raise InputError(src, line, f"'hits' must be between 0 and {MAX_HITS}, got {limits.shorten(repr(value))}")
    return value


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"the string {limits.shorten(repr(value))}"
    return "null" if value is None else type(value).__name__


class _Reader:
    """The state of one read: what was seen so far, for the duplicate and all-or-none checks."""

    def __init__(self, src: str, given: Collection[str] | None, kept: Collection[str] | None = None):
        self.src = src
        self.given = given
        self.kept = kept
        self.first_line: dict[str, int] = {}
        self.latency: list[float] = []
        self.cost: list[float] = []
        self.hits: dict[str, int] = {}
        self.hits_lines: dict[str, int] = {}
        self.cost_line: int | None = None  # the first query line that set (or did not set) cost
        self.has_cost: bool | None = None
        self.wall: float | None = None
        self.wall_line: int | None = None

    def line(self, lineno: int, text: str) -> None:
        obj = parse_json_line(self.src, lineno, text)
        if not isinstance(obj, dict):
            raise InputError(self.src, lineno, f"expected a JSON object, got {_kind(obj)}")
        if _RUN_KEY in obj:
            self._run_line(lineno, obj)
        else:
            self._query_line(lineno, obj)

    def _run_line(self, lineno: int, obj: dict) -> None:
        if len(obj) != 1:
            others = sorted(k for k in obj if k != _RUN_KEY)
            raise InputError(self.src, lineno, f"a run line holds '{_RUN_KEY}' only, found also "
                                               f"{', '.join(repr(limits.shorten(k)) for k in others[:3])}")
        if self.wall_line is not None:
            raise InputError(self.src, lineno, f"a second '{_RUN_KEY}' line (first at line {self.wall_line})")
        self.wall, self.wall_line = _number(self.src, lineno, obj, _RUN_KEY), lineno

    def _query_line(self, lineno: int, obj: dict) -> None:
        unknown = sorted(set(obj) - _QUERY_KEYS)
        if unknown:
            raise InputError(self.src, lineno, f"unknown key {limits.shorten(repr(unknown[0]))} (a query line holds "
                                               "query_id, latency_ms and optionally cost and hits; a run line "
                                               f"{_RUN_KEY})")
        for key in ("query_id", "latency_ms"):
            if key not in obj:
                raise InputError(self.src, lineno, f"missing '{key}'")
        qid = obj["query_id"]
        if not isinstance(qid, str):
            raise InputError(self.src, lineno, f"'query_id' must be a string, got {_kind(qid)}")
        check_id(self.src, lineno, qid, "query id")
        first = self.first_line.setdefault(qid, lineno)
        if first != lineno:
            raise InputError(self.src, lineno, f"duplicate query id '{limits.shorten(qid)}' (first at line {first})")
        if self.given is not None and qid not in self.given:
            raise InputError(self.src, lineno, f"query id '{limits.shorten(qid)}' is not one the runner was given")
        if self.kept is not None and qid not in self.kept:
            self._left_out(lineno, obj, qid)
            return
        self.latency.append(_number(self.src, lineno, obj, "latency_ms"))
        self._cost(lineno, obj)
        if "hits" in obj:
            self.hits[qid], self.hits_lines[qid] = _hits(self.src, lineno, obj["hits"]), lineno

    def _left_out(self, lineno: int, obj: dict, qid: str) -> None:
        """A line of a query the run has no line for and that is not scored: checked, not kept
        (memory stays bounded by the kept ids, not by the file). Its documents, if any, would be
        in the run: ``hits`` above 0 is refused, as :func:`require_hits_match` refuses it."""
        del self.first_line[qid]  # not kept: a second line of it is not this file's problem to date
        _number(self.src, lineno, obj, "latency_ms")
        self._cost(lineno, obj, keep=False)
        hits = _hits(self.src, lineno, obj["hits"]) if "hits" in obj else 0
        if hits:
            raise InputError(self.src, lineno, f"'hits' is {hits} but the run has no line for query "
                                               f"'{limits.shorten(qid)}'")

    def _cost(self, lineno: int, obj: dict, keep: bool = True) -> None:
        has = "cost" in obj
        if self.has_cost is None:
            self.has_cost, self.cost_line = has, lineno
        elif has != self.has_cost:
            said = "gives" if self.has_cost else "gives no"
            raise InputError(self.src, lineno, f"'cost' is all or none within a file: line {self.cost_line} {said} "
                                               f"'cost', this line {'does' if has else 'does not'}")
        if has:
            cost = _number(self.src, lineno, obj, "cost")
            if keep:
                self.cost.append(cost)

    def timings(self, origin: str) -> Timings:
        return Timings(self.src, tuple(self.first_line), np.asarray(self.latency, dtype=np.float64),
                       np.asarray(self.cost, dtype=np.float64) if self.has_cost else None, self.wall, origin,
                       self.hits, self.hits_lines)


def read_timings(path: str | os.PathLike, given: Collection[str] | None = None, *, origin: str = "run",
                 kept: Collection[str] | None = None) -> Timings:
    """Read a timings sidecar strictly (module docstring). ``given``: the query ids the runner
    was given (an id outside them is refused); None when they are not known. ``kept``: where
    they are not, the ids whose lines are kept (the run's and the scored ones); a line of another
    query is checked and left out, and refused if it says the query had documents."""
    src = str(path)
    reader = _Reader(src, None if given is None else frozenset(given), None if kept is None else frozenset(kept))
    skipped = 0
    for lineno, text in iter_all_lines(path, max_line=_MAX_LINE, what="a timings line"):
        if not is_skipped(text):
            reader.line(lineno, text)
            continue
        skipped += len(text) + 1
        if skipped > MAX_SKIPPED_BYTES:
            raise InputError(src, lineno, f"more than {MAX_SKIPPED_BYTES // limits.MIB} MiB of blank or # lines: a "
                                          "sidecar holds one line a query and a run line")
    return reader.timings(origin)


def require_answered(timings: Timings, answered: Iterable[str]) -> None:
    """Every query the run answers has its timing; else one line naming the first missing one."""
    present = timings.index()
    missing = [qid for qid in answered if qid not in present]
    if missing:
        raise InputError(timings.source, None, f"no timing for {len(missing)} quer{'y' if len(missing) == 1 else 'ies'}"
                                               f" the run answers (e.g. '{limits.shorten(missing[0])}')")


def require_hits_match(timings: Timings, run: Run) -> None:
    """Every ``hits`` the sidecar gives is the number of documents the run holds for that query: a
    query said to be answered with nothing must have no line in the run, and a count the run does
    not hold is a sidecar of another run. One line naming the first mismatch."""
    if not timings.hits:
        return
    index = run.index()
    for qid, count in timings.hits.items():
        position = index.get(qid)
        held = 0 if position is None else int(run.starts[position + 1] - run.starts[position])
        if held != count:
            raise InputError(timings.source, timings.hits_lines.get(qid), f"'hits' is {count} but the run "
                                                   f"({run.source}) holds {held} for query '{limits.shorten(qid)}'")
