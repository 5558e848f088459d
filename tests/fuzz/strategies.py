"""Hypothesis strategies for the fuzz suite, plus the harness they are checked with.

Three kinds of input:

* **models** (``run_models``, ``qrels_models``, ...): the value a file should
  parse to, and **writers** that turn a model into a well-formed file in one
  of its accepted layouts (separators, line ends, comments, gzip, BOM, ...);
* **mutations** of well-formed files (:func:`mutated`): flipped bytes,
  truncation, lines spliced from other formats, inserted NUL / CR / BOM /
  invalid UTF-8 / lone surrogate escapes, huge integers, deep nesting, odd
  (Unicode) whitespace, gzip wrapping / truncation / trailing garbage;
* **any bytes** (``st.binary``), used directly by the tests.

The harness (:func:`guarded`, :func:`outcome_of`, :func:`check_error`) runs a
reader under a wall-clock alarm and ``tracemalloc`` and classifies the
outcome: a value, an :class:`~gate.common.errors.InputError`, or a contract
violation (any other exception, a hang, memory out of proportion to the
input).
"""

from __future__ import annotations

import gzip
import io
import json
import math
import re
import signal
import string
import threading
import tracemalloc
import zlib
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from gate.common.errors import InputError

# =========================================================================== harness

#: Wall-clock budget of one reader call (the inputs are at most a few KB).
# A hang is measured in the process's own CPU time (ITIMER_PROF), which a loaded machine does
# not stretch: 10 CPU-seconds is generous (tracemalloc slows pure-Python parsing ~3x). A
# wall-clock alarm far beyond it still catches a reader blocked without using the CPU.
READ_SECONDS = 10.0
WALL_SECONDS = 300.0
#: Memory budget of one reader call: fixed overhead plus a factor of the
#: (decompressed) input size.  Generous: ruamel.yaml's round-trip nodes and
#: Python str objects cost tens of bytes per input byte.
MEM_FIXED = 40 << 20  # readers of small files read up to 16 MiB in one call (a transient buffer)
MEM_FACTOR = 400


class Hang(BaseException):
    """Raised by the alarm; a BaseException so ``except Exception`` in a reader cannot swallow it."""


@dataclass
class Outcome:
    value: Any = None
    error: InputError | None = None
    crash: BaseException | None = None  # anything else
    hang: bool = False
    peak: int = 0
    seconds: float = 0.0

    def violation(self, input_size: int) -> str | None:
        """A description of the contract violation, or None."""
        if self.hang:
            return (f"hang: no result after {READ_SECONDS:.0f} CPU-seconds (or {WALL_SECONDS:.0f} s) on "
                    f"{input_size} input bytes")
        if self.crash is not None:
            return f"raised {type(self.crash).__name__}: {str(self.crash)[:300]} (not InputError)"
        budget = MEM_FIXED + MEM_FACTOR * input_size
        if self.peak > budget:
            return f"memory: peak {self.peak / 1e6:.1f} MB for {input_size} input bytes (budget {budget / 1e6:.1f} MB)"
        return None


@contextmanager
def guarded(seconds: float = READ_SECONDS):
    """Run the body under a CPU-time timer (SIGPROF, a wall-clock SIGALRM far behind it) and
    tracemalloc; yields a dict filled on exit.

    ``resource.setrlimit(RLIMIT_AS)`` is deliberately not used: it is
    process-wide (pytest, hypothesis and numpy's thread pools share it), it
    limits address space rather than use (numpy / OpenBLAS reserve large
    mappings up front), and a MemoryError raised in hypothesis' own
    bookkeeping would be misreported.  Instead the inputs are kept small and
    the reader's peak traced allocation must stay proportional to them;
    runaway expansion (YAML alias bombs) is stopped by the timer first.
    """
    stats: dict[str, float] = {}
    use_alarm = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")

    def on_alarm(signum, frame):  # noqa: ARG001
        raise Hang()

    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    old = old_prof = None
    if use_alarm:
        old = signal.signal(signal.SIGALRM, on_alarm)
        old_prof = signal.signal(signal.SIGPROF, on_alarm)
        signal.setitimer(signal.ITIMER_PROF, seconds)  # CPU time: the same on a loaded machine
        signal.setitimer(signal.ITIMER_REAL, max(seconds, WALL_SECONDS))
    import time

    t0 = time.perf_counter()
    try:
        yield stats
    finally:
        if use_alarm:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGPROF, old_prof)
            signal.signal(signal.SIGALRM, old)
        stats["seconds"] = time.perf_counter() - t0
        stats["peak"] = max(0, tracemalloc.get_traced_memory()[1] - base)
        if started:
            tracemalloc.stop()


def outcome_of(fn: Callable[[], Any], seconds: float = READ_SECONDS, _retry: bool = True) -> Outcome:
    """Call ``fn`` under :func:`guarded`; iterators are consumed fully (``list``)."""
    out = Outcome()
    try:
        with guarded(seconds) as stats:
            value = fn()
            if hasattr(value, "__next__"):
                value = list(value)
            out.value = value
    except Hang:
        out.hang = True
    except InputError as exc:
        out.error = exc
    except RecursionError as exc:  # noqa: B014 - listed apart for clarity
        out.crash = exc
    except Exception as exc:  # noqa: BLE001
        out.crash = exc
    out.peak = int(stats.get("peak", 0))
    out.seconds = stats.get("seconds", 0.0)
    if _retry and not out.hang and out.crash is None and out.peak > MEM_FIXED:
        # The first call of a reader also pays for lazy imports and caches
        # (ruamel.yaml builds its resolver tables): measure a second, warm call.
        out.peak = min(out.peak, outcome_of(fn, seconds, _retry=False).peak)
    return out


