"""The report, made once: :func:`build_report` turns what ``run`` found (a :class:`GateRun`, the
typed records each stage returned) into the typed report (:class:`gate.report.spine.Report`);
:func:`build_compare_report` does the same for ``compare`` (a :class:`CompareRun`).

``run``'s steps (:mod:`gate.pipeline.run`) and the pull-request path
(:mod:`gate.pipeline.pull_request`) only collect records; nothing writes into a report while the
gate runs. Here each record becomes its section of report.json, the report is held to the
schema once, and built once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from gate import __version__
from gate.checks.commensurability import ResolvedBaseline
from gate.checks.score_order import ScoreOrder
from gate.checks.validity import ReportingSet, Validity
from gate.common.numbers import finite_or_none
from gate.evaluation.evaluate import PerQuery
from gate.inputs.anchoring import MappedSides
from gate.inputs.config import IncreaseLimit
from gate.inputs.manifest import CorpusRecord, InputRecord
from gate.inputs.retrieval_config import ConfigChange
from gate.inputs.universe import Universe
from gate.report import spine
from gate.report.document import SCHEMA_VERSION, report_record
from gate.report.judgments_section import judgments_section
from gate.report.resource_sections import resource_sections
from gate.report.spine import Report
from gate.report.typed import ABSENT
from gate.runs.code import CodeIdentity
from gate.statistics import repeats as rep
from gate.statistics.attribution import AttributionResult, GridRefused
from gate.statistics.band import BandStatus, TieFloor, band_sentence
from gate.statistics.comparison import Comparison
from gate.statistics.evidence import Evidence
from gate.statistics.latency import Resources
from gate.statistics.movement import StrataSection
from gate.statistics.paired import PairedComparison
from gate.statistics.power import Detectable
from gate.verdict.levels import ALPHA, MIN_MOVERS
from gate.verdict.reasons import Reason
from gate.verdict.rules import Verdict


@dataclass(frozen=True)
class Head:
    """What the report says before any run: the suite, the metric, the candidate's config and
    the golden set's files (none of them when the stack did not run)."""

    suite: str
    metric: str
    candidate_config: tuple[str, str] | None = None  # (path as configured, sha256)
    queries: InputRecord | None = None
    qrels: InputRecord | None = None
    corpus: CorpusRecord | None = None
    candidate_code: CodeIdentity | None = None

    def sections(self) -> dict[str, Any]:
        head: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "command": "run", "suite": self.suite,
                                "metric": self.metric}
        if self.candidate_config is not None:
            head["candidate_config"] = {"path": self.candidate_config[0], "sha256": self.candidate_config[1]}
        inputs: dict[str, Any] = {}
        for name, record, unit in (("queries", self.queries, "queries"), ("qrels", self.qrels, "judgments"),
                                   ("corpus", self.corpus, "chunks")):
            if record is not None:
                inputs[name] = {"path": record.id, "sha256": record.sha256, "count": record.count, "unit": unit,
                                "canonical": True}
        head["inputs"] = inputs
        head["tool"] = {"name": "retrieval-gate", "version": __version__}
        if self.candidate_code is not None:
            head["candidate_code"] = self.candidate_code.to_dict()
        return head


@dataclass(frozen=True)
class NoBaseline:
    """No baseline to compare with: not commensurable (``differences``, what differs), or the
    stack was not run at all (``differences`` None: a skipped change, no base)."""

    description: str
    differences: tuple[Mapping[str, Any], ...] | None = None

    def section(self) -> dict[str, Any]:
        if self.differences is None:
            return {"resolution": None, "description": self.description}
        return {"resolution": None, "archived": None, "differences": [dict(d) for d in self.differences],
                "description": self.description}


@dataclass(frozen=True)
class CandidateFailure:
    """The candidate's run failed: the error and its log, paths as the report shows them."""

    error: str
    log_tail: str
    log: str | None = None


@dataclass(frozen=True)
class NoiseReading:
    """The stored noise band as a look reads it (the figures :func:`look_sections` writes)."""

    status: BandStatus
    floor: TieFloor
    calibration: Mapping[str, Any] | None
    archive_command: str  # the command that stores a band: quoted where there is none


