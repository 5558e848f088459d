"""The history page: one self-contained HTML file with server-side SVG charts.

No script runs on the page (hover is each marker's SVG ``<title>``), nothing is fetched: the
Content-Security-Policy is ``default-src 'none'`` plus the inline style by its hash, so the page
opens offline and cannot reach the network. Every value from data is escaped by jinja2's HTML
autoescape; the data for machines is ``history.json`` beside the page (the page embeds no
script block, so nothing in it has to be escaped against ``</script>``). The same history gives
the same bytes (no build time on the page). Why server-side SVG and not a charting library:
docs/history.md (measured by benchmarks/history_page.py).

The browser test counts the primary series' markers in a screenshot: each is a ``circle`` of
class ``point`` filled with :data:`POINT_COLOUR`, a colour nothing else on the page uses; the
primary chart is on top at a fixed size, so all its markers are in the first screen. The strata
charts' markers (:data:`STRATUM_POINT_COLOUR`) are below it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from gate.common.atomic import write_text_atomic
from gate.common.errors import InputError
from gate.inputs.config import is_https_url
from gate.rendering.markdown import md_text
from gate.report.history_records import History, Point, Series

#: The fill of the primary series' markers, and only of them (the browser test counts its blobs).
POINT_COLOUR = "#e8590c"
#: The fill of the strata series' markers.
STRATUM_POINT_COLOUR = "#1971c2"
PRIMARY_SIZE = (960, 340)
STRATUM_SIZE = (960, 190)
_MARGIN_LEFT, _MARGIN_RIGHT, _MARGIN_TOP, _MARGIN_BOTTOM = 56, 16, 16, 28


@dataclass(frozen=True)
class Marker:
    x: float
    y: float
    y_low: float
    y_high: float
    radius: float
    title: str


@dataclass(frozen=True)
class Gap:
    x: float
    reason: str


@dataclass(frozen=True)
class Chart:
    """One series drawn: its segments (lines and noise bands between breaks), markers, gaps."""

    title: str
    width: int
    height: int
    colour: str
    css_class: str
    lines: tuple[str, ...]  # SVG path data, one per unbroken segment
    bands: tuple[str, ...]  # SVG path data of the shaded noise band, one per segment
    markers: tuple[Marker, ...]
    gaps: tuple[Gap, ...]
    ticks: tuple[tuple[float, str], ...]  # (y, label)
    plot: tuple[float, float, float, float]  # left, top, right, bottom


def _slots(count: int, breaks: set[int]) -> list[float]:
    """Each baseline's horizontal slot: consecutive, one empty slot at each break."""
    out, slot = [], 0.0
    for i in range(count):
        if i in breaks:
            slot += 1.0
        out.append(slot)
        slot += 1.0
    return out


def _domain(series: Series) -> tuple[float, float]:
    lows = [min(p.low, p.value - (p.band or 0.0)) for p in series.points if p]
    highs = [max(p.high, p.value + (p.band or 0.0)) for p in series.points if p]
    low, high = (min(lows), max(highs)) if lows else (0.0, 1.0)
    pad = max((high - low) * 0.08, 0.01)
    return max(0.0, low - pad), min(1.0, high + pad)


