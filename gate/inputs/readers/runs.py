"""TREC run reader: ``qid Q0 docno rank score [tag ...]``, vectorised.

A run of 1,000 queries x 1,000 documents is a million lines, so the happy
path does no per-line Python work: the (decompressed) file is read in blocks
of whole lines, token boundaries are found with numpy on the raw bytes, and
the columns are validated and converted as arrays.  Scores are parsed by a
vectorised decimal parser that is exact (bit-identical to ``float()``); the
rare token it cannot prove exact goes through ``float()``.

Rules (each violation is an :class:`InputError` naming file and line):

* whitespace-separated; blank lines and lines starting with ``#`` skipped;
  fields beyond the sixth ignored; fewer than six is an error;
* column 2 is ``Q0`` (``q0`` and ``0`` accepted);
* rank must be an integer (it is never used for ordering);
* score must be a finite number;
* a document may appear once per query;
* UTF-8 text; control characters other than tab / CR / LF are errors.

The result groups rows per query (queries in UTF-8 byte order, rows in file
order within a query); the tag is column 6 of the first data line.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NoReturn

import numpy as np

from gate.common import limits
from gate.common.errors import InputError
from gate.inputs.readers import native
from gate.inputs.readers.records import Run
from gate.inputs.readers.textlines import UTF8_BOM, count_newlines, iter_blocks, undecodable_before

__all__ = ["read_run", "FIELDS_MESSAGE", "field_problem"]

# Small blocks keep the temporaries (about 8 bytes per input byte) well below
# the size of the result; larger ones are not faster.
RUN_BLOCK_SIZE = 1 << 20

FIELDS_MESSAGE = "expected 6 fields 'qid Q0 docno rank score tag', got {}"
_MAX_RANK_CHARS = 20  # a signed 64-bit integer
_LONG_DOCNO = 64  # bytes; a block's docnos beyond max(this, 4 x its median) are kept aside

_FIELD_REFUSED = re.compile("[\x00-\x20\ufeff\ud800-\udfff]")


def field_problem(value: str) -> str | None:
    """Why a run line cannot hold ``value`` as its query id or docno (None: it can), as
    :func:`read_run` reads a line: fields split at ASCII blanks and controls (a control other
    than tab is refused), a byte-order mark refused anywhere, valid UTF-8 of at most
    :data:`limits.MAX_ID_BYTES`. Any other character is the id's own, zero-width and bidi
    controls included (the rendering makes those inert). A runner that writes runs itself (the
    HTTP runner) checks its ids here, so that it writes only runs this reader reads back whole."""
    if not value:
        return "it is empty"
    bad = _FIELD_REFUSED.search(value)
    if bad is not None:
        code = ord(bad.group())
        if code in (0x09, 0x0A, 0x0D, 0x20):
            return f"it holds a blank (0x{code:02x}), where a run line's fields split"
        if code < 0x20:
            return f"it holds control character 0x{code:02x}"
        if code == 0xFEFF:
            return "it holds a byte-order mark (U+FEFF)"
        return f"it holds a lone surrogate (\\u{code:04x}: not valid Unicode)"
    if len(value) > limits.MAX_ID_BYTES // 4 and len(value.encode("utf-8")) > limits.MAX_ID_BYTES:
        return f"it is longer than {limits.describe_bytes(limits.MAX_ID_BYTES)}"
    return None


_HASH_K1 = np.uint64(0x9E3779B97F4A7C15)
_HASH_K2 = np.uint64(0xBF58476D1CE4E5B9)
_P10 = np.array([10.0**k for k in range(23)], dtype=np.float64)  # exact up to 1e22


def _longdouble_powers() -> np.ndarray | None:
    """Exact 10**0..10**27 in long double, or None when it has < 64 significand bits."""
    if np.finfo(np.longdouble).nmant < 63:
        return None
    p = np.ones(28, dtype=np.longdouble)
    for k in range(1, 28):
        p[k] = p[k - 1] * np.longdouble(10)
    return p


_P10L = _longdouble_powers()


# ---------------------------------------------------------------------------
# Vectorised pieces
# ---------------------------------------------------------------------------


def _column(buf: np.ndarray, s: np.ndarray, j: int, lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Byte ``j`` of every token (0 where the token is shorter) and the active mask."""
    act = lens > j
    c = buf[np.minimum(s + j, len(buf) - 1)]
    return np.where(act, c, 0).astype(np.uint8, copy=False), act


