"""Populations of per-query differences ``d = candidate - baseline`` for the decision battery.

A population is a finite weighted pool (:class:`Population`: values in [-1, 1] and their
probabilities); a simulated PR draws ``n`` queries from it independently.  Each family is a
function of the true mean ``mu`` it must have exactly (to 1e-9), built in one of three ways:

* ``shift`` (the older benchmark's way): every non-zero value moved by one constant and
  clipped, so the share of movers is kept but every mover moves - the samples always hold the
  loss;
* ``tilt``: the pool's values kept and their weights tilted, ``w_i ~ w0_i exp(theta d_i)``,
  ``theta`` solved for the mean: the support is kept, so a rare large loss stays a rare large
  loss (it only becomes somewhat less rare), which is how a real regression that breaks a few
  queries looks;
* constructed shapes (skewed nulls, A/A noise) defined directly for every ``mu``.

The real pools are per-query nDCG@10 and RR@10 of the 12 official TREC DL 2019 passage runs
(every pair of runs, evaluated by the gate itself).  Without ``../shared`` a generated stand-in
of the same size and shape is used, and the battery says so.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
REALDATA = Path(os.environ.get("RETRIEVAL_GATE_SHARED", str(REPO.parent / "shared"))) / "realdata" \
    / "runs" / "trec-dl-2019-passage"
MEASURES = ("nDCG@10", "RR@10")


@dataclass(frozen=True)
class Population:
    values: np.ndarray  # float64 in [-1, 1]
    weights: np.ndarray  # probabilities, sum 1

    @property
    def mean(self) -> float:
        return float(self.values @ self.weights)

    def draw(self, rng: np.random.Generator, replications: int, n: int) -> np.ndarray:
        """``(replications, n)`` independent draws (inverse-CDF on one uniform stream)."""
        cdf = np.cumsum(self.weights)
        cdf[-1] = 1.0
        u = rng.random((replications, n))
        return self.values[np.searchsorted(cdf, u, side="right")]

    def carrier_share(self, side: str) -> float:
        """The smallest share of the population that carries half of its losses (``side="loss"``)
        or gains (``"gain"``), largest first; the last value is taken in part, so the share does
        not depend on how the population is stored (one atom of 5% at -1.0, or 1,000 atoms)."""
        v, w = self.values, self.weights
        sel = v < 0 if side == "loss" else v > 0
        if not sel.any():
            return 1.0
        mag = np.abs(v[sel])
        ww = w[sel]
        order = np.argsort(-mag, kind="stable")
        mag, ww = mag[order], ww[order]
        carried = np.cumsum(mag * ww)
        half = 0.5 * carried[-1]
        k = int(np.searchsorted(carried, half))
        before = float(carried[k - 1]) if k else 0.0
        return float(np.sum(ww[:k])) + (half - before) / float(mag[k])

    def miss_probability(self, n: int, side: str) -> float:
        """Chance a sample of ``n`` holds none of the queries that carry half of the
        population's losses or gains (:meth:`carrier_share`)."""
        return (1.0 - self.carrier_share(side)) ** n


def _solve(mean_at: Callable[[float], float], target: float, lo: float, hi: float) -> float:
    """The parameter at which the increasing ``mean_at`` reaches ``target`` (bisection)."""
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mean_at(mid) < target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _tilted(values: np.ndarray, base: np.ndarray, mu: float) -> Population:
    def mean_at(theta: float) -> float:
        z = theta * values
        w = base * np.exp(z - z.max())
        return float(values @ w / w.sum())

    if not (mean_at(-200.0) <= mu <= mean_at(200.0)):
        raise ValueError(f"a tilt cannot reach mean {mu}")
    z = _solve(mean_at, mu, -200.0, 200.0) * values
    w = base * np.exp(z - z.max())
    pop = Population(values, w / w.sum())
    if abs(pop.mean - mu) > 1e-9:
        raise RuntimeError(f"tilt reached {pop.mean}, not {mu}")
    return pop


def _shifted(values: np.ndarray, mu: float) -> Population:
    nz = values != 0
    v = values[nz]

    def mean_at(s: float) -> float:
        return float(np.clip(v + s, -1.0, 1.0).sum() / values.size)

    out = values.copy()
    moved = np.clip(v + _solve(mean_at, mu, -2.0, 2.0), -1.0, 1.0)
    moved[moved == 0.0] = np.finfo(float).tiny  # a mover stays a mover
    out[nz] = moved
    pop = Population(out, np.full(out.size, 1.0 / out.size))
    if abs(pop.mean - mu) > 1e-9:
        raise RuntimeError(f"shift reached {pop.mean}, not {mu}")
    return pop


