"""The verdict's rules: the policy's limits applied to the findings.

Kinds and exit codes (``gate.verdict.kinds``): ``pass`` 0, ``skipped`` 0, ``accepted`` 0,
``fail`` 1, ``inconclusive`` 3 when it blocks (0 when ``inconclusive_blocks: false``).
Every verdict carries the reasons that decided it, each with a stable code.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gate.checks.validity import ReportingSet
from gate.common.numbers import counted, signed

# The policy is the config's ``policy:`` block, its defaults declared once (gate.inputs.config).
from gate.inputs.config import Policy
from gate.statistics.evidence import Evidence
from gate.statistics.movement import StrataSection
from gate.statistics.strata import DAMAGED
from gate.verdict.kinds import EXIT_BY_KIND, INCONCLUSIVE_NOT_BLOCKING_EXIT
from gate.verdict.levels import ALPHA, GUARDED_ALPHA, MAX_QUERY_LOSS, MIN_MOVERS, MIN_QUERIES
from gate.verdict.reasons import Reason
from gate.verdict.resource_limits import ResourceFinding, resource_failures, resource_notes

STATISTICAL = {"regression_shown", "improvement_required", "improvement_shown", "non_inferior", "underpowered",
               "too_few_movers", "unchanged", "held_out_too_small", "no_regression_shown"}
#: policy.mode: "regression" (the seed's rule: fail on a regression shown beyond the noise band,
#: else pass with the power line) or "non-inferiority" (a pass must show "no worse than
#: -margin"; inconclusive when it cannot). benchmarks/bench_decision.py measures both.
MODES = ("regression", "non-inferiority")

#: Decision rules: "calibrated" (default) or "interval", the seed's rule on the reported interval.
DECISIONS = ("calibrated", "interval")


@dataclass(frozen=True)
class Verdict:
    kind: str
    reasons: tuple[Reason, ...]
    improvement_shown: bool = False
    exit_code: int = 0
    reporting_set: ReportingSet | None = None  # None: no reporting set (a comparison, a skipped change)

    @property
    def headline_reason(self) -> str:
        return self.reasons[0].message if self.reasons else ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "reasons": [r.to_dict() for r in self.reasons],
            "improvement_shown": self.improvement_shown,
            "exit_code": self.exit_code,
            "reporting_set": {} if self.reporting_set is None else self.reporting_set.to_dict(),
        }


def _exit(kind: str, policy: Policy) -> int:
    if kind == "inconclusive" and not policy.inconclusive_blocks:
        return INCONCLUSIVE_NOT_BLOCKING_EXIT
    return EXIT_BY_KIND[kind]


def inconclusive(code: str, message: str, policy: Policy, reporting_set: ReportingSet | None = None) -> Verdict:
    return Verdict("inconclusive", (Reason(code, message),), False, _exit("inconclusive", policy), reporting_set)


def decide_delta(
    delta: float,
    ci_low: float,
    ci_high: float,
    mde: float | None,
    metric: str,
    query_count: int,
    policy: Policy,
    noise_threshold: float | None = None,
    reporting_set: ReportingSet | None = None,
    evidence: Evidence | None = None,
) -> Verdict:
    """The statistical part of the policy: regression shown, non-inferiority, improvement.

    ``policy.mode == "regression"``: a regression shown beyond the noise band fails, anything
    else passes (``no_regression_shown``; the power line beside the verdict says what this set
    catches). ``"non-inferiority"``: a pass needs non-inferiority shown; neither shown is
    inconclusive (``underpowered``, ``too_few_movers``).

    With ``evidence`` (:class:`gate.statistics.evidence.Evidence`) and ``policy.decision ==
    "calibrated"`` (the default), each claim needs the bootstrap-t interval and the one-sided
    sign-flip test to agree, and at least :data:`MIN_MOVERS` queries that moved;
    non-inferiority also needs Hall's skew-corrected interval, or holds, distribution-free,
    when the Clopper-Pearson bound on the
    share of losing queries times :data:`MAX_QUERY_LOSS` stays below the margin (from n = 183
    queries). Otherwise (``"interval"``) the seed's rule on ``[ci_low, ci_high]``.
    ``ci_low``/``ci_high`` are the reported interval either way; a noise band must be exceeded
    for a regression or an improvement to count.
    """
    mode = policy.mode
    band = noise_threshold if noise_threshold is not None else 0.0
    interval = f"{metric} {signed(delta)} [{signed(ci_low)}, {signed(ci_high)}]"
    beyond_band = abs(delta) > band
    band_ok = noise_threshold is not None or not policy.improvement_needs_band
    if evidence is not None and policy.decision == "calibrated":
        claims = _calibrated_claims(evidence, policy, mode, interval, query_count, beyond_band, band_ok)
    else:
        claims = _Claims(regression=ci_high < 0, non_inferior=ci_low >= -policy.max_regression,
                         improvement=ci_low > 0 and beyond_band and band_ok, worst_case=False, enough=False,
                         improvement_without_band=ci_low > 0, evidence=None,
                         text=f"{interval}, {counted(query_count, 'query', 'queries')}")
    if claims.regression and beyond_band:
        reason, kind = claims.reason("regression_shown", f"regression shown ({claims.text})"), "fail"
    elif mode == "regression" or claims.non_inferior:
        reason, kind = _not_worse(claims, policy, mode, band, beyond_band, band_ok)
    elif claims.evidence is not None and not claims.enough:
        e = claims.evidence
        reason = Reason("too_few_movers", f"only {e.movers} of {counted(e.n, 'query', 'queries')} moved ({interval}): "
                                          f"too few to tell a change of less than {policy.max_regression:g} from one "
                                          f"the sample missed (at least {MIN_MOVERS} needed, or more queries)")
        kind = "inconclusive"
    else:
        detectable = ("what this set catches is not estimable (no spread)" if mde is None
                      else f"this set catches a -{mde:.3f} regression 80% of the time")
        reason = claims.reason("underpowered",
                               f"neither a regression nor non-inferiority is shown ({claims.text}); {detectable}")
        kind = "inconclusive"
    return Verdict(kind, (reason,), claims.improvement, _exit(kind, policy), reporting_set)


@dataclass(frozen=True)
class _Claims:
    """What one look shows: each claim, and the evidence text its reason quotes."""

    regression: bool
    non_inferior: bool
    improvement: bool  # shown, beyond the noise band, and counted (a band exists where one is needed)
    worst_case: bool  # non-inferior distribution-free: few enough queries can lose
    enough: bool  # at least MIN_MOVERS queries moved
    improvement_without_band: bool  # shown, whether or not a band lets it count
    evidence: Evidence | None
    text: str
    # the calibrated rule's decision interval, which ``text`` quotes (None under the interval rule)
    decision_interval: tuple[float, float] | None = None

    def reason(self, code: str, finding: str) -> Reason:
        """A reason that quotes these claims' evidence, with the decision interval as a value."""
        return Reason(code, finding, decision_interval=self.decision_interval)


