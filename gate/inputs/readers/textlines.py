"""Shared line reading for every text input format.

* ``.gz`` is transparent: a file is decompressed when it starts with the gzip
  magic bytes, whatever its name (a renamed ``run.txt.gz`` still reads).
* Lines are numbered from 1 in the physical file, so messages point at the
  line an editor shows.  Lines end at ``\\n``; a trailing ``\\r`` is dropped.
  That is how trec_eval (bytes up to ``\\n``) and ir_datasets (Python's file
  iteration: ``\\n``, ``\\r\\n``) read them. ``str.splitlines()`` also ends a line at
  U+0085 (NEL), U+2028 and U+2029: in the files a runner reads too (queries,
  corpus, lists of query ids) a line holding one is refused
  (:func:`check_line_separators`), since a query file whose lines end in U+2028
  would be one query here and many to a runner that splits them so. Run and
  qrels lines keep them as part of an id (``keep_line_separators``), as
  trec_eval does; a run or qrels file whose lines end in them has the wrong
  number of fields.
* Blank lines and lines whose first non-blank character is ``#`` are skipped
  (trec_eval 10 comments).  A ``#`` later in a line is data (docnos such as
  ``msmarco_v2.1_doc_50_2286987788#13_3087841662`` contain one).
* Text is UTF-8 (a leading byte-order mark is ignored); an undecodable byte
  is an :class:`InputError` at its line, and so are NUL and other control
  characters, a CR that ends no line (CR-only files would be one giant line)
  and a byte-order mark after the start.
* A line longer than the reader's limit (:mod:`gate.common.limits`) is an error
  raised before the line is held whole.
* Only regular files (or symlinks to them) are read: a folder, FIFO, device
  or socket is refused without blocking on it.  A gzip file that inflates
  more than :data:`~gate.common.limits.MAX_GZIP_RATIO` times is refused as a bomb.
* A missing file is ``InputError(path, None, "no such file")``.
* A file that is not text at all is named, not reported as its first control character:
  UTF-16/UTF-32 text, a ZIP, tar, bzip2, xz, Zstandard or 7-Zip archive, a Parquet or PDF file
  (:func:`binary_format`, read from its first bytes, inside gzip too: a ``.tar.gz`` is a tar
  archive). Only a start that is not valid text is looked at, so no text file is refused by it.
"""

from __future__ import annotations

import codecs
import gzip
import os
import re
import stat
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

import numpy as np

from gate.common import limits
from gate.common.errors import InputError

GZIP_MAGIC = b"\x1f\x8b"
UTF8_BOM = b"\xef\xbb\xbf"
BLOCK_SIZE = 8 << 20

PathLike = str | os.PathLike