def _with_zeros(movers: Population, mover_share: float) -> Population:
    return Population(np.concatenate([[0.0], movers.values]),
                      np.concatenate([[1.0 - mover_share], mover_share * movers.weights]))


# --------------------------------------------------------------------------- real pools


def real_deltas() -> dict[str, dict[str, np.ndarray]] | None:
    """Per-measure deltas of every pair of the 12 DL19 runs: ``worse`` (worse minus better),
    ``sym`` (each pair both ways) and ``close`` (pairs whose means differ by < 0.05, both ways)."""
    if not REALDATA.exists():
        return None
    import sys
    sys.path.insert(0, str(REPO))
    from gate.evaluation.evaluate import evaluate
    from gate.inputs.readers.qrels import read_qrels
    from gate.inputs.readers.runs import read_run
    from gate.inputs.universe import query_universe

    qrels = read_qrels(REALDATA / "qrels" / "qrels.dl19-passage.txt")
    universe = query_universe(qrels)
    per_run = {}
    for path in sorted((REALDATA / "official_nist").glob("input.*.gz")):
        ev = evaluate(read_run(path), qrels, list(MEASURES), universe.query_ids)
        per_run[path.name] = {m: np.asarray(ev.values[m], dtype=np.float64) for m in MEASURES}
    out: dict[str, dict[str, np.ndarray]] = {}
    for m in MEASURES:
        worse, sym, close = [], [], []
        for a, b in itertools.combinations(sorted(per_run), 2):
            d = per_run[a][m] - per_run[b][m]
            worse.append(-d if d.mean() > 0 else d)
            sym += [d, -d]
            if abs(d.mean()) < 0.05:
                close += [d, -d]
        out[m] = {"worse": np.concatenate(worse), "sym": np.concatenate(sym), "close": np.concatenate(close)}
    return out


def generated_deltas(seed: int = 2019) -> dict[str, dict[str, np.ndarray]]:
    """A stand-in with the real pools' shape (zero share, spread, skew) for a clone without data."""
    rng = np.random.default_rng(seed)
    size = 2838
    k, theta = 4.34, 0.1008
    nz = np.clip(k * theta - 0.128 - rng.gamma(k, theta, size=size), -1.0, 1.0)
    ndcg = np.where(rng.random(size) < 0.067, 0.0, nz)
    ranks = np.arange(1, 12)
    p = 0.5 ** ranks
    p /= p.sum()
    rr_of = np.where(ranks <= 10, 1.0 / ranks, 0.0)
    mags = np.abs(rr_of[rng.choice(11, size=size, p=p)] - rr_of[rng.choice(11, size=size, p=p)])
    mags = np.where(mags == 0, 0.5, mags)
    sign = np.where(rng.random(size) < 0.845, -1.0, 1.0)
    rr = np.where(rng.random(size) < 0.81, 0.0, sign * mags)
    out = {}
    for m, worse in (("nDCG@10", ndcg), ("RR@10", rr)):
        sym = np.concatenate([worse, -worse])
        close = np.concatenate([worse * 0.6, -worse * 0.6])
        out[m] = {"worse": worse, "sym": sym, "close": close}
    return out


# --------------------------------------------------------------------------- families


@dataclass(frozen=True)
class Family:
    name: str
    description: str
    build: Callable[[float], Population]
    ns: tuple[int, ...]
    no_op: bool = False  # only run-to-run noise at mu = 0 (the blocking goal applies)


ALL_N = (10, 20, 30, 43, 60, 140, 500)


def _uniform(values: np.ndarray) -> Population:
    return Population(values, np.full(values.size, 1.0 / values.size))


def _skewed(mu: float, sign: float, seed: int) -> Population:
    """10% of queries move ``sign`` * U(0.6, 1.0), 90% move the other way by U(0, 2c) with
    ``c`` set so the mean is ``mu`` (sign +1: a few big gains, many small losses)."""
    rng = np.random.default_rng(seed)
    big = rng.uniform(0.6, 1.0, 2000)
    small = rng.uniform(0.0, 2.0, 18000)  # mean 1: scaled by c below
    big_part = 0.1 * big.mean()
    c = (big_part - sign * mu) / (0.9 * small.mean())
    if c < 0:
        raise ValueError(f"skewed family cannot reach {mu}")
    values = np.concatenate([sign * big, -sign * c * small])
    return _uniform(np.clip(values, -1.0, 1.0))


