"""The query universe: the judged golden queries, in UTF-8 byte order of their ids."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from gate.common.errors import InputError
from gate.inputs.readers.records import Qrels, QuerySet, Run


def _byte_order(ids) -> tuple[str, ...]:
    return tuple(sorted(ids, key=lambda q: q.encode("utf-8")))


@dataclass(frozen=True)
class Universe:
    """The queries a run is evaluated on."""

    query_ids: tuple[str, ...]  # golden queries with at least one qrels entry, UTF-8 byte order
    unjudged: tuple[str, ...]  # golden queries with no qrels entry, left out (byte order)

    def __len__(self) -> int:
        return len(self.query_ids)


def query_universe(qrels: Qrels, queries: QuerySet | None = None) -> Universe:
    """Golden queries that have at least one qrels entry (the qrels' queries when no query file).

    A qrels entry of any label counts, negative ones included. Qrels queries
    that are not golden queries are not evaluated.
    """
    judged = {qid for qid, docs in qrels.judgments.items() if len(docs)}
    if queries is None:
        return Universe(query_ids=_byte_order(judged), unjudged=())
    golden = dict.fromkeys(queries.ids())
    return Universe(
        query_ids=_byte_order(q for q in golden if q in judged),
        unjudged=_byte_order(q for q in golden if q not in judged),
    )


def _examples(ids: Sequence[str], limit: int = 3) -> str:
    if not ids:
        return "none"  # an empty query set or qrels, handed in as objects (the file loaders refuse them)
    shown = ", ".join(repr(q if len(q) <= 40 else q[:37] + "...") for q in list(ids)[:limit])
    return shown + (", ..." if len(ids) > limit else "")


class RankedQueries(Protocol):
    """What :func:`require_overlap` reads of a run: a loaded :class:`Run` or a streamed digest
    (gate.evaluation.streaming.RunDigest) alike."""

    @property
    def source(self) -> str: ...

    @property
    def query_ids(self) -> Sequence[str]: ...

    def __len__(self) -> int: ...


def require_overlap(run: Run | RankedQueries, query_ids: Sequence[str], qrels: Qrels,
                    queries: QuerySet | None = None) -> None:
    """Refuse a comparison that has nothing to compare, naming the input at fault.

    An empty run, an empty universe, or a run none of whose queries is in the
    universe would give "0.0000 -> 0.0000" - a number that means "wrong file",
    not "no change". Partial coverage is fine: missing queries score 0.
    """
    if len(run) == 0:
        raise InputError(run.source, None, "the run has no rows: nothing to compare")
    if not query_ids:
        if queries is not None:
            raise InputError(qrels.source, None, f"no query of {queries.source} is judged here "
                             f"(query ids {_examples(queries.ids())}; judged {_examples(qrels.query_ids())})")
        raise InputError(qrels.source, None, "the qrels judge no query: nothing to compare")
    universe = set(query_ids)
    if not any(q in universe for q in run.query_ids):
        # A judgment file keyed by query text (Quepid, Search Relevance, RRE) read without the
        # queries has digest ids (t-...): no run names them.
        by_text = queries is None and all(q.startswith("t-") and len(q) == 14 for q in universe)
        hint = (f"; {qrels.source} names queries by their text: give the queries (--queries) so its texts meet "
                "the run's query ids") if by_text else ""
        raise InputError(run.source, None, f"none of the run's {len(run.query_ids)} queries is among the "
                         f"{len(universe)} judged ones of {qrels.source}: nothing to compare (run ids "
                         f"{_examples(run.query_ids)}; judged {_examples(sorted(universe))}){hint}")
