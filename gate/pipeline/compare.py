"""``compare``: two runs, one qrels, one query universe -> a paired comparison and its decision.

:func:`compare_files` is the library verb behind ``retrieval-gate compare`` (``gate.compare``):
files in, a :class:`gate.pipeline.result.Result` out. :func:`compare` does the statistics on
loaded runs: both are evaluated on the same ordered query list (byte order, so a reordered
query file gives identical numbers) and compared query by query.
"""

from __future__ import annotations

import math

import numpy as np

from gate.checks.judged_share import relevance_only
from gate.checks.score_order import score_order_of_file
from gate.common.errors import UsageError
from gate.evaluation.measures import parse_measure
from gate.evaluation.streaming import RunDigest, digest_runs, start_side_digest
from gate.inputs.config import Policy
from gate.inputs.named import check_rel, describe_inputs, load_qrels_spec, load_queries_spec
from gate.inputs.readers.records import same_rankings
from gate.inputs.traffic_shares import assign_strata, load_strata_spec, validate_against
from gate.inputs.universe import query_universe, require_overlap
from gate.pipeline.result import Result
from gate.report.build import CompareRun, build_compare_report
from gate.statistics.comparison import CompareSettings, Comparison, compare, compare_evaluated
from gate.statistics.evidence import evidence
from gate.statistics.movement import strata_section
from gate.statistics.power import detectable
from gate.verdict.directions import STRATA_DIRECTIONS
from gate.verdict.levels import ALPHA, MOVERS_TO_SHOW
from gate.verdict.rules import MODES, Findings, decide, traffic_findings

__all__ = ["CompareSettings", "Comparison", "compare", "compare_files", "decide_comparison"]


def decide_comparison(comparison: Comparison, policy=None, strata_block=None, runs=None):
    """The gate's decision on a comparison: ``run``'s statistics and traffic rules (damaged
    traffic, guarded strata, from ``strata_block``: the report's strata section), no validity
    checks and no noise band; ``runs`` (baseline, candidate) tells identical rankings apart
    (``unchanged``; :class:`gate.evaluation.streaming.RunDigest` pairs too). Returns ``(verdict, evidence)``.
    ``policy``: :class:`gate.inputs.config.Policy` (default: the gate's defaults, an improvement not needing a
    band: compare has none)."""

    policy = policy or Policy(improvement_needs_band=False)
    paired = comparison.paired
    if runs is None:
        identical = False
    elif isinstance(runs[0], RunDigest):
        # Identical rankings score identically: the files are read again only when every
        # query's values are equal.
        identical = all(np.array_equal(comparison.baseline.values[name], comparison.candidate.values[name])
                        for name in comparison.baseline.values) \
            and runs[0].same_rankings_as(runs[1], comparison.query_ids)
    else:
        identical = same_rankings(runs[0], runs[1], comparison.query_ids)
    weighed = evidence(comparison.per_query_delta(), policy.max_regression, paired.samples, paired.seed, alpha=ALPHA)
    findings = Findings(metric=comparison.metric, query_count=len(comparison.query_ids), delta=paired.mean,
                        ci_low=paired.ci_low, ci_high=paired.ci_high,
                        mde=detectable(comparison.per_query_delta(), policy.max_regression, alpha=ALPHA,
                                       level=ALPHA, movers_to_show=MOVERS_TO_SHOW).regression_80,
                        evidence=weighed,
                        **traffic_findings(strata_block),
                        identical_rankings=identical)
    return decide(findings, policy), weighed


RELEVANCE_ONLY_WARNING = (
    "these qrels judge only relevant documents (no judged non-relevant one, as Vaswani's): Judged@k and the "
    "unjudged share measure that style of judging, not the runs; to gate on such qrels with run, set "
    "judged.qrels_style: relevance-only (policy.max_unjudged: 1.0 and policy.max_judged_drop: 1.0 would turn the "
    "check off for any qrels)")


#: compare_files' settings when none are given (one instance: the settings are frozen).
_DEFAULT_SETTINGS = CompareSettings()


def _checked_arguments(max_regression: float, mode: str | None, strata: str | None, queries: str | None) -> str:
    """The arguments a caller of the library can get wrong, refused before any file is read;
    returns the mode (None: regression)."""
    if isinstance(max_regression, bool) or not isinstance(max_regression, (int, float)) \
            or not math.isfinite(max_regression) or max_regression < 0:
        raise UsageError(f"max_regression {max_regression!r}: expected a finite number, 0 or more")
    mode = "regression" if mode is None else mode
    if mode not in MODES:
        raise UsageError(f"mode {mode!r}: expected one of {', '.join(MODES)}")
    if strata and not queries:
        raise UsageError("--strata needs --queries (the query file gives each query its stratum)")
    return mode


