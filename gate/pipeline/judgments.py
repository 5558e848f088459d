"""``retrieval-gate judgments convert``, and the unjudged documents exported for labelling tools.

``convert`` reads any judgment source the gate reads (TREC / compact / BEIR qrels, ``irds:``,
``_rank_eval``, Search Relevance, RRE, Quepid CSV; also a run's ``unjudged.tsv``, whose rows
are documents still to rate) and writes it as TREC qrels, a Quepid CSV, a ``_rank_eval`` body
or JSON Lines. Query texts come from a text-keyed source itself, else from ``--queries``; a
text-keyed source converted to a format keyed by id also gets a queries file (``qid<TAB>text``)
so its ``t-`` ids (:mod:`gate.inputs.readers.judgment_formats.text_keys`) can be run.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gate.common import limits
from gate.common.atomic import check_replaceable, write_text_atomic
from gate.common.errors import InputError, UsageError
from gate.inputs.config import Config
from gate.inputs.readers.judgment_formats import (
    JudgmentFile,
    judged_queries,
    judgments_to_qrels,
    read_judgment_file,
)
from gate.inputs.readers.qrels import load_qrels
from gate.inputs.readers.queries import load_queries
from gate.inputs.readers.records import QuerySet
from gate.inputs.readers.textlines import iter_lines
from gate.rendering.judgment_files import (
    Judgment,
    judgments_jsonl,
    quepid_csv,
    queries_tsv,
    rank_eval_body,
    trec_qrels,
)

TARGETS = ("trec", "quepid", "rank-eval", "jsonl")
EXPORTS = ("quepid", "rank-eval")
EXPORT_FILES = {"quepid": "unjudged-quepid.csv", "rank-eval": "unjudged-rank-eval.json"}
UNJUDGED_HEADER = "query_id\tdoc_id\trank\trun"


@dataclass(frozen=True)
class Judgments:
    """What convert reads: rows in source order, and the query texts it knows (id -> text)."""

    source: str
    rows: tuple[Judgment, ...]
    texts: Mapping[str, str]
    keyed_by_text: bool
    lost: tuple[str, ...] = ()  # what the source holds that no written format carries (said, not dropped silently)


@dataclass(frozen=True)
class Converted:
    """What convert wrote: counts, and where (None: standard output)."""

    queries: int
    judgments: int
    to_rate: int
    out: str | None
    queries_out: str | None
    text: str  # the converted file's text (printed when ``out`` is None)
    not_golden: int | None = None  # with --queries: judged queries that are no golden query
    lost: tuple[str, ...] = ()  # what the source held that the written file does not


def read_judgments(source: str, queries: QuerySet | None) -> Judgments:
    """Any judgment source, with the texts of its queries (module docstring)."""
    if os.path.isfile(source) and _is_unjudged_list(source):
        return _read_unjudged(source, queries)
    judged = read_judgment_file(source) if os.path.isfile(source) else None
    if judged is None:
        qrels = load_qrels(source, queries=queries)
        texts = {q.query_id: q.text for q in queries.queries} if queries is not None else {}
        rows = tuple(Judgment(q.query_id, q.doc_id, q.relevance) for q in qrels)
        return Judgments(source, rows, texts, False)
    qrels = judgments_to_qrels(judged, queries)
    held = judged_queries(judged, queries)
    texts = {q.query_id: q.text for q in (held or queries or QuerySet(source, ())).queries}
    rows = tuple(Judgment(q.query_id, q.doc_id, q.relevance) for q in qrels)
    return Judgments(source, rows, texts, judged.keyed_by_text, _lost(judged))


#: What each source format holds beyond (query, document, rating): no target format carries it.
_NOT_CARRIED = {
    "rank-eval": "each request's own search (request / template_id, params), the metric, and each rating's _index "
                 "(a written _rank_eval body uses the retrieval_gate_query template and --index)",
    "rre": "the topics and query groups (each query variant is written as its own query) and the index / id_field",
}


def _lost(judged: JudgmentFile) -> tuple[str, ...]:
    lost = [_NOT_CARRIED[judged.format]] if judged.format in _NOT_CARRIED else []
    unrated = len(judged.queries) - len({r.query for r in judged.ratings})
    if unrated:
        lost.append(f"{unrated} {'query' if unrated == 1 else 'queries'} with no rating yet")
    return tuple(lost)


def _is_unjudged_list(path: str) -> bool:
    try:
        first = next(iter_lines(path, max_line=limits.MAX_TREC_LINE_BYTES), None)
    except InputError:
        # Not a list of lines (a _rank_eval body on one line longer than a qrels line, say): the
        # reader of what the file holds words any problem, at its place.
        return False
    return first is not None and first[0] == 1 and first[1].rstrip() == UNJUDGED_HEADER


def _read_unjudged(path: str, queries: QuerySet | None) -> Judgments:
    """A run's ``unjudged.tsv`` (query_id, doc_id, rank, run): documents to rate, each once."""
    rows: dict[tuple[str, str], Judgment] = {}
    for lineno, line in iter_lines(path, max_line=limits.MAX_TREC_LINE_BYTES):
        if lineno == 1:
            continue
        fields = line.split("\t")
        if len(fields) != 4:
            raise InputError(path, lineno, f"expected 4 tab-separated fields ({UNJUDGED_HEADER}), got {len(fields)}")
        rows.setdefault((fields[0], fields[1]), Judgment(fields[0], fields[1], None))
    texts = {q.query_id: q.text for q in queries.queries} if queries is not None else {}
    return Judgments(path, tuple(rows.values()), texts, False)