def _fmt(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _title(history: History, index: int, p: Point) -> str:
    """The hover text: value, interval, commit, date, PR (the table below holds the rest)."""
    base = history.baselines[index]
    pr = f" #{base.pr}" if base.pr is not None else ""
    return f"{p.value:.4f} [{p.low:.4f}, {p.high:.4f}] n={p.n} · {base.commit[:7]} {base.date[:10]}{pr}"


def chart(history: History, series: Series, size: tuple[int, int], colour: str, css_class: str) -> Chart:
    width, height = size
    left, top, right, bottom = _MARGIN_LEFT, _MARGIN_TOP, width - _MARGIN_RIGHT, height - _MARGIN_BOTTOM
    starts = {b.index for b in history.breaks}
    slots = _slots(len(history.baselines), starts)
    span = (slots[-1] + 1.0) if slots else 1.0
    step = (right - left) / span
    low, high = _domain(series)

    def x(i: int) -> float:
        return round(left + (slots[i] + 0.5) * step, 1)

    def y(v: float) -> float:
        return round(bottom - (v - low) / (high - low or 1.0) * (bottom - top), 1)

    radius = round(max(1.5, min(5.0, step / 3.0)), 1)
    markers = tuple(Marker(x(i), y(p.value), y(p.low), y(p.high), radius, _title(history, i, p))
                    for i, p in enumerate(series.points) if p is not None)
    lines, bands = [], []
    for segment in _segments(len(series.points), starts):
        kept = [i for i in segment if series.points[i] is not None]
        points = [(i, series.points[i]) for i in kept]
        if len(points) > 1:
            lines.append(" ".join(f"{'M' if k == 0 else 'L'}{x(i)},{y(p.value)}"
                                  for k, (i, p) in enumerate(points) if p))
        banded = [(i, p) for i, p in points if p and p.band is not None]
        if banded:
            bands.append(_band_path(banded, x, y, step))
    gaps = tuple(Gap(round(left + (slots[b.index] - 0.5) * step, 1), b.reason) for b in history.breaks)
    ticks = tuple((y(v), f"{v:.3f}") for v in _tick_values(low, high))
    return Chart(series.name, width, height, colour, css_class, tuple(lines), tuple(bands), markers, gaps, ticks,
                 (left, top, right, bottom))


def _band_path(banded, x, y, step: float) -> str:
    """The shaded band value ± threshold along a segment (half a slot wide around a lone point)."""
    half = step * 0.3
    upper = [(x(i) - (half if k == 0 else 0), y(min(1.0, p.value + p.band))) for k, (i, p) in enumerate(banded)]
    upper += [(x(banded[-1][0]) + half, upper[-1][1])]
    lower = [(x(i), y(max(0.0, p.value - p.band))) for i, p in banded]
    lower = [(lower[-1][0] + half, lower[-1][1])] + lower[::-1]
    lower[-1] = (lower[-1][0] - half, lower[-1][1])
    return "M" + " L".join(f"{round(a, 1)},{round(b, 1)}" for a, b in upper + lower) + " Z"


def _segments(count: int, starts: set[int]) -> list[list[int]]:
    out: list[list[int]] = [[]]
    for i in range(count):
        if i in starts and out[-1]:
            out.append([])
        out[-1].append(i)
    return [s for s in out if s]


def _tick_values(low: float, high: float) -> list[float]:
    step = (high - low) / 4 if high > low else 0.1
    return [low + k * step for k in range(5)]


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("gate.rendering", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["short"] = lambda sha: str(sha)[:7]
    return env


_STYLE = re.compile(r"<style>(.*?)</style>", re.DOTALL)


def render_page(history: History) -> str:
    """The page's HTML; the CSP's style hash is computed from the style block it holds."""
    primary, strata = history.series[0], history.series[1:]
    charts = [chart(history, primary, PRIMARY_SIZE, POINT_COLOUR, "point")]
    charts += [chart(history, s, STRATUM_SIZE, STRATUM_POINT_COLOUR, "point stratum-point") for s in strata]
    template = _environment().get_template("history.html.j2")
    html = template.render(history=history, charts=charts, style_hash="STYLE-HASH",
                           break_at={b.index: b.reason for b in history.breaks})
    style = _STYLE.search(html)
    assert style is not None  # the template has one style block
    digest = base64.b64encode(hashlib.sha256(style.group(1).encode("utf-8")).digest()).decode()
    return html.replace("'STYLE-HASH'", f"'sha256-{digest}'", 1)


def write_history(history: History, out: Path) -> Path:
    """``index.html`` and ``history.json`` in ``out``; returns the page's path. A folder that
    cannot be written (a file in the way, no permission) is the user's to fix: one line, exit 2."""
    page = out / "index.html"
    try:
        out.mkdir(parents=True, exist_ok=True)
        write_text_atomic(out / "history.json", json.dumps(history.to_dict(), indent=2, sort_keys=True,
                                                           ensure_ascii=False, allow_nan=False) + "\n")
        write_text_atomic(page, render_page(history))
    except OSError as error:
        raise InputError(str(out), None, f"cannot write the history page there: {error.strerror or error}") from None
    return page


# --------------------------------------------------------------------------- the PR comment's trend line

_BLOCKS = "▁▂▃▄▅▆▇█"
#: Opens the sparkline when older archived baselines are not commensurable with the candidate.
BREAK_MARK = "┆"


def sparkline(values: Sequence[float]) -> str:
    """One block per value, ▁ for the lowest and █ for the highest (▄ for all when they are equal)."""
    # Halved before subtracting: a report.json the PR's code wrote may hold values whose span
    # overflows a float (-1e308 and 1e308), and the comment job must still draw them.
    low, high = min(values) / 2, max(values) / 2
    if high - low < 5e-13:
        return "▄" * len(values)
    return "".join(_BLOCKS[int((v / 2 - low) / (high - low) * 7 + 0.5)] for v in values)


def _trend_text(trend: Any, metric: str) -> str:
    values = [float(p.value) for p in trend.points]
    if not values or not all(math.isfinite(v) for v in values):
        return ""
    candidate = bool(trend.points[-1].candidate)
    archived = len(values) - candidate
    broken = trend.broken is True
    return (f"**Trend of {metric} on main:** `{(BREAK_MARK if broken else '') + sparkline(values)}` "
            f"{values[0]:.3f} → {values[-1]:.3f}" + (" (this PR)" if candidate else "")
            + (f" · the last {archived} archived baselines" if archived > 1 else " · the last archived baseline")
            + (" and this PR" if candidate else "")
            + (f"; {BREAK_MARK} older ones were measured on another golden set, qrels or metric" if broken else ""))


def history_line(report: Any) -> str:
    """The comment's line on main's history: the trend (``report.trend``: the sparkline is drawn
    again from the points' values, never taken from the report's text) and the link to the
    history page (``report.history_url``, shown only when it is an https address a Markdown
    link cannot be broken out of). Empty when the report has neither."""
    metric = md_text(report.metric)
    parts = []
    if report.trend:
        line = _trend_text(report.trend, metric)
        if line:
            parts.append(line)
    url = report.history_url
    if isinstance(url, str) and is_https_url(url):
        parts.append(f"[history of {metric} on main]({url})")
    return " · ".join(parts)
