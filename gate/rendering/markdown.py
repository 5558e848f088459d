"""Escaping of data before it enters Markdown.

Query texts, ids and config values come from users' files. In a PR comment
they must not break a table (``|``), open HTML (``<details>``, ``<img>``),
start code spans (backticks), or notify anyone (``@octocat``). Everything is
turned into inert text: HTML entities for markup characters, a backslash for
Markdown punctuation, and newlines folded to spaces.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import wraps
from typing import Any

from markupsafe import Markup

from gate.common.numbers import fixed, signed  # noqa: F401 - the templates' filters, re-exported
from gate.report.typed import ABSENT


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
        # A key the report leaves out reads as null: ``ABSENT`` is never printed.
        args = tuple(None if a is ABSENT else a for a in args)
        return Inert(function(*args, **kwargs))

    return marked


def finalizer(escape: Callable[[Any], str]) -> Callable[[Any], str]:
    """A jinja2 ``finalize``: what every ``{{ }}`` prints. Inert text, and macro output marked
    ``| safe``, as it is; numbers and booleans as Python writes them; everything else through
    ``escape``. Data cannot reach the page unescaped by forgetting a filter."""

    def finalize(value: Any) -> str:
        if value is ABSENT:  # a key the report leaves out prints nothing
            return ""
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
# Characters that start inline markup anywhere in a line.
_BACKSLASHED = set("*_[]~")
# A zero-width space after "@" or "#" is what stops a mention or an issue reference: GitHub
# decodes entities (&#64;) and backslash escapes before it looks for them.
_BREAK = "\u200b"
# Bidirectional overrides and isolates would reorder what follows them (the rest of a headline).
BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
_BIDI = set(BIDI_CONTROLS)
# Block markers only open a block followed by a space (or alone): "-0.5" and "0.1.0" stay as they
# are; a value of nothing but - = * _ and spaces would be a rule or a setext underline.
_LINE_START = re.compile(r"(#{1,6}|[+-]|\d{1,9}[.)])(?= |$)|([-=*_])(?=[ =*_-]*$)")
CONTROL_CHARACTERS = "\x00-\x08\x0b-\x1f\x7f-\x9f"  # a character class: C0 and C1 but tab and newline
_CONTROLS = re.compile(f"[{CONTROL_CHARACTERS}]")


# The characters md_text does anything to; every other one is printed as it is.
_ESCAPED_CHARACTERS = frozenset("@#-:.") | frozenset(_ENTITIES) | _BACKSLASHED | _BIDI


def md_text(value: object, limit: int | None = None) -> str:
    """Inert inline Markdown for any value (safe inside a table cell, and at a line's start).

    Markup characters become entities or backslash escapes; newlines fold to spaces; a mention
    (``@name`` not preceded by a letter or digit: ``nDCG@10`` stays) and an issue reference
    (``#12``) get a zero-width space after their sign; ``://`` and ``www.`` are broken so a URL
    in data is text, not a link; bidirectional controls become U+FFFD; a value that would open
    a heading, list, rule or setext underline at a line's start has that character escaped."""
    text = _folded(value, limit)
    out = []
    previous = ""
    for index, ch in enumerate(text):
        out.append(_escaped(text, index, previous) if ch in _ESCAPED_CHARACTERS else ch)
        previous = ch
    return _line_start_escaped("".join(out))


def _folded(value: object, limit: int | None) -> str:
    """``value`` as one line of text, at most ``limit`` characters (a cut one ends with "…")."""
    text = "" if value is None else str(value)
    # Controls first (a "\x01# x" must not become " # x", then "# x" at a line's start), then
    # newlines, tabs, U+2028/2029 and runs of spaces fold, leading and trailing ones dropped.
    text = " ".join(_CONTROLS.sub(" ", text).split())
    if limit is not None and len(text) > limit:
        cut = text[: max(limit - 1, 0)]
        space = cut.rfind(" ")
        if space > len(cut) * 0.6:  # at a word's end when one is near: "or judge…", not "or judge t…"
            cut = cut[:space]
        text = cut + "…"
    return text


def _escaped(text: str, index: int, previous: str) -> str:
    """``text[index]`` (one of :data:`_ESCAPED_CHARACTERS`) as inert Markdown, given the character
    before it."""
    ch = text[index]
    following = text[index + 1: index + 2]
    if ch == "@":
        return _at_sign(text, index, previous)
    if ch == "#" and following.isdigit():
        return "#" + _BREAK
    if ch == "-" and following.isdigit() and text[max(0, index - 2): index].lower() == "gh" \
            and not text[max(0, index - 3): max(0, index - 2)].isalnum():
        return _BREAK + "-"  # GH-12, an issue reference too
    if ch == ":" and text[index + 1: index + 3] == "//":
        return ":" + _BREAK
    if ch == "." and text[max(0, index - 3): index].lower() == "www" \
            and not text[max(0, index - 4): index - 3].isalnum():
        return _BREAK + "."
    if ch in _ENTITIES:
        return _ENTITIES[ch]
    if ch in _BACKSLASHED:
        return "\\" + ch
    if ch in _BIDI:
        return "\ufffd"
    return ch


def _at_sign(text: str, index: int, previous: str) -> str:
    """The "@" at ``text[index]``: as it is in a cutoff, with a zero-width space after it where it
    would mention someone."""
    # nDCG@10, P@5, RR(rel=2)@10: a cutoff, not a mention (an ASCII word character, or a
    # measure's closing parenthesis before digits, cannot precede a mention).
    digits = re.match(r"[0-9]+", text[index + 1:])
    cutoff = (previous == ")" and digits is not None
              and not re.match(r"[A-Za-z0-9/-]", text[index + 1 + digits.end():]))  # @10, not @2pac
    word = previous.isascii() and (previous.isalnum() or previous == "_")
    return "@" if word or cutoff else "@" + _BREAK


def _line_start_escaped(result: str) -> str:
    """``result`` with the character escaped that would open a block at a line's start."""
    start = _LINE_START.match(result)
    if start:
        # "# x", "- x", "+ x", "1. x", "===": escaped where they would open a block.
        marker = start.group(1) or start.group(2)
        result = (marker[:-1] + "\\" + marker[-1] if marker[-1] in ".)" else "\\" + marker) + result[len(marker):]
    return result


_BIDI_CHARACTER = re.compile(f"[{BIDI_CONTROLS}]")


def fence(text: Any, info: str = "") -> str:
    """A fenced code block that ``text`` cannot close (its fence is longer than any backtick run in
    it), its bidirectional controls U+FFFD as in :func:`md_text`: a runner's log may quote a
    document id holding one, and inside a code block it would still reorder the line it is on."""
    body = "" if text is None else _BIDI_CHARACTER.sub("\ufffd", str(text))
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    mark = "`" * max(3, longest + 1)
    return f"{mark}{info}\n{body.rstrip()}\n{mark}"
