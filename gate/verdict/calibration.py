"""``calibrate``: the gate's own false-alarm rate on this stack, measured.

N identical runs of one configuration differ only by the stack's run-to-run noise (HNSW
insertion order, GPU non-determinism, timeouts). Every ordered pair of them is an A/A
comparison - no true change - put through the gate's full statistical decision
(:func:`gate.pipeline.compare.decide_comparison`: the calibrated rule, the policy's margin, the noise
band when one is given). How many of them fail, and how many would claim an improvement, is
the false-alarm rate the team can expect; with a handful of pairs it comes with an exact
one-sided 95% Clopper-Pearson upper bound.

Each pair meets the noise band of the *other* runs (from four runs on), as a PR meets a band
measured on repeats that are neither its baseline nor its candidate: a band measured on the pair's
own runs always contains their difference (its range spans every pair), which would make every
pair pass by construction. With two or three runs there are not two others to measure a band
from, and the pairs are decided without one.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gate.evaluation.evaluate import evaluate
from gate.evaluation.measures import parse_measure
from gate.inputs.config import Policy
from gate.inputs.readers.records import Qrels, Run, same_rankings
from gate.statistics.bootstrap import as_differences
from gate.statistics.evidence import clopper_pearson_upper, evidence
from gate.statistics.noise import spread
from gate.statistics.paired import compare_paired
from gate.statistics.power import SetupCheck, aa_noise, detectable, setup_check
from gate.verdict.levels import ALPHA, MIN_MOVERS, MOVERS_TO_SHOW, look_alpha, looks
from gate.verdict.rules import Findings, Verdict, decide, decide_delta

#: Ordered pairs put through the decision at most: beyond it (N > 45 runs), a seeded sample
#: of them (the disjoint pairs always among them). Each pair costs two bootstraps.
MAX_PAIRS = 2_000


@dataclass(frozen=True)
class Calibration:
    """``pairs`` ordered pairs compared (of ``pairs_possible``); ``blocking`` = fail plus, when
    inconclusive blocks, inconclusive: what a PR with no true change would meet. The rates'
    upper bounds come from the ``independent_pairs`` disjoint pairs (run 0 vs 1, 2 vs 3, ...):
    all ordered pairs share runs, so they are not independent trials and an exact bound on
    them would overstate what was measured."""

    pairs: int
    fail: int
    improvement_shown: int
    inconclusive: int
    runs: int
    query_count: int
    metric: str
    fail_rate_upper95: float
    improvement_rate_upper95: float
    samples: int
    seed: int
    margin: float
    failed_pairs: tuple[tuple[int, int], ...] = ()  # (i, j): run i as baseline, run j as candidate
    blocking: int = 0
    inconclusive_blocks: bool = True
    independent_pairs: int = 0
    independent_fail: int = 0
    independent_blocking: int = 0
    blocking_rate_upper95: float = 1.0
    pairs_possible: int = 0
    identical_runs: bool = False
    mode: str = "regression"
    # gate.statistics.power.SetupCheck.to_dict(): whether the set supports the margin on this stack
    setup: dict[str, Any] | None = None
    # the band each pair met: "others" (the band of the runs not in the pair) or "none"
    pair_band: str = "none"
    # the setup check for means of noise.candidate_runs runs (setup_for_repeats), when configured
    setup_repeats: dict[str, Any] | None = None

    @property
    def sentence(self) -> str:
        sampled = "" if self.pairs == self.pairs_possible else f" (a seeded sample of the {self.pairs_possible})"
        blocked = f"{self.blocking} would block a PR ({self.fail} fail, {self.inconclusive} inconclusive)" \
            if self.inconclusive_blocks and self.inconclusive else f"{self.fail} failed"
        same = "; the runs rank every query alike (a deterministic stack): every pair is unchanged" \
            if self.identical_runs else ""
        pairs = "pair" if self.independent_pairs == 1 else "pairs"
        against = (f", each against the noise band of the other {self.runs - 2}" if self.pair_band == "others"
                   else ", without a noise band (two others are needed to measure one)" if self.runs < 4 else "")
        return (f"of {self.pairs} A/A comparisons{sampled} of {self.runs} identical runs{against}, {blocked}; on the "
                f"{self.independent_pairs} independent {pairs}, a block rate of at most "
                f"{self.blocking_rate_upper95:.1%} at 95%{same}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "pairs": self.pairs, "pairs_possible": self.pairs_possible, "fail": self.fail,
            "improvement_shown": self.improvement_shown, "inconclusive": self.inconclusive,
            "blocking": self.blocking, "inconclusive_blocks": self.inconclusive_blocks, "runs": self.runs,
            "query_count": self.query_count, "metric": self.metric,
            "independent_pairs": self.independent_pairs, "independent_fail": self.independent_fail,
            "independent_blocking": self.independent_blocking, "fail_rate_upper95": self.fail_rate_upper95,
            "blocking_rate_upper95": self.blocking_rate_upper95,
            "improvement_rate_upper95": self.improvement_rate_upper95, "identical_runs": self.identical_runs,
            "samples": self.samples, "seed": self.seed, "margin": self.margin,
            "failed_pairs": [list(p) for p in self.failed_pairs], "sentence": self.sentence, "mode": self.mode,
            "setup": self.setup, "pair_band": self.pair_band, "setup_repeats": self.setup_repeats,
        }


def _pairs(n: int, seed: int, limit: int) -> list[tuple[int, int]]:
    """Every ordered pair of n runs, or a seeded sample of ``limit`` of them that holds the
    disjoint pairs (0, 1), (2, 3), ... the bounds are computed on."""

    disjoint = [(2 * k, 2 * k + 1) for k in range(n // 2)]
    every = [(i, j) for i in range(n) for j in range(n) if i != j]
    if len(every) <= limit:
        return every
    taken = set(disjoint)
    rest = [p for p in every if p not in taken]
    rng = np.random.default_rng(seed)
    chosen = rng.choice(len(rest), size=max(0, limit - len(disjoint)), replace=False)
    return disjoint + sorted(rest[k] for k in chosen)


@dataclass
class _Tally:
    """The pairs' verdicts, counted as calibrate goes (all pairs, and the independent ones)."""

    fail: int = 0
    improvement: int = 0
    inconclusive: int = 0
    independent_fail: int = 0
    independent_blocking: int = 0
    independent_improvement: int = 0
    failed: list[tuple[int, int]] = field(default_factory=list)

    def add(self, pair: tuple[int, int], verdict: Verdict, independent: bool) -> None:
        if verdict.kind == "fail":
            self.fail += 1
            self.failed.append(pair)
        elif verdict.kind == "inconclusive":
            self.inconclusive += 1
        self.improvement += verdict.improvement_shown
        if independent:
            self.independent_fail += verdict.kind == "fail"
            self.independent_blocking += verdict.exit_code != 0
            self.independent_improvement += verdict.improvement_shown