def strip_gz(path: PathLike) -> str:
    """The file name without a trailing ``.gz`` (to pick a format by extension)."""
    name = os.fspath(path)
    return name[:-3] if name.lower().endswith(".gz") else name


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def check_file(path: PathLike) -> None:
    """Raise the standard InputError unless ``path`` is (a symlink to) an existing regular file."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError(str(path), None, "no such file") from None
    except OSError as exc:
        raise InputError(str(path), None, f"cannot open: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        raise InputError(str(path), None, f"is {_kind(mode)}, expected a file")


def open_regular(path: PathLike) -> BinaryIO:
    """Open a regular file for reading; anything else (a FIFO, ``/dev/zero``, a folder, a
    symlink to one) is refused without blocking: the file is opened non-blocking and
    checked with ``fstat`` on the open descriptor, so a swap between check and open cannot
    slip a FIFO in."""
    check_file(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(str(path), None, f"cannot open: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise InputError(str(path), None, f"is {_kind(mode)}, expected a file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


class _BoundedGzip:
    """A GzipFile that refuses to inflate far beyond its compressed size (a gzip bomb).

    Up to :data:`GZIP_RATIO_FREE_BYTES` anything goes; beyond, the output may be
    at most :data:`MAX_GZIP_RATIO` times the compressed bytes read so far.
    """

    def __init__(self, raw: BinaryIO, path: PathLike):
        self.raw = raw
        self.path = path
        self.stream = gzip.GzipFile(fileobj=raw, mode="rb")
        self.out = 0

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(size)
        self.out += len(data)
        if self.out > limits.GZIP_RATIO_FREE_BYTES:
            consumed = max(self.raw.tell(), 1)
            if self.out > limits.MAX_GZIP_RATIO * consumed:
                raise InputError(str(self.path), None,
                                 f"gzip data inflates more than {limits.MAX_GZIP_RATIO}x "
                                 f"({self.out:,} bytes from {consumed:,}): refused as a gzip bomb")
        return data

    def close(self) -> None:
        self.stream.close()


#: How many leading bytes :func:`binary_format` looks at (a tar header's magic is at offset 257).
HEAD_BYTES = 512
_TO_UTF8 = "save it as UTF-8 (iconv -f {} -t UTF-8 converts it)"
_EXTRACT = "extract the file from it first"
_DECOMPRESS = "decompress it first ({}), or recompress it with gzip"
_EXPORT = "export it as text first (TSV, TREC or JSON Lines)"
# (magic bytes or a pattern, their offset, what the file is, what to do instead): the files a user
# hands the gate by mistake. Longer magics first: a UTF-32 mark starts with the UTF-16 one.
_MAGIC = (
    (b"\xff\xfe\x00\x00", 0, "UTF-32 text (byte-order mark FF FE 00 00)", _TO_UTF8.format("UTF-32")),
    (b"\x00\x00\xfe\xff", 0, "UTF-32 text (byte-order mark 00 00 FE FF)", _TO_UTF8.format("UTF-32")),
    (b"\xff\xfe", 0, "UTF-16 text (byte-order mark FF FE)", _TO_UTF8.format("UTF-16")),
    (b"\xfe\xff", 0, "UTF-16 text (byte-order mark FE FF)", _TO_UTF8.format("UTF-16")),
    (b"PK\x03\x04", 0, "a ZIP archive (as an .xlsx or .docx file is)", _EXTRACT + " (unzip), or " + _EXPORT),
    (b"PK\x05\x06", 0, "an empty ZIP archive", _EXTRACT),
    (b"ustar", 257, "a tar archive", _EXTRACT + " (tar xf)"),
    # "BZh" alone begins words: the block size digit and a block's (or the end's) magic too
    (re.compile(rb"BZh[1-9](1AY&SY|\x17rE8P\x90)"), 0, "a bzip2-compressed file", _DECOMPRESS.format("bunzip2")),
    (b"\xfd7zXZ\x00", 0, "an xz-compressed file", _DECOMPRESS.format("unxz")),
    (b"\x28\xb5\x2f\xfd", 0, "a Zstandard-compressed file", _DECOMPRESS.format("unzstd")),
    (b"7z\xbc\xaf\x27\x1c", 0, "a 7-Zip archive", _EXTRACT + " (7z x)"),
    (b"Rar!\x1a\x07", 0, "a RAR archive", _EXTRACT),
    (b"PAR1", 0, "an Apache Parquet file", _EXPORT),
    (b"%PDF-", 0, "a PDF document", _EXPORT),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", 0, "a Microsoft Office file (.xls, .doc)", _EXPORT),
    (b"SQLite format 3\x00", 0, "an SQLite database", _EXPORT),
)


_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _is_text_start(head: bytes) -> bool:
    """Whether ``head`` could begin a text file the readers take: UTF-8 (a sequence cut at the
    end aside) with no control character but tab, CR and LF."""
    if _CONTROL.search(head):
        return False
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return False
    return True


def _utf16_without_mark(head: bytes) -> str | None:
    """``"little-endian"`` / ``"big-endian"`` for a start that reads as UTF-16 without a
    byte-order mark (mostly ASCII: every other byte is 0), else None."""
    pairs = len(head) // 2
    if pairs < 2:
        return None
    even, odd = head[0 : 2 * pairs : 2], head[1 : 2 * pairs : 2]
    for zeros, chars, order in ((odd, even, "little-endian"), (even, odd, "big-endian")):
        if zeros.count(0) >= 0.9 * pairs and chars.count(0) <= 0.1 * pairs:
            return order
    return None


def binary_format(head: bytes) -> tuple[str, str] | None:
    """``(what the file is, what to do)`` for a start of file that is no text the gate reads but
    a format it can name (UTF-16, an archive, a compressed or binary file); None for anything
    else, and always for a start that is valid text (so no text file is refused for looking like
    a format)."""
    if _is_text_start(head):
        return None
    for magic, offset, what, advice in _MAGIC:
        found = magic.match(head, offset) if isinstance(magic, re.Pattern) else head[offset:].startswith(magic)
        if found:
            return what, advice
    order = _utf16_without_mark(head[:HEAD_BYTES])
    if order is not None:
        encoding = "UTF-16" + ("LE" if order[0] == "l" else "BE")
        return f"UTF-16 text ({order}, no byte-order mark)", _TO_UTF8.format(encoding)
    return None


def refuse_binary_format(path: PathLike, head: bytes, *, gzipped: bool = False, reads_gzip: bool = True) -> None:
    """An :class:`InputError` naming the file's format when ``head`` (its first bytes, after
    gzip when ``gzipped``) is one :func:`binary_format` knows; with ``reads_gzip`` False (a
    small file read whole: a config, a shares file) a gzip file is refused as one too."""
    found = binary_format(head)
    if found is None and not reads_gzip and head[:2] == GZIP_MAGIC:
        found = ("a gzip-compressed file", "decompress it first (gunzip)")
    if found is None:
        return
    what, advice = found
    takes = "UTF-8 text, plain or gzip-compressed" if reads_gzip else "this file as plain UTF-8 text"
    raise InputError(str(path), None, f"is {what}{', gzip-compressed' if gzipped else ''}: {advice}; the gate "
                                      f"reads {takes}")


def _gzip_head(stream: _BoundedGzip, path: PathLike) -> bytes:
    """The first decompressed bytes. Corrupt or truncated gzip data is refused here: a failed peek
    leaves the stream at its end, so the reads that follow would see an empty file and drop the
    data silently (the readers' fuzzing found it)."""
    try:
        return stream.stream.peek(HEAD_BYTES)[:HEAD_BYTES]
    except (OSError, EOFError, zlib.error) as exc:
        raise _read_error(path, exc) from None


@contextmanager
def open_binary(path: PathLike) -> Iterator[BinaryIO]:
    """Open ``path`` for reading bytes, decompressing gzip transparently; a file whose first
    bytes (inside gzip too) are a format :func:`binary_format` names is refused as that format."""
    raw = open_regular(path)
    try:
        head = raw.peek(HEAD_BYTES)[:HEAD_BYTES] if hasattr(raw, "peek") else b""
        if head[:2] == GZIP_MAGIC:
            stream = _BoundedGzip(raw, path)
            try:
                refuse_binary_format(path, _gzip_head(stream, path), gzipped=True)
                yield stream  # type: ignore[misc]
            finally:
                stream.close()
        else:
            refuse_binary_format(path, head)
            yield raw
    finally:
        raw.close()


def _read_error(path: PathLike, exc: Exception, line: int | None = None) -> InputError:
    if isinstance(exc, (gzip.BadGzipFile, zlib.error, EOFError)):
        where = f" after line {line - 1}" if line and line > 1 else ""
        return InputError(str(path), None, f"corrupt or truncated gzip data{where} ({exc})")
    return InputError(str(path), None, f"cannot read: {exc}")


def _line_too_long(path: PathLike, line: int, limit: int, what: str) -> InputError:
    return InputError(str(path), line, f"line longer than {limits.describe_bytes(limit)} (the limit for {what})")


def count_newlines(block: bytes) -> int:
    """``block.count(b"\\n")``, several times faster on large blocks (bytes.count does not use
    memchr for one byte; numpy compares and counts a megabyte in a tenth of the time)."""
    if len(block) < 4096:
        return block.count(b"\n")
    return int(np.count_nonzero(np.frombuffer(block, dtype=np.uint8) == 10))


def iter_blocks(path: PathLike, size: int = BLOCK_SIZE, count_lines: bool = True, *,
                max_line: int | None = None, what: str = "a line",
                lines_in_blocks: bool = True) -> Iterator[tuple[int, bytes]]:
    """Yield ``(first_line_number, block)``: whole lines, each block ending in ``\\n``.

    Blocks are about ``size`` bytes, cut after the last newline; a final line
    without a newline gets one.  A leading UTF-8 byte-order mark is removed.
    Nothing is decoded or skipped: that is the caller's (vectorised) job.
    A line longer than ``max_line`` bytes is an :class:`InputError` raised
    before more than ``max_line + size`` bytes of it are held (with
    ``lines_in_blocks=False`` only lines longer than a block are looked for:
    the run reader bounds every field it keeps itself).  With
    ``count_lines=False`` the number stays 1 (callers that count newlines
    themselves save a pass over the data).
    """
    line = 1
    carry = bytearray()
    first = True
    counted = count_lines or max_line is not None
    with open_binary(path) as f:
        while True:
            chunk = _read_chunk(f, size, path, line if counted else None)
            if first:
                first = False
                without_mark = _without_bom(f, size, path, chunk, line)
                if without_mark is None:  # the file was the mark alone; more may follow in later reads
                    continue
                chunk = without_mark
            if not chunk:
                break
            cut = chunk.rfind(b"\n") + 1
            if cut == 0:
                carry += chunk  # a line longer than a block: keep reading
                _check_carry(path, line, carry, max_line, what)
                continue
            if carry:
                carry += chunk[:cut]
                block = bytes(carry)
            else:
                block = chunk[:cut] if cut < len(chunk) else chunk
            carry = bytearray(chunk[cut:])
            if max_line is not None and lines_in_blocks and len(block) > max_line:
                _check_line_lengths(path, line, block, max_line, what)
            yield (line if counted else 1), block
            if counted:
                line += count_newlines(block)
            _check_carry(path, line, carry, max_line, what)
    if carry:
        _check_carry(path, line, carry, max_line, what)
        yield (line if counted else 1), bytes(carry) + b"\n"


def _read_chunk(f: BinaryIO, size: int, path: PathLike, line: int | None) -> bytes:
    """The next ``size`` bytes (fewer at the end); a read error named with the line it stopped at."""
    try:
        return f.read(size)
    except (OSError, EOFError, zlib.error) as exc:
        raise _read_error(path, exc, line) from None


def _without_bom(f: BinaryIO, size: int, path: PathLike, chunk: bytes, line: int) -> bytes | None:
    """The file's first chunk without a leading UTF-8 byte-order mark (read on until the whole mark
    can be seen); None when the chunk was the mark alone."""
    while chunk and len(chunk) < len(UTF8_BOM) and UTF8_BOM.startswith(chunk):
        more = _read_chunk(f, size, path, line)  # tiny blocks: the whole mark must be seen before it can be dropped
        if not more:
            break
        chunk += more
    if chunk.startswith(UTF8_BOM):
        chunk = chunk[len(UTF8_BOM) :]
        if not chunk:
            return None
    return chunk


def _check_carry(path: PathLike, line: int, carry: bytearray, max_line: int | None, what: str) -> None:
    """The unfinished line held between blocks is within ``max_line``."""
    if max_line is not None and len(carry) > max_line:
        raise _line_too_long(path, line, max_line, what)


def _check_line_lengths(path: PathLike, first: int, block: bytes, max_line: int, what: str) -> None:
    ends = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10)
    lengths = np.diff(ends, prepend=-1) - 1
    long = np.flatnonzero(lengths > max_line)
    if len(long):
        raise _line_too_long(path, first + int(long[0]), max_line, what)


