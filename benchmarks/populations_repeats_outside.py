"""Three noisy-stack populations from outside the authors' repeats battery (an outside check).

Each entry of :data:`STACKS` simulates ONE pull request on a stack whose runs differ from build
to build: ``draw(rng, n, base_runs, cand_runs, mu)`` returns per-query nDCG@10 values (each in
[0, 1]) of ``base_runs`` builds of the baseline config, shape ``(base_runs, n)``, and of
``cand_runs`` builds of the candidate config, shape ``(cand_runs, n)``, on ``n`` queries drawn
independently from the stack's query population.  Per-query state (the query's ranking, how
fragile it is under the index, how the PR affects it) is drawn once per query; every build adds
its own noise.  The true effect, E[candidate] - E[baseline] over queries and builds, is exactly
``mu`` (solved from closed-form expectations, to 1e-9); ``mu = 0`` means the candidate IS the
baseline config, only the builds differ.

The query population is a pool of real top-20 rankings: the graded relevance (official NIST
qrels, grades 0-3) of the top 20 documents of each of the 12 official TREC DL 2019 passage runs
on each of the 43 judged topics (516 rankings, ``../shared/realdata``), each with its topic's
ideal DCG@10 (trec_eval's nDCG@10: linear gains, log2 discount).  Without ``../shared`` a
generated stand-in with the same shape (mean nDCG@10 about 0.63, close quantiles, grade mix
and share of zeros) is used and every description says so.  Documents below rank 20 are taken
as non-relevant when a miss or a swap pulls them up.

    python benchmarks/populations_repeats_outside.py     # the self-check (exact and simulated mu)
"""

from __future__ import annotations

import gzip
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
REALDATA = Path(os.environ.get("RETRIEVAL_GATE_SHARED", str(REPO.parent / "shared"))) / "realdata" \
    / "runs" / "trec-dl-2019-passage"
DEPTH = 20  # the ranked prefix each query keeps: top 10 plus ten that a miss or swap can pull up
DISC = np.where(np.arange(DEPTH) < 10, 1.0 / np.log2(np.arange(DEPTH) + 2.0), 0.0)  # nDCG@10 discounts
SEED_RUN_SD = 0.00405  # the seed's sd of the mean over 140 queries across rebuilds (populations.py)


# --------------------------------------------------------------------------- the ranking pool


@dataclass(frozen=True)
class RankingPool:
    grades: np.ndarray  # (m, DEPTH) float: graded relevance of ranks 1..20
    idcg: np.ndarray  # (m,): ideal DCG@10 of the topic
    source: str

    @property
    def ndcg(self) -> np.ndarray:
        return ndcg10(self.grades, self.idcg)


def ndcg10(grades: np.ndarray, idcg: np.ndarray) -> np.ndarray:
    return (grades @ DISC) / idcg


def _real_pool() -> RankingPool | None:
    qrels_path = REALDATA / "qrels" / "qrels.dl19-passage.txt"
    runs = sorted((REALDATA / "official_nist").glob("input.*.gz"))
    if not qrels_path.exists() or not runs:
        return None
    qrels: dict[str, dict[str, int]] = {}
    for line in qrels_path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 4:
            qrels.setdefault(parts[0], {})[parts[2]] = int(parts[3])
    ideal = {}
    for q, judged in qrels.items():
        top = sorted(judged.values(), reverse=True)[:10]
        ideal[q] = float(np.dot(top, DISC[: len(top)]))
    grades, idcgs = [], []
    for path in runs:
        per: dict[str, list[tuple[float, str]]] = {}
        with gzip.open(path, "rt") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 5 and parts[0] in qrels:
                    per.setdefault(parts[0], []).append((float(parts[4]), parts[2]))
        for q in sorted(per):
            rows = sorted(per[q], key=lambda r: (-r[0], r[1]))[:DEPTH]
            g = [qrels[q].get(doc, 0) for _, doc in rows] + [0] * (DEPTH - len(rows))
            grades.append(g)
            idcgs.append(ideal[q])
    return RankingPool(np.asarray(grades, dtype=np.float64), np.asarray(idcgs), "real")