@dataclass(frozen=True)
class Look:
    """One look's statistics: on single runs (the first), or on the per-query means of the
    candidate's runs and as many of the baseline's (the archived run and its stored repeats)."""

    runs: tuple[int, int]  # candidate runs, baseline runs
    alpha: float
    baseline: PerQuery  # on the reporting set
    candidate: PerQuery
    paired: PairedComparison
    everything: PairedComparison | None  # every judged query, when the reporting set is narrower
    band: float | None  # the noise band, scaled to the means
    d: np.ndarray  # per-query differences of the metric
    evidence: Evidence
    power: Detectable
    strata: StrataSection  # the strata section (table, traffic, movement buckets, lift)


@dataclass(frozen=True)
class GateRun:
    """Everything ``run`` found, as the stages returned it; :func:`build_report` makes the report."""

    head: Head
    verdict: Verdict
    baseline: ResolvedBaseline | NoBaseline
    golden_query_count: int = 0
    unjudged_queries: tuple[str, ...] = ()  # judged-less golden queries (left out of the universe)
    config_diff: tuple[ConfigChange, ...] | None = None
    candidate_source: str | None = None
    candidate_failure: CandidateFailure | None = None
    run_scores: Mapping[str, ScoreOrder] | None = None
    validity: Validity | None = None
    strata_by_query: Mapping[str, str | None] = field(default_factory=dict)
    look: Look | None = None  # the deciding look
    noise: NoiseReading | None = None
    decision_rule: tuple[str, str] = ("calibrated", "regression")  # policy.decision, policy.mode
    attribution: AttributionResult | GridRefused | str | None = None  # str: why no grid was made
    sweep: Mapping[str, Any] | None = None
    repeats: rep.Repeats | None = None
    warnings: tuple[str, ...] = ()  # after the validity checks' own
    elapsed_seconds: float | None = None
    # Latency and cost beside quality, and policy.latency.p95_max_increase / policy.cost.max_increase
    resources: Resources | None = None
    resource_limits: tuple[IncreaseLimit | None, IncreaseLimit | None] = (None, None)
    # Anchored judgments as mapped onto each side's chunks; None for chunk-id qrels
    judgments: MappedSides | None = None


@dataclass(frozen=True)
class PullRequestFacts:
    """What judging a pull request adds to its run's report."""

    goalposts: tuple[Any, ...] = ()
    accepted: Mapping[str, Any] | None = None
    warnings: tuple[str, ...] = ()  # after the run's
    yardstick: Mapping[str, Any] | None = None
    event: Mapping[str, Any] | None = None
    trend: Mapping[str, Any] | None = None  # the last archived baselines and the candidate (None: no archive)
    history_url: str | None = None  # history.url of the config: the comment links it


def build_report(run: GateRun, pull_request: PullRequestFacts | None = None) -> Report:
    """The typed report of ``run`` (and of the pull request it judged): made once, held to the
    schema once."""
    return report_record(_report_dict(run, pull_request))


def _report_dict(run: GateRun, pull_request: PullRequestFacts | None) -> dict[str, Any]:
    report = {**run.head.sections(), **_stack_sections(run)}
    # The validity checks' warnings first, then the run's own (attribution, sweep), then the
    # pull request's (what finding the base said).
    warnings = None if run.validity is None and not run.warnings else [
        *(run.validity.warnings if run.validity is not None else ()), *run.warnings]
    if pull_request is not None:
        report["goalposts"] = list(pull_request.goalposts)
        if pull_request.accepted:
            report["accepted"] = dict(pull_request.accepted)
        warnings = [*(warnings or []), *pull_request.warnings]
        report["yardstick"] = dict(pull_request.yardstick or {})
        if pull_request.event is not None:
            report["event"] = dict(pull_request.event)
        report["trend"] = None if pull_request.trend is None else dict(pull_request.trend)
        if pull_request.history_url is not None:
            report["history_url"] = pull_request.history_url
    if warnings is not None:
        report["warnings"] = warnings
    report["verdict"] = verdict_record(run.verdict)
    return report


