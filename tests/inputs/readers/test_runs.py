"""TREC run reader: layout handling, strict errors, grouping, exact scores."""

from __future__ import annotations

import random
import struct

import numpy as np
import pytest

from gate.inputs.readers.records import Run
from gate.inputs.readers.runs import FIELDS_MESSAGE, _Bytes, _parse_scores, parse_decimal, read_run
from tests.inputs.readers.helpers import error_of, expect_error, write

RUN = """\
q2 Q0 d1 1 3.5 sysA
q2 Q0 d2 2 2.25 sysA
q10 Q0 d3 1 -1 sysA
q10 Q0 d1 2 -1.5e-3 sysA
q9 Q0 d4 1 7 sysA
"""


def as_dict(run: Run) -> dict[str, list[tuple[str, float]]]:
    out = {}
    for i, qid in enumerate(run.query_ids):
        a, b = int(run.starts[i]), int(run.starts[i + 1])
        out[qid] = [(str(d), float(s)) for d, s in zip(run.doc_ids[a:b], run.scores[a:b])]
    return out


EXPECTED = {
    "q10": [("d3", -1.0), ("d1", -0.0015)],
    "q2": [("d1", 3.5), ("d2", 2.25)],
    "q9": [("d4", 7.0)],
}


# --------------------------------------------------------------------------- happy paths


def test_basic_run_grouped_in_byte_order(tmp_path):
    run = read_run(write(tmp_path, "run.txt", RUN))
    assert run.query_ids == ("q10", "q2", "q9")  # byte order, not numeric
    assert as_dict(run) == EXPECTED
    assert run.tag == "sysA"
    assert run.doc_ids.dtype.kind == "U" and run.scores.dtype == np.float64
    assert run.starts.tolist() == [0, 2, 4, 5]
    assert len(run) == 5 and run.source == str(tmp_path / "run.txt")


