"""Quepid's CSV exports: "basic" (``query,docid,rating``; Quepid's client writes ``doc_id``)
and "detailed" (``Team Name,Case Name,Case ID,Query Text,Doc ID,Doc Position,Title,Rating,...``).

Columns are found by header name, case and surrounding blanks ignored: the query is ``query``
or ``Query Text``, the document ``docid``, ``doc_id`` or ``Doc ID``, the grade ``rating``.
A row with an empty document id lists a query nobody rated (Quepid writes ``star trek,,``);
an empty rating lists a document not yet rated: neither is a judgment. Quepid guards query
texts against formula injection with a leading space (``" =cmd"``): matching strips it. A
byte-order mark and CRLF line ends (spreadsheet saves) read as the plain file does.
"""

from __future__ import annotations

import csv
import io

from gate.common.errors import InputError
from gate.inputs.readers.judgment_formats.model import JudgmentFile, Rating, doc_id, read_whole, whole_rating
from gate.inputs.readers.judgment_formats.text_keys import query_text

FORMAT = "quepid"
QUERY_COLUMNS = ("query", "query text")
DOC_COLUMNS = ("docid", "doc_id", "doc id")
RATING_COLUMNS = ("rating",)
HEADER = ("query", "docid", "rating")


def _find(header: list[str], names: tuple[str, ...]) -> int | None:
    folded = [name.strip().lower() for name in header]
    return next((folded.index(n) for n in names if n in folded), None)


def quepid_columns(header: list[str]) -> tuple[int, int, int] | None:
    """(query, doc, rating) column positions of a Quepid header; None when it is none."""
    found = (_find(header, QUERY_COLUMNS), _find(header, DOC_COLUMNS), _find(header, RATING_COLUMNS))
    return None if None in found else found  # type: ignore[return-value]


def _check_named_once(path: str, header: list[str]) -> None:
    """A header naming the query, document or rating column twice is ambiguous: which is read?"""
    folded = [name.strip().lower() for name in header]
    for names in (QUERY_COLUMNS, DOC_COLUMNS, RATING_COLUMNS):
        at = [i + 1 for i, name in enumerate(folded) if name in names]
        if len(at) > 1:
            raise InputError(path, 1, f"the header names the {names[0]!r} column twice (columns "
                                      f"{', '.join(map(str, at))}): which one holds it is ambiguous")


def read_quepid_csv(path: str) -> JudgmentFile:
    rows = csv.reader(io.StringIO(read_whole(path, "a Quepid CSV"), newline=""), strict=True)
    try:
        header = next(rows, None)
        if header is None:
            raise InputError(path, None, "no judgments (the file is empty)")
        columns = quepid_columns(header)
        if columns is None:
            raise InputError(path, 1, f"expected a Quepid header naming {', '.join(HEADER)} (or the detailed "
                                      f"export's Query Text, Doc ID, Rating), got {len(header)} columns")
        _check_named_once(path, header)
        ratings: list[Rating] = []
        queries: dict[str, None] = {}
        texts: dict[str, str] = {}
        for row in rows:
            line = rows.line_num
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise InputError(path, line, f"expected {len(header)} columns like the header, got {len(row)}")
            raw = row[columns[0]]
            text = texts.get(raw) or texts.setdefault(raw, query_text(path, "", raw, line))  # rows repeat a query
            queries.setdefault(text)
            doc, grade = row[columns[1]].strip(), row[columns[2]].strip()
            if not doc or not grade:
                continue
            ratings.append(Rating(text, doc_id(path, line, doc), whole_rating(path, line, grade), "", line))
    except csv.Error as exc:
        raise InputError(path, rows.line_num, f"invalid CSV: {exc}") from None
    return JudgmentFile(path, FORMAT, True, tuple(ratings), tuple(queries))