def _generated_pool(m: int = 516, seed: int = 2019) -> RankingPool:
    """A stand-in with the real pool's shape: P(relevant) falls with rank from a per-query skill,
    grade 3 is likelier near the top, the topic has further unretrieved grade-2/3 documents."""
    rng = np.random.default_rng(seed)
    ranks = np.arange(DEPTH)
    skill = rng.normal(2.0, 1.5, m)
    rel = rng.random((m, DEPTH)) < 1.0 / (1.0 + np.exp(-(skill[:, None] - 0.15 * ranks)))
    q3 = rng.beta(1.2, 2.5, m)
    p3 = np.clip(q3[:, None] * (1.8 - 0.1 * ranks), 0.0, 1.0)
    u = rng.random((m, DEPTH))
    g = np.where(u < p3, 3, np.where(u < p3 + (1 - p3) * 0.6, 2, 1))
    grades = np.where(rel, g, 0).astype(np.float64)
    n3, n2 = rng.poisson(8 * q3), 1 + rng.poisson(6, m)
    idcg = np.empty(m)
    for i in range(m):
        top = sorted(list(grades[i][grades[i] > 0]) + [3] * n3[i] + [2] * n2[i], reverse=True)[:10]
        idcg[i] = float(np.dot(top, DISC[: len(top)]))
    return RankingPool(grades, idcg, "generated")


@lru_cache(maxsize=1)
def ranking_pool() -> RankingPool:
    return _real_pool() or _generated_pool()


def _pool_note() -> str:
    if ranking_pool().source == "real":
        return " Query pool: real top-20 rankings of the 12 official TREC DL 2019 passage runs x 43 topics."
    return (" Query pool: GENERATED stand-in for the TREC DL 2019 rankings (../shared/realdata absent), "
            "same shape.")


def _bisect(f: Callable[[float], float], target: float, lo: float, hi: float, increasing: bool = True,
            tol: float = 1e-13) -> float:
    """The root of the monotone ``f(x) = target`` in [lo, hi]: regula falsi (Illinois), bisection
    steps whenever it stalls; |f - target| < tol."""
    sign = 1.0 if increasing else -1.0
    fa, fb = sign * (f(lo) - target), sign * (f(hi) - target)
    if fa > 0 or fb < 0:
        raise ValueError(f"target {target} is out of reach in [{lo}, {hi}]")
    side = 0
    for i in range(200):
        x = lo - fa * (hi - lo) / (fb - fa) if i % 4 != 3 else 0.5 * (lo + hi)
        fx = sign * (f(x) - target)
        if abs(fx) < tol:
            return x
        if fx < 0:
            lo, fa = x, fx
            if side == -1:
                fb *= 0.5
            side = -1
        else:
            hi, fb = x, fx
            if side == 1:
                fa *= 0.5
            side = 1
    return x


# --------------------------------------------------------------------------- stacks


@dataclass
class Stack:
    name: str
    blurb: str
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def description(self) -> str:
        return self.blurb + _pool_note()

    def exact_mu(self, mu: float) -> float:  # E[cand] - E[base] from the closed form
        raise NotImplementedError

    def draw(self, rng: np.random.Generator, n: int, base_runs: int, cand_runs: int,
             mu: float) -> tuple[np.ndarray, np.ndarray]:
        """``(base_runs, n)`` baseline and ``(cand_runs, n)`` candidate per-query nDCG@10 of one PR
        (the clip only removes floating-point rounding: a perfect ranking's DCG / IDCG may be 1 + 1e-16)."""
        base, cand = self._draw(rng, n, base_runs, cand_runs, mu)
        return np.clip(base, 0.0, 1.0), np.clip(cand, 0.0, 1.0)

    def _draw(self, rng, n, base_runs, cand_runs, mu):
        raise NotImplementedError


