"""OpenSearch Search Relevance Workbench judgment lists (the search-relevance plugin).

``{"name", "type": "IMPORT_JUDGMENT", "judgmentRatings": [{"query": TEXT, "ratings":
[{"docId", "rating"}]}]}`` as PUT to ``_plugins/_search_relevance/judgments``, or as a
judgment read back (the same ``judgmentRatings`` inside). The plugin writes ratings as
strings (``"1.000"``); whole numbers are taken, fractions refused
(:func:`~gate.inputs.readers.judgment_formats.model.whole_rating`). Keyed by query text.
"""

from __future__ import annotations

from typing import Any

from gate.inputs.readers.judgment_formats import model
from gate.inputs.readers.judgment_formats.model import JudgmentFile, Rating, at, expect, member
from gate.inputs.readers.judgment_formats.text_keys import query_text

FORMAT = "search-relevance"


def is_search_relevance(value: Any) -> bool:
    return isinstance(value, dict) and "judgmentRatings" in value


def read_search_relevance(path: str, body: Any | None = None) -> JudgmentFile:
    entries = model.top_array(path, body, "judgmentRatings", "a judgment list")
    ratings: list[Rating] = []
    queries: dict[str, None] = {}
    for i, entry in enumerate(entries):
        where = f"judgmentRatings[{i}]"
        expect(path, where, entry, dict, "an object with 'query' and 'ratings'")
        text = query_text(path, f"{where}.query", member(path, where, entry, "query", str, "a string"))
        queries.setdefault(text)
        for j, item in enumerate(member(path, where, entry, "ratings", list, "an array")):
            here = f"{where}.ratings[{j}]"
            expect(path, here, item, dict, "an object with 'docId' and 'rating'")
            if "docId" not in item:
                raise at(path, here, "missing 'docId'")
            if "rating" not in item:
                raise at(path, here, "missing 'rating'")
            doc = model.doc_id(path, None, item["docId"], f"{here}.docId")
            ratings.append(Rating(text, doc, model.whole_rating(path, None, item["rating"], f"{here}.rating"), here))
    return JudgmentFile(path, FORMAT, True, tuple(ratings), tuple(queries))