def _decode_error(path: PathLike, block: bytes, first: int, exc: UnicodeDecodeError) -> InputError:
    start = block.rfind(b"\n", 0, exc.start) + 1
    lineno = first + block.count(b"\n", 0, exc.start)
    return InputError(
        str(path), lineno, f"not valid UTF-8 (byte 0x{block[exc.start]:02x} at column {exc.start - start + 1})"
    )


def _line_of(text: str, first: int, index: int) -> int:
    return first + text.count("\n", 0, index)


def undecodable_before(block: bytes, at: int) -> UnicodeDecodeError | None:
    """The first invalid UTF-8 in ``block`` before offset ``at`` (a character boundary: a control
    byte or a byte-order mark), or None: a problem found at ``at`` is reported only when no
    earlier line is broken, so the error names the first bad line."""
    try:
        block[:at].decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc
    return None


def check_block(path: PathLike, block: bytes, first: int) -> None:
    """Refuse what decodes but is not text: NUL and other C0 controls (tab and line ends
    aside), DEL, a CR that ends no line (old Mac files: one giant line), and a byte-order
    mark after the start (two files concatenated). Counted on the bytes, at memchr speed. A line
    before the refused one that is not UTF-8 is reported instead (the first problem first)."""
    buf = np.frombuffer(block, dtype=np.uint8)
    controls = int(np.count_nonzero(buf < 32)) + block.count(b"\x7f")
    crlf = block.count(b"\r\n")
    expected = block.count(b"\n") + block.count(b"\t") + crlf
    if controls != expected or block.count(b"\r") != crlf:
        for i in np.flatnonzero((buf < 32) | (buf == 127)).tolist():
            c = block[i]
            if c in (9, 10) or (c == 13 and block[i + 1 : i + 2] == b"\n"):
                continue
            earlier = undecodable_before(block, i)
            if earlier is not None:
                raise _decode_error(path, block, first, earlier)
            line = first + block.count(b"\n", 0, i)
            if c == 13:
                raise InputError(str(path), line,
                                 "carriage return inside a line (CR-only line ends?): lines must end in LF or CRLF")
            raise InputError(str(path), line, f"control character 0x{c:02x} in line")
    if UTF8_BOM in block:
        at = block.index(UTF8_BOM)
        earlier = undecodable_before(block, at)
        if earlier is not None:
            raise _decode_error(path, block, first, earlier)
        raise InputError(str(path), first + block.count(b"\n", 0, at), "byte-order mark inside the file (files "
                         "concatenated?)")


