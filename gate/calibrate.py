"""``calibrate``: the gate's own false-alarm rate on this stack, measured.

N identical runs of one configuration differ only by the stack's run-to-run noise (HNSW
insertion order, GPU non-determinism, timeouts). Every ordered pair of them is an A/A
comparison - no true change - put through the gate's full statistical decision
(:func:`gate.compare.decide_comparison`: the calibrated rule, the policy's margin, the noise
band when one is given). How many of them fail, and how many would claim an improvement, is
the false-alarm rate the team can expect; with a handful of pairs it comes with an exact
one-sided 95% Clopper-Pearson upper bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from gate.io.records import Qrels, Run


@dataclass(frozen=True)
class Calibration:
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

    @property
    def sentence(self) -> str:
        return (f"{self.fail} of {self.pairs} A/A comparisons failed on this stack (identical runs, {self.runs} of "
                f"them; at most {self.fail_rate_upper95:.1%} at 95%)")

    def to_dict(self) -> dict[str, Any]:
        return {
            "pairs": self.pairs, "fail": self.fail, "improvement_shown": self.improvement_shown,
            "inconclusive": self.inconclusive, "runs": self.runs, "query_count": self.query_count,
            "metric": self.metric, "fail_rate_upper95": self.fail_rate_upper95,
            "improvement_rate_upper95": self.improvement_rate_upper95, "samples": self.samples, "seed": self.seed,
            "margin": self.margin, "failed_pairs": [list(p) for p in self.failed_pairs], "sentence": self.sentence,
        }


def calibrate(runs: Sequence[Run], qrels: Qrels, query_ids: Sequence[str], metric: str, rel: int = 1, *,
              policy=None, samples: int = 10_000, seed: int = 7, noise_threshold: float | None = None) -> Calibration:
    """Every ordered pair of ``runs`` through the decision; ``query_ids`` is the universe."""
    import math

    from gate.evaluate import evaluate
    from gate.measures import parse_measure
    from gate.stats.evidence import clopper_pearson_upper, evidence
    from gate.stats.paired import compare_paired
    from gate.verdict import Findings, Policy, decide

    if len(runs) < 2:
        raise ValueError("calibration needs at least two runs of the same configuration")
    policy = policy or Policy()
    measure = parse_measure(metric).with_default_rel(rel)
    name = str(measure)
    values = [evaluate(run, qrels, [measure], query_ids, rel=rel).values[name] for run in runs]
    fail = improvement = inconclusive = 0
    failed: list[tuple[int, int]] = []
    pairs = 0
    for i, base in enumerate(values):
        for j, cand in enumerate(values):
            if i == j:
                continue
            pairs += 1
            paired = compare_paired(base, cand, samples=samples, seed=seed)
            weighed = evidence(cand - base, policy.max_regression, samples, seed)
            verdict = decide(Findings(metric=name, query_count=len(query_ids), delta=paired.mean,
                                      ci_low=paired.ci_low, ci_high=paired.ci_high,
                                      mde=paired.mde if math.isfinite(paired.mde) else None,
                                      noise_threshold=noise_threshold, evidence=weighed), policy)
            if verdict.kind == "fail":
                fail += 1
                failed.append((i, j))
            elif verdict.kind == "inconclusive":
                inconclusive += 1
            improvement += verdict.improvement_shown
    return Calibration(
        pairs=pairs, fail=fail, improvement_shown=improvement, inconclusive=inconclusive, runs=len(runs),
        query_count=len(query_ids), metric=name,
        fail_rate_upper95=clopper_pearson_upper(fail, pairs, 0.05),
        improvement_rate_upper95=clopper_pearson_upper(improvement, pairs, 0.05),
        samples=samples, seed=seed, margin=policy.max_regression, failed_pairs=tuple(failed),
    )
