"""Numbers as every output prints them: a sign where a direction is meant, never a negative zero.

One implementation for the report's prose (reasons, sentences), the Markdown and the terminal, so
``-0.000`` cannot appear in one place and ``0.000`` in another.
"""

from __future__ import annotations

import math

__all__ = ["counted", "drop_words", "finite_or_none", "fixed", "listed", "signed"]


def signed(value: float | None, digits: int = 3) -> str:
    """``+0.012`` / ``-0.012``; a value that rounds to zero is ``0.000``, with no sign (a ``+`` on a
    value that fell, or a ``-0.000``, would give it a direction it does not show);
    ``n/a`` for None or NaN, ``∞`` / ``-∞`` for infinities."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    text = f"{value:+.{digits}f}"
    return fixed(0.0, digits) if text[1:] == fixed(0.0, digits) else text


def fixed(value: float | None, digits: int = 3) -> str:
    """``0.012``; a value that rounds to zero is ``0.000`` (never ``-0.000``)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    text = f"{value:.{digits}f}"
    return text[1:] if text == "-0." + "0" * digits else text


def drop_words(drop: float | None, digits: int = 3) -> str:
    """A fall given as a positive number, in words: ``drop 0.012``, ``rise 0.012``, or ``unchanged``
    when it rounds to zero (a float sum's 1e-17 is no drop); ``n/a`` for None or NaN."""
    if drop is None or (isinstance(drop, float) and math.isnan(drop)):
        return "n/a"
    size = fixed(abs(drop), digits)
    if size == fixed(0.0, digits):
        return "unchanged"
    return f"{'drop' if drop > 0 else 'rise'} {size}"


def counted(count: int, one: str, many: str) -> str:
    """``1 query`` / ``3 queries``: the count and the noun that agrees with it."""
    return f"{count} {one if count == 1 else many}"


def listed(items, shown: int) -> str:
    """``a, b, c and 4 more``: the first ``shown`` items, then how many are left unnamed."""
    items = [str(item) for item in items]
    return ", ".join(items[:shown]) + (f" and {len(items) - shown} more" if len(items) > shown else "")


def finite_or_none(value: float) -> float | None:
    """JSON has no NaN or infinity: a non-finite number is written as null (never silently 0)."""
    value = float(value)
    return value if math.isfinite(value) else None