def _others_band(means: Sequence[float], i: int, j: int) -> float:
    """The band a pair meets: the spread of the other runs' means (as a PR meets the stored band)."""
    return spread([m for k, m in enumerate(means) if k not in (i, j)]).threshold


def _all_differences(values: Sequence[np.ndarray]) -> np.ndarray:
    """Every ordered pair's per-query differences, one after another."""
    return np.concatenate([values[j] - values[i] for i in range(len(values)) for j in range(len(values)) if i != j])


def _decide_pair(base: np.ndarray, cand: np.ndarray, identical: bool, metric: str, query_count: int,
                 policy: Policy, threshold: float | None, samples: int, seed: int) -> Verdict:
    """The gate's decision on one ordered pair of identical runs, as on a PR."""
    paired = compare_paired(base, cand, samples=samples, seed=seed)
    weighed = evidence(cand - base, policy.max_regression, samples, seed, alpha=ALPHA)
    power = detectable(cand - base, policy.max_regression, threshold, alpha=ALPHA, level=ALPHA,
                       movers_to_show=MOVERS_TO_SHOW)
    return decide(Findings(metric=metric, query_count=query_count, delta=paired.mean,
                           ci_low=paired.ci_low, ci_high=paired.ci_high, mde=power.regression_80,
                           noise_threshold=threshold, evidence=weighed, identical_rankings=identical), policy)


