"""Escaping of data before it enters Markdown.

Query texts, ids and config values come from users' files. In a PR comment
they must not break a table (``|``), open HTML (``<details>``, ``<img>``),
start code spans (backticks), or notify anyone (``@octocat``). Everything is
turned into inert text: HTML entities for markup characters, a backslash for
Markdown punctuation, and newlines folded to spaces.
"""

from __future__ import annotations

import math
from functools import wraps
from typing import Any, Callable

from markupsafe import Markup


class Inert(str):
    """Markdown that is safe to print as it is: data already escaped, or the gate's own markup.

    The templates' ``finalize`` (:func:`finalizer`) escapes every other text a ``{{ }}`` prints,
    so a value that reaches the page without passing through an escaping filter is escaped
    anyway, never printed raw. Concatenating an Inert with a ``str`` gives a ``str`` again:
    the mark is lost (and the text escaped) rather than carried onto unescaped data."""

    __slots__ = ()


def inert(function: Callable[..., Any]) -> Callable[..., Inert]:
    """``function``'s text marked :class:`Inert` (for filters and globals whose output is Markdown)."""

    @wraps(function)
    def marked(*args: Any, **kwargs: Any) -> Inert:
        return Inert(function(*args, **kwargs))

    return marked


def finalizer(escape: Callable[[Any], str]) -> Callable[[Any], str]:
    """A jinja2 ``finalize``: what every ``{{ }}`` prints. Inert text, and macro output marked
    ``| safe``, as it is; numbers and booleans as Python writes them; everything else through
    ``escape``. Data cannot reach the page unescaped by forgetting a filter."""

    def finalize(value: Any) -> str:
        if isinstance(value, (Inert, Markup)):
            return value
        if value is None or isinstance(value, (bool, int, float)):
            return str(value)
        return escape(value)

    return finalize

_ENTITIES = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    '"': "&quot;",
    "|": "&#124;",
    "`": "&#96;",
    "\\": "&#92;",
}
# Only characters that start inline markup mid-line: values are never at the
# start of a line (newlines are folded), so list and heading markers are inert.
_BACKSLASHED = set("*_[]~")


def md_text(value: object, limit: int | None = None) -> str:
    """Inert inline Markdown for any value (safe inside a table cell)."""
    text = "" if value is None else str(value)
    text = " ".join(text.split())  # folds newlines, tabs and runs of spaces
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 1, 0)] + "…"
    out = []
    previous = ""
    for ch in text:
        if ch == "@" and not (previous and (previous.isalnum() or previous in "._-")):
            # A mention needs a non-word character before the @; an entity
            # there stops it (nDCG@10 stays as it is).
            out.append("&#64;")
        elif ch in _ENTITIES:
            out.append(_ENTITIES[ch])
        elif ch in _BACKSLASHED:
            out.append("\\" + ch)
        elif ord(ch) < 32 or ch in "\u2028\u2029":
            out.append(" ")
        else:
            out.append(ch)
        previous = ch
    return "".join(out)


def signed(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    text = f"{value:+.{digits}f}"
    return "+0." + "0" * digits if text == "-0." + "0" * digits else text


def fixed(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    return f"{value:.{digits}f}"
