"""Per-query evaluation of one run against the qrels, trec_eval-compatible.

* :func:`gate.inputs.universe.query_universe` decides which queries are evaluated: the
  golden queries that have at least one qrels entry (all qrels queries when there is
  no query file), in UTF-8 byte order of their ids.
* :func:`evaluate` scores every measure on every universe query at once with
  numpy segment operations. A universe query absent from the run scores 0 on
  every measure (trec_eval ``-c``); run queries outside the universe are
  ignored. Rows are ranked in trec_eval order (score descending, compared as
  C floats like trec_eval 9.x, then docno descending; the rank column is
  ignored), see :mod:`gate.evaluation.measures.ordering`.

Labels: a document is relevant for a binary measure when its label is
``>= rel``; only positive labels carry nDCG gain. A negative label is
"in the pool, unjudged" (trec_eval) unless ``Qrels.negative_is_judged``, in
which case it is judged non-relevant; either way it gains nothing and is never
relevant, and the choice only affects ``Judged@k``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from gate.evaluation.label_join import join_labels
from gate.evaluation.measures import Measure, parse_measure
from gate.evaluation.measures.ordering import compared_scores, concatenated_ranges, tie_at_cutoff, trec_order
from gate.evaluation.measures.ranking import Ranking
from gate.inputs.readers.records import Qrels, Run


@dataclass(frozen=True)
class PerQuery:
    """Per-query values of every evaluated measure, aligned to ``query_ids``."""

    query_ids: tuple[str, ...]
    values: dict[str, np.ndarray]  # canonical measure name -> float64 aligned to query_ids
    missing: tuple[str, ...]  # universe queries absent from the run (they score 0, trec_eval -c)
    extra: tuple[str, ...]  # run queries outside the universe (ignored)
    no_relevant: tuple[str, ...]  # universe queries with no doc with label >= rel (for the primary rel)
    ties: dict[str, np.ndarray]  # cutoff measure name -> bool per query: equal scores straddle rank k
    rel: int = 1  # the primary rel: fills the rel of measure names that leave it open

    def key(self, measure: Measure | str) -> str:
        """The name under which ``measure`` is stored.

        A string that is already a key (a canonical name, e.g. from iterating
        :attr:`values`) is used as is; otherwise the measure's open rel is
        filled with :attr:`rel`, as :func:`evaluate` did (``AP`` -> ``AP(rel=2)``).
        """
        if isinstance(measure, str) and measure in self.values:
            return measure
        name = str(parse_measure(measure).with_default_rel(self.rel))
        if name not in self.values:
            raise KeyError(f"measure {name} was not evaluated (have: {', '.join(self.values)})")
        return name

    def __getitem__(self, measure: Measure | str) -> np.ndarray:
        return self.values[self.key(measure)]

    def subset(self, query_ids: Sequence[str]) -> PerQuery:
        """The same values restricted to ``query_ids`` (in the order given)."""
        position = {q: i for i, q in enumerate(self.query_ids)}
        try:
            index = np.array([position[q] for q in query_ids], dtype=np.int64)
        except KeyError as missing:
            raise KeyError(f"query {missing} is not in this evaluation") from None
        keep = set(query_ids)
        return PerQuery(
            query_ids=tuple(query_ids),
            values={name: values[index] for name, values in self.values.items()},
            missing=tuple(q for q in self.missing if q in keep),
            extra=self.extra,
            no_relevant=tuple(q for q in self.no_relevant if q in keep),
            ties={name: flags[index] for name, flags in self.ties.items()},
            rel=self.rel,
        )

    def mean(self, measure: Measure | str) -> float:
        """Mean over all ``query_ids`` (missing queries count as 0, like trec_eval -c).

        0.0 when there are no queries, as trec_eval prints for ``num_q = 0``.
        """
        values = self[measure]
        return float(np.mean(values)) if len(values) else 0.0


def _qrels_arrays(judgments: Mapping[str, Mapping[str, int]], qids: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    sizes = np.zeros(len(qids), dtype=np.int64)
    chunks: list[np.ndarray] = []
    for i, qid in enumerate(qids):
        docs = judgments.get(qid)
        if docs:
            sizes[i] = len(docs)
            chunks.append(np.fromiter(docs.values(), dtype=np.int64, count=len(docs)))
    labels = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int64)
    return np.repeat(np.arange(len(qids), dtype=np.int64), sizes), labels


@dataclass(frozen=True)
class OrderedLabels:
    """The qrels labels :func:`evaluate_ordered` joined, in trec_eval order: query ``i`` (of the
    query list) has ``retrieved[i]`` rows, the first ``kept_lens[i]`` of which have their label
    (NONPOOL: unjudged) at ``labels[kept_starts[i]:kept_starts[i + 1]]`` and their score, as
    compared, at ``scores[...]`` of the same slots."""

    query_ids: tuple[str, ...]
    retrieved: np.ndarray
    kept_lens: np.ndarray
    kept_starts: np.ndarray
    labels: np.ndarray
    scores: np.ndarray
    run_order: np.ndarray | None = None  # trec_order of the run's own rows, when they are the rows evaluated

    @property
    def full_depth(self) -> bool:
        """Every retrieved row has its label (some measure looks at the whole ranking)."""
        return bool(np.array_equal(self.kept_lens, self.retrieved))


def evaluate(
    run: Run,
    qrels: Qrels,
    measures: Sequence[Measure | str],
    query_ids: Sequence[str],
    *,
    rel: int = 1,
) -> PerQuery:
    """Score ``measures`` of ``run`` on each of ``query_ids`` (usually ``query_universe(...).query_ids``).

    ``rel`` is the primary binary threshold: it fills measures whose name does
    not fix rel (``AP`` becomes ``AP(rel=2)`` for ``rel=2``) and defines
    :attr:`PerQuery.no_relevant`. Values are keyed by canonical measure name.
    """
    return _evaluate(run, qrels, measures, query_ids, rel, keep=False)[0]


def evaluate_ordered(run: Run, qrels: Qrels, measures: Sequence[Measure | str], query_ids: Sequence[str], *,
                     rel: int = 1) -> tuple[PerQuery, OrderedLabels]:
    """:func:`evaluate`, and the labels it joined in trec_eval order (for the movement lookups,
    which then need no second join)."""
    per_query, ordered = _evaluate(run, qrels, measures, query_ids, rel, keep=True)
    assert ordered is not None  # keep=True
    return per_query, ordered


def _resolved(measures: Sequence[Measure | str], rel: int) -> tuple[int, dict[str, Measure]]:
    """``rel`` checked, and the measures parsed with it as their default, each name once."""
    if isinstance(rel, bool) or not isinstance(rel, (int, np.integer)) or rel < 1:
        raise ValueError(f"rel must be a positive integer, got {rel!r}")
    rel = int(rel)
    resolved: dict[str, Measure] = {}
    for m in measures:
        measure = parse_measure(m).with_default_rel(rel)
        resolved.setdefault(str(measure), measure)
    return rel, resolved


@dataclass(frozen=True)
class _UniverseRows:
    """The run's rows of the universe's queries, grouped in universe order (a missing query: none)."""

    missing: tuple[str, ...]  # universe queries the run lacks
    extra: tuple[str, ...]  # run queries outside the universe
    retrieved: np.ndarray  # rows per universe query
    starts: np.ndarray  # where each query's rows start (n + 1)
    own_rows: bool  # the run's rows in the run's order (its trec order is the run's)
    scores: np.ndarray  # float64
    doc_ids: np.ndarray


def _universe_rows(run: Run, qids: tuple[str, ...]) -> _UniverseRows:
    n = len(qids)
    universe = set(qids)
    run_index = run.index()
    where = np.fromiter((run_index.get(q, -1) for q in qids), dtype=np.int64, count=n)
    missing = tuple(q for q, w in zip(qids, where) if w < 0)
    extra = tuple(q for q in run.query_ids if q not in universe)

    # Rows of the universe queries, grouped in universe order (missing = empty).
    run_starts = np.asarray(run.starts, dtype=np.int64)
    present = np.flatnonzero(where >= 0)
    retrieved = np.zeros(n, dtype=np.int64)
    retrieved[present] = run_starts[where[present] + 1] - run_starts[where[present]]
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(retrieved, out=starts[1:])
    own_rows = len(present) == len(run.query_ids) and np.array_equal(where[present], np.arange(len(present)))
    if own_rows:  # the run's rows in the run's order: its trec order is the run's
        scores, doc_ids = run.scores, run.doc_ids
    else:
        rows = concatenated_ranges(run_starts[where[present]], retrieved[present])
        scores, doc_ids = run.scores[rows], run.doc_ids[rows]
    scores = np.asarray(scores, dtype=np.float64)
    return _UniverseRows(missing, extra, retrieved, starts, bool(own_rows), scores, doc_ids)


def _depth(resolved: dict[str, Measure]) -> int | None:
    """The deepest rank a measure reads; None: every row (a measure without a cutoff)."""
    cutoffs = [m.cutoff for m in resolved.values()]
    if any(c is None for c in cutoffs):
        return None
    return max((c for c in cutoffs if c is not None), default=0)


def _evaluate(run: Run, qrels: Qrels, measures: Sequence[Measure | str], query_ids: Sequence[str], rel: int,
              keep: bool) -> tuple[PerQuery, OrderedLabels | None]:
    rel, resolved = _resolved(measures, rel)
    qids = tuple(query_ids)
    if len(set(qids)) != len(qids):
        raise ValueError("query_ids has duplicates")
    n = len(qids)
    rows = _universe_rows(run, qids)
    retrieved, starts, doc_ids = rows.retrieved, rows.starts, rows.doc_ids

    perm = trec_order(starts, rows.scores, doc_ids)
    ordered_scores = compared_scores(rows.scores)[perm]

    ties: dict[str, np.ndarray] = {}
    for name, measure in resolved.items():
        if measure.cutoff is not None:
            ties[name] = tie_at_cutoff(starts, ordered_scores, measure.cutoff)
    if not keep:
        del ordered_scores  # a float per row, no longer needed while the labels are joined

    # Only the rows some measure looks at are joined with the qrels.
    depth = _depth(resolved)
    if depth is None:
        kept_lens = retrieved
        kept = perm
    else:
        kept_lens = np.minimum(retrieved, depth)
        kept = perm[concatenated_ranges(starts[:-1], kept_lens)]
    kept_starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(kept_lens, out=kept_starts[1:])
    seg = np.repeat(np.arange(n, dtype=np.int64), kept_lens)
    rank = np.arange(len(kept), dtype=np.int64) - kept_starts[seg] + 1

    labels = join_labels(qrels.judgments, qids, doc_ids, kept, kept_lens, kept_starts)

    qrels_seg, qrels_labels = _qrels_arrays(qrels.judgments, qids)
    ranking = Ranking(
        n_queries=n,
        retrieved=retrieved,
        seg=seg,
        rank=rank,
        labels=labels,
        qrels_seg=qrels_seg,
        qrels_labels=qrels_labels,
        negative_is_judged=bool(qrels.negative_is_judged),
        depth=depth,
    )
    values = {name: measure.compute(ranking) for name, measure in resolved.items()}
    has_relevant = ranking.num_relevant(rel) > 0
    no_relevant = tuple(q for q, ok in zip(qids, has_relevant.tolist()) if not ok)
    per_query = PerQuery(
        query_ids=qids,
        values=values,
        missing=rows.missing,
        extra=rows.extra,
        no_relevant=no_relevant,
        ties=ties,
        rel=rel,
    )
    if not keep:
        return per_query, None
    kept_scores = ordered_scores if depth is None else ordered_scores[concatenated_ranges(starts[:-1], kept_lens)]
    return per_query, OrderedLabels(qids, retrieved, kept_lens, kept_starts, labels, kept_scores,
                                    perm if rows.own_rows else None)