def physical_lines(data: bytes) -> int:
    """Number of physical lines of a (possibly gzipped) file, as an editor counts them: CR LF, LF
    and a lone CR (old Mac line ends, which YAML and the JSON-lines readers count too) each end
    a line."""
    text = decompress_prefix(data)
    if text.startswith(b"\xef\xbb\xbf"):
        text = text[3:]
    text = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return text.count(b"\n") + (1 if text and not text.endswith(b"\n") else 0)


def check_error(err: InputError, paths: Any, data: bytes | None = None) -> None:
    """An InputError names the file (one of ``paths``) and, if it has a line, a line that exists."""
    names = {str(p) for p in (paths if isinstance(paths, (list, tuple, set)) else [paths])}
    assert err.path in names, f"InputError names {err.path!r}, not the file read ({sorted(names)}): {err}"
    text = str(err)
    assert any(text.startswith(n) for n in names), f"message does not start with the file name: {text!r}"
    assert "\n" not in text and "\r" not in text, f"message is not one line: {text!r}"
    if err.line is not None:
        assert isinstance(err.line, int) and err.line >= 1, f"line {err.line!r} is not 1-based: {text}"
        if data is not None:
            # n + 1: an error at the end of the stream sits after the last newline,
            # where an editor puts the cursor at the end of the file.
            n = max(physical_lines(data), 1) + 1
            assert err.line <= n, f"line {err.line} is past the end of the file ({n - 1} lines): {text}"


# =========================================================================== gzip helpers


def is_gzip(data: bytes) -> bool:
    return data[:2] == b"\x1f\x8b"


def strict_decompress(data: bytes) -> bytes | None:
    """The decompressed bytes when ``data`` is a complete, valid (multi-member) gzip; else None.

    Plain (non-gzip) data is returned unchanged.
    """
    if not is_gzip(data):
        return data
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error):
        return None


def decompress_prefix(data: bytes) -> bytes:
    """As much of ``data`` as decompresses (the prefix a streaming reader can see)."""
    if not is_gzip(data):
        return data
    out = bytearray()
    rest = data
    while rest[:2] == b"\x1f\x8b":
        d = zlib.decompressobj(wbits=31)
        # Fed in small pieces: what decompresses before a bad CRC (checked only at the end) is
        # what a streaming reader saw, and may already have reported a line of.
        broken = False
        body = max(len(rest) - 16, 0)
        pieces = [rest[i:min(i + 4096, body)] for i in range(0, body, 4096)]
        pieces += [bytes([b]) for b in rest[body:]]  # the trailer, a byte at a time
        fed = 0
        for piece in pieces:
            fed += len(piece)
            try:
                out += d.decompress(piece)
            except zlib.error:
                broken = True
                break
            if d.eof:
                break
        if broken or not d.eof:
            break
        rest = d.unused_data + rest[fed:]  # the next member, if any
    return bytes(out)


def gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


# =========================================================================== alphabets and ids

# Characters a well-formed id may contain: no whitespace of any kind (ASCII or
# Unicode: str.split() splits on both), no control characters, no surrogates,
# no BOM (a leading one is stripped by the line reader).
_ID_CHARS = st.characters(
    blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp", "Co", "Cn"),
    blacklist_characters="\ufeff\x1c\x1d\x1e\x1f\x85",
).filter(lambda c: not c.isspace())

_ASCII_ID = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.:/#-]{0,7}", fullmatch=True)
_NUMERIC_ID = st.integers(0, 10**9).map(str)
_UNICODE_ID = st.text(_ID_CHARS, min_size=1, max_size=6).filter(lambda s: not s.startswith("#"))

ids = st.one_of(_NUMERIC_ID, _ASCII_ID, _UNICODE_ID)

#: Unicode whitespace that is not ASCII whitespace (UTF-8 bytes all >= 0x80):
#: a run's tokens are split on ASCII blanks only, ``str.split()`` also splits on these.
UNICODE_SPACES = ["\xa0", "\u2028", "\u2029", "\u3000", "\u2003", "\u202f", "\x85", "\u1680"]

# Free text: anything printable-ish without newlines (tabs allowed where the format allows).
_TEXT_CHARS = st.characters(blacklist_categories=("Cs", "Cc", "Co", "Cn"),
                            blacklist_characters="\n\r\x85\u2028\u2029\ufeff")


def free_text(min_size: int = 1, max_size: int = 24) -> st.SearchStrategy[str]:
    return st.text(_TEXT_CHARS, min_size=min_size, max_size=max_size).filter(lambda s: s.strip() != "")


# =========================================================================== runs


def score_texts(value: float) -> st.SearchStrategy[str]:
    """Spellings of a finite float a run may use; the expected value is ``float(text)``.

    At most 64 characters: gate.common.limits.MAX_NUMBER_CHARS bounds a score token
    (``f"{1e308:.6f}"`` is 316 characters and is refused by design).
    """
    return st.sampled_from([t for t in [
            repr(value),
            f"{value:.6f}",
            f"{value:.17g}",
            f"{value:e}",
            f"{value:E}",
            ("+" + repr(value)) if value >= 0 and not repr(value).startswith("-") else repr(value),
            f"{value:.3f}".replace("0.", ".", 1) if 0 < value < 1 else repr(value),
            f"{value:.25f}" if abs(value) < 1e5 else repr(value),
        ] if len(t) <= 64] or [repr(value)]
    )


