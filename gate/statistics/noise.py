"""The noise band's arithmetic: how far the same configuration moves between identical runs.

From N repeats of one configuration (per-query values aligned on one query
list) the band is ``threshold = max(3 x sd, range)`` of the per-run means -
two derivations, one from the spread and one from the extremes, so the
figure does not rest on assuming the runs are normally distributed.
``delta_sd = sqrt(2) x sd`` is the spread of a difference of two single runs,
shown beside it. A change smaller than the threshold has not been shown to
move the metric on this stack.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gate.common.errors import InputError


@dataclass(frozen=True)
class Spread:
    """Mean, sd (ddof 1), range and threshold of a list of run means."""

    means: tuple[float, ...]
    mean: float
    sd: float
    range: float
    threshold: float
    delta_sd: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "means": list(self.means),
            "mean": self.mean,
            "sd": self.sd,
            "range": self.range,
            "threshold": self.threshold,
            "delta_sd": self.delta_sd,
        }


def spread(means: Sequence[float] | np.ndarray) -> Spread:
    """The seed's rule on a list of per-run means. Identical runs give zeros, never NaN."""
    values = np.asarray(means, dtype=np.float64)
    if len(values) == 0:
        raise ValueError("a noise band needs at least one run")
    # Identical runs are exactly zero (a mean of equal floats can leave a 1e-17 residue).
    same = bool(np.all(values == values[0]))
    sd = float(values.std(ddof=1)) if len(values) > 1 and not same else 0.0
    rng = float(values.max() - values.min())
    return Spread(
        means=tuple(float(v) for v in values),
        mean=float(values.mean()),
        sd=sd,
        range=rng,
        threshold=max(3.0 * sd, rng),
        delta_sd=math.sqrt(2.0) * sd,
    )


@dataclass(frozen=True)
class UnstableQuery:
    query_id: str
    low: float
    high: float
    range: float

    def to_dict(self) -> dict[str, Any]:
        return {"query_id": self.query_id, "low": self.low, "high": self.high, "range": self.range}


@dataclass(frozen=True)
class LatencySpread:
    """The repeats' latency: each repeat's p50 and p95 (ms, numpy's linear percentile over the
    golden queries) and their spread, the threshold computed as the metric's is
    (``max(3 x sd, range)``). A p95 change within ``p95.threshold`` is run-to-run spread."""

    p50: Spread
    p95: Spread

    def to_dict(self) -> dict[str, Any]:
        return {"p50_ms": self.p50.to_dict(), "p95_ms": self.p95.to_dict()}


def latency_spread(latencies: Sequence[np.ndarray]) -> LatencySpread:
    """From each repeat's per-query latencies (ms)."""
    p50s = [float(np.percentile(values, 50)) for values in latencies]
    p95s = [float(np.percentile(values, 95)) for values in latencies]
    return LatencySpread(spread(p50s), spread(p95s))


@dataclass(frozen=True)
class NoiseBand:
    metric: str
    runs: int
    overall: Spread
    strata: Mapping[str, Spread]
    unstable: tuple[UnstableQuery, ...]  # queries whose value moves across repeats, largest first
    query_count: int
    fingerprints: Mapping[str, Any] = field(default_factory=dict)
    source: str = "repeats"  # "repeats" (runner) or "runs" (--from-runs)
    run_files: tuple[str, ...] = ()
    seeds: tuple[int, ...] = ()
    # The repeats' latency spread, when every repeat had timings (a band of an older gate has none).
    latency: LatencySpread | None = None

    @property
    def threshold(self) -> float:
        return self.overall.threshold

    @property
    def latency_threshold_ms(self) -> float | None:
        """The p95 latency's run-to-run threshold (ms); None when the repeats had no timings."""
        return None if self.latency is None else self.latency.p95.threshold

    def stratum_threshold(self, stratum: str) -> float | None:
        item = self.strata.get(stratum)
        return None if item is None else item.threshold

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "runs": self.runs,
            **self.overall.to_dict(),
            "query_count": self.query_count,
            "strata": {name: s.to_dict() for name, s in self.strata.items()},
            "unstable_queries": [q.to_dict() for q in self.unstable],
            "unstable_count": len(self.unstable),
            "fingerprints": dict(self.fingerprints),
            "source": self.source,
            "run_files": list(self.run_files),
            "seeds": list(self.seeds),
            **({} if self.latency is None else {"latency": self.latency.to_dict()}),
        }