def _calibrated_claims(e: Evidence, policy: Policy, mode: str, interval: str, query_count: int, beyond_band: bool,
                       band_ok: bool) -> _Claims:
    """The calibrated rule: the bootstrap-t interval and the one-sided sign-flip test agree, on
    enough movers; non-inferiority also clears Hall's interval, or holds distribution-free."""
    margin = policy.max_regression
    enough = e.movers >= MIN_MOVERS
    level = e.alpha  # ALPHA, or its share at one of several looks
    worst_case = e.loss_share_upper * MAX_QUERY_LOSS < margin
    # A false pass at the margin is the costly error of non-inferiority: a left-skewed loss
    # (a few queries losing much) also has to clear Hall's skew-corrected interval.
    non_inferior = (enough and min(e.t_low, e.hall_low) >= -margin and e.p_noninferior <= level) or worst_case
    shown_improvement = e.t_low > 0 and e.p_improvement <= level and enough
    # non-inferiority is decided on the lower of the two lower ends: the interval quoted is the one that decided
    low = min(e.t_low, e.hall_low) if mode == "non-inferiority" else e.t_low
    return _Claims(regression=enough and e.t_high < 0 and e.p_regression <= level, non_inferior=non_inferior,
                   improvement=shown_improvement and beyond_band and band_ok, worst_case=worst_case, enough=enough,
                   improvement_without_band=shown_improvement, evidence=e,
                   text=(f"{interval}, decision interval [{signed(low)}, {signed(e.t_high)}], "
                         f"{e.movers} of {counted(query_count, 'query', 'queries')} moved"),
                   decision_interval=(float(low), float(e.t_high)))


