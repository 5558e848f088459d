"""Every level and limit the gate decides at, in one place.

The statistics stage computes intervals, p-values and powers at whatever level it is given (it
holds no level of its own, and cannot import this later stage); the levels themselves are
policy, and live here. ``benchmarks/bench_decision.py``, ``benchmarks/bench_strata.py`` and
``benchmarks/bench_repeats.py`` measure what they buy.
"""

from __future__ import annotations

#: Each one-sided claim of the decision (a regression, non-inferiority, an improvement) is made
#: at this level: the ends of a two-sided 95% interval.
ALPHA = 0.025
#: Below this many moving queries (d != 0) no interval or test is trusted: with 0-4 movers
#: every sample-based interval is [0, 0]-like and "passes by construction" (the "np >= 5"
#: rule of thumb; 4 gives 3.6% false passes on reciprocal-rank deltas at n = 30, 5 gives 2.4%).
MIN_MOVERS = 5
#: ... and a regression is shown on no fewer moving queries than this: with k movers the one-sided
#: sign-flip p-value is at least 2**-k, which reaches ALPHA only from k = 6 (a regression on 5
#: queries, however large, is never shown). The power line and the setup check say it at ALPHA,
#: whatever level the look is at (``looks``), as they say the share of queries a sample misses.
MOVERS_TO_SHOW = next(k for k in range(1, 64) if 0.5 ** k <= ALPHA)
#: The fewest reporting queries any claim can rest on: a one-sided sign-flip test over n
#: queries cannot reach ALPHA below n = 6 (its smallest p is 1/2**n), and MIN_MOVERS must move.
MIN_QUERIES = next(n for n in range(MIN_MOVERS, 64) if 0.5 ** n <= ALPHA)
#: The largest loss one query can have: measures are in [0, 1] (nDCG, AP, RR, R, P, Success).
MAX_QUERY_LOSS = 1.0

#: The strata table: a stratum's direction (improved, damaged) is shown at this family-wise
#: level, Holm-adjusted over the measured strata (two-sided; its interval is 95%).
STRATA_ALPHA = 0.05
#: A guarded stratum fails the gate when its regression is shown at this Holm-adjusted level.
GUARDED_ALPHA = 0.05
#: Below this many queries a stratum is flagged underpowered.
STRATUM_MIN_QUERIES = 25

#: Reruns (``noise.rerun: adaptive``) only when run-to-run noise is at least this share of the
#: variance of the per-query differences: below it, averaging it away cannot move the interval
#: much (a quarter of the variance gone shortens it by at most 13%), and the runner's time is
#: better saved.
NOISE_SHARE_TO_RERUN = 0.25


def looks(candidate_runs: int, rerun: str) -> int:
    """How many looks the verdict may take: two when reruns are adaptive, else one."""
    return 2 if candidate_runs > 1 and rerun == "adaptive" else 1


def look_alpha(look_count: int) -> float:
    """Each look's one-sided level: :data:`ALPHA` split evenly over the looks (Bonferroni), so
    the chance of any false claim over all of them stays at most ALPHA."""
    return ALPHA / look_count
