"""``retrieval-gate run``: the gate on one candidate against the commensurable baseline."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gate.checks.commensurability import (
    Incommensurable,
    ResolvedBaseline,
    run_request,
)
from gate.common.errors import InputError
from gate.common.numbers import counted
from gate.evaluation.evaluate import PerQuery
from gate.inputs.config import Config
from gate.inputs.golden import Golden, load_golden
from gate.inputs.readers.records import Run, same_rankings
from gate.inputs.readers.runs import read_run
from gate.inputs.retrieval_config import RetrievalConfig, config_diff, load_retrieval_config
from gate.inputs.traffic_shares import assign_strata, strata_spec_from_config, validate_against
from gate.inputs.universe import Universe
from gate.pipeline.attribute import attribute
from gate.pipeline.baseline import resolve_baseline
from gate.pipeline.repeat_runs import mean_values, noise_status, repeat_plan, stored_band
from gate.pipeline.stack import (
    Progress,
    RunOptions,
    check_base,
    check_config,
    code_under_test,
    evaluate_all,
    finite_or_none,
    gate_folders,
    make_producer,
    measures_of,
    runner_queries_path,
    shown_path,
    shown_paths,
    stderr_progress,
    tool_record,
)
from gate.pipeline.sweep import gate_sweep, swept_changes
from gate.pipeline.validity_checks import check_validity, score_orders, validity_findings, validity_section
from gate.report.document import SCHEMA_VERSION as REPORT_SCHEMA_VERSION
from gate.report.document import check_own_report, paired_section
from gate.runs.code import CodeIdentity
from gate.runs.produce import RunProducer, check_coverage
from gate.runs.request import RunMissing, RunnerFailed
from gate.statistics import repeats as rep
from gate.statistics.attribution import GridRefused
from gate.statistics.band import band_sentence, tie_floor
from gate.statistics.evidence import evidence as decision_evidence
from gate.statistics.movement import strata_section
from gate.statistics.paired import compare_paired
from gate.statistics.power import detectable
from gate.verdict.levels import MIN_MOVERS, NOISE_SHARE_TO_RERUN, STRATA_ALPHA, look_alpha
from gate.verdict.reruns import undecided_by_noise
from gate.verdict.rules import Findings, Verdict, decide, failures_of, inconclusive, traffic_findings


@dataclass
class GateOutcome:
    report: dict[str, Any]
    verdict: Verdict
    baseline: ResolvedBaseline | None = None
    candidate_values: PerQuery | None = None
    extras: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:

        check_own_report(self.report, "the run report")


def _candidate(config: Config, golden: Golden, producer: RunProducer, options: RunOptions,
               retrieval: RetrievalConfig, code: CodeIdentity | None = None) -> tuple[Run, str, float]:
    path = options.candidate_run
    if path is None and config.runner.type == "run-file" and config.runner.candidate_run:
        path = config.here(config.runner.candidate_run)
    if path is not None:
        run = read_run(path)  # bad file: InputError, exit 2
        check_coverage(run, golden.universe.query_ids, "candidate", str(path))
        return run, f"file {path}", 0.0
    queries_path = runner_queries_path(golden, producer.work_dir)
    run, produced = producer.produce(run_request("candidate", retrieval, golden, queries_path, code=code),
                                     golden.universe.query_ids)
    return run, produced.source, produced.seconds


def _lift_shown(lift: dict[str, Any], config: Config, out: Path | None) -> dict[str, Any]:
    """The lift's run files and qrels as a report shows them: the qrels as the config names them,
    a run relative to the workspace (or its file name), never a temporary folder of the job."""
    return {**lift, "before": {**lift["before"], "source": shown_path(lift["before"]["source"], config, out)},
            "after": {**lift["after"], "source": shown_path(lift["after"]["source"], config, out)},
            "qrels": config.golden.qrels}


def run_gate(config: Config, options: RunOptions = RunOptions(), progress: Progress = stderr_progress) -> GateOutcome:
    started = time.monotonic()
    check_config(config)
    check_base(config, options.base)
    policy = config.policy
    primary, others = measures_of(config)
    measures = (primary, *others)
    metric = str(primary)
    golden = load_golden(config)
    progress(f"golden set: {len(golden.universe.query_ids)} judged queries "
             f"({len(golden.universe.unjudged)} without judgments left out)")
    retrieval = load_retrieval_config(config.here(config.retrieval_config))
    producer = make_producer(config, options.runs_dir, progress)
    report: dict[str, Any] = {
        "schema_version": REPORT_SCHEMA_VERSION,
        "command": "run",
        "suite": config.suite,
        "metric": metric,
        "candidate_config": {"path": config.retrieval_config, "sha256": retrieval.sha256},
        "inputs": {
            "queries": {"path": config.golden.queries, "sha256": golden.queries_record.sha256,
                        "count": golden.queries_record.count, "unit": "queries", "canonical": True},
            "qrels": {"path": config.golden.qrels, "sha256": golden.qrels_record.sha256,
                      "count": golden.qrels_record.count, "unit": "judgments", "canonical": True},
        },
        "tool": tool_record(),
    }
    snapshot = golden.corpus(retrieval)
    if snapshot is not None:
        report["inputs"]["corpus"] = {"path": snapshot.record.id, "sha256": snapshot.record.sha256,
                                      "count": snapshot.record.count, "unit": "chunks", "canonical": True}
    reporting = {"name": "golden", "query_count": len(golden.universe.query_ids)}
    # The PR's code, part of every key its runs are cached under: a PR that changes only
    # search/bm25.py is re-run, never served the baseline's run.
    code = code_under_test(config, options.runs_dir) if options.candidate_run is None else None
    if code is not None:
        report["candidate_code"] = code.to_dict()
        if not code.known:
            progress(f"warning: {code.description}: the run cache is not used for its runs")

    try:
        baseline = resolve_baseline(config, golden, measures, metric, producer, options.base, candidate_code=code)
    except Incommensurable as problem:
        verdict = inconclusive(problem.code, problem.message, policy, reporting)
        report["baseline"] = {"resolution": None, "archived": None, "differences": problem.differences,
                              "description": problem.message}
        report["verdict"] = verdict.to_dict()
        return GateOutcome(report, verdict)
    # The description itself is the summary's "baseline:" line: said once, at the end.
    progress(f"baseline ({baseline.resolution}): {metric} {baseline.values.mean(metric):.4f}")
    baseline_info = {"mean": finite_or_none(baseline.values.mean(metric)), **baseline.to_dict()}
    report["baseline"] = baseline_info
    report["config_diff"] = [change.to_dict() for change in config_diff(baseline.config, retrieval)]

    try:
        candidate_run, candidate_source, candidate_seconds = _candidate(config, golden, producer, options, retrieval,
                                                                        code)
    except RunnerFailed as failure:
        # The verdict (the comment's first line) says what failed, with the exit code; where the
        # log is goes in the body, relative to the workspace: an absolute path of the job's
        # machine says nothing to a reviewer.
        error = shown_paths(failure.message, config, options.out)
        verdict = inconclusive("runner_failed", f"the candidate run failed: {error}", policy, reporting)
        report["candidate"] = {"mean": None, "source": None, "error": error,
                               "log_tail": shown_paths(failure.log_tail, config, options.out)}
        if failure.log_path is not None:
            report["candidate"]["log"] = shown_path(failure.log_path, config, options.out)
        report["verdict"] = verdict.to_dict()
        return GateOutcome(report, verdict, baseline)
    candidate = evaluate_all(candidate_run, golden, measures, config.golden.rel)
    spec = strata_spec_from_config(config)
    strata = assign_strata(golden.queries, spec)
    if spec is not None:
        validate_against(spec, strata)  # once, against the full golden set
    diff = config_diff(baseline.config, retrieval)

    validity = check_validity(config, golden, baseline, candidate_run, candidate, retrieval, diff, metric, strata,
                              progress, base=options.base,
                              not_prompts=[*gate_folders(config, options.runs_dir),
                                           *([options.out] if options.out is not None else [])])
    # Scores that do not order the documents (all equal, or the rank as a number): the measures
    # keep trec_eval's order, and the terminal, the report and the comment say so loudly.
    orders = score_orders(baseline.run, candidate_run, golden.universe.query_ids)
    report["run_scores"] = {side: order.to_dict() for side, order in orders.items()}
    unordered = tuple(order.warning for order in orders.values() if order.warning)
    if unordered:
        validity = dataclasses.replace(validity, warnings=(*unordered, *validity.warnings))
    report.update(validity_section(validity))
    reporting = validity.reporting
    if not reporting.query_ids:
        verdict = inconclusive("empty_reporting_set", "no query is left to report on after the validity checks",
                               policy, reporting.to_dict())
        report["verdict"] = verdict.to_dict()
        return GateOutcome(report, verdict, baseline, candidate)

    stats = config.statistics

    stored = stored_band(config, baseline.manifest)  # read once: the band and its repeat runs
    status, calibration = noise_status(config, golden, baseline, metric, measures, stored)
    threshold = None if status.band is None else status.band.threshold
    floor = tie_floor(candidate_run, golden.qrels, primary, reporting.query_ids, config.golden.rel)
    stratum_noise = None
    if status.band is not None and status.band.strata:
        stratum_noise = {name: item.threshold for name, item in status.band.strata.items()}
    plan = repeat_plan(config, options, status, golden, baseline, measures, stored)
    candidate_values = [candidate]  # per run, every measure, every golden query
    rerun_seeds: list[int] = []
    repeat_warning: str | None = None
    rerun_missing: RunMissing | None = None

    def rerun(count: int) -> None:
        """``count`` more runs of the candidate (cached like every run); a failure keeps what ran."""
        nonlocal repeat_warning, rerun_missing
        total = plan.candidate_runs
        queries_path = runner_queries_path(golden, producer.work_dir)
        for number in range(len(candidate_values) + 1, len(candidate_values) + count + 1):
            seed = config.noise.base_seed + number
            request = run_request(f"candidate repeat {number}/{total}", retrieval, golden, queries_path, code=code,
                                  repeat=number, seed=seed)
            try:
                run, produced = producer.produce(request, golden.universe.query_ids)
            except RunnerFailed as failure:
                if isinstance(failure, RunMissing):
                    rerun_missing = failure  # planned and handed out, never came: as any planned run
                repeat_warning = (f"the candidate's repeat {number}/{total} could not be run ({failure.message}): "
                                  f"decided on {counted(len(candidate_values), 'run', 'runs')}")
                return
            values = evaluate_all(run, golden, measures, config.golden.rel)
            candidate_values.append(values)
            rerun_seeds.append(seed)
            progress(f"candidate repeat {number}/{total}: {metric} "
                     f"{values.subset(reporting.query_ids).mean(metric):.4f} ({produced.seconds:.1f}s)")

    def look(alpha: float) -> dict[str, Any]:
        """The statistics of one look, written into the report: on single runs, or on the
        per-query means of the candidate's runs and the baseline's stored repeats."""
        # As many baseline runs as candidate runs: under no change the two means are then
        # exchangeable, so their difference is symmetric, as the sign-flip test assumes (means of
        # 5 and of 11 runs of a skewed noise differ by a skewed amount).
        runs_c = runs_b = len(candidate_values)
        base_all = baseline.values if runs_c == 1 else mean_values([baseline.values,
                                                                     *plan.baseline_repeats[:runs_c - 1]])
        cand_all = candidate if runs_c == 1 else mean_values(candidate_values)
        base_r = base_all.subset(reporting.query_ids)
        cand_r = cand_all.subset(reporting.query_ids)
        band = None if threshold is None else rep.scaled_threshold(threshold, runs_c, runs_b)
        paired = compare_paired(base_r.values[metric], cand_r.values[metric],
                                samples=stats.samples, seed=stats.seed, method=stats.ci_method)
        report.update(paired_section(metric, Universe(reporting.query_ids, golden.universe.unjudged), base_r,
                                     cand_r, paired, strata))
        report["baseline"] = {**baseline_info, "mean": finite_or_none(base_r.mean(metric))}
        report["candidate"] = {"mean": finite_or_none(cand_r.mean(metric)), "source": candidate_source}
        if reporting.excluded_leaked or reporting.held_out_only:
            # every judged query, on the same runs (or means) as the look: never single runs beside means
            everything = compare_paired(base_all.values[metric], cand_all.values[metric],
                                        samples=stats.samples, seed=stats.seed, method=stats.ci_method)
            report["delta_all_queries"] = {
                "query_count": len(golden.universe.query_ids), "mean": finite_or_none(everything.mean),
                "ci_low": finite_or_none(everything.ci_low), "ci_high": finite_or_none(everything.ci_high),
            }
            if reporting.excluded_leaked:
                carried = everything.mean - paired.mean
                report["leakage"]["delta_with_leaked"] = finite_or_none(everything.mean)
                report["leakage"]["delta_without_leaked"] = finite_or_none(paired.mean)
                # A win the leaked queries carry: shown with them, not without them.
                report["leakage"]["win_carried_by_leaks"] = bool(
                    everything.ci_low > 0 and not paired.ci_low > 0 and carried > 0)
        shown = status if band is None or runs_c == 1 else dataclasses.replace(
            status, band=dataclasses.replace(status.band, overall=dataclasses.replace(status.band.overall,
                                                                                      threshold=band)))
        exceeded, words = band_sentence(paired.mean, shown, f"retrieval-gate archive --noise-repeats "
                                                            f"{config.noise.repeats} --config {config.path.name}",
                                        (paired.ci_low, paired.ci_high))
        if runs_c > 1 and band is not None:
            words += f" (scaled to means of {runs_c} candidate and {runs_b} baseline runs)"
        report["noise_band"] = {
            "runs": None if status.band is None else status.band.runs,
            "sd": None if status.band is None else status.band.overall.sd,
            "range": None if status.band is None else status.band.overall.range,
            "threshold": band,
            "delta_sd": None if status.band is None else status.band.overall.delta_sd,
            "exceeded": exceeded,
            "stale": status.state == "stale",
            "state": status.state,
            "reason": status.reason,
            "sentence": words,
            "strata": {} if status.band is None else {
                k: rep.scaled_threshold(v.threshold, runs_c, runs_b) for k, v in status.band.strata.items()},
            "unstable_queries": 0 if status.band is None else len(status.band.unstable),
            "tie_floor": floor.to_dict(),
            "calibration": calibration,
        }
        noise = None if stratum_noise is None else {
            name: rep.scaled_threshold(value, runs_c, runs_b) for name, value in stratum_noise.items()}
        block = strata_section(base_r, cand_r, metric, strata, spec, baseline_run=baseline.run,
                               candidate_run=candidate_run, qrels=golden.qrels, queries=golden.queries,
                               noise_threshold=noise, min_effect=config.policy.min_effect,
                               margin=config.policy.max_regression, samples=stats.samples, seed=stats.seed,
                               method=stats.ci_method, alpha=STRATA_ALPHA / plan.looks)
        if "lift" in block:
            block["lift"] = _lift_shown(block["lift"], config, options.out)
        report.update(block)
        d = cand_r.values[metric] - base_r.values[metric]
        weighed = decision_evidence(d, policy.max_regression, stats.samples, stats.seed, alpha=alpha)
        report["decision"] = {"rule": policy.decision, "mode": policy.mode, **weighed.to_dict(),
                              "min_movers": MIN_MOVERS}
        power = detectable(d, policy.max_regression, band, alpha)
        report["power"] = power.to_dict()
        return {"paired": paired, "block": block, "evidence": weighed, "band": band, "d": d,
                "runs": (runs_c, runs_b), "alpha": alpha, "power": power}

    if plan.looks == 1 and plan.possible and config.noise.rerun == "always":
        progress(f"noise.rerun always: running the candidate {counted(plan.candidate_runs - 1, 'more time', 'more times')}")
        rerun(plan.candidate_runs - 1)
    first = look(look_alpha(plan.looks))
    attribution = None
    missing: RunMissing | None = None
    try:
        attribution = attribute(config, golden, baseline, baseline.run, candidate_run, retrieval, diff,
                                reporting.query_ids, metric, producer, candidate_seconds, progress, code)
    except RunnerFailed as failure:
        if isinstance(failure, RunMissing):
            missing = failure
        report["attribution"] = {"error": f"a grid cell could not be run: {failure.message}"}
        # A cell the gate's own runner failed on: the verdict stands on baseline and candidate,
        # but the comment says loudly that the credit for the bundled changes is missing, and
        # why. (A planned cell missing from runs-dir makes the verdict inconclusive below.)
        report["warnings"] = [*report.get("warnings", []), f"no attribution: {failure.purpose}: {failure.message}"]
    sweep_warning = None

    changed_swept = swept_changes(config, [c.path for c in diff])
    if changed_swept:
        progress(f"sweep: this PR changes {', '.join(changed_swept)}; scoring the sweep grid around it")
        try:
            report["sweep"], sweep_warning = gate_sweep(
                config, golden, retrieval, producer, runner_queries_path(golden, producer.work_dir), code, progress,
                changed_swept, reporting.query_ids, report["candidate"]["mean"], samples=stats.samples,
                seed=stats.seed)
        except RunnerFailed as failure:
            if isinstance(failure, RunMissing):
                missing = missing or failure
            report["warnings"] = [*report.get("warnings", []), f"no sweep: {failure.purpose}: {failure.message}"]
        except InputError as error:  # the sweep cannot be made on this yardstick (e.g. more folds than queries)
            report["warnings"] = [*report.get("warnings", []), f"no sweep: {error}"]
    if sweep_warning:
        report["warnings"] = [*report.get("warnings", []), sweep_warning]
    if attribution is not None:

        if isinstance(attribution, GridRefused):
            report["attribution"] = {"refused": attribution.reason}
        else:
            report["attribution"] = attribution.to_dict()
    identical = baseline.run is not None and same_rankings(baseline.run, candidate_run, reporting.query_ids)

    def findings_of(current: dict[str, Any]) -> Findings:
        paired = current["paired"]
        return Findings(
            metric=metric, query_count=len(reporting.query_ids), delta=paired.mean, ci_low=paired.ci_low,
            ci_high=paired.ci_high, mde=current["power"].regression_80, noise_threshold=current["band"],
            evidence=current["evidence"], reporting_set=reporting.to_dict(),
            warnings=(*validity.warnings, *filter(None, [sweep_warning, repeat_warning])),
            **validity_findings(validity),
            **traffic_findings(current["block"]),
            identical_rankings=identical)

    def look_record(current: dict[str, Any], decided: Verdict) -> rep.Look:
        e = current["evidence"]
        low = min(e.t_low, e.hall_low) if policy.mode == "non-inferiority" else e.t_low
        return rep.Look(*current["runs"], alpha=current["alpha"], kind=decided.kind,
                        codes=tuple(r.code for r in decided.reasons if r.code != "warning"),
                        delta=current["paired"].mean, low=low, high=e.t_high, band=current["band"])

    findings = findings_of(first)
    verdict = decide(findings, policy)
    looks = [look_record(first, verdict)]
    why, share = plan.reason, None
    if plan.looks == 2:
        share = rep.noise_share(first["d"], rep.noise_variance(
            [pq.subset(reporting.query_ids).values[metric] for pq in (baseline.values, *plan.baseline_repeats)]))
        undecided = undecided_by_noise(policy.mode, [r.code for r in verdict.reasons], first["evidence"],
                                           policy.max_regression, first["band"], share)
        if failures_of(findings, policy):
            why = "not rerun: the verdict fails on its validity or traffic checks, which a rerun cannot change"
        elif identical:
            why = "not rerun: the candidate ranks every query as the baseline does"
        elif undecided is None:
            why = (f"not rerun: the first look decided (run-to-run noise is {share:.0%} of the per-query spread; "
                   f"reruns need {NOISE_SHARE_TO_RERUN:.0%} and an undecided verdict)")
        else:
            more = plan.candidate_runs - 1
            progress(f"first look undecided ({undecided}): running the candidate "
                     f"{counted(more, 'more time', 'more times')}")
            rerun(more)
            if len(candidate_values) > 1:
                second = look(first["alpha"])
                verdict = decide(findings_of(second), policy)
                looks.append(look_record(second, verdict))
                why = f"rerun: {undecided}" + (f" ({plan.reason.partition('; ')[2]})"
                                               if plan.candidate_runs < config.noise.candidate_runs else "")
            else:
                # The first look was undecided and the reruns that were to decide it never came:
                # its verdict at ALPHA / 2 is not a decision (it could pass what one look at ALPHA
                # fails), so the PR is inconclusive, as when any run the gate needs fails.
                verdict = decide(findings_of(first), policy)
                looks[0] = look_record(first, verdict)
                why = f"rerun failed: {repeat_warning}"
                if rerun_missing is None:
                    verdict = inconclusive("runner_failed", f"the first look was undecided ({undecided}) and "
                                           f"{repeat_warning}", policy, reporting.to_dict())
    missing = missing or rerun_missing
    if config.noise.candidate_runs > 1:
        if plan.looks == 1 and plan.possible and config.noise.rerun == "always":
            why = (f"noise.rerun always: every run up front ({plan.reason})" if repeat_warning is None
                   else f"noise.rerun always: {repeat_warning}")
        report["repeats"] = rep.Repeats(config.noise.candidate_runs, config.noise.rerun, tuple(looks), why,
                                        share, tuple(rerun_seeds)).to_dict()
    if missing is not None:
        # The runs were planned and handed out (plan -> produce -> gate): one that never came
        # leaves the set incomplete, and a verdict on part of what was asked for is not given.
        verdict = inconclusive("missing_run", f"the planned run {missing.purpose} ({missing.key}) is not in the "
                               "runs folder: its produce step or matrix entry failed or did not upload it; rerun "
                               "that entry, then the gate", policy, reporting.to_dict())
    if report.get("judged") is not None:
        report["judged"]["failures"] = [r.message for r in verdict.reasons if r.code == "judged_share"]
    report["verdict"] = verdict.to_dict()
    report["elapsed_seconds"] = round(time.monotonic() - started, 3)
    return GateOutcome(report, verdict, baseline, candidate, extras={"validity": validity, "candidate_run": candidate_run})