def verdict_record(verdict: Verdict) -> spine.Verdict:
    """The verdict as the report holds it (the headline is added where it is rendered)."""
    return spine.Verdict(kind=verdict.kind,
                         reasons=tuple(reason_record(r) for r in verdict.reasons),
                         improvement_shown=bool(verdict.improvement_shown), exit_code=int(verdict.exit_code),
                         reporting_set=_reporting_record(verdict.reporting_set))


def _reporting_record(reporting: ReportingSet | None) -> spine.ReportingSet:
    """The queries the verdict is computed on, as the report names them (nothing for none)."""
    if reporting is None:
        return spine.ReportingSet()
    return spine.ReportingSet(
        name=reporting.name, query_count=reporting.query_count,
        excluded_leaked=ABSENT if reporting.excluded_leaked is None else reporting.excluded_leaked,
        held_out_only=ABSENT if reporting.held_out_only is None else reporting.held_out_only)


def reason_record(reason: Reason) -> spine.Reason:
    """A verdict's reason as the report holds it, its values kept apart from its message."""
    interval = reason.decision_interval
    return spine.Reason(code=reason.code, message=reason.message,
                        limit=ABSENT if reason.limit is None else reason.limit,
                        decision_interval=ABSENT if interval is None else tuple(finite_or_none(e) for e in interval))


def _stack_sections(run: GateRun) -> dict[str, Any]:
    """The sections of what the stack found, as far as it got."""
    report: dict[str, Any] = {"baseline": run.baseline.section() if isinstance(run.baseline, NoBaseline)
                              else _baseline_section(run.baseline, run.head.metric)}
    if run.config_diff is not None:
        report["config_diff"] = [change.to_dict() for change in run.config_diff]
    if run.candidate_failure is not None:
        failure = run.candidate_failure
        report["candidate"] = {"mean": None, "source": None, "error": failure.error, "log_tail": failure.log_tail}
        if failure.log is not None:
            report["candidate"]["log"] = failure.log
    if run.run_scores is not None:
        report["run_scores"] = {side: order.to_dict() for side, order in run.run_scores.items()}
    if run.validity is not None:
        report.update(_validity_section(run.validity))
    if run.look is not None:
        report.update(look_sections(run, run.look))
        if report.get("judged") is not None:
            report["judged"]["failures"] = [r.message for r in run.verdict.reasons if r.code == "judged_share"]
    if run.attribution is not None:
        report["attribution"] = _attribution_section(run.attribution)
    if run.sweep is not None:
        report["sweep"] = dict(run.sweep)
    if run.repeats is not None:
        report["repeats"] = run.repeats.to_dict()
    if run.elapsed_seconds is not None:
        report["elapsed_seconds"] = run.elapsed_seconds
    if run.resources is not None:
        report.update(resource_sections(run.resources, *run.resource_limits))
    report.update(judgments_section(run.judgments, report.get("judged")))
    return report


def _baseline_section(baseline: ResolvedBaseline, metric: str, mean: float | None = None) -> dict[str, Any]:
    """The baseline as resolved; its mean on every golden query, or a look's (``mean``)."""
    shown = finite_or_none(baseline.values.mean(metric)) if mean is None else mean
    return {"mean": shown, **baseline.to_dict()}


def _validity_section(validity: Validity) -> dict[str, Any]:
    return {
        "leakage": None if validity.leakage is None else validity.leakage.to_dict(),
        "judged": None if validity.judged is None else validity.judged.to_dict(),
        "tuning": None if validity.tuning is None else validity.tuning.to_dict(),
        "prompts": None if validity.prompts is None else validity.prompts.to_dict(),
        "reporting_set": validity.reporting.to_dict(),
    }


def _attribution_section(attribution: AttributionResult | GridRefused | str) -> dict[str, Any]:
    if isinstance(attribution, str):
        return {"error": attribution}
    if isinstance(attribution, GridRefused):
        return {"refused": attribution.reason}
    return dict(attribution.to_dict())


