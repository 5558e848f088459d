"""Generated sections of a hand-written page (the docs site's command and config references)."""

from __future__ import annotations

__all__ = ["replaced", "section"]


def section(text: str, start: str, end: str) -> str | None:
    """The part of ``text`` from the ``start`` marker to the ``end`` marker, both included (None
    when the markers are missing or out of order)."""
    a, b = text.find(start), text.find(end)
    if a < 0 or b < a:
        return None
    return text[a:b + len(end)]


def replaced(text: str, generated: str, start: str, end: str) -> str:
    """``text`` with its section from ``start`` to ``end`` replaced by ``generated`` (which
    holds both markers itself)."""
    old = section(text, start, end)
    if old is None:
        raise ValueError(f"no '{start}' ... '{end}' section to replace")
    return text.replace(old, generated.rstrip("\n"), 1)
