"""The strata table and the traffic line of the PR comment and of report.md with the 1.6 labels:
the interval that decides (the bounded-mean test's) is the one shown, "unclear" is its own label
and its own share of the traffic line, and a 1.5 report still renders as it did."""

from __future__ import annotations

import json

import numpy as np

from gate.evaluation.evaluate import PerQuery
from gate.inputs.traffic_shares import StrataSpec
from gate.rendering import comment as rendering
from gate.rendering.jinja import render
from gate.report.spine import Report
from gate.statistics.movement import strata_section
from gate.verdict.directions import STRATA_DIRECTIONS
from tests.rendering.test_comment_render import assert_inert, assert_tables_well_formed, full_report


def per_query(qids, values, metric="nDCG@10"):
    return PerQuery(query_ids=tuple(qids), values={metric: np.asarray(values, dtype=np.float64)},
                    missing=(), extra=(), no_relevant=(), ties={}, rel=1)


def section():
    """navigational: -0.035 on 20 queries (interval across zero: unclear, 60% of traffic);
    how_to: 400 queries within +/-0.005 (untouched, 40%)."""
    z = np.random.default_rng(5).normal(0.0, 1.0, 20)
    d = np.concatenate([0.11 * (z - z.mean()) / z.std() - 0.035,
                        np.random.default_rng(8).uniform(-0.005, 0.005, 400)])
    labels = ["navigational"] * 20 + ["how_to"] * 400
    qids = [f"q{i:04d}" for i in range(d.size)]
    base = np.full(d.size, 0.5)
    spec = StrataSpec(shares={"navigational": 0.6, "how_to": 0.4}, source="SHARES.yml")
    block = strata_section(per_query(qids, base), per_query(qids, base + d), "nDCG@10", dict(zip(qids, labels)),
                           spec, samples=2000, rule=STRATA_DIRECTIONS)
    return json.loads(json.dumps(block.to_dict(), allow_nan=False))


def test_the_comment_shows_unclear_and_its_share_of_traffic():
    block = section()
    report = full_report(strata=block["strata"], traffic=block["traffic"], wins_sentence=block["wins_sentence"])
    body = rendering.render_comment(Report.from_dict(report))
    assert "**Traffic**: 0% of traffic damaged, 0% improved, 40% untouched, 60% unclear." in body
    nav = next(line for line in body.splitlines() if line.startswith("| navigational |"))
    assert "❔ unclear" in nav and "untouched" not in nav
    row = block["strata"][0]
    shown = rendering.interval(row["bound_low"], row["bound_high"])
    assert shown in nav  # the interval that decides, not the bootstrap CI
    assert rendering.interval(row["ci_low"], row["ci_high"]) not in nav
    assert "| stratum | traffic | n | Δ | 95% CI, any shape |" in body
    assert "⚪ untouched" in next(line for line in body.splitlines() if line.startswith("| how\\_to |"))
    assert "within ±0.020" in body and "**unclear**: neither a change nor its absence is shown" in body
    assert_tables_well_formed(body)
    assert_inert(body)


def test_report_md_shows_both_intervals_and_the_labels():
    block = section()
    report = Report.from_dict(full_report(strata=block["strata"], traffic=block["traffic"]))
    text = render("strata.md.j2", report=report)
    assert "| bootstrap 95% CI | 95% CI, any shape |" in text
    assert "**unclear**" in text and "**untouched**" in text
    assert "60% unclear" in text


def test_a_report_without_the_bounded_interval_renders_as_before():
    # A 1.5 report: rows without bound_low/bound_high keep the bootstrap CI and the old sentence.
    body = rendering.render_comment(Report.from_dict(full_report()))
    assert "| stratum | traffic | n | Δ | 95% CI |" in body
    assert "Holm-adjusted sign-flip p to be below 0.05" in body