# U+0085 (NEL), U+2028 (LINE SEPARATOR) and U+2029 (PARAGRAPH SEPARATOR): the line ends
# str.splitlines() knows beyond LF and CR (its others, VT, FF and FS..RS, are control characters,
# refused by check_block).
_OTHER_LINE_ENDS = (("\x85", "next line, NEL"), ("\u2028", "line separator"), ("\u2029", "paragraph separator"))


def check_line_separators(path: PathLike, text: str, first: int) -> None:
    """Refuse a line holding U+0085, U+2028 or U+2029 (the module docstring says why), at the
    first such line of ``text`` (whole decoded lines from line ``first``). Searched in the decoded
    text: a str holding no character that high is skipped at once, and the rest is a memchr (a
    regular expression or a search of the UTF-8 bytes costs up to twice the decoding)."""
    found = [(at, char, name) for char, name in _OTHER_LINE_ENDS if (at := text.find(char)) >= 0]
    if not found:
        return
    at, char, name = min(found)
    code = f"{ord(char):04X}"
    raise InputError(str(path), first + text.count("\n", 0, at),
                     f"U+{code} ({name}) inside a line: the gate ends lines only at LF or CRLF, as trec_eval and "
                     f"ir_datasets do, but str.splitlines() ends one here too; remove it (in a JSON string, write "
                     f"it escaped: \\u{code})")


