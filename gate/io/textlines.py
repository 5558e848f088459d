"""Shared line reading for every text input format.

* ``.gz`` is transparent: a file is decompressed when it starts with the gzip
  magic bytes, whatever its name (a renamed ``run.txt.gz`` still reads).
* Lines are numbered from 1 in the physical file, so messages point at the
  line an editor shows.  Lines end at ``\\n``; a trailing ``\\r`` is dropped.
* Blank lines and lines whose first non-blank character is ``#`` are skipped
  (trec_eval 10 comments).  A ``#`` later in a line is data (docnos such as
  ``msmarco_v2.1_doc_50_2286987788#13_3087841662`` contain one).
* Text is UTF-8 (a leading byte-order mark is ignored); an undecodable byte
  is an :class:`InputError` at its line.
* A missing file is ``InputError(path, None, "no such file")``.
"""

from __future__ import annotations

import gzip
import os
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator

from gate.errors import InputError

GZIP_MAGIC = b"\x1f\x8b"
UTF8_BOM = b"\xef\xbb\xbf"
BLOCK_SIZE = 8 << 20

PathLike = str | os.PathLike


def strip_gz(path: PathLike) -> str:
    """The file name without a trailing ``.gz`` (to pick a format by extension)."""
    name = os.fspath(path)
    return name[:-3] if name.lower().endswith(".gz") else name


def check_file(path: PathLike) -> None:
    """Raise the standard InputError unless ``path`` is a readable regular file."""
    p = Path(path)
    if not p.exists():
        raise InputError(str(path), None, "no such file")
    if p.is_dir():
        raise InputError(str(path), None, "is a directory, expected a file")


@contextmanager
def open_binary(path: PathLike) -> Iterator[BinaryIO]:
    """Open ``path`` for reading bytes, decompressing gzip transparently."""
    check_file(path)
    try:
        raw = open(path, "rb")
    except OSError as exc:
        raise InputError(str(path), None, f"cannot open: {exc.strerror or exc}") from None
    try:
        head = raw.peek(2)[:2] if hasattr(raw, "peek") else b""
        if head == GZIP_MAGIC:
            stream: BinaryIO = gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[assignment]
            try:
                yield stream
            finally:
                stream.close()
        else:
            yield raw
    finally:
        raw.close()


def _read_error(path: PathLike, exc: Exception) -> InputError:
    if isinstance(exc, (gzip.BadGzipFile, zlib.error, EOFError)):
        return InputError(str(path), None, f"corrupt or truncated gzip data ({exc})")
    return InputError(str(path), None, f"cannot read: {exc}")


def iter_blocks(path: PathLike, size: int = BLOCK_SIZE, count_lines: bool = True) -> Iterator[tuple[int, bytes]]:
    """Yield ``(first_line_number, block)``: whole lines, each block ending in ``\\n``.

    Blocks are about ``size`` bytes, cut after the last newline; a final line
    without a newline gets one.  A leading UTF-8 byte-order mark is removed.
    Nothing is decoded or skipped: that is the caller's (vectorised) job.
    With ``count_lines=False`` the number stays 1 (callers that count
    newlines themselves save a pass over the data).
    """
    line = 1
    carry = bytearray()
    first = True
    with open_binary(path) as f:
        while True:
            try:
                chunk = f.read(size)
            except (OSError, EOFError, zlib.error) as exc:
                raise _read_error(path, exc) from None
            if first:
                first = False
                if chunk.startswith(UTF8_BOM):
                    chunk = chunk[len(UTF8_BOM) :]
            if not chunk:
                break
            cut = chunk.rfind(b"\n") + 1
            if cut == 0:
                carry += chunk  # a line longer than a block: keep reading
                continue
            if carry:
                carry += chunk[:cut]
                block = bytes(carry)
            else:
                block = chunk[:cut] if cut < len(chunk) else chunk
            carry = bytearray(chunk[cut:])
            yield line, block
            if count_lines:
                line += block.count(b"\n")
    if carry:
        yield line, bytes(carry) + b"\n"


def iter_all_lines(path: PathLike) -> Iterator[tuple[int, str]]:
    """Every physical line as ``(line_number, text)`` without its line end, blanks included."""
    for first, block in iter_blocks(path):
        try:
            text = block.decode("utf-8")
        except UnicodeDecodeError as exc:
            start = block.rfind(b"\n", 0, exc.start) + 1
            lineno = first + block.count(b"\n", 0, exc.start)
            raise InputError(
                str(path), lineno, f"not valid UTF-8 (byte 0x{block[exc.start]:02x} at column {exc.start - start + 1})"
            ) from None
        if "\r" in text:
            text = text.replace("\r\n", "\n")
        lines = text.split("\n")
        lines.pop()  # a block ends with a newline
        yield from enumerate(lines, first)


def is_skipped(text: str) -> bool:
    """A blank line, or a comment: first non-blank character is ``#``."""
    stripped = text.lstrip()
    return not stripped or stripped[0] == "#"


def iter_lines(path: PathLike) -> Iterator[tuple[int, str]]:
    """Data lines as ``(line_number, text)``: blank and ``#`` lines skipped."""
    for lineno, text in iter_all_lines(path):
        head = text[:1]
        if not head or head == "#":
            continue
        if head.isspace() and is_skipped(text):
            continue
        yield lineno, text