def look_sections(run: GateRun, look: Look) -> dict[str, Any]:
    """The report's sections a look decides."""
    metric, validity = run.head.metric, run.validity
    assert validity is not None and isinstance(run.baseline, ResolvedBaseline)  # a look comes after both
    reporting, paired = validity.reporting, look.paired
    sections = paired_section(metric, Universe(reporting.query_ids, run.unjudged_queries), look.baseline,
                              look.candidate, paired, run.strata_by_query)
    sections["baseline"] = _baseline_section(run.baseline, metric, finite_or_none(look.baseline.mean(metric)))
    sections["candidate"] = spine.Candidate(mean=finite_or_none(look.candidate.mean(metric)),
                                            source=run.candidate_source)
    everything = look.everything
    if everything is not None:
        sections["delta_all_queries"] = {
            "query_count": run.golden_query_count, "mean": finite_or_none(everything.mean),
            "ci_low": finite_or_none(everything.ci_low), "ci_high": finite_or_none(everything.ci_high),
        }
        if reporting.excluded_leaked and validity.leakage is not None:
            carried = everything.mean - paired.mean
            sections["leakage"] = {
                **validity.leakage.to_dict(),
                "delta_with_leaked": finite_or_none(everything.mean),
                "delta_without_leaked": finite_or_none(paired.mean),
                # A win the leaked queries carry: shown with them, not without them.
                "win_carried_by_leaks": bool(everything.ci_low > 0 and not paired.ci_low > 0 and carried > 0),
            }
    if run.noise is not None:
        sections["noise_band"] = noise_band_section(run.noise, paired, look.band, *look.runs)
    sections.update(look.strata.to_dict())
    rule, mode = run.decision_rule
    sections["decision"] = {"rule": rule, "mode": mode, **look.evidence.to_dict(), "min_movers": MIN_MOVERS}
    sections["power"] = look.power.to_dict()
    return sections


def noise_band_section(noise: NoiseReading, paired: PairedComparison, band: float | None, runs_c: int,
                       runs_b: int) -> dict[str, Any]:
    """The report's noise band: the stored band's figures, its threshold scaled to the look's means."""
    status = shown = noise.status
    if band is not None and runs_c != 1:
        assert status.band is not None  # band is status.band's threshold, scaled
        shown = dataclasses.replace(status, band=dataclasses.replace(
            status.band, overall=dataclasses.replace(status.band.overall, threshold=band)))
    exceeded, words = band_sentence(paired.mean, shown, noise.archive_command, (paired.ci_low, paired.ci_high))
    if runs_c > 1 and band is not None:
        words += f" (scaled to means of {runs_c} candidate and {runs_b} baseline runs)"
    stored = status.band
    return {
        "runs": None if stored is None else stored.runs,
        "sd": None if stored is None else stored.overall.sd,
        "range": None if stored is None else stored.overall.range,
        "threshold": band,
        "delta_sd": None if stored is None else stored.overall.delta_sd,
        "exceeded": exceeded,
        "stale": status.state == "stale",
        "state": status.state,
        "reason": status.reason,
        "sentence": words,
        "strata": {} if stored is None else {
            k: rep.scaled_threshold(v.threshold, runs_c, runs_b) for k, v in stored.strata.items()},
        "unstable_queries": 0 if stored is None else len(stored.unstable),
        "tie_floor": noise.floor.to_dict(),
        "calibration": None if noise.calibration is None else dict(noise.calibration),
    }


