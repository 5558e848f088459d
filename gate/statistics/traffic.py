"""Traffic accounting: how much of production traffic a change improved, damaged or left alone.

Each stratum carries a fixed traffic share. Given the per-stratum directions
(:mod:`gate.statistics.strata`), the shares of the improved strata add up to the
traffic improved, and so on. ``untouched`` is traffic shown to move less than
the margin; ``unclear`` (1.6) is traffic where neither a change nor its absence
is shown - never counted as untouched. Strata with no query in the measured set
(a held-out subset can leave one empty) are ``unmeasured``: their share is
reported on its own, so ``improved + damaged + untouched + unclear + unmeasured
== 1``.

Beside the direction shares: the traffic-weighted mean delta (per-stratum mean
deltas weighted by the shares of the measured strata, renormalised) with a
stratified bootstrap interval (queries resampled within their stratum,
weights fixed, :func:`gate.statistics.bootstrap.stratified_bootstrap_weighted`),
and the plain unweighted mean over the queries for comparison.

Two sentences summarise it:

* ``"40% of traffic damaged (navigational, error_string), 21% improved
  (entity_attribute, migration), 14% untouched, 25% unclear"`` - percentages
  rounded by largest remainder so they add to 100;
* the wins-only guard, ``"61 of 140 queries improved although the mean
  fell"``: a list of wins is no evidence, since almost any change has some.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .bootstrap import DEFAULT_SAMPLES, DEFAULT_SEED, stratified_bootstrap_weighted
from .strata import DAMAGED, IMPROVED, NOT_MEASURED, UNCLEAR, UNTOUCHED, StratumResult

UNMEASURED = "unmeasured"
#: Order of the parts in sentences and dicts: the bad news first.
PARTS = (DAMAGED, IMPROVED, UNTOUCHED, UNCLEAR, UNMEASURED)


@dataclass(frozen=True)
class TrafficAccount:
    """Shares of traffic per direction and the weighted delta.

    ``strata`` lists the strata in each direction (``unmeasured`` included);
    ``counts`` the queries in each direction plus ``total`` (and
    ``unassigned`` for queries without a stratum, when there are any), adding
    up to ``total``.
    """

    improved: float
    damaged: float
    untouched: float
    unclear: float
    unmeasured: float
    strata: dict[str, tuple[str, ...]]
    weighted_delta: float | None
    weighted_ci_low: float | None
    weighted_ci_high: float | None
    unweighted_delta: float | None
    counts: dict[str, int]
    wins: int
    losses: int
    ties: int
    sentence: str
    wins_sentence: str
    guarded_damaged: tuple[str, ...] = ()
    samples: int = DEFAULT_SAMPLES
    seed: int = DEFAULT_SEED
    percents: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "improved": self.improved,
            "damaged": self.damaged,
            "untouched": self.untouched,
            "unclear": self.unclear,
            "unmeasured": self.unmeasured,
            "percent": dict(self.percents),
            "strata": {k: list(v) for k, v in self.strata.items()},
            "weighted_delta": _num(self.weighted_delta),
            "weighted_ci_low": _num(self.weighted_ci_low),
            "weighted_ci_high": _num(self.weighted_ci_high),
            "unweighted_delta": _num(self.unweighted_delta),
            "samples": self.samples,
            "seed": self.seed,
            "counts": dict(self.counts),
            "wins": self.wins,
            "losses": self.losses,
            "ties": self.ties,
            "sentence": self.sentence,
            "wins_sentence": self.wins_sentence,
            "guarded_damaged": list(self.guarded_damaged),
        }


def _num(value: float | None) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def round_percentages(fractions: Mapping[str, float]) -> dict[str, int]:
    """Whole percentages that add up to 100 (largest remainder; ties to the earlier key).

    Percentages are first rounded to 7 decimals so that float noise
    (``0.58 * 100 == 57.99999999999999``) does not decide the rounding.
    """
    scaled = {k: round(100.0 * float(v), 7) for k, v in fractions.items()}
    floors = {k: int(math.floor(v)) for k, v in scaled.items()}
    total = int(round(sum(scaled.values())))
    left = total - sum(floors.values())
    order = sorted(scaled, key=lambda k: -(scaled[k] - floors[k]))
    for k in order[:max(left, 0)]:
        floors[k] += 1
    return floors


def traffic_sentence(percents: Mapping[str, int], strata: Mapping[str, Sequence[str]]) -> str:
    """``"40% of traffic damaged (a, b), 21% improved (c), 14% untouched, 25% unclear"``.

    Damaged and improved name their strata; untouched and unclear do not (they
    are usually most of the list, and the table names them); the unclear part
    is there whenever a stratum is unclear, a not-measured part (naming its
    strata) whenever one is not measured.
    """

    def named(key: str) -> str:
        names = strata.get(key) or ()
        return f" ({', '.join(names)})" if names else ""

    parts = [
        f"{percents.get(DAMAGED, 0)}% of traffic damaged{named(DAMAGED)}",
        f"{percents.get(IMPROVED, 0)}% improved{named(IMPROVED)}",
        f"{percents.get(UNTOUCHED, 0)}% untouched",
    ]
    if strata.get(UNCLEAR):
        parts.append(f"{percents.get(UNCLEAR, 0)}% unclear")
    if strata.get(UNMEASURED):
        parts.append(f"{percents.get(UNMEASURED, 0)}% not measured{named(UNMEASURED)}")
    return ", ".join(parts)


def wins_sentence(wins: int, losses: int, ties: int, mean: float) -> str:
    """How many queries improved, said so that a list of wins cannot pass for a gain.

    ``"61 of 140 queries improved although the mean fell (79 worse, 0 unchanged)"``.
    """
    n = wins + losses + ties
    noun = "query" if n == 1 else "queries"
    tail = f"({losses} worse, {ties} unchanged)"
    if mean < 0:
        # "although" only where wins exist to contrast with the fall
        return f"{wins} of {n} {noun} improved {'although' if wins else 'and'} the mean fell {tail}"
    if mean > 0:
        return f"{wins} of {n} {noun} improved and the mean rose {tail}"
    return f"{wins} of {n} {noun} improved and the mean did not move {tail}"


def traffic_account(
    results: Sequence[StratumResult],
    d,
    strata_labels: Sequence[Hashable | None],
    *,
    samples: int = DEFAULT_SAMPLES,
    seed: int = DEFAULT_SEED,
) -> TrafficAccount:
    """Account for the traffic from per-stratum results (every one with a ``share``).

    ``d`` (``candidate - baseline`` per query) and ``strata_labels`` are the
    arrays the results were computed from; they give the weighted delta's
    stratified bootstrap (same ``samples``/``seed`` contract as the rest of
    the report) and the win/loss counts. Raises ``ValueError`` when a stratum
    has no share, a query's stratum is not among the results, or the shares do
    not sum to 1 (within 1e-6).
    """
    d = np.asarray(d, dtype=np.float64)
    labels = [None if lab is None or lab == "" else str(lab) for lab in strata_labels]
    if d.ndim != 1 or len(labels) != d.size:
        raise ValueError(f"d has shape {d.shape} but there are {len(labels)} strata labels")
    shares = _checked_shares(results, labels)

    fractions, names, counts = _parts(results)
    counts["total"] = int(d.size)
    unassigned = sum(1 for lab in labels if lab is None)
    if unassigned:
        counts["unassigned"] = unassigned

    weighted, lo, hi, unweighted, sub = _deltas(d, labels, shares, samples, seed)
    wins = int(np.count_nonzero(sub > 0))
    losses = int(np.count_nonzero(sub < 0))
    ties = int(np.count_nonzero(sub == 0))
    percents = round_percentages({k: fractions[k] for k in PARTS})
    strata = {k: tuple(v) for k, v in names.items()}
    return TrafficAccount(
        improved=fractions[IMPROVED],
        damaged=fractions[DAMAGED],
        untouched=fractions[UNTOUCHED],
        unclear=fractions[UNCLEAR],
        unmeasured=fractions[UNMEASURED],
        strata=strata,
        weighted_delta=weighted,
        weighted_ci_low=lo,
        weighted_ci_high=hi,
        unweighted_delta=unweighted,
        counts=counts,
        wins=wins,
        losses=losses,
        ties=ties,
        sentence=traffic_sentence(percents, strata),
        wins_sentence=wins_sentence(wins, losses, ties, unweighted if unweighted is not None else 0.0),
        guarded_damaged=tuple(r.stratum for r in results if r.guarded and r.direction == DAMAGED),
        samples=samples,
        seed=seed,
        percents=percents,
    )


def _deltas(d: np.ndarray, labels: Sequence[str | None], shares: Mapping[Hashable, float], samples: int,
            seed: int) -> tuple[float | None, float | None, float | None, float | None, np.ndarray]:
    """Over the queries with a stratum: the traffic-weighted delta with its interval (stratified
    bootstrap), the unweighted delta, and their per-query deltas."""
    keep = [i for i, lab in enumerate(labels) if lab is not None]
    weighted = lo = hi = None
    if keep:
        est = stratified_bootstrap_weighted(d[keep], [labels[i] for i in keep], shares, samples, seed)
        weighted, lo, hi = est.estimate, est.ci_low, est.ci_high
    unweighted = float(d[keep].mean()) if keep else None
    sub = d[keep] if keep else d[:0]
    return weighted, lo, hi, unweighted, sub


def _checked_shares(results: Sequence[StratumResult], labels: Sequence[str | None]) -> dict[Hashable, float]:
    """Each stratum's traffic share; ValueError when one has none, they do not sum to 1, or a
    query's stratum has none."""
    shares: dict[Hashable, float] = {}
    for r in results:
        if r.share is None:
            raise ValueError(f"stratum {r.stratum!r} has no traffic share")
        shares[r.stratum] = float(r.share)
    if abs(math.fsum(shares.values()) - 1.0) > 1e-6:
        raise ValueError(f"traffic shares sum to {math.fsum(shares.values()):.4f}, not 1")
    unknown = sorted({lab for lab in labels if lab is not None and lab not in shares})
    if unknown:
        raise ValueError(f"queries in strata without a share: {', '.join(unknown)}")
    return shares


def _parts(results: Sequence[StratumResult]) -> tuple[dict[str, float], dict[str, list[str]], dict[str, int]]:
    """The traffic share of each part (improved, damaged, ...), its strata, and the queries in each."""
    parts: dict[str, list[float]] = {part: [] for part in PARTS}
    names: dict[str, list[str]] = {part: [] for part in PARTS}
    counts = {IMPROVED: 0, DAMAGED: 0, UNTOUCHED: 0, UNCLEAR: 0}
    for r in results:
        part = UNMEASURED if r.direction == NOT_MEASURED else r.direction
        share = r.share
        assert share is not None  # every result has one (_checked_shares)
        parts[part].append(float(share))
        names[part].append(r.stratum)
        if part in counts:
            counts[part] += r.n
    fractions = {k: math.fsum(v) for k, v in parts.items()}
    return fractions, names, counts