def render_judgments(judged: Judgments, to: str, index: str = "index") -> str:
    """The text of ``judged`` in format ``to``."""
    if to == "quepid":
        _need_texts(judged, "a Quepid CSV keys judgments by query text")
        return quepid_csv(judged.rows, judged.texts)
    if to == "rank-eval":
        return rank_eval_body(judged.rows, judged.texts, index)
    if not any(r.rating is not None for r in judged.rows):
        raise InputError(judged.source, None, f"lists documents still to rate, no judgment: convert it --to quepid or "
                                              f"--to rank-eval (a labelling tool's format), not --to {to}")
    if to == "trec":
        for r in judged.rows:
            if any(c.isspace() for c in r.query_id + r.doc_id):
                raise InputError(judged.source, None, f"query '{limits.shorten(r.query_id)}' / document "
                                                      f"'{limits.shorten(r.doc_id)}' holds a blank, which TREC "
                                                      "qrels cannot hold (--to jsonl can)")
        return trec_qrels(judged.rows)
    return judgments_jsonl(judged.rows, judged.texts)


def _need_texts(judged: Judgments, why: str) -> None:
    missing = [r.query_id for r in judged.rows if r.query_id not in judged.texts]
    if missing:
        raise UsageError(f"{judged.source}: query '{limits.shorten(missing[0])}' has no text ({why}): give "
                         "--queries with the golden queries")


def convert_judgments(source: str, to: str, *, out: str | None = None, queries: str | None = None,
                      queries_out: str | None = None, index: str = "index") -> Converted:
    """``judgments convert``: read ``source``, write it as ``to`` into ``out`` (atomically), and
    the query texts of a text-keyed source into ``queries_out`` (default: beside ``out``)."""
    if to not in TARGETS:
        raise UsageError(f"--to {to!r}: expected one of {', '.join(TARGETS)}")
    golden = load_queries(queries) if queries else None
    judged = read_judgments(source, golden)
    text = render_judgments(judged, to, index)
    if judged.keyed_by_text and to != "quepid" and queries_out is None and out is not None:
        queries_out = str(Path(out).with_suffix("")) + ".queries.tsv"
    _write_converted(judged, text, out, queries_out)
    queried = {r.query_id for r in judged.rows}
    rated = [r for r in judged.rows if r.rating is not None]
    not_golden = None if golden is None else len(queried - set(golden.ids()))
    lost = judged.lost
    textless = len(queried - set(judged.texts)) if to == "rank-eval" else 0
    if textless:  # Elasticsearch would run the template with an empty query: every metric 0
        lost += (f"the query text of {textless} of the requests (their params are empty: give --queries, or fill in "
                 "params.query_string)",)
    return Converted(len(queried), len(rated), len(judged.rows) - len(rated), out, queries_out, text, not_golden,
                     lost)


def _write_converted(judged: Judgments, text: str, out: str | None, queries_out: str | None) -> None:
    """The converted judgments into ``out`` and the query texts into ``queries_out``, both checked
    before either is written."""
    _check_target(out, "--out")
    _check_target(queries_out, "--queries-out")
    if out is not None and queries_out is not None and os.path.abspath(out) == os.path.abspath(queries_out):
        raise UsageError(f"--out and --queries-out both name {out}: the query texts would replace the judgments")
    if out is not None:
        write_text_atomic(out, text)
    if queries_out is not None:
        write_text_atomic(queries_out, queries_tsv({q: judged.texts[q] for q in dict.fromkeys(
            r.query_id for r in judged.rows) if q in judged.texts}))


def _check_target(path: str | None, option: str) -> None:
    """Refuse, before anything is written, a name no new file may be renamed over
    (:func:`gate.common.atomic.check_replaceable`)."""
    if path is None:
        return
    try:
        check_replaceable(path)
    except InputError as error:
        raise UsageError(f"{option} {limits.shorten(path)}: {error.message}; leave --out out to print to standard "
                         "output") from None


@dataclass(frozen=True)
class UnjudgedExport:
    """``judged.export``: the formats asked for, and the golden query texts they carry."""

    formats: tuple[str, ...]
    texts: Mapping[str, str]


def unjudged_export(config: Config) -> UnjudgedExport | None:
    """The export ``judged.export`` asks for, with the golden query texts (read again, only
    when asked); None when it asks for none."""
    if not config.judged.export:
        return None
    queries = load_queries(config.spec(config.golden.queries))
    return UnjudgedExport(config.judged.export, {q.query_id: q.text for q in queries.queries})


def write_unjudged_exports(folder: str | Path, rows: Sequence[tuple[str, str, int, str]],
                           export: UnjudgedExport) -> list[Path]:
    """``unjudged-quepid.csv`` / ``unjudged-rank-eval.json`` beside ``unjudged.tsv``: the
    candidate's unjudged top-k documents, each once per query, with an empty rating to fill in."""
    unique = dict.fromkeys((qid, doc) for qid, doc, _rank, _run in rows)
    listed = tuple(Judgment(qid, doc, None) for qid, doc in unique)
    judged = Judgments("unjudged.tsv", listed, export.texts, False)
    written = []
    for name in export.formats:
        path = Path(folder) / EXPORT_FILES[name]
        write_text_atomic(path, render_judgments(judged, name))
        written.append(path)
    return written