def paired_section(metric: str, universe: Universe, before: PerQuery, after: PerQuery, paired: PairedComparison,
                   strata: Mapping[str, Any]) -> dict[str, Any]:
    """The paired comparison's sections, as records: the means, the delta (the primary measure,
    from the paired comparison itself), the query bookkeeping, the ties, every query's numbers
    and every measure's means."""
    base_values = before.values[metric]
    cand_values = after.values[metric]
    measures = {}
    for name in before.values:
        b, c = before.mean(name), after.mean(name)
        # The primary measure's delta is the paired comparison's: the headline and the table's
        # row show one number, made by one formula.
        delta = paired.mean if name == metric else c - b
        measures[name] = spine.MeasureMeans(baseline=finite_or_none(b), candidate=finite_or_none(c),
                                            delta=finite_or_none(delta))
    extra = sorted(set(before.extra) | set(after.extra), key=lambda q: q.encode("utf-8"))
    ties = {
        name: spine.TieCounts(baseline=int(before.ties[name].sum()) if name in before.ties else 0,
                              candidate=int(after.ties[name].sum()) if name in after.ties else 0)
        for name in before.values
        if name in before.ties or name in after.ties
    }
    return {
        "metric": metric,
        "query_count": len(universe.query_ids),
        "baseline": spine.Baseline(mean=finite_or_none(paired_mean(base_values))),
        "candidate": spine.Candidate(mean=finite_or_none(paired_mean(cand_values))),
        "delta": spine.Delta(
            mean=finite_or_none(paired.mean), ci_low=finite_or_none(paired.ci_low),
            ci_high=finite_or_none(paired.ci_high), p_le_zero=finite_or_none(paired.p_le_zero),
            samples=int(paired.samples), seed=int(paired.seed), method=paired.method, wins=int(paired.wins),
            losses=int(paired.losses), ties=int(paired.ties), p_randomization=finite_or_none(paired.p_randomization),
            randomization=paired.randomization, mde=finite_or_none(paired.mde), sd=finite_or_none(paired.sd)),
        "queries": spine.Queries(missing_in_baseline=tuple(before.missing), missing_in_candidate=tuple(after.missing),
                                 extra=tuple(extra), unjudged=tuple(universe.unjudged),
                                 no_relevant=tuple(before.no_relevant)),
        "ties": ties,
        "per_query": tuple(
            spine.PerQueryRow(query_id=qid, stratum=strata.get(qid), baseline=float(b), candidate=float(c),
                              delta=float(c - b))
            for qid, b, c in zip(universe.query_ids, base_values, cand_values)
        ),
        "measures": measures,
    }


def paired_mean(values: NDArray[np.floating[Any]]) -> float:
    return float(values.mean()) if len(values) else 0.0


@dataclass(frozen=True)
class CompareRun:
    """Everything ``compare`` found: the comparison of the two runs, its files, the strata
    section, what the set can catch, the gate's decision on it and how each run's scores order
    its documents."""

    comparison: Comparison
    inputs: Mapping[str, Any]  # each file: path, sha256, count
    strata: StrataSection  # the strata section (table, traffic, movement buckets, lift)
    power: Detectable
    verdict: Verdict
    evidence: Evidence
    decision_rule: tuple[str, str]  # policy.decision, policy.mode
    run_scores: Mapping[str, ScoreOrder]
    warnings: tuple[str, ...] = ()


def build_compare_report(run: CompareRun) -> Report:
    """``compare``'s typed report: made once, held to the schema once."""
    comparison, verdict = run.comparison, run.verdict
    report: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "command": "compare"}
    report.update(paired_section(comparison.metric, comparison.universe, comparison.baseline, comparison.candidate,
                                 comparison.paired, comparison.strata))
    report["inputs"] = dict(run.inputs)
    report["tool"] = {"name": "retrieval-gate", "version": __version__}
    report.update(run.strata.to_dict())
    report["power"] = run.power.to_dict()
    rule, mode = run.decision_rule
    report["decision"] = {"kind": verdict.kind, "reasons": [reason_record(r) for r in verdict.reasons],
                          "exit_code": verdict.exit_code, "rule": rule, "mode": mode, **run.evidence.to_dict(),
                          "alpha": ALPHA, "min_movers": MIN_MOVERS}
    report["run_scores"] = {side: order.to_dict() for side, order in run.run_scores.items()}
    if run.warnings:
        report["warnings"] = list(run.warnings)
    return report_record(report)


def unjudged_rows(run: GateRun) -> Sequence[Any] | None:
    """The candidate's unjudged top-k documents (unjudged.tsv), where the judged-share check ran."""
    validity = run.validity
    return validity.judged.unjudged_rows if validity is not None and validity.judged is not None else None