_FLOATS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(-1e6, 1e6, allow_nan=False),
    st.integers(-(10**6), 10**6).map(float),
    st.sampled_from([0.0, -0.0, 1.0, 0.9041545316576958, 5e-324, 1.7976931348623157e308, 2.2250738585072014e-308,
                     9007199254740993.0, 0.1, 0.30000000000000004, 1e22, 1e23, 123456789012345678.0]),
)

#: Decimal-looking score tokens, valid or not (the reader must agree with float()).
score_tokens = st.one_of(
    _FLOATS.flatmap(score_texts),
    st.from_regex(r"[+-]?[0-9]{0,25}(\.[0-9]{0,25})?([eE][+-]?[0-9]{1,6})?", fullmatch=True).filter(bool),
    st.sampled_from(["nan", "inf", "-inf", "Infinity", "1e400", "-1e400", "1e-400", "1_0", "0x10", ".", "-", "+", "e5",
                     "1e", "1e+", "--1", "1.2.3", "١", "1٫5", "0" * 30 + "1", "0." + "0" * 40 + "1", "NaN", "1E5",
                     "4.9406564584124654e-324", "2.4703282292062328e-324", "9" * 400, "1" + "0" * 308]),
)


@dataclass(frozen=True)
class RunModel:
    rows: tuple[tuple[str, str, str], ...]  # (qid, doc, score text), file order, (qid, doc) unique
    tag: str

    def expected(self) -> tuple[tuple[str, ...], dict[str, list[tuple[str, float]]], str | None]:
        """(query ids in UTF-8 byte order, {qid: [(doc, score)] in file order}, tag)."""
        per: dict[str, list[tuple[str, float]]] = {}
        for q, d, s in self.rows:
            per.setdefault(q, []).append((d, float(s)))
        qids = tuple(sorted(per, key=lambda q: q.encode("utf-8")))
        return qids, per, (self.tag if self.rows else None)


@st.composite
def run_models(draw, max_rows: int = 30, scores: st.SearchStrategy[str] | None = None) -> RunModel:
    qids = draw(st.lists(ids, min_size=1, max_size=5, unique=True))
    docs = draw(st.lists(ids, min_size=1, max_size=12, unique=True))
    pairs = draw(st.lists(st.tuples(st.sampled_from(qids), st.sampled_from(docs)), max_size=max_rows,
                          unique=True))
    if draw(st.booleans()):  # grouped by query (the usual layout)
        order = {q: i for i, q in enumerate(qids)}
        pairs.sort(key=lambda p: order[p[0]])
    score_st = scores if scores is not None else _FLOATS.flatmap(score_texts)
    rows = tuple((q, d, draw(score_st)) for q, d in pairs)
    tag = draw(st.one_of(_ASCII_ID, _UNICODE_ID))
    return RunModel(rows, tag)


@st.composite
def write_run(draw, model: RunModel) -> bytes:
    """A TREC run file for ``model`` in one of the layouts the docstring accepts."""
    sep = draw(st.sampled_from([" ", "\t", "single", "mixed"]))
    eol = draw(st.sampled_from(["\n", "\r\n", "mixed"]))
    lines: list[str] = []
    ranks = draw(st.sampled_from(["seq", "any"]))
    for i, (q, d, s) in enumerate(model.rows):
        if draw(st.integers(0, 9)) == 0:
            lines.append(draw(st.sampled_from(["", "   ", "# a comment", "  # indented comment", "\t", "#"])))
        col2 = draw(st.sampled_from(["Q0", "Q0", "q0", "0"]))
        rank = str(i + 1) if ranks == "seq" else draw(st.sampled_from(["0", "-1", "+7", "00012", "9" * 19]))
        extra = draw(st.sampled_from([[], [], ["extra"], ["a", "b"]]))
        fields = [q, col2, d, rank, s, model.tag, *extra]
        if sep == "single":
            line = " ".join(fields)
        elif sep == "mixed":
            line = ""
            for j, f in enumerate(fields):
                line += f if j == 0 else draw(st.sampled_from([" ", "\t", "  ", " \t "])) + f
            line = draw(st.sampled_from(["", " ", "\t"])) + line + draw(st.sampled_from(["", " ", "\t "]))
        else:
            line = sep.join(fields)
        lines.append(line)
    out = io.BytesIO()
    for line in lines:
        end = eol if eol != "mixed" else draw(st.sampled_from(["\n", "\r\n"]))
        out.write(line.encode("utf-8") + end.encode())
    data = out.getvalue()
    if data and not draw(st.integers(0, 4)):
        data = data.rstrip(b"\r\n")  # no final newline
    return finish_file(draw, data)


def finish_file(draw, data: bytes, bom_ok: bool = True, gzip_ok: bool = True) -> bytes:
    if bom_ok and draw(st.integers(0, 5)) == 0:
        data = b"\xef\xbb\xbf" + data
    if gzip_ok and draw(st.integers(0, 3)) == 0:
        data = gz(data)
    return data


def run_to_text(run) -> bytes:
    """The project's own row order (``Run.rows()``) written as TREC text."""
    tag = run.tag if run.tag else "tag"
    text = "".join(f"{r.query_id} Q0 {r.doc_id} {r.rank} {r.score!r} {tag}\n" for r in run.rows())
    data = text.encode("utf-8")
    return (b"\xef\xbb\xbf" + data) if text.startswith("\ufeff") else data


def run_summary(run) -> tuple:
    """Everything a Run means: query ids, per query (doc, score bits) in stored order, tag."""
    per = []
    for i, q in enumerate(run.query_ids):
        a, b = int(run.starts[i]), int(run.starts[i + 1])
        per.append((q, tuple((str(run.doc_ids[j]), _bits(float(run.scores[j]))) for j in range(a, b))))
    return tuple(run.query_ids), tuple(per), run.tag, len(run)


