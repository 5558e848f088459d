"""What a search service's answer must be for the HTTP runner to make a run of it: JSON with no
key twice in an object, a list of hits at ``runner.http.hits`` (or, with ``missing_hits: empty``,
that path's last key absent under an object that is there: no hits), each with an id and a finite
score, no id twice, and (when ``runner.http.latency`` is set) a latency in ms. Anything else is a
:class:`Refused` naming the place, which fails the run: a run silently built from half an answer
would be judged as if whole.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gate.common import limits
from gate.inputs.http_templates import MISSING, lookup
from gate.inputs.readers.runs import field_problem
from gate.inputs.readers.timings import MAX_TIMING_VALUE

__all__ = ["Refused", "Answer", "read_answer", "AnswerPaths"]


class Refused(Exception):
    """An answer the run cannot be made of (not retried: the service would answer it again)."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


@dataclass(frozen=True)
class AnswerPaths:
    hits: tuple[str, ...]
    id: tuple[str, ...]
    score: tuple[str, ...]
    latency: tuple[str, ...] | None
    # runner.http.missing_hits: empty. The hits path's last key absent, its parent an object: no hits.
    absent_hits_are_empty: bool = False


@dataclass(frozen=True)
class Answer:
    hits: tuple[tuple[str, float], ...]  # (doc id, score) in the answer's order, at most depth
    latency_ms: float | None  # the service's own, when runner.http.latency names it


def _dotted(parts: Sequence[str]) -> str:
    return limits.shorten(".".join(parts), 60)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"the text {limits.shorten(repr(value), 40)}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if value is None:
        return "null"
    return "a list" if isinstance(value, list) else "an object"


#: The longest integer an answer may hold: Python's own default limit on converting one (an id of
#: this many digits is beyond a TREC id's 1 KiB, a score beyond a float's range anyway).
MAX_INTEGER_DIGITS = 4300


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """One JSON object; Refused when a key appears twice (json would keep the last one silently,
    and which one the service meant is anyone's guess)."""
    found = dict(pairs)
    if len(found) == len(pairs):
        return found
    keys: set[str] = set()
    for key, _ in pairs:
        if key in keys:
            raise Refused(f"the answer holds the key {limits.shorten(repr(key), 60)} twice in one object: "
                          "which value is meant is ambiguous")
        keys.add(key)
    raise AssertionError("dict() dropped a key that appears once")


def _integer(text: str) -> int:
    digits = len(text) - (text[:1] == "-")
    if digits > MAX_INTEGER_DIGITS:
        raise Refused(f"the answer holds an integer of {digits:,} digits, too long for an id or a score "
                      f"(at most {MAX_INTEGER_DIGITS:,})")
    return int(text)


def parse_json(body: bytes) -> Any:
    """The answer's JSON; Refused when it is not JSON (an HTML error page, a truncated body), when
    an object holds a key twice, or an integer is too long to read."""
    try:
        return json.loads(body, object_pairs_hook=_object, parse_int=_integer)
    except RecursionError:
        raise Refused("the answer is JSON nested too deeply") from None
    except ValueError:
        raise Refused(f"the answer is not JSON ({_start_of(body)})") from None


def _start_of(body: bytes) -> str:
    """``it starts '...'``: the first characters of an answer, blanks collapsed, for a refusal."""
    shown = " ".join(body[:120].decode("utf-8", errors="replace").split())
    return f"it starts {shown[:60]!r}" + ("..." if len(shown) > 60 else "")


def read_answer(body: bytes, paths: AnswerPaths, depth: int) -> Answer:
    """The hits (the first ``depth``) and latency of one answer (module docstring)."""
    document = parse_json(body)
    hits = lookup(document, paths.hits)
    if hits is MISSING:
        parent_is_there = isinstance(lookup(document, paths.hits[:-1]), dict)
        if parent_is_there and paths.absent_hits_are_empty:
            hits = []  # Vespa's root without children: the query matched nothing
        else:
            hint = "; runner.http.missing_hits: empty reads that as no hits" if parent_is_there else ""
            raise Refused(f"the answer has no {_dotted(paths.hits)} ({_start_of(body)}{hint})")
    if not isinstance(hits, list):
        raise Refused(f"{_dotted(paths.hits)} is {_kind(hits)}, not a list of hits")
    rows: list[tuple[str, float]] = []
    first: dict[str, int] = {}
    for position, hit in enumerate(hits[:depth], start=1):
        doc_id = _hit_id(hit, paths.id, position)
        if doc_id in first:
            raise Refused(f"hit {position} has the {_dotted(paths.id)} {limits.shorten(repr(doc_id), 60)} of hit "
                          f"{first[doc_id]}: an id is ranked once")
        first[doc_id] = position
        rows.append((doc_id, _hit_score(hit, paths.score, position)))
    latency = None if paths.latency is None else _latency(document, paths.latency)
    return Answer(tuple(rows), latency)


def _hit_id(hit: Any, path: tuple[str, ...], position: int) -> str:
    value = lookup(hit, path)
    if value is MISSING:
        raise Refused(f"hit {position} has no {_dotted(path)}")
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise Refused(f"hit {position}'s {_dotted(path)} is {_kind(value)}, not a text or an integer")
    doc_id = str(value)
    problem = field_problem(doc_id)  # the run reader's own rule: the run written is read back whole
    if problem is not None:
        raise Refused(f"hit {position}'s {_dotted(path)} {limits.shorten(repr(doc_id), 60)} cannot be a TREC run's "
                      f"docno: {problem}")
    return doc_id


def _hit_score(hit: Any, path: tuple[str, ...], position: int) -> float:
    return _number_at(hit, path, f"hit {position} has no {_dotted(path)}", f"hit {position}'s {_dotted(path)}")


def _latency(document: Any, path: tuple[str, ...]) -> float:
    named = f"{_dotted(path)} (runner.http.latency)"
    latency = _number_at(document, path, f"the answer has no {named}", named)
    if not 0 <= latency <= MAX_TIMING_VALUE:
        raise Refused(f"{named} is {latency:g}: expected ms from 0 to {MAX_TIMING_VALUE:g}")
    return latency


def _number_at(node: Any, path: tuple[str, ...], missing: str, named: str) -> float:
    """The finite number at ``path``; else Refused, saying ``missing`` or what ``named`` is."""
    value = lookup(node, path)
    if value is MISSING:
        raise Refused(missing)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Refused(f"{named} is {_kind(value)}, not a number")
    try:
        number = float(value)
    except OverflowError:  # an integer of 400 digits
        raise Refused(f"{named} is beyond a float's range") from None
    if not math.isfinite(number):
        raise Refused(f"{named} is {value!r}, not a finite number")
    return number
