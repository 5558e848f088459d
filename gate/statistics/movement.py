"""Movement buckets: where a change in RR comes from, query by query.

A mean reciprocal rank that rose can mean very different things: relevant
documents already in the window moved up, relevant documents entered the
window, or a few queries improved a lot while others were damaged. Each query
is put in one *movement bucket* by the rank of its first relevant document
(label ``>= rel``) in trec_eval order (score descending, docno descending),
looked for within the top ``k_rank`` of each run:

=================  ===========================================================
``promoted``       in the window in both runs, at a better rank after
``demoted``        in the window in both runs, at a worse rank after
``new_hit``        in the window after, not before
``lost_hit``       in the window before, not after
``unchanged_hit``  in the window in both runs, at the same rank
``unchanged_miss`` in the window in neither run
=================  ===========================================================

Only queries with at least one relevant document in the qrels are bucketed;
the other judged queries are counted as ``no_relevant`` (no run can find what
does not exist). Per bucket: the number of queries, the mean
``rr_delta = RR@k_rank(after) - RR@k_rank(before)``, the mean rank movement
and the mean ``recall_delta = R@k_recall(after) - R@k_recall(before)``.

Rank movement is ``before_rank - after_rank`` of the first relevant document
(positive = moved up). It is defined for *hits only* - queries whose first
relevant document is inside the window in both runs (``promoted``,
``demoted``, ``unchanged_hit``); for the other buckets a rank outside the
window is not comparable, and the mean is ``null``. The ranks reported per
query (``before_rank``/``after_rank``) are at any depth (``null`` when the run
retrieved no relevant document at all), so a ``new_hit`` example shows where
the document was before.

A query is *tie-sensitive* when, in either run, its first relevant document
sits in a group of equal scores that reaches into the top ``k_rank`` and
holds a non-relevant document: its rank (even its bucket) then depends on
docno order alone.

:func:`gate.publishing.lift_files.write_lift` writes ``retrieval_lift.json``,
``retrieval_lift_by_bucket.csv``, ``retrieval_lift_examples.jsonl`` and
``retrieval_lift.md``. :func:`strata_section` assembles the per-stratum
table, the traffic accounting and the lift for ``report.json``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from gate.evaluation.first_relevant import Looked, looked_of, relevant_sets
from gate.inputs.readers.records import Qrels, QuerySet, Run
from gate.inputs.universe import query_universe, require_overlap
from gate.statistics.paired import paired_differences
from gate.statistics.strata import DirectionRule, StratumResult, stratum_table
from gate.statistics.traffic import TrafficAccount, traffic_account, wins_sentence

if TYPE_CHECKING:  # annotations only: no import cycle at run time
    from gate.evaluation.evaluate import PerQuery
    from gate.evaluation.streaming import RunDigest
    from gate.inputs.traffic_shares import StrataSpec

PROMOTED = "promoted"
DEMOTED = "demoted"
NEW_HIT = "new_hit"
LOST_HIT = "lost_hit"
UNCHANGED_HIT = "unchanged_hit"
UNCHANGED_MISS = "unchanged_miss"
BUCKETS = (PROMOTED, DEMOTED, NEW_HIT, LOST_HIT, UNCHANGED_HIT, UNCHANGED_MISS)
NO_RELEVANT = "no_relevant"

#: Buckets whose first relevant rank is in the window in both runs: rank movement is defined.
HIT_BUCKETS = (PROMOTED, DEMOTED, UNCHANGED_HIT)

BUCKET_MEANING = {
    PROMOTED: "first relevant document stayed in the window and moved up",
    DEMOTED: "first relevant document stayed in the window and moved down",
    NEW_HIT: "a relevant document entered the window",
    LOST_HIT: "the relevant document left the window",
    UNCHANGED_HIT: "first relevant document at the same rank",
    UNCHANGED_MISS: "no relevant document in the window, before or after",
}

CSV_COLUMNS = ("bucket", "count", "share", "mean_rr_delta", "mean_rank_movement", "mean_recall_delta",
               "tie_sensitive")
EXAMPLES_PER_BUCKET = 3



def _byte_order(ids) -> list[str]:
    return sorted(ids, key=lambda q: q.encode("utf-8"))


def _num(value: float | None) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _mean(values: Sequence[float]) -> float | None:
    return float(math.fsum(values) / len(values)) if values else None


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class QueryMovement:
    """One bucketed query. Ranks are 1-based, at any depth, ``None`` when no relevant doc was retrieved."""

    query_id: str
    bucket: str
    before_rank: int | None
    after_rank: int | None
    rr_before: float
    rr_after: float
    recall_before: float
    recall_after: float
    tie_sensitive: bool
    stratum: str | None = None
    text: str | None = None

    @property
    def rr_delta(self) -> float:
        return self.rr_after - self.rr_before

    @property
    def recall_delta(self) -> float:
        return self.recall_after - self.recall_before

    @property
    def rank_movement(self) -> int | None:
        """``before_rank - after_rank`` for hits (both in the window), else ``None``."""
        if self.bucket in HIT_BUCKETS:  # both ranks are set (in the window)
            return int(cast(int, self.before_rank)) - int(cast(int, self.after_rank))
        return None

    def example(self) -> dict[str, Any]:
        out: dict[str, Any] = {"query_id": self.query_id}
        if self.text is not None:
            out["text"] = self.text
        if self.stratum is not None:
            out["stratum"] = self.stratum
        out.update(
            bucket=self.bucket,
            before_rank=self.before_rank,
            after_rank=self.after_rank,
            rank_movement=self.rank_movement,
            rr_delta=self.rr_delta,
            recall_delta=self.recall_delta,
            tie_sensitive=self.tie_sensitive,
        )
        return out


@dataclass(frozen=True)
class BucketStats:
    bucket: str
    count: int
    share: float | None  # of the bucketed queries
    mean_rr_delta: float | None
    mean_rank_movement: float | None  # hits only
    mean_recall_delta: float | None
    tie_sensitive: int
    rr_contribution: float | None  # sum of rr_delta / bucketed queries: the buckets add up to the mean

    def to_dict(self) -> dict[str, Any]:
        return {
            "bucket": self.bucket,
            "count": self.count,
            "share": _num(self.share),
            "mean_rr_delta": _num(self.mean_rr_delta),
            "mean_rank_movement": _num(self.mean_rank_movement),
            "mean_recall_delta": _num(self.mean_recall_delta),
            "tie_sensitive": self.tie_sensitive,
            "rr_contribution": _num(self.rr_contribution),
        }


def bucket_stats(movements: Sequence[QueryMovement]) -> list[BucketStats]:
    """Stats of every bucket (all six, in :data:`BUCKETS` order; empty ones with ``None`` means)."""
    total = len(movements)
    out = []
    for bucket in BUCKETS:
        members = [m for m in movements if m.bucket == bucket]
        rr = [m.rr_delta for m in members]
        moves = [float(m.rank_movement) for m in members if m.rank_movement is not None]
        out.append(BucketStats(
            bucket=bucket,
            count=len(members),
            share=len(members) / total if total else None,
            mean_rr_delta=_mean(rr),
            mean_rank_movement=_mean(moves) if bucket in HIT_BUCKETS else None,
            mean_recall_delta=_mean([m.recall_delta for m in members]),
            tie_sensitive=sum(1 for m in members if m.tie_sensitive),
            rr_contribution=(math.fsum(rr) / total) if total else None,
        ))
    return out


def _summary(movements: Sequence[QueryMovement], no_relevant: Sequence[str]) -> dict[str, Any]:
    """Headline numbers over ``movements`` (bucketed queries) plus the no-relevant count."""
    stats = bucket_stats(movements)
    return {
        "queries": len(movements) + len(no_relevant),
        "bucketed": len(movements),
        "no_relevant": len(no_relevant),
        "counts": {s.bucket: s.count for s in stats},
        "mean_rr_before": _num(_mean([m.rr_before for m in movements])),
        "mean_rr_after": _num(_mean([m.rr_after for m in movements])),
        "mean_rr_delta": _num(_mean([m.rr_delta for m in movements])),
        "mean_recall_before": _num(_mean([m.recall_before for m in movements])),
        "mean_recall_after": _num(_mean([m.recall_after for m in movements])),
        "mean_recall_delta": _num(_mean([m.recall_delta for m in movements])),
        "tie_sensitive": sum(1 for m in movements if m.tie_sensitive),
        "buckets": [s.to_dict() for s in stats],
    }


@dataclass(frozen=True)
class LiftResult:
    """Movement buckets of every judged query; ``files`` is filled by :func:`gate.publishing.lift_files.write_lift`."""

    movements: tuple[QueryMovement, ...]  # bucketed queries, byte order of ids
    no_relevant: tuple[str, ...]  # judged queries without a document of label >= rel
    rel_threshold: int
    k_rank: int
    k_recall: int
    before: str
    after: str
    qrels: str
    before_tag: str | None = None
    after_tag: str | None = None
    missing_in_before: tuple[str, ...] = ()
    missing_in_after: tuple[str, ...] = ()
    unjudged_run_queries: tuple[str, ...] = ()  # in a run, but no qrels entry: not evaluated
    unjudged_golden: tuple[str, ...] = ()  # in the query file, but no qrels entry: not evaluated
    strata: Mapping[str, str | None] = field(default_factory=dict)  # query id -> stratum (bucketed + no_relevant)
    files: Mapping[str, Path] = field(default_factory=dict)

    @property
    def buckets(self) -> list[BucketStats]:
        return bucket_stats(self.movements)

    def counts(self) -> dict[str, int]:
        return {s.bucket: s.count for s in self.buckets}

    def by_stratum(self) -> dict[str, dict[str, Any]]:
        """The summary per stratum (strata in first-seen order of the byte-ordered queries)."""
        names: list[str] = []
        for qid in _byte_order(list(self.strata)):
            s = self.strata[qid]
            if s is not None and s not in names:
                names.append(s)
        out = {}
        for name in names:
            moves = [m for m in self.movements if m.stratum == name]
            none = [q for q in self.no_relevant if self.strata.get(q) == name]
            out[name] = _summary(moves, none)
        return out

    def examples(self, per_bucket: int = EXAMPLES_PER_BUCKET) -> list[dict[str, Any]]:
        """Up to ``per_bucket`` queries per bucket: largest |rr_delta| first, then |recall_delta|, then id."""
        out: list[dict[str, Any]] = []
        for bucket in BUCKETS:
            members = [m for m in self.movements if m.bucket == bucket]
            members.sort(key=lambda m: (-abs(m.rr_delta), -abs(m.recall_delta), m.query_id.encode("utf-8")))
            out.extend(m.example() for m in members[:per_bucket])
        return out

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "before": {"source": self.before, "tag": self.before_tag},
            "after": {"source": self.after, "tag": self.after_tag},
            "qrels": self.qrels,
            "rel_threshold": self.rel_threshold,
            "k_rank": self.k_rank,
            "k_recall": self.k_recall,
        }
        data.update(_summary(self.movements, self.no_relevant))
        data["no_relevant_queries"] = list(self.no_relevant)
        data["missing_in_before"] = list(self.missing_in_before)
        data["missing_in_after"] = list(self.missing_in_after)
        data["unjudged_run_queries"] = len(self.unjudged_run_queries)
        data["unjudged_golden"] = list(self.unjudged_golden)
        strata = self.by_stratum()
        if strata:
            data["by_stratum"] = strata
        data["definitions"] = {
            "bucket": f"from the first document with label >= {self.rel_threshold} within the top {self.k_rank}"
                      " (trec_eval order: score descending, docno descending)",
            "rr_delta": f"RR@{self.k_rank}(after) - RR@{self.k_rank}(before)",
            "recall_delta": f"R@{self.k_recall}(after) - R@{self.k_recall}(before)",
            "rank_movement": "before_rank - after_rank of the first relevant document (positive = moved up);"
                             " hits only (promoted, demoted, unchanged_hit)",
            "means": "over the bucketed queries (those with at least one relevant document)",
            "tie_sensitive": f"the first relevant document sits in a group of equal scores reaching into the top"
                             f" {self.k_rank}: docno order alone decides its rank",
        }
        return data


# --------------------------------------------------------------------------- computing


def _bucket(before: int | None, after: int | None, k: int) -> str:
    hit_before = before is not None and before <= k
    hit_after = after is not None and after <= k
    if hit_before and hit_after:
        assert before is not None and after is not None  # hits are ranked
        if after < before:
            return PROMOTED
        if after > before:
            return DEMOTED
        return UNCHANGED_HIT
    if hit_after:
        return NEW_HIT
    if hit_before:
        return LOST_HIT
    return UNCHANGED_MISS


def _check_positive(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def compute_lift(
    before: Run | RunDigest,
    after: Run | RunDigest,
    qrels: Qrels,
    rel_threshold: int = 1,
    k_rank: int = 10,
    k_recall: int = 100,
    queries: QuerySet | None = None,
    *,
    strata: Mapping[str, str | None] | None = None,
    query_ids: Sequence[str] | None = None,
    after_qrels: Qrels | None = None,
) -> LiftResult:
    """Bucket every judged query by the movement of its first relevant document.

    Queries: exactly those ``compare`` evaluates - the judged queries (any
    qrels entry), restricted to ``queries`` when given - or exactly
    ``query_ids`` when given (a comparison's universe). A judged query absent
    from a run is a miss there (trec_eval ``-c``); run queries without
    judgments are counted (``unjudged_run_queries``), not bucketed. TREC DL
    runs cover 200 topics of which NIST judged 43: those 43 are bucketed.
    Strata come from ``strata`` (query id -> stratum) or the query file.

    Raises :class:`InputError` when there is nothing to compare: a run with
    no rows, or a run none of whose queries is judged (wrong qrels, or ids
    that do not match). ``after_qrels``: the judgments of ``after``'s own chunks when the two
    sides index different corpora (anchored judgments mapped onto each); ``qrels`` judges ``before``.
    """
    rel_threshold = _check_positive("rel_threshold", rel_threshold)
    k_rank = _check_positive("k_rank", k_rank)
    k_recall = _check_positive("k_recall", k_recall)
    judgments = qrels.judgments
    universe, unjudged_golden = _lift_universe(before, after, qrels, queries, query_ids)
    universe = _byte_order(universe)
    in_universe = set(universe)
    unjudged_run = _byte_order((set(before.query_ids) | set(after.query_ids)) - in_universe)

    field_strata = {q.query_id: q.stratum for q in queries.queries} if queries is not None else {}
    texts = {q.query_id: q.text for q in queries.queries} if queries is not None else {}
    stratum_of = dict(strata) if strata is not None else field_strata

    relevant_before = relevant_sets(judgments, universe, rel_threshold)
    relevant_after = relevant_before if after_qrels is None else relevant_sets(after_qrels.judgments, universe,
                                                                                rel_threshold)
    ordered_before = looked_of(before, relevant_before, rel_threshold, k_rank, k_recall)
    ordered_after = looked_of(after, relevant_after, rel_threshold, k_rank, k_recall)
    movements: list[QueryMovement] = []
    no_relevant: list[str] = []
    for qid in universe:
        relevant, relevant_now = relevant_before.get(qid), relevant_after.get(qid)
        if not relevant or not relevant_now:  # nothing either side could find: no movement to bucket
            no_relevant.append(qid)
            continue
        movements.append(_movement(qid, (relevant, relevant_now), ordered_before, ordered_after, k_rank, k_recall,
                                   stratum_of.get(qid), texts.get(qid)))
    return LiftResult(
        movements=tuple(movements),
        no_relevant=tuple(no_relevant),
        rel_threshold=rel_threshold,
        k_rank=k_rank,
        k_recall=k_recall,
        before=before.source,
        after=after.source,
        qrels=qrels.source,
        before_tag=before.tag,
        after_tag=after.tag,
        missing_in_before=tuple(q for q in universe if q not in ordered_before),
        missing_in_after=tuple(q for q in universe if q not in ordered_after),
        unjudged_run_queries=tuple(unjudged_run),
        unjudged_golden=unjudged_golden,
        strata={q: stratum_of.get(q) for q in universe},
    )


def _lift_universe(before: Run | RunDigest, after: Run | RunDigest, qrels: Qrels, queries: QuerySet | None,
                   query_ids: Sequence[str] | None) -> tuple[list[str], tuple[str, ...]]:
    """The queries to bucket (``query_ids``, or the judged golden queries, each run required to
    rank some) and the golden queries without a judgment."""
    if query_ids is not None:
        return list(dict.fromkeys(query_ids)), ()
    judged = query_universe(qrels, queries)
    universe = list(judged.query_ids)
    for run in (before, after):
        require_overlap(run, universe, qrels, queries)
    return universe, judged.unjudged


def _movement(qid: str, relevant: tuple[set[str], set[str]], ordered_before: Looked, ordered_after: Looked,
              k_rank: int, k_recall: int, stratum: str | None, text: str | None) -> QueryMovement:
    """One judged query's movement: where its first relevant document sits before and after
    (``relevant``: the relevant documents of each side, the same set unless the sides' chunks differ)."""
    b_rank, b_found, b_tie = ordered_before.look(qid, relevant[0], k_rank, k_recall)
    a_rank, a_found, a_tie = ordered_after.look(qid, relevant[1], k_rank, k_recall)
    return QueryMovement(
        query_id=qid,
        bucket=_bucket(b_rank, a_rank, k_rank),
        before_rank=b_rank,
        after_rank=a_rank,
        rr_before=1.0 / b_rank if b_rank is not None and b_rank <= k_rank else 0.0,
        rr_after=1.0 / a_rank if a_rank is not None and a_rank <= k_rank else 0.0,
        recall_before=b_found / len(relevant[0]),
        recall_after=a_found / len(relevant[1]),
        tie_sensitive=b_tie or a_tie,
        stratum=stratum,
        text=text,
    )


# --------------------------------------------------------------------------- report section


@dataclass(frozen=True)
class StrataSection:
    """One comparison's per-stratum table, traffic account and movement buckets (``lift``), as
    computed: the verdict reads the table's directions from it, and :meth:`to_dict` is the
    report's block."""

    strata: tuple[StratumResult, ...] = ()
    traffic: TrafficAccount | None = None  # with shares only
    lift: LiftResult | None = None  # with both runs and the qrels only
    wins_sentence: str | None = None
    unassigned: int = 0  # queries without a stratum

    def to_dict(self) -> dict[str, Any]:
        return {"strata": [r.to_dict() for r in self.strata],
                "traffic": None if self.traffic is None else self.traffic.to_dict(),
                "lift": None if self.lift is None else self.lift.to_dict(),
                "wins_sentence": self.wins_sentence, "unassigned": self.unassigned}


def strata_section(
    baseline: PerQuery,
    candidate: PerQuery,
    metric: str,
    strata_by_query: Mapping[str, str | None],
    spec: StrataSpec | None = None,
    *,
    baseline_run: Run | RunDigest | None = None,
    candidate_run: Run | RunDigest | None = None,
    qrels: Qrels | None = None,
    candidate_qrels: Qrels | None = None,
    queries: QuerySet | None = None,
    k_rank: int = 10,
    k_recall: int = 100,
    noise_threshold: Mapping[str, float] | float | None = None,
    min_effect: float | None = None,
    margin: float = 0.02,
    samples: int = 10_000,
    seed: int = 7,
    method: str = "percentile",
    rule: DirectionRule,
) -> StrataSection:
    """The strata + traffic + lift block of ``report.json``, as a :class:`StrataSection`.

    ``baseline``/``candidate`` are :class:`gate.evaluation.evaluate.PerQuery` on the same
    queries (the comparison's universe, possibly a held-out subset);
    ``metric`` names the measure compared; ``strata_by_query`` maps query ids
    to strata (queries it does not list have none). With ``spec`` the
    per-stratum rows follow its shares (a stratum empty here is "n = 0, not
    measured" and its share is ``unmeasured`` traffic) and ``traffic`` is
    filled; without, ``traffic`` is ``None``. With both runs and the qrels,
    ``lift`` holds the movement buckets over the same queries at the
    PerQuery's rel; otherwise ``None``. ``margin`` (``policy.max_regression``) bounds the
    interval of a stratum labelled untouched (:func:`gate.statistics.strata.stratum_table`);
    ``rule`` decides the directions at its family-wise level (the verdict's policy,
    :class:`gate.verdict.directions.StrataDirections`; a verdict that may take two looks gives
    each half).

    A query whose stratum has no share in ``spec`` is an :class:`InputError` on the shares file.
    """
    if tuple(baseline.query_ids) != tuple(candidate.query_ids):
        raise ValueError("baseline and candidate were evaluated on different queries")
    key = baseline.key(metric)
    base = baseline.values[key]
    cand = candidate.values[candidate.key(metric)]
    labels = [strata_by_query.get(q) or None for q in baseline.query_ids]
    shares = spec.shares if spec is not None else None
    if spec is not None:
        _check_every_stratum_has_a_share(spec, labels)

    unassigned = sum(1 for lab in labels if lab is None)
    results: list[StratumResult] = []
    traffic = lift = sentence = None
    if len(base):
        d = paired_differences(base, cand)
        sentence = wins_sentence(int((d > 0).sum()), int((d < 0).sum()), int((d == 0).sum()), float(d.mean()))
        if shares is not None or any(lab is not None for lab in labels):
            results = stratum_table(base, cand, labels, shares=shares,
                                    guarded=spec.guarded if spec is not None else (),
                                    noise_threshold=noise_threshold, min_effect=min_effect, margin=margin,
                                    samples=samples, seed=seed, method=method, rule=rule)
            if shares is not None:
                traffic = traffic_account(results, d, labels, samples=samples, seed=seed)
    if baseline_run is not None and candidate_run is not None and qrels is not None:
        lift = compute_lift(baseline_run, candidate_run, qrels, baseline.rel, k_rank, k_recall, queries,
                            strata={q: lab for q, lab in zip(baseline.query_ids, labels)},
                            query_ids=baseline.query_ids, after_qrels=candidate_qrels)
    return StrataSection(tuple(results), traffic, lift, sentence, unassigned)


def _check_every_stratum_has_a_share(spec: StrataSpec, labels: Sequence[str | None]) -> None:
    """The shares file's InputError for the first stratum (byte order) with queries but no share."""
    counts: dict[str, int] = {}
    for lab in labels:
        if lab is not None and lab not in spec.shares:
            counts[lab] = counts.get(lab, 0) + 1
    for stratum in sorted(counts):
        raise spec.error(None, f"stratum '{stratum}' has {counts[stratum]} queries but no share")
