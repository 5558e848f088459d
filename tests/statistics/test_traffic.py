"""Traffic accounting (gate.statistics.traffic) and the report block (gate.statistics.movement.strata_section)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gate.common.errors import InputError
from gate.evaluation.evaluate import PerQuery
from gate.inputs.traffic_shares import StrataSpec
from gate.statistics.bootstrap import stratified_bootstrap_weighted
from gate.statistics.movement import strata_section
from gate.statistics.strata import stratum_table
from gate.statistics.traffic import round_percentages, traffic_account, traffic_sentence, wins_sentence
from gate.verdict.directions import STRATA_DIRECTIONS
from tests.statistics.test_strata import SHARES, seed_arrays

SAMPLES = 2000
SEED_SENTENCE = ("40% of traffic damaged (navigational, error_string), "
                 "21% improved (entity_attribute, migration), 39% untouched")


def account(base, cand, labels, shares=SHARES, **kw):
    rows = stratum_table(base, cand, labels, shares=shares, samples=SAMPLES, seed=7, **kw, rule=STRATA_DIRECTIONS)
    return rows, traffic_account(rows, cand - base, labels, samples=SAMPLES, seed=7)


def test_seed_example_40_21_39():
    base, cand, labels = seed_arrays()
    rows, t = account(base, cand, labels, guarded=("navigational", "error_string"))
    assert t.damaged == pytest.approx(0.40)
    assert t.improved == pytest.approx(0.21)
    assert t.untouched == pytest.approx(0.39)
    assert t.unclear == 0.0 and t.unmeasured == 0.0
    assert t.improved + t.damaged + t.untouched + t.unclear + t.unmeasured == pytest.approx(1.0)
    assert t.percents == {"damaged": 40, "improved": 21, "untouched": 39, "unclear": 0, "unmeasured": 0}
    assert t.sentence == SEED_SENTENCE
    assert t.strata["damaged"] == ("navigational", "error_string")
    assert t.strata["untouched"] == ("how_to", "tail")
    # Query counts per direction add up to the total.
    assert t.counts == {"improved": 220, "damaged": 270, "untouched": 550, "unclear": 0, "total": 1040}
    assert sum(t.counts[k] for k in ("improved", "damaged", "untouched", "unclear")) == t.counts["total"]
    # The wins-only guard: 495 of 1040 improved, yet the mean fell.
    assert t.unweighted_delta < 0
    assert t.wins == 495 and t.losses == 545 and t.ties == 0
    assert t.wins_sentence.startswith("495 of 1040 queries improved although the mean fell")
    assert t.guarded_damaged == ("navigational", "error_string")


def test_weighted_delta_is_the_stratified_bootstrap():
    base, cand, labels = seed_arrays()
    rows, t = account(base, cand, labels)
    d = cand - base
    lab = np.asarray(labels)
    by_hand = sum(SHARES[s] * d[lab == s].mean() for s in SHARES)
    assert t.weighted_delta == pytest.approx(by_hand)
    est = stratified_bootstrap_weighted(d, labels, SHARES, SAMPLES, 7)
    assert (t.weighted_delta, t.weighted_ci_low, t.weighted_ci_high) == tuple(est)
    assert t.weighted_ci_low < t.weighted_delta < t.weighted_ci_high
    assert t.unweighted_delta == pytest.approx(d.mean())
    # Weighted by traffic the loss is larger: the damaged strata carry 40% of traffic.
    assert t.weighted_delta < t.unweighted_delta


def test_unmeasured_stratum_on_a_subset():
    base, cand, labels = seed_arrays()
    keep = [i for i, s in enumerate(labels) if s != "tail"]
    sub = [labels[i] for i in keep]
    rows, t = account(base[keep], cand[keep], sub)
    assert t.unmeasured == pytest.approx(0.08)
    assert t.untouched == pytest.approx(0.31)
    assert t.improved + t.damaged + t.untouched + t.unclear + t.unmeasured == pytest.approx(1.0)
    assert t.strata["unmeasured"] == ("tail",)
    assert t.sentence == SEED_SENTENCE.replace("39% untouched", "31% untouched, 8% not measured (tail)")
    assert t.counts["total"] == 790
    assert sum(t.counts[k] for k in ("improved", "damaged", "untouched", "unclear")) == 790
    # The weighted delta speaks for the measured strata (weights renormalised).
    d = cand[keep] - base[keep]
    lab = np.asarray(sub)
    measured = {s: v for s, v in SHARES.items() if s != "tail"}
    expected = sum(v * d[lab == s].mean() for s, v in measured.items()) / sum(measured.values())
    assert t.weighted_delta == pytest.approx(expected)


def test_sentences_and_rounding():
    thirds = round_percentages({"a": 1 / 3, "b": 1 / 3, "c": 1 / 3, "d": 0.0})
    assert sum(thirds.values()) == 100 and thirds == {"a": 34, "b": 33, "c": 33, "d": 0}
    assert round_percentages({"a": 0.58, "b": 0.42}) == {"a": 58, "b": 42}
    assert traffic_sentence({"damaged": 0, "improved": 0, "untouched": 100}, {}) == \
        "0% of traffic damaged, 0% improved, 100% untouched"
    # The unclear part is said whenever a stratum is unclear (it is never untouched traffic).
    assert traffic_sentence({"damaged": 0, "improved": 0, "untouched": 40, "unclear": 60},
                            {"unclear": ("a",)}) == "0% of traffic damaged, 0% improved, 40% untouched, 60% unclear"
    assert traffic_sentence({"damaged": 10, "improved": 0, "untouched": 0, "unclear": 82, "unmeasured": 8},
                            {"damaged": ("a",), "unclear": ("b",), "unmeasured": ("c",)}) == \
        "10% of traffic damaged (a), 0% improved, 0% untouched, 82% unclear, 8% not measured (c)"
    assert wins_sentence(61, 79, 0, -0.01) == \
        "61 of 140 queries improved although the mean fell (79 worse, 0 unchanged)"
    assert wins_sentence(3, 1, 0, 0.2).startswith("3 of 4 queries improved and the mean rose")
    assert wins_sentence(1, 0, 0, 0.1).startswith("1 of 1 query improved")
    assert "did not move" in wins_sentence(1, 1, 0, 0.0)


def test_queries_without_a_stratum_are_counted_apart():
    base = np.zeros(4)
    cand = np.array([0.1, 0.2, 0.3, -0.1])
    labels = ["a", "a", None, "b"]
    rows, t = account(base, cand, labels, shares={"a": 0.5, "b": 0.5})
    assert t.counts == {"improved": 0, "damaged": 0, "untouched": 0, "unclear": 3, "total": 4, "unassigned": 1}


def test_bad_input():
    base, cand, labels = seed_arrays()
    rows = stratum_table(base, cand, labels, samples=100, rule=STRATA_DIRECTIONS)  # no shares
    with pytest.raises(ValueError, match="no traffic share"):
        traffic_account(rows, cand - base, labels)
    rows = stratum_table(base, cand, labels, shares={**SHARES, "tail": 0.1}, samples=100, rule=STRATA_DIRECTIONS)
    with pytest.raises(ValueError, match="sum to"):
        traffic_account(rows, cand - base, labels)


# --------------------------------------------------------------------------- report block


def per_query(qids, values, metric="nDCG@10"):
    return PerQuery(query_ids=tuple(qids), values={metric: np.asarray(values, dtype=np.float64)},
                    missing=(), extra=(), no_relevant=(), ties={}, rel=1)


def test_strata_section_api():
    base, cand, labels = seed_arrays()
    qids = [f"q{i:03d}" for i in range(len(base))]
    spec = StrataSpec(shares=dict(SHARES), guarded=("navigational", "error_string"), source="SHARES.yml")
    section = strata_section(per_query(qids, base), per_query(qids, cand), "nDCG@10",
                             dict(zip(qids, labels)), spec, samples=SAMPLES, seed=7,
                             rule=STRATA_DIRECTIONS).to_dict()
    traffic = section["traffic"]
    for key in ("improved", "damaged", "untouched", "unclear", "unmeasured", "weighted_delta", "weighted_ci_low",
                "weighted_ci_high", "sentence", "counts"):
        assert key in traffic
    assert traffic["sentence"] == SEED_SENTENCE
    assert (traffic["damaged"], traffic["improved"], traffic["untouched"]) == pytest.approx((0.40, 0.21, 0.39))
    assert traffic["guarded_damaged"] == ["navigational", "error_string"]
    assert [s["stratum"] for s in section["strata"]] == list(SHARES)
    assert section["strata"][0]["direction"] == "damaged" and section["strata"][0]["guarded"] is True
    assert section["wins_sentence"].startswith("495 of 1040 queries improved although the mean fell")
    assert section["lift"] is None and section["unassigned"] == 0
    # JSON-ready: no NaN or infinity anywhere.
    import json
    json.dumps(section, allow_nan=False)


def test_strata_section_subset_and_errors():
    base, cand, labels = seed_arrays()
    qids = [f"q{i:03d}" for i in range(len(base))]
    spec = StrataSpec(shares=dict(SHARES), source="SHARES.yml", lines={"tail": 7}, shares_line=1)
    keep = [i for i, s in enumerate(labels) if s not in ("tail", "migration")]
    sub = [qids[i] for i in keep]
    section = strata_section(per_query(sub, base[keep]), per_query(sub, cand[keep]), "nDCG@10",
                             dict(zip(qids, labels)), spec, samples=SAMPLES, rule=STRATA_DIRECTIONS).to_dict()
    empty = [s for s in section["strata"] if s["n"] == 0]
    assert [s["stratum"] for s in empty] == ["migration", "tail"]
    assert all(s["label"] == "n = 0, not measured" for s in empty)
    assert section["traffic"]["unmeasured"] == pytest.approx(0.14)
    assert math.fsum(section["traffic"][k] for k in ("improved", "damaged", "untouched", "unclear", "unmeasured")) \
        == pytest.approx(1.0)
    # A query whose stratum has no share is an error on the shares file.
    with pytest.raises(InputError) as caught:
        strata_section(per_query(qids, base), per_query(qids, cand), "nDCG@10",
                       {**dict(zip(qids, labels)), "q000": "other"}, spec, samples=100, rule=STRATA_DIRECTIONS)
    assert str(caught.value) == "SHARES.yml:1: stratum 'other' has 1 queries but no share"
    # Without shares: the table from the query file's strata, no traffic.
    plain = strata_section(per_query(qids, base), per_query(qids, cand), "nDCG@10",
                           dict(zip(qids, labels)), samples=100, rule=STRATA_DIRECTIONS).to_dict()
    assert plain["traffic"] is None and len(plain["strata"]) == 6
    assert all(s["share"] is None for s in plain["strata"])
