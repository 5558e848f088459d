"""What a search service's answer must be for the HTTP runner to make a run of it: JSON, a list
of hits at ``runner.http.hits``, each with an id and a finite score, no id twice, and (when
``runner.http.latency`` is set) a latency in ms. Anything else is a :class:`Refused` naming the
place, which fails the run: a run silently built from half an answer would be judged as if whole.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gate.common import limits
from gate.common.errors import InputError
from gate.inputs.http_templates import MISSING, lookup
from gate.inputs.readers.fields import check_id
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


def parse_json(body: bytes) -> Any:
    """The answer's JSON; Refused when it is not JSON (an HTML error page, a truncated body)."""
    try:
        return json.loads(body)
    except RecursionError:
        raise Refused("the answer is JSON nested too deeply") from None
    except ValueError:
        start = body[:60].decode("utf-8", errors="replace")
        shown = " ".join(start.split())
        raise Refused(f"the answer is not JSON (it starts {limits.shorten(repr(shown), 70)})") from None


def read_answer(body: bytes, paths: AnswerPaths, depth: int) -> Answer:
    """The hits (the first ``depth``) and latency of one answer (module docstring)."""
    document = parse_json(body)
    hits = lookup(document, paths.hits)
    if hits is MISSING:
        raise Refused(f"the answer has no {_dotted(paths.hits)}")
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
    if not doc_id or any(c.isspace() for c in doc_id):
        raise Refused(f"hit {position}'s {_dotted(path)} {limits.shorten(repr(doc_id), 60)} is empty or holds "
                      "whitespace: a TREC run cannot hold it")
    try:
        check_id("answer", None, doc_id, "document id")
    except InputError as error:
        raise Refused(f"hit {position}'s {_dotted(path)}: {error.message}") from None
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
