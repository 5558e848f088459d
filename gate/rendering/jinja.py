"""The jinja2 environment of ``gate/rendering/templates``, with escaping filters for data."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import jinja2

from gate.checks.leakage import chunk_listing
from gate.common.numbers import counted, drop_words
from gate.rendering.history import history_line
from gate.rendering.markdown import fence, finalizer, fixed, inert, md_text, signed
from gate.rendering.phrases import judgments_sentences
from gate.report.typed import ABSENT, Record


class ReportEnvironment(jinja2.Environment):
    """The templates' environment: strict about names, null-safe along a report's optional keys.

    ``report.judged.baseline.judged`` is ``ABSENT`` when ``judged`` (or ``baseline``) is absent
    or null, so a template reads an optional section as the schema states it and guards once
    (``{% if j %}``), instead of a ``.get`` at every step. A key a record does not have, or a
    misspelt name, is still an error (``StrictUndefined``)."""

    def __init__(self, *, finalize, loader) -> None:
        super().__init__(
            loader=loader,
            # Markdown, not HTML: autoescape would not stop pipes or @-mentions. Every data
            # value goes through the `md` filter, and finalize escapes whatever did not.
            autoescape=False,
            finalize=finalize,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=True,
        )
        self.tests["absent"] = lambda value: value is ABSENT
        # `x.key is none` asks what `x.get("key") is None` asked of a dict: absent counts as null.
        self.tests["none"] = lambda value: value is None or value is ABSENT
        self.filters["given"] = given

    def getattr(self, obj, attribute):  # noqa: A003 - jinja2's name
        if obj is None or obj is ABSENT:
            return ABSENT
        if isinstance(obj, Record) and not isinstance(attribute, str):
            return self.undefined(obj=obj, name=attribute)
        return super().getattr(obj, attribute)

    def getitem(self, obj, argument):
        if obj is ABSENT:
            return ABSENT
        return super().getitem(obj, argument)


def given(value, default):
    """``default`` where the report leaves the key out (``dict.get(key, default)`` for records)."""
    return default if value is ABSENT else value


def matched_chunks(match, shown: int = 3) -> str:
    """A leak's chunks as text (not yet escaped): its best chunk, then the others it matched, up
    to ``shown`` in all, then "and N more" (``chunks_matched`` counts every one)."""
    best = str(given(match.chunk_id, ""))
    chunks = [str(c.chunk_id) for c in (match.chunks or ())]
    total = match.chunks_matched if isinstance(match.chunks_matched, int) else 0  # no count: no "more"
    return chunk_listing(best, chunks, total, shown)


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = ReportEnvironment(loader=jinja2.PackageLoader("gate.rendering", "templates"),
                            finalize=finalizer(md_text))
    env.filters["md"] = inert(md_text)
    env.filters["signed"] = inert(signed)
    env.filters["fixed"] = inert(fixed)
    env.filters["percent"] = inert(percent)
    env.filters["counted"] = counted  # words and a number: the finalizer escapes them like any text
    env.filters["drop_words"] = drop_words
    env.globals["forest"] = inert(forest)
    env.globals["forest_scale"] = forest_scale
    env.filters["chunks"] = matched_chunks  # not yet escaped: `m | chunks | md`
    env.filters["fence"] = inert(fence)  # data in a code block it cannot close (a runner's log)
    env.globals["history_line"] = inert(history_line)  # the trend and the history page's link
    env.globals["judgments_sentences"] = judgments_sentences  # not yet escaped: `line | md`
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


def forest_scale(rows: list[Any], low: str = "ci_low", high: str = "ci_high") -> float:
    """The largest |CI end| of the rows (records of the report, or a view's dicts)."""
    def end(row: Any, name: str) -> Any:
        value = row.get(name) if isinstance(row, dict) else getattr(row, name)
        return None if value is ABSENT else value

    ends = [abs(end(r, k)) for r in rows for k in (low, high) if end(r, k) is not None]
    return max(ends, default=0.0)


def percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)
