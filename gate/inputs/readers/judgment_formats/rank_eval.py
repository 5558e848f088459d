"""Elasticsearch / OpenSearch ``_rank_eval`` request bodies.

``{"requests": [{"id", "request" | "template_id", "ratings": [{"_index", "_id", "rating"}]}],
"metric": {...}}``: the query id is the request's ``id``. A document is kept by its ``_id``:
the same ``_id`` rated in two indices for one request with one rating is one judgment (a
document behind two aliases); with two ratings it is refused, as is one (``_index``, ``_id``)
rated twice. A ``rating`` of ``null`` is a document listed to be rated (what
``unjudged-rank-eval.json`` holds): not a judgment, skipped.
"""

from __future__ import annotations

from typing import Any

from gate.common import limits
from gate.inputs.readers.fields import check_id
from gate.inputs.readers.judgment_formats import model
from gate.inputs.readers.judgment_formats.model import JudgmentFile, Rating, at, expect, member

FORMAT = "rank-eval"


def is_rank_eval(value: Any) -> bool:
    return isinstance(value, dict) and "requests" in value


def read_rank_eval(path: str, body: Any | None = None) -> JudgmentFile:
    requests = model.top_array(path, body, "requests", "a _rank_eval body")
    ratings: list[Rating] = []
    queries: dict[str, str] = {}
    for i, request in enumerate(requests):
        where = f"requests[{i}]"
        expect(path, where, request, dict, "an object")
        qid = member(path, where, request, "id", str, "a string").strip()
        if not qid:
            raise at(path, f"{where}.id", "empty request id")
        check_id(path, None, qid, f"{where}.id")
        if qid in queries:
            raise at(path, where, f"duplicate request id '{limits.shorten(qid)}' (first at {queries[qid]})")
        queries[qid] = where
        if "request" not in request and "template_id" not in request:
            raise at(path, where, "missing 'request' or 'template_id' (every rated request names its search)")
        rated = member(path, where, request, "ratings", list, "an array of ratings")
        ratings += _request_ratings(path, where, qid, rated)
    return JudgmentFile(path, FORMAT, False, tuple(ratings), tuple(queries))


def _request_ratings(path: str, where: str, qid: str, rated: list) -> list[Rating]:
    out: list[Rating] = []
    seen: dict[tuple[str, str], str] = {}
    by_doc: dict[str, tuple[int, str]] = {}
    for j, item in enumerate(rated):
        here = f"{where}.ratings[{j}]"
        expect(path, here, item, dict, "an object with '_index', '_id' and 'rating'")
        index = member(path, here, item, "_index", str, "a string")
        if "_id" not in item:
            raise at(path, here, "missing '_id'")
        doc = model.doc_id(path, None, item["_id"], f"{here}._id")
        if "rating" not in item:
            raise at(path, here, "missing 'rating' (null marks a document still to rate)")
        if item["rating"] is None:
            continue
        grade = model.whole_rating(path, None, item["rating"], f"{here}.rating")
        first = seen.setdefault((index, doc), here)
        if first != here:
            raise at(path, here, f"duplicate rating of '{limits.shorten(doc)}' in index '{limits.shorten(index)}' "
                                 f"(first at {first})")
        earlier = by_doc.get(doc)
        if earlier is not None:
            if earlier[0] != grade:
                raise at(path, here, f"'{limits.shorten(doc)}' is rated {grade} here and {earlier[0]} at {earlier[1]} "
                                     "(another index): the gate keys documents by _id alone")
            continue
        by_doc[doc] = (grade, here)
        out.append(Rating(qid, doc, grade, here))
    return out
