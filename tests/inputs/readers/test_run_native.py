"""The compiled run scanner (runscan.c via gate.inputs.readers.native) against the numpy reader.

Both must give the same Run (ids, docnos, scores bit for bit, tag) or the same one-line error
(file, line, message) on every file; the scanner's scores must equal float() of their token
whenever it does not leave the token to float(). Skipped where the install built no scanner
(no C compiler): there the numpy reader is the only reader.
"""

from __future__ import annotations

import random
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

from gate.common.errors import InputError
from gate.inputs.readers import native
from gate.inputs.readers.runs import read_run

needs_scanner = pytest.mark.skipif(native.SCANNER is None, reason="this install has no compiled run scanner")

REPO = Path(__file__).resolve().parents[3]


def _read_both(path: Path, monkeypatch, block_size: int = 1 << 12):
    outcomes = []
    for scanner in (native.SCANNER, None):
        monkeypatch.setattr(native, "SCANNER", scanner)
        try:
            run = read_run(path, block_size=block_size)
        except InputError as error:
            outcomes.append(("error", error.path, error.line, error.message))
        else:
            outcomes.append(("run", run.query_ids, run.starts.tolist(), [str(d) for d in run.doc_ids],
                             run.scores.view(np.uint64).tolist(), run.tag))
    return outcomes


SCORES = ["1", "-1", "+2.5", "0.30000000000000004", "-0", "-0.0", ".5", "5.", "1e5", "1E-5", "2.5e+3",
          "9007199254740993", "18446744073709551615", "123456789012345678901", "0.9041545316576958",
          "11.989932364784181", "4.9406564584124654e-3", "1e22", "1e23", "1e-22", "1e-30", "7e300",
          "0.000000000000000000000001", "12345e+0012", "1e00001"]
BAD_SCORES = ["nan", "inf", "-inf", "1e400", "1_0", "0x10", "abc", ".", "e5", "1e", "1.2.3", "+-1", "1e5.5", "١"]


def _line(rng: random.Random, qid: str, doc: str, rank: int, score: str, sep: str = " ") -> str:
    return sep.join([qid, rng.choice(["Q0", "q0", "0"]), doc, str(rank), score, "tag"]) + "\n"


def _file(rng: random.Random, bad: str | None) -> str:
    lines = []
    qids = [f"q{rng.randrange(40)}" for _ in range(rng.randrange(1, 12))]
    for qid in qids if rng.random() < 0.8 else sorted(qids):
        for rank in range(1, rng.randrange(1, 30)):
            doc = f"D{rng.randrange(10 ** rng.randrange(1, 7))}"
            lines.append(_line(rng, qid, doc, rank, rng.choice(SCORES) if rng.random() < 0.3 else
                               repr(rng.gauss(0, 10) * 10 ** rng.randrange(-8, 8)),
                               sep="\t" if rng.random() < 0.05 else " "))
    if not lines:
        lines.append("q1 Q0 D1 1 1.0 tag\n")
    at = rng.randrange(len(lines))
    q, _, d, r, s, _ = lines[at].split()
    variants = {
        "score": lambda: _line(rng, q, d, int(r), rng.choice(BAD_SCORES)),
        "q0": lambda: f"{q} QX {d} {r} {s} tag\n",
        "rank": lambda: f"{q} Q0 {d} r{r} {s} tag\n",
        "short": lambda: f"{q} Q0 {d} {r} {s}\n",
        "extra": lambda: f"{q} Q0 {d} {r} {s} tag more fields\n",
        "spaces": lambda: f"{q}  Q0 {d} {r} {s} tag\n",
        "indent": lambda: f"  {q} Q0 {d} {r} {s} tag\n",
        "crlf": lambda: f"{q} Q0 {d} {r} {s} tag\r\n",
        "comment": lambda: "# a comment\n" + lines[at],
        "blank": lambda: "\n" + lines[at],
        "control": lambda: f"{q} Q0 {d}\x01 {r} {s} tag\n",
        "del": lambda: f"{q} Q0 {d}\x7f {r} {s} tag\n",
        "unicode": lambda: f"{q} Q0 {d}é\u4e2d {r} {s} tag\n",
        "long_doc": lambda: f"{q} Q0 {'L' * 300} {r} {s} tag\n",
        "too_long_doc": lambda: f"{q} Q0 {'L' * 1100} {r} {s} tag\n",
        "long_tag": lambda: f"{q} Q0 {d} {r} {s} {'T' * 1100}\n",
        "duplicate": lambda: lines[at] + lines[at],
        "regroup": lambda: lines[at] + "zz Q0 x 1 1 tag\n" + lines[at].replace(d, d + "b", 1),
        "cr_only": lambda: f"{q} Q0 {d} {r} {s} tag\r" + lines[at],
    }
    if bad is not None:
        lines[at] = variants[bad]()
    return "".join(lines)


