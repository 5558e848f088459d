"""Golden query readers: TSV ``qid<TAB>text`` and JSON Lines.

The format follows the extension (``.gz`` stripped first): ``.jsonl`` and
``.json`` are JSON Lines, anything else (``.tsv``, ``.txt``, TREC topic files
such as ``topics.dl19-passage.txt``) is TSV.

TSV: the line is split on its first tab; the id is the part before it, the
text (surrounding blanks stripped) the rest, which must not be empty.

JSONL: one object per line; the id is ``query_id``, ``_id`` or ``qid`` (first
present, a string or an integer), ``text`` a non-empty string, ``stratum`` an
optional string.  Other fields go to ``metadata``; a ``metadata`` object (as in
BEIR ``queries.jsonl``) is merged into it.

Duplicate query ids are errors.

:func:`load_queries` (a file, a BEIR folder or an ``irds:`` id, as a config or an option names
them) refuses a source that holds no query, saying why (an empty file, only comments).
:func:`read_query_ids` reads a list of query ids (``tuning.queries``), one per line.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any

from gate.common import limits
from gate.common.errors import InputError
from gate.inputs.readers.beir_folder import beir_file, beir_folder_of
from gate.inputs.readers.fields import check_id, check_json_value, check_text, parse_json_line
from gate.inputs.readers.format_hints import query_file_hint
from gate.inputs.readers.irds import load_irds_queries
from gate.inputs.readers.records import Query, QuerySet
from gate.inputs.readers.textlines import iter_lines, strip_gz, why_no_data

__all__ = ["load_queries", "read_queries", "read_queries_tsv", "read_queries_jsonl", "is_jsonl", "ID_KEYS",
           "read_query_ids", "load_query_ids", "beir_queries"]

ID_KEYS = ("query_id", "_id", "qid")


def is_jsonl(path: str | os.PathLike) -> bool:
    return strip_gz(path).lower().endswith((".jsonl", ".json"))


def read_queries(path: str | os.PathLike) -> QuerySet:
    """Read golden queries from a TSV or JSONL file (``.gz`` transparent)."""
    return read_queries_jsonl(path) if is_jsonl(path) else read_queries_tsv(path)


def _collect(src: str, items: Iterable[tuple[int, Query]]) -> QuerySet:
    seen: dict[str, int] = {}
    out: list[Query] = []
    for lineno, q in items:
        first = seen.setdefault(q.query_id, lineno)
        if first != lineno:
            raise InputError(src, lineno, f"duplicate query id '{q.query_id}' (first at line {first})")
        out.append(q)
    return QuerySet(source=src, queries=tuple(out))


def read_queries_tsv(path: str | os.PathLike) -> QuerySet:
    src = str(path)

    def items() -> Iterator[tuple[int, Query]]:
        for lineno, line in iter_lines(path, max_line=limits.MAX_QUERY_LINE_BYTES, what="a query line"):
            qid, tab, text = line.partition("\t")
            qid = qid.strip()
            if not tab:
                raise InputError(src, lineno, "expected 'qid<TAB>text', found no tab" + query_file_hint(line, src))
            if not qid:
                raise InputError(src, lineno, "empty query id")
            check_id(src, lineno, qid, "query id")
            text = text.strip()
            if not text:
                raise InputError(src, lineno, f"empty text for query '{qid}'")
            check_text(src, lineno, text, f"the text of query '{limits.shorten(qid)}'",
                       max_chars=limits.MAX_QUERY_CHARS)
            yield lineno, Query(qid, text)

    return _collect(src, items())


def query_from_json(src: str, lineno: int | None, obj: Any) -> Query:
    """A Query from one decoded JSON object (JSONL line or BEIR record)."""
    if not isinstance(obj, dict):
        raise InputError(src, lineno, f"expected a JSON object, got {type(obj).__name__}")
    key = next((k for k in ID_KEYS if k in obj), None)
    if key is None:
        raise InputError(src, lineno, "missing query id (one of 'query_id', '_id', 'qid')")
    qid = obj[key]
    if isinstance(qid, bool) or not isinstance(qid, (str, int)):
        raise InputError(src, lineno, f"query id '{key}' must be a string or an integer, got {type(qid).__name__}")
    qid = str(qid).strip()
    if not qid:
        raise InputError(src, lineno, "empty query id")
    check_id(src, lineno, qid, "query id")
    if "text" not in obj:
        raise InputError(src, lineno, f"missing 'text' for query '{qid}'")
    text = obj["text"]
    if not isinstance(text, str):
        raise InputError(src, lineno, f"'text' of query '{qid}' must be a string, got {type(text).__name__}")
    text = text.strip()
    if not text:
        raise InputError(src, lineno, f"empty text for query '{qid}'")
    check_text(src, lineno, text, f"the text of query '{limits.shorten(qid)}'", max_chars=limits.MAX_QUERY_CHARS)
    stratum = obj.get("stratum")
    if stratum is not None and not isinstance(stratum, str):
        raise InputError(src, lineno, f"'stratum' of query '{qid}' must be a string, got {type(stratum).__name__}")
    if stratum is not None:
        check_id(src, lineno, stratum, f"stratum of query '{limits.shorten(qid)}'")
    check_json_value(src, lineno, obj, f"query '{limits.shorten(qid)}'")
    metadata: dict[str, object] = {}
    nested = obj.get("metadata")
    if isinstance(nested, dict):
        metadata.update(nested)
    for k, v in obj.items():
        if k in ("text", "stratum", key) or (k == "metadata" and isinstance(nested, dict)):
            continue
        metadata[k] = v
    return Query(qid, text, stratum, metadata)


def read_queries_jsonl(path: str | os.PathLike) -> QuerySet:
    src = str(path)

    def items() -> Iterator[tuple[int, Query]]:
        for lineno, line in iter_lines(path, max_line=limits.MAX_QUERY_LINE_BYTES, what="a query line"):
            try:
                obj = parse_json_line(src, lineno, line)
            except InputError:
                if lineno == 1 and line.lstrip().startswith("[") and not line.rstrip().endswith("]"):
                    raise InputError(src, lineno,
                                     "expected JSON Lines (one object per line), found a JSON array") from None
                raise
            yield lineno, query_from_json(src, lineno, obj)

    return _collect(src, items())


def beir_queries(folder: str | os.PathLike) -> QuerySet:
    """Every query of a BEIR folder, ``queries.jsonl``."""
    return read_queries_jsonl(beir_file(folder, "queries.jsonl"))


def load_queries(spec: str | os.PathLike) -> QuerySet:
    """Queries from a file (TSV / JSONL), a BEIR folder (``DIR`` or ``DIR#split=<name>``: every
    query of the folder either way), or ``irds:<id>[#field=<name>]``; a source with no query is
    an :class:`InputError` that says why."""
    text = os.fspath(spec)
    if text.startswith("irds:"):
        queries = load_irds_queries(text)
    else:
        folder = beir_folder_of(text)
        queries = beir_queries(folder.path) if folder is not None else read_queries(text)
    if not len(queries):
        why = why_no_data(queries.source)
        raise InputError(queries.source, None, f"no queries{f' ({why})' if why else ''}")
    return queries


def read_query_ids(path: str | os.PathLike) -> list[str]:
    """Query ids listed in a file, in file order (``tuning.queries``, ``sweep --tuning``).

    * ``.jsonl`` / ``.json`` (``.gz`` stripped): JSON Lines query records, read as
      :func:`read_queries_jsonl` reads them; their ids.
    * Anything else is text, one query id per line: the line's text up to its first tab (so a
      ``qid<TAB>text`` query file lists its ids too), surrounding blanks stripped. An id that
      holds blanks is refused (``q1 q2`` on one line is two ids written wrongly); such an id
      goes in a YAML list in the config.
    * Blank lines, and lines whose first non-blank character is ``#``, are skipped, as in every
      text input (so an id that starts with ``#`` goes in a YAML list too).
    * An id listed twice is an error naming both lines. A file with no id gives ``[]``: the
      tuning check then says that the split names no judged query, as for ``queries: []``.
    """
    if is_jsonl(path):
        return read_queries_jsonl(path).ids()
    src = str(path)
    seen: dict[str, int] = {}
    for lineno, line in iter_lines(path, max_line=limits.MAX_QUERY_LINE_BYTES, what="a query id line"):
        qid = line.partition("\t")[0].strip()
        if not qid:
            raise InputError(src, lineno, "empty query id (the line starts with a tab)")
        if any(c.isspace() for c in qid):
            raise InputError(src, lineno, f"{limits.shorten(repr(qid), 60)} holds blanks: give one query id per "
                                          "line (an id with blanks in it goes in a YAML list in the config)")
        check_id(src, lineno, qid, "query id")
        first = seen.setdefault(qid, lineno)
        if first != lineno:
            raise InputError(src, lineno, f"duplicate query id '{limits.shorten(qid)}' (first at line {first})")
    return list(seen)


def load_query_ids(spec: str | os.PathLike) -> list[str]:
    """Query ids from a list of ids (:func:`read_query_ids`), a BEIR folder or an ``irds:`` id."""
    text = os.fspath(spec)
    if text.startswith("irds:"):
        return load_irds_queries(text).ids()
    folder = beir_folder_of(text)
    return beir_queries(folder.path).ids() if folder is not None else read_query_ids(text)
