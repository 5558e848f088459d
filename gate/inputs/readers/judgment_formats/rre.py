"""RRE (Rated Ranking Evaluator) ``ratings.json``, and Quepid's RRE export.

RRE: ``{"index", "id_field", "topics": [{"description", "query_groups": [{"name",
"queries": [{"template", "placeholders": {"$query": TEXT}}], "relevant_documents": ...}]}]}``.
Quepid's RRE export has no topics: ``{"id_field", "index", "template", "queries": [...]}``
with ``relevant_documents`` on each query. ``relevant_documents`` takes RRE's two shapes:
``{"docid": {"gain": 3}}`` (``rating`` is read as ``gain`` is, as RRE reads it) or grouped
by gain, ``{"3": ["docid", ...]}``. A query's own ``relevant_documents`` replaces its group's
(as RRE's Engine reads them); a group's variants each get the group's judgments, as their own
query (keyed by text); two variants of a group whose texts match (``fender``, ``fender ``) are
refused, naming both. The text is the ``placeholders`` value of ``query_placeholder`` (RRE's
top-level option, ``$query`` by default).
"""

from __future__ import annotations

from typing import Any

from gate.common import limits
from gate.inputs.readers.judgment_formats import model
from gate.inputs.readers.judgment_formats.model import TOP, JudgmentFile, Rating, at, expect, member
from gate.inputs.readers.judgment_formats.text_keys import query_text

FORMAT = "rre"


def is_rre(value: Any) -> bool:
    return isinstance(value, dict) and ("topics" in value or ("queries" in value and "id_field" in value))


def read_rre(path: str, body: Any | None = None) -> JudgmentFile:
    body = model.load_json(path, "an RRE ratings file") if body is None else body
    expect(path, TOP, body, dict, "an object with 'topics'")
    placeholder = body.get("query_placeholder", "$query")
    expect(path, "query_placeholder", placeholder, str, "a string")
    ratings: list[Rating] = []
    queries: dict[str, None] = {}
    if "topics" in body:
        for t, topic in enumerate(member(path, TOP, body, "topics", list, "an array")):
            expect(path, f"topics[{t}]", topic, dict, "an object with 'query_groups'")
            groups = member(path, f"topics[{t}]", topic, "query_groups", list, "an array")
            for g, group in enumerate(groups):
                where = f"topics[{t}].query_groups[{g}]"
                expect(path, where, group, dict, "an object with 'queries'")
                ratings += _group(path, where, group, placeholder, queries)
    else:
        ratings += _group(path, TOP, body, placeholder, queries)
    return JudgmentFile(path, FORMAT, True, tuple(ratings), tuple(queries))


def _group(path: str, where: str, group: dict, placeholder: str, queries: dict[str, None]) -> list[Rating]:
    shared = group.get("relevant_documents")
    out: list[Rating] = []
    variants = member(path, where, group, "queries", list, "an array of queries")
    seen: dict[str, str] = {}  # text -> the variant that first had it, in this group
    for q, variant in enumerate(variants):
        here = f"{where}.queries[{q}]" if where != TOP else f"queries[{q}]"
        expect(path, here, variant, dict, "an object with 'placeholders'")
        holders = member(path, here, variant, "placeholders", dict, "an object")
        if placeholder not in holders:
            raise at(path, f"{here}.placeholders", f"missing '{limits.shorten(placeholder)}' (the query text)")
        text = query_text(path, f"{here}.placeholders", expect(path, f"{here}.placeholders", holders[placeholder],
                                                                str, "a string"))
        first = seen.setdefault(text, here)
        if first != here:  # named here: the shared judgments' own path is the same for both variants
            raise at(path, here, f"query text '{limits.shorten(text)}' is also {first}'s (texts are matched with "
                                 "whitespace collapsed and Unicode NFC): a variant listed twice")
        queries.setdefault(text)
        own = variant.get("relevant_documents")
        if own is not None:
            out += _relevant(path, f"{here}.relevant_documents", own, text)
        elif shared is not None:
            out += _relevant(path, f"{where}.relevant_documents", shared, text)
        else:
            raise at(path, here, "missing 'relevant_documents' (on the query or its group)")
    return out


def _relevant(path: str, where: str, docs: Any, text: str) -> list[Rating]:
    """Both of RRE's shapes: by document (``{"d1": {"gain": 3}}``) or by gain (``{"3": ["d1"]}``);
    like RRE, the first entry's value decides which."""
    expect(path, where, docs, dict, "an object")
    if docs and isinstance(next(iter(docs.values())), list):
        return _by_gain(path, where, docs, text)
    out: list[Rating] = []
    for key, value in docs.items():
        here = f"{where}.{limits.shorten(key)}"
        doc = model.doc_id(path, None, key, where)
        expect(path, here, value, dict, "an object with 'gain'")
        grade = value["gain"] if "gain" in value else value.get("rating")
        if grade is None:
            raise at(path, here, "missing 'gain'")
        out.append(Rating(text, doc, model.whole_rating(path, None, grade, f"{here}.gain"), here))
    return out


def _by_gain(path: str, where: str, docs: dict, text: str) -> list[Rating]:
    out: list[Rating] = []
    for key, value in docs.items():
        here = f"{where}.{limits.shorten(key)}"
        grade = model.whole_rating(path, None, key, here)
        for i, item in enumerate(expect(path, here, value, list, "an array of document ids")):
            out.append(Rating(text, model.doc_id(path, None, item, f"{here}[{i}]"), grade, f"{here}[{i}]"))
    return out
