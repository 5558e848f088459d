"""``retrieval-gate run``: the gate on one candidate against the commensurable baseline."""

from __future__ import annotations

import dataclasses
import math
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate.checks.commensurability import (
    Incommensurable,
    ResolvedBaseline,
    run_request,
)
from gate.checks.score_order import ScoreOrder
from gate.checks.validity import ReportingSet, Validity
from gate.common.errors import InputError
from gate.common.numbers import counted, finite_or_none
from gate.evaluation.evaluate import PerQuery
from gate.inputs.anchoring import MappedSides
from gate.inputs.config import Config
from gate.inputs.golden import Golden, load_golden
from gate.inputs.manifest import archived_timings
from gate.inputs.readers.records import Run, same_rankings
from gate.inputs.readers.runs import read_run
from gate.inputs.readers.timings import Timings
from gate.inputs.retrieval_config import ConfigChange, RetrievalConfig, config_diff, load_retrieval_config
from gate.inputs.traffic_shares import StrataSpec, assign_strata, strata_spec_from_config, validate_against
from gate.pipeline.attribute import attribute
from gate.pipeline.baseline import resolve_baseline
from gate.pipeline.held_inputs import VerdictInputs, hold_verdict_inputs
from gate.pipeline.repeat_runs import (
    RepeatPlan,
    mean_values,
    missing_band_file,
    noise_status,
    repeat_plan,
    stored_band,
)
from gate.pipeline.stack import (
    Progress,
    RunOptions,
    check_base,
    check_config,
    code_under_test,
    evaluate_all,
    gate_folders,
    make_producer,
    measures_of,
    runner_queries_path,
    shown_path,
    shown_paths,
    stderr_progress,
)
from gate.pipeline.sweep import gate_sweep, swept_changes
from gate.pipeline.validity_checks import check_validity, score_orders, validity_findings
from gate.report.build import CandidateFailure, GateRun, Head, Look, NoBaseline, NoiseReading, build_report
from gate.runs.code import CodeIdentity
from gate.runs.produce import RunProducer, answered_empty, check_coverage, timings_of
from gate.runs.request import RunMissing, RunnerFailed
from gate.statistics import repeats as rep
from gate.statistics.attribution import AttributionResult, GridRefused
from gate.statistics.band import BandStatus, TieFloor, tie_floor
from gate.statistics.evidence import evidence as decision_evidence
from gate.statistics.latency import Resources, compare_resources
from gate.statistics.movement import LiftResult, strata_section
from gate.statistics.paired import compare_paired
from gate.statistics.power import detectable
from gate.verdict.directions import STRATA_DIRECTIONS, StrataDirections
from gate.verdict.levels import ALPHA, MOVERS_TO_SHOW, NOISE_SHARE_TO_RERUN, look_alpha
from gate.verdict.reruns import undecided_by_noise
from gate.verdict.resource_limits import resource_findings
from gate.verdict.rules import Findings, Verdict, combine, decide, failures_of, inconclusive, traffic_findings


@dataclass(frozen=True)
class GateOutcome:
    """What ``run`` found (:class:`gate.report.build.GateRun`, which :func:`gate.report.build.build_report`
    makes the report of), with what a caller may also want: the resolved baseline, the
    candidate's values on every golden query and its run."""

    run: GateRun
    baseline: ResolvedBaseline | None = None
    candidate_values: PerQuery | None = None
    candidate_run: Run | None = None

    @property
    def verdict(self) -> Verdict:
        return self.run.verdict

    @property
    def report(self) -> dict[str, Any]:
        """The report as report.json holds it (made from :attr:`run` each time it is asked for)."""
        return build_report(self.run).to_dict()


