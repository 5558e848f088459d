"""The compiled scanner of run blocks (``runscan.c``), when the install could build it.

``hatch_build.py`` compiles ``runscan.c`` into ``_runscan*.so`` beside this file when the package
is installed and a C compiler is at hand; this module loads it with ctypes. Without it (no
compiler: the container image, a bare Python + pip machine) or with ``RETRIEVAL_GATE_NATIVE=0``,
:data:`SCANNER` is None and the numpy reader does all the work: the two give the same runs, the
same errors and the same numbers (``tests/inputs/readers/test_run_native.py`` holds them to it).

The scanner takes a block only when every line is in the common layout and valid, and parses
scores exactly (a value only when it equals ``float()`` of the token; otherwise the token is
flagged for ``float()``); it is checked against ``float()`` on hard cases when loaded, and not
used if it disagrees.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gate.common import compiled, limits

__all__ = ["Scanned", "SCANNER", "scan_run_block", "disabled"]

disabled = compiled.disabled

_MAX_RANK_CHARS = 20  # as the numpy reader: a signed 64-bit integer

# Hard cases for the score parser (the numpy reader's self-test, and more): each must come out
# as float() gives it, or be flagged.
_SELFTEST = (
    b"0.9041545316576958", b"11.989932364784181", b"-0.012248889543116093", b"9007199254740993",
    b"18446744073709551615", b"1.7976931348623157e3", b"2.2250738585072014e-5", b"0.30000000000000004",
    b"123456789012345678e-20", b"9999999999999999999e5", b"4.9406564584124654e-3", b"-0", b"+.5", b"5.",
    b"1e22", b"1e23", b"9007199254740993e-22", b"0.000000000000000000000001", b"1e-4000", b"12345e+0012",
)


@dataclass(frozen=True)
class Scanned:
    """One block's rows as the scanner found them (offsets into the block)."""

    qid_start: np.ndarray
    qid_len: np.ndarray
    doc_start: np.ndarray
    doc_len: np.ndarray
    score_start: np.ndarray
    score_len: np.ndarray
    tag_start: np.ndarray
    tag_len: np.ndarray
    scores: np.ndarray
    fallback: np.ndarray  # bool: float() parses this row's score
    new_query: np.ndarray  # bool: the query id differs from the row before


def source_sha256() -> str:
    """The SHA-256 of the runscan.c beside this module (a library built from another is stale)."""
    return compiled.source_sha256(Path(__file__).with_name("runscan.c"))


def _load() -> ctypes.CDLL | None:
    lib = compiled.load(Path(__file__).with_name("runscan.c"), "_runscan*.so", source_sha256())
    if lib is None:
        return None
    scan = lib.rg_scan_run_block
    scan.restype = ctypes.c_int64
    scan.argtypes = (ctypes.c_char_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                     ctypes.c_int64, ctypes.c_int64) + (ctypes.c_void_p,) * 11
    lib.rg_hash_columns.restype = None
    lib.rg_hash_columns.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p,
                                    ctypes.c_void_p]
    return lib if _agrees_with_float(lib) else None


def _scan(lib: ctypes.CDLL, block: bytes, max_rows: int) -> Scanned | None:
    out = Scanned(
        qid_start=np.empty(max_rows, dtype=np.int64), qid_len=np.empty(max_rows, dtype=np.int32),
        doc_start=np.empty(max_rows, dtype=np.int64), doc_len=np.empty(max_rows, dtype=np.int32),
        score_start=np.empty(max_rows, dtype=np.int64), score_len=np.empty(max_rows, dtype=np.int32),
        tag_start=np.empty(max_rows, dtype=np.int64), tag_len=np.empty(max_rows, dtype=np.int32),
        scores=np.empty(max_rows, dtype=np.float64), fallback=np.empty(max_rows, dtype=np.bool_),
        new_query=np.empty(max_rows, dtype=np.bool_),
    )
    rows = lib.rg_scan_run_block(
        block, len(block), max_rows, limits.MAX_ID_BYTES, _MAX_RANK_CHARS, limits.MAX_NUMBER_CHARS,
        limits.MAX_TREC_LINE_BYTES, *(getattr(out, name).ctypes.data for name in Scanned.__dataclass_fields__))
    if rows <= 0:
        return None
    if rows == max_rows:
        return out
    return Scanned(**{name: getattr(out, name)[:rows] for name in Scanned.__dataclass_fields__})


def _agrees_with_float(lib: ctypes.CDLL) -> bool:
    lines = b"".join(b"q Q0 d 1 " + token + b" t\n" for token in _SELFTEST)
    scanned = _scan(lib, lines, len(_SELFTEST))
    if scanned is None:
        return False
    return all(flagged or float(value) == float(token) and str(float(value)) == str(float(token))
               for token, value, flagged in zip(_SELFTEST, scanned.scores.tolist(), scanned.fallback.tolist()))


SCANNER: ctypes.CDLL | None = _load()


def scan_run_block(block: bytes, lines: int) -> Scanned | None:
    """The rows of ``block`` (``lines`` whole lines) when every line is a valid row of the common
    layout; None otherwise (or without the scanner): the numpy reader then reads the block."""
    if SCANNER is None or lines == 0:
        return None
    return _scan(SCANNER, block, lines)


def hash_columns(docs: np.ndarray, codes: np.ndarray) -> np.ndarray | None:
    """The duplicate screen's hash of every row of a ``(width, rows)`` docno byte matrix with its
    query code (``gate.inputs.readers.runs._hash_columns_numpy``, computed in C); None without the
    scanner or for arrays of another layout."""
    if SCANNER is None or docs.dtype != np.uint8 or docs.ndim != 2 or not docs.flags.c_contiguous \
            or codes.dtype != np.int32 or not codes.flags.c_contiguous or len(codes) != docs.shape[1]:
        return None
    out = np.empty(docs.shape[1], dtype=np.uint64)
    SCANNER.rg_hash_columns(docs.ctypes.data, docs.shape[0], docs.shape[1], codes.ctypes.data, out.ctypes.data)
    return out
