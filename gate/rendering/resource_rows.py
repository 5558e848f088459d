"""Latency and cost beside the quality delta: the rows the comment, report.md and the terminal show.

Only numbers the gate computed go in (report.json's ``latency`` and ``cost``), formatted through the
number helpers; without a comparison there are no rows, and nothing is said about latency.
"""

from __future__ import annotations

from dataclasses import dataclass

from gate.common.numbers import fixed, signed
from gate.report.spine import Cost, Latency, Report, ResourceChange
from gate.report.typed import ABSENT

__all__ = ["ResourceRow", "resource_rows", "resource_title", "resource_line"]


@dataclass(frozen=True)
class ResourceRow:
    name: str
    baseline: str
    candidate: str
    change: str
    ci: str
    breached: bool = False


def _signed(value: float, digits: int) -> str:
    """:func:`gate.common.numbers.signed` with the comment's minus sign (−)."""
    return signed(value, digits).replace("-", "−")


def _row(name: str, change: ResourceChange, unit: str, digits: int, breached: bool = False) -> ResourceRow:
    assert isinstance(change.baseline, float) and isinstance(change.candidate, float)
    assert isinstance(change.change, float) and isinstance(change.ci_low, float) and isinstance(change.ci_high, float)
    relative = change.relative if isinstance(change.relative, float) else None
    shown = _signed(change.change, digits) + unit + ("" if relative is None else f" ({_signed(relative * 100, 0)}%)")
    return ResourceRow(name, fixed(change.baseline, digits) + unit, fixed(change.candidate, digits) + unit, shown,
                       f"[{_signed(change.ci_low, digits)}, {_signed(change.ci_high, digits)}]{unit}", breached)


def _latency(report: Report) -> Latency | None:
    return report.latency if isinstance(report.latency, Latency) else None


def _cost(report: Report) -> Cost | None:
    return report.cost if isinstance(report.cost, Cost) else None


def resource_rows(report: Report) -> list[ResourceRow]:
    """p50 and p95 latency per side with the change and its interval, and the mean cost per query
    when the runs give costs; [] without a comparison."""
    rows = []
    latency, cost = _latency(report), _cost(report)
    if latency is not None and isinstance(latency.p50, ResourceChange) and isinstance(latency.p95, ResourceChange):
        rows.append(_row("p50 latency", latency.p50, " ms", 1))
        rows.append(_row("p95 latency", latency.p95, " ms", 1, latency.breached is True))
    if cost is not None and isinstance(cost.mean, ResourceChange):
        rows.append(_row("cost per query", cost.mean, "", 6, cost.breached is True))
    return rows


def resource_title(report: Report) -> str:
    """The first column's heading: what the rows are measured on."""
    latency, cost = _latency(report), _cost(report)
    count = latency.query_count if latency is not None else (cost.query_count if cost is not None else ABSENT)
    return "latency and cost" + (f", on {count} queries" if isinstance(count, int) else "")


def resource_line(report: Report) -> str | None:
    """One line for the terminal: ``p50 3.1 -> 4.2 ms (+1.1), p95 ... [CI]; cost ...``; None without rows."""
    rows = resource_rows(report)
    if not rows:
        return None
    line = "; ".join(f"{row.name} {row.baseline} -> {row.candidate} ({row.change}, 95% CI {row.ci})"
                     f"{' beyond its limit' if row.breached else ''}" for row in rows)
    return line.replace("−", "-")  # the terminal prints deltas with an ASCII minus