def _candidate(config: Config, golden: Golden, producer: RunProducer, options: RunOptions,
               retrieval: RetrievalConfig, code: CodeIdentity | None = None) -> tuple[Run, str, float, Timings | None]:
    """The candidate's run, where it came from, how long it took, and its timings (None: none)."""
    path = options.candidate_run
    timings_path = options.candidate_timings
    if path is None and config.runner.type == "run-file" and config.runner.candidate_run:
        path = config.here(config.runner.candidate_run)
        if timings_path is None and config.runner.candidate_timings:
            timings_path = config.here(config.runner.candidate_timings)
    if path is not None:
        run = read_run(path)  # bad file: InputError, exit 2
        # Read before the coverage check: its "hits": 0 lines are queries answered with nothing.
        timings = None if timings_path is None else timings_of(timings_path, run, golden.queries.ids(), "file")
        check_coverage(run, golden.universe.query_ids, "candidate", str(path), timings)
        return run, f"file {path}", 0.0, timings
    queries_path = runner_queries_path(golden, producer.work_dir)
    run, produced = producer.produce(run_request("candidate", retrieval, golden, queries_path, code=code),
                                     golden.universe.query_ids, golden.queries.ids())
    return run, produced.source, produced.seconds, produced.timings


def empty_answers_warning(side: str, timings: Timings | None, query_ids: Sequence[str]) -> str | None:
    """The report's words for the golden queries a side's runner answered with no documents (its
    timings' ``"hits": 0``), or None: they are covered and score 0, which a reader should know."""
    empty = answered_empty(timings)
    count = sum(1 for qid in query_ids if qid in empty)
    if not count:
        return None
    were, score = ("query was", "it scores") if count == 1 else ("queries were", "they score")
    return (f"{count} golden {were} answered with no documents by the {side}'s runner: {score} 0 on every "
            "measure")


def _lift_shown(lift: LiftResult, config: Config, out: Path | None) -> LiftResult:
    """The lift's run files and qrels as a report shows them: the qrels as the config names them,
    a run relative to the workspace (or its file name), never a temporary folder of the job."""
    return dataclasses.replace(lift, before=shown_path(lift.before, config, out),
                               after=shown_path(lift.after, config, out), qrels=config.golden.qrels)


#: run_gate's options when none are given (one instance: the options are frozen).
_DEFAULT_OPTIONS = RunOptions()


def run_gate(config: Config, options: RunOptions = _DEFAULT_OPTIONS,
             progress: Progress = stderr_progress) -> GateOutcome:
    started = time.monotonic()
    check_config(config)
    check_base(config, options.base)
    # The gate's own folder for the base's corpus, out of the workspace: a mode-0700 folder
    # another uid cannot reach, and what the gate's uid writes there is found by its digest.
    with tempfile.TemporaryDirectory(prefix="retrieval-gate-held-", ignore_cleanup_errors=True) as held_folder:
        return _GateRun(config, options, progress).run(started, Path(held_folder))