class HnswRebuild(Stack):
    """Dense retrieval behind an HNSW/IVF index rebuilt for every run, and a PR that hurts one
    query type.

    Each build b has a recall quality ``r_b`` (logit-normal: median 0.97, sd about 0.009 across
    builds, as IVF k-means seeds or HNSW insertion orders give), shared by ALL queries of that
    build: a build-level random effect. Every document of a query's top 20 is missed by the build with
    probability ``1 - r_b ** c`` (independently given the build); ``c`` is lognormal around a
    per-query fragility (hubness, sparse regions of the embedding space), so a few queries lose
    documents often and most rarely; a missed document leaves the list and the ones below move up
    (missing a non-relevant document can raise nDCG). The PR drops the lexical leg of a hybrid
    retriever: 15% of queries (identifiers, rare terms) lose each of their relevant top-20
    documents with probability ``1 - kappa`` (drawn once per query, shared by the candidate's
    builds), ``kappa`` solved for ``mu``; the rest do not change. Expectations are exact up to a
    24-node Gauss-Hermite rule over the build's logit recall (error < 1e-12).
    """

    VARIANTS = 8  # index states (per-document fragility) per ranking: pool of 516 x 8
    LOGIT, LOGIT_SD = math.log(0.97 / 0.03), 0.30
    TOUCHED = 0.15
    NODES = np.polynomial.hermite_e.hermegauss(24)

    def _state(self):
        if "state" in self._cache:
            return self._cache["state"]
        pool = ranking_pool()
        rng = np.random.default_rng(41)
        g = np.repeat(pool.grades, self.VARIANTS, axis=0)
        idcg = np.repeat(pool.idcg, self.VARIANTS)
        m = g.shape[0]
        c = np.exp(rng.normal(-0.7, 1.1, m)[:, None] + rng.normal(0.0, 0.7, (m, DEPTH)))
        state = dict(m=m, g=g, idcg=idcg, c=c, rel=g > 0)
        self._cache["state"] = state
        return state

    def _expected(self, kappa: float) -> float:
        """E[nDCG@10] over the pool and builds; a relevant document survives the PR with prob kappa
        (kappa 1: the baseline). Exact DP, rank by rank, over how many documents above survive
        (10 or more: absorbing, the document is out of the top 10)."""
        s = self._state()
        x, w = self.NODES
        w = w / w.sum()
        r = 1.0 / (1.0 + np.exp(-(self.LOGIT + self.LOGIT_SD * x)))  # (nodes,)
        keep = r[None, :, None] ** s["c"][:, None, :]  # (m, nodes, DEPTH): survives the build
        keep = keep * np.where(s["rel"], kappa, 1.0)[:, None, :]
        dist = np.zeros(keep.shape[:2] + (11,))
        dist[:, :, 0] = 1.0  # P(k documents above rank j survive), k = 0..9, 10 = "10 or more"
        disc = np.append(DISC[:10], 0.0)
        dcg = np.zeros(keep.shape[:2])
        for j in range(DEPTH):
            kj = keep[:, :, j]
            dcg += s["g"][:, j, None] * kj * (dist @ disc)
            up = dist * kj[:, :, None]
            dist = dist - up
            dist[:, :, 1:] += up[:, :, :-1]
            dist[:, :, 10] += up[:, :, 10]
        return float(((dcg / s["idcg"][:, None]) @ w).mean())

    def _kappa(self, mu: float) -> float:
        if mu == 0.0:
            return 1.0
        if mu not in self._cache:
            base = self._expected(1.0)
            self._cache[mu] = _bisect(lambda k: self.TOUCHED * (self._expected(k) - base), mu, 0.0, 1.0)
        return self._cache[mu]

    def exact_mu(self, mu: float) -> float:
        return self.TOUCHED * (self._expected(self._kappa(mu)) - self._expected(1.0))

    def _runs(self, rng, g, idcg, c, runs):
        r = 1.0 / (1.0 + np.exp(-(self.LOGIT + self.LOGIT_SD * rng.standard_normal(runs))))  # per build
        gone = rng.random((runs,) + g.shape) >= np.exp(np.log(r)[:, None, None] * c[None])
        gone |= g[None] < 0  # documents the PR removed (marked -1)
        rank = np.arange(DEPTH) - (np.cumsum(gone, axis=2) - gone)  # rank after the list compacts
        return (np.where(gone, 0.0, g[None] * DISC[np.minimum(rank, DEPTH - 1)])).sum(axis=2) / idcg[None, :]

    def _draw(self, rng, n, base_runs, cand_runs, mu):
        s = self._state()
        idx = rng.integers(s["m"], size=n)
        g, c, idcg = s["g"][idx], s["c"][idx], s["idcg"][idx]
        kappa = self._kappa(mu)
        gc = g
        if kappa < 1.0:
            lost = (rng.random(n) < self.TOUCHED)[:, None] & (g > 0) & (rng.random(g.shape) >= kappa)
            gc = np.where(lost, -1.0, g)
        return self._runs(rng, g, idcg, c, base_runs), self._runs(rng, gc, idcg, c, cand_runs)


