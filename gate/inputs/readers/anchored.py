"""Anchored judgments reader: judgments that name a document, a span of one, or a chunk.

A JSON Lines file (``.jsonl`` / ``.jsonl.gz``), one judgment a line::

    {"query_id": "q1", "doc_id": "guides/setup", "grade": 2}                          # the document
    {"query_id": "q1", "doc_id": "guides/setup", "start": 120, "end": 380, "grade": 3}  # a span of it
    {"query_id": "q1", "doc_id": "guides/setup", "quote": "the exact passage", "grade": 3}
    {"query_id": "q1", "chunk_id": "guides/setup#2", "grade": 1}                      # one chunk

Spans are character offsets ``[start, end)`` in the document's source, the coordinates of the
corpus's ``start_char_idx`` / ``end_char_idx``. Chunk-id qrels go stale when a corpus is
re-chunked; these are mapped onto each side's chunks by :mod:`gate.inputs.anchoring`.

Strict: an unknown key, a wrong type, a grade that is not an integer, ``start >= end``, a
negative offset, or the same anchor judged twice for one query is one ``file:line`` error.
A file is detected as anchored (:func:`is_anchored_file`) by its name (``.jsonl``,
``.jsonl.gz``) and its first record (an object with ``grade`` and ``doc_id`` or ``chunk_id``).
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from gate.common import limits
from gate.common.errors import InputError
from gate.inputs.readers.fields import check_id, check_text, parse_json_line
from gate.inputs.readers.records import Qrels
from gate.inputs.readers.textlines import iter_lines, strip_gz

__all__ = ["Judgment", "AnchoredJudgments", "read_anchored", "is_anchored_file", "KINDS"]

#: Judgment kinds, in the order the report lists them.
KINDS = ("document", "span", "quote", "chunk")
_KEYS = {"query_id", "doc_id", "chunk_id", "start", "end", "quote", "grade"}
# A quote is matched against chunk texts: a query's worth of text is plenty for a passage.
_MAX_QUOTE_CHARS = limits.MAX_QUERY_CHARS


@dataclass(frozen=True, slots=True)
class Judgment:
    """One anchored judgment. ``doc_id`` is None only for a chunk judgment (``chunk_id`` set);
    ``start``/``end`` are set for a span, ``quote`` for a quoted passage. ``line`` is where it
    was read (None when built from a plain qrels file read as documents)."""

    query_id: str
    grade: int
    doc_id: str | None = None
    chunk_id: str | None = None
    start: int | None = None
    end: int | None = None
    quote: str | None = None
    line: int | None = None

    @property
    def kind(self) -> str:
        if self.chunk_id is not None:
            return "chunk"
        if self.start is not None:
            return "span"
        return "quote" if self.quote is not None else "document"

    def anchor(self) -> str:
        """The judged thing as one token (report lists, fingerprints): ``doc:<id>``,
        ``span:<id>[start,end)``, ``quote:<id>#<sha256 of the quote, 16 hex>``, ``chunk:<id>``."""
        kind = self.kind
        if kind == "chunk":
            return f"chunk:{self.chunk_id}"
        if kind == "span":
            return f"span:{self.doc_id}[{self.start},{self.end})"
        if kind == "quote":
            digest = hashlib.sha256((self.quote or "").encode("utf-8")).hexdigest()[:16]
            return f"quote:{self.doc_id}#{digest}"
        return f"doc:{self.doc_id}"


@dataclass(frozen=True)
class AnchoredJudgments:
    """The judgments of an anchored file, in file order."""

    source: str
    judgments: tuple[Judgment, ...]

    def counts(self) -> dict[str, int]:
        """Judgments by kind, every kind listed (0 when absent)."""
        found = Counter(j.kind for j in self.judgments)
        return {kind: found.get(kind, 0) for kind in KINDS}

    def as_qrels(self) -> Qrels:
        """The judgments as :class:`Qrels` keyed by :meth:`Judgment.anchor`: the query universe,
        the label range and the fingerprint are those of the file itself, whatever corpus it is
        mapped onto (the corpus is fingerprinted separately)."""
        table: dict[str, dict[str, int]] = {}
        for judgment in self.judgments:
            table.setdefault(judgment.query_id, {})[judgment.anchor()] = judgment.grade
        return Qrels(self.source, table)


