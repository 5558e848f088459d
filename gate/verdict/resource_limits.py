"""The latency and cost limits (``policy.latency.p95_max_increase``, ``policy.cost.max_increase``).

A limit is judged as the metric is: it is breached only when the increase is beyond the noise
band's latency threshold AND the paired bootstrap interval's lower end is above the limit, i.e.
the increase over the limit is shown, not merely possible. A latency limit needs the band's
latency spread: the interval resamples queries, and cannot see a whole run measured slower (a
busier machine, another runner), which is most of a measured latency's noise; on populations with
15% run-level drift the interval alone failed 9.5% of identical pairs at a +10% limit, with a
band 3% (docs: The verdict & policy). Without one the limit is a note, not judged. A limit set
while a side has no timings is a note too, never a fail and never a crash. Cost has no band: a
run's cost does not drift with the machine.
"""

from __future__ import annotations

from dataclasses import dataclass

from gate.common.numbers import fixed, signed
from gate.inputs.config import IncreaseLimit, Policy
from gate.statistics.latency import Change, Resources, cost_missing
from gate.verdict.reasons import Reason


@dataclass(frozen=True)
class ResourceFinding:
    """A resource's change on the reporting set (the p95 latency, or the mean cost per query),
    the noise band's threshold for it (None: no band measured one), or why there is none."""

    change: Change | None
    band_threshold: float | None = None
    missing: str | None = None  # "the candidate run has no timings", when change is None


def latency_breached(change: Change, band_threshold: float | None, limit: IncreaseLimit) -> bool | None:
    """:func:`breached` for the p95 latency; None (not judged) without the band's latency spread."""
    return None if band_threshold is None else breached(change, band_threshold, limit)


def breached(change: Change, band_threshold: float | None, limit: IncreaseLimit) -> bool:
    """The increase over ``limit`` is shown: beyond the band and the interval's lower end above it."""
    beyond_band = band_threshold is None or change.change > band_threshold
    low = change.relative_ci_low if limit.relative else change.ci_low
    return beyond_band and low is not None and low > limit.value


def _shown(change: Change, unit: str, digits: int) -> str:
    relative = "" if change.relative is None else f" ({change.relative:+.0%})"
    return (f"{fixed(change.baseline, digits)} → {fixed(change.candidate, digits)}{unit}: "
            f"{signed(change.change, digits)}{unit}{relative} [{signed(change.ci_low, digits)}, "
            f"{signed(change.ci_high, digits)}{unit}]")


def resource_failures(latency: ResourceFinding | None, cost: ResourceFinding | None, policy: Policy) -> list[Reason]:
    """The reasons a latency or cost increase shown beyond its limit fails the change."""
    out: list[Reason] = []
    latency_limit, cost_limit = policy.latency.p95_max_increase, policy.cost.max_increase
    if latency_limit is not None and latency is not None and latency.change is not None \
            and latency_breached(latency.change, latency.band_threshold, latency_limit):
        out.append(Reason("latency_increase", f"p95 latency rose beyond its limit ({_shown(latency.change, ' ms', 1)})",
                          limit=f"+{latency_limit.text()} (policy.latency.p95_max_increase)"))
    if cost_limit is not None and cost is not None and cost.change is not None \
            and breached(cost.change, cost.band_threshold, cost_limit):
        out.append(Reason("cost_increase", f"cost per query rose beyond its limit ({_shown(cost.change, '', 6)})",
                          limit=f"+{cost_limit.text()} (policy.cost.max_increase)"))
    return out


def resource_notes(latency: ResourceFinding | None, cost: ResourceFinding | None, policy: Policy) -> list[str]:
    """A limit that cannot be judged for want of timings or costs: said beside the verdict."""
    notes = []
    if policy.latency.p95_max_increase is not None and (latency is None or latency.change is None):
        why = "no run has timings" if latency is None or latency.missing is None else latency.missing
        notes.append(f"latency limit set (policy.latency.p95_max_increase), but {why}: not judged")
    elif policy.latency.p95_max_increase is not None and latency is not None and latency.band_threshold is None:
        notes.append("latency limit set (policy.latency.p95_max_increase), but the noise band has no latency "
                     "spread (measure it from runs with timings: retrieval-gate noise): not judged")
    if policy.cost.max_increase is not None and (cost is None or cost.change is None):
        why = "no run has costs" if cost is None or cost.missing is None else cost.missing
        notes.append(f"cost limit set (policy.cost.max_increase), but {why}: not judged")
    return notes


def resource_findings(resources: Resources | None) -> tuple[ResourceFinding | None, ResourceFinding | None]:
    """The p95 latency's and the mean cost's change as :class:`gate.verdict.rules.Findings` takes
    them (``latency``, ``cost``): None where neither run has timings."""
    if resources is None or (resources.baseline is None and resources.candidate is None):
        return None, None
    latency = resources.latency
    cost = resources.cost
    return (ResourceFinding(None if latency is None else latency.p95, resources.band_threshold_ms,
                            None if latency is not None else resources.note),
            ResourceFinding(None if cost is None else cost.mean, None,
                            None if cost is not None else cost_missing(resources)))
