"""The validity checks of one comparison, with the reporting set they leave.

The reporting set is the judged golden queries, minus leaked queries (when
``policy.exclude_leaked``), restricted to the held-out queries when the PR
changes a declared tunable parameter. The verdict is computed on it; the
report names it and its size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gate.checks.judged_share import JudgedCheck
from gate.checks.leakage import LeakageResult, LeakMatch, find_leaks
from gate.checks.prompts import PromptsCheck
from gate.checks.tuning import TuningCheck
from gate.common.numbers import counted, listed
from gate.inputs.readers.corpus import iter_corpus
from gate.inputs.readers.records import Query


@dataclass(frozen=True)
class LeakageComparison:
    """Leaks in the baseline's and the candidate's corpus snapshots, tagged new/removed/both."""

    candidate: LeakageResult
    baseline: LeakageResult | None
    same_snapshot: bool
    tags: Mapping[str, str]  # query id -> new | removed | both
    baseline_source: str = ""  # how the baseline's corpus was read (as of which commit)

    def ids(self, *tags: str) -> set[str]:
        return {q for q, t in self.tags.items() if not tags or t in tags}

    @property
    def new(self) -> list[str]:
        return sorted(self.ids("new"), key=lambda q: q.encode())

    def to_dict(self) -> dict[str, Any]:
        data = self.candidate.to_dict()
        by_id: dict[str, LeakMatch] = {m.query_id: m for m in self.candidate.matched}
        if self.baseline is not None:
            for m in self.baseline.matched:
                by_id.setdefault(m.query_id, m)
        data["matched"] = [
            {**by_id[q].to_dict(), "tag": self.tags[q]} for q in sorted(self.tags, key=lambda q: q.encode())
        ]
        data["count"] = len(data["matched"])
        data["new"] = self.new
        data["removed"] = sorted(self.ids("removed"), key=lambda q: q.encode())
        data["both"] = sorted(self.ids("both"), key=lambda q: q.encode())
        data["baseline_count"] = None if self.baseline is None else self.baseline.count
        data["candidate_count"] = self.candidate.count
        data["same_snapshot"] = self.same_snapshot
        data["baseline_corpus"] = self.baseline_source or None
        data["recommendation"] = self.candidate.recommendation()
        return data


def scan_corpus(queries: Sequence[Query], corpus_path: str, modes: Sequence[str], threshold: float,
                min_tokens: int) -> LeakageResult:
    return find_leaks(queries, iter_corpus(corpus_path, check_duplicates=False), modes=modes, threshold=threshold,
                      min_tokens=min_tokens)


def compare_leakage(
    queries: Sequence[Query],
    baseline_corpus: str | None,
    candidate_corpus: str,
    baseline_sha: str | None,
    candidate_sha: str,
    modes: Sequence[str] = ("exact", "trigram-jaccard"),
    threshold: float = 0.85,
    min_tokens: int = 3,
) -> LeakageComparison:
    candidate = scan_corpus(queries, candidate_corpus, modes, threshold, min_tokens)
    same = baseline_corpus is not None and baseline_sha == candidate_sha
    if same:
        baseline: LeakageResult | None = candidate
    elif baseline_corpus is not None and (baseline_corpus.startswith("irds:") or Path(baseline_corpus).exists()):
        baseline = scan_corpus(queries, baseline_corpus, modes, threshold, min_tokens)
    else:
        baseline = None  # the baseline's snapshot is not available: every leak counts as new
    now = candidate.matched_ids()
    before = baseline.matched_ids() if baseline is not None else set()
    tags = {q: ("both" if q in before else "new") for q in now}
    tags.update({q: "removed" for q in before - now})
    return LeakageComparison(candidate, baseline, same, tags)


@dataclass(frozen=True)
class ReportingSet:
    """The queries a verdict is computed on. Before the validity checks have run (a baseline
    that cannot be replayed, a failed candidate run) it is the golden set, and what the checks
    would leave out is not known: ``excluded_leaked`` and ``held_out_only`` are None."""
    name: str
    query_ids: tuple[str, ...]
    excluded_leaked: tuple[str, ...] | None
    held_out_only: bool | None

    @classmethod
    def golden(cls, query_ids: Sequence[str]) -> ReportingSet:
        """Every golden query, before the validity checks."""
        return cls("golden", tuple(query_ids), None, None)

    @property
    def query_count(self) -> int:
        return len(self.query_ids)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "query_count": self.query_count}
        if self.excluded_leaked is not None:
            out["excluded_leaked"] = list(self.excluded_leaked)
        if self.held_out_only is not None:
            out["held_out_only"] = self.held_out_only
        return out


def reporting_set(universe: Sequence[str], leakage: LeakageComparison | None, tuning: TuningCheck | None,
                  exclude_leaked: bool) -> ReportingSet:
    ids = list(universe)
    # A split with no tuning query among the judged ones holds nothing out: not "held-out" queries.
    held_out = bool(tuning and tuning.applies and tuning.tuning_count)
    if held_out and tuning is not None:
        keep = set(tuning.holdout)
        ids = [q for q in ids if q in keep]
    leaked = leakage.ids() if leakage is not None else set()
    excluded = tuple(q for q in ids if q in leaked) if exclude_leaked else ()
    if excluded:
        gone = set(excluded)
        ids = [q for q in ids if q not in gone]
    parts = ["held-out golden queries" if held_out else "golden queries"]
    if excluded:
        parts.append(f"without {len(excluded)} leaked")
    return ReportingSet(", ".join(parts), tuple(ids), excluded, held_out)


@dataclass(frozen=True)
class Validity:
    leakage: LeakageComparison | None
    judged: JudgedCheck | None
    tuning: TuningCheck | None
    prompts: PromptsCheck | None
    reporting: ReportingSet
    warnings: tuple[str, ...] = field(default_factory=tuple)


def validity_warnings(tuning: TuningCheck | None, prompts: PromptsCheck | None) -> list[str]:
    """What the checks found that the verdict states but does not fail on."""
    warnings: list[str] = []
    if tuning is not None and tuning.warning:
        warnings.append(tuning.warning)
    if tuning is not None:
        warnings.extend(tuning.problems)
        warnings.extend(tuning.hints)
    if prompts is not None:
        warnings.extend(prompts.problems)
    if prompts is not None and prompts.matches:
        warnings.append(prompts_sentence(prompts))
    return warnings


_KIND_WORDS = {"query_text": "query", "relevant_doc_id": "relevant doc id", "relevant_doc_text": "relevant doc text"}


def prompts_sentence(prompts: PromptsCheck, groups_shown: int = 3, places_shown: int = 3) -> str:
    """Every match, grouped by what it quotes: "prompt files quote the golden set in 5 places:
    query 156493 3 times (a.txt:2, a.txt:9, b.yaml:4), ... and 2 more"."""
    groups = prompts.groups()
    parts = []
    for kind, what, matches in groups[:groups_shown]:
        places = listed([f"{m.file}:{m.line}" for m in matches], places_shown)
        times = "once" if len(matches) == 1 else f"{len(matches)} times"
        parts.append(f"{_KIND_WORDS.get(kind, kind)} {what} {times} ({places})")
    more = len(groups) - groups_shown
    return (f"prompt files quote the golden set in {counted(len(prompts.matches), 'place', 'places')}: "
            + "; ".join(parts) + (f"; and {counted(more, 'other', 'others')}" if more > 0 else ""))