LAYOUTS = {
    "tabs": lambda t: t.replace(" ", "\t"),
    "runs of blanks": lambda t: t.replace(" ", "  \t "),
    "leading and trailing blanks": lambda t: "".join("  " + ln + " \t\n" for ln in t.splitlines()),
    "crlf": lambda t: t.replace("\n", "\r\n"),
    "comments and blank lines": lambda t: "# header comment\n\n" + t.replace("\n", "\n   \n", 1) + "  # trailing\n",
    "extra fields": lambda t: t.replace("sysA\n", "sysA extra1 extra2\n"),
    "no final newline": lambda t: t.rstrip("\n"),
    "bom": lambda t: "\ufeff" + t,
    "0 and q0 in column 2": lambda t: t.replace("Q0 d1 1", "0 d1 1").replace("Q0 d3", "q0 d3"),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("block_size", [7, 64, 1 << 20])
def test_layouts_read_the_same(tmp_path, layout, block_size):
    path = write(tmp_path, "run.txt", LAYOUTS[layout](RUN))
    run = read_run(path, block_size=block_size)
    assert as_dict(run) == EXPECTED
    assert run.tag == ("sysA" if layout != "extra fields" else "sysA")


def test_gzip_is_transparent_even_when_renamed(tmp_path):
    for name in ("run.txt.gz", "run.txt"):
        path = write(tmp_path, name, RUN, gz=True)
        assert as_dict(read_run(path)) == EXPECTED


def test_rows_stay_in_file_order_within_a_query(tmp_path):
    # interleaved queries, file order kept within each; rank column ignored
    text = "".join(f"{'ab'[i % 2]} Q0 d{i} {100 - i} {i % 3} t\n" for i in range(10))
    run = read_run(write(tmp_path, "run.txt", text), block_size=16)
    assert run.query_ids == ("a", "b")
    assert [d for d, _ in as_dict(run)["a"]] == ["d0", "d2", "d4", "d6", "d8"]
    assert [d for d, _ in as_dict(run)["b"]] == ["d1", "d3", "d5", "d7", "d9"]


def test_many_interleaved_queries_use_the_same_order(tmp_path):
    rng = random.Random(3)
    rows = [(f"q{rng.randrange(300)}", f"d{i}", rng.random()) for i in range(5000)]
    text = "".join(f"{q} Q0 {d} 1 {s!r} t\n" for q, d, s in rows)
    run = read_run(write(tmp_path, "run.txt", text), block_size=4096)
    expected: dict[str, list] = {}
    for q, d, s in rows:
        expected.setdefault(q, []).append((d, s))
    assert list(run.query_ids) == sorted(expected, key=lambda q: q.encode())
    assert as_dict(run) == expected


def test_unicode_ids_sort_by_utf8_bytes(tmp_path):
    text = "é Q0 dé 1 1 t\nz Q0 d😀 1 1 t\nZ Q0 ü 1 1 t\n"
    run = read_run(write(tmp_path, "run.txt", text))
    assert run.query_ids == ("Z", "z", "é")
    assert as_dict(run)["z"] == [("d😀", 1.0)]
    assert as_dict(run)["Z"] == [("ü", 1.0)]


def test_hash_in_docno_is_data(tmp_path):
    text = "1 Q0 doc_50#13_3087841662 1 0.7 t\n1 Q0 doc_50#14 2 0.6 t\n"
    run = read_run(write(tmp_path, "run.txt", text))
    assert [d for d, _ in as_dict(run)["1"]] == ["doc_50#13_3087841662", "doc_50#14"]


def test_docnos_of_different_widths_across_blocks(tmp_path):
    text = "1 Q0 a 1 1 t\n" * 1 + "1 Q0 " + "b" * 70 + " 2 1 t\n" + "2 Q0 cc 1 1 t\n"
    run = read_run(write(tmp_path, "run.txt", text), block_size=8)
    assert as_dict(run) == {"1": [("a", 1.0), ("b" * 70, 1.0)], "2": [("cc", 1.0)]}


def test_empty_run_is_allowed(tmp_path):
    for content in ("", "\n\n", "# only a comment\n  \n"):
        run = read_run(write(tmp_path, "run.txt", content))
        assert len(run) == 0 and run.query_ids == () and run.tag is None
        assert run.starts.tolist() == [0]


def test_tag_is_none_only_when_empty_and_first_line_wins(tmp_path):
    run = read_run(write(tmp_path, "run.txt", "1 Q0 a 1 1 first\n1 Q0 b 2 1 second\n"))
    assert run.tag == "first"


def test_negative_and_odd_but_valid_numbers(tmp_path):
    scores = ["-0", "+1", ".5", "5.", "-.25", "1e3", "1E-2", "-2.5e+1", "0.30000000000000004", "00012.50"]
    text = "".join(f"q Q0 d{i} {r} {s} t\n" for i, (r, s) in enumerate(zip(["1", "+2", "-3"] + ["4"] * 7, scores)))
    run = read_run(write(tmp_path, "run.txt", text))
    assert run.scores.tolist() == [float(s) for s in scores]
    assert np.signbit(run.scores[0])


# --------------------------------------------------------------------------- errors


def test_missing_file(tmp_path):
    expect_error(read_run, tmp_path / "nope.txt", None, "no such file")


def test_directory_is_not_a_run(tmp_path):
    expect_error(read_run, tmp_path, None, "is a directory, expected a file")


@pytest.mark.parametrize("block_size", [16, 1 << 20])
@pytest.mark.parametrize("fields", ["q Q0 d3 3", "q Q0 d3 3 1.0", "q", "q Q0"])
def test_too_few_fields(tmp_path, fields, block_size):
    text = "q Q0 d1 1 1.0 t\n# c\nq Q0 d2 2 1.0 t\n" + fields + "\nq Q0 d4 4 1.0 t\n"
    n = len(fields.split())
    expect_error(read_run, write(tmp_path, "run.txt", text), 4, FIELDS_MESSAGE.format(n), block_size=block_size)


def test_too_few_fields_message_text(tmp_path):
    path = write(tmp_path, "run.txt", "q Q0 d1 1 1.0 t\nq Q0 d2 2 1.0 t\nq Q0 d3 3\n")
    expect_error(read_run, path, 3, "expected 6 fields 'qid Q0 docno rank score tag', got 4")


@pytest.mark.parametrize("value", ["Q1", "QO", "00", "X", "q00", "Q0x"])
def test_bad_column_two(tmp_path, value):
    path = write(tmp_path, "run.txt", f"q Q0 d1 1 1 t\nq {value} d2 2 1 t\n")
    expect_error(read_run, path, 2, f"column 2 is '{value}', expected 'Q0' (or '0')")


@pytest.mark.parametrize("value", ["abc", "1,5", "1_000", "--1", "1e", ".", "-", "0x10", "1.2.3", "٣"])
def test_score_not_a_number(tmp_path, value):
    path = write(tmp_path, "run.txt",
                 f"q Q0 d1 1 1 t\nq Q0 d2 2 2 t\nq Q0 d3 3 3 t\nq Q0 d4 4 4 t\nq Q0 d5 5 {value} t\n")
    expect_error(read_run, path, 5, f"score '{value}' is not a number")


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-Infinity", "1e400", "-1e309"])
def test_score_not_finite(tmp_path, value):
    path = write(tmp_path, "run.txt",
                 f"q Q0 d1 1 1 t\nq Q0 d2 2 2 t\nq Q0 d3 3 3 t\nq Q0 d4 4 4 t\nq Q0 d5 5 {value} t\n")
    expect_error(read_run, path, 5, f"score '{value}' is not finite")


@pytest.mark.parametrize("value", ["1.0", "x", "1e3", "+", "-", "2_0", "1-"])
def test_rank_not_an_integer(tmp_path, value):
    path = write(tmp_path, "run.txt", f"q Q0 d1 1 1 t\nq Q0 d2 {value} 1 t\n")
    expect_error(read_run, path, 2, f"rank '{value}' is not an integer")


def test_rank_is_never_used_for_order(tmp_path):
    run = read_run(write(tmp_path, "run.txt", "q Q0 a 3 1 t\nq Q0 b 1 2 t\nq Q0 c -7 0 t\n"))
    assert [d for d, _ in as_dict(run)["q"]] == ["a", "b", "c"]


@pytest.mark.parametrize("block_size", [16, 1 << 20])
def test_duplicate_document_names_both_lines(tmp_path, block_size):
    text = "12 Q0 D1 1 3 t\n12 Q0 D2 2 2 t\n13 Q0 D1 1 3 t\n# comment\n\n12 Q0 D3 3 1 t\n12 Q0 D1 4 0 t\n"
    path = write(tmp_path, "run.txt", text)
    expect_error(read_run, path, 7, "duplicate document 'D1' for query '12' (first at line 1)", block_size=block_size)


def test_first_duplicate_in_file_order_is_reported(tmp_path):
    text = "a Q0 x 1 1 t\nb Q0 y 1 1 t\nb Q0 y 2 1 t\na Q0 x 2 1 t\n"
    expect_error(read_run, write(tmp_path, "run.txt", text), 3,
                 "duplicate document 'y' for query 'b' (first at line 2)")


def test_same_document_in_two_queries_is_fine(tmp_path):
    run = read_run(write(tmp_path, "run.txt", "1 Q0 d 1 1 t\n2 Q0 d 1 1 t\n"))
    assert len(run) == 2


def test_duplicate_across_many_blocks_with_long_ids(tmp_path):
    long = "x" * 30
    rows = [f"q Q0 {long}{i} 1 1 t" for i in range(200)] + [f"q Q0 {long}17 1 1 t"]
    path = write(tmp_path, "run.txt", "\n".join(rows) + "\n")
    expect_error(read_run, path, 201, f"duplicate document '{long}17' for query 'q' (first at line 18)", block_size=256)


def test_invalid_utf8_names_the_line(tmp_path):
    data = b"q Q0 d1 1 1 t\nq Q0 d\xff 2 1 t\n"
    expect_error(read_run, write(tmp_path, "run.txt", data), 2, "not valid UTF-8 (byte 0xff at column 7)")


def test_control_character_names_the_line(tmp_path):
    data = b"q Q0 d1 1 1 t\nq Q0 d1 1 1 t\nq Q0 d\x002 2 1 t\n"
    expect_error(read_run, write(tmp_path, "run.txt", data), 3, "control character 0x00 in line")


def test_corrupt_gzip(tmp_path):
    data = write(tmp_path, "x", RUN * 50, gz=True).read_bytes()
    path = write(tmp_path, "run.txt.gz", data[: len(data) // 2])
    err = error_of(read_run, path)
    assert err.path == str(path) and err.line is None
    assert str(err).startswith(f"{path}: corrupt or truncated gzip data")


# --------------------------------------------------------------------------- exact scores


def _tokens_parse(tokens: list[bytes]):
    data = b" ".join(tokens) + b"\n"
    buf = np.frombuffer(data, dtype=np.uint8)
    starts, pos = [], 0
    for t in tokens:
        starts.append(pos)
        pos += len(t) + 1
    s = np.array(starts, dtype=np.int64)
    lens = np.array([len(t) for t in tokens], dtype=np.int64)
    return _parse_scores(_Bytes(buf), s, lens), parse_decimal(buf, s, s + lens)


def _random_token(rng: random.Random) -> bytes:
    k = rng.random()
    if k < 0.3:
        return repr(rng.uniform(-1e3, 1e3)).encode()
    if k < 0.5:
        return repr(struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0]).encode()
    digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 21)))
    cut = rng.randint(0, len(digits))
    t = digits[:cut] + ("." if rng.random() < 0.8 else "") + digits[cut:]
    if rng.random() < 0.3:
        t = rng.choice("+-") + t
    if rng.random() < 0.3:
        t += rng.choice("eE") + rng.choice(["", "+", "-"]) + str(rng.randint(0, 40))
    return t.encode()