class RerankerTies(Stack):
    """A reranker whose order of near-tied documents changes from run to run.

    A cross-encoder served in fp16 on GPUs, with reductions that depend on batch composition
    (dynamic batching, padding), flips documents whose scores lie within the jitter. Hard queries
    have flat, compressed score lists, so the number of near-tied adjacent pairs grows with the
    query's difficulty (1 - its nDCG@10): 0-6 disjoint adjacent pairs per query, each flipped in a
    build with its own probability U(0.1, 0.5). Swaps of equal grades do nothing, so perfect and
    all-zero rankings barely move (floor and ceiling). The PR swaps the reranker checkpoint: per
    query it keeps the ranking or moves one of the top 12 documents to another rank (nearby moves
    likelier; 60% of queries touched at the base weights), the move's weights tilted,
    ``exp(theta * delta)``, so the mean is ``mu``; the tie pattern is the query's own and stays.
    """

    VARIANTS = 8
    W = 12  # ties and moves within the top 12 (a swap at 10/11 or a move from 11-12 changes the top 10)
    MAX_PAIRS = 6
    TOUCHED = 0.6

    def _state(self):
        if "state" in self._cache:
            return self._cache["state"]
        pool = ranking_pool()
        rng = np.random.default_rng(42)
        g = np.repeat(pool.grades[:, : self.W], self.VARIANTS, axis=0)
        idcg = np.repeat(pool.idcg, self.VARIANTS)
        m = g.shape[0]
        hard = np.clip(1.0 - (g @ DISC[: self.W]) / idcg + rng.normal(0.0, 0.15, m), 0.0, 1.0)
        # candidate tie starts at ranks 1..11, each with probability 0.05 + 0.45 * hardness
        start = rng.random((m, self.W - 1)) < (0.05 + 0.45 * hard)[:, None]
        pairs = np.zeros((m, self.MAX_PAIRS), dtype=np.int64)
        live = np.zeros((m, self.MAX_PAIRS), dtype=bool)
        for i in range(m):  # disjoint pairs, left to right
            j, t = 0, 0
            while j < self.W - 1 and t < self.MAX_PAIRS:
                if start[i, j]:
                    pairs[i, t], live[i, t] = j, True
                    t += 1
                    j += 2
                else:
                    j += 1
        flip = np.where(live, rng.uniform(0.1, 0.5, (m, self.MAX_PAIRS)), 0.0)
        # the PR's alternatives: identity, then every move of a doc from rank j to rank k
        moves = [(j, k) for j in range(self.W) for k in range(self.W) if j != k]
        perms = [np.arange(self.W)]
        w0 = [1.0 - self.TOUCHED]
        mw = np.array([math.exp(-abs(j - k) / 2.0) for j, k in moves])
        for (j, k), w in zip(moves, mw / mw.sum() * self.TOUCHED):
            p = list(range(self.W))
            p.insert(k, p.pop(j))
            perms.append(np.array(p))
            w0.append(w)
        perms = np.stack(perms)  # (A, W)
        alt = g[:, perms]  # (m, A, W)
        dcg = alt @ DISC[: self.W]
        # a swap of pair (j, j+1) adds (g[j+1] - g[j]) * (D[j] - D[j+1])
        gj = np.take_along_axis(alt, np.broadcast_to(pairs[:, None, :], alt.shape[:2] + (self.MAX_PAIRS,)), 2)
        gj1 = np.take_along_axis(alt, np.broadcast_to(pairs[:, None, :] + 1, gj.shape), 2)
        delta = (gj1 - gj) * (DISC[pairs] - DISC[pairs + 1])[:, None, :] * live[:, None, :]
        values = dcg / idcg[:, None]
        delta = delta / idcg[:, None, None]
        expected = values + (delta * flip[:, None, :]).sum(axis=2)  # E over the flips, per alternative
        state = dict(m=m, flip=flip, values=values, delta=delta, expected=expected,
                     gain=expected - expected[:, :1], w0=np.asarray(w0))
        self._cache["state"] = state
        return state

    def _weights(self, theta: float) -> np.ndarray:
        s = self._state()
        z = theta * s["gain"]
        w = s["w0"][None, :] * np.exp(z - z.max(axis=1, keepdims=True))
        return w / w.sum(axis=1, keepdims=True)

    def _cdf(self, mu: float) -> np.ndarray | None:
        if mu == 0.0:
            return None
        if mu not in self._cache:
            s = self._state()
            theta = _bisect(lambda t: float((self._weights(t) * s["gain"]).sum(axis=1).mean()), mu, -200.0, 200.0)
            cdf = np.cumsum(self._weights(theta), axis=1)
            cdf[:, -1] = 1.0
            self._cache[mu] = (theta, cdf)
        return self._cache[mu][1]

    def exact_mu(self, mu: float) -> float:
        if mu == 0.0:
            return 0.0
        s = self._state()
        self._cdf(mu)
        return float((self._weights(self._cache[mu][0]) * s["gain"]).sum(axis=1).mean())

    def _draw(self, rng, n, base_runs, cand_runs, mu):
        s = self._state()
        idx = rng.integers(s["m"], size=n)
        cdf = self._cdf(mu)
        alt = np.zeros(n, dtype=np.int64) if cdf is None else (cdf[idx] < rng.random(n)[:, None]).sum(axis=1)
        flip = s["flip"][idx]

        def runs(a, r):
            b = rng.random((r, n, self.MAX_PAIRS)) < flip[None]
            return s["values"][idx, a][None, :] + (b * s["delta"][idx, a][None]).sum(axis=2)

        return runs(np.zeros(n, dtype=np.int64), base_runs), runs(alt, cand_runs)