def _bits(x: float) -> str:
    return x.hex() if x == x else "nan"


# ------------------------------------------------------------------ run oracle (independent)

_RUN_TOKEN = re.compile(rb"[^\x00-\x20]+")
_INT_TOKEN = re.compile(rb"[+-]?[0-9]+")


def oracle_run(data: bytes) -> tuple | None:
    """The docstring of gate.inputs.readers.runs, implemented line by line in plain Python.

    Returns the :func:`run_summary` the reader must produce, or None when the
    file must be rejected.  ``tag`` is the sixth token of the first data line.
    """
    text = strict_decompress(data)
    if text is None:
        return None
    if text.startswith(b"\xef\xbb\xbf"):
        text = text[3:]
    lines = text.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    per: dict[bytes, list[tuple[bytes, float]]] = {}
    seen: set[tuple[bytes, bytes]] = set()
    tag = None
    for raw in lines:
        if any(b < 32 and b not in (9, 13) for b in raw):
            return None
        if b"\r" in raw[:-1]:
            return None  # a CR that ends no line (only CRLF line ends)
        if b"\xef\xbb\xbf" in raw:
            return None  # a byte-order mark after the start
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
        toks = _RUN_TOKEN.findall(raw)
        if not toks or toks[0].startswith(b"#"):
            continue
        if len(toks) < 6:
            return None
        q, c2, d, rank, score = toks[:5]
        if len(q) > 1024 or len(d) > 1024 or len(rank) > 20 or len(score) > 64:
            return None  # gate.common.limits: ids 1 KiB, rank 20 characters, score 64
        if c2 not in (b"Q0", b"q0", b"0"):
            return None
        if not _INT_TOKEN.fullmatch(rank):
            return None
        if not score.isascii() or b"_" in score:
            return None
        try:
            value = float(score)
        except ValueError:
            return None
        if not math.isfinite(value):
            return None
        if (q, d) in seen:
            return None
        seen.add((q, d))
        if tag is None:
            tag = toks[5].decode("utf-8")
        per.setdefault(q, []).append((d, value))
    qids = sorted(per)  # bytes order == UTF-8 byte order
    out = tuple((q.decode(), tuple((d.decode(), _bits(v)) for d, v in per[q])) for q in qids)
    return tuple(q.decode() for q in qids), out, tag, sum(len(v) for v in per.values())


# =========================================================================== qrels

rel_labels = st.one_of(st.integers(-3, 5), st.integers(-(1 << 63), (1 << 63) - 1))  # labels are 64-bit


@dataclass(frozen=True)
class QrelsModel:
    rows: tuple[tuple[str, str, int], ...]  # file order, (qid, doc) unique

    def judgments(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for q, d, r in self.rows:
            out.setdefault(q, {})[d] = r
        return out


@st.composite
def qrels_models(draw, id_strategy=ids, max_rows: int = 25) -> QrelsModel:
    qids = draw(st.lists(id_strategy, min_size=1, max_size=5, unique=True))
    docs = draw(st.lists(id_strategy, min_size=1, max_size=10, unique=True))
    pairs = draw(st.lists(st.tuples(st.sampled_from(qids), st.sampled_from(docs)), min_size=0, max_size=max_rows,
                          unique=True))
    return QrelsModel(tuple((q, d, draw(rel_labels)) for q, d in pairs))


@st.composite
def write_qrels(draw, model: QrelsModel, layout: str | None = None) -> tuple[str, bytes]:
    """(layout, bytes): ``trec`` 4 columns, ``compact`` 3 columns, ``beir`` TSV with its header."""
    layout = layout or draw(st.sampled_from(["trec", "compact", "beir"]))
    lines = []
    if layout == "beir":
        lines.append("query-id\tcorpus-id\tscore")
    for q, d, r in model.rows:
        if draw(st.integers(0, 9)) == 0 and layout != "beir":
            lines.append(draw(st.sampled_from(["", "# comment", "   "])))
        label = str(r)
        if r >= 0 and draw(st.integers(0, 6)) == 0:
            label = draw(st.sampled_from(["+", "0"])) + label
        if layout == "trec":
            sep = draw(st.sampled_from([" ", "\t", "  "]))
            lines.append(sep.join([q, draw(st.sampled_from(["0", "Q0", "1"])), d, label]))
        elif layout == "compact":
            lines.append(draw(st.sampled_from([" ", "\t"])).join([q, d, label]))
        else:
            lines.append("\t".join([q, d, label]))
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    data = "".join(line + eol for line in lines).encode("utf-8")
    return layout, finish_file(draw, data, bom_ok=True)


def qrels_to_text(qrels) -> bytes:
    """TREC 4 columns; BEIR TSV when an id holds whitespace (only BEIR qrels can carry one)."""
    rows = list(qrels)
    if any(len(q.split()) != 1 or len(d.split()) != 1 for q, d, _ in rows):
        text = BEIR_HEADER + "\n" + "".join(f"{q}\t{d}\t{r}\n" for q, d, r in rows)
    else:
        text = "".join(f"{q} 0 {d} {r}\n" for q, d, r in rows)
    data = text.encode("utf-8", errors="surrogatepass")
    return (b"\xef\xbb\xbf" + data) if text.startswith("\ufeff") else data


BEIR_HEADER = "query-id\tcorpus-id\tscore"


def qrels_summary(qrels) -> tuple:
    return tuple((q, tuple(docs.items())) for q, docs in qrels.judgments.items())


# =========================================================================== queries

_METADATA_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**18), 10**18) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)