def test_vectorised_scores_are_bit_identical_to_float():
    """Every value the vectorised parser accepts equals float(token) bit for bit."""
    rng = random.Random(11)
    tokens = [_random_token(rng) for _ in range(20000)]
    tokens += [b"9007199254740993", b"18446744073709551615", b"0.9041545316576958", b"-0.012248889543116093"]
    for vals, fallback in _tokens_parse(tokens):
        checked = 0
        for i, t in enumerate(tokens):
            if fallback[i]:
                continue
            checked += 1
            assert struct.pack("d", float(vals[i])) == struct.pack("d", float(t)), t
        assert checked > len(tokens) * 0.6


def test_real_run_scores_match_float(tmp_path):
    rng = random.Random(5)
    rows = [(f"q{i // 100}", f"d{i}",
             rng.choice([repr(rng.random()), f"{rng.gauss(0, 5):.4f}", f"{rng.random():.17g}"])) for i in range(3000)]
    text = "".join(f"{q} Q0 {d} 1 {s} t\n" for q, d, s in rows)
    run = read_run(write(tmp_path, "run.txt", text), block_size=2048)
    got = {(q, d): s for q, docs in as_dict(run).items() for d, s in docs}
    for q, d, s in rows:
        assert struct.pack("d", got[(q, d)]) == struct.pack("d", float(s))


