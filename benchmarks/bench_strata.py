"""Benchmark: how often a stratum is labelled damaged or improved, old rule against new.

A stratum's direction feeds the verdict (the damaged share of traffic, guarded strata), so a
label must hold for the stratum's *mean*, whatever the shape of its per-query differences.
For every population below, every stratum size n and every true mean, this draws simulated
strata (n per-query differences ``d = candidate - baseline`` each, all in [-1, 1]), labels each
one with a rule and prints the share labelled damaged and improved, each with a 95% Wilson
interval:

``old``      the rule before 1.6: n <= 16 the exact two-sided sign-flip test (p < 0.05, side
             from the sign of the mean); n > 16 the percentile bootstrap 95% CI excluding 0
             and the Monte Carlo sign-flip p below 0.05 (Holm over one stratum is the p).
``new``      :func:`gate.statistics.strata.bounded_mean_test` (Gaffke's bound, Learned-Miller &
             Thomas 2020): damaged when the two-sided p is below 0.05 and the mean is
             negative; improved mirrored.  Same draws as the gate (``default_rng(seed)
             .standard_exponential((samples, n + 1))``).
``betting``  for comparison only: Waudby-Smith & Ramdas' hedged-capital betting test (one
             side at 2.5%, predictable plug-in bets, c = 1/2), valid for every distribution on
             [-1, 1]; uses the order of the queries.

Randomness: the resampling seed is the gate's (7, ``--boot-seed``) for every stratum, as in
``stratum_table``; the population draws come from ``--seed``.  The matrix products here run
through BLAS (fast); the gate reduces row by row (bit-reproducible), so a p-value can differ in
its last bit from the gate's: ``--check`` runs the gate's own function on a few strata of each
row and counts label disagreements (expected: none).

Nulls (true mean 0; the goal: labelled damaged or improved at most 5% together, every n):

``symmetric``      normal noise, sd 0.1, clipped symmetrically to [-1, 1]
``right-skewed``   10% of queries gain U(0.6, 1.0), the rest lose U(0.049, 0.129) (mean 0.0889)
``left-skewed``    the mirror image
``sparse-heavy``   85% zeros; movers +/- 0.05 |Cauchy|, capped at 1 (symmetric, heavy tails)
``sparse-skewed``  90% zeros, 8% lose U(0.1, 0.3), 2% gain U(0.6, 1.0)
``rr-symmetric``   reciprocal-rank-like deltas {0, +/-1/6, +/-1/2, +/-2/3, +/-1}, symmetric
``rr-skewed``      68% zeros, 12% lose 1/2 (rank 1 -> 2), 12% lose 1/6 (2 -> 3), 8% gain 1
``two-point``      5% gain 1, 95% lose 1/19: the worst case for any rule that trusts its sample

Power (true mean -0.05 and -0.1; the share labelled damaged):

``dense``          60% of queries move, U(mu/0.6 - 0.25, mu/0.6 + 0.25); 40% zeros
``rr-like``        ``rr-symmetric`` with probability -mu moved from a +1/2 to a -1/2
``few-big-losses`` -mu/0.5 of the queries lose U(0.3, 0.7); the others move U(-0.01, 0.01)
``consistent``     every query moves mu + U(-0.02, 0.02)

``ceiling``: no rule whose damaged label holds at 5% for *every* distribution on [-1, 1] can
label such a stratum damaged more often than ``0.05 / (1 - eps)^n``, ``eps = -mu / (1 - mu)``:
mixing eps of queries gaining +1 into the population makes its mean 0, and a sample of n holds
none of them with probability ``(1 - eps)^n``, looking exactly like the damaged stratum. It is
an upper bound, not a promise that some rule reaches it. Rows whose ceiling is below 80% are
marked: no valid rule reaches 80% power there. (Every null row can be met: a rule that never
labels meets it; the old rule's "FAILS" rows are rows it does not meet.)

``untouched`` columns (the new rule's third label): the share labelled untouched, i.e. the
bounded interval within [-0.02, +0.02] (the policy margin); ``pct`` the same with the
percentile bootstrap CI instead, which the gate does not use (a stratum of 8 queries that
all stayed put is "untouched" by the percentile CI although a tenth of the population could
have moved).  Under the power rows an untouched label is wrong (|mu| > margin).

    python benchmarks/bench_strata.py [--quick] [--replications R] [--samples B] [--check]

Defaults: 3,000 replications per row and 2,000 Monte Carlo draws per test (the gate draws
``statistics.samples``, 10,000 by default): about a minute of CPU; ``--quick`` (300 and 1,000)
takes a few seconds.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from itertools import product
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_decision import wilson  # noqa: E402  (one Wilson interval for every benchmark)

from gate.statistics.strata import bounded_mean_test  # noqa: E402
from gate.verdict.levels import STRATA_ALPHA as ALPHA  # noqa: E402

MARGIN = 0.02
SIZES = (5, 8, 12, 16, 25, 40, 60)
EXACT_MAX_N = 16
TOLERANCE = 1e-12
Z95 = 1.959963984540054


# --------------------------------------------------------------------------- populations


def _rr_symmetric(rng, size, shift=0.0):
    values = np.array([0.0, 1 / 6, -1 / 6, 0.5, -0.5, 2 / 3, -2 / 3, 1.0, -1.0])
    probs = np.array([0.5, 0.08, 0.08, 0.10, 0.10, 0.04, 0.04, 0.03, 0.03])
    probs[3] -= shift  # mass moved from +1/2 ...
    probs[4] += shift  # ... to -1/2: the mean moves by -shift
    return rng.choice(values, size=size, p=probs)


def _right_skewed(rng, size):
    gain = rng.random(size) < 0.10
    loss = 0.08 / 0.9  # 0.9 * loss = 0.1 * 0.8: mean exactly 0
    return np.where(gain, rng.uniform(0.6, 1.0, size), -rng.uniform(loss - 0.04, loss + 0.04, size))


def _sparse_heavy(rng, size):
    move = rng.random(size) < 0.15
    magnitude = np.minimum(1.0, 0.05 * np.abs(rng.standard_cauchy(size)))
    return np.where(move, rng.choice([-1.0, 1.0], size=size) * magnitude, 0.0)


def _sparse_skewed(rng, size):
    u = rng.random(size)
    return np.where(u < 0.08, -rng.uniform(0.1, 0.3, size), np.where(u < 0.10, rng.uniform(0.6, 1.0, size), 0.0))


def _rr_skewed(rng, size):
    return rng.choice(np.array([0.0, -0.5, -1 / 6, 1.0]), size=size, p=[0.68, 0.12, 0.12, 0.08])


def _two_point(rng, size):
    return np.where(rng.random(size) < 0.05, 1.0, -1 / 19)


NULLS = {
    "symmetric": lambda rng, size: np.clip(rng.normal(0.0, 0.1, size), -1.0, 1.0),
    "right-skewed": _right_skewed,
    "left-skewed": lambda rng, size: -_right_skewed(rng, size),
    "sparse-heavy": _sparse_heavy,
    "sparse-skewed": _sparse_skewed,
    "rr-symmetric": _rr_symmetric,
    "rr-skewed": _rr_skewed,
    "two-point": _two_point,
}


def _dense(rng, size, mu):
    centre = mu / 0.6
    return np.where(rng.random(size) < 0.6, rng.uniform(centre - 0.25, centre + 0.25, size), 0.0)


def _few_big_losses(rng, size, mu):
    lose = rng.random(size) < -mu / 0.5
    return np.where(lose, -rng.uniform(0.3, 0.7, size), rng.uniform(-0.01, 0.01, size))


POWER = {
    "dense": _dense,
    "rr-like": lambda rng, size, mu: _rr_symmetric(rng, size, shift=-mu),
    "few-big-losses": _few_big_losses,
    "consistent": lambda rng, size, mu: mu + rng.uniform(-0.02, 0.02, size),
}
POWER_MEANS = (-0.05, -0.1)


# --------------------------------------------------------------------------- rules, vectorised


class Draws:
    """The gate's random draws for strata of n queries (they depend on n, samples and seed only)."""

    def __init__(self, n: int, samples: int, seed: int):
        self.n = n
        self.exponentials = np.random.default_rng(seed).standard_exponential(size=(samples, n + 1))
        idx = np.random.default_rng(seed).integers(0, n, size=(samples, n))
        self.counts = np.zeros((samples, n))
        np.add.at(self.counts, (np.repeat(np.arange(samples), n), idx.ravel()), 1.0)
        if n <= EXACT_MAX_N:
            bits = (np.arange(2 ** n)[:, None] >> np.arange(n)[None, :]) & 1
            self.signs = (2 * bits - 1).astype(np.float64)
        else:
            keep = np.random.default_rng(seed).integers(0, 2, size=(samples, n))
            self.signs = (2 * keep - 1).astype(np.float64)