VARIANTS = ["score", "q0", "rank", "short", "extra", "spaces", "indent", "crlf", "comment", "blank", "control",
            "del", "unicode", "long_doc", "too_long_doc", "long_tag", "duplicate", "regroup", "cr_only"]


@needs_scanner
@pytest.mark.parametrize("bad", [None, *VARIANTS])
def test_the_scanner_reads_as_the_numpy_reader_does(tmp_path, monkeypatch, bad):
    rng = random.Random(hash(bad) & 0xFFFF)
    for i in range(12):
        path = tmp_path / f"run{i}.txt"
        path.write_text(_file(rng, bad), encoding="utf-8")
        both = _read_both(path, monkeypatch, block_size=rng.choice([64, 1 << 10, 1 << 20]))
        assert both[0] == both[1], path.read_text()[:2000]


@needs_scanner
def test_interleaved_queries_take_the_distinct_id_path_alike(tmp_path, monkeypatch):
    rng = random.Random(5)
    lines = [f"q{rng.randrange(300)} Q0 D{i} 1 {rng.random()} t\n" for i in range(5000)]
    path = tmp_path / "interleaved.txt"
    path.write_text("".join(lines))
    both = _read_both(path, monkeypatch, block_size=1 << 16)
    assert both[0] == both[1] and both[0][0] == "run"


@needs_scanner
def test_real_runs_read_alike(monkeypatch):
    from tests.shared_data import REALDATA, need

    folder = need(REALDATA / "runs")
    paths = sorted(folder.rglob("*.gz"))
    assert len(paths) > 10
    paths = paths[::max(1, len(paths) // 12)]  # a dozen: official NIST runs and unpooled ones
    for path in paths:
        both = _read_both(path, monkeypatch, block_size=1 << 20)
        assert both[0] == both[1], path


@needs_scanner
def test_scores_equal_float_bit_for_bit_or_are_left_to_it(monkeypatch):
    """Random decimals of every length the parser takes: 1-21 digits, a point anywhere, exponents."""
    rng = random.Random(11)
    tokens = []
    for _ in range(60000):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randrange(1, 22)))
        if rng.random() < 0.7:
            cut = rng.randrange(len(digits) + 1)
            digits = digits[:cut] + "." + digits[cut:]
        if rng.random() < 0.3:
            digits += rng.choice("eE") + rng.choice(["", "+", "-"]) + str(rng.randrange(0, 40))
        tokens.append(rng.choice(["", "-", "+"]) + digits)
    # Exactly half-way between two doubles, and its neighbours: where a double rounding would err.
    for _ in range(3000):
        x = rng.uniform(1, 1e6)
        bits = struct.unpack("<Q", struct.pack("<d", x))[0]
        lo, hi = (struct.unpack("<d", struct.pack("<Q", b))[0] for b in (bits, bits + 1))
        from decimal import Decimal
        mid = (Decimal(lo) + Decimal(hi)) / 2
        tokens.extend([format(mid, "f")[:21], format(mid, "f")[:19], repr(lo), repr(hi)])
    body = "".join(f"q Q0 d{i} 1 {t} t\n" for i, t in enumerate(tokens)).encode()
    scanned = native.scan_run_block(body, len(tokens))
    assert scanned is not None
    flagged = 0
    for token, value, left in zip(tokens, scanned.scores.tolist(), scanned.fallback.tolist()):
        if left:
            flagged += 1
            continue
        expected = float(token)
        assert struct.pack("<d", value) == struct.pack("<d", expected), token
    assert flagged < len(tokens) // 4  # most tokens are parsed here, not left to float()


@needs_scanner
def test_blocks_the_scanner_declines_are_read_by_numpy(monkeypatch):
    assert native.scan_run_block(b"q Q0 d 1 1.0 t\n# comment\n", 2) is None
    assert native.scan_run_block(b"q Q0 d 1 1.0 t\r\n", 1) is None
    assert native.scan_run_block(b"q Q0 d 1 1.0 t", 0) is None
    assert native.scan_run_block("q Q0 dé 1 1.0 t\n".encode(), 1) is None
    assert native.scan_run_block(b"q Q0 d 1 1.0 t\n", 1).scores.tolist() == [1.0]


def _hook():
    sys.path.insert(0, str(REPO))
    try:
        import hatch_build
    finally:
        sys.path.remove(str(REPO))
    return hatch_build


