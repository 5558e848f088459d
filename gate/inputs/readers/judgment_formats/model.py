"""What every judgment-format reader returns, and the pieces they share.

A reader yields :class:`Rating` rows keyed either by a query id (``_rank_eval``) or by a
query text (Quepid, OpenSearch Search Relevance, RRE); :mod:`.text_keys` turns text keys into
query ids. Each row carries where it was read (``line 4``, ``requests[0].ratings[2]``) so a
later problem (a duplicate) names both places.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gate.common import limits
from gate.common.errors import InputError
from gate.inputs.readers.fields import check_id, parse_json_document
from gate.inputs.readers.textlines import read_text_file

#: A judgment file in JSON or CSV is read whole: it holds thousands of ratings, not millions.
MAX_JUDGMENT_FILE_BYTES = 64 * limits.MIB


@dataclass(frozen=True)
class Rating:
    """One rated (query, document) pair as a file states it."""

    query: str  # a query id, or a query text when the format is keyed by text
    doc_id: str
    rating: int
    where: str  # a JSON path ('requests[0].ratings[2]'), or '' in a file of lines
    line: int | None = None  # the line, in a file of lines


def rating_error(path: str, rating: Rating, problem: str) -> InputError:
    """An error about one rating, at its line or its JSON path."""
    return InputError(path, rating.line, f"{rating.where}: {problem}" if rating.where else problem)


def place(rating: Rating) -> str:
    """Where ``rating`` was read, for a message about another one."""
    return f"line {rating.line}" if rating.line is not None else rating.where


@dataclass(frozen=True)
class JudgmentFile:
    """A judgment file read: its format, whether queries are keyed by text, and its ratings
    in file order. ``queries`` lists every query key in order of first appearance, those with
    no rating too (a Quepid row with an empty rating lists a query nobody rated yet)."""

    source: str
    format: str
    keyed_by_text: bool
    ratings: tuple[Rating, ...]
    queries: tuple[str, ...]


def read_whole(path: str, what: str) -> str:
    """The file's text, refused in one line beyond :data:`MAX_JUDGMENT_FILE_BYTES`."""
    return read_text_file(path, what, limit=MAX_JUDGMENT_FILE_BYTES)


def load_json(path: str, what: str) -> Any:
    """A whole JSON judgment file, strictly (duplicate keys, NaN, deep nesting refused)."""
    text = read_whole(path, what)
    if not text.strip():
        raise InputError(path, None, "no judgments (the file is empty)")
    return parse_json_document(path, text)


#: Where the file's own object is, in messages.
TOP = "(top level)"


def top_array(path: str, body: Any, key: str, what: str) -> list:
    """``body[key]``, the array every JSON judgment format holds its entries in (``body`` is the
    decoded file, or None to read ``path`` here)."""
    body = load_json(path, what) if body is None else body
    expect(path, TOP, body, dict, f"an object with '{key}'")
    return member(path, TOP, body, key, list, "an array")


def at(path: str, where: str, problem: str) -> InputError:
    """An error at a JSON path: ``ratings.json: requests[2].ratings[0]: problem``."""
    return InputError(path, None, f"{where}: {problem}")


def expect(path: str, where: str, value: Any, kind: type | tuple[type, ...], name: str) -> Any:
    """``value`` when it is of ``kind``, else the one-line error naming ``where`` and ``name``."""
    if isinstance(value, bool) or not isinstance(value, kind):
        raise at(path, where, f"expected {name}, got {_json_type(value)}")
    return value


def member(path: str, where: str, obj: dict, key: str, kind: type | tuple[type, ...], name: str) -> Any:
    """``obj[key]``, present and of ``kind``."""
    if key not in obj:
        raise at(path, where, f"missing '{key}'")
    return expect(path, key if where == TOP else f"{where}.{key}", obj[key], kind, name)


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null",
             int: "a number", float: "a number"}
    return names.get(type(value), type(value).__name__)


def whole_rating(src: str, line: int | None, value: Any, where: str = "") -> int:
    """A rating as an integer grade. Integers, and numbers or numeric strings with a whole value
    (``3``, ``"3"``, ``"1.0"``, ``3.0``: Search Relevance writes ``"1.000"``, Quepid keeps
    ratings as floats) are taken; ``0.9`` is refused: the gate's grades are integers."""
    prefix = f"{where}: " if where else ""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InputError(src, line, f"{prefix}rating must be a number, got {_json_type(value)}")
    if isinstance(value, int):
        number: float = value
    else:
        text = value.strip() if isinstance(value, str) else value
        try:
            number = float(text)
        except ValueError:
            raise InputError(src, line, f"{prefix}rating '{limits.shorten(str(value))}' is not a number") from None
    if not math.isfinite(number) or number != int(number) or abs(number) > 2 ** 53:
        raise InputError(src, line, f"{prefix}rating '{limits.shorten(str(value))}' is not a whole number "
                                    "(the gate's grades are integers: scale fractional ratings first, 0.9 -> 9)")
    return int(number)


def doc_id(src: str, line: int | None, value: Any, where: str = "") -> str:
    """A document id: a non-empty string (or an integer, as RRE and Quepid ids often are),
    within the id limits."""
    prefix = f"{where}: " if where else ""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(src, line, f"{prefix}document id must be a string, got {_json_type(value)}")
    text = str(value).strip()
    if not text:
        raise InputError(src, line, f"{prefix}empty document id")
    return check_id(src, line, text, f"{prefix}document id")
