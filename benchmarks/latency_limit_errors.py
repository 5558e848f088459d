"""Benchmark: both errors of the latency limit (``policy.latency.p95_max_increase``) on populations
designed after the rule was final, by someone other than its author (an independent check; none
of the breaker's populations or scripts are reused).

The rule under test (gate/verdict/resource_limits.py): a PR fails the limit only when a noise band
from R identical baseline repeats with timings exists, the candidate's p95 minus the baseline's
exceeds the band's latency threshold (``max(3 sd, range)`` of the repeats' p95,
``NoiseBand.latency_threshold_ms``), and the lower end of the paired bootstrap 95% interval of the
p95 change (the relative one for a ``%`` limit) is above the limit. Everything is the gate's own
code: :func:`gate.statistics.noise.noise_band` (with ``latencies=``) for the band,
:func:`gate.statistics.latency.compare_latency` (samples=1000) for the change and its interval,
:func:`gate.verdict.resource_limits.latency_breached` for the decision.

A trial draws n queries from the population, R=5 baseline repeats (the band; R=3 uses the first
three of the same five), one baseline run and one candidate run, each run with its own run-level
factors (the baseline run is not one of the repeats: the band is measured at another time). The
candidate's change is a parameter calibrated (bisection on 200,000 draws, run-level factors at
their central value) so that the population p95 moves by 0, 0.5, 1.5 or 3 times the limit.
Limits: relative ``10%`` and absolute ``5ms``. Populations (baseline p95 about 90-150 ms):

* ``cache``: bimodal. 10% of queries are never cached; the rest hit the cache with a run-level
  rate ~ N(0.72, 0.05) (a cold or warm cache per run). Hits ~ 6 ms x LN(0.3) per query x LN(0.25)
  per run, misses ~ 45 ms x LN(0.4) per query x LN(0.3) per run. The candidate slows the miss
  path (the backend) by a factor: only ~35% of the executions change, but the p95 lies in them.
* ``gamma-gc``: query means ~ 35 ms x LN(0.5), 5% of queries always slow (x4); each run a
  Gamma(shape 5) around the query mean, plus a GC pause U(40, 120) ms on 2% of executions, plus
  an ADDITIVE run-level drift ~ N(0, 4 ms). The candidate is a slower reranker on long queries
  (~30%, correlated with slowness): their latency x (1 + theta).
* ``neighbour``: query scales ~ 30 ms x LN(0.7), Weibull(1.5) per execution, MULTIPLICATIVE
  run-level drift exp(N(0, 0.05)) and, on 15% of runs, a noisy neighbour (the whole run x1.3).
  Three or five repeats often see no such run. The candidate: every query x (1 + theta).
* ``rare-path``: queries ~ 50 ms x LN(0.35), per-execution noise LN(0.1), additive run-level
  drift N(0, 2 ms); the candidate adds theta ms to a fixed 8% of queries (a new filter path),
  nothing to the rest, so the p95 moves only once those queries reach the tail.

For each population, n in (30, 100, 400) and R in (3, 5): harmless PRs (true p95 change 0 and
0.5x the limit) and the rate the rule FAILS them; harmful PRs (1.5x and 3x the limit) and the rate
it PASSES them (misses). Rates carry Wilson 95% intervals. Seeded: the same --trials and --seed
give the same table.

    python benchmarks/latency_limit_errors.py [--trials N] [--seed S] [--populations a,b] [--sizes 30,100]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rates import wilson  # noqa: E402

from gate.inputs.config import IncreaseLimit  # noqa: E402
from gate.statistics.latency import compare_latency  # noqa: E402
from gate.statistics.noise import noise_band  # noqa: E402
from gate.verdict.resource_limits import latency_breached  # noqa: E402

SAMPLES = 1000
REPEATS = (3, 5)
SIZES = (30, 100, 400)
EFFECTS = (0.0, 0.5, 1.5, 3.0)  # true p95 change, in multiples of the limit
LIMITS = {"10%": IncreaseLimit(0.10, True, written="10%"), "5ms": IncreaseLimit(5.0, False, "ms", written="5ms")}
CALIBRATION_DRAWS = 200_000

Queries = dict[str, np.ndarray]


# --------------------------------------------------------------------------- populations
# Each population: queries(rng, n) -> per-query parameters; run(rng, q, theta, central) -> one
# run's latencies (ms). The number of random draws never depends on theta (common random numbers
# for the calibration), and central=True fixes the run-level factors at their central value.


def _cache_queries(rng: np.random.Generator, n: int) -> Queries:
    return {"cacheable": rng.random(n) < 0.9, "hit": 6.0 * rng.lognormal(0.0, 0.3, n),
            "miss": 45.0 * rng.lognormal(0.0, 0.4, n)}


def _cache_run(rng: np.random.Generator, q: Queries, theta: float, central: bool) -> np.ndarray:
    n = len(q["hit"])
    rate = float(np.clip(rng.normal(0.72, 0.05), 0.0, 1.0))
    rate = 0.72 if central else rate
    hit = q["cacheable"] & (rng.random(n) < rate)
    hit_ms = q["hit"] * rng.lognormal(0.0, 0.25, n)
    miss_ms = q["miss"] * rng.lognormal(0.0, 0.3, n) * (1.0 + theta)
    return np.where(hit, hit_ms, miss_ms)


def _gamma_queries(rng: np.random.Generator, n: int) -> Queries:
    z = rng.normal(0.0, 1.0, n)
    mean = 35.0 * np.exp(0.5 * z) * np.where(rng.random(n) < 0.05, 4.0, 1.0)
    long = z + rng.normal(0.0, 1.0, n) > 0.74  # ~30% of queries, the slower ones more often
    return {"mean": mean, "long": long}


def _gamma_run(rng: np.random.Generator, q: Queries, theta: float, central: bool) -> np.ndarray:
    n = len(q["mean"])
    drift = rng.normal(0.0, 4.0)
    drift = 0.0 if central else drift
    body = rng.gamma(5.0, q["mean"] / 5.0) * np.where(q["long"], 1.0 + theta, 1.0)
    gc = np.where(rng.random(n) < 0.02, rng.uniform(40.0, 120.0, n), 0.0)
    return np.maximum(body + gc + drift, 0.5)


def _neighbour_queries(rng: np.random.Generator, n: int) -> Queries:
    return {"scale": 30.0 * rng.lognormal(0.0, 0.7, n)}


def _neighbour_run(rng: np.random.Generator, q: Queries, theta: float, central: bool) -> np.ndarray:
    n = len(q["scale"])
    factor = math.exp(rng.normal(0.0, 0.05)) * (1.3 if rng.random() < 0.15 else 1.0)
    factor = 1.0 if central else factor
    shape = 1.5
    return q["scale"] * rng.weibull(shape, n) / math.gamma(1.0 + 1.0 / shape) * factor * (1.0 + theta)


def _rare_queries(rng: np.random.Generator, n: int) -> Queries:
    return {"base": 50.0 * rng.lognormal(0.0, 0.35, n), "path": rng.random(n) < 0.08}


def _rare_run(rng: np.random.Generator, q: Queries, theta: float, central: bool) -> np.ndarray:
    n = len(q["base"])
    drift = rng.normal(0.0, 2.0)
    drift = 0.0 if central else drift
    return np.maximum(q["base"] * rng.lognormal(0.0, 0.1, n) + drift + theta * q["path"], 0.5)


POPULATIONS: dict[str, tuple[Callable[..., Queries], Callable[..., np.ndarray], float]] = {
    # name: (queries, run, upper bound of theta for the calibration)
    "cache": (_cache_queries, _cache_run, 3.0),
    "gamma-gc": (_gamma_queries, _gamma_run, 5.0),
    "neighbour": (_neighbour_queries, _neighbour_run, 3.0),
    "rare-path": (_rare_queries, _rare_run, 500.0),
}


def calibrate(name: str, target: float, relative: bool) -> tuple[float, float]:
    """theta whose population p95 change is ``target`` (relative or in ms); and the baseline p95."""
    make_queries, run, high = POPULATIONS[name]

    def p95(theta: float) -> float:
        rng = np.random.default_rng(12345)
        q = make_queries(rng, CALIBRATION_DRAWS)
        return float(np.percentile(run(rng, q, theta, True), 95))

    base = p95(0.0)
    if target == 0.0:
        return 0.0, base

    def change(theta: float) -> float:
        value = p95(theta) - base
        return value / base if relative else value

    low = 0.0
    if change(high) < target:
        raise RuntimeError(f"{name}: cannot reach a p95 change of {target}")
    for _ in range(30):
        mid = (low + high) / 2.0
        low, high = (mid, high) if change(mid) < target else (low, mid)
    return (low + high) / 2.0, base


# --------------------------------------------------------------------------- the trials


def cell(name: str, n: int, limit: IncreaseLimit, theta: float, trials: int,
         seed_parts: list[int]) -> dict[int, tuple[int, list[float]]]:
    """Breaches out of ``trials`` for each R, and the band thresholds seen (ms)."""
    make_queries, run, _ = POPULATIONS[name]
    out: dict[int, tuple[int, list[float]]] = {r: (0, []) for r in REPEATS}
    zeros = np.zeros(n)
    ids = [f"q{i}" for i in range(n)]
    for trial in range(trials):
        rng = np.random.default_rng(np.random.SeedSequence([*seed_parts, trial]))
        q = make_queries(rng, n)
        repeats = [run(rng, q, 0.0, False) for _ in range(max(REPEATS))]
        baseline = run(rng, q, 0.0, False)
        candidate = run(rng, q, theta, False)
        change = compare_latency(baseline, candidate, SAMPLES, int(rng.integers(2**31))).p95
        for r in REPEATS:
            band = noise_band("latency-study", ids, [zeros] * r, latencies=repeats[:r])
            threshold = band.latency_threshold_ms
            breached = latency_breached(change, threshold, limit)
            k, seen = out[r]
            out[r] = (k + (breached is True), [*seen, float(threshold or 0.0)])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--seed", type=int, default=20261205)
    parser.add_argument("--populations", default=",".join(POPULATIONS))
    parser.add_argument("--sizes", default=",".join(str(s) for s in SIZES))
    args = parser.parse_args(argv)
    names = [p for p in args.populations.split(",") if p]
    sizes = [int(s) for s in args.sizes.split(",") if s]
    started = time.monotonic()
    print(f"latency limit errors: {args.trials} trials per cell, bootstrap samples={SAMPLES}, seed={args.seed}")
    print("rate = FAIL rate for harmless PRs (truth 0, 0.5x limit); MISS (pass) rate for harmful ones (1.5x, 3x)")
    print("thr = median band latency threshold (ms); p95 = population baseline p95 (ms); theta = candidate parameter")
    header = (f"{'population':<10} {'n':>4} {'limit':>5} {'truth':>5} {'kind':<10} {'theta':>8} {'p95':>6} "
              f"{'R=3 rate [95% CI]':<24} {'thr3':>6} {'R=5 rate [95% CI]':<24} {'thr5':>6}")
    print(header)
    print("-" * len(header))
    for p_index, name in enumerate(POPULATIONS):
        if name not in names:
            continue
        for limit_name, limit in LIMITS.items():
            calibrated = [calibrate(name, e * limit.value, limit.relative) for e in EFFECTS]
            for n in sizes:
                for e_index, effect in enumerate(EFFECTS):
                    theta, base_p95 = calibrated[e_index]
                    harmful = effect > 1.0
                    seed_parts = [args.seed, p_index, n, int(limit.relative), e_index]
                    result = cell(name, n, limit, theta, args.trials, seed_parts)
                    shown = []
                    for r in REPEATS:
                        k, seen = result[r]
                        errors = args.trials - k if harmful else k
                        lo, hi = wilson(errors, args.trials)
                        shown.append(f"{errors / args.trials:6.1%} [{lo:5.1%}, {hi:5.1%}]")
                        shown.append(f"{float(np.median(seen)):6.1f}")
                    kind = "miss" if harmful else "false fail"
                    print(f"{name:<10} {n:>4} {limit_name:>5} {effect:>4g}x {kind:<10} {theta:>8.4g} "
                          f"{base_p95:>6.1f} {shown[0]:<24} {shown[1]} {shown[2]:<24} {shown[3]}", flush=True)
    print(f"({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