def old_rule(X: np.ndarray, draws: Draws) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(damaged, improved, ci_low, ci_high) of the pre-1.6 rule for each row of X."""
    n = X.shape[1]
    mean = X.mean(axis=1)
    boot = X @ draws.counts.T / n
    lo, hi = np.percentile(boot, [2.5, 97.5], axis=1)
    flipped = np.abs(X @ draws.signs.T / n)
    extreme = np.count_nonzero(flipped >= (np.abs(mean) - TOLERANCE)[:, None], axis=1)
    if n <= EXACT_MAX_N:
        p = extreme / draws.signs.shape[0]
        shown = (p < ALPHA) & (mean != 0)
        return shown & (mean < 0), shown & (mean > 0), lo, hi
    p = (1 + extreme) / (draws.signs.shape[0] + 1)
    return (hi < 0) & (mean < 0) & (p < ALPHA), (lo > 0) & (mean > 0) & (p < ALPHA), lo, hi


def new_rule(X: np.ndarray, draws: Draws) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(damaged, improved, bound_low, bound_high) of the bounded-mean test for each row of X."""
    n = X.shape[1]
    e = draws.exponentials
    samples = e.shape[0]
    body = e[:, :n] @ np.sort(X, axis=1).T  # (samples, R)
    extra = e[:, n][:, None]
    total = e.sum(axis=1)[:, None]
    top, bottom = body + extra, body - extra
    p_damaged = (1 + np.count_nonzero(top >= 0, axis=0)) / (samples + 1)
    p_improved = (1 + np.count_nonzero(bottom <= 0, axis=0)) / (samples + 1)
    p = np.minimum(1.0, 2 * np.minimum(p_damaged, p_improved))
    mean = X.mean(axis=1)
    shown = (p < ALPHA) & (mean != 0)
    low = np.quantile(bottom / total, ALPHA / 2, axis=0)
    high = np.quantile(top / total, 1 - ALPHA / 2, axis=0)
    return shown & (mean < 0), shown & (mean > 0), low, high