def _separator_first(path: PathLike, block: bytes, first: int, error: InputError) -> InputError:
    """``error`` (at a line of ``block``), or a line separator on an earlier line: the first
    problem is the one named. The lines before ``error``'s are UTF-8 (check_block and the
    decoder name the first line that is not)."""
    if error.line is None:
        return error
    cut = 0
    for _ in range(error.line - first):
        cut = block.index(b"\n", cut) + 1
    try:
        check_line_separators(path, block[:cut].decode("utf-8", errors="replace"), first)
    except InputError as earlier:
        return earlier
    return error


def iter_all_lines(path: PathLike, *, max_line: int = limits.MAX_QUERY_LINE_BYTES, what: str = "a line",
                   keep_line_separators: bool = False) -> Iterator[tuple[int, str]]:
    """Every physical line as ``(line_number, text)`` without its line end, blanks included;
    a line holding U+0085, U+2028 or U+2029 is refused unless ``keep_line_separators``."""
    for first, block in iter_blocks(path, max_line=max_line, what=what):
        try:
            check_block(path, block, first)
            try:
                text = block.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise _decode_error(path, block, first, exc) from None
        except InputError as error:
            raise error if keep_line_separators else _separator_first(path, block, first, error) from None
        if not keep_line_separators:
            check_line_separators(path, text, first)
        if "\r" in text:
            text = text.replace("\r\n", "\n")
        lines = text.split("\n")
        lines.pop()  # a block ends with a newline
        yield from enumerate(lines, first)