@dataclass(frozen=True)
class QueryModel:
    qid: str
    text: str
    stratum: str | None
    metadata: tuple[tuple[str, Any], ...]


@st.composite
def query_models(draw, jsonl: bool, max_size: int = 8) -> tuple[QueryModel, ...]:
    if jsonl:
        qid_st = st.one_of(ids, free_text(1, 8).map(str.strip))
    else:
        qid_st = st.one_of(ids, st.tuples(_ASCII_ID, _ASCII_ID).map(" ".join))
    qids = draw(st.lists(qid_st, min_size=0, max_size=max_size, unique=True))
    out = []
    for q in qids:
        text = draw(free_text()).strip()
        if jsonl:
            stratum = draw(st.one_of(st.none(), ids))
            keys = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=5).filter(
                lambda k: k not in ("text", "stratum", "metadata", "query_id", "_id", "qid"))
            md = draw(st.dictionaries(keys, _METADATA_VALUES, max_size=2))
            out.append(QueryModel(q, text, stratum, tuple(md.items())))
        else:
            out.append(QueryModel(q, text, None, ()))
    return tuple(out)


@st.composite
def write_queries(draw, models: tuple[QueryModel, ...], jsonl: bool) -> bytes:
    lines = []
    for m in models:
        if draw(st.integers(0, 9)) == 0:
            lines.append(draw(st.sampled_from(["", "# comment", "  "])))
        if jsonl:
            key = draw(st.sampled_from(["query_id", "_id", "qid"]))
            qid: Any = int(m.qid) if m.qid.isascii() and m.qid.isdigit() and draw(st.booleans()) else m.qid
            obj: dict[str, Any] = {key: qid, "text": m.text}
            if m.stratum is not None:
                obj["stratum"] = m.stratum
            md = dict(m.metadata)
            if md and draw(st.booleans()):
                obj["metadata"] = md
            else:
                obj.update(md)
            lines.append(json_line(obj, ascii_only=draw(st.booleans())))
        else:
            pad = draw(st.sampled_from(["", " "]))
            lines.append(f"{m.qid}{pad}\t{pad}{m.text}")
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    return finish_file(draw, "".join(line + eol for line in lines).encode("utf-8"))


def json_line(obj: Any, *, ascii_only: bool) -> str:
    """One JSON Lines record, non-ASCII written raw unless ``ascii_only``; U+0085, U+2028 and
    U+2029 always escaped, as JSON writers do by default: the readers refuse them raw, since a
    runner splitting lines with str.splitlines() would end a line at each
    (gate.inputs.readers.textlines)."""
    text = json.dumps(obj, ensure_ascii=ascii_only)
    return text.replace("\x85", "\\u0085").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def queries_to_text(qs, jsonl: bool) -> bytes:
    out = []
    for q in qs.queries:
        if jsonl:
            obj: dict[str, Any] = {"query_id": q.query_id, "text": q.text}
            if q.stratum is not None:
                obj["stratum"] = q.stratum
            obj["metadata"] = dict(q.metadata)
            out.append(json.dumps(obj) + "\n")  # ASCII escapes: also carries lone surrogates
        else:
            out.append(f"{q.query_id}\t{q.text}\n")
    text = "".join(out)
    data = text.encode("utf-8", errors="surrogatepass") if not jsonl else text.encode("ascii")
    return (b"\xef\xbb\xbf" + data) if text.startswith("\ufeff") else data


def queries_summary(qs) -> tuple:
    return tuple((q.query_id, q.text, q.stratum, canonical(q.metadata)) for q in qs.queries)


def canonical(value: Any) -> str:
    """JSON text of a value (NaN-tolerant, key-order-insensitive) for equality checks."""
    return json.dumps(value, sort_keys=True, default=repr, allow_nan=True)


# =========================================================================== corpus


@dataclass(frozen=True)
class ChunkModel:
    cid: str
    doc: str | None  # None: defaulted from the chunk id
    text: str


def _doc_of(cid: str) -> str:
    return cid.partition("#")[0] or cid


@st.composite
def corpus_models(draw, max_size: int = 8) -> tuple[ChunkModel, ...]:
    cids = draw(st.lists(st.one_of(ids, st.tuples(_ASCII_ID, st.integers(0, 9)).map(lambda t: f"{t[0]}#{t[1]}")),
                         min_size=0, max_size=max_size, unique=True))
    out = []
    for c in cids:
        doc = draw(st.one_of(st.none(), ids))
        text = draw(st.text(_TEXT_CHARS, max_size=20))
        out.append(ChunkModel(c, doc, text))
    return tuple(out)


