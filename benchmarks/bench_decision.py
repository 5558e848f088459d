"""Benchmark: calibration and power of the gate's pass / fail / inconclusive decision.

The gate decides from per-query paired differences ``d = candidate - baseline``
whether a PR regresses (``gate.verdict.rules.decide_delta``): fail when the 95% interval
of mean(d) lies below 0, pass ("non-inferior") when its lower end is at least
``-margin`` (``policy.max_regression``, 0.02), inconclusive otherwise.  This
benchmark measures, for several interval methods / decision rules
(``benchmarks/decision_methods.py``), on populations of real per-query deltas:

  * at a true mean of exactly ``-margin``: the rate of "pass" (false pass; the
    target is 2.5%, the acceptance line here 3.5% incl. Monte-Carlo error);
  * at a true mean of 0: the rate of "fail" (false fail) and of "inconclusive";
  * at a true mean of +0.05: the rate of "improvement shown" (low > 0) and of "pass".

Populations.  Per-query nDCG@10 and RR@10 of the 12 official TREC DL 2019 passage
runs (``/work/shared/realdata/runs/trec-dl-2019-passage``) are computed with the
gate itself (``gate.inputs.readers.runs.read_run``, ``gate.inputs.readers.qrels.read_qrels``,
``gate.evaluation.evaluate.evaluate``); every pair of runs gives 43 per-query deltas, oriented
"worse run minus better run" (a real regression's shape: left-skewed), 66 pairs =
2,838 deltas per measure (``--orientations worse``); with ``both`` every pair is
also taken the other way round (5,676 deltas, symmetric about 0 before shifting;
those scenarios are named ``.../sym``).  The default runs both.  Without that folder a generated stand-in of the same
size and similar shape is used (the benchmark never skips).  Scenarios:

  sparse10-n20, sparse10-n50  10% of queries move (Bernoulli), movers drawn from the
                              non-zero nDCG@10 deltas; 90% exact zeros
  rr-n30                      the RR@10 deltas as they are (about 81% exact zeros,
                              heavy-tailed movers)
  ndcg-n43, ndcg-n140         the nDCG@10 deltas (about 7% zeros, continuous)
  (extra, not in the default list: ndcg-n500, sparse10-n140, sparse05-n100, rr-n100)

A population is moved to a true mean by shifting its non-zero values by a
constant ``s`` and clipping to [-1, 1], with ``s`` solved (bisection) so that the
population mean is exactly the target; exact zeros stay zeros, so the mover share
and the shape of the movers are kept.  The same random draws (which queries,
which pool entries) are used for the three true means of a scenario and for
every method (common random numbers), so differences between methods are
paired.  Rates come with 95% Wilson intervals over the replications.

Resamples: like the gate, every comparison of n queries uses the same bootstrap
indices ``default_rng(--boot-seed).integers(0, n, size=(B, n))`` (the gate's seed
is fixed at 7).  ``--verify K`` re-decides the first K replications of every cell
with the gate's own ``paired_bootstrap`` + ``decide_delta`` (percentile and BCa)
and counts disagreements.

    python benchmarks/bench_decision.py [--replications 4000] [--samples 2000] [--seed 1]
        [--scenarios sparse10-n20,...] [--methods percentile,boot-t+m5,...|all] [--verify K] [--json FILE]

The gate's default rule is ``signflip|boot-hall+m5+wc`` here (``--verify K`` re-decides K
replications of each cell with gate.verdict.rules.decide_delta and gate.statistics.evidence and counts the
disagreements: none).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import decision_methods as dm  # noqa: E402

REALDATA = Path(__import__("os").environ.get("RETRIEVAL_GATE_SHARED", str(REPO.parent / "shared"))) / "realdata" \
    / "runs" / "trec-dl-2019-passage"
#: The gate's default rule (gate.verdict.rules.decide_delta with gate.statistics.evidence), in this module's notation.
GATE_RULE = "signflip|boot-hall+m5+wc"
MEASURES = ("nDCG@10", "RR@10")
MARGIN = 0.02
TRUE_MEANS = (("margin", -MARGIN), ("zero", 0.0), ("plus", 0.05))

DEFAULT_SCENARIOS = ["sparse10-n20", "sparse10-n50", "rr-n30", "ndcg-n43", "ndcg-n140"]
#: The seed's rule (percentile), the alternatives that each fix part of it, and the gate's rule.
DEFAULT_METHODS = ["percentile", "bca", "boot-t", "boot-hall", "signflip", "boot-hall+m5", "signflip|boot-hall+m5",
                   GATE_RULE]
#: Everything the study compared (--methods all).
ALL_METHODS = [
    "percentile", "bca", "boot-t", "t", "hall-t", "boot-hall", "signflip", "betting",
    "percentile+cp", "percentile+m5", "boot-t+m5", "t+m5", "signflip+m5", "boot-hall+m5",
    "t|boot-t+m5", "signflip|boot-t+m5",
    "signflip|boot-hall+m3", "signflip|boot-hall+m4", "signflip|boot-hall+m5", GATE_RULE,
]


#: pool orientation -> suffix of the scenario name
ORIENTATIONS = {"worse": "", "both": "/sym"}


@dataclass(frozen=True)
class Scenario:
    name: str
    measure: str
    n: int
    mover_share: float | None  # None: sample the pool as it is (its own zeros)


SCENARIOS = {
    "sparse10-n20": Scenario("sparse10-n20", "nDCG@10", 20, 0.10),
    "sparse10-n50": Scenario("sparse10-n50", "nDCG@10", 50, 0.10),
    "rr-n30": Scenario("rr-n30", "RR@10", 30, None),
    "ndcg-n43": Scenario("ndcg-n43", "nDCG@10", 43, None),
    "ndcg-n140": Scenario("ndcg-n140", "nDCG@10", 140, None),
    # extras
    "ndcg-n500": Scenario("ndcg-n500", "nDCG@10", 500, None),
    "sparse10-n140": Scenario("sparse10-n140", "nDCG@10", 140, 0.10),
    "sparse05-n100": Scenario("sparse05-n100", "nDCG@10", 100, 0.05),
    "rr-n100": Scenario("rr-n100", "RR@10", 100, None),
}


# --------------------------------------------------------------------------- pools of real deltas


def oriented(d: np.ndarray, orientation: str) -> np.ndarray:
    if orientation == "both":
        return np.concatenate([d, -d])
    return d


def real_pools(orientation: str = "worse") -> dict[str, np.ndarray]:
    from gate.evaluation.evaluate import evaluate
    from gate.inputs.universe import query_universe
    from gate.inputs.readers.qrels import read_qrels
    from gate.inputs.readers.runs import read_run

    qrels = read_qrels(REALDATA / "qrels" / "qrels.dl19-passage.txt")
    universe = query_universe(qrels)
    per_run = {}
    for path in sorted((REALDATA / "official_nist").glob("input.*.gz")):
        ev = evaluate(read_run(path), qrels, list(MEASURES), universe.query_ids)
        per_run[path.name] = {m: np.asarray(ev.values[m], dtype=np.float64) for m in MEASURES}
    pools = {}
    for m in MEASURES:
        parts = []
        for a, b in itertools.combinations(sorted(per_run), 2):
            d = per_run[a][m] - per_run[b][m]
            parts.append(oriented(-d if d.mean() > 0 else d, orientation))  # worse minus better
        pools[m] = np.concatenate(parts)
    return pools


def generated_pools(orientation: str = "worse", size: int = 2838, seed: int = 2019) -> dict[str, np.ndarray]:
    """A stand-in with the real pools' shape (zero share, mean, sd, skew), for a fresh clone."""
    rng = np.random.default_rng(seed)
    # nDCG@10: ~7% ties; movers left-skewed (mean -0.13, sd 0.21, skew about -1).
    k, theta = 4.34, 0.1008
    nz = np.clip(k * theta - 0.128 - rng.gamma(k, theta, size=size), -1.0, 1.0)
    ndcg = np.where(rng.random(size) < 0.067, 0.0, nz)
    # RR@10: ~81% ties; movers are differences of reciprocal ranks, mostly losses.
    ranks = np.arange(1, 12)
    p = 0.5 ** ranks
    p /= p.sum()
    rr_of = np.where(ranks <= 10, 1.0 / ranks, 0.0)
    mags = np.abs(rr_of[rng.choice(11, size=size, p=p)] - rr_of[rng.choice(11, size=size, p=p)])
    mags = np.where(mags == 0, 0.5, mags)
    sign = np.where(rng.random(size) < 0.845, -1.0, 1.0)
    rr = np.where(rng.random(size) < 0.81, 0.0, sign * mags)
    return {"nDCG@10": oriented(ndcg, orientation), "RR@10": oriented(rr, orientation)}


