"""Numbers a reviewer reads right (issue 31): the noise band is 'exceeded' only by a delta whose
interval excludes zero, the decision interval the reasons quote is explained beside them, and
the verdict's reasons carry the mode's own words."""

from __future__ import annotations

from tests.test_comment_render import headline, render_comment
from gate.statistics.band import BandStatus, band_sentence
from gate.statistics.noise import NoiseBand, spread
from tests.test_comment_render import full_report  # noqa: E402


def _status():
    band = NoiseBand(metric="nDCG@10", runs=5, overall=spread([0.531, 0.533, 0.536, 0.532, 0.530]), strata={},
                     unstable=(), query_count=140)
    return BandStatus(band, "current", "current")


def test_a_delta_above_the_band_with_an_interval_across_zero_does_not_exceed_it():
    status = _status()
    threshold = status.band.threshold
    exceeded, words = band_sentence(-3 * threshold, status, "cmd", (-0.061, 0.045))
    assert exceeded is True and words.startswith("|Δ| is above the noise band")
    assert "its interval crosses zero: not shown to exceed it" in words and "exceeds" not in words
    exceeded, words = band_sentence(-3 * threshold, status, "cmd", (-0.061, -0.01))
    assert words.startswith("exceeds the noise band")
    assert band_sentence(threshold / 2, status, "cmd", (-0.01, 0.02))[1].startswith("within the noise band")


def test_the_decision_interval_is_explained_where_the_reasons_quote_it():
    report = full_report()
    report["verdict"] = {"kind": "pass", "improvement_shown": False, "exit_code": 0, "reasons": [
        {"code": "no_regression_shown", "message": "no regression shown (nDCG@10 -0.009 [-0.061, +0.045], "
                                                   "decision interval [-0.058, +0.051], 118 of 131 queries moved)"}]}
    report["decision"] = {"rule": "calibrated", "mode": "regression"}
    body = render_comment(report)
    assert "the decision interval is a studentized (bootstrap-t) interval of the same resamples" in body
    assert "with at least 5 queries moved." in body and "Hall" not in body
    report["decision"]["mode"] = "non-inferiority"
    assert "(non-inferiority: Hall's skew-corrected interval too)" in render_comment(report)
    # a report whose reasons do not quote it (the seed's interval rule) carries no explanation
    report["verdict"]["reasons"][0]["message"] = "no regression shown (nDCG@10 -0.009 [-0.061, +0.045], 131 queries)"
    assert "decision interval is" not in render_comment(report)


def test_the_headline_names_the_regression_modes_pass():
    report = full_report(judged=None)
    report["verdict"] = {"kind": "pass", "improvement_shown": False, "exit_code": 0, "reasons": [
        {"code": "no_regression_shown", "message": "no regression shown (x, 140 queries)"}]}
    assert headline(report).startswith("✅ pass — no regression shown — nDCG@10")
