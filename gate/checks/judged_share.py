"""Judged fraction: how much of each run's top k the qrels can score.

Unjudged documents score as non-relevant, so a candidate that surfaces new
documents is measured against a baseline whose documents were pooled: the
delta is biased against it. The check reports Judged@k per run, overall and
per stratum, and, when the candidate's judged share drops materially, labels
the delta judgment-limited and gives a sensitivity analysis (unjudged
documents of both runs' top k set to 0, then to the top grade, in both runs
alike; and the delta on condensed lists with unjudged documents removed).
These are sensitivities, not bounds.

Qrels that judge only relevant documents (Cranfield, CISI, most BEIR sets: no judged label
below ``rel``) leave no way to tell an unjudged document from a non-relevant one: the judged
share of a top k is its relevant share, so both limits (the unjudged share, its drop) would
gate on precision without the noise test, and fail nearly every PR. ``judged.qrels_style:
relevance-only`` declares that style: while the qrels indeed judge nothing non-relevant, the
limits are not applied (reported as null) and no delta is labelled judgment-limited (the
declaration is that an unjudged document is not relevant); Judged@k is still reported and
unjudged.tsv still written. Should the qrels later judge a document non-relevant, the limits
apply again. :func:`judges_only_relevant` tells the style apart; :func:`qrels_style_notice`
words what ``archive`` says about it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gate.common.atomic import write_text_atomic
from gate.evaluation.evaluate import PerQuery, evaluate
from gate.evaluation.measures.ordering import trec_order
from gate.inputs.readers.records import Qrels, Run


def top_k(run: Run, k: int, query_ids: Sequence[str]) -> dict[str, list[str]]:
    """Each query's top ``k`` docnos in trec_eval order (score desc, docno desc)."""
    perm = trec_order(run.starts, run.scores, run.doc_ids)
    index = run.index()
    out: dict[str, list[str]] = {}
    for qid in query_ids:
        i = index.get(qid)
        if i is None:
            out[qid] = []
            continue
        a, b = int(run.starts[i]), int(run.starts[i + 1])
        out[qid] = [str(d) for d in run.doc_ids[perm[a:min(b, a + k)]]]
    return out


def is_judged(label: int | None, negative_is_judged: bool) -> bool:
    return label is not None and (label >= 0 or negative_is_judged)


#: ``judged.qrels_style`` values: the qrels judge a pool (relevant and not), or relevant documents only.
POOLED, RELEVANCE_ONLY = "pooled", "relevance-only"


@dataclass(frozen=True)
class JudgmentCounts:
    """How a qrels' judgments divide at a relevance threshold."""

    relevant: int  # judged, label >= rel
    not_relevant: int  # judged, label < rel (0, or a negative label the source calls judged)
    unjudged_marks: int  # negative labels read as "in the pool, unjudged" (trec_eval)

    @property
    def relevance_only(self) -> bool:
        """Some relevant judgment and no judged non-relevant one: unjudged means not relevant."""
        return self.relevant > 0 and self.not_relevant == 0


def count_judgments(qrels: Qrels, rel: int = 1, query_ids: Iterable[str] | None = None) -> JudgmentCounts:
    """:class:`JudgmentCounts` of ``qrels`` (of ``query_ids`` only, when given)."""
    relevant = not_relevant = unjudged = 0
    groups = qrels.judgments.values() if query_ids is None else (qrels.judgments.get(q) or {} for q in query_ids)
    for docs in groups:
        for label in docs.values():
            if not is_judged(label, qrels.negative_is_judged):
                unjudged += 1
            elif label >= rel:
                relevant += 1
            else:
                not_relevant += 1
    return JudgmentCounts(relevant, not_relevant, unjudged)


def judges_only_relevant(qrels: Qrels, rel: int = 1, query_ids: Iterable[str] | None = None) -> bool:
    """Whether ``qrels`` judge only relevant documents (label >= ``rel``; of ``query_ids`` only,
    when given): at least one relevant judgment and no judged non-relevant one, as Cranfield's,
    CISI's and most BEIR sets' qrels. Negative labels count as judged only when the qrels say so
    (``negative_is_judged``); otherwise they are trec_eval's "in the pool, unjudged"."""
    return count_judgments(qrels, rel, query_ids).relevance_only