class SampledRewriter(Stack):
    """An LLM query rewriter sampled at temperature > 0 in front of a deterministic retriever.

    Each build re-samples every rewrite (no cache across builds): per query the rewrite is the
    canonical one (the ranking's nDCG), a paraphrase that retrieves slightly differently (a fixed
    per-query shift, N(0, 0.08), clipped) or a drifted one that loses intent (the nDCG times
    Beta(1.2, 2)), with per-query softmax logits 0 / N(-1, 1) / N(-4, 1.5); 30% of queries are
    short and unambiguous (both logits 3 lower). Most queries wobble a little, a few jump a lot,
    with their own frequency. The PR edits the rewrite prompt: each query is touched with
    probability 0.6 and a touched query's drift logit moves by N(theta, 1), theta solved for
    ``mu`` (Gauss-Hermite expectation): the effect is a change in how OFTEN a query breaks, so a
    query's true effect shows up only in some builds.
    """

    VARIANTS = 8
    TOUCHED = 0.6
    NODES = np.polynomial.hermite_e.hermegauss(64)

    def _state(self):
        if "state" in self._cache:
            return self._cache["state"]
        pool = ranking_pool()
        rng = np.random.default_rng(43)
        v0 = np.repeat(pool.ndcg, self.VARIANTS)
        m = v0.size
        v1 = np.clip(v0 + rng.normal(0.0, 0.08, m), 0.0, 1.0)
        v2 = v0 * rng.beta(1.2, 2.0, m)
        crisp = rng.random(m) < 0.3
        alpha = rng.normal(-1.0, 1.0, m) - 3.0 * crisp
        beta = rng.normal(-4.0, 1.5, m) - 3.0 * crisp
        state = dict(m=m, v=np.stack([v0, v1, v2], axis=1), alpha=alpha, beta=beta)
        self._cache["state"] = state
        return state

    @staticmethod
    def _probs(alpha, beta):
        top = np.maximum(0.0, np.maximum(alpha, beta))
        e = np.stack([np.exp(-top), np.exp(alpha - top), np.exp(beta - top)], axis=-1)
        return e / e.sum(axis=-1, keepdims=True)

    def _expected_shifted(self, theta: float) -> float:
        s = self._state()
        x, w = self.NODES
        w = w / w.sum()
        p = self._probs(s["alpha"][:, None], s["beta"][:, None] + theta + x[None, :])  # (m, nodes, 3)
        return float(((p * s["v"][:, None, :]).sum(axis=2) @ w).mean())

    def _base(self) -> float:
        s = self._state()
        return float((self._probs(s["alpha"], s["beta"]) * s["v"]).sum(axis=1).mean())

    def _theta(self, mu: float) -> float | None:
        if mu == 0.0:
            return None
        if mu not in self._cache:
            base = self._base()
            self._cache[mu] = _bisect(lambda t: self.TOUCHED * (self._expected_shifted(t) - base), mu,
                                      -20.0, 20.0, increasing=False)
        return self._cache[mu]

    def exact_mu(self, mu: float) -> float:
        theta = self._theta(mu)
        return 0.0 if theta is None else self.TOUCHED * (self._expected_shifted(theta) - self._base())

    def _draw(self, rng, n, base_runs, cand_runs, mu):
        s = self._state()
        idx = rng.integers(s["m"], size=n)
        v, alpha, beta = s["v"][idx], s["alpha"][idx], s["beta"][idx]
        theta = self._theta(mu)
        beta_c = beta if theta is None else \
            beta + (rng.random(n) < self.TOUCHED) * (theta + rng.standard_normal(n))

        def runs(b, r):
            cum = np.cumsum(self._probs(alpha, b), axis=1)
            u = rng.random((r, n))
            k = (u[:, :, None] >= cum[None, :, :2]).sum(axis=2)
            return np.take_along_axis(np.broadcast_to(v, (r, n, 3)), k[:, :, None], axis=2)[:, :, 0]

        return runs(beta, base_runs), runs(beta_c, cand_runs)