@st.composite
def write_corpus(draw, models: tuple[ChunkModel, ...], jsonl: bool) -> tuple[bytes, list[tuple[str, str, str]]]:
    """(bytes, expected chunks as (chunk_id, doc_id, text))."""
    lines = []
    expected = []
    if not jsonl:
        three = draw(st.booleans()) or any(m.doc is not None for m in models) or any("\t" in m.text for m in models)
        header = draw(st.sampled_from([None, "id\ttext", "ID\tText", "chunk_id\ttext"] if not three
                                      else [None, "chunk_id\tdoc_id\ttext", "id\tdoc_id\ttext"]))
        if header is None and models:
            first = models[0]
            # without a header the first line must not look like one
            if tuple(f.strip().lower() for f in (first.cid, first.text)) in {("id", "text")}:
                header = "id\ttext" if not three else "chunk_id\tdoc_id\ttext"
        if header is not None:
            lines.append(header)
    for m in models:
        if draw(st.integers(0, 9)) == 0:
            lines.append(draw(st.sampled_from(["", "# comment"])))
        doc = m.doc if m.doc is not None else _doc_of(m.cid)
        if jsonl:
            key = draw(st.sampled_from(["chunk_id", "id", "_id"]))
            obj: dict[str, Any] = {key: m.cid, "text": m.text}
            if m.doc is not None:
                obj["doc_id"] = m.doc
            if draw(st.integers(0, 4)) == 0:
                obj["title"] = ""
            lines.append(json_line(obj, ascii_only=draw(st.booleans())))
            expected.append((m.cid, doc, m.text))
        else:
            text = m.text
            if three:
                lines.append(f"{m.cid}\t{m.doc if m.doc is not None else ''}\t{text}")
            else:
                lines.append(f"{m.cid}\t{text}")
            expected.append((m.cid, doc, text))
    # CRLF keeps a text ending in "\r" intact ("x\r" + "\r\n" reads back as "x\r").
    eol = "\r\n" if any(t.endswith("\r") for _, _, t in expected) else draw(st.sampled_from(["\n", "\r\n"]))
    # a text-only line that is blank or a comment would be skipped: the writer avoids that.
    return finish_file(draw, "".join(line + eol for line in lines).encode("utf-8")), expected


def corpus_to_text(chunks, jsonl: bool) -> bytes:
    if jsonl:
        text = "".join(json.dumps({"chunk_id": c.chunk_id, "doc_id": c.doc_id, "text": c.text}) + "\n" for c in chunks)
        return text.encode("ascii")
    body = "".join(f"{c.chunk_id}\t{c.doc_id}\t{c.text}\r\n" for c in chunks)
    return ("chunk_id\tdoc_id\ttext\r\n" + body).encode("utf-8", errors="surrogatepass")


def corpus_summary(chunks) -> tuple:
    return tuple((c.chunk_id, c.doc_id, c.text) for c in chunks)


# =========================================================================== shares / YAML


@st.composite
def shares_models(draw) -> dict[str, float]:
    names = draw(st.lists(st.one_of(_ASCII_ID, _UNICODE_ID), min_size=1, max_size=5, unique=True))
    weights = draw(st.lists(st.integers(0, 50), min_size=len(names), max_size=len(names)).filter(lambda w: sum(w) > 0))
    total = sum(weights)
    shares = [w / total for w in weights]
    # make them sum to 1 exactly in fsum by giving the rest to the last
    shares[-1] = max(0.0, 1.0 - math.fsum(shares[:-1]))
    return dict(zip(names, shares))


def yaml_scalar(value: Any) -> str:
    """A YAML flow scalar for ``value`` (strings always double-quoted, JSON escapes)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        return repr(value)
    return str(value)


def yaml_flow(value: Any) -> str:
    """Plain data as a YAML flow (JSON-like) expression."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{yaml_flow(str(k))}: {yaml_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(yaml_flow(v) for v in value) + "]"
    return yaml_scalar(value)


@st.composite
def write_shares(draw, shares: dict[str, float], guarded: list[str]) -> bytes:
    form = draw(st.sampled_from(["block", "strata"] if guarded else ["plain", "block", "strata"]))
    if form == "plain":
        lines = [f"{yaml_scalar(k)}: {v!r}" for k, v in shares.items()]
    else:
        indent = "  " if form == "strata" else ""
        lines = ["strata:"] if form == "strata" else []
        if draw(st.booleans()):
            lines.append(f"{indent}shares: {yaml_flow(shares)}")
        else:
            lines.append(f"{indent}shares:")
            lines += [f"{indent}  {yaml_scalar(k)}: {v!r}" for k, v in shares.items()]
        if guarded:
            lines.append(f"{indent}guarded: {yaml_flow(guarded)}")
    if draw(st.integers(0, 3)) == 0:
        lines.insert(0, "# traffic shares")
    return finish_file(draw, ("\n".join(lines) + "\n").encode("utf-8"), bom_ok=False, gzip_ok=False)


# =========================================================================== gate config

_CONFIG_TEXT = st.one_of(_ASCII_ID, free_text(1, 12))


# Candidate values for a config key; each key keeps those its own checker accepts,
# so the generator follows gate.inputs.config.SCHEMA (ranges, choices) without copying it.
_CHOICE_WORDS = ["command", "run-file", "reference", "percentile", "basic", "bca", "exact", "trigram-jaccard",
                 "calibrated", "interval", "regression", "non-inferiority", "adaptive", "always", "pooled",
                 "relevance-only", "dev", "test", "quepid", "rank-eval", "chunk", "document", "http", "GET", "POST",
                 "refuse", "empty"]
_POOL: list[Any] = (
    _CHOICE_WORDS + ["text", "a b", "ünï", "0", "1.5", "20%", "15ms", "https://example.github.io/search/"]
    + [0, 1, 2, 3, 5, 7, 10, 100, 1000, 10_000, 2**31, 2**62, -1, -7]
    + [0.0, 0.01, 0.02, 0.1, 0.3, 0.5, 0.85, 0.99, 1.0, 1.5, 60.0, 3600.0, -0.5, 1e6]
    + [True, False, ["a"], ["a", "b c"], [], ["quepid", "rank-eval"], {"k": 1}, {"a": {"b": [1, "x"]}}, {}]
    # runner.http: a URL, a body and headers with placeholders, a path into the answer
    + ["http://127.0.0.1:9200/{config.index}/_search?q={query}", "hits.hits", "root.children.0",
       {"query": {"match": {"text": "{query}"}}, "size": "{depth}", "{{literal}}": "{config}"},
       {"Authorization": "ApiKey ${ES_API_KEY}"}]
)
_GENERATORS = [  # (probe value, strategy of more values like it)
    ("probe-text", _CONFIG_TEXT),
    (["probe"], st.lists(_CONFIG_TEXT, max_size=3)),
    ({"probe": 1}, st.dictionaries(_ASCII_ID, _METADATA_VALUES, max_size=3)),
]
_KEY_VALUES: dict[str, st.SearchStrategy[Any]] = {}