def _not_worse(claims: _Claims, policy: Policy, mode: str, band: float, beyond_band: bool,
               band_ok: bool) -> tuple[Reason, str]:
    """The reason and kind when no regression fails the change (regression mode), or it is shown
    non-inferior: an improvement required, shown, or neither."""
    if policy.require_improvement and not claims.improvement:
        why = "not shown"
        if not band_ok and claims.improvement_without_band:
            why = "not counted: there is no noise band to exceed (retrieval-gate noise)"
        return claims.reason("improvement_required", f"improvement required but {why} ({claims.text})"), "fail"
    if claims.improvement:
        return claims.reason("improvement_shown", f"improvement shown ({claims.text})"), "pass"
    if mode == "regression":
        within = f"; within the run-to-run noise band ±{band:.3f}" if claims.regression and not beyond_band else ""
        return claims.reason("no_regression_shown", f"no regression shown ({claims.text}{within})"), "pass"
    e = claims.evidence
    how = (f"; {e.losses} of {counted(e.n, 'query', 'queries')} lost, at most {e.loss_share_upper:.1%} of all "
           "queries can" if e is not None and claims.worst_case and not claims.enough else "")
    return claims.reason("non_inferior", f"non-inferior within -{policy.max_regression:g} ({claims.text}{how})"), "pass"




@dataclass(frozen=True)
class GuardedRegression:
    stratum: str
    delta: float
    ci_low: float
    ci_high: float
    p_holm: float


@dataclass(frozen=True)
class Findings:
    """What the earlier stages established, and nothing they decided: the verdict applies the
    policy's limits to it (:func:`decide`). Limits belong here, findings to the checks."""

    metric: str
    query_count: int
    delta: float
    ci_low: float
    ci_high: float
    mde: float | None = None  # the regression this set catches 80% of the time (the power line's regression_80)
    noise_threshold: float | None = None
    evidence: Evidence | None = None
    new_leaks: int = 0
    leak_sources: tuple[str, ...] = ()
    leak_source_count: int = 0  # documents behind the leaks (leak_sources names the first three)
    judged_k: int = 10
    unjudged_share: float | None = None  # of the candidate's top k
    judged_drop: float | None = None  # baseline judged share minus the candidate's
    relevance_only_qrels: bool = False  # the qrels judge only relevant documents (no judged non-relevant one)
    tuning_overlap: tuple[str, ...] = ()
    check_problems: tuple[str, ...] = ()  # validity checks that could not do their job (prompts, tuning)
    # Every golden query ranked exactly as the baseline ranks it (trec_eval's order): there is
    # no difference to judge, and no sample can hide one (unlike 0 movers on a metric).
    identical_rankings: bool = False
    damaged_traffic: float | None = None  # share of traffic in strata shown damaged (None: no shares)
    damaged_strata: tuple[str, ...] = ()
    guarded_regressions: tuple[GuardedRegression, ...] = ()  # damaged guarded strata with their Holm p
    warnings: tuple[str, ...] = ()
    reporting_set: ReportingSet | None = None
    # The p95 latency's and the mean cost's change (gate.verdict.resource_limits); None: not measured.
    latency: ResourceFinding | None = None
    cost: ResourceFinding | None = None