def shifted(values: np.ndarray, target: float) -> np.ndarray:
    """Non-zero values shifted by one constant and clipped to [-1, 1] so the mean is ``target``.

    Zeros stay exactly zero.  ``target`` is the mean over all of ``values``.
    """
    nz = values != 0
    v = values[nz]

    def mean_at(s: float) -> float:
        out = np.clip(v + s, -1.0, 1.0)
        return float(out.sum() / values.size)

    lo, hi = -2.0, 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mean_at(mid) < target:
            lo = mid
        else:
            hi = mid
    s = 0.5 * (lo + hi)
    out = values.copy()
    moved = np.clip(v + s, -1.0, 1.0)
    moved[moved == 0.0] = np.finfo(float).tiny  # a mover stays a mover
    out[nz] = moved
    achieved = out.mean()
    if abs(achieved - target) > 1e-9:
        raise RuntimeError(f"could not reach mean {target} (got {achieved})")
    return out


# --------------------------------------------------------------------------- statistics of rates


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, centre - half), min(1.0, centre + half)


def rate(k: int, n: int) -> dict:
    lo, hi = wilson(k, n)
    p = k / n
    return {"count": int(k), "rate": p, "se": math.sqrt(p * (1 - p) / n), "wilson_low": lo, "wilson_high": hi}