def _accepts(checker: Callable, key: str, value: Any) -> bool:
    from gate.inputs.config import _Where

    try:
        checker(value, _Where("<gen>", None, key))
    except InputError:
        return False
    return True


def _values_for(checker: Callable, key: str) -> st.SearchStrategy[Any]:
    if key not in _KEY_VALUES:
        accepted = [v for v in _POOL if _accepts(checker, key, v)]
        options: list[st.SearchStrategy[Any]] = [st.sampled_from(accepted)] if accepted else []
        for probe, strategy in _GENERATORS:
            if _accepts(checker, key, probe):
                options.append(strategy.filter(lambda v, c=checker, k=key: _accepts(c, k, v)))
        assert options, f"no generated value is accepted for config key {key}"
        _KEY_VALUES[key] = st.one_of(options)
    return _KEY_VALUES[key]


@st.composite
def config_documents(draw) -> dict[str, Any]:
    """A nested config document accepted by gate.inputs.config.SCHEMA (random subset of keys)."""
    from gate.inputs.config import REQUIRED, SCHEMA

    def section(schema: dict[str, Any], prefix: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, spec in schema.items():
            if isinstance(spec, dict):
                required = any(not isinstance(v, dict) and v[1] is REQUIRED for v in spec.values())
                if required or draw(st.integers(0, 3)) == 0:
                    out[key] = section(spec, prefix + key + ".")
                continue
            checker, default = spec
            if default is REQUIRED or draw(st.integers(0, 4)) == 0:
                if key == "shares":
                    out[key] = draw(shares_models())
                else:
                    out[key] = draw(_values_for(checker, prefix + key))
        return out

    return section(SCHEMA, "")


def config_to_yaml(doc: dict[str, Any]) -> str:
    """Block-style YAML of a nested document (ruamel's safe dumper)."""
    from ruamel.yaml import YAML

    buffer = io.StringIO()
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False  # keep the order (shares keep the file's order)
    yaml.allow_unicode = True
    # A strategy may hand the same dict object to two keys; the dumper would write it once with
    # an anchor and then an alias, which the gate refuses by design. Each value is written out.
    yaml.dump(_unshared(doc), buffer)
    return buffer.getvalue()


def _unshared(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _unshared(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_unshared(item) for item in value]
    return value


def nest_dotted(values: dict[str, Any]) -> dict[str, Any]:
    """``{"a.b": 1}`` -> ``{"a": {"b": 1}}`` (tuples as lists), dropping None values."""
    out: dict[str, Any] = {}
    for dotted, value in values.items():
        if value is None:
            continue
        parts = dotted.split(".")
        node = out
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = list(value) if isinstance(value, tuple) else value
    return out


# =========================================================================== retrieval config

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(1 << 63), (1 << 63) - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
retrieval_documents = st.dictionaries(st.text(min_size=1, max_size=8), json_values, max_size=5)


# =========================================================================== mutations

#: Lines of every format, spliced into files of another one.
FOREIGN_LINES = [
    b"1 Q0 doc1 1 12.5 tag",
    b"1 0 doc1 1",
    b"q1 doc1 2",
    b"query-id\tcorpus-id\tscore",
    b"q1\tdoc1\t1",
    b"q1\twhat is a gate",
    b'{"_id": "q1", "text": "what is a gate"}',
    b'{"chunk_id": "d#1", "text": "a chunk"}',
    b"id\ttext",
    b"chunk_id\tdoc_id\ttext",
    b"strata:",
    b"  shares: {a: 0.5, b: 0.5}",
    b"golden: {queries: q.jsonl, qrels: q.txt}",
    b"- - - -",
    b"? [a, b]",
    b": :",
    b"&a [*a]",
    b"*undefined",
    b"!!python/object:os.system ls",
    b"%YAML 1.1",
    b"---",
    b"...",
    b"[",
    b"{",
    b'"unterminated',
    b"\t\t\t",
    b"# comment",
    b"",
]

#: Byte sequences inserted at random positions.
INSERTS = [
    b"\x00", b"\r", b"\r\n", b"\n", b"\t", b"\x0b", b"\x0c", b"\x1f", b"\x7f", b"\xef\xbb\xbf",
    b"\xff", b"\xfe", b"\xc3", b"\x80", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
    b"\xc2\xa0", b"\xe2\x80\xa8", b"\xc2\x85", b"\xe3\x80\x80", b"\xe2\x80\x8b",
    b"\\ud800", b"\\udc00", b'"\\ud83d"', b"\\u0000",
    b"9" * 5000, b"9" * 400, b"1e999", b"-0", b"nan", b"NaN", b"inf", b".inf", b"0x" + b"f" * 400,
    b"#", b" ", b"  ", b"\"", b"'", b":", b"- ", b"{", b"}", b"[", b"]", b",", b"&a ", b"*a", b"!!binary ",
    b"\xf0\x9f\x98\x80", b"\xd8\xa7", b"\xe1\x9a\x80",
]


def deep_json(depth: int) -> bytes:
    return b'{"_id": "deep", "chunk_id": "deep", "text": "x", "m": ' + b"[" * depth + b"]" * depth + b"}"


def deep_yaml(depth: int, key: str = "a") -> bytes:
    return f"{key}: ".encode() + b"[" * depth + b"]" * depth


def alias_bomb(levels: int, width: int = 10, key: str = "bomb", indent: str = "") -> bytes:
    lines = [f"{indent}{key}:", f"{indent}  - &l0 [" + ", ".join(["lol"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"{indent}  - &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]")
    return ("\n".join(lines) + "\n").encode()


def _split_lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


@st.composite
def one_mutation(draw, data: bytes) -> bytes:
    kind = draw(st.sampled_from([
        "flip", "flip", "truncate", "insert", "insert", "insert", "splice", "dup_line", "drop_line", "swap_lines",
        "replace_token_big", "deep", "space", "gzip_truncate", "gzip_garbage", "gzip_flip", "wrap_gzip", "crlf",
        "bom_twice", "surrogate",
    ]))
    n = len(data)
    if kind == "flip" and n:
        i = draw(st.integers(0, n - 1))
        bit = draw(st.integers(0, 7))
        return data[:i] + bytes([data[i] ^ (1 << bit)]) + data[i + 1:]
    if kind == "truncate" and n:
        return data[: draw(st.integers(0, n - 1))]
    if kind == "insert":
        i = draw(st.integers(0, n))
        return data[:i] + draw(st.sampled_from(INSERTS)) + data[i:]
    plain = decompress_prefix(data)
    was_gz = is_gzip(data)

    def back(b: bytes) -> bytes:
        return gz(b) if was_gz else b

    lines = _split_lines(plain)
    if kind == "splice":
        i = draw(st.integers(0, len(lines)))
        lines.insert(i, draw(st.sampled_from(FOREIGN_LINES)))
        return back(b"\n".join(lines))
    if kind == "dup_line" and lines:
        i = draw(st.integers(0, len(lines) - 1))
        lines.insert(i, lines[i])
        return back(b"\n".join(lines))
    if kind == "drop_line" and len(lines) > 1:
        del lines[draw(st.integers(0, len(lines) - 1))]
        return back(b"\n".join(lines))
    if kind == "swap_lines" and len(lines) > 1:
        i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
        lines[i], lines[j] = lines[j], lines[i]
        return back(b"\n".join(lines))
    if kind == "replace_token_big":
        tokens = list(re.finditer(rb"[0-9]+(\.[0-9]+)?", plain))
        if tokens:
            m = tokens[draw(st.integers(0, len(tokens) - 1))]
            big = draw(st.sampled_from([b"9" * 5000, b"9" * 4301, b"1" + b"0" * 400, b"1e400", b"-" + b"9" * 30]))
            return back(plain[: m.start()] + big + plain[m.end():])
    if kind == "deep":
        i = draw(st.integers(0, len(lines)))
        depth = draw(st.sampled_from([50, 1000, 5000, 100_000]))
        lines.insert(i, draw(st.sampled_from([deep_json(depth), deep_yaml(min(depth, 200))])))
        return back(b"\n".join(lines))
    if kind == "space":
        ws = draw(st.sampled_from([s.encode() for s in UNICODE_SPACES] + [b"\x0b", b"\x0c", b"\t", b"  "]))
        spots = [m.start() for m in re.finditer(rb"[ \t]", plain)]
        if spots:
            i = spots[draw(st.integers(0, len(spots) - 1))]
            return back(plain[:i] + ws + plain[i + 1:])
        return back(plain + ws)
    if kind == "gzip_truncate":
        z = gz(plain)
        return z[: draw(st.integers(1, len(z) - 1))]
    if kind == "gzip_garbage":
        return gz(plain) + draw(st.sampled_from([b"x", b"\x00", b"\x00" * 8, b"garbage\n", b"\x1f\x8b", b"\x1f\x8b\x08",
                                                 gz(b"")[:5]]))
    if kind == "gzip_flip":
        z = bytearray(gz(plain))
        i = draw(st.integers(2, len(z) - 1))
        z[i] ^= 1 << draw(st.integers(0, 7))
        return bytes(z)
    if kind == "wrap_gzip":
        return gz(data)
    if kind == "crlf":
        return back(plain.replace(b"\n", draw(st.sampled_from([b"\r\n", b"\r", b"\n\r", b"\r\r\n"]))))
    if kind == "bom_twice":
        return back(b"\xef\xbb\xbf\xef\xbb\xbf" + plain)
    if kind == "surrogate":
        quotes = [m.end() for m in re.finditer(rb'": "', plain)]
        if quotes:
            i = quotes[draw(st.integers(0, len(quotes) - 1))]
            esc = draw(st.sampled_from([b"\\ud800", b"\\udfff", b"\\ud83d", b"\\udc00x"]))
            return back(plain[:i] + esc + plain[i:])
    return data + draw(st.sampled_from(INSERTS))


@st.composite
def mutated(draw, base: st.SearchStrategy[bytes], max_mutations: int = 3) -> bytes:
    """A well-formed file from ``base`` with 1..``max_mutations`` mutations applied."""
    data = draw(base)
    for _ in range(draw(st.integers(1, max_mutations))):
        data = draw(one_mutation(data))
    return data


# Printable ASCII filler for "any bytes" inputs that are mostly text.
texty_bytes = st.one_of(
    st.binary(max_size=300),
    st.text(string.printable + "\t\u00e9\u4e2d\ufeff\xa0", max_size=300).map(lambda s: s.encode("utf-8")),
    st.lists(st.sampled_from(FOREIGN_LINES + INSERTS[:20]), max_size=12).map(b"\n".join),
)