def _hook_root(tmp_path: Path, hatch_build) -> Path:
    for source, _ in hatch_build.LIBRARIES:
        (tmp_path / source).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / source).write_text((REPO / source).read_text())
    return tmp_path


@pytest.mark.parametrize("cc", ["/nonexistent/cc", "true", "false"])
def test_a_compiler_that_fails_or_writes_nothing_leaves_the_install_going(tmp_path, monkeypatch, capsys, cc):
    hatch_build = _hook()
    root = _hook_root(tmp_path, hatch_build)
    monkeypatch.setenv("CC", cc)
    assert hatch_build.compile_scanner(root) is False
    assert capsys.readouterr().err.count("\n") == len(hatch_build.LIBRARIES)  # a line for each
    for source, target in hatch_build.LIBRARIES:
        assert not (root / target).exists()
        assert [p.name for p in (root / target).parent.iterdir()] == [source.name]  # no partial file


def test_each_library_builds_on_its_own(tmp_path, capsys):
    """A source that cannot be read costs its own library only, in one line."""
    hatch_build = _hook()
    root = _hook_root(tmp_path, hatch_build)
    (root / hatch_build.JOIN_SOURCE).unlink()
    if not hatch_build.compile_library(root, hatch_build.SOURCE, hatch_build.TARGET):
        pytest.skip("no C compiler here")
    assert hatch_build.compile_scanner(root) is False
    assert (root / hatch_build.TARGET).exists() and not (root / hatch_build.JOIN_TARGET).exists()
    assert "labeljoin.c not compiled" in capsys.readouterr().err


def test_turning_it_off_at_install_removes_an_earlier_build(tmp_path, monkeypatch, capsys):
    hatch_build = _hook()
    root = _hook_root(tmp_path, hatch_build)
    for _, target in hatch_build.LIBRARIES:
        (root / target).write_bytes(b"an earlier build")
    monkeypatch.setenv("RETRIEVAL_GATE_NATIVE", "off")
    assert hatch_build.compile_scanner(root) is False
    for _, target in hatch_build.LIBRARIES:
        assert not (root / target).exists()


@needs_scanner
def test_a_library_built_from_another_source_is_never_called(monkeypatch):
    """An editable install after a pull: the library is older than runscan.c (its arguments may
    differ): it is skipped before any call, and the numpy reader reads."""
    assert native._load() is not None
    monkeypatch.setattr(native, "source_sha256", lambda: "0" * 64)
    assert native._load() is None


def test_the_numpy_reader_alone_when_told(monkeypatch, tmp_path):
    """RETRIEVAL_GATE_NATIVE=0: no scanner is loaded (benchmarks compare the two this way)."""
    import subprocess

    code = ("from gate.inputs.readers import native; from gate.evaluation import label_join; "
            "print(native.SCANNER is None, label_join.COMPILED_JOIN is None)")
    out = subprocess.run([sys.executable, "-c", code], env={"RETRIEVAL_GATE_NATIVE": "0", "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "True True"


@pytest.mark.skipif(__import__("gate.evaluation.label_join").evaluation.label_join.COMPILED_JOIN is None,
                    reason="labeljoin.c was not compiled at install")
def test_a_join_library_built_from_another_source_is_never_called(monkeypatch):
    from gate.common import compiled
    from gate.evaluation import label_join

    assert label_join._load_compiled_join() is not None
    monkeypatch.setattr(compiled, "source_sha256", lambda source: "0" * 64)
    assert label_join._load_compiled_join() is None


@needs_scanner
@pytest.mark.parametrize("seed", range(6))
def test_the_compiled_duplicate_hash_is_the_numpy_one(seed):
    """Every width across the 8-byte words, zero padding inside a docno's matrix, large codes."""
    from gate.inputs.readers import runs

    rng = np.random.default_rng(seed)
    for width in (1, 7, 8, 9, 16, 17, 40):
        rows = int(rng.integers(1, 300))
        lens = rng.integers(1, width + 1, size=rows)
        docs = rng.integers(1, 256, size=(width, rows), dtype=np.uint8)
        docs *= np.arange(width)[:, None] < lens  # zero beyond each end, as the reader pads
        codes = rng.integers(0, 2**31 - 1, size=rows, dtype=np.int32)
        assert np.array_equal(native.hash_columns(docs, codes), runs._hash_columns_numpy(docs, codes))
    # Another layout is left to numpy.
    assert native.hash_columns(docs.T, codes) is None
    assert native.hash_columns(docs, codes.astype(np.int64)) is None