def is_anchored_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` is an anchored judgments file: named ``.jsonl`` (or ``.jsonl.gz``) and
    its first record an object with ``grade`` and ``doc_id`` or ``chunk_id``. A file that is
    not there, or whose first line is not such an object, is not (the qrels reader words the
    error)."""
    if not strip_gz(os.fspath(path)).lower().endswith(".jsonl") or not os.path.isfile(path):
        return False
    try:
        for lineno, text in iter_lines(path, max_line=limits.MAX_QUERY_LINE_BYTES, what="a judgment line"):
            first = parse_json_line(str(path), lineno, text)
            return isinstance(first, dict) and "grade" in first and ("doc_id" in first or "chunk_id" in first)
    except InputError:
        return False
    return False


def read_anchored(path: str | os.PathLike) -> AnchoredJudgments:
    """Read an anchored judgments file (``.gz`` transparent), strictly, streamed line by line."""
    src = os.fspath(path)
    judgments: list[Judgment] = []
    first_at: dict[tuple[str, str], int] = {}
    for lineno, judgment in _iter_judgments(src):
        key = (judgment.query_id, judgment.anchor())
        if key in first_at:
            raise InputError(src, lineno, f"{_what(judgment)} is judged twice for query "
                             f"'{limits.shorten(judgment.query_id)}' (first at line {first_at[key]})")
        first_at[key] = lineno
        judgments.append(judgment)
    return AnchoredJudgments(src, tuple(judgments))


def _what(judgment: Judgment) -> str:
    kind = judgment.kind
    if kind == "chunk":
        return f"chunk '{limits.shorten(judgment.chunk_id or '')}'"
    doc = f"'{limits.shorten(judgment.doc_id or '')}'"
    if kind == "span":
        return f"the span [{judgment.start}, {judgment.end}) of document {doc}"
    if kind == "quote":
        return f"the same quote of document {doc}"
    return f"document {doc} (doc-level)"


def _iter_judgments(src: str) -> Iterator[tuple[int, Judgment]]:
    for lineno, text in iter_lines(src, max_line=limits.MAX_QUERY_LINE_BYTES, what="a judgment line"):
        obj = parse_json_line(src, lineno, text)
        if not isinstance(obj, dict):
            raise InputError(src, lineno, f"expected a JSON object (one judgment), got {type(obj).__name__}")
        yield lineno, _judgment(src, lineno, obj)


def _judgment(src: str, lineno: int, obj: dict) -> Judgment:
    unknown = sorted(set(obj) - _KEYS)
    if unknown:
        raise InputError(src, lineno, f"unknown key '{limits.shorten(unknown[0])}' (a judgment has query_id, "
                         "doc_id or chunk_id, start and end or quote, and grade)")
    query_id = _id(src, lineno, obj, "query_id")
    grade = obj.get("grade")
    if "grade" not in obj:
        raise InputError(src, lineno, "missing 'grade'")
    if isinstance(grade, bool) or not isinstance(grade, int):
        raise InputError(src, lineno, f"'grade' must be an integer, got {limits.shorten(repr(grade))} "
                         "(integer grades only)")
    if not -(1 << 63) <= grade < (1 << 63):
        raise InputError(src, lineno, "'grade' is beyond the 64-bit integer range")
    if "chunk_id" in obj:
        if "doc_id" in obj or "start" in obj or "end" in obj or "quote" in obj:
            raise InputError(src, lineno, "a chunk judgment has 'chunk_id' and 'grade' only (no doc_id, span "
                             "or quote: the chunk is the anchor)")
        return Judgment(query_id, grade, chunk_id=_id(src, lineno, obj, "chunk_id"), line=lineno)
    if "doc_id" not in obj:
        raise InputError(src, lineno, "missing 'doc_id' (or 'chunk_id'): what the judgment is about")
    doc_id = _id(src, lineno, obj, "doc_id")
    if "quote" in obj:
        if "start" in obj or "end" in obj:
            raise InputError(src, lineno, "a judgment has a span ('start', 'end') or a 'quote', not both")
        return Judgment(query_id, grade, doc_id=doc_id, quote=_quote(src, lineno, obj["quote"]), line=lineno)
    if "start" in obj or "end" in obj:
        start, end = _span(src, lineno, obj)
        return Judgment(query_id, grade, doc_id=doc_id, start=start, end=end, line=lineno)
    return Judgment(query_id, grade, doc_id=doc_id, line=lineno)


def _id(src: str, lineno: int, obj: dict, key: str) -> str:
    if key not in obj:
        raise InputError(src, lineno, f"missing '{key}'")
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(src, lineno, f"'{key}' must be a string, got {type(value).__name__}")
    return check_id(src, lineno, str(value), key)


def _span(src: str, lineno: int, obj: dict) -> tuple[int, int]:
    if "start" not in obj or "end" not in obj:
        raise InputError(src, lineno, f"a span needs both 'start' and 'end' (found only "
                         f"'{'start' if 'start' in obj else 'end'}')")
    start, end = obj["start"], obj["end"]
    for key, value in (("start", start), ("end", end)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputError(src, lineno, f"'{key}' must be an integer character offset, got "
                             f"{limits.shorten(repr(value))}")
        if value < 0:
            raise InputError(src, lineno, f"'{key}' is {value}: character offsets are not negative")
    if start >= end:
        raise InputError(src, lineno, f"span start {start} is not before its end {end} (offsets are [start, end))")
    return start, end


def _quote(src: str, lineno: int, value: object) -> str:
    if not isinstance(value, str):
        raise InputError(src, lineno, f"'quote' must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InputError(src, lineno, "empty 'quote'")
    return check_text(src, lineno, value, "'quote'", max_chars=_MAX_QUOTE_CHARS)