def qrels_style_notice(qrels: Qrels, query_ids: Sequence[str], *, rel: int, qrels_style: str,
                       max_unjudged: float, max_judged_drop: float) -> str | None:
    """One line for ``archive`` when the judged-share check and the qrels disagree: relevance-only
    qrels under the pooled limits (every PR would fail them: the setting to make is named), or
    ``relevance-only`` declared for qrels that judge documents non-relevant (the limits apply).
    None when they agree, and when the limits are already off (both raised to 1.0)."""
    counts = count_judgments(qrels, rel, query_ids)
    if qrels_style == RELEVANCE_ONLY and not counts.relevance_only and counts.not_relevant:
        return (f"notice: judged.qrels_style is relevance-only, but the golden qrels judge {counts.not_relevant:,} "
                f"document{'s' if counts.not_relevant != 1 else ''} not relevant (label below {rel}): the judged-share "
                "limits (policy.max_unjudged, policy.max_judged_drop) apply; set judged.qrels_style: pooled to say so")
    if qrels_style == POOLED and counts.relevance_only and (max_unjudged < 1 or max_judged_drop < 1):
        failing = ("nearly every PR would fail policy.max_unjudged" if max_unjudged < 1 else
                   "policy.max_judged_drop would fail a PR on a fall in precision alone, without the noise test")
        return (f"notice: the golden qrels judge only relevant documents ({counts.relevant:,} judgments, none below "
                f"label {rel}): an unjudged document cannot be told from a non-relevant one, so the judged share is "
                f"the relevant share and {failing}; set judged.qrels_style: relevance-only")
    return None


@dataclass(frozen=True)
class JudgedSide:
    mean: float  # mean Judged@k over the queries
    by_stratum: Mapping[str, float]


@dataclass(frozen=True)
class Sensitivity:
    unjudged_in_union: int
    delta_unjudged_as_zero: float
    delta_unjudged_as_top: float
    delta_condensed: float
    top_grade: int

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class JudgedCheck:
    k: int
    baseline: JudgedSide
    candidate: JudgedSide
    drop: float  # baseline judged share - candidate judged share
    judgment_limited: bool
    sensitivity: Sensitivity | None
    unjudged_rows: tuple[tuple[str, str, int, str], ...]  # (qid, docno, rank, run) of the candidate
    failures: tuple[str, ...] = ()
    limits: Mapping[str, float | None] = field(default_factory=dict)
    # The qrels judge only relevant documents on these queries (no judged label below rel), as
    # Vaswani's and many legacy collections' do: most of any ranking is unjudged by design.
    relevance_only: bool = False
    query_count: int = 0  # the queries it is measured on (every judged golden query)
    # judged.qrels_style is relevance-only and the qrels are: the limits are not applied.
    limits_waived: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "query_count": self.query_count,
            "measure": f"Judged@{self.k}",
            "baseline": {"judged": self.baseline.mean, "unjudged": 1 - self.baseline.mean,
                         "by_stratum": dict(self.baseline.by_stratum)},
            "candidate": {"judged": self.candidate.mean, "unjudged": 1 - self.candidate.mean,
                          "by_stratum": dict(self.candidate.by_stratum)},
            "drop": self.drop,
            "judgment_limited": self.judgment_limited,
            "sensitivity": None if self.sensitivity is None else self.sensitivity.to_dict(),
            "unjudged_candidate_top": len(self.unjudged_rows),
            "limits": dict(self.limits),
            "failures": list(self.failures),
        }


def _by_stratum(values: np.ndarray, query_ids: Sequence[str], strata: Mapping[str, str | None]) -> dict[str, float]:
    groups: dict[str, list[float]] = {}
    for qid, value in zip(query_ids, values):
        name = strata.get(qid)
        if name:
            groups.setdefault(name, []).append(float(value))
    return {name: float(np.mean(v)) for name, v in sorted(groups.items())}


def _augmented(qrels: Qrels, extra: Mapping[str, Sequence[str]], label: int) -> Qrels:
    judgments = {qid: dict(docs) for qid, docs in qrels.judgments.items()}
    for qid, docs in extra.items():
        target = judgments.setdefault(qid, {})
        for doc in docs:
            target[doc] = label
    return Qrels(qrels.source + " (sensitivity)", judgments, qrels.negative_is_judged)


def _condensed(run: Run, qrels: Qrels, query_ids: Sequence[str]) -> Run:
    """The run with every unjudged document removed (a condensed list)."""
    rankings: dict[str, dict[str, float]] = {}
    index = run.index()
    for qid in query_ids:
        i = index.get(qid)
        judged = qrels.judgments.get(qid, {})
        if i is None:
            continue
        a, b = int(run.starts[i]), int(run.starts[i + 1])
        rankings[qid] = {
            str(d): float(s)
            for d, s in zip(run.doc_ids[a:b], run.scores[a:b])
            if is_judged(judged.get(str(d)), qrels.negative_is_judged)
        }
    return Run.from_rankings(run.source + " (condensed)", rankings, run.tag)


