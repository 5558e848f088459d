"""Latency and cost beside quality: the comment's first screen, report.md and the terminal show p50/p95
per side and the change with its interval; without timings none of them says anything about latency."""

from __future__ import annotations

import json
import re
from pathlib import Path

from gate.rendering import comment as rendering
from gate.rendering.terminal import run_summary_lines
from gate.report.spine import Report

PINNED = Path(__file__).resolve().parents[1] / "regression" / "pinned" / "demo-seed7.json"


def _demo_report(**changes) -> Report:
    report = json.loads(PINNED.read_text())["report"]
    report.update(changes)
    for key in [k for k, v in changes.items() if v is ...]:
        del report[key]
    return Report.from_dict(report)


def _cost() -> dict:
    change = {"baseline": 0.0001, "candidate": 0.00025, "change": 0.00015, "ci_low": 0.00012, "ci_high": 0.00018,
              "relative": 1.5, "relative_ci_low": 1.2, "relative_ci_high": 1.8}
    return {"query_count": 131, "samples": 2000, "seed": 7, "baseline": {"mean": 0.0001, "total": 0.0131,
            "source": "run"}, "candidate": {"mean": 0.00025, "total": 0.03275, "source": "cache"}, "mean": change,
            "limit": "+0.0001", "breached": True}


def test_the_first_screen_shows_p50_and_p95_beside_the_quality_delta():
    body = rendering.render_comment(_demo_report())
    first = body.split("#### ")[0]
    measures = first.index("| **nDCG@10** |")
    table = first.index("| latency and cost, on 131 queries | baseline | candidate | Δ | 95% CI |")
    assert measures < table
    assert re.search(r"^\| p50 latency \| 4\.5 ms \| 10\.0 ms \| \+5\.5 ms \(\+124%\) \| \[\+5\.3, \+5\.8\] ms \|$",
                     first, re.M)
    assert re.search(r"^\| p95 latency \| 5\.0 ms \| 12\.0 ms \| \+7\.0 ms \(\+139%\) \| \[\+6\.6, \+7\.3\] ms \|$",
                     first, re.M)
    assert "cost per query" not in body  # the demo sets no price


def test_without_timings_the_comment_says_nothing_about_latency():
    for report in (_demo_report(latency=..., cost=...), _demo_report(latency=None, cost=None)):
        body = rendering.render_comment(report)
        assert "latency" not in body.lower() and "| p50" not in body
        assert not any("latency" in line for line in run_summary_lines(report))


def test_a_cost_row_appears_with_costs_and_says_when_it_is_beyond_its_limit():
    body = rendering.render_comment(_demo_report(cost=_cost()))
    assert re.search(r"^\| \*\*cost per query\*\* \(beyond its limit\) \| 0\.000100 \| 0\.000250 \| \+0\.000150 "
                     r"\(\+150%\) \| \[\+0\.000120, \+0\.000180\] \|$", body, re.M)


def test_report_md_and_the_terminal_carry_the_percentiles_and_the_interval():
    report = _demo_report(cost=_cost())
    full = rendering._full_report(report) or ""
    assert "| p99 | 5.27 ms | 12.42 ms | | |" in full
    assert "| p95 | 5.00 ms | 11.97 ms | +6.97 ms | [+6.60, +7.28] ms |" in full
    assert "| cost in total | 0.013100 | 0.032750 | | |" in full
    assert "B = 2000, seed = 7" in full and "noise band's p95 threshold ±0.13 ms" in full
    (line,) = [line for line in run_summary_lines(report) if line.startswith("p50 latency")]
    assert "p95 latency 5.0 ms -> 12.0 ms (+7.0 ms (+139%), 95% CI [+6.6, +7.3] ms)" in line
    assert "cost per query" in line and "beyond its limit" in line and "−" not in line


def test_a_note_says_why_there_is_no_comparison_in_report_md_only():
    report = _demo_report(latency=None, cost=None, timings_note="the archived baseline has no timings")
    assert "No latency comparison: the archived baseline has no timings." in (rendering._full_report(report) or "")
    assert "latency" not in rendering.render_comment(report).lower()