def fmt(r: dict) -> str:
    return f"{100 * r['rate']:5.1f} [{100 * r['wilson_low']:4.1f},{100 * r['wilson_high']:5.1f}]"


# --------------------------------------------------------------------------- the study


def draws(sc: Scenario, pools, replications: int, rng: np.random.Generator):
    """Random choices shared by the three true means: (pool index, mover indicator or None)."""
    pool = pools[sc.measure]
    if sc.mover_share is None:
        return rng.integers(0, pool.size, size=(replications, sc.n)), None
    movers = pool[pool != 0]
    idx = rng.integers(0, movers.size, size=(replications, sc.n))
    move = rng.random((replications, sc.n)) < sc.mover_share
    return idx, move


def population(sc: Scenario, pools, mu: float) -> np.ndarray:
    pool = pools[sc.measure]
    if sc.mover_share is None:
        return shifted(pool, mu)
    movers = pool[pool != 0]
    return shifted(movers, mu / sc.mover_share)


def gate_verdicts(d: np.ndarray, samples: int, seed: int, method: str) -> int:
    """The gate's own decision on one sample: its interval rule on ``method``'s interval, or
    (``GATE_RULE``) its calibrated rule with :func:`gate.statistics.evidence.evidence`."""
    from gate.statistics.bootstrap import paired_bootstrap
    from gate.statistics.evidence import evidence
    from gate.statistics.power import minimum_detectable_effect
    from gate.verdict.rules import Policy, decide_delta

    if method == GATE_RULE:
        b = paired_bootstrap(d, samples, seed, "percentile")
        v = decide_delta(b.mean, b.ci_low, b.ci_high, None, "m", d.size, Policy(max_regression=MARGIN),
                         evidence=evidence(d, MARGIN, samples, seed))
    else:
        b = paired_bootstrap(d, samples, seed, method)
        v = decide_delta(b.mean, b.ci_low, b.ci_high, minimum_detectable_effect(d), "m", d.size,
                         Policy(max_regression=MARGIN, decision="interval"))
    return {"pass": 0, "fail": 1, "inconclusive": 3}[v.kind]