def parse_decimal(buf: np.ndarray, s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Parse tokens ``buf[s:e]`` as floats; returns ``(values, needs_fallback)``.

    Exact by construction (the result equals ``float(token)`` bit for bit):
    a decimal ``[+-]digits[.digits][e[+-]digits]`` with mantissa ``m`` and
    power ``p`` is ``m * 10**p`` (or ``m / 10**-p``), one correctly rounded
    IEEE operation when ``m <= 2**53`` and ``|p| <= 22`` (Clinger's fast
    path).  Larger mantissas (16-19 digits, common in real runs) use the
    64-bit long double, then reject the rare results that could suffer double
    rounding (exactly half-way between two doubles).  Everything else
    (``nan``, ``inf``, ``1e400``, junk, 20+ digits) is flagged for the caller.
    """
    rows = len(s)
    lens = e - s
    neg = np.zeros(rows, dtype=bool)
    mant = np.zeros(rows, dtype=np.uint64)
    sig = np.zeros(rows, dtype=np.int32)
    frac = np.zeros(rows, dtype=np.int32)
    anyd = np.zeros(rows, dtype=bool)
    ndot = np.zeros(rows, dtype=bool)
    ine = np.zeros(rows, dtype=bool)
    epos = np.full(rows, -9, dtype=np.int32)
    eneg = np.zeros(rows, dtype=bool)
    ev = np.zeros(rows, dtype=np.int32)
    ed = np.zeros(rows, dtype=np.int32)
    bad = np.zeros(rows, dtype=bool)
    width = int(lens.max()) if rows else 0
    for j in range(width):
        c, act = _column(buf, s, j, lens)
        d = c - np.uint8(48)
        isdig = act & (d <= 9)
        mdig = isdig & ~ine
        xdig = isdig & ine
        isdot = act & (c == 46)
        ise = act & ((c | np.uint8(0x20)) == 101)
        issign = act & ((c == 43) | (c == 45))
        if j == 0:
            neg = c == 45
            sign_ok = np.ones(rows, dtype=bool)
        else:
            sign_ok = ine & (epos == j - 1)
        bad |= isdot & (ndot | ine)
        bad |= ise & (ine | ~anyd)
        bad |= issign & ~sign_ok
        bad |= act & ~(isdig | isdot | ise | issign)
        sig += mdig & ((mant > 0) | (d > 0))
        mant = np.where(mdig, mant * np.uint64(10) + d, mant)
        frac += mdig & ndot
        anyd |= mdig
        ndot |= isdot
        if j > 0:
            eneg |= issign & ine & (c == 45)
        ev = np.where(xdig & (ed < 5), ev * 10 + d.astype(np.int32), ev)
        ed += xdig
        epos = np.where(ise, j, epos)
        ine |= ise
    ok = ~bad & anyd & (sig <= 19) & (~ine | (ed >= 1)) & (ed <= 4)
    p = np.where(eneg, -ev, ev) - frac
    zero = ok & (mant == 0)
    small = ok & ~zero & (mant <= np.uint64(1 << 53)) & (np.abs(p) <= 22)
    mf = mant.astype(np.float64)
    pc = np.clip(p, -22, 22)
    vals = np.where(pc >= 0, mf * _P10[np.maximum(pc, 0)], mf / _P10[np.maximum(-pc, 0)])
    vals[zero] = 0.0
    done = zero | small
    if _P10L is not None:
        big = ok & ~done & (np.abs(p) <= 27)
        if big.any():
            idx = np.flatnonzero(big)
            ml = mant[idx].astype(np.longdouble)
            pb = p[idx]
            q = np.where(pb >= 0, ml * _P10L[np.maximum(pb, 0)], ml / _P10L[np.maximum(-pb, 0)])
            frm, _ = np.frexp(q)
            bits = (frm * np.longdouble(2.0**64)).astype(np.uint64)
            exact = (bits & np.uint64(0x7FF)) != np.uint64(0x400)  # not a double half-way point
            vals[idx[exact]] = q[exact].astype(np.float64)
            done[idx[exact]] = True
    vals = np.where(neg, -vals, vals)
    return vals, ~done


def _ldouble_selftest() -> bool:
    """Check the long double path against float() on hard cases; disable it if wrong."""
    cases = [
        b"0.9041545316576958", b"11.989932364784181", b"-0.012248889543116093", b"9007199254740993",
        b"18446744073709551615", b"1.7976931348623157e3", b"2.2250738585072014e-5", b"0.30000000000000004",
        b"123456789012345678e-20", b"9999999999999999999e5", b"4.9406564584124654e-3",
    ]
    data = b" ".join(cases)
    buf = np.frombuffer(data, dtype=np.uint8)
    s, e, pos = [], [], 0
    for c in cases:
        s.append(pos)
        e.append(pos + len(c))
        pos += len(c) + 1
    vals, fb = parse_decimal(buf, np.array(s), np.array(e))
    return all(fb[i] or float(vals[i]) == float(c) for i, c in enumerate(cases))


if _P10L is not None and not _ldouble_selftest():  # pragma: no cover - platform dependent
    _P10L = None


# ---------------------------------------------------------------------------
# Block parser and accumulation
# ---------------------------------------------------------------------------

_P10U = np.array([10**k for k in range(20)], dtype=np.uint64)


class _Bytes:
    """A block as a zero-padded uint8 array, read column-wise.

    Token matrices are built transposed, ``(width, rows)``: numpy is fast on
    long contiguous rows and slow on short inner axes.
    """

    def __init__(self, buf: np.ndarray):
        self.buf = buf
        self.n = len(buf)
        self.padded = buf
        self.pad = 0

    def _ensure(self, width: int) -> None:
        if width > self.pad:
            pad = max(64, width)
            padded = np.zeros(self.n + pad, dtype=np.uint8)
            padded[: self.n] = self.buf
            self.padded, self.pad = padded, pad

    def column(self, s: np.ndarray, j: int) -> np.ndarray:
        """Byte ``j`` of every token (unmasked: may run past a token's end)."""
        self._ensure(j + 1)
        return np.take(self.padded[j:], s)

    def columns(self, s: np.ndarray, lens: np.ndarray, width: int | None = None) -> np.ndarray:
        """Tokens ``buf[s:s+lens]`` as a ``(width, rows)`` uint8 matrix, zero beyond each end."""
        w = max(int(lens.max()) if width is None else width, 1)
        self._ensure(w)
        mt = np.empty((w, len(s)), dtype=np.uint8)
        for j in range(w):
            np.take(self.padded[j:], s, out=mt[j])
        mt *= np.arange(w, dtype=lens.dtype)[:, None] < lens
        return mt


def _parse_scores(bb: _Bytes, s: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Scores of the common form ``[+-]digits[.digits]`` in bulk, the rest via :func:`parse_decimal`.

    Same contract as :func:`parse_decimal` (exact, or flagged for ``float()``).
    """
    rows = len(s)
    mt = bb.columns(s, lens)
    mant = np.zeros(rows, dtype=np.uint64)
    nd = np.zeros(rows, dtype=np.int32)
    ndots = np.zeros(rows, dtype=np.int32)
    frac = np.zeros(rows, dtype=np.int32)
    seen = np.zeros(rows, dtype=bool)
    ten = np.uint64(10)
    for j in range(mt.shape[0]):
        c = mt[j]
        d = c - np.uint8(48)
        isd = d <= 9
        nd += isd
        mant = np.where(isd, mant * ten + d, mant)
        frac += isd & seen
        isdot = c == 46
        seen |= isdot
        ndots += isdot
    c0 = mt[0]
    neg = c0 == 45
    sgn = neg | (c0 == 43)
    simple = (nd + ndots + sgn == lens) & (ndots <= 1) & (nd >= 1) & (nd <= 19)
    small = simple & (mant <= np.uint64(1 << 53)) & (frac <= 22)
    vals = mant.astype(np.float64) / _P10[np.minimum(frac, 22)]
    done = small
    if _P10L is not None:
        big = simple & ~small & (frac <= 27)
        if big.any():
            idx = np.flatnonzero(big)
            q = mant[idx].astype(np.longdouble) / _P10L[frac[idx]]
            frm, _ = np.frexp(q)
            bits = (frm * np.longdouble(2.0**64)).astype(np.uint64)
            exact = (bits & np.uint64(0x7FF)) != np.uint64(0x400)  # not a double half-way point
            vals[idx[exact]] = q[exact].astype(np.float64)
            done = done.copy()
            done[idx[exact]] = True
    vals = np.where(neg, -vals, vals)
    if done.all():
        return vals, ~done
    idx = np.flatnonzero(~done)
    v, fb = parse_decimal(bb.buf, s[idx], s[idx] + lens[idx])
    vals[idx] = v
    fallback = np.zeros(rows, dtype=bool)
    fallback[idx] = fb
    return vals, fallback


def _hash_columns(mt: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """64-bit hash of (query code, doc bytes) from a ``(width, rows)`` matrix (in C when the
    compiled scanner is at hand: the same values)."""
    hashed = native.hash_columns(mt, codes)
    return _hash_columns_numpy(mt, codes) if hashed is None else hashed


def _hash_columns_numpy(mt: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """:func:`_hash_columns` with numpy."""
    h = codes.astype(np.uint64) * _HASH_K1
    for k in range(0, mt.shape[0], 8):
        w = np.zeros(mt.shape[1], dtype=np.uint64)
        for b in range(k, min(k + 8, mt.shape[0])):
            w |= mt[b].astype(np.uint64) << np.uint64(8 * (b - k))
        mixed = (h ^ w) * _HASH_K2
        mixed ^= mixed >> np.uint64(31)
        h = np.where(w != 0, mixed, h)  # zero words are padding: width independent
    return h


@dataclass
class _Block:
    """One block's rows, compact until :meth:`_Reader.finish` builds the Run."""

    docs: np.ndarray  # (width, rows) uint8: UTF-8 bytes, zero padded
    ascii: bool
    scores: np.ndarray
    seg_starts: np.ndarray  # rows where the query changes (run-length query codes)
    seg_codes: np.ndarray  # int32 query code of each segment (first appearance order)
    base: int  # line number of the block's first line
    line_idx: np.ndarray | None  # line offsets of rows, None when row i is line base+i
    udocs: np.ndarray | None = None  # decoded docs of a non-ASCII block (at finish)
    # Docnos far longer than the block's others: kept whole here, cut in ``docs`` (whose
    # width every row pays for). Empty for real runs.
    long_docs: dict[int, bytes] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.scores)

    def seg_lengths(self) -> np.ndarray:
        return np.diff(np.append(self.seg_starts, len(self)))

    def codes(self) -> np.ndarray:
        return np.repeat(self.seg_codes, self.seg_lengths())

    def doc(self, i: int) -> str:
        if i in self.long_docs:
            return self.long_docs[i].decode("utf-8")
        return bytes(self.docs[:, i]).rstrip(b"\0").decode("utf-8")

    def hashes(self, codes: np.ndarray) -> np.ndarray:
        """:func:`_hash_columns` of every row's whole docno (the long ones hashed on their own)."""
        out = _hash_columns(self.docs, codes)
        for i, raw in self.long_docs.items():
            whole = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 1)
            out[i] = _hash_columns(whole, codes[i : i + 1])[0]
        return out

    def line(self, i: int) -> int:
        return self.base + (i if self.line_idx is None else int(self.line_idx[i]))


Columns = list[tuple[np.ndarray, np.ndarray]]


def _single_spaced_columns(buf: np.ndarray, nlines: int) -> Columns | None:
    """Token (start, end) of the 6 columns when every line is ``a b c d e f``.

    The common layout: exactly one blank (space or tab) between fields, none
    at either end, no comments.  Then the blanks are the field separators,
    six per line, the sixth being the newline.  None when that does not hold.
    """
    if nlines == 0:
        return None
    ws = buf <= 32
    if ws[0] or (ws[1:] & ws[:-1]).any():
        return None
    sep = np.flatnonzero(ws)
    del ws
    if len(sep) != 6 * nlines:
        return None
    S = sep.reshape(nlines, 6)
    if not (buf[S[:, 5]] == 10).all():
        return None
    first = np.empty(nlines, dtype=sep.dtype)
    first[0] = 0
    first[1:] = S[:-1, 5] + 1
    if (buf[first] == 35).any():  # a comment line
        return None
    return [(first, S[:, 0])] + [(S[:, j - 1] + 1, S[:, j]) for j in range(1, 6)]


def _grouped_places(seg_keys: np.ndarray, seg_lens: np.ndarray, total: int) -> np.ndarray | None:
    """Where each row goes once rows are grouped per query (stable: file order within a query);
    None when they already are (the usual case: no permutation)."""
    if len(seg_keys) > 1 and not bool((seg_keys[1:] >= seg_keys[:-1]).all()):
        keys = np.repeat(seg_keys, seg_lens)
        order = np.argsort(keys, kind="stable")
        del keys
        dest = np.empty(total, dtype=np.int64)
        dest[order] = np.arange(total, dtype=np.int64)
        return dest
    return None


def _decoded(b: _Block) -> np.ndarray:
    """The decoded docnos of a non-ASCII block (set by :meth:`_Reader.finish` before they are read)."""
    assert b.udocs is not None
    return b.udocs


def _fill_rows(blocks: list[_Block], dest: np.ndarray | None, chars: np.ndarray, scores: np.ndarray) -> None:
    """Copy every block's docnos (as UCS-4 code points, zero padded to ``chars``' width) and scores
    to their rows (``dest``: their grouped places; None: in order), emptying ``blocks`` as it goes
    so that each block is released once copied."""
    width = chars.shape[1]
    pos = 0
    blocks.reverse()
    while blocks:  # release each block as the result fills up
        b = blocks.pop()
        m = len(b)
        where = slice(pos, pos + m) if dest is None else dest[pos : pos + m]
        if b.ascii:
            w = b.docs.shape[0]
            if dest is None:
                for j in range(w):  # column by column: numpy is slow on short rows
                    chars[where, j] = b.docs[j]
            else:
                chars[where, :w] = b.docs.T
        else:
            udocs = _decoded(b)
            w = udocs.dtype.itemsize // 4
            chars[where, :w] = udocs.view(np.uint32).reshape(m, w)
        if w < width:
            chars[where, w:] = 0
        scores[where] = b.scores
        pos += m
        del b


class _Reader:
    def __init__(self, path: str | os.PathLike):
        self.path = str(path)
        self.blocks: list[_Block] = []
        self.qcodes: dict[bytes, int] = {}
        self.tag: str | None = None
        self.seen_data = False
        self.line = 1  # number of the next block's first line

    def fail(self, line: int, message: str) -> InputError:
        return InputError(self.path, line, message)

    @staticmethod
    def token(block: bytes, s: int, e: int) -> str:
        return block[s:e].decode("utf-8", errors="replace")

    # -- one block ----------------------------------------------------------
    def _general_columns(self, buf: np.ndarray, base: int, nlines: int) -> tuple[Columns, np.ndarray | None]:
        """Columns for any layout: blank / comment lines, runs of blanks, extra fields."""
        n = len(buf)
        nonws = buf > 32  # every ASCII blank and control byte is <= 32
        change = np.empty(n + 1, dtype=bool)
        change[0] = nonws[0]
        change[n] = nonws[n - 1]
        np.not_equal(nonws[1:], nonws[:-1], out=change[1:n])
        del nonws
        edges = np.flatnonzero(change)
        del change
        starts, ends = edges[0::2], edges[1::2]
        nl = np.flatnonzero(buf == 10)
        k2 = len(edges) // nlines if nlines else 0
        if k2 >= 12 and k2 * nlines == len(edges):
            # Same token count k >= 6 on every line?  Then token k*i starts
            # after newline i-1 and token k*i+k-1 ends before newline i.
            E = edges.reshape(nlines, k2)
            if (E[1:, 0] > nl[:-1]).all() and (E[:, k2 - 1] <= nl).all() and (buf[E[:, 0]] != 35).all():
                return [(E[:, 2 * j], E[:, 2 * j + 1]) for j in range(6)], None
        tok_line = np.searchsorted(nl, starts)
        counts = np.bincount(tok_line, minlength=nlines)
        first_tok = np.cumsum(counts) - counts
        has = counts > 0
        data = has.copy()
        data[has] = buf[starts[first_tok[has]]] != 35  # '#': a comment line
        line_idx = np.flatnonzero(data)
        short = counts[line_idx] < 6
        if short.any():
            i = int(line_idx[np.argmax(short)])
            raise self.fail(base + i, FIELDS_MESSAGE.format(int(counts[i])))
        first = first_tok[line_idx]
        cols = [(starts[first + j], ends[first + j]) for j in range(6)]
        return cols, (None if len(line_idx) == nlines else line_idx)

    def block(self, block: bytes) -> None:
        base = self.line
        buf = np.frombuffer(block, dtype=np.uint8)
        nlines = count_newlines(block)
        self.line += nlines

        scanned = native.scan_run_block(block, nlines)
        if scanned is not None:  # the compiled scanner vouched for every line (gate.inputs.readers.native)
            self._native_block(block, buf, base, scanned)
            return

        ascii_only = self._check_block_text(block, buf, base, nlines)
        line_idx: np.ndarray | None = None
        col = _single_spaced_columns(buf, nlines)
        if len(block) > limits.MAX_TREC_LINE_BYTES:
            self._check_line_lengths(buf, base, col)
        if col is None:
            col, line_idx = self._general_columns(buf, base, nlines)
        rows = len(col[0][0])
        if rows == 0:
            return

        def line_of(r: int) -> int:
            return base + (r if line_idx is None else int(line_idx[r]))

        bb = _Bytes(buf)
        starts = [np.ascontiguousarray(c[0]) for c in col]
        lens = [c[1] - c[0] for c in col]
        # Every column below becomes a (width x rows) matrix: check widths first.
        self._check_widths(block, starts, lens, line_of)
        self._check_q0(block, bb, starts[1], lens[1], line_of)
        self._check_ranks(block, bb, starts[3], lens[3], line_of)

        # score
        s4, l4 = starts[4], lens[4]
        scores, fallback = _parse_scores(bb, s4, l4)
        self._scores_by_float(block, scores, fallback, s4, l4, line_of)

        self._add_rows(block, bb, base, line_idx, ascii_only, scores, (starts[0], lens[0]), None,
                       (starts[2], lens[2]), (starts[5], lens[5]))

    def _check_block_text(self, block: bytes, buf: np.ndarray, base: int, nlines: int) -> bool:
        """The block's bytes are text a run may hold: no control character, no CR inside a line,
        no byte-order mark, valid UTF-8. True when it is all ASCII. The first bad line is the one
        reported (a line that is not UTF-8 before a control character, say)."""
        low = np.count_nonzero(buf < 32)
        if low != nlines and low != nlines + block.count(b"\t") + block.count(b"\r"):
            bad = int(np.flatnonzero((buf < 32) & (buf != 9) & (buf != 10) & (buf != 13))[0])
            self._refuse_at(block, base, bad, f"control character 0x{int(buf[bad]):02x} in line")
        if b"\r" in block and block.count(b"\r") != block.count(b"\r\n"):
            bad = next(i for i in range(len(block)) if block[i] == 13 and block[i + 1 : i + 2] != b"\n")
            self._refuse_at(block, base, bad,
                            "carriage return inside a line (CR-only line ends?): lines must end in LF or CRLF")
        if UTF8_BOM in block:
            self._refuse_at(block, base, block.index(UTF8_BOM), "byte-order mark inside the file (files concatenated?)")
        ascii_only = block.isascii()
        if not ascii_only:
            try:
                block.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise self._not_utf8(block, base, exc) from None
        return ascii_only

    def _refuse_at(self, block: bytes, base: int, bad: int, message: str) -> NoReturn:
        """Refuse the line holding offset ``bad``, or an earlier line that is not UTF-8."""
        earlier = undecodable_before(block, bad)
        if earlier is not None:
            raise self._not_utf8(block, base, earlier)
        raise self.fail(base + block.count(b"\n", 0, bad), message)

    def _not_utf8(self, block: bytes, base: int, exc: UnicodeDecodeError) -> InputError:
        line_start = block.rfind(b"\n", 0, exc.start) + 1
        return self.fail(base + block.count(b"\n", 0, exc.start),
                         f"not valid UTF-8 (byte 0x{block[exc.start]:02x} at column {exc.start - line_start + 1})")

    def _check_line_lengths(self, buf: np.ndarray, base: int, col: Columns | None) -> None:
        """No line longer than a run line may be. Line lengths from what the layout already found:
        the newline after field 6 on the common layout; the newlines themselves otherwise."""
        if col is not None:
            lengths = col[5][1] - col[0][0]
        else:
            lengths = np.diff(np.flatnonzero(buf == 10), prepend=-1) - 1
        if int(lengths.max()) > limits.MAX_TREC_LINE_BYTES:
            raise self.fail(base + int(np.argmax(lengths > limits.MAX_TREC_LINE_BYTES)),
                            f"line longer than {limits.describe_bytes(limits.MAX_TREC_LINE_BYTES)} "
                            "(the limit for a run line)")

    def _check_widths(self, block: bytes, starts: list[np.ndarray], lens: list[np.ndarray],
                      line_of: Callable[[int], int]) -> None:
        """Query ids, docnos, ranks and scores within their lengths."""
        for j, limit, what in ((0, limits.MAX_ID_BYTES, "query id"), (2, limits.MAX_ID_BYTES, "docno"),
                               (3, _MAX_RANK_CHARS, "rank"), (4, limits.MAX_NUMBER_CHARS, "score")):
            too_long = lens[j] > limit
            if too_long.any():
                r = int(np.argmax(too_long))
                tok = self.token(block, int(starts[j][r]), int(starts[j][r] + lens[j][r]))
                unit = f"{limits.describe_bytes(limit)}" if j in (0, 2) else f"{limit} characters"
                raise self.fail(line_of(r), f"{what} '{limits.shorten(tok)}' is longer than {unit} "
                                f"({int(lens[j][r]):,} bytes)")

    def _check_q0(self, block: bytes, bb: _Bytes, s1: np.ndarray, l1: np.ndarray,
                  line_of: Callable[[int], int]) -> None:
        """Column 2: Q0 / q0 / 0."""
        c0, c1 = bb.column(s1, 0), bb.column(s1, 1)
        ok = ((l1 == 1) & (c0 == 48)) | ((l1 == 2) & ((c0 | np.uint8(0x20)) == 113) & (c1 == 48))
        if not ok.all():
            r = int(np.argmin(ok))
            tok = self.token(block, int(s1[r]), int(s1[r] + l1[r]))
            raise self.fail(line_of(r), f"column 2 is '{tok}', expected 'Q0' (or '0')")

    def _check_ranks(self, block: bytes, bb: _Bytes, s3: np.ndarray, l3: np.ndarray,
                     line_of: Callable[[int], int]) -> None:
        """Ranks: [+-]digits."""
        mt = bb.columns(s3, l3)
        sgn = (mt[0] == 43) | (mt[0] == 45)
        ok = (((mt - np.uint8(48)) <= 9).sum(axis=0, dtype=np.int64) + sgn == l3) & (l3 > sgn)
        if not ok.all():
            r = int(np.argmin(ok))
            tok = self.token(block, int(s3[r]), int(s3[r] + l3[r]))
            raise self.fail(line_of(r), f"rank '{tok}' is not an integer")

    def _scores_by_float(self, block: bytes, scores: np.ndarray, fallback: np.ndarray, s4: np.ndarray,
                         l4: np.ndarray, line_of) -> None:
        """The scores the exact parsers left to ``float()`` (and the errors of those that are not numbers)."""
        if not fallback.any():
            return
        for r in np.flatnonzero(fallback).tolist():
            raw = block[int(s4[r]) : int(s4[r] + l4[r])]
            text = raw.decode("utf-8", errors="replace")
            try:
                if not raw.isascii() or b"_" in raw:
                    raise ValueError
                value = float(raw)
            except ValueError:
                raise self.fail(line_of(r), f"score '{text}' is not a number") from None
            if not math.isfinite(value):
                raise self.fail(line_of(r), f"score '{text}' is not finite")
            scores[r] = value

    def _native_block(self, block: bytes, buf: np.ndarray, base: int, rows: native.Scanned) -> None:
        """A block the compiled scanner read: every line a valid row (only its scores may still
        fail ``float()``), ASCII, one blank between fields."""
        self._scores_by_float(block, rows.scores, rows.fallback, rows.score_start, rows.score_len,
                              lambda r: base + r)
        seg = np.flatnonzero(rows.new_query)
        self._add_rows(block, _Bytes(buf), base, None, True, rows.scores, (rows.qid_start, rows.qid_len), seg,
                       (rows.doc_start, rows.doc_len), (rows.tag_start, rows.tag_len))

    def _add_rows(self, block: bytes, bb: _Bytes, base: int, line_idx: np.ndarray | None, ascii_only: bool,
                  scores: np.ndarray, qids: tuple[np.ndarray, np.ndarray], seg: np.ndarray | None,
                  docnos: tuple[np.ndarray, np.ndarray], tags: tuple[np.ndarray, np.ndarray]) -> None:
        """Keep a block's rows: query ids as run-length codes, docnos as a byte matrix, the tag."""
        rows = len(scores)

        def line_of(r: int) -> int:
            return base + (r if line_idx is None else int(line_idx[r]))

        # query ids -> run-length codes (first appearance order)
        def id_array() -> np.ndarray:  # every row's query id, as one fixed-width bytes array
            qmat = np.ascontiguousarray(bb.columns(qids[0], qids[1]).T)
            return qmat.view(f"S{qmat.shape[1]}").ravel()

        qs = None
        if seg is None:  # the scanner found where the id changes; the numpy path looks here
            qs = id_array()
            seg = np.flatnonzero(qs[1:] != qs[:-1]) + 1
            seg = np.concatenate((np.zeros(1, dtype=seg.dtype), seg))
        if len(seg) < max(64, rows // 16):
            seg_codes = np.array([self._code(block[a:a + n]) for a, n in
                                  zip(qids[0][seg].tolist(), qids[1][seg].tolist())], dtype=np.int32)
        else:  # interleaved queries: code distinct ids once
            if qs is None:
                qs = id_array()
            uniq, inverse = np.unique(qs[seg], return_inverse=True)
            inverse = inverse.ravel()
            first_at = np.full(len(uniq), len(seg), dtype=np.int64)
            np.minimum.at(first_at, inverse, np.arange(len(seg)))
            for u in np.argsort(first_at, kind="stable").tolist():
                self._code(uniq[u])
            ucodes = np.array([self.qcodes[bytes(u)] for u in uniq.tolist()], dtype=np.int32)
            seg_codes = ucodes[inverse]

        # documents: kept as bytes until the end (a quarter of the 'U' size). Every row pays
        # for the widest docno, so a few far longer ones (up to MAX_ID_BYTES) are kept aside.
        long_docs: dict[int, bytes] = {}
        doc_starts, doc_lens = docnos
        if int(doc_lens.max()) > _LONG_DOCNO:
            cap = max(_LONG_DOCNO, 4 * int(np.median(doc_lens)))
            for r in np.flatnonzero(doc_lens > cap).tolist():
                long_docs[r] = block[int(doc_starts[r]) : int(doc_starts[r] + doc_lens[r])]
            if long_docs:
                doc_lens = np.minimum(doc_lens, cap)
        docs = bb.columns(doc_starts, doc_lens)

        if not self.seen_data:
            self.seen_data = True
            if int(tags[1][0]) > limits.MAX_ID_BYTES:
                raise self.fail(line_of(0), f"run tag is longer than {limits.describe_bytes(limits.MAX_ID_BYTES)}")
            self.tag = self.token(block, int(tags[0][0]), int(tags[0][0] + tags[1][0]))

        self.blocks.append(_Block(docs, ascii_only, scores, seg, seg_codes, base, line_idx, long_docs=long_docs))

    def _code(self, q: bytes) -> int:
        q = bytes(q)
        code = self.qcodes.get(q)
        if code is None:
            code = self.qcodes[q] = len(self.qcodes)
        return code

    # -- result ---------------------------------------------------------------
    def finish(self) -> Run:
        if not self.blocks:
            return Run(
                source=self.path,
                query_ids=(),
                starts=np.zeros(1, dtype=np.int64),
                doc_ids=np.array([], dtype="U1"),
                scores=np.array([], dtype=np.float64),
                tag=self.tag,
            )
        keys_b = list(self.qcodes)  # bytes, index = code
        nq = len(keys_b)
        by_bytes = sorted(range(nq), key=keys_b.__getitem__)  # UTF-8 byte order
        qrank = np.empty(nq, dtype=np.int32)
        qrank[by_bytes] = np.arange(nq, dtype=np.int32)
        blocks = self.blocks
        total = sum(len(b) for b in blocks)

        seg_keys = np.concatenate([qrank[b.seg_codes] for b in blocks])
        seg_lens = np.concatenate([b.seg_lengths() for b in blocks])
        counts = np.bincount(seg_keys, weights=seg_lens, minlength=nq).astype(np.int64)
        starts = np.zeros(nq + 1, dtype=np.int64)
        np.cumsum(counts, out=starts[1:])

        dest = _grouped_places(seg_keys, seg_lens, total)
        del seg_keys, seg_lens

        if self._maybe_duplicates(qrank, counts, starts, dest):
            self._check_duplicates(total, keys_b)

        query_ids = tuple(keys_b[c].decode("utf-8") for c in by_bytes)
        if any(b.long_docs for b in blocks):
            return self._finish_as_objects(blocks, total, dest, query_ids, starts)
        for b in blocks:
            if not b.ascii:
                raw = np.ascontiguousarray(b.docs.T).view(f"S{b.docs.shape[0]}").ravel().tolist()
                b.udocs = np.array([x.decode("utf-8") for x in raw], dtype=str)
        width = max(max(b.docs.shape[0] if b.ascii else _decoded(b).dtype.itemsize // 4 for b in blocks), 1)
        chars = np.empty((total, width), dtype=np.uint32)
        scores = np.empty(total, dtype=np.float64)
        self.blocks = []
        _fill_rows(blocks, dest, chars, scores)
        return Run(
            source=self.path,
            query_ids=query_ids,
            starts=starts,
            doc_ids=chars.view(f"U{width}").reshape(total),
            scores=scores,
            tag=self.tag,
        )

    def _finish_as_objects(self, blocks: list[_Block], total: int, dest: np.ndarray | None,
                           query_ids: tuple[str, ...], starts: np.ndarray) -> Run:
        """Docnos as Python strings: a fixed-width array would give every row the width of
        the longest (a million rows with one 1 KiB docno: 4 GB); objects cost their length."""
        doc_ids = np.empty(total, dtype=object)
        scores = np.empty(total, dtype=np.float64)
        pos = 0
        self.blocks = []
        for b in blocks:
            m = len(b)
            where = slice(pos, pos + m) if dest is None else dest[pos : pos + m]
            raw = np.ascontiguousarray(b.docs.T).view(f"S{b.docs.shape[0]}").ravel().tolist()
            texts = [x.decode("utf-8", "replace") for x in raw]  # a cut long docno is replaced below
            for i, whole in b.long_docs.items():
                texts[i] = whole.decode("utf-8")
            doc_ids[where] = texts
            scores[where] = b.scores
            pos += m
        return Run(source=self.path, query_ids=query_ids, starts=starts, doc_ids=doc_ids, scores=scores,
                   tag=self.tag)

    def _maybe_duplicates(
        self, qrank: np.ndarray, counts: np.ndarray, starts: np.ndarray, dest: np.ndarray | None
    ) -> bool:
        """Quick screen: could some query hold a document twice?  (False is exact.)

        Each query's 64-bit document hashes are sorted and neighbours compared;
        when queries have similar depths they are rows of one padded matrix,
        sorted row-wise (several times faster than one global sort).
        """
        nq = len(counts)
        total = int(starts[-1])
        depth = int(counts.max()) if nq else 0
        if depth < 2:
            return False
        if nq * depth > total + total // 2 + 1024:
            hashes = np.empty(total, dtype=np.uint64)
            pos = 0
            for b in self.blocks:
                hashes[pos : pos + len(b)] = b.hashes(b.codes())
                pos += len(b)
            hashes.sort()
            return bool((hashes[1:] == hashes[:-1]).any())
        table = np.full((nq, depth), np.iinfo(np.uint64).max, dtype=np.uint64)
        flat = table.reshape(-1)
        pos = 0
        for b in self.blocks:
            m = len(b)
            codes = b.codes()
            keys = qrank[codes].astype(np.int64)
            final = np.arange(pos, pos + m, dtype=np.int64) if dest is None else dest[pos : pos + m]
            flat[keys * depth + (final - starts[keys])] = b.hashes(codes)
            pos += m
        table.sort(axis=1)
        same = table[:, 1:] == table[:, :-1]
        same &= np.arange(depth - 1) < (counts - 1)[:, None]  # padding sorts last
        return bool(same.any())

    def _check_duplicates(self, total: int, keys_b: list[bytes]) -> None:
        """Raise at the first line repeating a (query, document) pair.

        Sorting 64-bit hashes of (query, document) finds candidates; equal
        hashes are then compared exactly (a collision is not a duplicate).
        """
        def all_hashes() -> np.ndarray:
            out = np.empty(total, dtype=np.uint64)
            pos = 0
            for b in self.blocks:
                out[pos : pos + len(b)] = b.hashes(b.codes())
                pos += len(b)
            return out

        srt = all_hashes()
        srt.sort()
        same = srt[1:] == srt[:-1]
        if not same.any():
            return
        suspects = np.unique(srt[1:][same])
        del srt, same
        hashes = all_hashes()
        where = np.minimum(np.searchsorted(suspects, hashes), len(suspects) - 1)
        rows = np.flatnonzero(suspects[where] == hashes)
        offsets = np.cumsum([0] + [len(b) for b in self.blocks])
        seen: dict[tuple[int, str], int] = {}
        for r in rows.tolist():  # rows ascend, i.e. file order
            bi = int(np.searchsorted(offsets, r, side="right")) - 1
            b = self.blocks[bi]
            i = r - int(offsets[bi])
            code = int(b.seg_codes[np.searchsorted(b.seg_starts, i, side="right") - 1])
            key = (code, b.doc(i))
            first = seen.setdefault(key, b.line(i))
            if first != b.line(i):
                qid = keys_b[code].decode("utf-8")
                raise self.fail(b.line(i), f"duplicate document '{limits.shorten(key[1])}' for query "
                                           f"'{limits.shorten(qid)}' (first at line {first})")


def read_run(path: str | os.PathLike, block_size: int = RUN_BLOCK_SIZE) -> Run:
    """Read a TREC run file (``.gz`` transparent) into a :class:`Run`.

    An empty file (no data lines) gives an empty Run; a missing file is
    ``InputError(path, None, "no such file")``.
    """
    reader = _Reader(path)
    for _, block in iter_blocks(path, block_size, count_lines=False, max_line=limits.MAX_TREC_LINE_BYTES,
                                what="a run line", lines_in_blocks=False):
        reader.block(block)
    return reader.finish()
