"""The report's typed spine: one frozen record per object of report.json.

Every record mirrors one object of ``gate/report/report.schema.json`` key for key
(``tests/report/test_report_records.py`` holds the two in step); the gate builds a :class:`Report`,
writes it with ``to_dict()`` once, and the comment job reads the untrusted artifact back with
:func:`gate.report.document.read_report`, which validates before it builds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gate.report.typed import (
    ANY,
    BOOL,
    INT,
    NUM,
    STR,
    Absent,
    ListOf,
    MapOf,
    Nullable,
    PairOf,
    Record,
    RecordOf,
    key,
)
from gate.verdict.reasons import finding_of


@dataclass(frozen=True, kw_only=True)
class Reason(Record):
    """``verdict.reasons[]``, ``decision.reasons[]`` and ``accepted.failed_on[]``: a rule's stable
    code and message, and (1.9) the limit the message names after its finding and the decision
    interval a statistical message quotes."""
    code: str = key(STR, required=True)
    message: str = key(STR, required=True)
    limit: str | Absent = key(STR)
    # (1.9) the calibrated rule's decision interval [low, high] a statistical message quotes
    decision_interval: tuple[float | None, ...] | Absent = key(PairOf(Nullable(NUM)))

    @property
    def finding(self) -> str:
        """What the rule found: the message without the limit it names (the headline's phrase)."""
        return finding_of(self.message, self.limit if isinstance(self.limit, str) else None)


@dataclass(frozen=True, kw_only=True)
class Accepted(Record):
    """``accepted``: Action only: a failure accepted by a maintainer's label: the label, the
    justification (from the PR body) and the reasons it overrode"""
    label: str | Absent = key(STR)
    justification: str | Absent = key(STR)
    failed_on: tuple[Reason, ...] | Absent = key(ListOf(RecordOf(Reason)))


@dataclass(frozen=True, kw_only=True)
class DeltaAllQueries(Record):
    """``delta_all_queries``: run only, when the reporting set is smaller than the judged golden
    set: the delta over every judged query"""
    query_count: int | Absent = key(INT)
    mean: float | None | Absent = key(Nullable(NUM))
    ci_low: float | None | Absent = key(Nullable(NUM))
    ci_high: float | None | Absent = key(Nullable(NUM))


@dataclass(frozen=True, kw_only=True)
class Event(Record):
    """``event``: Action only: the event judged: name, PR number, head sha, base sha"""
    name: str | Absent = key(STR)
    pr: int | None | Absent = key(Nullable(INT))
    head_sha: str | Absent = key(STR)
    base_sha: str | None | Absent = key(Nullable(STR))


@dataclass(frozen=True, kw_only=True)
class Yardstick(Record):
    """``yardstick``: Action / run --base: where the yardstick was read (base commit <sha> |
    workspace) and where the baseline came from"""
    source: str | Absent = key(STR)
    baseline_source: str | None | Absent = key(Nullable(STR))


@dataclass(frozen=True, kw_only=True)
class Goalpost(Record):
    """``goalposts[]`` of report.json."""
    path: str | Absent = key(STR)
    change: str | Absent = key(STR)


@dataclass(frozen=True, kw_only=True)
class ReportingSet(Record):
    """``reporting_set``: run only: the queries the verdict is computed on: golden queries minus
    leaked ones (policy.exclude_leaked), held-out only when a tunable parameter changed"""
    name: str | Absent = key(STR)
    query_count: int | Absent = key(INT)
    excluded_leaked: tuple[str, ...] | Absent = key(ListOf(STR))
    held_out_only: bool | Absent = key(BOOL)


@dataclass(frozen=True, kw_only=True)
class Verdict(Record):
    """``verdict``: the decision: kind (pass | fail | inconclusive | skipped | accepted), reasons
    [{code, message}], improvement_shown, exit_code, the reporting set, and (Action) the headline"""
    kind: str = key(STR, required=True)
    reasons: tuple[Reason, ...] = key(ListOf(RecordOf(Reason)), required=True)
    improvement_shown: bool = key(BOOL, required=True)
    exit_code: int = key(INT, required=True)
    # the query set the verdict is computed on: name and query_count
    reporting_set: ReportingSet | Absent = key(RecordOf(ReportingSet))
    headline: str | Absent = key(STR)


@dataclass(frozen=True, kw_only=True)
class Decision(Record):
    """``decision``: the statistical decision (1.3): rule (calibrated | interval), n, movers (d !=
    0), losses (d < 0), hall_low/hall_high (Hall-transformed bootstrap-t 95% interval), (1.6)
    mode (regression | non-inferiority) and t_low/t_high (the bootstrap-t interval: the decision interval),
    p_noninferior / p_regression / p_improvement (one-sided sign-flip tests), loss_share_upper
    (97.5% Clopper-Pearson bound on the share of losing queries), margin, alpha, min_movers,
    samples, seed, randomization; compare only: kind, reasons, exit_code"""
    rule: str | Absent = key(STR)
    # (1.6) the policy mode: regression | non-inferiority
    mode: str | Absent = key(STR)
    n: int | Absent = key(INT)
    movers: int | Absent = key(INT)
    losses: int | Absent = key(INT)
    hall_low: float | None | Absent = key(Nullable(NUM))
    hall_high: float | None | Absent = key(Nullable(NUM))
    # (1.6) the bootstrap-t interval of the same resamples (the decision interval)
    t_low: float | None | Absent = key(Nullable(NUM))
    t_high: float | None | Absent = key(Nullable(NUM))
    p_noninferior: float | None | Absent = key(Nullable(NUM))
    p_regression: float | None | Absent = key(Nullable(NUM))
    p_improvement: float | None | Absent = key(Nullable(NUM))
    loss_share_upper: float | None | Absent = key(Nullable(NUM))
    margin: float | None | Absent = key(Nullable(NUM))
    samples: int | Absent = key(INT)
    seed: int | Absent = key(INT)
    randomization: str | None | Absent = key(Nullable(STR))
    alpha: float | None | Absent = key(Nullable(NUM))
    min_movers: int | Absent = key(INT)
    kind: str | Absent = key(STR)
    reasons: tuple[Reason, ...] | Absent = key(ListOf(RecordOf(Reason)))
    exit_code: int | Absent = key(INT)


@dataclass(frozen=True, kw_only=True)
class Power(Record):
    """``power`` (1.6): what this golden set can catch, from this PR's per-query differences: n,
    movers, sd, band (the noise band a regression must exceed, if any), power (0.8) and alpha
    (one-sided 0.025), regression_80 (the regression caught 80% of the time, a positive size;
    null: no spread), unseen_share (a regression on fewer than this share of the queries can be
    missed by the sample more than 2.5% of the time), margin, queries_for_margin (queries a -margin
    regression needs at this spread; null: never), sentence"""
    n: int | Absent = key(INT)
    movers: int | Absent = key(INT)
    sd: float | None | Absent = key(Nullable(NUM))
    band: float | None | Absent = key(Nullable(NUM))
    power: float | None | Absent = key(Nullable(NUM))
    alpha: float | None | Absent = key(Nullable(NUM))
    regression_80: float | None | Absent = key(Nullable(NUM))
    unseen_share: float | None | Absent = key(Nullable(NUM))
    margin: float | None | Absent = key(Nullable(NUM))
    queries_for_margin: int | None | Absent = key(Nullable(INT))
    sentence: str | Absent = key(STR)


@dataclass(frozen=True, kw_only=True)
class RepeatLook(Record):
    """``repeats.looks[]`` (1.7): one look at the verdict: the candidate's and the baseline's runs
    averaged per query, the one-sided level tested at, the verdict's kind and reason codes, the
    delta, the decision interval and the noise band it was compared with"""
    candidate_runs: int | Absent = key(INT)
    baseline_runs: int | Absent = key(INT)
    alpha: float | Absent = key(NUM)
    kind: str | Absent = key(STR)
    reasons: tuple[str, ...] | Absent = key(ListOf(STR))
    delta: float | None | Absent = key(Nullable(NUM))
    low: float | None | Absent = key(Nullable(NUM))
    high: float | None | Absent = key(Nullable(NUM))
    band: float | None | Absent = key(Nullable(NUM))


@dataclass(frozen=True, kw_only=True)
class Repeats(Record):
    """``repeats`` (1.7), run with ``noise.candidate_runs`` above 1: the setting (candidate_runs,
    rerun adaptive | always), each look, why the candidate was or was not run again, run-to-run
    noise's share of the per-query spread, the reruns' seeds, and whether the verdict stands on
    per-query means"""
    candidate_runs: int | Absent = key(INT)
    rerun: str | Absent = key(STR)
    looks: tuple[RepeatLook, ...] | Absent = key(ListOf(RecordOf(RepeatLook)))
    reason: str | Absent = key(STR)
    noise_share: float | None | Absent = key(Nullable(NUM))
    seeds: tuple[int, ...] | Absent = key(ListOf(INT))
    decided_on_means: bool | Absent = key(BOOL)


@dataclass(frozen=True, kw_only=True)
class LiftDefinitions(Record):
    """``lift.definitions`` of report.json."""
    bucket: str | Absent = key(STR)
    rr_delta: str | Absent = key(STR)
    recall_delta: str | Absent = key(STR)
    rank_movement: str | Absent = key(STR)
    means: str | Absent = key(STR)
    tie_sensitive: str | Absent = key(STR)


@dataclass(frozen=True, kw_only=True)
class LiftBucket(Record):
    """``lift.buckets[]`` and ``lift.by_stratum.<key>.buckets[]``: one movement bucket."""
    bucket: str | Absent = key(STR)
    count: int | Absent = key(INT)
    share: float | None | Absent = key(Nullable(NUM))
    mean_rr_delta: float | None | Absent = key(Nullable(NUM))
    mean_rank_movement: float | None | Absent = key(Nullable(NUM))
    mean_recall_delta: float | None | Absent = key(Nullable(NUM))
    tie_sensitive: int | Absent = key(INT)
    rr_contribution: float | None | Absent = key(Nullable(NUM))


@dataclass(frozen=True, kw_only=True)
class LiftCounts(Record):
    """``lift.counts`` and ``lift.by_stratum.<key>.counts``: queries per bucket."""
    promoted: int | Absent = key(INT)
    demoted: int | Absent = key(INT)
    new_hit: int | Absent = key(INT)
    lost_hit: int | Absent = key(INT)
    unchanged_hit: int | Absent = key(INT)
    unchanged_miss: int | Absent = key(INT)


@dataclass(frozen=True, kw_only=True)
class LiftStratum(Record):
    """``lift.by_stratum.<key>`` of report.json."""
    queries: int | None | Absent = key(Nullable(INT))
    bucketed: int | Absent = key(INT)
    no_relevant: int | Absent = key(INT)
    counts: LiftCounts | Absent = key(RecordOf(LiftCounts))
    mean_rr_before: float | None | Absent = key(Nullable(NUM))
    mean_rr_after: float | None | Absent = key(Nullable(NUM))
    mean_rr_delta: float | None | Absent = key(Nullable(NUM))
    mean_recall_before: float | None | Absent = key(Nullable(NUM))
    mean_recall_after: float | None | Absent = key(Nullable(NUM))
    mean_recall_delta: float | None | Absent = key(Nullable(NUM))
    tie_sensitive: int | Absent = key(INT)
    buckets: tuple[LiftBucket, ...] | Absent = key(ListOf(RecordOf(LiftBucket)))


@dataclass(frozen=True, kw_only=True)
class LiftRun(Record):
    """``lift.before`` and ``lift.after``: a run the lift compares."""
    source: str | Absent = key(STR)
    tag: str | None | Absent = key(Nullable(STR))


@dataclass(frozen=True, kw_only=True)
class Lift(Record):
    """``lift``: movement buckets of the first relevant document (promoted, demoted, new_hit,
    lost_hit, unchanged_hit, unchanged_miss) overall and per stratum, with RR and recall deltas and
    their definitions"""
    before: LiftRun | Absent = key(RecordOf(LiftRun))
    after: LiftRun | Absent = key(RecordOf(LiftRun))
    qrels: str | Absent = key(STR)
    rel_threshold: int | Absent = key(INT)
    k_rank: int | Absent = key(INT)
    k_recall: int | Absent = key(INT)
    queries: int | None | Absent = key(Nullable(INT))
    bucketed: int | Absent = key(INT)
    no_relevant: int | Absent = key(INT)
    counts: LiftCounts | Absent = key(RecordOf(LiftCounts))
    mean_rr_before: float | None | Absent = key(Nullable(NUM))
    mean_rr_after: float | None | Absent = key(Nullable(NUM))
    mean_rr_delta: float | None | Absent = key(Nullable(NUM))
    mean_recall_before: float | None | Absent = key(Nullable(NUM))
    mean_recall_after: float | None | Absent = key(Nullable(NUM))
    mean_recall_delta: float | None | Absent = key(Nullable(NUM))
    tie_sensitive: int | Absent = key(INT)
    buckets: tuple[LiftBucket, ...] | Absent = key(ListOf(RecordOf(LiftBucket)))
    no_relevant_queries: tuple[str, ...] | Absent = key(ListOf(STR))
    missing_in_before: tuple[str, ...] | Absent = key(ListOf(STR))
    missing_in_after: tuple[str, ...] | Absent = key(ListOf(STR))
    unjudged_run_queries: int | Absent = key(INT)
    unjudged_golden: tuple[str, ...] | Absent = key(ListOf(STR))
    by_stratum: dict[str, LiftStratum] | Absent = key(MapOf(RecordOf(LiftStratum)))
    definitions: LiftDefinitions | Absent = key(RecordOf(LiftDefinitions))


@dataclass(frozen=True, kw_only=True)
class TrafficCounts(Record):
    """``traffic.counts`` of report.json."""
    improved: int | Absent = key(INT)
    damaged: int | Absent = key(INT)
    untouched: int | Absent = key(INT)
    # (1.6) queries in strata neither shown to move nor shown to stay within the margin
    unclear: int | Absent = key(INT)
    total: int | Absent = key(INT)


@dataclass(frozen=True, kw_only=True)
class TrafficStrata(Record):
    """``traffic.strata`` of report.json."""
    damaged: tuple[str, ...] | Absent = key(ListOf(STR))
    improved: tuple[str, ...] | Absent = key(ListOf(STR))
    untouched: tuple[str, ...] | Absent = key(ListOf(STR))
    # (1.6) strata whose direction is unclear
    unclear: tuple[str, ...] | Absent = key(ListOf(STR))
    unmeasured: tuple[str, ...] | Absent = key(ListOf(STR))


@dataclass(frozen=True, kw_only=True)
class TrafficPercent(Record):
    """``traffic.percent`` of report.json."""
    damaged: int | Absent = key(INT)
    improved: int | Absent = key(INT)
    untouched: int | Absent = key(INT)
    # (1.6) whole percent of traffic unclear
    unclear: int | Absent = key(INT)
    unmeasured: int | Absent = key(INT)


@dataclass(frozen=True, kw_only=True)
class Traffic(Record):
    """``traffic``: the traffic accounting: shares of traffic improved, damaged, untouched, unclear
    (1.6) and unmeasured (by strata; they add up to 1), the traffic-weighted delta with its CI,
    counts and sentences; null without strata"""
    improved: float | None | Absent = key(Nullable(NUM))
    damaged: float | None | Absent = key(Nullable(NUM))
    untouched: float | None | Absent = key(Nullable(NUM))
    # (1.6) share of traffic in strata where neither a change nor its absence is shown
    unclear: float | None | Absent = key(Nullable(NUM))
    unmeasured: float | None | Absent = key(Nullable(NUM))
    percent: TrafficPercent | Absent = key(RecordOf(TrafficPercent))
    strata: TrafficStrata | Absent = key(RecordOf(TrafficStrata))
    weighted_delta: float | None | Absent = key(Nullable(NUM))
    weighted_ci_low: float | None | Absent = key(Nullable(NUM))
    weighted_ci_high: float | None | Absent = key(Nullable(NUM))
    unweighted_delta: float | None | Absent = key(Nullable(NUM))
    samples: int | Absent = key(INT)
    seed: int | Absent = key(INT)
    counts: TrafficCounts | Absent = key(RecordOf(TrafficCounts))
    wins: int | Absent = key(INT)
    losses: int | Absent = key(INT)
    ties: int | Absent = key(INT)
    sentence: str | Absent = key(STR)
    wins_sentence: str | Absent = key(STR)
    guarded_damaged: tuple[str, ...] | Absent = key(ListOf(STR))


@dataclass(frozen=True, kw_only=True)
class StratumRow(Record):
    """``strata[]`` of report.json: direction is improved | damaged | untouched | unclear (1.6) |
    not_measured, decided by the bounded-mean test (1.6; p_bound, bound_low/bound_high, p_holm
    its Holm adjustment) and, for untouched, the margin"""
    stratum: str | Absent = key(STR)
    n: int | Absent = key(INT)
    share: float | None | Absent = key(Nullable(NUM))
    baseline: float | None | Absent = key(Nullable(NUM))
    candidate: float | None | Absent = key(Nullable(NUM))
    delta: float | None | Absent = key(Nullable(NUM))
    ci_low: float | None | Absent = key(Nullable(NUM))
    ci_high: float | None | Absent = key(Nullable(NUM))
    p_randomization: float | None | Absent = key(Nullable(NUM))
    randomization: str | None | Absent = key(Nullable(STR))
    # (1.6) two-sided p of the bounded-mean test (Gaffke's bound for a mean in [-1, 1]), which
    # decides the direction
    p_bound: float | None | Absent = key(Nullable(NUM))
    # (1.6) its 95% interval (2.5% a side), valid whatever the shape of the differences
    bound_low: float | None | Absent = key(Nullable(NUM))
    bound_high: float | None | Absent = key(Nullable(NUM))
    # p_bound Holm-adjusted across the measured strata (before 1.6: the sign-flip p's)
    p_holm: float | None | Absent = key(Nullable(NUM))
    wins: int | Absent = key(INT)
    losses: int | Absent = key(INT)
    ties: int | Absent = key(INT)
    mde: float | None | Absent = key(Nullable(NUM))
    noise_threshold: float | None | Absent = key(Nullable(NUM))
    # (1.6) untouched needs the bounded interval within +/- max(margin, noise_threshold)
    margin: float | None | Absent = key(Nullable(NUM))
    underpowered: bool | Absent = key(BOOL)
    underpowered_reasons: tuple[str, ...] | Absent = key(ListOf(STR))
    direction: str | Absent = key(STR)
    decided_by: str | Absent = key(STR)
    guarded: bool | Absent = key(BOOL)
    # "n = 0, not measured" for a stratum with no query in the reporting set, else null
    label: str | None | Absent = key(Nullable(STR))


@dataclass(frozen=True, kw_only=True)
class SetupCheck(Record):
    """``noise_band.calibration.setup`` (1.6): whether n golden queries support the margin on this
    stack: noise_sd (per-query sd of an A/A difference), mover_share (the share of queries an A/A
    pair moves), queries_needed (non-inferiority: for a
    no-op PR to pass 95% of the time; regression: for a -margin regression to be caught 80% of
    the time at the stack's own noise), supports, unseen_share, any_shape_queries,
    simulated_blocked and simulated (non-inferiority: the share of simulated no-op PRs the rule
    itself blocked), sentence"""
    n: int | Absent = key(INT)
    margin: float | None | Absent = key(Nullable(NUM))
    mode: str | Absent = key(STR)
    noise_sd: float | None | Absent = key(Nullable(NUM))
    band: float | None | Absent = key(Nullable(NUM))
    mover_share: float | None | Absent = key(Nullable(NUM))
    unseen_share: float | None | Absent = key(Nullable(NUM))
    any_shape_queries: int | None | Absent = key(Nullable(INT))
    queries_needed: int | None | Absent = key(Nullable(INT))
    supports: bool | None | Absent = key(Nullable(BOOL))
    simulated_blocked: float | None | Absent = key(Nullable(NUM))
    simulated: int | Absent = key(INT)
    sentence: str | Absent = key(STR)
    # (1.7) setup_repeats only: the runs each side and the deciding look's one-sided level
    candidate_runs: int | Absent = key(INT)
    alpha: float | Absent = key(NUM)


@dataclass(frozen=True, kw_only=True)
class Calibration(Record):
    """``noise_band.calibration`` of report.json."""
    pairs: int | Absent = key(INT)
    pairs_possible: int | Absent = key(INT)
    fail: int | Absent = key(INT)
    improvement_shown: int | Absent = key(INT)
    inconclusive: int | Absent = key(INT)
    blocking: int | Absent = key(INT)
    inconclusive_blocks: bool | Absent = key(BOOL)
    runs: int | Absent = key(INT)
    query_count: int | Absent = key(INT)
    metric: str | Absent = key(STR)
    independent_pairs: int | Absent = key(INT)
    independent_fail: int | Absent = key(INT)
    independent_blocking: int | Absent = key(INT)
    fail_rate_upper95: float | None | Absent = key(Nullable(NUM))
    blocking_rate_upper95: float | None | Absent = key(Nullable(NUM))
    improvement_rate_upper95: float | None | Absent = key(Nullable(NUM))
    identical_runs: bool | Absent = key(BOOL)
    samples: int | Absent = key(INT)
    seed: int | Absent = key(INT)
    margin: float | None | Absent = key(Nullable(NUM))
    failed_pairs: tuple[tuple[int, ...], ...] | Absent = key(ListOf(ListOf(INT)))
    sentence: str | Absent = key(STR)
    # (1.6) the policy mode the pairs were decided in
    mode: str | Absent = key(STR)
    # (1.6) whether the set supports the margin on this stack (the setup check)
    setup: SetupCheck | Absent = key(RecordOf(SetupCheck))
    # (1.7) the band each pair met: "others" (the band of the runs not in the pair) or "none"
    pair_band: str | Absent = key(STR)
    # (1.7) the setup check for means of noise.candidate_runs runs, when configured
    setup_repeats: SetupCheck | None | Absent = key(Nullable(RecordOf(SetupCheck)))


@dataclass(frozen=True, kw_only=True)
class TieFloor(Record):
    """``noise_band.tie_floor`` of report.json."""
    count: int | Absent = key(INT)
    max_query_span: float | None | Absent = key(Nullable(NUM))
    mean_shift: float | None | Absent = key(Nullable(NUM))
    queries: tuple[str, ...] | None | Absent = key(Nullable(ListOf(STR)))


@dataclass(frozen=True, kw_only=True)
class NoiseBand(Record):
    """``noise_band``: run only: runs, sd, range, threshold (max(3 x sd, range)), delta_sd, exceeded
    (|delta| > threshold; null without a usable band), stale, state current|rescored|stale|absent,
    reason, sentence, strata thresholds, unstable_queries, tie_floor {count, max_query_span,
    mean_shift, queries}"""
    runs: int | None = key(Nullable(INT), required=True)
    sd: float | None = key(Nullable(NUM), required=True)
    range: float | None = key(Nullable(NUM), required=True)
    threshold: float | None = key(Nullable(NUM), required=True)
    delta_sd: float | None | Absent = key(Nullable(NUM))
    exceeded: bool | None = key(Nullable(BOOL), required=True)
    stale: bool = key(BOOL, required=True)
    state: str | Absent = key(STR)
    reason: str | Absent = key(STR)
    sentence: str | Absent = key(STR)
    strata: dict[str, float | None] | Absent = key(MapOf(Nullable(NUM)))
    unstable_queries: int | Absent = key(INT)
    tie_floor: TieFloor | Absent = key(RecordOf(TieFloor))
    calibration: Calibration | None | Absent = key(Nullable(RecordOf(Calibration)))


@dataclass(frozen=True, kw_only=True)
class MeasureMeans(Record):
    """``measures.<key>`` of report.json."""
    baseline: float | None = key(Nullable(NUM), required=True)
    candidate: float | None = key(Nullable(NUM), required=True)
    delta: float | None = key(Nullable(NUM), required=True)


@dataclass(frozen=True, kw_only=True)
class PerQueryRow(Record):
    """``per_query[]`` of report.json."""
    query_id: str = key(STR, required=True)
    stratum: str | None = key(Nullable(STR), required=True)
    baseline: float | None = key(Nullable(NUM), required=True)
    candidate: float | None = key(Nullable(NUM), required=True)
    delta: float | None = key(Nullable(NUM), required=True)


@dataclass(frozen=True, kw_only=True)
class TieCounts(Record):
    """``ties.<key>`` of report.json."""
    baseline: int | Absent = key(INT)
    candidate: int | Absent = key(INT)


@dataclass(frozen=True, kw_only=True)
class Queries(Record):
    """``queries``: query-set bookkeeping: ids missing in either run, extra ids in the runs, golden
    queries without judgments, judged queries without a relevant document"""
    # universe queries absent from the baseline run (scored 0, as trec_eval -c)
    missing_in_baseline: tuple[str, ...] = key(ListOf(STR), required=True)
    # universe queries absent from the candidate run (scored 0)
    missing_in_candidate: tuple[str, ...] = key(ListOf(STR), required=True)
    # queries in either run but outside the universe (ignored)
    extra: tuple[str, ...] = key(ListOf(STR), required=True)
    # golden queries with no qrels entry (left out of the universe)
    unjudged: tuple[str, ...] | Absent = key(ListOf(STR))
    # universe queries with no document at or above the relevance threshold
    no_relevant: tuple[str, ...] | Absent = key(ListOf(STR))


@dataclass(frozen=True, kw_only=True)
class Delta(Record):
    """``delta``: paired statistics of d = candidate - baseline per query"""
    # mean of d
    mean: float | None = key(Nullable(NUM), required=True)
    # lower end of the 95% bootstrap interval
    ci_low: float | None = key(Nullable(NUM), required=True)
    # upper end of the 95% bootstrap interval
    ci_high: float | None = key(Nullable(NUM), required=True)
    # share of bootstrap resample means <= 0
    p_le_zero: float | None = key(Nullable(NUM), required=True)
    # bootstrap resamples B
    samples: int = key(INT, required=True)
    # seed of numpy.random.default_rng for every resampling step
    seed: int = key(INT, required=True)
    # bootstrap interval method
    method: str = key(STR, required=True)
    # queries with d > 0
    wins: int = key(INT, required=True)
    # queries with d < 0
    losses: int = key(INT, required=True)
    # queries with d == 0
    ties: int = key(INT, required=True)
    # two-sided paired sign-flip p-value
    p_randomization: float | None = key(Nullable(NUM), required=True)
    # exact enumeration (n <= 16) or Monte Carlo with B resamples
    randomization: str | None | Absent = key(Nullable(STR))
    # minimum detectable effect at alpha 0.05 and power 0.8 (normal approximation)
    mde: float | None = key(Nullable(NUM), required=True)
    # standard deviation of d (ddof 1)
    sd: float | None | Absent = key(Nullable(NUM))


@dataclass(frozen=True, kw_only=True)
class Candidate(Record):
    """``candidate``: the candidate's mean on the reporting set; for run its source (runner, cache,
    runs-dir, file), or the runner's error and log tail when it failed"""
    mean: float | None | Absent = key(Nullable(NUM))
    # run only: file, runner, cache or runs-dir
    source: str | None | Absent = key(Nullable(STR))
    error: str | Absent = key(STR)
    log_tail: str | Absent = key(STR)
    # (1.8) the failed run's log file, relative to the workspace (or the output folder)
    log: str | Absent = key(STR)


@dataclass(frozen=True, kw_only=True)
class ScoreOrder(Record):
    """``run_scores.baseline`` / ``run_scores.candidate`` (1.8): whether a run's scores order its
    documents, over the judged queries it ranks"""
    run: str | Absent = key(STR)
    queries: int | Absent = key(INT)
    # queries with more than one document whose scores are all equal (ranked by docno alone)
    constant: int | Absent = key(INT)
    constant_examples: tuple[str, ...] | Absent = key(ListOf(STR))
    # queries whose scores are their ranks (1, 2, 3 ... down the list: read in reverse)
    rank_as_score: int | Absent = key(INT)
    rank_examples: tuple[str, ...] | Absent = key(ListOf(STR))
    # queries whose scores are minus their ranks (ordered as meant: counted, no warning)
    minus_rank: int | Absent = key(INT)
    warning: str | None | Absent = key(Nullable(STR))


@dataclass(frozen=True, kw_only=True)
class RunScores(Record):
    """``run_scores`` (1.8), run and compare: whether each run's scores order its documents"""
    baseline: ScoreOrder | None | Absent = key(Nullable(RecordOf(ScoreOrder)))
    candidate: ScoreOrder | None | Absent = key(Nullable(RecordOf(ScoreOrder)))


@dataclass(frozen=True, kw_only=True)
class PromptMatch(Record):
    """``prompts.matches[]`` of report.json."""
    file: str | Absent = key(STR)
    line: int | Absent = key(INT)
    kind: Any | Absent = key(ANY)
    query_id: str | None | Absent = key(Nullable(STR))
    doc_id: str | None | Absent = key(Nullable(STR))
    detail: str | Absent = key(STR)


@dataclass(frozen=True, kw_only=True)
class PromptGroup(Record):
    """``prompts.by_query[]`` of report.json: the matches of one query or document (1.5)."""
    kind: Any | Absent = key(ANY)
    # the query id (query_text) or doc id (relevant_doc_id, relevant_doc_text)
    id: str | Absent = key(STR)
    count: int | Absent = key(INT)
    files: int | Absent = key(INT)
    # file:line of its first match
    first: str | Absent = key(STR)


@dataclass(frozen=True, kw_only=True)
class Prompts(Record):
    """``prompts``: golden-set material found in prompt files (null when no prompts globs are
    configured)"""
    files_scanned: int | Absent = key(INT)
    count: int | Absent = key(INT)
    matches: tuple[PromptMatch, ...] | Absent = key(ListOf(RecordOf(PromptMatch)))
    # (1.5) what kept part of the check from running: a glob matching no file, a file not text
    problems: tuple[str, ...] | Absent = key(ListOf(STR))
    # (1.5) every match grouped by the query or document it quotes, most matches first
    by_query: tuple[PromptGroup, ...] | Absent = key(ListOf(RecordOf(PromptGroup)))
    # (1.5) files not read as their suffix says (a .yaml that does not parse: plain text)
    notes: tuple[str, ...] | Absent = key(ListOf(STR))
    # (1.5) golden queries too short for a copy with one changed word to reach the threshold
    short_query_count: int | Absent = key(INT)
    short_queries: tuple[str, ...] | Absent = key(ListOf(STR))
    # (1.5) the trigram-Jaccard threshold query texts were matched at
    threshold: float | Absent = key(NUM)
    # (1.5) golden queries under min_tokens tokens: too short to attribute, not looked for
    too_short_count: int | Absent = key(INT)
    too_short: tuple[str, ...] | Absent = key(ListOf(STR))
    min_tokens: int | Absent = key(INT)


@dataclass(frozen=True, kw_only=True)
class UndeclaredChange(Record):
    """``tuning.undeclared_changes[]`` of report.json (1.5)."""
    path: str | Absent = key(STR)
    # a number, or "<absent>" on the side the key is missing from
    old: Any | Absent = key(ANY)
    new: Any | Absent = key(ANY)


@dataclass(frozen=True, kw_only=True)
class Tuning(Record):
    """``tuning``: the tuning-split check (null when no tuning params are declared)"""
    # a tuning split is declared
    declared: bool | Absent = key(BOOL)
    # declared tunable parameters (config paths)
    params: tuple[str, ...] | Absent = key(ListOf(STR))
    # tunable parameters this change moves
    changed_params: tuple[str, ...] | Absent = key(ListOf(STR))
    # the report is restricted to held-out queries
    applies: bool | Absent = key(BOOL)
    holdout_count: int | Absent = key(INT)
    tuning_count: int | Absent = key(INT)
    # query ids in both the tuning and the held-out set
    overlap: tuple[str, ...] | Absent = key(ListOf(STR))
    warning: str | None | Absent = key(Nullable(STR))
    # (1.5) ids of the tuning or holdout list that are no judged golden query (the first 50; the
    # count covers all), and what keeps the split from doing what it was declared for
    unknown_ids: tuple[str, ...] | Absent = key(ListOf(STR))
    unknown_count: int | Absent = key(INT)
    problems: tuple[str, ...] | Absent = key(ListOf(STR))
    # (1.5) changed keys that look like tuning knobs (a number under bm25, fusion, weights, ...)
    # and are not in tuning.params: each a warning naming the key and the risk
    undeclared_changes: tuple[UndeclaredChange, ...] | Absent = key(ListOf(RecordOf(UndeclaredChange)))


@dataclass(frozen=True, kw_only=True)
class JudgedLimits(Record):
    """``judged.limits`` of report.json."""
    max_unjudged: float | None | Absent = key(Nullable(NUM))
    max_judged_drop: float | None | Absent = key(Nullable(NUM))
    material_drop: float | None | Absent = key(Nullable(NUM))


@dataclass(frozen=True, kw_only=True)
class JudgedSensitivity(Record):
    """``judged.sensitivity`` of report.json."""
    unjudged_in_union: int | Absent = key(INT)
    delta_unjudged_as_zero: float | None | Absent = key(Nullable(NUM))
    delta_unjudged_as_top: float | None | Absent = key(Nullable(NUM))
    delta_condensed: float | None | Absent = key(Nullable(NUM))
    top_grade: int | Absent = key(INT)


@dataclass(frozen=True, kw_only=True)
class JudgedShare(Record):
    """``judged.baseline`` and ``judged.candidate``: one run's judged share."""
    judged: float | None | Absent = key(Nullable(NUM))
    unjudged: float | None | Absent = key(Nullable(NUM))
    by_stratum: dict[str, float | None] | Absent = key(MapOf(Nullable(NUM)))


@dataclass(frozen=True, kw_only=True)
class Judged(Record):
    """``judged``: run only: Judged@k of both runs overall and per stratum, drop, judgment_limited,
    sensitivity {delta_unjudged_as_zero, delta_unjudged_as_top, delta_condensed}, limits,
    failures"""
    k: int | Absent = key(INT)
    # (1.4) the queries the judged share is measured on: every judged golden query, not only the
    # reporting set
    query_count: int | Absent = key(INT)
    measure: str | Absent = key(STR)
    baseline: JudgedShare | Absent = key(RecordOf(JudgedShare))
    candidate: JudgedShare | Absent = key(RecordOf(JudgedShare))
    drop: float | None | Absent = key(Nullable(NUM))
    judgment_limited: bool | Absent = key(BOOL)
    sensitivity: JudgedSensitivity | None | Absent = key(Nullable(RecordOf(JudgedSensitivity)))
    unjudged_candidate_top: int | Absent = key(INT)
    limits: JudgedLimits | Absent = key(RecordOf(JudgedLimits))
    failures: tuple[str, ...] | Absent = key(ListOf(STR))


@dataclass(frozen=True, kw_only=True)
class LeakChunk(Record):
    """``leakage.matched[].chunks[]`` of report.json: a chunk the query matched and its document."""
    chunk_id: str | Absent = key(STR)
    doc_id: str | None | Absent = key(Nullable(STR))


@dataclass(frozen=True, kw_only=True)
class LeakMatch(Record):
    """``leakage.matched[]`` of report.json."""
    query_id: str | Absent = key(STR)
    text: str | Absent = key(STR)
    chunk_id: str | Absent = key(STR)
    doc_id: str | None | Absent = key(Nullable(STR))
    mode: str | Absent = key(STR)
    score: float | None | Absent = key(Nullable(NUM))
    chunks_matched: int | Absent = key(INT)
    # (1.4) the chunks it matched, in corpus order: the first 50 (chunks_matched counts all)
    chunks: tuple[LeakChunk, ...] | Absent = key(ListOf(RecordOf(LeakChunk)))
    tag: str | None | Absent = key(Nullable(STR))


@dataclass(frozen=True, kw_only=True)
class Leakage(Record):
    """``leakage``: run only: golden queries found in the corpus snapshots: queries_checked, count,
    matched [{query_id, text, chunk_id, doc_id, mode, score, chunks_matched, tag new|removed|both}],
    skipped_short, new, removed, both, recommendation, delta_with_leaked, delta_without_leaked,
    win_carried_by_leaks"""
    queries_checked: int | Absent = key(INT)
    count: int | Absent = key(INT)
    matched: tuple[LeakMatch, ...] | Absent = key(ListOf(RecordOf(LeakMatch)))
    skipped_short: tuple[str, ...] | Absent = key(ListOf(STR))
    modes: tuple[str, ...] | Absent = key(ListOf(STR))
    threshold: float | None | Absent = key(Nullable(NUM))
    chunks_scanned: int | Absent = key(INT)
    new: tuple[str, ...] | Absent = key(ListOf(STR))
    removed: tuple[str, ...] | Absent = key(ListOf(STR))
    both: tuple[str, ...] | Absent = key(ListOf(STR))
    baseline_count: int | None | Absent = key(Nullable(INT))
    candidate_count: int | Absent = key(INT)
    same_snapshot: bool | Absent = key(BOOL)
    baseline_corpus: str | None | Absent = key(Nullable(STR))
    recommendation: str | None | Absent = key(Nullable(STR))
    delta_with_leaked: float | None | Absent = key(Nullable(NUM))
    delta_without_leaked: float | None | Absent = key(Nullable(NUM))
    win_carried_by_leaks: bool | Absent = key(BOOL)


@dataclass(frozen=True, kw_only=True)
class ConfigDiff(Record):
    """``config_diff[]`` of report.json."""
    path: str = key(STR, required=True)
    # any JSON value
    old: Any = key(ANY, required=True)
    # any JSON value
    new: Any = key(ANY, required=True)


@dataclass(frozen=True, kw_only=True)
class InputChange(Record):
    """``baseline.differences[]`` and ``baseline.unattributed_changes[]``: an input, archived against current."""
    input: str | Absent = key(STR)
    archived: str | None | Absent = key(Nullable(STR))
    current: str | Absent = key(STR)


@dataclass(frozen=True, kw_only=True)
class ArchivedBaseline(Record):
    """``baseline.archived``: run only: the archived number as archived: metric, mean, query_count,
    queries, qrels (ids and sha256), created, git_commit; null when reconstructed or absent"""
    metric: str | Absent = key(STR)
    mean: float | None | Absent = key(Nullable(NUM))
    query_count: int | Absent = key(INT)
    queries: str | None | Absent = key(Nullable(STR))
    queries_sha256: str | Absent = key(STR)
    qrels: str | Absent = key(STR)
    qrels_sha256: str | Absent = key(STR)
    created: str | Absent = key(STR)
    git_commit: str | None | Absent = key(Nullable(STR))


@dataclass(frozen=True, kw_only=True)
class Baseline(Record):
    """``baseline``: the baseline's mean on the reporting set and, for run, how it was made
    commensurable (resolution, archived, differences, unattributed changes, notes)"""
    # mean of the primary measure over the universe (missing queries score 0)
    mean: float | None | Absent = key(Nullable(NUM))
    # run only: how the baseline was made commensurable: reused (identical inputs), rescored (archived
    # lists re-scored against today's qrels), replayed (archived config run on today's queries),
    # reconstructed (base commit's config run; no usable manifest); null when it could not be
    resolution: str | None | Absent = key(Nullable(STR))
    # run only: the archived number as archived: metric, mean, query_count, queries, qrels (ids and
    # sha256), created, git_commit; null when reconstructed or absent
    archived: ArchivedBaseline | None | Absent = key(Nullable(RecordOf(ArchivedBaseline)))
    # run only: inputs that differ between the manifest and today: {input, archived, current}
    differences: tuple[InputChange, ...] | Absent = key(ListOf(RecordOf(InputChange)))
    # run only: files listed under environment: whose sha256 differs from the manifest's (lock files,
    # image tags): changes beside the config diff
    unattributed_changes: tuple[InputChange, ...] | Absent = key(ListOf(RecordOf(InputChange)))
    # one sentence, e.g. archived 0.610 on golden-v4 (80 q, qrels-v3) -> replayed 0.598 on golden-v5
    # (140 q, qrels-v5)
    description: str | Absent = key(STR)
    config_sha256: str | Absent = key(STR)
    # runner, cache, runs-dir or null (archived lists)
    run_source: str | None | Absent = key(Nullable(STR))
    notes: tuple[str, ...] | Absent = key(ListOf(STR))


@dataclass(frozen=True, kw_only=True)
class CandidateCode(Record):
    """``candidate_code``: run only: the code under test the candidate's runs are keyed on: kind
    (git-tree | inputs), sha (null when it cannot be seen), description"""
    kind: str | Absent = key(STR)
    sha: str | None | Absent = key(Nullable(STR))
    description: str | Absent = key(STR)


@dataclass(frozen=True, kw_only=True)
class CandidateConfig(Record):
    """``candidate_config``: run only: the PR's retrieval config path and canonical sha256"""
    path: str | Absent = key(STR)
    sha256: str | Absent = key(STR)


@dataclass(frozen=True, kw_only=True)
class Tool(Record):
    """``tool``: name and version of the gate that wrote the report"""
    name: str | Absent = key(STR)
    version: str = key(STR, required=True)


@dataclass(frozen=True, kw_only=True)
class InputFile(Record):
    """``inputs.<key>`` of report.json."""
    path: str = key(STR, required=True)
    sha256: str = key(STR, required=True)
    unit: str | Absent = key(STR)
    canonical: bool | Absent = key(BOOL)
    count: int | Absent = key(INT)


@dataclass(frozen=True, kw_only=True)
class GridVerification(Record):
    """``attribution.verification`` of report.json."""
    queries_sha256: str | None | Absent = key(Nullable(STR))
    qrels_sha256: str | None | Absent = key(Nullable(STR))
    corpus_factor: str | None | Absent = key(Nullable(STR))
    corpus_sha256: dict[str, str | None] | None | Absent = key(Nullable(MapOf(Nullable(STR))))
    notes: tuple[str, ...] | Absent = key(ListOf(STR))
    query_ids_sha256: str | Absent = key(STR)
    queries: int | None | Absent = key(Nullable(INT))


@dataclass(frozen=True, kw_only=True)
class GridCost(Record):
    """``attribution.cost`` of report.json."""
    cell_seconds: dict[str, float | None] | None | Absent = key(Nullable(MapOf(Nullable(NUM))))
    cells_total_seconds: float | None | Absent = key(Nullable(NUM))
    grid_seconds: float | None | Absent = key(Nullable(NUM))
    runs: int | Absent = key(INT)


@dataclass(frozen=True, kw_only=True)
class AttributionReadings(Record):
    """``attribution.readings`` of report.json."""
    headline: str | Absent = key(STR)
    additivity: str | None | Absent = key(Nullable(STR))
    interactions: tuple[str, ...] | Absent = key(ListOf(STR))
    check: str | None | Absent = key(Nullable(STR))
    concentration: tuple[str, ...] | Absent = key(ListOf(STR))
    notes: tuple[str, ...] | Absent = key(ListOf(STR))
    bundle: str | None | Absent = key(Nullable(STR))


@dataclass(frozen=True, kw_only=True)
class AttributionHeadline(Record):
    """``attribution.headline`` of report.json."""
    text: str | None | Absent = key(Nullable(STR))
    effects: tuple[str, ...] | Absent = key(ListOf(STR))
    estimates: dict[str, float | None] | Absent = key(MapOf(Nullable(NUM)))


@dataclass(frozen=True, kw_only=True)
class AttributionBundle(Record):
    """``attribution.bundle`` of report.json."""
    text: str | None | Absent = key(Nullable(STR))
    reason: str | Absent = key(STR)
    disabled: bool | Absent = key(BOOL)
    changed: tuple[str, ...] | Absent = key(ListOf(STR))
    runs_needed: int | Absent = key(INT)
    max_factors: int | Absent = key(INT)


@dataclass(frozen=True, kw_only=True)
class AttributionConcentration(Record):
    """``attribution.concentration[]`` of report.json."""
    id: str | Absent = key(STR)
    term: str | Absent = key(STR)
    given: dict[str, str] | Absent = key(MapOf(STR))
    label: str | Absent = key(STR)
    estimate: float | None | Absent = key(Nullable(NUM))
    n: int | Absent = key(INT)
    sign: int | Absent = key(INT)
    net: float | None | Absent = key(Nullable(NUM))
    same_sign_total: float | None | Absent = key(Nullable(NUM))
    opposite_sign_total: float | None | Absent = key(Nullable(NUM))
    same_sign_queries: int | Absent = key(INT)
    opposite_sign_queries: int | Absent = key(INT)
    queries: int | None | Absent = key(Nullable(INT))
    mean_movement: float | None | Absent = key(Nullable(NUM))
    share: float | None | Absent = key(Nullable(NUM))
    redistribution: bool | Absent = key(BOOL)
    phrase: str | Absent = key(STR)
    query_ids: tuple[str, ...] | Absent = key(ListOf(STR))
    sentence: str | Absent = key(STR)


@dataclass(frozen=True, kw_only=True)
class InteractionTerm(Record):
    """``attribution.interaction_check.terms[]`` of report.json."""
    term: str | Absent = key(STR)
    given: dict[str, str] | Absent = key(MapOf(STR))
    ways: dict[str, float | None] | Absent = key(MapOf(Nullable(NUM)))
    abs_diff: float | None | Absent = key(Nullable(NUM))
    max_query_abs_diff: float | None | Absent = key(Nullable(NUM))
    agree: bool | Absent = key(BOOL)


@dataclass(frozen=True, kw_only=True)
class InteractionCheck(Record):
    """``attribution.interaction_check`` of report.json."""
    term: str | Absent = key(STR)
    given: dict[str, str] | Absent = key(MapOf(STR))
    # the interaction computed from the effects of the factor in this position (a: the first), one key
    # per factor of the term
    a_way: float | None | Absent = key(Nullable(NUM))
    # the interaction computed from the effects of the factor in this position (a: the first), one key
    # per factor of the term
    b_way: float | None | Absent = key(Nullable(NUM))
    ways: dict[str, float | None] | Absent = key(MapOf(Nullable(NUM)))
    agree: bool | Absent = key(BOOL)
    abs_diff: float | None | Absent = key(Nullable(NUM))
    tolerance: float | None | Absent = key(Nullable(NUM))
    terms: tuple[InteractionTerm, ...] | Absent = key(ListOf(RecordOf(InteractionTerm)))
    # the interaction computed from the effects of the factor in this position (a: the first), one key
    # per factor of the term
    c_way: float | None | Absent = key(Nullable(NUM))
    # the interaction computed from the effects of the factor in this position (a: the first), one key
    # per factor of the term
    d_way: float | None | Absent = key(Nullable(NUM))
    # the interaction computed from the effects of the factor in this position (a: the first), one key
    # per factor of the term
    e_way: float | None | Absent = key(Nullable(NUM))
    # the interaction computed from the effects of the factor in this position (a: the first), one key
    # per factor of the term
    f_way: float | None | Absent = key(Nullable(NUM))


@dataclass(frozen=True, kw_only=True)
class AttributionEffect(Record):
    """``attribution.effects[]`` of report.json."""
    id: str | Absent = key(STR)
    term: str | Absent = key(STR)
    kind: str | Absent = key(STR)
    order: int | Absent = key(INT)
    given: dict[str, str] | Absent = key(MapOf(STR))
    estimate: float | None | Absent = key(Nullable(NUM))
    ci_low: float | None | Absent = key(Nullable(NUM))
    ci_high: float | None | Absent = key(Nullable(NUM))
    p: float | None | Absent = key(Nullable(NUM))
    p_kind: str | Absent = key(STR)
    p_holm: float | None | Absent = key(Nullable(NUM))
    label: str | Absent = key(STR)
    ways: dict[str, float | None] | Absent = key(MapOf(Nullable(NUM)))


@dataclass(frozen=True, kw_only=True)
class AttributionGrid(Record):
    """``attribution.grid`` of report.json."""
    rows: str | Absent = key(STR)
    columns: str | Absent = key(STR)
    means: tuple[tuple[float | None, ...], ...] | Absent = key(ListOf(ListOf(Nullable(NUM))))
    row_effects: tuple[float | None, ...] | Absent = key(ListOf(Nullable(NUM)))
    column_effects: tuple[float | None, ...] | Absent = key(ListOf(Nullable(NUM)))
    interaction: float | None | Absent = key(Nullable(NUM))


@dataclass(frozen=True, kw_only=True)
class GridCell(Record):
    """``attribution.cells[]`` of report.json."""
    name: str | Absent = key(STR)
    levels: dict[str, str] | Absent = key(MapOf(STR))
    role: str | Absent = key(STR)
    mean: float | None | Absent = key(Nullable(NUM))
    seconds: float | None | Absent = key(Nullable(NUM))
    run: str | Absent = key(STR)
    missing: int | Absent = key(INT)
    source: str | Absent = key(STR)
    config_sha256: str | Absent = key(STR)


@dataclass(frozen=True, kw_only=True)
class Attribution(Record):
    """``attribution``: run (and factorial): the 2^k grid of bundled changes: factors, cells
    (levels, role, mean, source), the 2x2 grid, effects with bootstrap CIs and Holm-adjusted p, the
    interaction check (computed both ways), concentration, readings, cost, verification of the
    cells' inputs; or {error} / {refused} / a bundle note when no grid was run"""
    factors: tuple[str, ...] | None | Absent = key(Nullable(ListOf(STR)))
    metric: str | Absent = key(STR)
    queries: int | None | Absent = key(Nullable(INT))
    cells: tuple[GridCell, ...] | Absent = key(ListOf(RecordOf(GridCell)))
    grid: AttributionGrid | None | Absent = key(Nullable(RecordOf(AttributionGrid)))
    effects: tuple[AttributionEffect, ...] | Absent = key(ListOf(RecordOf(AttributionEffect)))
    interaction_check: InteractionCheck | None | Absent = key(Nullable(RecordOf(InteractionCheck)))
    concentration: tuple[AttributionConcentration, ...] | Absent = key(ListOf(RecordOf(AttributionConcentration)))
    bundle: AttributionBundle | None | Absent = key(Nullable(RecordOf(AttributionBundle)))
    headline: AttributionHeadline | Absent = key(RecordOf(AttributionHeadline))
    sentences: tuple[str, ...] | Absent = key(ListOf(STR))
    readings: AttributionReadings | None | Absent = key(Nullable(RecordOf(AttributionReadings)))
    cost: GridCost | Absent = key(RecordOf(GridCost))
    verification: GridVerification | Absent = key(RecordOf(GridVerification))
    notes: tuple[str, ...] | Absent = key(ListOf(STR))
    samples: int | Absent = key(INT)
    seed: int | Absent = key(INT)
    ci_method: str | Absent = key(STR)
    ci_note: str | Absent = key(STR)
    # why attribution could not be computed (a grid cell failed)
    error: str | Absent = key(STR)
    # why the grid was refused (too many factors, an unverifiable cell)
    refused: str | Absent = key(STR)


@dataclass(frozen=True, kw_only=True)
class SweepDelta(Record):
    """``sweep.cells[].delta_vs_reference``: the cell minus the config as it stands, paired over
    queries, with its 95% interval"""
    mean: float | None = key(Nullable(NUM), required=True)
    ci_low: float | None | Absent = key(Nullable(NUM))
    ci_high: float | None | Absent = key(Nullable(NUM))


@dataclass(frozen=True, kw_only=True)
class SweepCell(Record):
    """``sweep.cells[]``: a cell's name, its mean and 95% bootstrap interval on every judged query,
    how many cross-validation folds chose it, and its swept values"""
    name: str = key(STR, required=True)
    mean: float | None = key(Nullable(NUM), required=True)
    ci_low: float | None = key(Nullable(NUM), required=True)
    ci_high: float | None = key(Nullable(NUM), required=True)
    width: float | None | Absent = key(Nullable(NUM))
    query_count: int | Absent = key(INT)
    folds_chosen: int | Absent = key(INT)
    params: Mapping[str, Any] | Absent = key(MapOf(ANY))
    delta_vs_reference: SweepDelta | None | Absent = key(Nullable(RecordOf(SweepDelta)))


@dataclass(frozen=True, kw_only=True)
class SweepMaximum(Record):
    """``sweep.maximum``: the best cell on every judged query and its interval: the optimistic number"""
    cell: str = key(STR, required=True)
    mean: float | None = key(Nullable(NUM), required=True)
    ci_low: float | None | Absent = key(Nullable(NUM))
    ci_high: float | None | Absent = key(Nullable(NUM))
    width: float | None | Absent = key(Nullable(NUM))
    query_count: int | Absent = key(INT)
    optimistic: bool | Absent = key(BOOL)


@dataclass(frozen=True, kw_only=True)
class SweepCrossValidated(Record):
    """``sweep.cross_validated``: every query scored by the cell chosen on the other folds: mean, 95%
    interval (the choices re-run on every resample), folds, stratified, the cell each fold chose"""
    mean: float | None = key(Nullable(NUM), required=True)
    ci_low: float | None | Absent = key(Nullable(NUM))
    ci_high: float | None | Absent = key(Nullable(NUM))
    width: float | None | Absent = key(Nullable(NUM))
    query_count: int | Absent = key(INT)
    folds: int | Absent = key(INT)
    stratified: bool | Absent = key(BOOL)
    fold_choices: tuple[str, ...] | Absent = key(ListOf(STR))


@dataclass(frozen=True, kw_only=True)
class SweepOptimism(Record):
    """``sweep.optimism``: the maximum minus the cross-validated estimate, its 95% interval, and the
    optimism noise alone gives a grid of this size (mean and 95th percentile)"""
    mean: float | None = key(Nullable(NUM), required=True)
    ci_low: float | None | Absent = key(Nullable(NUM))
    ci_high: float | None | Absent = key(Nullable(NUM))
    width: float | None | Absent = key(Nullable(NUM))
    query_count: int | Absent = key(INT)
    expected_from_noise: float | None | Absent = key(Nullable(NUM))
    expected_from_noise_95: float | None | Absent = key(Nullable(NUM))


@dataclass(frozen=True, kw_only=True)
class SweepHeldOut(Record):
    """``sweep.held_out``: the cell chosen on the tuning queries, scored on the held-out ones"""
    chosen: str = key(STR, required=True)
    tuning_count: int | Absent = key(INT)
    mean: float | None = key(Nullable(NUM), required=True)
    ci_low: float | None | Absent = key(Nullable(NUM))
    ci_high: float | None | Absent = key(Nullable(NUM))
    width: float | None | Absent = key(Nullable(NUM))
    query_count: int | Absent = key(INT)


@dataclass(frozen=True, kw_only=True)
class Sweep(Record):
    """``sweep`` (1.5): a grid of configs scored on the same queries: every cell, the maximum
    (optimistic), the held-out and cross-validated estimates, the optimism and the trade-off"""
    metric: str = key(STR, required=True)
    cells: tuple[SweepCell, ...] = key(ListOf(RecordOf(SweepCell)), required=True)
    maximum: SweepMaximum = key(RecordOf(SweepMaximum), required=True)
    cross_validated: SweepCrossValidated = key(RecordOf(SweepCrossValidated), required=True)
    optimism: SweepOptimism = key(RecordOf(SweepOptimism), required=True)
    held_out: SweepHeldOut | None | Absent = key(Nullable(RecordOf(SweepHeldOut)))
    reference: str | None | Absent = key(Nullable(STR))
    held_out_note: str | None | Absent = key(Nullable(STR))
    trade_off: str | Absent = key(STR)
    samples: int | Absent = key(INT)
    seed: int | Absent = key(INT)
    # run only: the swept or tunable keys the PR changes, the cell a sweep tuned on the reporting
    # queries would pick, on how many, and whether the PR's values are that cell
    changed_params: tuple[str, ...] | Absent = key(ListOf(STR))
    reporting_maximum: str | None | Absent = key(Nullable(STR))
    reporting_maximum_tied: tuple[str, ...] | Absent = key(ListOf(STR))
    reporting_query_count: int | Absent = key(INT)
    candidate_is_reporting_maximum: bool | Absent = key(BOOL)


@dataclass(frozen=True, kw_only=True)
class TrendPoint(Record):
    """``trend.points[]``: an archived baseline's mean (its commit) or this PR's candidate (commit null)"""
    commit: str | None = key(Nullable(STR), required=True)
    value: float = key(NUM, required=True)
    candidate: bool = key(BOOL, required=True)


@dataclass(frozen=True, kw_only=True)
class Trend(Record):
    """``trend``: (1.10) Action / run --base: the last archived baselines on main commensurable with the
    candidate (same golden queries, qrels, metric, rel; at most 8, oldest first) and the candidate
    on every judged query; the sparkline opens with a break marker when an older baseline is not
    commensurable; null when the baselines branch holds no archive"""
    metric: str = key(STR, required=True)
    points: tuple[TrendPoint, ...] = key(ListOf(RecordOf(TrendPoint)), required=True)
    sparkline: str = key(STR, required=True)
    first: float = key(NUM, required=True)
    last: float = key(NUM, required=True)
    broken: bool = key(BOOL, required=True)


@dataclass(frozen=True, kw_only=True)
class ResourceChange(Record):
    """``latency.p50``, ``latency.p95``, ``cost.mean``: a statistic on both sides, the candidate's
    change with its paired bootstrap 95% interval, and the change relative to the baseline's (null
    when the baseline's is 0)"""
    baseline: float | Absent = key(NUM)
    candidate: float | Absent = key(NUM)
    change: float | Absent = key(NUM)
    ci_low: float | Absent = key(NUM)
    ci_high: float | Absent = key(NUM)
    relative: float | None | Absent = key(Nullable(NUM))
    relative_ci_low: float | None | Absent = key(Nullable(NUM))
    relative_ci_high: float | None | Absent = key(Nullable(NUM))


@dataclass(frozen=True, kw_only=True)
class LatencySide(Record):
    """``latency.baseline``, ``latency.candidate``: one side's p50/p95/p99 latency (ms) on the
    reporting set, where its timings came from (run | cache | archive | file) and the run's wall
    time as its sidecar gives it (reported, never judged)"""
    p50_ms: float | Absent = key(NUM)
    p95_ms: float | Absent = key(NUM)
    p99_ms: float | Absent = key(NUM)
    source: str | Absent = key(STR)
    run_wall_time_ms: float | None | Absent = key(Nullable(NUM))


@dataclass(frozen=True, kw_only=True)
class Latency(Record):
    """``latency`` (1.10): run, when both runs have timings: per side p50/p95/p99, the p50 and p95
    changes with paired bootstrap intervals (samples, seed), the percentile method, the noise band's
    p95 latency threshold, and policy.latency.p95_max_increase with whether it is breached"""
    query_count: int | Absent = key(INT)
    samples: int | Absent = key(INT)
    seed: int | Absent = key(INT)
    percentile_method: str | Absent = key(STR)
    baseline: LatencySide | Absent = key(RecordOf(LatencySide))
    candidate: LatencySide | Absent = key(RecordOf(LatencySide))
    p50: ResourceChange | Absent = key(RecordOf(ResourceChange))
    p95: ResourceChange | Absent = key(RecordOf(ResourceChange))
    band_threshold_ms: float | None | Absent = key(Nullable(NUM))
    limit: str | None | Absent = key(Nullable(STR))
    breached: bool | None | Absent = key(Nullable(BOOL))


@dataclass(frozen=True, kw_only=True)
class CostSide(Record):
    """``cost.baseline``, ``cost.candidate``: one side's cost per query (mean) and in total on the
    reporting set, and where its costs came from"""
    mean: float | Absent = key(NUM)
    total: float | Absent = key(NUM)
    source: str | Absent = key(STR)


@dataclass(frozen=True, kw_only=True)
class Cost(Record):
    """``cost`` (1.10): run, when both runs' timings give costs: per side mean and total, the mean's
    change with its paired bootstrap interval, and policy.cost.max_increase with whether it is
    breached"""
    query_count: int | Absent = key(INT)
    samples: int | Absent = key(INT)
    seed: int | Absent = key(INT)
    baseline: CostSide | Absent = key(RecordOf(CostSide))
    candidate: CostSide | Absent = key(RecordOf(CostSide))
    mean: ResourceChange | Absent = key(RecordOf(ResourceChange))
    limit: str | None | Absent = key(Nullable(STR))
    breached: bool | None | Absent = key(Nullable(BOOL))


@dataclass(frozen=True, kw_only=True)
class NotLandedJudgment(Record):
    """``judgments.<side>.not_landed_first[]``: a judgment no chunk of this side takes: its query,
    what it names (doc:ID, span:ID[start,end), quote:ID "...", chunk:ID) and its line in the
    judgments file"""
    query_id: str = key(STR, required=True)
    anchor: str = key(STR, required=True)
    line: int | None = key(Nullable(INT), required=True)


@dataclass(frozen=True, kw_only=True)
class JudgmentKinds(Record):
    """``judgments.kinds``: the judgments of the file by kind"""
    document: int = key(INT, required=True)
    span: int = key(INT, required=True)
    quote: int = key(INT, required=True)
    chunk: int = key(INT, required=True)


@dataclass(frozen=True, kw_only=True)
class JudgmentsSide(Record):
    """``judgments.baseline``, ``judgments.candidate``: one side's mapping: the corpus it was mapped
    onto, how many judgments landed on a chunk and how many on none (the first few named), the
    (query, chunk) judgments made and the distinct chunks judged, and the unjudged share of its top
    k under the mapping (judged.<side>.unjudged, quoted; null without the judged-share check)"""
    corpus: str = key(STR, required=True)
    landed: int = key(INT, required=True)
    not_landed: int = key(INT, required=True)
    not_landed_first: tuple[NotLandedJudgment, ...] = key(ListOf(RecordOf(NotLandedJudgment)), required=True)
    chunk_judgments: int = key(INT, required=True)
    chunks_judged: int = key(INT, required=True)
    unjudged_share: float | None = key(Nullable(NUM), required=True)


@dataclass(frozen=True, kw_only=True)
class Judgments(Record):
    """``judgments`` (1.11): run: how judgments anchored to documents, spans or quotes were mapped
    onto each side's chunks, by the rule stated, both sides alike; null for chunk-id qrels"""
    source: str = key(STR, required=True)
    rule: str = key(STR, required=True)
    share: float = key(NUM, required=True)
    kinds: JudgmentKinds = key(RecordOf(JudgmentKinds), required=True)
    baseline: JudgmentsSide | None = key(Nullable(RecordOf(JudgmentsSide)), required=True)
    candidate: JudgmentsSide = key(RecordOf(JudgmentsSide), required=True)


@dataclass(frozen=True, kw_only=True)
class Report(Record):
    """``report.json``: Written by every comparing command. Versioning: adding keys bumps the minor
    part of schema_version; renaming or removing keys bumps the major part. A run whose baseline
    cannot be made commensurable, or whose runner failed, has a verdict but no delta: no difference
    is ever reported between incommensurable numbers."""
    # MAJOR.MINOR of this schema
    schema_version: str = key(STR, required=True)
    # the command that wrote the report (compare, run, ...)
    command: str = key(STR, required=True)
    # canonical ir_measures-style name of the primary measure, threshold explicit when not 1, e.g.
    # nDCG@10, RR(rel=2)@10
    metric: str = key(STR, required=True)
    # run (and factorial): the 2^k grid of bundled changes: factors, cells (levels, role, mean,
    # source), the 2x2 grid, effects with bootstrap CIs and Holm-adjusted p, the interaction check
    # (computed both ways), concentration, readings, cost, verification of the cells' inputs; or
    # {error} / {refused} / a bundle note when no grid was run
    attribution: Attribution | Absent = key(RecordOf(Attribution))
    # every input: its path, sha256 (canonical for qrels and queries: sorted records, normalised
    # whitespace; byte-level for run files) and record count
    inputs: dict[str, InputFile] = key(MapOf(RecordOf(InputFile)), required=True)
    # name and version of the gate that wrote the report
    tool: Tool = key(RecordOf(Tool), required=True)
    # run only: the suite name from the config
    suite: str | Absent = key(STR)
    # run only: the PR's retrieval config path and canonical sha256
    candidate_config: CandidateConfig | Absent = key(RecordOf(CandidateConfig))
    # run only: the code under test the candidate's runs are keyed on: kind (git-tree | inputs), sha
    # (null when it cannot be seen), description
    candidate_code: CandidateCode | None | Absent = key(Nullable(RecordOf(CandidateCode)))
    # the baseline's mean on the reporting set and, for run, how it was made commensurable
    # (resolution, archived, differences, unattributed changes, notes)
    baseline: Baseline | Absent = key(RecordOf(Baseline))
    # run only: keys that differ between the baseline's retrieval config and the candidate's, as
    # dotted paths; '<absent>' marks a key on one side only
    config_diff: tuple[ConfigDiff, ...] | Absent = key(ListOf(RecordOf(ConfigDiff)))
    # run only: golden queries found in the corpus snapshots: queries_checked, count, matched
    # [{query_id, text, chunk_id, doc_id, mode, score, chunks_matched, tag new|removed|both}],
    # skipped_short, new, removed, both, recommendation, delta_with_leaked, delta_without_leaked,
    # win_carried_by_leaks
    leakage: Leakage | None | Absent = key(Nullable(RecordOf(Leakage)))
    # run only: Judged@k of both runs overall and per stratum, drop, judgment_limited, sensitivity
    # {delta_unjudged_as_zero, delta_unjudged_as_top, delta_condensed}, limits, failures
    judged: Judged | None | Absent = key(Nullable(RecordOf(Judged)))
    # the tuning-split check (null when no tuning params are declared)
    tuning: Tuning | None | Absent = key(Nullable(RecordOf(Tuning)))
    # golden-set material found in prompt files (null when no prompts globs are configured)
    prompts: Prompts | None | Absent = key(Nullable(RecordOf(Prompts)))
    # run only: the queries the verdict is computed on: golden queries minus leaked ones
    # (policy.exclude_leaked), held-out only when a tunable parameter changed
    reporting_set: ReportingSet | Absent = key(RecordOf(ReportingSet))
    # warnings of the run (validity checks that could not run fully, yardstick read from the head,
    # scores that do not order a run's documents, ...), shown in the comment; compare: its warnings,
    # shown in report.md and the terminal
    warnings: tuple[str, ...] | Absent = key(ListOf(STR))
    # (1.8) run and compare: whether each run's scores order its documents (all equal, or the
    # ranks as numbers: ranked by trec_eval's rule in an order nobody chose)
    run_scores: RunScores | Absent = key(RecordOf(RunScores))
    # queries in the evaluated universe: golden queries with at least one qrels entry
    query_count: int | Absent = key(INT)
    # the candidate's mean on the reporting set; for run its source (runner, cache, runs-dir, file),
    # or the runner's error and log tail when it failed
    candidate: Candidate | Absent = key(RecordOf(Candidate))
    # paired statistics of d = candidate - baseline per query
    delta: Delta | Absent = key(RecordOf(Delta))
    # query-set bookkeeping: ids missing in either run, extra ids in the runs, golden queries without
    # judgments, judged queries without a relevant document
    queries: Queries | Absent = key(RecordOf(Queries))
    # per measure: how many queries in each run have equal scores straddling the cutoff, so their
    # value depends on docno order alone
    ties: dict[str, TieCounts] | Absent = key(MapOf(RecordOf(TieCounts)))
    # the primary measure per query, sorted by query id in byte order (the order the statistics use)
    per_query: tuple[PerQueryRow, ...] | Absent = key(ListOf(RecordOf(PerQueryRow)))
    # every evaluated measure keyed by canonical name
    measures: dict[str, MeasureMeans] | Absent = key(MapOf(RecordOf(MeasureMeans)))
    # run only: runs, sd, range, threshold (max(3 x sd, range)), delta_sd, exceeded (|delta| >
    # threshold; null without a usable band), stale, state current|rescored|stale|absent, reason,
    # sentence, strata thresholds, unstable_queries, tie_floor {count, max_query_span, mean_shift,
    # queries}
    noise_band: NoiseBand | Absent = key(RecordOf(NoiseBand))
    # per stratum: n, traffic share, means, delta with bootstrap CI, sign-flip p, the bounded-mean
    # test's p and interval (1.6) and its Holm-adjusted p, wins/losses/ties, MDE, noise threshold,
    # margin (1.6), underpowered reasons, direction (improved | damaged | untouched | unclear (1.6) |
    # not_measured), guarded
    strata: tuple[StratumRow, ...] | Absent = key(ListOf(RecordOf(StratumRow)))
    # the traffic accounting: shares of traffic improved, damaged, untouched, unclear (1.6) and
    # unmeasured (by strata; they add up to 1), the traffic-weighted delta with its CI, counts and
    # sentences; null without strata
    traffic: Traffic | None | Absent = key(Nullable(RecordOf(Traffic)))
    # movement buckets of the first relevant document (promoted, demoted, new_hit, lost_hit,
    # unchanged_hit, unchanged_miss) overall and per stratum, with RR and recall deltas and their
    # definitions
    lift: Lift | Absent = key(RecordOf(Lift))
    # one sentence: how many queries improved and how the mean moved
    wins_sentence: str | Absent = key(STR)
    # golden queries that no stratum rule assigned
    unassigned: int | Absent = key(INT)
    # the statistical decision (1.3): rule (calibrated | interval), n, movers (d != 0), losses (d <
    # 0), hall_low/hall_high (Hall-transformed bootstrap-t 95% interval), p_noninferior / p_regression
    # / p_improvement (one-sided sign-flip tests), loss_share_upper (97.5% Clopper-Pearson bound on
    # the share of losing queries), margin, alpha, min_movers, samples, seed, randomization; compare
    # only: kind, reasons, exit_code
    decision: Decision | Absent = key(RecordOf(Decision))
    # (1.6) run and compare: what this golden set can catch, from this PR's own spread: the
    # regression caught 80% of the time, the share of queries a regression can hide on, the
    # queries the margin would need; its sentence is the power line of the comment and terminal
    power: Power | Absent = key(RecordOf(Power))
    # (1.7) run with noise.candidate_runs above 1: each look at the verdict (single runs, then
    # per-query means of the candidate's reruns and the baseline's stored repeats) and why
    repeats: Repeats | Absent = key(RecordOf(Repeats))
    # the decision: kind (pass | fail | inconclusive | skipped | accepted), reasons [{code, message}],
    # improvement_shown, exit_code, the reporting set, and (Action) the headline
    verdict: Verdict | Absent = key(RecordOf(Verdict))
    # wall-clock time of the run
    elapsed_seconds: float | None | Absent = key(Nullable(NUM))
    # Action / run --base: yardstick files (gate config, golden set, qrels, manifest) the change
    # modifies: {path, change}
    goalposts: tuple[Goalpost, ...] | Absent = key(ListOf(RecordOf(Goalpost)))
    # Action / run --base: where the yardstick was read (base commit <sha> | workspace) and where the
    # baseline came from
    yardstick: Yardstick | Absent = key(RecordOf(Yardstick))
    # Action only: the event judged: name, PR number, head sha, base sha
    event: Event | Absent = key(RecordOf(Event))
    # run only, when the reporting set is smaller than the judged golden set: the delta over every
    # judged query
    delta_all_queries: DeltaAllQueries | Absent = key(RecordOf(DeltaAllQueries))
    # Action only: a failure accepted by a maintainer's label: the label, the justification (from the
    # PR body) and the reasons it overrode
    accepted: Accepted | Absent = key(RecordOf(Accepted))
    # (1.5) run and the Action: the command that reproduces this report on a developer's machine,
    # quoted by the PR comment (a later `retrieval-gate comment` of this report quotes it too)
    reproduce_command: str | Absent = key(STR)
    # (1.5) sweep, and run when a PR changes a swept or tunable parameter: the grid's cells, its
    # maximum (optimistic), held-out and cross-validated estimates and the optimism
    sweep: Sweep | Absent = key(RecordOf(Sweep))
    # (1.10) Action / run --base: the last archived baselines on main commensurable with the
    # candidate (same golden queries, qrels, metric, rel; at most 8, oldest first) and the
    # candidate on every judged query; the sparkline opens with a break marker when an older
    # baseline is not commensurable; null when the baselines branch holds no archive
    trend: Trend | None | Absent = key(Nullable(RecordOf(Trend)))
    # (1.10) history.url of the gate config: the history page the comment links
    history_url: str | Absent = key(STR)
    # (1.10) run: p50/p95/p99 latency per side and the change with its interval; null when a run has
    # no timings (timings_note says which)
    latency: Latency | None | Absent = key(Nullable(RecordOf(Latency)))
    # (1.10) run: cost per query and in total per side and the change; null when a run has no costs
    cost: Cost | None | Absent = key(Nullable(RecordOf(Cost)))
    # (1.10) run: why there is no latency comparison when one run has timings and the other none
    timings_note: str | Absent = key(STR)
    # (1.11) run: how anchored judgments (documents, spans, quotes) were mapped onto each side's
    # chunks; null for chunk-id qrels
    judgments: Judgments | None | Absent = key(Nullable(RecordOf(Judgments)))
