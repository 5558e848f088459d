"""Query texts as keys: how a judged text meets the golden queries, and the ids it gets.

* **Matching**: a judged text and a golden query's text match when they are equal after
  Unicode NFC normalisation, stripping, and collapsing every run of whitespace to one space.
  Case is kept: ``Fender`` and ``fender`` are two queries (RRE's own sample rates them as two
  variants, and an engine's analyser may not fold case).
* **Ids**: a judged text that is a golden query gets that query's id. Any other text gets
  ``t-`` and the first 12 hex digits of the SHA-256 of its normalised text: the same text has
  the same id in every version of the file and in every file (a judgment list that grows does
  not renumber its queries, so a baseline measured on it stays comparable), and the id says
  nothing a hostile text could inject.
* A judged text that is no golden query is kept under its ``t-`` id: like a TREC qrels qid
  outside the golden set it is outside the query universe (``judgments convert --queries``
  counts them).
* Two entries whose texts normalise alike are one query: their ratings are merged, and a
  document rated under both is a duplicate (one line naming both places). Two golden queries
  with the same normalised text cannot be told apart by a text key: refused when that text is
  judged.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable

from gate.common import limits
from gate.common.errors import InputError
from gate.inputs.readers.fields import check_text
from gate.inputs.readers.records import QuerySet

_BLANKS = re.compile(r"\s+")
TEXT_ID_PREFIX = "t-"


def normalized(text: str) -> str:
    """The form texts are matched in (module docstring)."""
    return _BLANKS.sub(" ", unicodedata.normalize("NFC", text)).strip()


def text_id(text: str) -> str:
    """The id of a judged text that is no golden query: ``t-`` + 12 hex digits of its digest."""
    return TEXT_ID_PREFIX + hashlib.sha256(normalized(text).encode("utf-8")).hexdigest()[:12]


def query_text(path: str, where: str, value: str, line: int | None = None) -> str:
    """A judged query text, normalised and checked (not empty, within the query text limit)."""
    text = normalized(value)
    prefix = f"{where}: " if where else ""
    if not text:
        raise InputError(path, line, f"{prefix}empty query text")
    return check_text(path, line, text, f"{prefix}query text", max_chars=limits.MAX_QUERY_CHARS)


def golden_ids_by_text(queries: QuerySet, judged: Iterable[str]) -> dict[str, str]:
    """Normalised golden text -> golden query id, for the texts in ``judged``; a judged text two
    golden queries share is refused."""
    wanted = set(judged)
    found: dict[str, str] = {}
    for query in queries.queries:
        key = normalized(query.text)
        if key not in wanted:
            continue
        other = found.setdefault(key, query.query_id)
        if other != query.query_id:
            raise InputError(queries.source, None, f"golden queries '{limits.shorten(other)}' and "
                                                   f"'{limits.shorten(query.query_id)}' have the same text "
                                                   f"'{limits.shorten(key)}', which the judgments key by text: "
                                                   "they cannot be told apart")
    return found


def ids_for_texts(texts: Iterable[str], queries: QuerySet | None) -> dict[str, str]:
    """Judged text -> query id: the golden query's id where the text is one, else its ``t-`` id.
    Two texts whose ``t-`` ids collide (a 48-bit digest: practically never) are refused."""
    texts = list(texts)
    golden = golden_ids_by_text(queries, texts) if queries is not None else {}
    ids: dict[str, str] = {}
    owners: dict[str, str] = {}
    for text in texts:
        qid = golden.get(text) or text_id(text)
        owner = owners.setdefault(qid, text)
        if owner != text and qid not in golden.values():
            raise InputError(None, None, f"the query texts '{limits.shorten(owner)}' and '{limits.shorten(text)}' "
                                         f"have the same digest id '{qid}'")
        ids[text] = qid
    return ids