def _setup_check(values: Sequence[np.ndarray], n: int, policy: Policy, noise_sd: float, band: float | None,
                 mover_share: float, identical: bool, progress: Callable[[str], None] | None) -> SetupCheck:
    """The setup check: the formula, and in non-inferiority mode where the formula says the set
    supports the margin, the rule itself on simulated no-op PRs."""
    setup = setup_check(n, policy.max_regression, policy.mode, noise_sd, band, mover_share, alpha=ALPHA, level=ALPHA,
                        min_movers=MIN_MOVERS, movers_to_show=MOVERS_TO_SHOW)
    if setup.mode == "non-inferiority" and setup.supports and not identical:
        # The formula is the normal one; the rule also asks Hall's interval and five movers, which
        # sparse heavy-tailed noise trips far more often: the rule itself decides, on no-op PRs
        # drawn from these very A/A differences.
        pool = _all_differences(values)
        if progress is not None:
            progress(f"setup check: {SIMULATED_PRS} simulated no-op PRs through the rule")
        blocked = simulated_no_op_blocking(pool, n, dataclasses.replace(policy, inconclusive_blocks=True),
                                           noise_threshold=band)
        setup = dataclasses.replace(setup, simulated_blocked=blocked, simulated=SIMULATED_PRS,
                                    supports=blocked <= 0.05)
    return setup


