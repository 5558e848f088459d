"""The history's typed records: what ``retrieval-gate history`` found (:mod:`gate.pipeline.history`),
written as ``history.json`` and rendered as the page (:mod:`gate.rendering.history`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Baseline:
    """One archived baseline as the page shows it."""

    commit: str
    date: str
    subject: str
    pr: int | None
    pr_url: str | None
    metric: str
    rel: int
    queries: int
    queries_sha256: str
    qrels_sha256: str
    band: float | None  # the stored noise band's threshold, None when the baseline has none

    def to_dict(self) -> dict[str, Any]:
        return {"commit": self.commit, "date": self.date, "subject": self.subject, "pr": self.pr,
                "pr_url": self.pr_url, "metric": self.metric, "rel": self.rel, "queries": self.queries,
                "queries_sha256": self.queries_sha256, "qrels_sha256": self.qrels_sha256, "noise_band": self.band}


@dataclass(frozen=True)
class Point:
    """A series' value at one baseline: the mean over ``n`` queries, its 95% interval, and the
    noise band's threshold around it (None: no band for this series there)."""

    value: float
    low: float
    high: float
    n: int
    band: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "low": self.low, "high": self.high, "n": self.n, "noise_band": self.band}


@dataclass(frozen=True)
class Series:
    """The primary metric (``stratum`` None) or one stratum, aligned on the baselines (None: the
    stratum has no query in that baseline)."""

    name: str
    stratum: str | None
    points: tuple[Point | None, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "stratum": self.stratum,
                "points": [None if p is None else p.to_dict() for p in self.points]}


@dataclass(frozen=True)
class Break:
    """The series break before baseline ``index``: what changed since the one before it."""

    index: int
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"before": self.index, "reason": self.reason}


@dataclass(frozen=True)
class History:
    branch: str
    metric: str
    seed: int
    samples: int
    order: str  # "first-parent" | "created"
    strata_source: str
    repository: str | None
    baselines: tuple[Baseline, ...]
    series: tuple[Series, ...]
    breaks: tuple[Break, ...]
    warnings: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"schema_version": "1.0", "branch": self.branch, "metric": self.metric,
                "statistics": {"seed": self.seed, "samples": self.samples, "interval": "95% percentile bootstrap"},
                "order": self.order, "strata_source": self.strata_source, "repository": self.repository,
                "baselines": [b.to_dict() for b in self.baselines], "series": [s.to_dict() for s in self.series],
                "breaks": [b.to_dict() for b in self.breaks], "warnings": list(self.warnings)}
