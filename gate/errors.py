"""Errors that carry their place in the user's files.

Readers raise :class:`InputError`; only the CLI edge turns it into a one-line
message and exit code 2, so library callers can catch and inspect it.
"""

from __future__ import annotations


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
        return (where + self.message).replace("\r", " ").replace("\n", " ")


class UsageError(InputError):
    """A bad command-line option (exit code 2, like bad input)."""

    def __init__(self, message: str):
        super().__init__(None, None, message)