def _aa_noise(mu: float, per_query_sd: float, seed: int) -> Population:
    """Run-to-run noise of an A/A pair, plus a dense true effect ``mu`` on every query: half the
    queries keep their ranking (d = 0 before the effect), the rest move by a symmetric Laplace
    amount whose sd makes the per-query sd ``per_query_sd``."""
    rng = np.random.default_rng(seed)
    size = 20000
    movers = rng.laplace(0.0, per_query_sd / math.sqrt(2.0) / math.sqrt(0.5), size // 2)
    movers = np.concatenate([movers, -movers])  # exactly symmetric
    values = np.concatenate([np.zeros(size), movers])
    if mu != 0.0:
        values = values + mu
    return _uniform(np.clip(values, -1.0, 1.0)) if mu == 0.0 else _exact_mean(np.clip(values, -1.0, 1.0), mu)


def _exact_mean(values: np.ndarray, mu: float) -> Population:
    """``values`` shifted by one constant and clipped to [-1, 1], the shift solved for mean ``mu``."""
    shift = _solve(lambda s: float(np.clip(values + s, -1.0, 1.0).mean()), mu, -2.0, 2.0)
    pop = _uniform(np.clip(values + shift, -1.0, 1.0))
    if abs(pop.mean - mu) > 1e-9:
        raise RuntimeError(f"shift reached {pop.mean}, not {mu}")
    return pop


#: The seed's run-to-run spread: sd 0.00405 of the mean nDCG@10 over 10 rebuilds of 140 queries,
#: so one run's per-query noise sd is 0.00405 * sqrt(140) and an A/A difference's sqrt(2) of it.
SEED_AA_SD = 0.00405 * math.sqrt(140) * math.sqrt(2)


def families(pools: dict[str, dict[str, np.ndarray]]) -> list[Family]:
    nd, rr = pools["nDCG@10"], pools["RR@10"]

    def shift_sparse(kind: str, share: float):
        movers = nd[kind][nd[kind] != 0]
        return lambda mu: _with_zeros(_shifted(movers, mu / share), share)

    def tilt(values: np.ndarray, share: float | None = None):
        vals, counts = np.unique(values if share is None else values[values != 0], return_counts=True)
        base = counts / counts.sum()
        if share is None:
            return lambda mu: _tilted(vals, base, mu)
        return lambda mu: _with_zeros(_tilted(vals, base, mu / share), share)

    today = []
    for kind, suffix in (("worse", ""), ("sym", "/sym")):
        today += [
            Family(f"sparse10-shift{suffix}", f"10% movers, DL19 nDCG@10 {kind} deltas, every mover shifted",
                   shift_sparse(kind, 0.10), (20, 50)),
            Family(f"rr-shift{suffix}", f"DL19 RR@10 {kind} deltas as they are, movers shifted",
                   (lambda v: (lambda mu: _shifted(v, mu)))(rr[kind]), (30,)),
            Family(f"ndcg-shift{suffix}", f"DL19 nDCG@10 {kind} deltas, movers shifted",
                   (lambda v: (lambda mu: _shifted(v, mu)))(nd[kind]), (43, 140)),
        ]
    new = [
        Family("sparse10-tilt",
               "10% movers from DL19 nDCG@10 deltas (both ways), weights tilted: rare losses stay rare",
               tilt(nd["sym"], 0.10), ALL_N),
        Family("sparse20-tilt", "20% movers, the same", tilt(nd["sym"], 0.20), ALL_N),
        Family("ndcg-tilt", "DL19 nDCG@10 deltas (both ways), tilted", tilt(nd["sym"]), ALL_N),
        Family("close-tilt", "DL19 nDCG@10 deltas of runs within 0.05 of each other, tilted", tilt(nd["close"]), ALL_N),
        Family("rr-tilt", "DL19 RR@10 deltas (both ways), tilted", tilt(rr["sym"]), ALL_N),
        Family("right-skew", "10% gain U(0.6, 1.0), 90% lose a little", lambda mu: _skewed(mu, 1.0, 11), ALL_N),
        Family("left-skew", "10% lose U(0.6, 1.0), 90% gain a little", lambda mu: _skewed(mu, -1.0, 12), ALL_N),
        Family("aa-seed", f"A/A noise at the seed's level (per-query sd {SEED_AA_SD:.3f}; half unmoved) "
               "plus a dense effect", lambda mu: _aa_noise(mu, SEED_AA_SD, 13), ALL_N, no_op=True),
        Family("aa-3x", "A/A noise at 3x the seed's level, plus a dense effect",
               lambda mu: _aa_noise(mu, 3 * SEED_AA_SD, 14), ALL_N, no_op=True),
    ]
    return today + new