STACKS = [
    HnswRebuild("hnsw-rebuild-recall", "Models a dense retriever behind an HNSW/IVF index rebuilt per run: "
                "each build's recall is a random effect shared by all its queries, and each top-20 doc is "
                "missed with a per-query/per-doc fragility, the list compacting. The PR drops the lexical "
                "leg of a hybrid: 15% of queries (identifiers, rare terms) lose relevant docs, the rest "
                "are untouched, while index noise is everywhere."),
    RerankerTies("reranker-near-ties", "Models an fp16 GPU cross-encoder whose batch-dependent kernels "
                 "flip near-tied adjacent documents; hard queries have flatter scores and more ties, so the "
                 "noise is small, heteroscedastic and tied to the query's level, with floor/ceiling. The PR "
                 "swaps the checkpoint: one document moves per touched query, both ways, tilted to the mean."),
    SampledRewriter("llm-rewriter-sampled", "Models an LLM query rewriter at temperature > 0 re-sampled in "
                    "every build: per query a canonical, paraphrase (small shift) or drifted (large loss) "
                    "rewrite with per-query odds. The PR edits the prompt and changes how often touched "
                    "queries drift, so effects are realised only in some builds."),
]


# --------------------------------------------------------------------------- self-check


def _stats(stack: Stack, rng: np.random.Generator, mu: float, prs: int, n: int = 140,
           base_runs: int = 11, cand_runs: int = 5) -> dict:
    diffs, within, movers, run_means, cand_within, levels, sds = [], [], [], [], [], [], []
    for _ in range(prs):
        b, c = stack.draw(rng, n, base_runs, cand_runs, mu)
        levels.append(b.mean(axis=0))
        sds.append(b.std(axis=0, ddof=1))
        assert b.shape == (base_runs, n) and c.shape == (cand_runs, n)
        assert b.min() >= 0.0 and b.max() <= 1.0 and c.min() >= 0.0 and c.max() <= 1.0
        diffs.append(c.mean() - b.mean())
        within.append(b.var(axis=0, ddof=1).mean())
        cand_within.append(c.var(axis=0, ddof=1).mean())
        movers.append(np.mean(np.abs(b[0] - b[1]) > 1e-12))
        run_means.append(b.mean(axis=1).var(ddof=1))
    d = np.asarray(diffs)
    lv, sd = np.concatenate(levels), np.concatenate(sds)
    bands = [(0.0, 0.4), (0.4, 0.7), (0.7, 0.95), (0.95, 1.01)]  # per-query sd by the query's level
    by_level = [float(np.sqrt(np.mean(sd[(lv >= lo) & (lv < hi)] ** 2))) for lo, hi in bands]
    total, independent = float(np.mean(run_means)), float(np.mean(within)) / n
    return dict(sim=d.mean(), se=d.std(ddof=1) / math.sqrt(d.size), sd=math.sqrt(np.mean(within)),
                cand_sd=math.sqrt(np.mean(cand_within)), movers=float(np.mean(movers)),
                mean_sd=math.sqrt(total), build_share=max(0.0, 1.0 - independent / total), by_level=by_level)


