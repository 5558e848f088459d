"""``retrieval-gate history``: the primary metric and every stratum over main's archived baselines.

Inputs: the baselines branch (:mod:`gate.inputs.baselines_branch`), main's first-parent history
(order, dates, subjects: the PR that moved each point) and HEAD's gate config (the seed, and the
strata definition every baseline's queries are assigned with: one definition for the whole
page, so a stratum means the same queries' kind at every point). Output: a :class:`History`,
written as ``history.json`` and rendered as ``index.html`` (:mod:`gate.rendering.history`).

Each point is the mean over the baseline's queries with a 95% percentile bootstrap interval
over those queries (``default_rng(statistics.seed)`` per point, at most
:data:`HISTORY_SAMPLES` resamples: an interval drawn on a chart, not a decision). Between two
consecutive baselines whose golden queries, qrels, metric or relevance threshold differ, the
series breaks (:class:`Break`): their numbers do not measure the same thing.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gate.checks.commensurability import ResolvedBaseline
from gate.common.errors import InputError
from gate.inputs import git
from gate.inputs.baselines_branch import ArchivedBaseline, BranchListing, list_baselines, newest_created, read_baselines
from gate.inputs.config import Config
from gate.inputs.golden import load_golden
from gate.inputs.traffic_shares import assign_strata, strata_spec_from_config
from gate.inputs.yardstick import BASELINES_BRANCH
from gate.rendering.history import BREAK_MARK, sparkline
from gate.report.build import GateRun
from gate.report.history_records import Baseline, Break, History, Point, Series
from gate.statistics.bootstrap import bootstrap_means, confidence_interval

#: Resamples per point at most: the config's statistics.samples when smaller.
HISTORY_SAMPLES = 2000
DEFAULT_LAST = 200
#: Main's first-parent history is read this far back at most.
MAX_HISTORY_COMMITS = 100_000
_MERGE_PR = re.compile(r"^Merge pull request #([0-9]{1,9}) from ")
_SQUASH_PR = re.compile(r"\(#([0-9]{1,9})\)\s*$")
_GITHUB_REMOTE = re.compile(r"github\.com[:/]([A-Za-z0-9_.-]{1,100})/([A-Za-z0-9_.-]{1,100}?)(?:\.git)?/?$")
_REPOSITORY = re.compile(r"[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}")


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    date: str
    subject: str


def pr_number(subject: str) -> int | None:
    """The PR a main commit came from: GitHub's merge ("Merge pull request #12 from ...") or
    squash ("Subject (#12)") subject; None for any other commit."""
    found = _MERGE_PR.match(subject) or _SQUASH_PR.search(subject)
    return int(found.group(1)) if found else None


def repository_name(workspace: Path, env: Mapping[str, str]) -> str | None:
    """``owner/name`` on GitHub: GITHUB_REPOSITORY, else the origin remote's address; None when
    neither names a GitHub repository."""
    named = env.get("GITHUB_REPOSITORY", "")
    if _REPOSITORY.fullmatch(named):
        return named
    try:
        proc = git.run(workspace, "remote", "get-url", "origin")
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = _GITHUB_REMOTE.search(proc.stdout.decode("utf-8", "replace").strip()) if proc.returncode == 0 else None
    return f"{found.group(1)}/{found.group(2)}" if found else None


def first_parent_history(workspace: Path, ref: str = "HEAD", limit: int = MAX_HISTORY_COMMITS) -> list[CommitInfo]:
    """Main's first-parent history (the newest ``limit`` commits), oldest first (empty when git
    cannot list it)."""
    try:
        proc = git.run(workspace, "log", "--first-parent", f"--max-count={limit}",
                       "--format=%H%x1f%cI%x1f%s", ref, "--", timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if proc.returncode != 0:
        return []
    out = []
    for line in proc.stdout.decode("utf-8", "replace").split("\n"):  # not splitlines: U+2028 in a subject
        parts = line.split("\x1f")
        if len(parts) == 3:
            out.append(CommitInfo(*parts))
    return out[::-1]


def _select(listing: BranchListing, commits: Sequence[CommitInfo], last: int) -> tuple[list[str], str]:
    """The folders to read, oldest first, and the order used: main's first-parent order when
    every folder names a commit on it, else every folder (ordered later by creation time)."""
    rank = {c.sha: i for i, c in enumerate(commits)}
    if listing.folders and all(f in rank for f in listing.folders):
        return sorted(listing.folders, key=rank.__getitem__)[-last:], "first-parent"
    return list(listing.folders), "created"


def _band_threshold(band: Any, stratum: str | None) -> float | None:
    if not isinstance(band, Mapping):
        return None
    if stratum is not None:
        strata = band.get("strata")
        band = strata.get(stratum) if isinstance(strata, Mapping) else None
        if not isinstance(band, Mapping):
            return None
    value = band.get("threshold")
    # A band of a metric in [0, 1] wider than 1 is none a run measured (a 309-digit "±" on the page).
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        return None
    return float(value)


def point(values: np.ndarray, samples: int, seed: int, band: float | None) -> Point:
    means = bootstrap_means(values[None, :], samples, seed)[0]
    low, high = confidence_interval(values, means, "percentile")
    return Point(float(values.mean()), float(low), float(high), int(values.size), band)


def break_reason(before: ArchivedBaseline, after: ArchivedBaseline) -> str | None:
    """Why ``after`` is not commensurable with ``before`` (None when it is)."""
    a, b = before.manifest, after.manifest
    reasons = []
    if a.queries.sha256 != b.queries.sha256:
        reasons.append(f"golden set changed: {a.queries.count} -> {b.queries.count} queries")
    if a.qrels.sha256 != b.qrels.sha256:
        reasons.append("qrels changed")
    if a.metric != b.metric:
        reasons.append(f"metric changed {a.metric} -> {b.metric}")
    if a.rel != b.rel:
        reasons.append(f"relevance threshold changed: rel {a.rel} -> {b.rel}")
    return "; ".join(reasons) or None


def _strata(config: Config) -> tuple[dict[str, str | None], str]:
    """Every golden query's stratum as HEAD's config defines it, and a sentence saying so."""
    golden = load_golden(config)
    labels = assign_strata(golden.queries, strata_spec_from_config(config))
    named = sum(1 for v in labels.values() if v)
    if not named:
        return {}, "no strata: HEAD's golden queries carry none"
    return labels, (f"strata as HEAD's gate config defines them ({Path(config.path).name}): each baseline's queries "
                    "are assigned by HEAD's definition; a query HEAD's golden set no longer has is in no stratum")


def _series(baselines: Sequence[ArchivedBaseline], strata: Mapping[str, str | None], samples: int,
            seed: int) -> list[Series]:
    names = sorted({s for s in strata.values() if s})
    primary: list[Point | None] = []
    by_stratum: dict[str, list[Point | None]] = {name: [] for name in names}
    for item in baselines:
        ids = sorted(item.values)
        values = np.array([item.values[q] for q in ids], dtype=np.float64)
        band = item.manifest.extra.get("noise_band")
        primary.append(point(values, samples, seed, _band_threshold(band, None)))
        labels = np.array([strata.get(q) or "" for q in ids], dtype=object)
        for name in names:
            mask = labels == name
            by_stratum[name].append(point(values[mask], samples, seed, _band_threshold(band, name))
                                    if mask.any() else None)
    metric = baselines[-1].manifest.metric if baselines else ""
    return [Series(metric, None, tuple(primary))] + [Series(f"{metric} · {name}", name, tuple(by_stratum[name]))
                                                     for name in names]


def build_history(config: Config, *, branch: str = BASELINES_BRANCH, last: int = DEFAULT_LAST,
                  env: Mapping[str, str] | None = None, token: str | None = None,
                  remote_url: str | None = None) -> History:
    """The history of ``branch``'s archived baselines over main (HEAD's first-parent history)."""
    env = os.environ if env is None else env
    workspace = config.workspace_root
    warnings: list[str] = []
    listing = list_baselines(workspace, branch, token=token, remote_url=remote_url, warnings=warnings)
    if listing is None:
        fetched = re.search(r"could not be fetched \((.*?)\): ", warnings[0]) if warnings else None
        raise InputError(branch, None, "no such branch (local, or origin's) to read archived baselines from"
                         + (f", and fetching it failed ({fetched.group(1)})" if fetched
                            else "; the archive workflow creates it"))
    commits = first_parent_history(workspace)
    folders, order = _select(listing, commits, last)
    if order == "created" and len(folders) > last:
        folders = newest_created(workspace, listing, folders, last)  # read the newest N only, as first-parent does
    read = list(read_baselines(workspace, listing, folders, warnings))
    if order == "created":
        read = sorted(read, key=lambda b: (b.manifest.created, b.folder))[-last:]
    if not read:
        raise InputError(branch, None, "the branch has no readable baselines/<sha>/manifest.yml"
                         + (f" ({warnings[0]})" if warnings else ""))
    strata, strata_source = _strata(config)
    samples = min(config.statistics.samples, HISTORY_SAMPLES)
    seed = config.statistics.seed
    repository = repository_name(workspace, env)
    info = {c.sha: c for c in commits}
    baselines = tuple(_baseline(item, info.get(item.commit) or info.get(item.folder), repository) for item in read)
    breaks = tuple(Break(i, reason) for i in range(1, len(read))
                   if (reason := break_reason(read[i - 1], read[i])) is not None)
    return History(branch, read[-1].manifest.metric, seed, samples, order, strata_source, repository, baselines,
                   tuple(_series(read, strata, samples, seed)), breaks, tuple(warnings))


def _baseline(item: ArchivedBaseline, commit: CommitInfo | None, repository: str | None) -> Baseline:
    m = item.manifest
    subject = commit.subject if commit else ""
    number = pr_number(subject)
    url = f"https://github.com/{repository}/pull/{number}" if number is not None and repository else None
    return Baseline(item.commit, commit.date if commit else m.created, subject, number, url, m.metric, m.rel,
                    m.queries.count, m.queries.sha256, m.qrels.sha256,
                    _band_threshold(m.extra.get("noise_band"), None))


# --------------------------------------------------------------------------- the PR comment's trend

#: Baselines the PR comment's trend shows at most (then the candidate).
TREND_BASELINES = 8
#: How far back the base's first-parent history is searched for archived baselines: as deep as
#: a shallow checkout is deepened for the baseline's own ancestor fallback (so, after it, the
#: trend's fetch finds nothing more to fetch).
TREND_DEPTH = 50
@dataclass(frozen=True)
class TrendPoint:
    commit: str | None  # None: this PR's candidate
    value: float

    def to_dict(self) -> dict[str, Any]:
        return {"commit": self.commit, "value": self.value, "candidate": self.commit is None}


@dataclass(frozen=True)
class Trend:
    """The last archived baselines on main commensurable with the candidate (same golden queries,
    qrels, metric and rel), oldest first, then the candidate; ``broken``: an older archived
    baseline is not commensurable (the sparkline opens with a break marker)."""

    metric: str
    points: tuple[TrendPoint, ...]
    broken: bool

    @property
    def sparkline(self) -> str:
        return (BREAK_MARK if self.broken else "") + sparkline([p.value for p in self.points])

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "points": [p.to_dict() for p in self.points], "sparkline": self.sparkline,
                "first": self.points[0].value, "last": self.points[-1].value, "broken": self.broken}


@dataclass(frozen=True)
class GoldenIdentity:
    """What a baseline must share with the candidate to be drawn beside it."""

    queries_sha256: str
    qrels_sha256: str
    metric: str
    rel: int

    def holds(self, baseline: ArchivedBaseline) -> bool:
        m = baseline.manifest
        return (m.queries.sha256, m.qrels.sha256, m.metric, m.rel) == (self.queries_sha256, self.qrels_sha256,
                                                                      self.metric, self.rel)


def trend_of(baselines: Sequence[ArchivedBaseline], candidate: float | None, yardstick: GoldenIdentity) -> Trend | None:
    """The trend of ``baselines`` (oldest first) and the candidate; None without any archived
    baseline. Only the newest unbroken run of commensurable baselines is drawn."""
    if not baselines:
        return None
    kept: list[ArchivedBaseline] = []
    for item in reversed(baselines):
        if not yardstick.holds(item):
            break
        kept.insert(0, item)
    points = [TrendPoint(b.commit, float(np.mean(list(b.values.values())))) for b in kept[-TREND_BASELINES:]]
    if candidate is not None and math.isfinite(candidate):
        points.append(TrendPoint(None, float(candidate)))
    if not points:
        return None
    return Trend(yardstick.metric, tuple(points), len(kept) < len(baselines))


def candidate_on_every_query(run: GateRun) -> float | None:
    """The candidate's mean over every judged golden query, as an archived baseline's mean is
    taken (the reporting set may leave leaked queries out): the baseline's mean on all of them
    plus the paired change on all of them. None when no candidate was measured."""
    look, metric = run.look, run.head.metric
    if look is None or not isinstance(run.baseline, ResolvedBaseline):
        return None
    if look.everything is None:
        return float(look.candidate.mean(metric))
    return float(run.baseline.values.mean(metric)) + float(look.everything.mean)


def pull_request_trend(config: Config, base: str | None, run: GateRun, *, token: str | None,
                       remote_url: str | None, warnings: list[str]) -> Trend | None:
    """The PR comment's trend: the base's newest archived baselines and this PR's candidate.
    Nothing (None) without a base, a baselines branch, or a candidate's golden set to compare
    with; a trend that cannot be read is a warning, never a failed run."""
    queries, qrels = run.head.queries, run.head.qrels
    if base is None or queries is None or qrels is None:
        return None
    identity = GoldenIdentity(queries.sha256, qrels.sha256, run.head.metric, config.golden.rel)
    try:
        found = recent_baselines(config.workspace_root, base, token=token, remote_url=remote_url, warnings=warnings)
    except (OSError, subprocess.SubprocessError, ValueError) as error:
        warnings.append(f"the trend of archived baselines could not be read ({type(error).__name__})")
        return None
    return trend_of(found, candidate_on_every_query(run), identity)


def recent_baselines(workspace: Path, base: str, *, token: str | None, remote_url: str | None,
                     warnings: list[str]) -> list[ArchivedBaseline]:
    """The newest archived baselines (at most :data:`TREND_BASELINES` + 1: one more shows whether
    an older one breaks the series) on the base commit's first-parent history, oldest first. A
    shallow checkout is deepened from the repository's own address first (as the baseline's
    ancestors are). The branch is fetched again rather than read from a ref an earlier fetch
    left: in the Action a ref already in the checkout may have been written by the PR's code."""
    notes: list[str] = []
    listing = list_baselines(workspace, token=token, remote_url=remote_url, warnings=notes)
    if listing is None or not listing.folders:
        return []
    if remote_url is not None and git.is_shallow(workspace):
        try:
            git.fetch(workspace, base, token=token, url=remote_url, depth=TREND_DEPTH, timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            pass
    history = first_parent_history(workspace, base, TREND_DEPTH)
    archived = set(listing.folders)
    folders = [c.sha for c in history if c.sha in archived][-(TREND_BASELINES + 1):]
    found = list(read_baselines(workspace, listing, folders, notes))
    warnings.extend(f"the trend leaves out {note}" for note in notes if "(skipped)" in note)
    return found