def betting_rule(X: np.ndarray, alpha: float = ALPHA / 2, c: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """(damaged, improved): WSR hedged-capital betting, one-sided at alpha each way."""

    def rejects_above_half(Y: np.ndarray) -> np.ndarray:  # H0: E y <= 1/2
        R, n = Y.shape
        m = 0.5
        capital = np.ones(R)
        best = np.ones(R)
        total = np.zeros(R)
        squares = np.zeros(R)
        sigma2 = np.full(R, 0.25)
        for t in range(n):
            lam = np.minimum(np.sqrt(2 * math.log(1 / alpha) / (n * sigma2)), c / m)
            y = Y[:, t]
            capital = capital * (1 + lam * (y - m))
            best = np.maximum(best, capital)
            total += y
            mu_hat = (0.5 + total) / (t + 2)
            squares += (y - mu_hat) ** 2
            sigma2 = (0.25 + squares) / (t + 2)
        return best >= 1 / alpha

    Y = (X + 1) / 2
    return rejects_above_half(1 - Y), rejects_above_half(Y)


# --------------------------------------------------------------------------- the run


def rate(k: int, reps: int) -> str:
    lo, hi = wilson(k, reps)
    return f"{100 * k / reps:5.1f}% [{100 * lo:4.1f},{100 * hi:5.1f}]"


def run_row(X: np.ndarray, draws: Draws, chunk: int = 250) -> dict[str, int]:
    out = {k: 0 for k in ("old_d", "old_i", "new_d", "new_i", "bet_d", "bet_i", "unt", "unt_pct")}
    for start in range(0, X.shape[0], chunk):
        x = X[start:start + chunk]
        od, oi, lo, hi = old_rule(x, draws)
        nd, ni, blo, bhi = new_rule(x, draws)
        bd, bi = betting_rule(x)
        within = (blo >= -MARGIN) & (bhi <= MARGIN) & ~(nd | ni)
        within_pct = (lo >= -MARGIN) & (hi <= MARGIN) & ~(nd | ni)
        for key, flags in (("old_d", od), ("old_i", oi), ("new_d", nd), ("new_i", ni), ("bet_d", bd),
                           ("bet_i", bi), ("unt", within), ("unt_pct", within_pct)):
            out[key] += int(np.count_nonzero(flags))
    return out


def check_row(X: np.ndarray, samples: int, seed: int, rows: int = 20) -> int:
    """Label disagreements between new_rule here and the gate's own bounded_mean_test."""
    draws = Draws(X.shape[1], samples, seed)
    nd, ni, _, _ = new_rule(X[:rows], draws)
    bad = 0
    for i in range(min(rows, X.shape[0])):
        test = bounded_mean_test(X[i], samples, seed, alpha=ALPHA)
        mean = float(X[i].mean())
        shown = test.p_value < ALPHA and mean != 0
        bad += (shown and mean < 0) != bool(nd[i]) or (shown and mean > 0) != bool(ni[i])
    return bad


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=3000)
    parser.add_argument("--samples", type=int, default=2000, help="Monte Carlo draws per test (gate: 10000)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the population draws")
    parser.add_argument("--boot-seed", type=int, default=7, help="resampling seed (the gate's is 7)")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--quick", action="store_true", help="300 replications, 1000 draws: under a minute")
    parser.add_argument("--check", action="store_true", help="cross-check 20 strata per row against the gate")
    args = parser.parse_args()
    if args.quick:
        args.replications, args.samples = 300, 1000
    sizes = [int(s) for s in args.sizes.split(",") if s]
    reps = args.replications
    started = time.process_time()
    print(f"bench_strata: {reps} replications per row, {args.samples} Monte Carlo draws per test, "
          f"population seed {args.seed}, resampling seed {args.boot_seed}")
    draws = {n: Draws(n, args.samples, args.boot_seed) for n in sizes}
    seeds = np.random.SeedSequence(args.seed)
    disagreements = 0

    print("\nNulls (true stratum mean 0): share labelled damaged / improved, 95% Wilson intervals.")
    print("Goal: damaged + improved <= 5%. 'FAILS': the Wilson interval of the sum lies above 5%;")
    print("'over?': above 5% but within sampling noise.\n")
    head = (f"{'population':<14} {'n':>3} | {'old damaged':>20} {'old improved':>20} | {'new damaged':>20} "
            f"{'new improved':>20} | {'betting d+i':>7} | {'untouched':>9} {'pct':>6} | old    new")
    print(head)
    print("-" * len(head))
    for (name, gen), n in product(NULLS.items(), sizes):
        rng = np.random.default_rng(seeds.spawn(1)[0])
        X = gen(rng, (reps, n))
        c = run_row(X, draws[n])
        if args.check:
            disagreements += check_row(X, args.samples, args.boot_seed)

        def verdict(k: int) -> str:
            lo, _ = wilson(k, reps)
            return "ok   " if k / reps <= ALPHA else ("FAILS" if lo > ALPHA else "over?")

        print(f"{name:<14} {n:>3} | {rate(c['old_d'], reps)} {rate(c['old_i'], reps)} | {rate(c['new_d'], reps)} "
              f"{rate(c['new_i'], reps)} | {100 * (c['bet_d'] + c['bet_i']) / reps:6.1f}% | "
              f"{100 * c['unt'] / reps:8.1f}% {100 * c['unt_pct'] / reps:5.1f}% | "
              f"{verdict(c['old_d'] + c['old_i'])}  {verdict(c['new_d'] + c['new_i'])}")

    print("\nPower: share labelled damaged at a true stratum mean of -0.05 and -0.1, 95% Wilson intervals;")
    print("'untouched' (wrong here: |mean| > margin 0.02) by the bounded interval and by the percentile CI.")
    print("'ceiling': the most any rule valid for every distribution on [-1, 1] can reach (see the docstring).\n")
    head = (f"{'population':<14} {'mean':>5} {'n':>3} | {'old damaged':>20} | {'new damaged':>20} | "
            f"{'betting':>7} | {'ceiling':>7} | {'untouched':>9} {'pct':>6} |")
    print(head)
    print("-" * len(head))
    for (name, gen), mu, n in product(POWER.items(), POWER_MEANS, sizes):
        rng = np.random.default_rng(seeds.spawn(1)[0])
        X = gen(rng, (reps, n), mu)
        c = run_row(X, draws[n])
        if args.check:
            disagreements += check_row(X, args.samples, args.boot_seed)
        eps = -mu / (1 - mu)
        ceiling = min(1.0, ALPHA / (1 - eps) ** n)
        note = "  no valid rule reaches 80%" if ceiling < 0.8 else ""
        print(f"{name:<14} {mu:>5} {n:>3} | {rate(c['old_d'], reps)} | {rate(c['new_d'], reps)} | "
              f"{100 * c['bet_d'] / reps:6.1f}% | {100 * ceiling:6.1f}% | "
              f"{100 * c['unt'] / reps:8.1f}% {100 * c['unt_pct'] / reps:5.1f}% |{note}")
    if args.check:
        print(f"\n--check: {disagreements} label disagreements between this vectorised rule and the gate's function")
    print(f"\nCPU time {time.process_time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