def run_cell(sc, X, methods, ctx, chunk, verify):
    out = {m: {"pass": 0, "fail": 0, "inconclusive": 0, "improve": 0} for m in methods}
    mismatches = {}
    R = X.shape[0]
    no_movers = int(np.count_nonzero(np.all(X == 0, axis=1)))
    for start in range(0, R, chunk):
        block = X[start:start + chunk]
        cache: dict = {}
        for m in methods:
            dec = dm.run(m, block, ctx, cache)
            v = dm.verdicts(block, dec)
            c = out[m]
            c["pass"] += int(np.count_nonzero(v == 0))
            c["fail"] += int(np.count_nonzero(v == 1))
            c["inconclusive"] += int(np.count_nonzero(v == 3))
            c["improve"] += int(np.count_nonzero(dec.improve & (v == 0)))
            if start == 0 and verify and m in ("percentile", "bca", GATE_RULE):
                k = min(verify, block.shape[0])
                ours = v[:k]
                theirs = np.array([gate_verdicts(block[i], ctx.samples, ctx.seed, m) for i in range(k)])
                mismatches[m] = int(np.count_nonzero(ours != theirs))
    return out, no_movers, mismatches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=4000)
    parser.add_argument("--samples", type=int, default=2000, help="bootstrap / sign-flip resamples B")
    parser.add_argument("--seed", type=int, default=1, help="seed of the population draws")
    parser.add_argument("--boot-seed", type=int, default=7, help="resampling seed (the gate's is 7)")
    parser.add_argument("--scenarios", default=",".join(DEFAULT_SCENARIOS))
    parser.add_argument("--methods", default=",".join(DEFAULT_METHODS))
    parser.add_argument("--margin", type=float, default=MARGIN)
    parser.add_argument("--orientations", default="worse,both",
                        help="pool orientations: worse (worse run minus better run), both (each pair both ways)")
    parser.add_argument("--generated", action="store_true", help="use the generated stand-in even if real data exist")
    parser.add_argument("--verify", type=int, default=0,
                        help="re-decide the first K replications of each cell with the gate's own code")
    parser.add_argument("--json", help="write all counts and rates to this file")
    args = parser.parse_args()

    base_scenarios = [SCENARIOS[s] for s in args.scenarios.split(",") if s]
    orientations = [o for o in args.orientations.split(",") if o]
    for o in orientations:
        if o not in ORIENTATIONS:
            raise SystemExit(f"unknown orientation {o!r}; expected {', '.join(ORIENTATIONS)}")
    methods = ALL_METHODS if args.methods == "all" else [m for m in args.methods.split(",") if m]
    for m in methods:
        dm.parse(m)
    started = time.perf_counter()
    real = REALDATA.exists() and not args.generated
    source = (f"TREC DL 2019 passage, 12 official runs, all 66 pairs ({REALDATA})" if real
              else "generated stand-in (no real data found)")
    pools_by = {o: (real_pools(o) if real else generated_pools(o)) for o in orientations}
    chunk = max(50, int(4_000_000 // max(args.samples, 1)))
    seed_of = dict(zip(SCENARIOS, np.random.SeedSequence(args.seed).spawn(len(SCENARIOS))))
    # (display name, scenario, pools); the same draws for both orientations of a scenario
    scenarios = [(sc.name + ORIENTATIONS[o], sc, pools_by[o]) for o in orientations for sc in base_scenarios]

    print(f"pools: {source}")
    for o, pools in pools_by.items():
        for m, p in pools.items():
            nz = p[p != 0]
            print(f"  {o:>5} {m}: {p.size} deltas, zero share {np.mean(p == 0):.3f}, mean {p.mean():+.4f}, "
                  f"sd {p.std():.4f}, movers' |d| median {np.median(np.abs(nz)):.3f}")
    print(f"replications {args.replications} per cell, B = {args.samples}, margin {args.margin}, "
          f"population seed {args.seed}, resampling seed {args.boot_seed}")

    results = {"source": source, "replications": args.replications, "samples": args.samples,
               "seed": args.seed, "boot_seed": args.boot_seed, "margin": args.margin,
               "orientations": orientations, "methods": methods, "cells": []}
    contexts: dict[int, dm.Context] = {}
    for name, sc, pools in scenarios:
        rng = np.random.default_rng(seed_of[sc.name])
        idx, move = draws(sc, pools, args.replications, rng)
        ctx = contexts.setdefault(sc.n, dm.Context(sc.n, args.samples, args.boot_seed, args.margin))
        for label, mu in TRUE_MEANS:
            mu_eff = -args.margin if label == "margin" else mu
            pop = population(sc, pools, mu_eff)
            X = pop[idx]
            if move is not None:
                X = np.where(move, X, 0.0)
            t0 = time.perf_counter()
            counts, no_movers, mism = run_cell(sc, X, methods, ctx, chunk, args.verify)
            cell = {"scenario": name, "n": sc.n, "true_mean": mu_eff, "label": label,
                    "all_zero_samples": no_movers, "seconds": round(time.perf_counter() - t0, 2),
                    "gate_mismatches": mism, "methods": {}}
            for m, c in counts.items():
                R = args.replications
                cell["methods"][m] = {k: rate(v, R) for k, v in c.items()}
            results["cells"].append(cell)
            extra = f", gate re-check mismatches {mism}" if mism else ""
            print(f"  {name} mean {mu_eff:+.2f}: {cell['seconds']:.1f} s, "
                  f"{no_movers} samples with no mover{extra}", file=sys.stderr)
    scenarios = [name for name, _, _ in scenarios]

    # ---- table
    def get(sc, label, m, key):
        for c in results["cells"]:
            if c["scenario"] == sc and c["label"] == label:
                return c["methods"][m][key]
        raise KeyError

    head = (f"{'scenario':<18} {'method':<22} {'FALSE PASS @-m':>19} {'FALSE FAIL @0':>19} "
            f"{'inconcl. @0':>19} {'improv. @+.05':>19} {'pass @+.05':>19}")
    print()
    print("rates in % [95% Wilson interval]; FALSE PASS target 2.5, accepted if the interval's top <= 3.5")
    print(head)
    print("-" * len(head))
    for sc in scenarios:
        for m in methods:
            fp = get(sc, "margin", m, "pass")
            flag = " " if fp["wilson_high"] <= 0.035 else "*"
            print(f"{sc:<18} {m:<22} {fmt(fp)}{flag}{fmt(get(sc, 'zero', m, 'fail'))} "
                  f"{fmt(get(sc, 'zero', m, 'inconclusive'))} {fmt(get(sc, 'plus', m, 'improve'))} "
                  f"{fmt(get(sc, 'plus', m, 'pass'))}")
        print()

    # ---- summary per method over the scenarios
    print("summary over scenarios: worst false-pass upper bound, worst false fail, "
          "mean power change vs percentile (points)")
    print(f"{'method':<22} {'max FP top':>10} {'max FF':>7} {'d improv.':>10} {'d pass@+.05':>12} "
          f"{'d pass@0':>9}  verdict")
    summary = {}
    for m in methods:
        fp_top = max(get(s, "margin", m, "pass")["wilson_high"] for s in scenarios)
        ff = max(get(s, "zero", m, "fail")["rate"] for s in scenarios)
        if "percentile" in methods:
            dimp = np.mean([get(s, "plus", m, "improve")["rate"] - get(s, "plus", "percentile", "improve")["rate"]
                            for s in scenarios])
            dpass = np.mean([get(s, "plus", m, "pass")["rate"] - get(s, "plus", "percentile", "pass")["rate"]
                             for s in scenarios])
            dpass0 = np.mean([get(s, "zero", m, "pass")["rate"] - get(s, "zero", "percentile", "pass")["rate"]
                              for s in scenarios])
        else:
            dimp = dpass = dpass0 = float("nan")
        ok = fp_top <= 0.035 and ff <= 0.05
        summary[m] = {"max_false_pass_wilson_high": fp_top, "max_false_fail": ff,
                      "mean_delta_improve_vs_percentile": dimp, "mean_delta_pass_plus_vs_percentile": dpass,
                      "mean_delta_pass_zero_vs_percentile": dpass0, "meets_criteria": ok}
        print(f"{m:<22} {100 * fp_top:9.1f}% {100 * ff:6.1f}% {100 * dimp:+9.1f} {100 * dpass:+11.1f} "
              f"{100 * dpass0:+8.1f}  {'meets' if ok else '-'}")
    results["summary"] = summary
    results["seconds"] = round(time.perf_counter() - started, 1)
    print(f"\nwall time {results['seconds']} s")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