def traffic_findings(section: StrataSection | None) -> dict[str, Any]:
    """The strata table's directions and the traffic account, as :class:`Findings` takes them:
    ``run`` and ``compare`` decide on the same rows."""
    if section is None:
        return {"damaged_traffic": None, "damaged_strata": (), "guarded_regressions": ()}
    rows = section.strata
    # The interval quoted is the one that decided the direction (the bounded-mean test's); a row
    # without one (too few queries for it) quotes the bootstrap interval.
    guarded = tuple(GuardedRegression(r.stratum, _given(r.delta),
                                      _given(r.bound_low if r.bound_low is not None else r.ci_low),
                                      _given(r.bound_high if r.bound_high is not None else r.ci_high), r.p_holm)
                    for r in rows if r.guarded and r.direction == DAMAGED and r.p_holm is not None)
    return {
        "damaged_traffic": None if section.traffic is None else section.traffic.damaged,
        "damaged_strata": tuple(r.stratum for r in rows if r.direction == DAMAGED),
        "guarded_regressions": guarded,
    }


def _given(value: float | None) -> float:
    """A measured stratum's statistic (a damaged direction is decided on them)."""
    assert value is not None, "a stratum shown damaged has its statistics"
    return value


def percentages(value: float, limit: float) -> tuple[str, str]:
    """``value`` and ``limit`` as percentages with as many decimals as it takes (up to 3) for a value
    that exceeds its limit not to read as equal to it ("30.5% (limit 30%)", not "30% (limit 30%)")."""
    for digits in range(4):
        shown, bound = f"{value:.{digits}%}", f"{limit:.{digits}%}"
        if shown != bound:
            return shown, f"{limit:.0%}" if float(f"{limit:.0%}".rstrip("%")) / 100 == limit else bound
    return f"{value:.3%}", f"{limit:.3%}"


def failures_of(findings: Findings, policy: Policy) -> list[Reason]:
    """The validity and traffic rules: each a reason code and a message naming the limit."""
    out: list[Reason] = []
    f = findings
    if f.check_problems and policy.strict_validity:
        out.extend(Reason("validity_check_off", f"{problem} (policy.strict_validity)") for problem in f.check_problems)
    if f.new_leaks > policy.max_leaked:
        sources = ", ".join(f.leak_sources[:3]) + (f" and {f.leak_source_count - 3} more"
                                                   if f.leak_source_count > 3 else "")
        appear = "golden query newly appears" if f.new_leaks == 1 else "golden queries newly appear"
        out.append(Reason("new_leaked_queries", f"{f.new_leaks} {appear} in the candidate's corpus ({sources})",
                          limit=str(policy.max_leaked)))
    hint = ("; these qrels judge only relevant documents, so most of any ranking is unjudged by design: for this "
            "qrels style set judged.qrels_style: relevance-only (or raise policy.max_unjudged and "
            "policy.max_judged_drop, up to 1.0), or judge the top "
            "documents (unjudged.tsv lists them)") if f.relevance_only_qrels else ""
    # Shares are sums of floats: a share at its limit (0.30000000000000016) is at it, not over it.
    if f.unjudged_share is not None and f.unjudged_share > policy.max_unjudged + 1e-12:
        share, limit = percentages(f.unjudged_share, policy.max_unjudged)
        out.append(Reason("judged_share", f"{share} of the candidate's top {f.judged_k} is unjudged "
                                          f"(limit {limit}){hint}"))
        hint = ""
    if f.judged_drop is not None and f.judged_drop > policy.max_judged_drop + 1e-12:
        drop, limit = percentages(f.judged_drop, policy.max_judged_drop)
        out.append(Reason("judged_share", f"the judged share of the top {f.judged_k} fell by {drop} "
                                          f"against the baseline (limit {limit}){hint}"))
    if f.tuning_overlap:
        out.append(Reason("tuning_overlap", f"{counted(len(f.tuning_overlap), 'query is', 'queries are')} both "
                                            f"tuning and reporting queries (e.g. {', '.join(f.tuning_overlap[:3])})"))
    if f.damaged_traffic is not None and f.damaged_traffic > policy.max_damaged_traffic + 1e-12:
        damaged, limit = percentages(f.damaged_traffic, policy.max_damaged_traffic)
        out.append(Reason("damaged_traffic", f"{damaged} of traffic damaged ({', '.join(f.damaged_strata)})",
                          limit=limit))
    for g in f.guarded_regressions:
        if g.p_holm < GUARDED_ALPHA:
            out.append(Reason("guarded_stratum", f"guarded stratum {g.stratum} regressed: {signed(g.delta)} "
                                                 f"[{signed(g.ci_low)}, {signed(g.ci_high)}], Holm p {g.p_holm:.3f}"))
    out.extend(resource_failures(f.latency, f.cost, policy))
    return out