def read_text_file(path: PathLike, what: str, *, limit: int = limits.MAX_SMALL_FILE_BYTES) -> str:
    """A small text file (config, shares, manifest, report) read whole, strictly.

    Regular files only, at most ``limit`` bytes, UTF-8 (a leading BOM dropped),
    no NUL / control characters / stray CR. ``what`` names the file in messages
    ("no such shares file").
    """
    with open_regular(path) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise InputError(str(path), None, f"larger than {limits.describe_bytes(limit)} (the limit for {what})")
    refuse_binary_format(path, data[:HEAD_BYTES], reads_gzip=False)
    if data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM):]
    check_block(path, data, 1)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _decode_error(path, data, 1, exc) from None
    return text


def why_no_data(path: PathLike) -> str:
    """Why a file a reader took gave nothing, for the message that says so: ``"the file is
    empty"`` (no byte, or a byte-order mark alone, after gzip), ``"the file holds only blank
    lines and # comments"``, or ``"the file holds only a header line"`` (a reader skipped its one
    data line, as the BEIR qrels reader skips ``query-id corpus-id score``). ``""`` for what is no
    file (an ``irds:`` id). Reads the file again: call it only to word an error."""
    if not os.path.isfile(path):
        return ""
    lines = data = 0
    try:
        for _, text in iter_all_lines(path):
            lines += 1
            data += not is_skipped(text)
            if data > 1:
                return ""
    except InputError:
        return ""
    if data:
        return "the file holds only a header line"
    return "the file holds only blank lines and # comments" if lines else "the file is empty"


def is_skipped(text: str) -> bool:
    """A blank line, or a comment: first non-blank character is ``#``."""
    stripped = text.lstrip()
    return not stripped or stripped[0] == "#"


def iter_lines(path: PathLike, *, max_line: int = limits.MAX_QUERY_LINE_BYTES, what: str = "a line",
               keep_line_separators: bool = False) -> Iterator[tuple[int, str]]:
    """Data lines as ``(line_number, text)``: blank and ``#`` lines skipped (the rest as
    :func:`iter_all_lines`)."""
    for lineno, text in iter_all_lines(path, max_line=max_line, what=what,
                                       keep_line_separators=keep_line_separators):
        head = text[:1]
        if not head or head == "#":
            continue
        if head.isspace() and is_skipped(text):
            continue
        yield lineno, text
