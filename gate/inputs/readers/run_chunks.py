"""A TREC run read a few whole queries at a time, for evaluating runs larger than memory.

:func:`iter_run_chunks` yields :class:`Run` pieces of about ``chunk_bytes`` of text, each
holding every line of the queries it names: the file is cut only where the query id changes,
so a piece is what :func:`gate.inputs.readers.runs.read_run` would give for those queries (the
same rules, one-line errors at the same line numbers, docnos checked for duplicates within each
query). Comment and blank lines inside a query do not cut it, nor does an indent. Memory is one
piece, not the run: the ``compare`` of two 10-million-line runs holds a few MiB of text at a
time instead of two whole runs.

Nearly every run file gives each query's lines together (every TREC submission, every tool's
writer). A file that does not - a query's lines in two places - cannot be cut this way: the
second place raises :class:`RunNotGrouped` when it is reached, and the caller reads the file
whole (:func:`read_run` groups rows itself).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np

from gate.common import limits
from gate.inputs.readers.records import Run
from gate.inputs.readers.runs import _Reader
from gate.inputs.readers.textlines import iter_blocks

__all__ = ["CHUNK_BYTES", "PIECE_BLOCK_SIZE", "RunNotGrouped", "iter_run_chunks"]

#: Text per piece, at the least: about 30,000 lines of a typical run (27-40 bytes a line).
#: Reading and evaluating a piece holds about 12 times its text at the peak.
CHUNK_BYTES = 1 << 20
#: The reader's block within a piece: its temporaries are about 8 bytes per byte of text.
PIECE_BLOCK_SIZE = 256 << 10


class RunNotGrouped(Exception):
    """A query's lines appear in more than one place of the file (not an input error: read it whole)."""

    def __init__(self, path: str, query_id: str):
        super().__init__(f"{path}: the lines of query '{limits.shorten(query_id)}' are not together")
        self.path = path
        self.query_id = query_id


def _trailing_query_start(text: bytes) -> int:
    """Offset where the lines of the text's last query begin (0: the whole text is one query).

    Looked for in the last 256 KiB first: a query's lines are rarely more."""
    window = 256 << 10
    if len(text) > 2 * window:
        start = text.find(b"\n", len(text) - window) + 1
        cut = _tail_start(text[start:])
        if cut:
            return start + cut
    return _tail_start(text)


_MAX_INDENT = 64  # blanks before a line's first token looked past; a deeper indent ends the tail


def _tail_start(text: bytes) -> int:
    """Offset where the lines of the text's last query begin (0: the whole text is one query).

    The last data line's first token is the query id; the trailing lines starting with it (after
    any blanks) and a blank are its lines. Comment and blank lines belong to either side: one
    inside a query does not cut it.
    """
    buf = np.frombuffer(text, dtype=np.uint8)
    starts = np.flatnonzero(buf[:-1] == 10) + 1
    starts = np.concatenate((np.zeros(1, dtype=starts.dtype), starts))
    # The first non-blank byte of every line (space and tab are the run's blanks).
    padded = np.concatenate((buf, np.full(_MAX_INDENT + 2, 10, dtype=np.uint8)))
    first = starts.copy()
    indented = np.flatnonzero((padded[first] == 32) | (padded[first] == 9))
    for _ in range(_MAX_INDENT):
        if not len(indented):
            break
        first[indented] += 1
        c = padded[first[indented]]
        indented = indented[(c == 32) | (c == 9)]
    deep = np.zeros(len(starts), dtype=bool)
    deep[indented] = True  # still blank after _MAX_INDENT: of no known query
    c = padded[first]
    transparent = ~deep & ((c == 35) | (c == 10) | (c == 13))  # '#' comment, blank line
    data = np.flatnonzero(~transparent & ~deep)
    if not len(data):
        return 0
    last = int(first[data[-1]])
    qid = text[last:text.find(b"\n", last)].split(None, 1)[0]
    width = len(qid)
    padded = np.concatenate((padded, np.zeros(width + 1, dtype=np.uint8)))
    same = ~deep
    for j, byte in enumerate(qid):
        same &= padded[first + j] == byte
    follow = padded[first + width]
    same &= (follow == 32) | (follow == 9)
    same |= transparent
    other = np.flatnonzero(~same)
    if not len(other):
        return 0
    first_of_tail = int(other[-1]) + 1
    return int(starts[first_of_tail]) if first_of_tail < len(starts) else len(text)


def _read_piece(path: str, blocks: list[bytes], first_line: int, tag: str | None,
                seen_data: bool) -> tuple[Run, str | None, bool, int]:
    """``blocks`` (whole lines starting at line ``first_line``) read as a run of its own:
    ``(run, tag, whether a data line was seen, number of the line after them)``. The tag is
    taken (and checked) on the file's first data line only, as :func:`read_run` does."""
    reader = _Reader(path)
    reader.line = first_line
    reader.tag, reader.seen_data = tag, seen_data
    for block in blocks:
        reader.block(block)
    return reader.finish(), reader.tag, reader.seen_data, reader.line


def iter_run_chunks(path: str | os.PathLike, chunk_bytes: int = CHUNK_BYTES,
                    block_size: int = PIECE_BLOCK_SIZE) -> Iterator[tuple[Run, str | None]]:
    """Yield ``(piece, tag)``: the run in pieces of whole queries, in file order.

    ``tag`` is the run tag (column 6 of the file's first data line), the same in every
    piece once known (None until a data line was read). An empty file yields nothing.
    Raises :class:`InputError` for every line :func:`read_run` refuses (when a file has
    several problems, which one comes first can differ: the blocks are other, duplicates are
    found per piece; :func:`gate.evaluation.streaming.digest_run` names read_run's), and
    :class:`RunNotGrouped` when a query reappears in a later piece.
    """
    source = str(path)
    closed: set[str] = set()
    tag: str | None = None
    seen_data = False
    pending: list[bytes] = []
    size = 0
    line = 1  # number of the first pending line
    limit = chunk_bytes  # pending text that makes a piece

    def emit(blocks: list[bytes]) -> Run:
        nonlocal tag, seen_data, line
        piece, tag, seen_data, line = _read_piece(source, blocks, line, tag, seen_data)
        for qid in piece.query_ids:
            if qid in closed:
                raise RunNotGrouped(source, qid)
        closed.update(piece.query_ids)
        return piece

    for _, block in iter_blocks(path, block_size, count_lines=False, max_line=limits.MAX_TREC_LINE_BYTES,
                                what="a run line", lines_in_blocks=False):
        pending.append(block)
        size += len(block)
        if size < limit:
            continue
        cut = _trailing_query_start(b"".join(pending))
        if cut == 0:  # one query so far: look again when it has doubled (no quadratic rescans)
            limit = 2 * size
            continue
        limit = chunk_bytes
        head: list[bytes] = []
        for i, block in enumerate(pending):
            if cut >= len(block):
                head.append(block)
                cut -= len(block)
                continue
            if cut:
                head.append(block[:cut])
            tail = [block[cut:], *pending[i + 1:]]
            break
        else:
            tail = []
        piece = emit(head)
        if len(piece):
            yield piece, tag
        pending, size = tail, sum(len(block) for block in tail)
    if pending:
        piece = emit(pending)
        if len(piece):
            yield piece, tag
