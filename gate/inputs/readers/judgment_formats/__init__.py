"""The judgment formats search teams keep, beside TREC qrels: detection, reading, query ids.

Detection is by content, then extension: a file whose first non-blank character is ``{`` is
JSON, and its keys say which format (``requests``: ``_rank_eval``; ``judgmentRatings``:
Search Relevance; ``topics``, or ``queries`` with ``id_field``: RRE); a file whose first line
is a Quepid header (``query,docid,rating``, or the detailed export's) is a Quepid CSV. Any
other ``.json`` or ``.csv`` file is refused in one line naming the formats; anything else is
left to the TREC / BEIR qrels reader.
"""

from __future__ import annotations

import csv
import os
import zlib
from typing import Any

from gate.common import limits
from gate.common.errors import InputError
from gate.inputs.readers.anchored import is_anchored_file
from gate.inputs.readers.judgment_formats.model import JudgmentFile, load_json, place, rating_error
from gate.inputs.readers.judgment_formats.quepid import quepid_columns, read_quepid_csv
from gate.inputs.readers.judgment_formats.rank_eval import is_rank_eval, read_rank_eval
from gate.inputs.readers.judgment_formats.rre import is_rre, read_rre
from gate.inputs.readers.judgment_formats.search_relevance import is_search_relevance, read_search_relevance
from gate.inputs.readers.judgment_formats.text_keys import ids_for_texts
from gate.inputs.readers.records import Qrels, Query, QuerySet
from gate.inputs.readers.textlines import UTF8_BOM, open_binary, strip_gz

__all__ = ["JudgmentFile", "read_judgment_file", "judgment_format", "judgments_to_qrels", "judged_queries",
           "FORMATS_NAMED"]

FORMATS_NAMED = ("Elasticsearch/OpenSearch _rank_eval (requests), OpenSearch Search Relevance "
                 "(judgmentRatings), RRE ratings.json (topics), Quepid CSV (query,docid,rating)")
_SNIFF_BYTES = 64 * limits.KIB


def _head(path: str) -> str:
    """The file's first bytes as text (the BOM dropped), for detection only."""
    try:
        with open_binary(path) as handle:
            data = handle.read(_SNIFF_BYTES)
    except (InputError, OSError, EOFError, zlib.error):
        return ""  # a broken file: the reader it goes to says what is wrong, at its line
    if data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM):]
    return data.decode("utf-8", "replace")


def judgment_format(path: str | os.PathLike) -> str | None:
    """``json`` (one of the JSON formats), ``quepid``, or None (TREC / BEIR qrels)."""
    src = os.fspath(path)
    if not os.path.isfile(src):
        return None
    head = _head(src)
    suffix = strip_gz(src).lower().rsplit(".", 1)[-1]
    if head.lstrip().startswith("{") or suffix == "json":
        return "json"
    first = head.splitlines()[0] if head.strip() else ""
    header = next(csv.reader([first]), []) if first else []
    if quepid_columns(header) is not None or suffix == "csv":
        return "quepid"
    return None


def read_judgment_file(path: str | os.PathLike) -> JudgmentFile | None:
    """The file read in the format it holds; None when it is TREC / BEIR qrels."""
    src = os.fspath(path)
    kind = judgment_format(src)
    if kind == "quepid":
        return read_quepid_csv(src)
    if kind is None:
        return None
    if is_anchored_file(src):
        raise InputError(src, None, "holds judgments anchored to documents and spans (doc_id / chunk_id, grade): "
                                    "they are mapped onto a corpus's chunks, which `retrieval-gate run` does with "
                                    "the config's corpus (golden.qrels); this command takes chunk-id qrels")
    body: Any = load_json(src, "a judgment file")
    for test, reader in ((is_rank_eval, read_rank_eval), (is_search_relevance, read_search_relevance),
                         (is_rre, read_rre)):
        if test(body):
            return reader(src, body)
    keys = ", ".join(repr(limits.shorten(k, 20)) for k in list(body)[:4]) if isinstance(body, dict) else ""
    raise InputError(src, None, f"not a judgment format the gate reads (keys {keys or 'none'}): expected "
                                f"{FORMATS_NAMED}, or TREC qrels")


def judgments_to_qrels(judged: JudgmentFile, queries: QuerySet | None = None) -> Qrels:
    """Qrels keyed by query id: text keys become golden ids, or ``t-`` ids
    (:mod:`.text_keys`); a document rated twice for one query is refused, naming both places."""
    ids = ids_for_texts(judged.queries, queries) if judged.keyed_by_text else {q: q for q in judged.queries}
    judgments: dict[str, dict[str, int]] = {}
    first: dict[tuple[str, str], Any] = {}
    for rating in judged.ratings:
        qid = ids[rating.query]
        docs = judgments.setdefault(qid, {})
        if rating.doc_id in docs:
            earlier = first[(qid, rating.doc_id)]
            raise rating_error(judged.source, rating, f"duplicate rating of document '{limits.shorten(rating.doc_id)}' "
                                                      f"for query '{limits.shorten(rating.query)}' (first at "
                                                      f"{place(earlier)})")
        docs[rating.doc_id] = rating.rating
        first[(qid, rating.doc_id)] = rating
    return Qrels(source=judged.source, judgments=judgments)


def judged_queries(judged: JudgmentFile, queries: QuerySet | None = None) -> QuerySet | None:
    """The queries a text-keyed file holds, under the ids :func:`judgments_to_qrels` gives them
    (None for a file keyed by id: it holds no text)."""
    if not judged.keyed_by_text:
        return None
    ids = ids_for_texts(judged.queries, queries)
    return QuerySet(judged.source, tuple(Query(ids[text], text) for text in judged.queries))