def calibrate(runs: Sequence[Run], qrels: Qrels, query_ids: Sequence[str], metric: str, rel: int = 1, *,
              policy: Policy | None = None, samples: int = 10_000, seed: int = 7, noise_threshold: float | None = None,
              max_pairs: int = MAX_PAIRS, progress: Callable[[str], None] | None = None,
              candidate_runs: int = 1, rerun: str = "always") -> Calibration:
    """Ordered pairs of ``runs`` through the decision; ``query_ids`` is the universe. Each pair
    meets the band of the other runs (four runs or more); ``noise_threshold`` is the band a PR
    will meet (the stored one), used by the setup check."""
    if len(runs) < 2:
        raise ValueError("calibration needs at least two runs of the same configuration")
    policy = policy or Policy()
    measure = parse_measure(metric).with_default_rel(rel)
    name = str(measure)
    values = [evaluate(run, qrels, [measure], query_ids, rel=rel).values[name] for run in runs]
    pairs = _pairs(len(values), seed, max_pairs)
    disjoint = {(2 * k, 2 * k + 1) for k in range(len(values) // 2)}
    tally = _Tally()
    last = time.monotonic()

    means = [float(v.mean()) if v.size else 0.0 for v in values]
    others = len(values) >= 4
    for done, (i, j) in enumerate(pairs, 1):
        pair_threshold = _others_band(means, i, j) if others else None
        verdict = _decide_pair(values[i], values[j], same_rankings(runs[i], runs[j], query_ids), name,
                               len(query_ids), policy, pair_threshold, samples, seed)
        tally.add((i, j), verdict, (i, j) in disjoint)
        if progress is not None and (time.monotonic() - last > 10 or done == len(pairs)) and len(pairs) > 50:
            progress(f"calibration: {done} of {len(pairs)} pairs")
            last = time.monotonic()
    fail, improvement, inconclusive, failed = tally.fail, tally.improvement, tally.inconclusive, tally.failed
    independent_fail, independent_blocking = tally.independent_fail, tally.independent_blocking
    independent_improvement = tally.independent_improvement
    blocking = fail + (inconclusive if policy.inconclusive_blocks else 0)
    m = len(disjoint)
    identical = all(np.array_equal(values[0], v) for v in values[1:])
    noise_sd, mover_share = aa_noise(values)
    setup = _setup_check(values, len(query_ids), policy, noise_sd, noise_threshold, mover_share, identical, progress)
    setup_repeats = None if identical else setup_for_repeats(
        len(query_ids), policy, noise_sd, noise_threshold, mover_share, _all_differences(values),
        min(candidate_runs, len(runs) + 1), rerun)
    return Calibration(
        pairs=len(pairs), fail=fail, improvement_shown=improvement, inconclusive=inconclusive, runs=len(runs),
        query_count=len(query_ids), metric=name,
        fail_rate_upper95=clopper_pearson_upper(independent_fail, m, alpha=0.05),
        improvement_rate_upper95=clopper_pearson_upper(independent_improvement, m, alpha=0.05),
        samples=samples, seed=seed, margin=policy.max_regression, failed_pairs=tuple(failed),
        blocking=blocking, inconclusive_blocks=policy.inconclusive_blocks, independent_pairs=m,
        independent_fail=independent_fail, independent_blocking=independent_blocking,
        blocking_rate_upper95=clopper_pearson_upper(independent_blocking, m, alpha=0.05),
        pairs_possible=len(values) * (len(values) - 1), identical_runs=identical, mode=policy.mode,
        setup=setup.to_dict(), pair_band="others" if others else "none",
        setup_repeats=setup_repeats,
    )


#: Simulated no-op PRs the setup check puts through the gate's own rule (non-inferiority), and
#: the resamples each uses: enough to tell 5% from 15% (the Hall interval and the five-movers
#: rule block sparse, heavy-tailed noise far more than the normal formula says).
SIMULATED_PRS = 200
SIMULATION_SAMPLES = 2_000
SIMULATION_SEED = 20_261_203


def simulated_no_op_blocking(aa_differences: Sequence[float] | np.ndarray, n: int, policy: Policy,
                             prs: int = SIMULATED_PRS,
                             samples: int = SIMULATION_SAMPLES, seed: int = SIMULATION_SEED,
                             noise_threshold: float | None = None, alpha: float = ALPHA) -> float:
    """The share of ``prs`` no-op PRs of ``n`` queries the gate's rule blocks in
    non-inferiority mode: each draws ``n`` per-query differences (with replacement) from the
    stack's A/A differences ``aa_differences`` and is decided by
    :func:`gate.verdict.rules.decide_delta` on :func:`gate.statistics.evidence.evidence` at the
    one-sided level ``alpha`` (ALPHA, or a look's share of it; seeded: the same share on every
    machine)."""


    pool = as_differences(aa_differences)
    rng = np.random.default_rng(seed)
    blocked = 0
    for _ in range(prs):
        d = pool[rng.integers(0, pool.size, size=n)]
        e = evidence(d, policy.max_regression, samples, seed, alpha=alpha)
        verdict = decide_delta(float(d.mean()), e.t_low, e.t_high, None, "m", n, policy,
                               noise_threshold=noise_threshold, evidence=e)
        blocked += verdict.kind != "pass"
    return blocked / prs


def setup_for_repeats(n: int, policy: Policy, noise_sd: float | None, band: float | None, mover_share: float | None,
                      aa_differences: Sequence[float] | np.ndarray, candidate_runs: int,
                      rerun: str = "always") -> dict[str, Any] | None:
    """The setup check for a PR decided on means of ``candidate_runs`` runs each side
    (``noise.candidate_runs``): the noise sd and the band shrink by ``sqrt(R)``, and with adaptive
    reruns the deciding look is at ALPHA / 2. In non-inferiority mode, where the formula says the
    set supports the margin, the rule itself decides, on no-op PRs drawn from the stack's A/A
    differences scaled by ``1 / sqrt(R)`` (the sd of a mean of R; its shape kept, which errs on
    the heavy-tailed side). None without noise to average or without reruns."""



    if candidate_runs <= 1 or noise_sd is None or not noise_sd > 0:
        return None
    root = math.sqrt(candidate_runs)
    alpha = look_alpha(looks(candidate_runs, rerun))
    scaled_band = None if band is None else band / root
    # the no-op PRs are decided at the look's level; the set's reach is said at ALPHA, as without reruns
    check = setup_check(n, policy.max_regression, policy.mode, noise_sd / root, scaled_band, mover_share,
                        alpha=alpha, level=ALPHA, min_movers=MIN_MOVERS, movers_to_show=MOVERS_TO_SHOW)
    if check.mode == "non-inferiority" and check.supports and aa_differences is not None:
        pool = np.asarray(aa_differences, dtype=np.float64) / root
        blocked = simulated_no_op_blocking(pool, n, dataclasses.replace(policy, inconclusive_blocks=True),
                                           noise_threshold=scaled_band, alpha=alpha)
        check = dataclasses.replace(check, simulated_blocked=blocked, simulated=SIMULATED_PRS,
                                    supports=blocked <= 0.05)
    looked = f"each look at {alpha:g}" if alpha < 0.025 else "one look at 0.025"
    text = check.sentence.replace("(or repeated runs, or regression mode)", "(or more runs, or regression mode)")
    return {**check.to_dict(), "candidate_runs": candidate_runs, "alpha": alpha,
            "sentence": f"with noise.candidate_runs {candidate_runs} (a PR decided on means of {candidate_runs} runs "
                        f"each side, sd and band / {root:.2f}, {looked}): {text}"}