def _qrels_for(qrels: str, settings: CompareSettings, rel_option: str, queries: str | None = None):
    """The qrels, checked to hold a label at the relevance threshold each measure uses (the
    option's, or one fixed in the measure's name: ``RR(rel=9)@10``)."""
    loaded_qrels = load_qrels_spec(qrels, queries)
    names = (settings.metric, *settings.also)
    if any(parse_measure(m).TAKES_REL and parse_measure(m).rel is None for m in names):
        check_rel(loaded_qrels, settings.rel, rel_option)
    for name in names:
        measure = parse_measure(name)
        if measure.TAKES_REL and measure.rel is not None:
            check_rel(loaded_qrels, measure.rel, f"{name} asks for rel")
    return loaded_qrels


def compare_files(
    baseline: str,
    candidate: str,
    qrels: str,
    queries: str | None = None,
    *,
    strata: str | None = None,
    settings: CompareSettings = _DEFAULT_SETTINGS,
    max_regression: float = 0.02,
    require_improvement: bool = False,
    mode: str | None = "regression",
    rel_option: str = "--rel",
):
    """``retrieval-gate compare`` as a function: two run files, the qrels (a file, a BEIR
    folder or ``irds:<id>``), optionally the golden queries and a traffic-shares file.

    Returns a :class:`gate.pipeline.result.Result`: the typed report (paired statistics,
    every measure, the strata table with traffic shares and movement buckets when ``strata``
    is given, and the decision run's rules make on the two runs) and its verdict."""

    mode = _checked_arguments(max_regression, mode, strata, queries)
    spec = load_strata_spec(strata) if strata else None
    primary, others = settings.measures()
    # Two large runs: the candidate's child process starts now and loads the qrels and the
    # queries itself while this process does (gate.evaluation.streaming.start_side_digest).
    side = start_side_digest((baseline, candidate), qrels, queries or None, (primary, *others), rel=settings.rel,
                             sha256=True)
    try:
        loaded_qrels = _qrels_for(qrels, settings, rel_option, queries or None)
        loaded_queries = load_queries_spec(queries) if queries else None
        # Each run is evaluated a few queries at a time as it is read: only per-query numbers are
        # kept (gate.evaluation.streaming), so two runs of ten million rows never sit in memory.
        universe = query_universe(loaded_qrels, loaded_queries)
    except BaseException:
        if side is not None:
            side.stop()
        raise
    described: dict[str, dict] = {}

    def describe_judgments() -> None:  # needs no run: done while the candidate's child still reads
        described.update(describe_inputs(
            qrels=(qrels, loaded_qrels),
            queries=(queries, loaded_queries) if queries is not None and loaded_queries is not None else None))

    baseline_run, candidate_run = digest_runs((baseline, candidate), loaded_qrels, (primary, *others),
                                              universe.query_ids, qrels_spec=qrels, rel=settings.rel, sha256=True,
                                              side=side, meanwhile=describe_judgments)
    for run in (baseline_run, candidate_run):
        require_overlap(run, universe.query_ids, loaded_qrels, loaded_queries)
    comparison = compare_evaluated(baseline_run.per_query, candidate_run.per_query, universe, loaded_queries,
                                   settings)
    inputs = {**describe_inputs(baseline=(baseline, baseline_run), candidate=(candidate, candidate_run)),
              **described}
    # Movement buckets and the wins sentence need only the runs and the qrels;
    # the strata table needs a query file that names each query's stratum.
    by_query = assign_strata(loaded_queries, spec) if loaded_queries is not None else {}
    if spec is not None:
        validate_against(spec, by_query)
    strata_block = strata_section(
        comparison.baseline, comparison.candidate, comparison.metric, by_query, spec, baseline_run=baseline_run,
        candidate_run=candidate_run, qrels=loaded_qrels, queries=loaded_queries, margin=max_regression,
        samples=settings.samples, seed=settings.seed, method=settings.ci_method, rule=STRATA_DIRECTIONS)
    # The gate's own decision on the two runs (run's rules on the statistics and the traffic;
    # no validity checks, and no noise band, so an improvement does not need one).
    policy = Policy(max_regression=max_regression, require_improvement=require_improvement, mode=mode,
                    improvement_needs_band=False)
    verdict, weighed = decide_comparison(comparison, policy, strata_block, runs=(baseline_run, candidate_run))

    # Scores that do not order the documents (all equal, or the ranks as numbers): each run is
    # read again for it (its evaluation kept only per-query numbers); the measures keep
    # trec_eval's order, the warning says what that order is.
    orders = {side: score_order_of_file(path, universe.query_ids, side, loaded=digest.loaded)
              for side, path, digest in (("baseline", baseline, baseline_run), ("candidate", candidate, candidate_run))}
    warnings = [order.warning for order in orders.values() if order.warning]
    if relevance_only(loaded_qrels, universe.query_ids, settings.rel):
        warnings.append(RELEVANCE_ONLY_WARNING)
    power = detectable(comparison.per_query_delta(), policy.max_regression, alpha=ALPHA, level=ALPHA,
                       movers_to_show=MOVERS_TO_SHOW)
    found = CompareRun(comparison, inputs, strata_block, power, verdict, weighed, (policy.decision, policy.mode),
                       orders, tuple(warnings))
    return Result(build_compare_report(found), verdict, "report.md.j2")
