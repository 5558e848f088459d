"""A TREC run read a few whole queries at a time, for evaluating runs larger than memory.

:func:`iter_run_chunks` yields :class:`Run` pieces of about ``chunk_bytes`` of text, each
holding every line of the queries it names: the file is cut only where the query id changes,
so a piece is what :func:`gate.inputs.readers.runs.read_run` would give for those queries (the
same rules, the same one-line errors at the same line numbers, docnos checked for duplicates
within each query). Memory is one piece, not the run: the ``compare`` of two 10-million-line
runs holds a few MiB of text at a time instead of two whole runs.

Nearly every run file gives each query's lines together (every TREC submission, every tool's
writer). A file that does not - a query's lines in two places - cannot be cut this way: the
second place raises :class:`RunNotGrouped` when it is reached, and the caller reads the file
whole (:func:`read_run` groups rows itself).
"""

from __future__ import annotations

import os
from typing import Iterator

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


def _tail_start(text: bytes) -> int:
    """Offset where the lines of the text's last query begin (0: the whole text is one query).

    The last line's first token is the query id; the trailing lines starting with it and a
    blank are its lines. A last line that is blank, a comment or indented gives no cut (its
    query cannot be told): the whole text is kept together with what follows.
    """
    last = text.rfind(b"\n", 0, len(text) - 1) + 1
    line = text[last:]
    if not line[:1].strip() or line.startswith(b"#"):
        return 0
    qid = line.split(None, 1)[0]
    buf = np.frombuffer(text, dtype=np.uint8)
    starts = np.flatnonzero(buf[:-1] == 10) + 1
    starts = np.concatenate((np.zeros(1, dtype=starts.dtype), starts))
    width = len(qid)
    # Pad so that reading width+1 bytes past any line start stays inside the array.
    padded = np.concatenate((buf, np.zeros(width + 1, dtype=np.uint8)))
    same = np.ones(len(starts), dtype=bool)
    for j, byte in enumerate(qid):
        same &= padded[starts + j] == byte
    follow = padded[starts + width]
    same &= (follow == 32) | (follow == 9)
    other = np.flatnonzero(~same)
    if not len(other):
        return 0
    first_of_tail = int(other[-1]) + 1
    return int(starts[first_of_tail]) if first_of_tail < len(starts) else len(text)


def _read_piece(path: str, blocks: list[bytes], first_line: int) -> tuple[Run, str | None, int]:
    """``blocks`` (whole lines starting at line ``first_line``) read as a run of its own:
    ``(run, tag, number of the line after them)``.

    They are the blocks :func:`read_run` reads (only the one a cut fell in is split), so a
    file with several problems names the same first one either way."""
    reader = _Reader(path)
    reader.line = first_line
    for block in blocks:
        reader.block(block)
    return reader.finish(), reader.tag, reader.line


def iter_run_chunks(path: str | os.PathLike, chunk_bytes: int = CHUNK_BYTES,
                    block_size: int = PIECE_BLOCK_SIZE) -> Iterator[tuple[Run, str | None]]:
    """Yield ``(piece, tag)``: the run in pieces of whole queries, in file order.

    ``tag`` is the run tag (column 6 of the file's first data line), the same in every
    piece once known (None until a data line was read). An empty file yields nothing.
    Raises :class:`InputError` as :func:`read_run` does, and :class:`RunNotGrouped`
    when a query reappears in a later piece.
    """
    source = str(path)
    closed: set[str] = set()
    tag: str | None = None
    pending: list[bytes] = []
    size = 0
    line = 1  # number of the first pending line
    limit = chunk_bytes  # pending text that makes a piece

    def emit(blocks: list[bytes]) -> Run:
        nonlocal tag, line
        piece, piece_tag, line = _read_piece(source, blocks, line)
        if tag is None:
            tag = piece_tag
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
