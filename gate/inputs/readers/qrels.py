"""Qrels reader: TREC ``qid iter docno rel``, compact ``qid docno rel``, BEIR TSV.

* The column count is decided by the first data line (4: TREC, 3: compact);
  a later line with another count is an error.
* A BEIR qrels file (``query-id<TAB>corpus-id<TAB>score`` as its first line)
  has that header skipped and is split on tabs (ids may contain spaces).
* Labels are integers; ``1.5`` and ``1.0`` are errors (integer labels only).
  Negative labels are kept: trec_eval reads them as "in the pool, unjudged".
* A (qid, docno) pair may appear once.

A file is read in blocks of whole lines by a fast path that splits each
block at once (its line structure checked with numpy) while it can prove the
block regular: ASCII text that passes the shared text checks, every data line
with the file's field count and no longer than an id may be, every label a
short integer, and, over the file, no (qid, docno) pair twice.  Anything
else, an error or merely a non-ASCII id, sends the whole file through the
line-by-line reader from the start, so every error (and the result for every
file the fast path gives up on) comes from that one reader, with its line
numbers.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from itertools import chain, compress

import numpy as np

from gate.common import limits
from gate.common.errors import InputError
from gate.inputs.readers.beir_folder import DEFAULT_SPLIT, beir_file, beir_folder_of, check_split_name
from gate.inputs.readers.fields import check_id, parse_int_label
from gate.inputs.readers.irds import load_irds_qrels
from gate.inputs.readers.judgment_formats import judgments_to_qrels, read_judgment_file
from gate.inputs.readers.records import Qrels, QuerySet
from gate.inputs.readers.textlines import check_block, iter_blocks, iter_lines, why_no_data

__all__ = ["load_qrels", "read_qrels", "beir_qrels", "BEIR_QRELS_HEADER"]

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
    try:
        return _read_qrels_blocks(path)
    except (_Irregular, InputError):
        # The fast path stops at the first thing it does not prove fine; the line reader
        # decides whether it is an error, and words it with its own line number.
        return _read_qrels_lines(path)


def _read_qrels_lines(path: str | os.PathLike) -> Qrels:
    """The line-by-line reader: the reference for every file, and the reader of those the
    fast path gives up on."""
    src = str(path)
    judgments: dict[str, dict[str, int]] = {}
    # U+2028 and kin are part of an id, as trec_eval reads one (gate.inputs.readers.textlines)
    lines = iter_lines(path, max_line=limits.MAX_TREC_LINE_BYTES, what="a qrels line", keep_line_separators=True)
    layout = _layout(src, lines)
    if layout is None:
        return Qrels(source=src, judgments=judgments)
    head, tabs, width = layout
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
            raise _duplicate(path, lineno, tabs, fields, width)
    return Qrels(source=src, judgments=judgments)


def _layout(src: str, lines: Iterator[tuple[int, str]]) -> tuple[tuple[int, str], bool, int] | None:
    """The first data line, whether the file is BEIR qrels (tab separated, its header line
    consumed) and the field count every line must have; None when the file holds no data line."""
    head = next(lines, None)
    if head is None:
        return None
    tabs = head[0] == 1 and head[1].rstrip(" ") == BEIR_QRELS_HEADER
    if tabs:
        head = next(lines, None)
        if head is None:
            return None
        return head, tabs, 3
    width = len(_split(head[1]))
    if width not in _SHAPES:
        raise InputError(src, head[0], f"expected 4 fields {_SHAPES[4]} or 3 fields {_SHAPES[3]}, got {width}")
    return head, tabs, width


def _duplicate(path: str | os.PathLike, lineno: int, tabs: bool, fields: list[str], width: int) -> InputError:
    """The error for a (qid, docno) judged a second time at ``lineno``, naming the first line."""
    qid, doc = fields[0], fields[-2]
    first, first_group = _first_line(path, tabs, qid, doc)
    group = fields[1] if width == 4 else ""
    extra = ""
    if width == 4 and group != first_group:
        extra = f"; column 2 differs ('{first_group}', '{group}'): multiple judgment groups are not supported"
    return InputError(
        str(path), lineno, f"duplicate judgment of document '{limits.shorten(doc)}' for query "
                           f"'{limits.shorten(qid)}' (first at line {first}){extra}"
    )


def _first_line(path: str | os.PathLike, tabs: bool, qid: str, doc: str) -> tuple[int | None, str]:
    """Line (and column 2) of the first (qid, doc) judgment, found again (only on error)."""
    for lineno, line in iter_lines(path, keep_line_separators=True):
        fields = [f.strip(_BLANKS) for f in line.split("\t")] if tabs else _split(line)
        if len(fields) >= 3 and fields[0] == qid and fields[-2] == doc:
            return lineno, fields[1]
    return None, ""


# ---------------------------------------------------------------------------
# Fast path: whole blocks at once, or nothing
# ---------------------------------------------------------------------------

# Every field of a block is a str at the same time (some 10 bytes of objects per byte):
# at this size they stay in cache, and 1 MiB blocks were slower.
_FAST_BLOCK_SIZE = 1 << 18
_BEIR_HEADER_BYTES = BEIR_QRELS_HEADER.encode("ascii")
_DIGIT_VALUES = bytes.maketrans(b"0123456789", bytes(range(10)))
# Labels this long are within 64 bits whatever their digits: int() reads them as parse_int_label does.
_MAX_SHORT_LABEL = 18


class _Irregular(Exception):
    """Something the fast path does not handle: an error, or a rarity left to the line reader."""


def _read_qrels_blocks(path: str | os.PathLike) -> Qrels:
    """What :func:`_read_qrels_lines` returns, for a file whose every block is regular (the
    module docstring); :class:`_Irregular` (or the reader's InputError) for any other."""
    judgments: dict[str, dict[str, int]] = {}
    tabs = False
    width = 0  # fields per data line, set by the first one as the line reader sets it
    rows = 0
    last: str | None = None
    known: dict[str, int] = {}
    for first, block in iter_blocks(path, _FAST_BLOCK_SIZE, max_line=limits.MAX_TREC_LINE_BYTES,
                                    what="a qrels line"):
        # ASCII: one byte per character, no UTF-8 to check, no Unicode blank to split on.
        if not block.isascii():
            raise _Irregular
        check_block(path, block, first)  # controls; every CR is in a CRLF
        if b"\r" in block:
            block = block.replace(b"\r\n", b"\n")
        if first == 1 and block[: block.index(b"\n")].rstrip(b" ") == _BEIR_HEADER_BYTES:
            tabs, width = True, 3
            block = block[block.index(b"\n") + 1 :]
        block, counts = _data_lines(block, tabs)
        if not len(counts):
            continue
        if not width:
            width = int(counts[0])
            if width not in _SHAPES:
                raise _Irregular
        if (counts != width).any():
            raise _Irregular
        text = block.decode("ascii")
        if tabs:
            fields = text.replace("\n", "\t").split("\t")
            fields.pop()  # the empty field after the last line end
            if " " in text:  # rare in BEIR files: blanks around a field, or inside an id (kept)
                fields = [f.strip(_BLANKS) for f in fields]
            if "" in fields:
                raise _Irregular
        else:
            fields = text.split()
        rels = _labels(fields[width - 1 :: width])
        rows += len(rels)
        # One Python step per line, the fewest: building a dict per run of a query's lines
        # from slices is slower, even for runs of 60 lines, and much slower for runs of one.
        for qid, doc, rel in zip(fields[0::width], fields[width - 2 :: width], rels):
            if qid != last:
                known = judgments.setdefault(qid, {})
                last = qid
            known[doc] = rel
    # A document judged twice for a query was stored once; the line reader names both lines.
    if sum(map(len, judgments.values())) != rows:
        raise _Irregular
    return Qrels(source=str(path), judgments=judgments)


def _data_lines(block: bytes, tabs: bool) -> tuple[bytes, np.ndarray]:
    """The block (whole LF-ended ASCII lines) without its blank and comment lines, and the
    number of fields of each line kept: blank-separated tokens, or tab-separated fields.
    A line longer than an id may be is :class:`_Irregular`: no field need be measured."""
    buf = np.frombuffer(block, dtype=np.uint8)
    ends = np.flatnonzero(buf == 10)
    if len(ends) and np.diff(ends, prepend=-1).max() - 1 > limits.MAX_ID_BYTES:
        raise _Irregular
    word = (buf != 32) & (buf != 9) & (buf != 10)
    starts = word.copy()
    starts[1:] &= ~word[:-1]
    starts = np.flatnonzero(starts)
    if not len(starts):
        return b"", ends[:0]
    before = np.searchsorted(starts, ends)  # tokens before each line end
    tokens = np.diff(before, prepend=0)
    # A line is skipped, as iter_lines skips it, when it has no token or its first starts with '#'.
    heads = buf[starts[np.minimum(before - tokens, len(starts) - 1)]]
    kept = (tokens > 0) & (heads != ord("#"))
    if tabs:  # BEIR fields are what lies between tabs
        counts = np.diff(np.searchsorted(np.flatnonzero(buf == 9), ends), prepend=0) + 1
    else:
        counts = tokens
    if not kept.all():
        lines = block.split(b"\n")
        block = b"\n".join([*compress(lines, kept.tolist()), b""])
        counts = counts[kept]
    return block, counts


def _labels(labels: list[str]) -> list[int]:
    """Integer labels, as parse_int_label reads them, from non-empty ASCII fields."""
    joined = "".join(labels)
    if len(joined) == len(labels) and joined.isdigit():  # one digit each, the common case
        return list(joined.encode("ascii").translate(_DIGIT_VALUES))
    # int() also takes '1_0' (and blanks, which no field holds); 18 characters are within 64 bits.
    if "_" in joined or max(map(len, labels)) > _MAX_SHORT_LABEL:
        raise _Irregular
    try:
        return list(map(int, labels))
    except ValueError:  # '1.5', 'x', '--1', '1-'
        raise _Irregular from None


def beir_qrels(folder: str | os.PathLike, split: str = DEFAULT_SPLIT) -> Qrels:
    """The qrels of a BEIR folder's split, ``qrels/<split>.tsv``."""
    return read_qrels(beir_file(folder, f"qrels/{check_split_name(split, str(folder))}.tsv"))


def _read_file(path: str, queries: QuerySet | None) -> Qrels:
    """A qrels file in any format the gate reads: a judgment format by its content, else TREC."""
    judged = read_judgment_file(path)
    return read_qrels(path) if judged is None else judgments_to_qrels(judged, queries)


def load_qrels(spec: str | os.PathLike, split: str | None = None, queries: QuerySet | None = None) -> Qrels:
    """Qrels from a file (TREC, compact or BEIR qrels, or a judgment format
    :mod:`gate.inputs.readers.judgment_formats` detects: ``_rank_eval``, Search Relevance, RRE,
    Quepid CSV, whose query texts are matched to ``queries`` when given), a BEIR folder
    (``qrels/<split>.tsv``: the ``split`` given, or the one ``DIR#split=<name>`` names, else
    ``test``), or ``irds:<id>``; qrels with no judgment are an :class:`InputError` that says why
    (an empty file, only comments, a BEIR header alone).
    A ``split`` given for anything but a BEIR folder is refused: it would pick nothing."""
    text = os.fspath(spec)
    if text.startswith("irds:"):
        if split is not None:
            raise InputError(text, None, f"a split ('{split}') picks qrels/<split>.tsv of a BEIR folder; an irds: id "
                                         "names its split itself (e.g. irds:beir/scifact/test)")
        qrels = load_irds_qrels(text)
    else:
        folder = beir_folder_of(text)
        if folder is None and split is not None:
            raise InputError(text, None, f"a split ('{split}') picks qrels/<split>.tsv of a BEIR folder, and this is "
                                         "a file")
        if folder is not None and folder.split is not None and split is not None and folder.split != split:
            raise InputError(text, None, f"names split '{folder.split}', and split '{split}' is given too")
        qrels = (beir_qrels(folder.path, folder.split or split or DEFAULT_SPLIT) if folder is not None
                 else _read_file(text, queries))
    if not len(qrels):
        why = why_no_data(qrels.source)
        raise InputError(qrels.source, None, f"no judgments{f' ({why})' if why else ''}")
    return qrels