def judged_check(
    baseline_run: Run,
    candidate_run: Run,
    baseline_values: PerQuery,
    candidate_values: PerQuery,
    qrels: Qrels,
    query_ids: Sequence[str],
    metric: str,
    strata: Mapping[str, str | None],
    *,
    k: int = 10,
    rel: int = 1,
    max_unjudged: float = 0.3,
    max_judged_drop: float = 0.1,
    material_drop: float = 0.05,
    qrels_style: str = POOLED,
    candidate_qrels: Qrels | None = None,
) -> JudgedCheck:
    """Judged@k of both runs and what follows from it. With ``qrels_style`` relevance-only and
    qrels that judge nothing non-relevant, ``limits_waived`` is set (the module docstring).
    ``candidate_qrels``: the candidate's own judgments when the two sides index different chunks
    (anchored judgments mapped onto each side's corpus); ``qrels`` judges the baseline."""
    name = f"Judged@{k}"
    cand_qrels = qrels if candidate_qrels is None else candidate_qrels
    only_relevant = relevance_only(qrels, query_ids, rel)
    waived = qrels_style == RELEVANCE_ONLY and only_relevant
    base = evaluate(baseline_run, qrels, [name], query_ids, rel=rel).values[name]
    cand = evaluate(candidate_run, cand_qrels, [name], query_ids, rel=rel).values[name]
    baseline = JudgedSide(float(base.mean()) if len(base) else 1.0, _by_stratum(base, query_ids, strata))
    candidate = JudgedSide(float(cand.mean()) if len(cand) else 1.0, _by_stratum(cand, query_ids, strata))
    drop = baseline.mean - candidate.mean
    failures: list[str] = []  # the verdict applies the limits (gate.verdict.rules.failures_of); filled there

    cand_top = top_k(candidate_run, k, query_ids)
    unjudged_rows = []
    for qid in query_ids:
        judged = cand_qrels.judgments.get(qid, {})
        for rank, doc in enumerate(cand_top[qid], start=1):
            if not is_judged(judged.get(doc), cand_qrels.negative_is_judged):
                unjudged_rows.append((qid, doc, rank, "candidate"))

    limited = drop > material_drop and not waived  # declared: an unjudged document is not relevant
    sensitivity = None
    if limited:
        base_top = top_k(baseline_run, k, query_ids)
        tops = {qid: list(dict.fromkeys(base_top[qid] + cand_top[qid])) for qid in query_ids}
        union_base, union_cand = _unjudged_in(tops, qrels), _unjudged_in(tops, cand_qrels)
        highest = max((label for label in (qrels.highest_label(), cand_qrels.highest_label()) if label is not None),
                      default=None)
        top_grade = 1 if highest is None else highest
        top_grade = max(top_grade, rel)

        def delta(qb: Qrels, qc: Qrels, b: Run, c: Run) -> float:
            vb = evaluate(b, qb, [metric], query_ids, rel=rel).values[metric]
            vc = evaluate(c, qc, [metric], query_ids, rel=rel).values[metric]
            return float((vc - vb).mean()) if len(vb) else 0.0

        def augmented(label: int) -> float:
            return delta(_augmented(qrels, union_base, label), _augmented(cand_qrels, union_cand, label),
                         baseline_run, candidate_run)

        sensitivity = Sensitivity(
            unjudged_in_union=len({(q, d) for union in (union_base, union_cand) for q, docs in union.items()
                                   for d in docs}),
            delta_unjudged_as_zero=augmented(0),
            delta_unjudged_as_top=augmented(top_grade),
            delta_condensed=delta(qrels, cand_qrels, _condensed(baseline_run, qrels, query_ids),
                                  _condensed(candidate_run, cand_qrels, query_ids)),
            top_grade=top_grade,
        )
    return JudgedCheck(k, baseline, candidate, drop, limited, sensitivity, tuple(unjudged_rows), tuple(failures),
                       {"max_unjudged": None if waived else max_unjudged,
                        "max_judged_drop": None if waived else max_judged_drop,
                        "material_drop": material_drop},
                       relevance_only=only_relevant, query_count=len(query_ids), limits_waived=waived)


def _unjudged_in(tops: Mapping[str, Sequence[str]], qrels: Qrels) -> dict[str, list[str]]:
    """The documents of ``tops`` (query -> documents) that ``qrels`` leaves unjudged."""
    return {qid: [d for d in docs if not is_judged(qrels.judgments.get(qid, {}).get(d), qrels.negative_is_judged)]
            for qid, docs in tops.items()}


def relevance_only(qrels: Qrels, query_ids: Sequence[str], rel: int) -> bool:
    """Whether the qrels judge only relevant documents of ``query_ids``: some judgment, and none
    that is judged (see :func:`is_judged`) with a label below ``rel``."""
    return judges_only_relevant(qrels, rel, query_ids)


def write_unjudged(path: str | Path, rows: Sequence[tuple[str, str, int, str]]) -> Path:
    """``unjudged.tsv`` for the next judging round: qid, docno, rank, run."""
    lines = ["query_id\tdoc_id\trank\trun"] + [f"{q}\t{d}\t{r}\t{run}" for q, d, r, run in rows]
    return write_text_atomic(path, "\n".join(lines) + "\n")
