"""Qrels reader: TREC ``qid iter docno rel``, compact ``qid docno rel``, BEIR TSV.

* The column count is decided by the first data line (4: TREC, 3: compact);
  a later line with another count is an error.
* A BEIR qrels file (``query-id<TAB>corpus-id<TAB>score`` as its first line)
  has that header skipped and is split on tabs (ids may contain spaces).
* Labels are integers; ``1.5`` and ``1.0`` are errors (integer labels only).
  Negative labels are kept: trec_eval reads them as "in the pool, unjudged".
* A (qid, docno) pair may appear once.
"""

from __future__ import annotations

import os
import re
from itertools import chain

from gate.common.errors import InputError
from gate.common import limits
from gate.inputs.readers.fields import check_id, parse_int_label
from gate.inputs.readers.records import Qrels
from gate.inputs.readers.textlines import iter_lines

__all__ = ["load_qrels", "read_qrels", "BEIR_QRELS_HEADER"]

BEIR_QRELS_HEADER = "query-id\tcorpus-id\tscore"
_SHORT_ID = limits.MAX_ID_BYTES // 4  # shorter than this in characters: within the byte limit
_SHAPES = {4: "'qid iter docno rel'", 3: "'qid docno rel'"}


_BLANKS = " \t\r"
_NOT_BLANK = re.compile(r"[^ \t\r]+")


def _split(line: str) -> list[str]:
    """Fields split on ASCII blanks only, as the run reader splits: a no-break space or a
    U+2028 inside a docno is part of it, not a separator that shifts the columns."""
    return line.split() if line.isascii() else _NOT_BLANK.findall(line)


def parse_label(path: str, lineno: int, text: str) -> int:
    """An integer label: ASCII digits with an optional sign, within 64 bits (no ``1.0``, no ``1_0``)."""
    return parse_int_label(path, lineno, text)


def read_qrels(path: str | os.PathLike) -> Qrels:
    """Read a qrels file (``.gz`` transparent) into :class:`Qrels`."""
    src = str(path)
    judgments: dict[str, dict[str, int]] = {}
    lines = iter_lines(path, max_line=limits.MAX_TREC_LINE_BYTES, what="a qrels line")
    head = next(lines, None)
    if head is None:
        return Qrels(source=src, judgments=judgments)
    tabs = head[0] == 1 and head[1].rstrip(" ") == BEIR_QRELS_HEADER
    if tabs:
        head = next(lines, None)
        if head is None:
            return Qrels(source=src, judgments=judgments)
        width = 3
    else:
        width = len(_split(head[1]))
        if width not in _SHAPES:
            raise InputError(src, head[0], f"expected 4 fields {_SHAPES[4]} or 3 fields {_SHAPES[3]}, got {width}")
    hint = " (BEIR qrels: tab separated)" if tabs else ", like the first line"
    shape = _SHAPES[width]
    for lineno, line in chain((head,), lines):
        fields = [f.strip(_BLANKS) for f in line.split("\t")] if tabs else _split(line)
        if len(fields) != width:
            raise InputError(src, lineno, f"expected {width} fields {shape}{hint}, got {len(fields)}")
        qid, doc, label = fields[0], fields[-2], fields[-1]
        if len(label) < 19 and label.isdecimal() and label.isascii():
            rel = int(label)
        else:
            rel = parse_label(src, lineno, label)
        if not qid or not doc:
            raise InputError(src, lineno, "empty query or document id")
        docs = judgments.get(qid)
        if docs is None:
            check_id(src, lineno, qid, "query id")
            docs = judgments[qid] = {}
        if len(doc) > _SHORT_ID or not doc.isprintable():
            check_id(src, lineno, doc, "document id")
        n = len(docs)
        docs.setdefault(doc, rel)
        if len(docs) == n:
            first, first_group = _first_line(path, tabs, qid, doc)
            group = fields[1] if width == 4 else ""
            extra = ""
            if width == 4 and group != first_group:
                extra = f"; column 2 differs ('{first_group}', '{group}'): multiple judgment groups are not supported"
            raise InputError(
                src, lineno, f"duplicate judgment of document '{limits.shorten(doc)}' for query "
                             f"'{limits.shorten(qid)}' (first at line {first}){extra}"
            )
    return Qrels(source=src, judgments=judgments)


def _first_line(path: str | os.PathLike, tabs: bool, qid: str, doc: str) -> tuple[int | None, str]:
    """Line (and column 2) of the first (qid, doc) judgment, found again (only on error)."""
    for lineno, line in iter_lines(path):
        fields = [f.strip(_BLANKS) for f in line.split("\t")] if tabs else _split(line)
        if len(fields) >= 3 and fields[0] == qid and fields[-2] == doc:
            return lineno, fields[1]
    return None, ""


def load_qrels(spec: str | os.PathLike, split: str = "test") -> Qrels:
    """Qrels from a file, a BEIR folder (``qrels/<split>.tsv``), or ``irds:<id>``."""
    text = os.fspath(spec)
    if text.startswith("irds:"):
        from gate.inputs.readers.irds import load_irds_qrels

        return load_irds_qrels(text)
    if os.path.isdir(text):
        from gate.inputs.readers.beir import beir_qrels

        return beir_qrels(text, split)
    return read_qrels(text)
