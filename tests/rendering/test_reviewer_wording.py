"""Numbers a reviewer reads right (issue 31): the noise band is 'exceeded' only by a delta whose
interval excludes zero, the decision interval the reasons quote is explained beside them, and
the verdict's reasons carry the mode's own words."""

from __future__ import annotations

from gate.statistics.band import BandStatus, band_sentence
from gate.statistics.noise import NoiseBand, spread
from tests.rendering.test_comment_render import (
    full_report,  # noqa: E402
    headline,
    render_comment,
)


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
                                                   "decision interval [-0.058, +0.051], 118 of 131 queries moved)",
         "decision_interval": [-0.058, 0.051]}]}
    report["decision"] = {"rule": "calibrated", "mode": "regression"}
    body = render_comment(report)
    assert "the decision interval is a studentized (bootstrap-t) interval of the same resamples" in body
    assert "with at least 5 queries moved." in body and "Hall" not in body
    report["decision"]["mode"] = "non-inferiority"
    assert "(non-inferiority: Hall's skew-corrected interval too)" in render_comment(report)
    # a report whose reasons do not quote it (the seed's interval rule) carries no explanation
    report["verdict"]["reasons"][0] = {"code": "no_regression_shown",
                                       "message": "no regression shown (nDCG@10 -0.009 [-0.061, +0.045], 131 queries)"}
    assert "decision interval is" not in render_comment(report)


def test_the_headline_names_the_regression_modes_pass():
    report = full_report(judged=None)
    report["verdict"] = {"kind": "pass", "improvement_shown": False, "exit_code": 0, "reasons": [
        {"code": "no_regression_shown", "message": "no regression shown (x, 140 queries)"}]}
    assert headline(report).startswith("✅ pass — no regression shown — nDCG@10")


def test_an_underpowered_verdict_quotes_the_power_lines_figure_not_a_second_one(tmp_path):
    """The reason, the headline and the power line give one figure for what the set can catch
    (the power line's one-sided t), not the normal-approximation MDE beside it (0.050 vs 0.051)."""
    import json

    import numpy as np

    import gate
    from gate.pipeline.compare import CompareSettings

    rng = np.random.default_rng(5)
    ranks = {"base": rng.integers(1, 4, 43), "cand": rng.integers(1, 4, 43)}
    for name, where in ranks.items():
        lines = []
        for q, rank in enumerate(where):
            docs = [f"d{i}" for i in range(1, 10)]
            docs.insert(int(rank) - 1, "rel")
            lines += [f"q{q} Q0 {d} {i} {100 - i} {name}" for i, d in enumerate(docs, 1)]
        (tmp_path / f"{name}.run").write_text("\n".join(lines) + "\n")
    (tmp_path / "qrels.txt").write_text("".join(f"q{q} 0 rel 1\n" for q in range(43)))
    result = gate.compare(str(tmp_path / "base.run"), str(tmp_path / "cand.run"), str(tmp_path / "qrels.txt"),
                          settings=CompareSettings(samples=2000), mode="non-inferiority")
    report = json.loads(result.to_json())
    power = report["power"]
    decision = report["decision"]
    (reason,) = [r for r in decision["reasons"] if r["code"] == "underpowered"]
    figure = f"{power['regression_80']:.3f}"
    assert f"this set catches a -{figure} regression 80% of the time" in reason["message"]
    assert "minimum detectable effect" not in reason["message"]
    # the comment of a run with this decision
    report["verdict"] = {"kind": decision["kind"], "reasons": decision["reasons"], "improvement_shown": False,
                         "exit_code": decision["exit_code"]}
    assert f"−{figure} regression is caught 80% of the time" in headline(report)
    paired_line = next(line for line in render_comment(report).splitlines() if line.startswith("Paired over"))
    assert "minimum detectable effect" not in paired_line