def noise_band(
    metric: str,
    query_ids: Sequence[str],
    repeats: Sequence[np.ndarray],
    strata: Mapping[str, str | None] | None = None,
    fingerprints: Mapping[str, Any] | None = None,
    source: str = "repeats",
    run_files: Sequence[str] = (),
    seeds: Sequence[int] = (),
    latencies: Sequence[np.ndarray] | None = None,
) -> NoiseBand:
    """The band from per-query values of N identical runs, aligned on ``query_ids`` (and from each
    run's per-query latencies, when every run had timings)."""
    if not repeats:
        raise ValueError("a noise band needs at least one run")
    matrix = np.vstack([np.asarray(r, dtype=np.float64) for r in repeats])  # runs x queries
    if matrix.shape[1] != len(query_ids):
        raise ValueError("every repeat must be aligned on the same query list")
    overall = spread(matrix.mean(axis=1) if matrix.shape[1] else np.zeros(len(repeats)))
    by_stratum: dict[str, Spread] = {}
    if strata:
        labels = np.array([strata.get(q) or "" for q in query_ids], dtype=object)
        for name in sorted({s for s in labels if s}):
            mask = labels == name
            by_stratum[name] = spread(matrix[:, mask].mean(axis=1))
    low, high = matrix.min(axis=0), matrix.max(axis=0)
    moving = np.flatnonzero(high - low > 0)
    order = moving[np.argsort(-(high - low)[moving], kind="stable")]
    unstable = tuple(
        UnstableQuery(query_ids[i], float(low[i]), float(high[i]), float(high[i] - low[i])) for i in order
    )
    return NoiseBand(metric, len(repeats), overall, by_stratum, unstable, len(query_ids),
                     dict(fingerprints or {}), source, tuple(run_files), tuple(seeds),
                     latency_spread(latencies) if latencies and len(latencies) == len(repeats) else None)


def check_band_dict(data: Any, source: str) -> Mapping[str, Any]:
    """A stored band (noise.json, or the manifest's ``noise_band``) is checked before it is
    read: each value the band needs, of the type :meth:`NoiseBand.to_dict` writes."""
    if not isinstance(data, Mapping):
        raise _not_a_band(source, "expected a JSON object")
    if not isinstance(data.get("metric"), str):
        raise _not_a_band(source, "'metric' must be text")
    _check_numbers(source, data.get("means"), "means", 2)
    strata = data.get("strata") or {}
    if not isinstance(strata, Mapping) or not all(isinstance(v, Mapping) for v in strata.values()):
        raise _not_a_band(source, "'strata' must map each stratum to its means")
    for name, item in strata.items():
        _check_numbers(source, item.get("means"), f"strata.{name}.means", 2)
    _check_unstable(source, data.get("unstable_queries") or [])
    _check_counts_and_lists(source, data)
    return data


def _not_a_band(source: str, message: str) -> InputError:
    return InputError(source, None, f"not a noise band: {message}")


def _check_numbers(source: str, value: Any, key: str, least: int = 1) -> None:
    if (not isinstance(value, list) or len(value) < least
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                       for v in value)):
        raise _not_a_band(source, f"'{key}' must be a list of at least {least} finite numbers")


def _check_unstable(source: str, unstable: Any) -> None:
    if not isinstance(unstable, list):
        raise _not_a_band(source, "'unstable_queries' must be a list")
    for item in unstable:
        if not isinstance(item, Mapping) or not isinstance(item.get("query_id"), str):
            raise _not_a_band(source, "each unstable query needs a 'query_id'")
        _check_numbers(source, [item.get("low"), item.get("high"), item.get("range")],
                       "unstable_queries[].low/high/range", 3)


def _check_counts_and_lists(source: str, data: Mapping[str, Any]) -> None:
    """The run and query counts, the fingerprints, the run files and the seeds."""
    for key in ("runs", "query_count"):
        value = data.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise _not_a_band(source, f"'{key}' must be a non-negative integer")
    if not isinstance(data.get("fingerprints") or {}, Mapping):
        raise _not_a_band(source, "'fingerprints' must be an object")
    if not all(isinstance(f, str) for f in data.get("run_files") or ()):
        raise _not_a_band(source, "'run_files' must be a list of file names")
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in data.get("seeds") or ()):
        raise _not_a_band(source, "'seeds' must be a list of integers")
    _check_latency(source, data.get("latency"))


def _check_latency(source: str, latency: Any) -> None:
    """The repeats' latency spread: absent in a band of an older gate, else each repeat's p50 and p95."""
    if latency is None:
        return
    if not isinstance(latency, Mapping) or not all(isinstance(latency.get(k), Mapping) for k in ("p50_ms", "p95_ms")):
        raise _not_a_band(source, "'latency' must hold p50_ms and p95_ms, each with its means")
    for name in ("p50_ms", "p95_ms"):
        _check_numbers(source, latency[name].get("means"), f"latency.{name}.means", 2)
        if any(v < 0 for v in latency[name]["means"]):
            raise _not_a_band(source, f"'latency.{name}.means' must be 0 or more")


def band_from_dict(data: Mapping[str, Any]) -> NoiseBand:
    """Read back :meth:`NoiseBand.to_dict` (noise.json / the manifest's noise section)."""
    overall = spread(data["means"])
    strata = {name: spread(s["means"]) for name, s in (data.get("strata") or {}).items()}
    unstable = tuple(UnstableQuery(q["query_id"], q["low"], q["high"], q["range"])
                     for q in data.get("unstable_queries") or [])
    return NoiseBand(
        metric=str(data["metric"]),
        runs=int(data.get("runs", len(data["means"]))),
        overall=overall,
        strata=strata,
        unstable=unstable,
        query_count=int(data.get("query_count", 0)),
        fingerprints=dict(data.get("fingerprints") or {}),
        source=str(data.get("source", "repeats")),
        run_files=tuple(data.get("run_files") or ()),
        seeds=tuple(int(s) for s in data.get("seeds") or ()),
        latency=None if data.get("latency") is None else LatencySpread(spread(data["latency"]["p50_ms"]["means"]),
                                                                       spread(data["latency"]["p95_ms"]["means"])),
    )
