"""Judgment files written for other tools: TREC qrels, Quepid CSV, ``_rank_eval`` bodies, JSON Lines.

Every value is data (query texts and ids may be hostile): CSV cells are quoted by the csv
module, and a text cell that a spreadsheet would run as a formula (starting with ``=``, ``+``,
``-``, ``@``, a tab or a CR) gets Quepid's own guard, a leading space: Quepid's export writes
``" =cmd"``, and every reader that strips cells (Quepid's import, the gate's) reads the text
back unchanged. JSON goes through ``json`` (escaped, ASCII-safe where asked).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gate.common.jsontext import json_line

#: First characters a spreadsheet reads as a formula (OWASP's CSV injection list).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
#: The template a written ``_rank_eval`` body's requests use: a multi_match over the index's
#: default fields, valid as written; edit it to the fields your search uses.
TEMPLATE_ID = "retrieval_gate_query"


@dataclass(frozen=True)
class Judgment:
    """One row to write; ``rating`` None: a document listed to be rated."""

    query_id: str
    doc_id: str
    rating: int | None


def guarded(cell: str) -> str:
    """A text cell that no spreadsheet runs as a formula (module docstring)."""
    return " " + cell if cell.startswith(FORMULA_STARTS) else cell


def trec_qrels(rows: Iterable[Judgment]) -> str:
    """``qid 0 docno rel`` lines (rows with no rating are not judgments and are left out)."""
    return "".join(f"{r.query_id} 0 {r.doc_id} {r.rating}\n" for r in rows if r.rating is not None)


def quepid_csv(rows: Iterable[Judgment], texts: Mapping[str, str]) -> str:
    """Quepid's import CSV: ``query,docid,rating`` (an empty rating: not yet rated)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(("query", "docid", "rating"))
    for r in rows:
        writer.writerow((guarded(texts[r.query_id]), guarded(r.doc_id), "" if r.rating is None else r.rating))
    return out.getvalue()


def rank_eval_body(rows: Sequence[Judgment], texts: Mapping[str, str], index: str, k: int = 10) -> str:
    """A ``_rank_eval`` request body: one rated request per query, in first-appearance order,
    through the :data:`TEMPLATE_ID` template (``params.query_string``: the query's text where
    known); a rating of null is a document still to rate (Elasticsearch refuses the body until
    it is filled in, so nothing unrated is evaluated as 0)."""
    requests: dict[str, list[dict]] = {}
    for r in rows:
        requests.setdefault(r.query_id, []).append({"_index": index, "_id": r.doc_id, "rating": r.rating})
    body = {
        "requests": [{"id": qid, "template_id": TEMPLATE_ID,
                      "params": {"query_string": texts[qid]} if qid in texts else {}, "ratings": ratings}
                     for qid, ratings in requests.items()],
        "templates": [{"id": TEMPLATE_ID,
                       "template": {"inline": {"query": {"multi_match": {"query": "{{query_string}}"}}}}}],
        "metric": {"dcg": {"k": k, "normalize": True}},
    }
    return json.dumps(body, indent=2, ensure_ascii=False) + "\n"


def judgments_jsonl(rows: Iterable[Judgment], texts: Mapping[str, str]) -> str:
    """One object per judgment: ``query_id``, ``doc_id``, ``relevance`` (and ``query``, its text)."""
    return "".join(json_line({"query_id": r.query_id, "doc_id": r.doc_id, "relevance": r.rating}
                             | ({"query": texts[r.query_id]} if r.query_id in texts else {}))
                   for r in rows if r.rating is not None)


def queries_tsv(texts: Mapping[str, str]) -> str:
    """``qid<TAB>text`` lines (texts are whitespace-collapsed: no tab or line break inside)."""
    return "".join(f"{qid}\t{text}\n" for qid, text in texts.items())
