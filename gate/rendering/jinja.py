"""The jinja2 environment of ``gate/rendering/templates``, with escaping filters for data."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import jinja2

from gate.rendering.markdown import finalizer, fixed, inert, md_text, signed


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("gate.rendering", "templates"),
        # Markdown, not HTML: autoescape would not stop pipes or @-mentions. Every data
        # value goes through the `md` filter, and finalize escapes whatever did not.
        autoescape=False,
        finalize=finalizer(md_text),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["md"] = inert(md_text)
    env.filters["signed"] = inert(signed)
    env.filters["fixed"] = inert(fixed)
    env.filters["percent"] = inert(percent)
    env.globals["forest"] = inert(forest)
    env.globals["forest_scale"] = forest_scale
    return env


def forest(delta: float | None, low: float | None, high: float | None, scale: float, width: int = 21) -> str:
    """A text forest-plot cell: the CI as ├──┤, the estimate as ●, zero as a fixed ┼ tick.

    Every row uses the same ``scale`` (the largest |CI end| in the table), so
    rows compare by eye. Returned as a code span: monospaced, and inert.
    """
    if delta is None or low is None or high is None or scale <= 0:
        return "`" + " " * (width // 2) + "┼" + " " * (width // 2) + "`"
    half = width // 2

    def pos(value: float) -> int:
        # The scale comes from the CI ends; an estimate far outside them (or a huge value in a
        # forged report) is pinned to the edge, never an OverflowError.
        ratio = value / scale if math.isfinite(value) else math.copysign(1.0, value)
        ratio = max(-1.0, min(1.0, ratio)) if math.isfinite(ratio) else math.copysign(1.0, ratio)
        return max(0, min(width - 1, half + round(ratio * half)))

    cells = [" "] * width
    a, b = pos(low), pos(high)
    for i in range(a, b + 1):
        cells[i] = "─"
    cells[half] = "┼" if not (a <= half <= b) else "┼"
    cells[a], cells[b] = "├", "┤"
    cells[pos(delta)] = "●"
    return "`" + "".join(cells) + "`"


def forest_scale(rows: list[dict], low: str = "ci_low", high: str = "ci_high") -> float:
    ends = [abs(r[k]) for r in rows for k in (low, high) if r.get(k) is not None]
    return max(ends, default=0.0)


def percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)