# --------------------------------------------------------------------------- duplicate screening


def _uneven_run(dup: bool) -> str:
    """One deep query and many one-document queries: the screen takes its 1-D path."""
    rows = [f"deep Q0 d{i} {i} 1 t" for i in range(3000)]
    rows += [f"q{i} Q0 d{i} 1 1 t" for i in range(1000)]
    if dup:
        rows.append("q7 Q0 d7 2 0 t")
    return "\n".join(rows) + "\n"


def test_duplicate_found_when_query_depths_differ(tmp_path):
    assert len(read_run(write(tmp_path, "ok.txt", _uneven_run(False)))) == 4000
    path = write(tmp_path, "run.txt", _uneven_run(True))
    expect_error(read_run, path, 4001, "duplicate document 'd7' for query 'q7' (first at line 3008)")


def test_hash_collisions_are_not_duplicates(tmp_path, monkeypatch):
    """Every hash equal: the exact check must still tell distinct documents apart."""
    import gate.inputs.readers.runs as runs

    monkeypatch.setattr(runs, "_hash_columns", lambda mt, codes: np.zeros(mt.shape[1], dtype=np.uint64))
    for text in (RUN, _uneven_run(False)):
        assert len(read_run(write(tmp_path, "run.txt", text), block_size=512)) > 0
    path = write(tmp_path, "dup.txt", "a Q0 x 1 1 t\na Q0 y 2 1 t\nb Q0 x 1 1 t\na Q0 x 3 1 t\n")
    expect_error(read_run, path, 4, "duplicate document 'x' for query 'a' (first at line 1)", block_size=16)


