"""Strata directions that must be earned (gate.statistics.strata, 1.6): the bounded-mean test
decides improved/damaged for the stratum's mean whatever the shape of its per-query changes,
untouched needs the change shown smaller than the margin, and a stratum where neither is shown
is unclear - in the table, the traffic shares and the traffic line."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from gate.evaluation.evaluate import PerQuery
from gate.inputs.traffic_shares import StrataSpec
from gate.report.spine import Report
from gate.statistics import strata as strata_module
from gate.statistics.movement import strata_section
from gate.statistics.strata import (
    DAMAGED,
    IMPROVED,
    UNCLEAR,
    UNTOUCHED,
    bounded_mean_test,
    stratum_table,
)
from gate.statistics.traffic import traffic_account
from gate.verdict.directions import STRATA_DIRECTIONS
from gate.verdict.levels import STRATA_ALPHA

SAMPLES = 2000


def beyond_the_margin_across_zero():
    """20 queries, delta exactly -0.035 (the margin is 0.02), bootstrap CI about [-0.080, +0.014]."""
    z = np.random.default_rng(5).normal(0.0, 1.0, 20)
    return 0.11 * (z - z.mean()) / z.std() - 0.035


def inside_the_margin(n=400):
    """A large stratum whose queries moved by at most 0.005 either way."""
    return np.random.default_rng(8).uniform(-0.005, 0.005, n)


# --------------------------------------------------------------------------- problem 1: untouched is earned


def test_a_stratum_far_beyond_the_margin_with_its_interval_across_zero_is_unclear_not_untouched():
    d = beyond_the_margin_across_zero()
    row = stratum_table(np.full(20, 0.5), 0.5 + d, ["navigational"] * 20, samples=SAMPLES, rule=STRATA_DIRECTIONS)[0]
    assert row.delta == pytest.approx(-0.035)
    assert row.ci_low == pytest.approx(-0.080, abs=0.01) and row.ci_high == pytest.approx(0.014, abs=0.01)
    assert row.direction == UNCLEAR and row.direction != UNTOUCHED
    assert row.decided_by == "neither shown"


def test_the_traffic_line_says_the_unclear_share():
    d = np.concatenate([beyond_the_margin_across_zero(), inside_the_margin()])
    labels = ["navigational"] * 20 + ["how_to"] * 400
    base = np.full(d.size, 0.5)
    rows = stratum_table(base, base + d, labels, shares={"navigational": 0.6, "how_to": 0.4}, samples=SAMPLES,
                         rule=STRATA_DIRECTIONS)
    assert [r.direction for r in rows] == [UNCLEAR, UNTOUCHED]
    t = traffic_account(rows, d, labels, samples=SAMPLES)
    assert (t.damaged, t.improved, t.untouched, t.unclear, t.unmeasured) == pytest.approx((0, 0, 0.4, 0.6, 0))
    assert t.sentence == "0% of traffic damaged, 0% improved, 40% untouched, 60% unclear"
    assert t.strata["unclear"] == ("navigational",) and t.counts["unclear"] == 20


def test_a_stratum_inside_the_margin_is_untouched():
    d = inside_the_margin()
    row = stratum_table(np.full(d.size, 0.5), 0.5 + d, ["how_to"] * d.size, samples=SAMPLES, rule=STRATA_DIRECTIONS)[0]
    assert -0.02 <= row.bound_low < 0 < row.bound_high <= 0.02
    assert row.direction == UNTOUCHED and row.decided_by == "equivalence"
    # The margin reaches the table: at 0.005 the same stratum is not shown within it.
    tight = stratum_table(np.full(d.size, 0.5), 0.5 + d, ["how_to"] * d.size, samples=SAMPLES, margin=0.005,
                          rule=STRATA_DIRECTIONS)[0]
    assert tight.direction == UNCLEAR and tight.margin == 0.005


def test_a_stratum_that_did_not_move_is_untouched_only_with_enough_queries():
    # 40 queries that all stayed put: a tenth of the stratum's queries could still move by up to 1
    # unseen (0.9^40 = 1.5%), so the interval is about +/-0.09: not shown within 0.02.
    few = stratum_table(np.full(40, 0.5), np.full(40, 0.5), ["s"] * 40, samples=SAMPLES, rule=STRATA_DIRECTIONS)[0]
    assert few.direction == UNCLEAR and few.bound_high == pytest.approx(1 - 0.025 ** (1 / 40), abs=0.01)
    many = stratum_table(np.full(250, 0.5), np.full(250, 0.5), ["s"] * 250, samples=SAMPLES, rule=STRATA_DIRECTIONS)[0]
    assert many.direction == UNTOUCHED
    # A stratum's own run-to-run noise band, when larger than the margin, is the bar.
    banded = stratum_table(np.full(100, 0.5), np.full(100, 0.5), ["s"] * 100, noise_threshold=0.05,
                           samples=SAMPLES, rule=STRATA_DIRECTIONS)[0]
    assert banded.direction == UNTOUCHED and banded.decided_by == "noise band"


# --------------------------------------------------------------------------- problem 2: the mean, not the sign


def test_eight_small_losses_are_no_longer_damaged():
    # Under a skewed null (10% of queries gain 0.6-1.0, the rest lose a little: mean 0) eight
    # queries miss every gain 43% of the time; their eight small losses gave the exact sign-flip
    # p = 2/256 and "damaged". The mean is not shown below zero.
    d = -np.linspace(0.01, 0.05, 8)
    row = stratum_table(np.full(8, 0.5), 0.5 + d, ["tail"] * 8, samples=SAMPLES, rule=STRATA_DIRECTIONS)[0]
    assert row.p_randomization == pytest.approx(2 / 256)
    assert row.direction != DAMAGED and row.direction == UNCLEAR
    assert row.p_bound > 0.5 and row.bound_high > 0


def test_a_real_strong_damage_is_still_damaged():
    d = -np.random.default_rng(2).uniform(0.1, 0.3, 30)
    row = stratum_table(np.full(30, 0.6), 0.6 + d, ["navigational"] * 30, samples=SAMPLES, rule=STRATA_DIRECTIONS)[0]
    assert row.direction == DAMAGED and row.decided_by == "bounded-mean test"
    assert row.bound_high < 0 and row.p_holm < 0.05
    up = stratum_table(np.full(30, 0.3), 0.3 - d, ["navigational"] * 30, samples=SAMPLES, rule=STRATA_DIRECTIONS)[0]
    assert up.direction == IMPROVED and up.bound_low > 0


def test_skewed_null_strata_are_rarely_labelled():
    # 300 strata of 8 queries drawn from the skewed null (mean exactly 0): the old rule labelled
    # about 43% of them damaged; the bounded-mean test labels none here (its level is 5%).
    rng = np.random.default_rng(21)
    loss = 0.08 / 0.9
    labelled = 0
    for _ in range(300):
        gain = rng.random(8) < 0.10
        d = np.where(gain, rng.uniform(0.6, 1.0, 8), -rng.uniform(loss - 0.04, loss + 0.04, 8))
        labelled += bounded_mean_test(d, 500, 7, alpha=STRATA_ALPHA).p_value < 0.05
    assert labelled <= 3


def test_the_bounded_mean_test_is_seeded_and_shape_free():
    rng = np.random.default_rng(1)
    d = rng.uniform(-0.3, 0.1, 37)
    first = bounded_mean_test(d, SAMPLES, 7, alpha=STRATA_ALPHA)
    assert bounded_mean_test(d, SAMPLES, 7, alpha=STRATA_ALPHA) == first  # bit for bit
    assert bounded_mean_test(rng.permutation(d), SAMPLES, 7,
                             alpha=STRATA_ALPHA) == first  # the query order does not matter
    assert bounded_mean_test(d, SAMPLES, 8, alpha=STRATA_ALPHA) != first
    assert first.low < d.mean() < first.high
    assert first.p_value == pytest.approx(min(1.0, 2 * min(first.p_damaged, first.p_improved)))
    # Nothing moved: symmetric interval, p = 1.
    still = bounded_mean_test(np.zeros(10), SAMPLES, 7, alpha=STRATA_ALPHA)
    assert still.low == pytest.approx(-still.high) and still.p_value == 1.0
    # A value outside [-1, 1] (a measure that is not in [0, 1]) widens the bounds to the sample's.
    wide = bounded_mean_test(np.array([-3.0, 0.0, 0.1]), SAMPLES, 7, alpha=STRATA_ALPHA)
    assert wide.low >= -3.0 and wide.high <= 1.0
    with pytest.raises(ValueError):
        bounded_mean_test(np.array([]), SAMPLES, 7, alpha=STRATA_ALPHA)
    with pytest.raises(ValueError):
        bounded_mean_test(np.array([0.1, math.nan]), SAMPLES, 7, alpha=STRATA_ALPHA)


def test_the_block_size_never_changes_a_number(monkeypatch):
    d = np.random.default_rng(3).uniform(-0.5, 0.5, 23)
    whole = bounded_mean_test(d, 1000, 7, alpha=STRATA_ALPHA)
    monkeypatch.setattr(strata_module, "MAX_BLOCK_DRAWS", 24 * 7)  # blocks of 7 rows
    assert bounded_mean_test(d, 1000, 7, alpha=STRATA_ALPHA) == whole
    monkeypatch.setattr(strata_module, "MAX_BLOCK_DRAWS", 1)  # one row at a time
    assert bounded_mean_test(d, 1000, 7, alpha=STRATA_ALPHA) == whole


# --------------------------------------------------------------------------- the report block


def per_query(qids, values, metric="nDCG@10"):
    return PerQuery(query_ids=tuple(qids), values={metric: np.asarray(values, dtype=np.float64)},
                    missing=(), extra=(), no_relevant=(), ties={}, rel=1)


def test_the_reports_traffic_shares_sum_to_one_and_the_block_reads_as_schema():
    # Five parts: damaged, improved, untouched, unclear and a stratum not measured on this subset.
    rng = np.random.default_rng(5)
    parts = {"navigational": -rng.uniform(0.1, 0.3, 60), "entity_attribute": rng.uniform(0.1, 0.3, 60),
             "how_to": inside_the_margin(300), "tail": beyond_the_margin_across_zero()}
    shares = {"navigational": 0.2, "entity_attribute": 0.15, "how_to": 0.31, "tail": 0.26, "migration": 0.08}
    labels = [s for s, d in parts.items() for _ in d]
    d = np.concatenate(list(parts.values()))
    base = np.full(d.size, 0.5)
    qids = [f"q{i:04d}" for i in range(d.size)]
    spec = StrataSpec(shares=shares, source="SHARES.yml")
    typed = strata_section(per_query(qids, base), per_query(qids, base + d), "nDCG@10", dict(zip(qids, labels)),
                           spec, samples=SAMPLES, margin=0.02, rule=STRATA_DIRECTIONS)
    section = typed.to_dict()
    assert [(s["stratum"], s["direction"]) for s in section["strata"]] == [
        ("navigational", "damaged"), ("entity_attribute", "improved"), ("how_to", "untouched"),
        ("tail", "unclear"), ("migration", "not_measured")]
    t = section["traffic"]
    parts_of = ("damaged", "improved", "untouched", "unclear", "unmeasured")
    assert math.fsum(t[k] for k in parts_of) == pytest.approx(1.0)
    assert sum(t["percent"].values()) == 100 and set(t["percent"]) == set(parts_of)
    assert t["percent"] == {"damaged": 20, "improved": 15, "untouched": 31, "unclear": 26, "unmeasured": 8}
    assert t["sentence"] == ("20% of traffic damaged (navigational), 15% improved (entity_attribute), "
                             "31% untouched, 26% unclear, 8% not measured (migration)")
    assert sum(t["counts"][k] for k in ("improved", "damaged", "untouched", "unclear")) == t["counts"]["total"]
    assert all(s["margin"] == 0.02 for s in section["strata"])
    # The block is what the schema says (the typed spine reads it back key for key).
    block = json.loads(json.dumps(section, allow_nan=False))
    record = Report.from_dict({"schema_version": "1.6", "command": "compare", "metric": "nDCG@10",
                               "inputs": {}, "tool": {"name": "retrieval-gate", "version": "0"},
                               "strata": block["strata"], "traffic": block["traffic"]})
    assert record.traffic.unclear == pytest.approx(0.26) and record.strata[3].direction == "unclear"
    # The verdict's rules read the rows' direction and p_holm: a damaged row carries a Holm p.
    from gate.verdict.rules import traffic_findings

    findings = traffic_findings(typed)
    assert findings["damaged_traffic"] == pytest.approx(0.2) and findings["damaged_strata"] == ("navigational",)


def test_the_margin_reaches_the_table_from_strata_section():
    d = inside_the_margin(300)
    qids = [f"q{i:04d}" for i in range(d.size)]
    base = np.full(d.size, 0.5)
    strata = {q: "how_to" for q in qids}
    loose = strata_section(per_query(qids, base), per_query(qids, base + d), "nDCG@10", strata, samples=SAMPLES,
                           rule=STRATA_DIRECTIONS).to_dict()
    tight = strata_section(per_query(qids, base), per_query(qids, base + d), "nDCG@10", strata, samples=SAMPLES,
                           margin=0.001, rule=STRATA_DIRECTIONS).to_dict()
    assert loose["strata"][0]["direction"] == "untouched" and loose["strata"][0]["margin"] == 0.02
    assert tight["strata"][0]["direction"] == "unclear" and tight["strata"][0]["margin"] == 0.001