def decide(findings: Findings, policy: Policy) -> Verdict:
    """The one decision: validity and traffic failures first, then the statistics."""
    f = findings
    if f.reporting_set is not None and f.reporting_set.held_out_only and f.query_count < MIN_QUERIES:
        # before "unchanged": 3 held-out queries ranked as before say nothing of the tuned ones
        statistical = held_out_too_small(f, policy)
    elif f.identical_rankings:
        statistical = unchanged(f.query_count, policy, f.reporting_set)
    else:
        statistical = decide_delta(f.delta, f.ci_low, f.ci_high, f.mde, f.metric, f.query_count, policy,
                                   f.noise_threshold, f.reporting_set, f.evidence)
    return combine(failures_of(f, policy), (*f.warnings, *resource_notes(f.latency, f.cost, policy)), statistical,
                   policy)


def held_out_too_small(f: Findings, policy: Policy) -> Verdict:
    """A held-out reporting set (leaked queries left out too) too small for any claim, under either
    decision rule: with 3 queries the
    seed's interval rule would fail or pass on 3 values (a sign-flip p of 0.125 at best)."""
    more = MIN_QUERIES - f.query_count
    name = (f.reporting_set.name if f.reporting_set is not None else "") or "held-out golden queries"
    message = (f"the reporting set ({name}) has only {counted(f.query_count, 'query', 'queries')}: too few to "
               "decide; no "
               f"claim rests on fewer than {MIN_QUERIES} (a sign-flip test over fewer cannot reach p ≤ {ALPHA:g}, "
               f"and {MIN_MOVERS} must move): hold out at least {counted(more, 'more query', 'more queries')} "
               "(tuning.holdout, or fewer ids in tuning.queries)")
    return inconclusive("held_out_too_small", message, policy, f.reporting_set)


def unchanged(query_count: int, policy: Policy, reporting_set: ReportingSet | None = None) -> Verdict:
    """The candidate ranks every golden query exactly as the baseline does (a refactor, a docs
    change on a stack whose whole tree is its code): pass, unless an improvement is required."""
    message = (f"no golden query's ranking changed ({counted(query_count, 'query', 'queries')} ranked exactly as the "
               "baseline ranks them): there is no difference to judge")
    if policy.require_improvement:
        return Verdict("fail", (Reason("improvement_required", f"improvement required but {message}"),), False,
                       _exit("fail", policy), reporting_set)
    return Verdict("pass", (Reason("unchanged", message),), False, _exit("pass", policy), reporting_set)


