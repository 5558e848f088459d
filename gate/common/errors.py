"""Errors that carry their place in the user's files.

Readers raise :class:`InputError`; only the CLI edge turns it into a one-line
message and exit code 2, so library callers can catch and inspect it.
"""

from __future__ import annotations

import os
import unicodedata

# Long enough for any message the gate writes with a path in it; a key or value from a
# hostile file cannot make the one line megabytes long.
MAX_MESSAGE = 2000


def one_line(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` as one bounded line: every line break Python or a terminal knows (CR, LF, VT,
    FF, NEL, U+2028/9, the file/group/record separators) and every other control or bidi
    character becomes a space, and the middle of an over-long text is cut."""
    out = "".join(" " if unicodedata.category(ch) in ("Cc", "Zl", "Zp") or unicodedata.bidirectional(ch) in
                  ("LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI") else ch for ch in text)
    if len(out) > limit:
        keep = (limit - 3) // 2
        out = out[:keep] + " … " + out[-keep:]
    return out


#: Folders of copies the gate reads in place of the user's files (the yardstick's copy of the
#: base commit's files, in a temporary folder), each with the note a message about one ends with.
_COPIES: dict[str, str] = {}


def name_copies_by_origin(folder: str | os.PathLike, note: str) -> None:
    """From now on, every :class:`InputError` message names a file under ``folder`` by its path
    inside it (the path the user wrote, when ``folder`` mirrors their repository) and ends with
    ``note`` ("as of the base commit ..."): the temporary folder means nothing to the user, and
    the line numbers are those of the copy, not of their working tree."""
    for form in (os.fspath(folder), os.path.abspath(folder), os.path.realpath(folder)):  # as paths get written
        _COPIES[os.path.join(form, "")] = note


def _by_origin(text: str) -> str:
    notes: list[str] = []
    for prefix, note in sorted(_COPIES.items(), key=lambda item: -len(item[0])):  # the longest form first
        if prefix in text:
            text = text.replace(prefix, "")
            notes += [note] if note not in notes else []
    return text + "".join(f" ({note})" for note in notes)


class InputError(Exception):
    """Bad user input: a file (or option), an optional 1-based line, and the problem."""

    def __init__(self, path: str | None, line: int | None, message: str):
        self.path = None if path is None else str(path)
        self.line = line
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path if self.line is None else f"{self.path}:{self.line}"
            where += ": "
        # One line, always: newlines in data would break CI log parsing.
        return one_line(_by_origin(where + self.message))


class UsageError(InputError):
    """A bad command-line option (exit code 2, like bad input)."""

    def __init__(self, message: str):
        super().__init__(None, None, message)