class _GateRun:
    """``run_gate``'s steps, in the order they run; the report is the sections each step adds."""

    # Set by the steps, in this order (a step reads only what an earlier one set).
    baseline: ResolvedBaseline
    baseline_info: dict[str, Any]
    diff: list[ConfigChange]
    candidate_run: Run
    candidate_source: str
    candidate_timings: Timings | None
    resources: Resources
    spec: StrataSpec | None
    strata: dict[str, str | None]
    validity: Validity
    reporting: ReportingSet
    status: BandStatus
    calibration: dict[str, Any] | None
    threshold: float | None
    floor: TieFloor
    stratum_noise: dict[str, float] | None
    plan: RepeatPlan
    directions: StrataDirections
    identical: bool
    run_scores: dict[str, ScoreOrder]
    inputs: VerdictInputs  # set first, before any runner starts

    def __init__(self, config: Config, options: RunOptions, progress: Progress) -> None:
        self.config = config
        self.options = options
        self.progress = progress
        self.policy = config.policy
        primary, others = measures_of(config)
        self.primary = primary
        self.measures = (primary, *others)
        self.metric = str(primary)
        self.golden = load_golden(config)
        progress(f"golden set: {len(self.golden.universe.query_ids)} judged queries "
                 f"({len(self.golden.universe.unjudged)} without judgments left out)")
        retrieval_path = config.here(config.retrieval_config)
        assert retrieval_path is not None  # here() of a str is a Path
        self.retrieval = load_retrieval_config(retrieval_path)
        self.producer = make_producer(config, options.runs_dir, progress)
        # The PR's code, part of every key its runs are cached under: a PR that changes only
        # search/bm25.py is re-run, never served the baseline's run.
        self.code = code_under_test(config, options.runs_dir) if options.candidate_run is None else None
        self.head = self._head()
        self.warnings: list[str] = []  # after the validity checks' own
        self.config_diff: tuple[ConfigChange, ...] | None = None
        self.attribution: AttributionResult | GridRefused | str | None = None
        self.sweep_section: dict[str, Any] | None = None
        self.repeats: rep.Repeats | None = None
        self.candidate_values: list[PerQuery] = []  # per run, every measure, every golden query
        self.rerun_seeds: list[int] = []
        self.repeat_warning: str | None = None
        self.rerun_missing: RunMissing | None = None
        self.missing: RunMissing | None = None
        self.sweep_warning: str | None = None

    def _head(self) -> Head:
        """What the report says before any run: the suite, the metric, the candidate's config
        and the golden set's files."""
        golden, config = self.golden, self.config
        snapshot = golden.corpus(self.retrieval)
        if self.code is not None and not self.code.known:
            self.progress(f"warning: {self.code.description}: the run cache is not used for its runs")
        # The files as the config names them (the qrels record's id also carries a BEIR split).
        return Head(config.suite, self.metric, (config.retrieval_config, self.retrieval.sha256),
                    dataclasses.replace(golden.queries_record, id=config.golden.queries),
                    dataclasses.replace(golden.qrels_record, id=config.golden.qrels),
                    None if snapshot is None else snapshot.record, self.code)

    def _judgments_mapped(self, baseline: ResolvedBaseline | NoBaseline) -> MappedSides | None:
        """How anchored judgments map onto each side (each mapped once, when that side was judged)."""
        golden = self.golden
        candidate = golden.mapping_for(self.retrieval)
        if candidate is None:
            return None
        base = golden.mapping_for(baseline.config) if isinstance(baseline, ResolvedBaseline) else None
        return MappedSides(self.config.golden.qrels, None if base is None else base.summary, candidate.summary)

    def _baseline_timings_if_short(self, baseline: ResolvedBaseline) -> Timings | None:
        """The baseline run's timings when the run lacks a golden query (only then can they say it
        was answered with no documents): the replay's, or those archived with the reused run."""
        present = set(baseline.run.query_ids)
        if all(qid in present for qid in self.golden.universe.query_ids):
            return None
        if baseline.produced is not None:
            return baseline.produced.timings
        return archived_timings(baseline.manifest) if baseline.resolution in ("reused", "rescored") else None

    def _warn(self, warning: str) -> None:
        self.warnings.append(warning)

    def _outcome(self, verdict: Verdict, *, baseline: ResolvedBaseline | NoBaseline | None = None,
                 candidate: PerQuery | None = None, look: Look | None = None,
                 elapsed: float | None = None) -> GateOutcome:
        """The run's records, as far as it got, and its verdict."""
        resolved = baseline if baseline is not None else getattr(self, "baseline", None)
        assert resolved is not None  # resolved before any other step, or not resolvable (NoBaseline)
        validity = getattr(self, "validity", None)
        failure = getattr(self, "candidate_failure", None)
        run = GateRun(
            head=self.head, verdict=verdict, baseline=resolved,
            golden_query_count=len(self.golden.universe.query_ids),
            unjudged_queries=tuple(self.golden.universe.unjudged), config_diff=self.config_diff,
            candidate_source=getattr(self, "candidate_source", None), candidate_failure=failure,
            run_scores=getattr(self, "run_scores", None), validity=validity,
            strata_by_query=getattr(self, "strata", {}), look=look,
            noise=None if look is None else NoiseReading(
                self.status, self.floor, self.calibration,
                f"retrieval-gate archive --noise-repeats {self.config.noise.repeats} --config {self.config.path.name}"),
            decision_rule=(self.policy.decision, self.policy.mode), attribution=self.attribution,
            sweep=self.sweep_section, repeats=self.repeats, warnings=tuple(self.warnings), elapsed_seconds=elapsed,
            resources=getattr(self, "resources", None),
            resource_limits=(self.policy.latency.p95_max_increase, self.policy.cost.max_increase),
            judgments=self._judgments_mapped(resolved))
        return GateOutcome(run, None if isinstance(run.baseline, NoBaseline) else run.baseline, candidate,
                           getattr(self, "candidate_run", None) if look is not None else None)

    def run(self, started: float, held_folder: Path) -> GateOutcome:
        # Before the first runner starts (any may run the PR's code): everything the verdict is
        # measured against, read or digested; checked unchanged after the last one (a change
        # ends the run, exit 2: never a verdict on inputs that moved under it).
        self.inputs = hold_verdict_inputs(self.config, self.golden, self.retrieval, self.options.base, held_folder,
                                          self._not_prompts())
        outcome = self._judged(started)
        self.inputs.held.check()
        return outcome

    def _not_prompts(self) -> list[Path]:
        """The gate's folders, which no prompt glob scans."""
        config, options = self.config, self.options
        return [*gate_folders(config, options.runs_dir), *([options.out] if options.out is not None else [])]

    def _judged(self, started: float) -> GateOutcome:
        config, policy, metric = self.config, self.policy, self.metric
        # The reporting set until the validity checks narrow it: every judged golden query.
        golden_reporting = ReportingSet.golden(self.golden.universe.query_ids)
        try:
            baseline = resolve_baseline(config, self.golden, self.measures, metric, self.producer,
                                        self.options.base, candidate_code=self.code, choice=self.inputs.choice)
        except Incommensurable as problem:
            verdict = inconclusive(problem.code, problem.message, policy, golden_reporting)
            return self._outcome(verdict, baseline=NoBaseline(problem.message, tuple(problem.differences)))
        self.baseline = baseline
        # The description itself is the summary's "baseline:" line: said once, at the end.
        self.progress(f"baseline ({baseline.resolution}): {metric} {baseline.values.mean(metric):.4f}")
        self.diff = config_diff(baseline.config, self.retrieval)
        self.config_diff = tuple(self.diff)
        try:
            self.candidate_run, self.candidate_source, candidate_seconds, self.candidate_timings = _candidate(
                config, self.golden, self.producer, self.options, self.retrieval, self.code)
        except RunnerFailed as failure:
            return self._outcome(self._runner_failed(failure, golden_reporting))
        for side, timings in (("baseline", self._baseline_timings_if_short(baseline)),
                              ("candidate", self.candidate_timings)):
            said = empty_answers_warning(side, timings, self.golden.universe.query_ids)
            if said is not None:
                self.progress(f"warning: {said}")
                self._warn(said)
        candidate = evaluate_all(self.candidate_run, self.golden, self.measures, config.golden.rel, self.retrieval)
        self.candidate_values.append(candidate)
        # The checks below read files again (the corpora, the strata, tuning and noise band files):
        # as they were before the candidate's code ran, or not at all.
        self.inputs.held.check()
        self._check_validity(candidate)
        if not self.reporting.query_ids:
            # Nothing left to measure on, but the validity checks still decide: a PR that leaks every
            # golden query into its corpus fails on the leaks (inconclusive could pass where it
            # does not block).
            nothing = inconclusive("empty_reporting_set", "no query is left to report on after the validity checks",
                                   policy, self.reporting)
            unmeasured = Findings(metric=metric, query_count=0, delta=math.nan, ci_low=math.nan, ci_high=math.nan,
                                  reporting_set=self.reporting, **validity_findings(self.validity))
            return self._outcome(combine(failures_of(unmeasured, policy), (), nothing, policy), candidate=candidate)
        self._prepare_looks()
        if self.plan.looks == 1 and self.plan.possible and config.noise.rerun == "always":
            self.progress("noise.rerun always: running the candidate "
                          f"{counted(self.plan.candidate_runs - 1, 'more time', 'more times')}")
            self._rerun(self.plan.candidate_runs - 1)
        first = self.deciding = self._look(look_alpha(self.plan.looks))
        self.resources = self._resources()
        self._attribute(candidate_seconds)
        self._sweep(first)
        self.identical = baseline.run is not None and same_rankings(baseline.run, self.candidate_run,
                                                                    self.reporting.query_ids)
        verdict = self._decide(first)
        return self._outcome(verdict, candidate=candidate, look=self.deciding,
                             elapsed=round(time.monotonic() - started, 3))

    def _runner_failed(self, failure: RunnerFailed, golden_reporting: ReportingSet) -> Verdict:
        # The verdict (the comment's first line) says what failed, with the exit code; where the
        # log is goes in the body, relative to the workspace: an absolute path of the job's
        # machine says nothing to a reviewer.
        config, out = self.config, self.options.out
        error = shown_paths(failure.message, config, out)
        verdict = inconclusive("runner_failed", f"the candidate run failed: {error}", self.policy, golden_reporting)
        self.candidate_failure = CandidateFailure(
            error, shown_paths(failure.log_tail, config, out),
            None if failure.log_path is None else shown_path(failure.log_path, config, out))
        return verdict

    def _check_validity(self, candidate: PerQuery) -> None:
        config = self.config
        self.spec = strata_spec_from_config(config)
        self.strata = assign_strata(self.golden.queries, self.spec)
        if self.spec is not None:
            validate_against(self.spec, self.strata)  # once, against the full golden set
        validity = check_validity(config, self.golden, self.baseline, self.candidate_run, candidate, self.retrieval,
                                  self.diff, self.metric, self.strata, self.progress,
                                  base_corpus=self.inputs.base_corpus, not_prompts=self._not_prompts())
        # Scores that do not order the documents (all equal, or the rank as a number): the measures
        # keep trec_eval's order, and the terminal, the report and the comment say so loudly.
        orders = score_orders(self.baseline.run, self.candidate_run, self.golden.universe.query_ids)
        self.run_scores = orders
        unordered = tuple(order.warning for order in orders.values() if order.warning)
        if unordered:
            validity = dataclasses.replace(validity, warnings=(*unordered, *validity.warnings))
        self.validity = validity
        self.reporting = validity.reporting

    def _prepare_looks(self) -> None:
        """The stored band, the tie floor and the repeat plan: read once, before the first look."""
        config = self.config
        stored = stored_band(config, self.baseline.manifest)  # read once: the band and its repeat runs
        missing = missing_band_file(config, self.baseline.manifest)
        if missing:
            self._warn(missing)
        self.status, self.calibration = noise_status(config, self.golden, self.baseline, self.metric, self.measures,
                                                     stored)
        self.threshold = None if self.status.band is None else self.status.band.threshold
        self.floor = tie_floor(self.candidate_run, self.golden.qrels_for(self.retrieval), self.primary,
                               self.reporting.query_ids, config.golden.rel)
        self.stratum_noise = None
        if self.status.band is not None and self.status.band.strata:
            self.stratum_noise = {name: item.threshold for name, item in self.status.band.strata.items()}
        self.plan = repeat_plan(config, self.options, self.status, self.golden, self.baseline, self.measures, stored)
        # The strata's directions at each look's share of their family-wise level.
        self.directions = StrataDirections(alpha=STRATA_DIRECTIONS.alpha / self.plan.looks)

    def _rerun(self, count: int) -> None:
        """``count`` more runs of the candidate (cached like every run); a failure keeps what ran."""
        config, golden, producer = self.config, self.golden, self.producer
        total = self.plan.candidate_runs
        queries_path = runner_queries_path(golden, producer.work_dir)
        done = len(self.candidate_values)
        for number in range(done + 1, done + count + 1):
            seed = config.noise.base_seed + number
            request = run_request(f"candidate repeat {number}/{total}", self.retrieval, golden, queries_path,
                                  code=self.code, repeat=number, seed=seed)
            try:
                run, produced = producer.produce(request, golden.universe.query_ids)
            except RunnerFailed as failure:
                if isinstance(failure, RunMissing):
                    self.rerun_missing = failure  # planned and handed out, never came: as any planned run
                self.repeat_warning = (f"the candidate's repeat {number}/{total} could not be run "
                                       f"({failure.message}): decided on "
                                       f"{counted(len(self.candidate_values), 'run', 'runs')}")
                return
            values = evaluate_all(run, golden, self.measures, config.golden.rel, self.retrieval)
            self.candidate_values.append(values)
            self.rerun_seeds.append(seed)
            self.progress(f"candidate repeat {number}/{total}: {self.metric} "
                          f"{values.subset(self.reporting.query_ids).mean(self.metric):.4f} "
                          f"({produced.seconds:.1f}s)")

    def _look(self, alpha: float) -> Look:
        """The statistics of one look: on single runs, or on the per-query means of the
        candidate's runs and the baseline's stored repeats."""
        stats, metric, reporting, policy = self.config.statistics, self.metric, self.reporting, self.policy
        # As many baseline runs as candidate runs: under no change the two means are then
        # exchangeable, so their difference is symmetric, as the sign-flip test assumes (means of
        # 5 and of 11 runs of a skewed noise differ by a skewed amount).
        runs_c = runs_b = len(self.candidate_values)
        base_all = self.baseline.values if runs_c == 1 else mean_values([self.baseline.values,
                                                                          *self.plan.baseline_repeats[:runs_c - 1]])
        cand_all = self.candidate_values[0] if runs_c == 1 else mean_values(self.candidate_values)
        base_r = base_all.subset(reporting.query_ids)
        cand_r = cand_all.subset(reporting.query_ids)
        band = None if self.threshold is None else rep.scaled_threshold(self.threshold, runs_c, runs_b)
        paired = compare_paired(base_r.values[metric], cand_r.values[metric],
                                samples=stats.samples, seed=stats.seed, method=stats.ci_method)
        everything = None
        if reporting.excluded_leaked or reporting.held_out_only:
            # every judged query, on the same runs (or means) as the look: never single runs beside means
            everything = compare_paired(base_all.values[metric], cand_all.values[metric],
                                        samples=stats.samples, seed=stats.seed, method=stats.ci_method)
        noise = None if self.stratum_noise is None else {
            name: rep.scaled_threshold(value, runs_c, runs_b) for name, value in self.stratum_noise.items()}
        block = strata_section(base_r, cand_r, metric, self.strata, self.spec, baseline_run=self.baseline.run,
                               candidate_run=self.candidate_run, qrels=self.golden.qrels_for(self.baseline.config),
                               candidate_qrels=self.golden.qrels_for(self.retrieval),
                               queries=self.golden.queries, noise_threshold=noise,
                               min_effect=policy.min_effect, margin=policy.max_regression, samples=stats.samples,
                               seed=stats.seed, method=stats.ci_method, rule=self.directions)
        if block.lift is not None:
            block = dataclasses.replace(block, lift=_lift_shown(block.lift, self.config, self.options.out))
        d = cand_r.values[metric] - base_r.values[metric]
        weighed = decision_evidence(d, policy.max_regression, stats.samples, stats.seed, alpha=alpha)
        power = detectable(d, policy.max_regression, band, alpha=alpha, level=ALPHA, movers_to_show=MOVERS_TO_SHOW)
        return Look((runs_c, runs_b), alpha, base_r, cand_r, paired, everything, band, d, weighed, power, block)

    def _resources(self) -> Resources:
        """Latency and cost of the two runs on the reporting set (report: latency, cost)."""
        stats, baseline = self.config.statistics, self.baseline
        produced = baseline.produced
        timings = produced.timings if produced is not None else None
        why = None
        if timings is None and baseline.resolution in ("reused", "rescored"):  # the archived run itself
            timings = archived_timings(baseline.manifest)
            why = None if timings is not None else "the archived baseline has no timings (archived without them)"
        elif timings is None and produced is not None:
            why = "the baseline run has no timings (its runner writes none)"
        band = self.status.band
        return compare_resources(timings, self.candidate_timings, self.reporting.query_ids, stats.samples,
                                 stats.seed, baseline_why=why,
                                 band_threshold_ms=None if band is None else band.latency_threshold_ms)

    def _attribute(self, candidate_seconds: float) -> None:
        """The 2^k grid's credit for the bundled changes; a cell that failed is said, loudly."""
        try:
            attribution = attribute(self.config, self.golden, self.baseline, self.baseline.run, self.candidate_run,
                                    self.retrieval, self.diff, self.reporting.query_ids, self.metric, self.producer,
                                    candidate_seconds, self.progress, self.code)
        except RunnerFailed as failure:
            if isinstance(failure, RunMissing):
                self.missing = failure
            self.attribution = f"a grid cell could not be run: {failure.message}"
            # A cell the gate's own runner failed on: the verdict stands on baseline and candidate,
            # but the comment says loudly that the credit for the bundled changes is missing, and
            # why. (A planned cell missing from runs-dir makes the verdict inconclusive below.)
            self._warn(f"no attribution: {failure.purpose}: {failure.message}")
            return
        self.attribution = attribution

    def _sweep(self, first: Look) -> None:
        """The sweep grid around a swept parameter this PR changes, scored against the first look."""
        config, stats = self.config, self.config.statistics
        changed_swept = swept_changes(config, [c.path for c in self.diff])
        if changed_swept:
            self.progress(f"sweep: this PR changes {', '.join(changed_swept)}; scoring the sweep grid around it")
            try:
                self.sweep_section, self.sweep_warning = gate_sweep(
                    config, self.golden, self.retrieval, self.producer,
                    runner_queries_path(self.golden, self.producer.work_dir), self.code, self.progress,
                    changed_swept, self.reporting.query_ids, finite_or_none(first.candidate.mean(self.metric)),
                    samples=stats.samples, seed=stats.seed)
            except RunnerFailed as failure:
                if isinstance(failure, RunMissing):
                    self.missing = self.missing or failure
                self._warn(f"no sweep: {failure.purpose}: {failure.message}")
            except InputError as error:  # the sweep cannot be made on this yardstick (e.g. more folds than queries)
                self._warn(f"no sweep: {error}")
        if self.sweep_warning:
            self._warn(self.sweep_warning)

    def _findings(self, look: Look) -> Findings:
        paired = look.paired
        latency, cost = resource_findings(getattr(self, "resources", None))
        return Findings(
            metric=self.metric, query_count=len(self.reporting.query_ids), delta=paired.mean, ci_low=paired.ci_low,
            ci_high=paired.ci_high, mde=look.power.regression_80, noise_threshold=look.band,
            evidence=look.evidence, reporting_set=self.reporting,
            warnings=(*self.validity.warnings, *filter(None, [self.sweep_warning, self.repeat_warning])),
            **validity_findings(self.validity),
            **traffic_findings(look.strata),
            identical_rankings=self.identical, latency=latency, cost=cost)

    def _look_record(self, look: Look, decided: Verdict) -> rep.Look:
        e = look.evidence
        low = min(e.t_low, e.hall_low) if self.policy.mode == "non-inferiority" else e.t_low
        candidate_runs, baseline_runs = look.runs
        return rep.Look(candidate_runs, baseline_runs, alpha=look.alpha, kind=decided.kind,
                        codes=tuple(r.code for r in decided.reasons if r.code != "warning"),
                        delta=look.paired.mean, low=low, high=e.t_high, band=look.band)

    def _decide(self, first: Look) -> Verdict:
        """The verdict on the first look, or (adaptive reruns) on a second look when run-to-run
        noise left the first undecided; then what a missing planned run makes of it."""
        config, policy, plan = self.config, self.policy, self.plan
        findings = self._findings(first)
        verdict = decide(findings, policy)
        looks = [self._look_record(first, verdict)]
        why, share = plan.reason, None
        if plan.looks == 2:
            share = rep.noise_share(first.d, rep.noise_variance(
                [pq.subset(self.reporting.query_ids).values[self.metric]
                 for pq in (self.baseline.values, *plan.baseline_repeats)]))
            verdict, why = self._second_look(first, findings, verdict, looks, share)
        missing = self.missing or self.rerun_missing
        if config.noise.candidate_runs > 1:
            if plan.looks == 1 and plan.possible and config.noise.rerun == "always":
                why = (f"noise.rerun always: every run up front ({plan.reason})" if self.repeat_warning is None
                       else f"noise.rerun always: {self.repeat_warning}")
            self.repeats = rep.Repeats(config.noise.candidate_runs, config.noise.rerun, tuple(looks), why, share,
                                       tuple(self.rerun_seeds))
        if missing is not None:
            # The runs were planned and handed out (plan -> produce -> gate): one that never came
            # leaves the set incomplete, and a verdict on part of what was asked for is not given.
            verdict = inconclusive("missing_run", f"the planned run {missing.purpose} ({missing.key}) is not in "
                                   "the runs folder: its produce step or matrix entry failed or did not upload it; "
                                   "rerun that entry, then the gate", policy, self.reporting)
        return verdict

    def _second_look(self, first: Look, findings: Findings, verdict: Verdict, looks: list[rep.Look],
                     share: float) -> tuple[Verdict, str]:
        """Adaptive reruns: the candidate rerun only when run-to-run noise left the first look
        undecided; ``looks`` gets the second look's record. Returns the verdict and why."""
        config, policy, plan = self.config, self.policy, self.plan
        undecided = undecided_by_noise(policy.mode, [r.code for r in verdict.reasons], first.evidence,
                                       policy.max_regression, first.band, share)
        if failures_of(findings, policy):
            return verdict, ("not rerun: the verdict fails on its validity or traffic checks, which a rerun cannot "
                             "change")
        if self.identical:
            return verdict, "not rerun: the candidate ranks every query as the baseline does"
        if undecided is None:
            return verdict, (f"not rerun: the first look decided (run-to-run noise is {share:.0%} of the per-query "
                             f"spread; reruns need {NOISE_SHARE_TO_RERUN:.0%} and an undecided verdict)")
        more = plan.candidate_runs - 1
        self.progress(f"first look undecided ({undecided}): running the candidate "
                      f"{counted(more, 'more time', 'more times')}")
        self._rerun(more)
        if len(self.candidate_values) > 1:
            second = self._look(first.alpha)
            self.deciding = second
            verdict = decide(self._findings(second), policy)
            looks.append(self._look_record(second, verdict))
            return verdict, f"rerun: {undecided}" + (f" ({plan.reason.partition('; ')[2]})"
                                                     if plan.candidate_runs < config.noise.candidate_runs else "")
        # The first look was undecided and the reruns that were to decide it never came:
        # its verdict at ALPHA / 2 is not a decision (it could pass what one look at ALPHA
        # fails), so the PR is inconclusive, as when any run the gate needs fails.
        verdict = decide(self._findings(first), policy)
        looks[0] = self._look_record(first, verdict)
        why = f"rerun failed: {self.repeat_warning}"
        if self.rerun_missing is None:
            verdict = inconclusive("runner_failed", f"the first look was undecided ({undecided}) and "
                                   f"{self.repeat_warning}", policy, self.reporting)
        return verdict, why
