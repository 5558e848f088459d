"""Latency and cost limits: breached only when the increase over the limit is shown (beyond the noise
band, the interval's lower end above the limit); a limit without timings is a note, never a fail."""

from __future__ import annotations

import math

import pytest

from gate.inputs.config import CostPolicy, IncreaseLimit, LatencyPolicy, Policy
from gate.statistics.latency import Change
from gate.verdict.resource_limits import ResourceFinding, breached, latency_breached
from gate.verdict.rules import Findings, decide


def _change(base=10.0, cand=14.0, low=3.0, high=5.0) -> Change:
    return Change(base, cand, cand - base, low, high, (cand - base) / base, low / base, high / base)


def _findings(**kw) -> Findings:
    return Findings(metric="nDCG@10", query_count=100, delta=0.0, ci_low=-0.01, ci_high=0.01, mde=0.02,
                    noise_threshold=0.01, **kw)


def _policy(latency: str | None = None, cost: IncreaseLimit | None = None) -> Policy:
    limit = None
    if latency is not None:
        limit = (IncreaseLimit(float(latency[:-1]) / 100, True) if latency.endswith("%")
                 else IncreaseLimit(float(latency[:-2]), False, "ms"))
    return Policy(mode="regression", decision="interval", latency=LatencyPolicy(p95_max_increase=limit),
                  cost=CostPolicy(max_increase=cost))


@pytest.mark.parametrize("limit, band, expected", [
    ("20%", 0.5, True),   # lower end +30% > 20%
    ("30%", 0.5, False),  # lower end +30% is not above 30%
    ("2ms", 0.5, True),   # lower end +3 ms > 2 ms
    ("3ms", 0.5, False),
    ("20%", 4.0, False),   # +4 ms is within a 4 ms band: run-to-run spread, not shown
    ("20%", 3.9, True),
])
def test_a_limit_is_breached_only_when_the_increase_over_it_is_shown(limit, band, expected):
    policy = _policy(limit)
    assert latency_breached(_change(), band, policy.latency.p95_max_increase) is expected
    verdict = decide(_findings(latency=ResourceFinding(_change(), band)), policy)
    codes = [r.code for r in verdict.reasons]
    assert ("latency_increase" in codes) is expected
    assert verdict.kind == ("fail" if expected else "pass")
    assert verdict.exit_code == (1 if expected else 0)


def test_a_latency_limit_without_the_bands_latency_spread_is_a_note_not_judged():
    # The interval resamples queries; a whole run measured on a busier machine is beyond it. The
    # breaker's populations with 15% run-level drift: 9.5% of identical pairs failed a +10% limit
    # on the interval alone, 3% with a band.
    far_beyond = _change(cand=100.0, low=80.0, high=95.0)
    assert latency_breached(far_beyond, None, _policy("20%").latency.p95_max_increase) is None
    verdict = decide(_findings(latency=ResourceFinding(far_beyond, None)), _policy("20%"))
    assert verdict.kind == "pass" and "latency_increase" not in [r.code for r in verdict.reasons]
    notes = [r.message for r in verdict.reasons if r.code == "warning"]
    assert notes == ["latency limit set (policy.latency.p95_max_increase), but the noise band has no latency "
                     "spread (measure it from runs with timings: retrieval-gate noise): not judged"]
    # Cost has no band: a run's cost does not drift with the machine.
    assert breached(_change(base=0.001, cand=0.002, low=0.0008, high=0.0012), None, IncreaseLimit(0.0005, False))


def test_the_reason_quotes_the_change_and_names_the_limit():
    verdict = decide(_findings(latency=ResourceFinding(_change(), 0.5)), _policy("20%"))
    (reason,) = [r for r in verdict.reasons if r.code == "latency_increase"]
    assert reason.limit == "+20% (policy.latency.p95_max_increase)"
    assert "10.0 → 14.0 ms" in reason.message and "+4.0 ms (+40%)" in reason.message


def test_a_cost_limit_per_query_and_relative():
    rose = ResourceFinding(_change(base=0.001, cand=0.002, low=0.0008, high=0.0012))
    assert [r.code for r in decide(_findings(cost=rose), _policy(cost=IncreaseLimit(0.0005, False))).reasons
            if r.code == "cost_increase"]
    assert not [r.code for r in decide(_findings(cost=rose), _policy(cost=IncreaseLimit(1.0, True))).reasons
                if r.code == "cost_increase"]


def test_a_limit_without_timings_is_a_note_not_a_fail():
    missing = ResourceFinding(None, missing="the candidate run has no timings")
    verdict = decide(_findings(latency=missing), _policy("20%"))
    assert verdict.kind == "pass"
    notes = [r.message for r in verdict.reasons if r.code == "warning"]
    assert notes == ["latency limit set (policy.latency.p95_max_increase), but the candidate run has no timings: "
                     "not judged"]
    assert [r.code for r in decide(_findings(), _policy(cost=IncreaseLimit(1.0, True))).reasons] == \
        ["no_regression_shown", "warning"]


def test_without_limits_timings_decide_nothing():
    verdict = decide(_findings(latency=ResourceFinding(_change(cand=1000.0, low=900, high=1100))), _policy())
    assert [r.code for r in verdict.reasons] == ["no_regression_shown"]


def test_a_zero_baseline_cannot_breach_a_relative_limit():
    zero = Change(0.0, 5.0, 5.0, 4.0, 6.0, None, None, None)
    assert not breached(zero, None, IncreaseLimit(0.2, True))
    assert breached(zero, None, IncreaseLimit(1.0, False, "ms"))
    assert not math.isnan(zero.change)