def combine(failures: Iterable[Reason], warnings: Iterable[str], statistical: Verdict,
            policy: Policy) -> Verdict:
    """Validity failures decide before statistics: a fail names them first."""
    reasons = list(failures)
    if not reasons:
        extra = tuple(Reason("warning", w) for w in warnings)
        return Verdict(statistical.kind, statistical.reasons + extra, statistical.improvement_shown,
                       statistical.exit_code, statistical.reporting_set)
    reasons += list(statistical.reasons) + [Reason("warning", w) for w in warnings]
    return Verdict("fail", tuple(reasons), statistical.improvement_shown, _exit("fail", policy),
                   statistical.reporting_set)


#: The commit status each verdict sets (input `commit-status`): a skipped or accepted change
#: does not block; an inconclusive one blocks where the policy makes it (its exit code).
COMMIT_STATES = {"pass": "success", "skipped": "success", "accepted": "success", "fail": "failure"}


def commit_state(verdict: Verdict) -> str:
    """The state of the commit status the Action sets for ``verdict``."""
    return COMMIT_STATES.get(verdict.kind, "failure" if verdict.exit_code else "success")


ACCEPT_LABEL = "retrieval-gate:accept"
JUSTIFICATION = "Retrieval-Gate-Justification:"


def skipped(changed: int, policy: Policy, names: tuple[str, ...] = ()) -> Verdict:
    """Nothing watched changed. The message names the files that did (a few): a runner.inputs
    that misses the code the runs read shows up here, in the comment, not nowhere."""
    shown = ""
    if names:
        listed = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        shown = f": {listed}"
    reason = Reason("not_relevant", f"this PR changes none of the files the gate watches "
                                    f"({changed} file{'' if changed == 1 else 's'} changed{shown})")
    return Verdict("skipped", (reason,), False, 0)


def justification(body: str | None) -> str | None:
    """The text after a ``Retrieval-Gate-Justification:`` line in the PR body, if any."""
    for line in (body or "").splitlines():
        stripped = line.strip()
        if stripped.lower().startswith(JUSTIFICATION.lower()):
            text = stripped[len(JUSTIFICATION):].strip()
            return text or None
    return None


def goalposts_changed(verdict: Verdict, goalposts: Sequence[Mapping[str, str]], policy: Policy) -> Verdict:
    """A PR that edits its own yardstick cannot pass without the accept label."""
    if not goalposts or verdict.kind not in ("pass",):
        return verdict
    files = ", ".join(g["path"] for g in goalposts[:5])
    reason = Reason("goalposts_changed", f"this PR edits the yardstick ({files}); it cannot pass without the "
                                         f"{ACCEPT_LABEL} label")
    return Verdict("fail", (reason,) + verdict.reasons, verdict.improvement_shown, _exit("fail", policy),
                   verdict.reporting_set)


def accept(verdict: Verdict, labels: Iterable[str] | None, body: str | None,
           policy: Policy) -> tuple[Verdict, dict[str, Any] | None]:
    """A fail or a blocking inconclusive a maintainer accepts on purpose: the label plus a
    justification line (labels need triage rights, so a fork author cannot self-accept). An
    inconclusive needs a way out too: a refactor that moves no golden query is too_few_movers,
    and only a person can say the sample is enough."""
    if verdict.kind not in ("fail", "inconclusive") or verdict.exit_code == 0 or ACCEPT_LABEL not in set(labels or ()):
        return verdict, None
    text = justification(body)
    if text is None:
        note = Reason("accept_without_justification", f"the {ACCEPT_LABEL} label is set but the PR body has no "
                                                      f"'{JUSTIFICATION}' line: the {verdict.kind} stands")
        return Verdict(verdict.kind, verdict.reasons + (note,), verdict.improvement_shown, verdict.exit_code,
                       verdict.reporting_set), None
    accepted = {"label": ACCEPT_LABEL, "justification": text, "failed_on": [r.to_dict() for r in verdict.reasons]}
    reason = Reason("accepted", f"accepted on purpose ({ACCEPT_LABEL}): {text}")
    taken = Verdict("accepted", (reason,) + verdict.reasons, verdict.improvement_shown, 0, verdict.reporting_set)
    return taken, accepted