def check(prs: int = 3000) -> bool:
    pool = ranking_pool()
    print(f"ranking pool: {pool.source}, {pool.grades.shape[0]} rankings, mean nDCG@10 {pool.ndcg.mean():.3f}")
    ok = True
    rng = np.random.default_rng(20240607)
    for stack in STACKS:
        print(f"\n{stack.name}: {stack.description}")
        for mu in (-0.05, -0.02, 0.0):
            exact = stack.exact_mu(mu)
            st = _stats(stack, rng, mu, prs)
            good = abs(exact - mu) < 1e-9 and abs(st["sim"] - mu) < 1e-3 and abs(st["sim"] - mu) < 4 * st["se"] + 1e-4
            ok &= good
            print(f"  mu {mu:+.2f}: exact {exact:+.6f}  simulated {st['sim']:+.5f} (se {st['se']:.5f}, "
                  f"{prs} PRs x 140 q, 11+5 runs)  per-query run sd base {st['sd']:.4f} cand {st['cand_sd']:.4f}  "
                  f"movers between 2 builds {st['movers']:.1%}  sd of 140-query mean {st['mean_sd']:.5f} "
                  f"({st['mean_sd'] / SEED_RUN_SD:.1f}x seed)  {'ok' if good else 'FAIL'}")
            if mu == 0.0:
                print("    per-query run sd by the query's level [0,.4) [.4,.7) [.7,.95) [.95,1]: "
                      + " ".join(f"{x:.4f}" for x in st["by_level"])
                      + f"; share of the 140-query mean's build-to-build variance shared by a build "
                        f"(not per-query noise): {st['build_share']:.0%}")
        for mu in (-0.05, -0.02, 0.0):
            stack.draw(rng, 140, 11, 5, mu)  # warm caches
        t0 = time.perf_counter()
        reps = 500
        for _ in range(reps):
            stack.draw(rng, 140, 11, 5, -0.02)
        print(f"  draw(n=140, 11+5 runs): {(time.perf_counter() - t0) / reps * 1e3:.2f} ms")
    print("\nself-check", "passed" if ok else "FAILED")
    return ok


if __name__ == "__main__":
    raise SystemExit(0 if check() else 1)