@pytest.mark.parametrize("block_size", [64, 4096, 1 << 20])
def test_a_few_very_long_docnos_keep_memory_to_their_own_length(tmp_path, block_size):
    # One 1,000-byte docno among 20,000 short ones: a fixed-width array would give every row
    # 1,000 characters (80 MB here, 4 GB for a million rows); the reader keeps docnos as objects.
    long_a, long_b = "L" * 999 + "a", "L" * 999 + "b"
    lines = [f"q{q} Q0 d{q}_{d} {d + 1} {1000 - d} t" for q in range(20) for d in range(1000)]
    lines.insert(5, f"q0 Q0 {long_a} 6 999.5 t")
    lines.append(f"q19 Q0 {long_b} 1001 0.5 t")
    path = write(tmp_path, "long.run", "\n".join(lines) + "\n")
    run = read_run(path, block_size=block_size)
    assert run.doc_ids.dtype == object
    assert run.doc_ids.nbytes < 20_002 * 16
    docs, scores = run.ranking("q0")
    assert docs[5] == long_a and scores[5] == 999.5 and docs[6] == "d0_5"
    assert run.ranking("q19")[0][-1] == long_b
    fixed = Run(run.source, run.query_ids, run.starts, run.doc_ids.astype(str), run.scores)
    from gate.evaluation.evaluate import evaluate
    from gate.inputs.readers.records import Qrels

    qrels = Qrels("q", {f"q{q}": {f"d{q}_3": 1, long_a: 2, long_b: 1} for q in range(20)})
    ids = [f"q{q}" for q in range(20)]
    got = evaluate(run, qrels, ["nDCG@10", "AP", "RR@10"], ids)
    want = evaluate(fixed, qrels, ["nDCG@10", "AP", "RR@10"], ids)
    assert all(np.array_equal(got.values[m], want.values[m]) for m in want.values)


def test_a_repeated_long_docno_is_a_duplicate_and_a_near_one_is_not(tmp_path):
    long = "L" * 900
    rows = [f"q0 Q0 d{d} {d + 1} {1000 - d} t" for d in range(100)]
    path = write(tmp_path, "dup.run", "\n".join([*rows, f"q0 Q0 {long} 101 0.5 t", f"q0 Q0 {long} 102 0.1 t"]) + "\n")
    message = str(error_of(lambda: read_run(path)))
    assert message.startswith(f"{path}:102: duplicate document 'LLL")
    assert len(message) < len(str(path)) + 200  # the id is shortened in the message
    assert message.endswith("for query 'q0' (first at line 101)")
    path = write(tmp_path, "near.run",
                 "\n".join([*rows, f"q0 Q0 {long}a 101 0.5 t", f"q0 Q0 {long}b 102 0.1 t"]) + "\n")
    assert len(read_run(path)) == 102
