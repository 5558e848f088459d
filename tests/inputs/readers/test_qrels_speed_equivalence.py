"""read_qrels' fast path against the line-by-line reader it stands in for.

``read_qrels`` reads a file in blocks and splits each block at once while it
can prove the block regular; anything else sends the whole file through
``_read_qrels_lines``, the former reader, kept unchanged.  Random files,
regular and hostile, are read both ways here, with blocks from a few bytes
to the real size, so that a file spans many blocks and a bad line sits in
the middle of a later one.  The outcomes must be identical: the same judgments
in the same order (queries and documents), as ints, from the same source, or
an error with the same path, line and message.  The fast path is also read
on its own: where it finishes it must agree with the line reader, and on a
regular file it must finish (a fast path that always gave up would pass the
first check and be useless).
"""

from __future__ import annotations

import gzip
import random
import string
from pathlib import Path

import pytest

from gate.common import limits
from gate.common.errors import InputError
from gate.inputs.readers import qrels as qrels_module
from gate.inputs.readers.qrels import BEIR_QRELS_HEADER, _Irregular, _read_qrels_blocks, _read_qrels_lines, read_qrels
from tests.inputs.readers.helpers import expect_error, write
from tests.shared_data import REALDATA, need

# A few bytes (most lines cross a block end), a few lines, the real size.
BLOCK_SIZES = (5, 97, 700, qrels_module._FAST_BLOCK_SIZE)

_ID_CHARS = string.ascii_letters + string.digits + "_-.:/#"
# Non-ASCII pieces of ids: a no-break space, U+2028, U+3000 and NEL are blanks to
# str.split(); in a qrels id they are part of it.
_UNICODE_BITS = ("é", "中", "ß", "\U0001f600", "\xa0", "\u2028", "\u3000", "\x85")
_CLEAN_LABELS = ("0", "0", "1", "1", "2", "3", "-1", "10", "+2", "007", "-0", "123456789012345678")
_BAD_LABELS = ("1.5", "1.0", "1_0", "+-1", "--1", "1-", "x", "1e0", "0x1", "٣", "1\xa0", "99999999999999999999",
               "9223372036854775807", "-9223372036854775808", "9223372036854775808", "1234567890123456789",
               "000000000000000000001")
_SEPARATORS = (" ", "\t", "  ", " \t", "\t\t", " \t ")
_BLANK_LINES = ("", " ", "\t", "  \t ")
_COMMENTS = ("# a comment", "#", "  # indented", "\t#tab", "#q 0 d 1")
_CONTROLS = ("\x01", "\x00", "\x7f", "\x0b", "\x0c", "\x1c")


def outcome(read, path: Path) -> tuple:
    """Everything a caller can see of a read: the judgments with their order and types, or the error."""
    try:
        qrels = read(path)
    except InputError as err:
        return ("error", err.path, err.line, err.message)
    judgments = [(qid, type(docs), [(doc, rel, type(rel)) for doc, rel in docs.items()])
                 for qid, docs in qrels.judgments.items()]
    return ("ok", qrels.source, qrels.negative_is_judged, type(qrels.judgments), judgments)


def fast_outcome(path: Path) -> tuple | None:
    """The fast path alone, or None where it gives up."""
    try:
        return outcome(_read_qrels_blocks, path)
    except _Irregular:
        return None


def check_file(path: Path, regular: bool) -> tuple:
    """Fast and line readers agree on ``path``; a regular file is read by the fast path itself."""
    expected = outcome(_read_qrels_lines, path)
    assert outcome(read_qrels, path) == expected
    fast = fast_outcome(path)
    if fast is not None and fast[0] == "ok":
        assert fast == expected
    if regular:
        assert expected[0] == "ok", expected
        assert fast == expected, "the fast path gave up on a regular file"
    return expected


# ---------------------------------------------------------------------------
# Random files
# ---------------------------------------------------------------------------


def _random_id(rng: random.Random, unicode: bool, spaces: bool) -> str:
    chars = [rng.choice(_ID_CHARS) for _ in range(rng.randint(1, 12))]
    if unicode and rng.random() < 0.3:
        chars.insert(rng.randrange(len(chars) + 1), rng.choice(_UNICODE_BITS))
    if spaces and len(chars) > 1 and rng.random() < 0.1:  # BEIR ids may hold a space (not at an end)
        chars.insert(rng.randrange(1, len(chars)), " ")
    return "".join(chars)


def _rows(rng: random.Random, beir: bool, unicode: bool) -> list[tuple[str, str, str, str]]:
    """(qid, column 2, docno, label) rows: distinct pairs, queries in runs or interleaved."""
    rows = []
    for _ in range(rng.randint(1, 25)):
        qid = _random_id(rng, unicode, beir)
        docs = {_random_id(rng, unicode, beir) for _ in range(rng.randint(1, 16))}
        rows.extend((qid, rng.choice("0001Q"), doc, rng.choice(_CLEAN_LABELS)) for doc in sorted(docs))
    if rng.random() < 0.3:
        rng.shuffle(rows)
    # A query drawn twice yields repeated pairs: keep the first of each (duplicates are a hostile case).
    unique: dict[tuple[str, str], tuple[str, str, str, str]] = {}
    for row in rows:
        unique.setdefault((row[0], row[2]), row)
    return list(unique.values())


def _line(rng: random.Random, shape: str, row: tuple[str, str, str, str], sep: str | None) -> str:
    qid, group, doc, label = row
    if shape == "beir":
        pad = (lambda f: rng.choice(("", " ", "  ")) + f + rng.choice(("", " "))) if rng.random() < 0.2 else str
        return "\t".join((pad(qid), pad(doc), pad(label)))
    fields = (qid, group, doc, label) if shape == "trec" else (qid, doc, label)
    line = "".join(f + (sep or rng.choice(_SEPARATORS)) for f in fields[:-1]) + fields[-1]
    if rng.random() < 0.1:
        line = rng.choice(_SEPARATORS) + line
    if rng.random() < 0.1:
        line += rng.choice(_SEPARATORS)
    return line


def _hostile(rng: random.Random, shape: str, lines: list[str], rows: list) -> None:
    """One bad or unusual line, inserted or put in place of one (the header stays first)."""
    at = rng.randrange(1 if shape == "beir" else 0, len(lines) + 1)
    qid, group, doc, label = rng.choice(rows)
    sep = "\t" if shape == "beir" else " "

    def data(q: str, d: str, rel: str, g: str = "0", blank: str = sep) -> str:
        return blank.join((q, d, rel) if shape != "trec" else (q, g, d, rel))

    new = rng.choice((
        data(qid, doc, rng.choice(_BAD_LABELS)),
        data(qid, doc, "1", g=rng.choice("01")),  # the pair again, maybe in another judgment group
        sep.join((qid, doc)),  # too few fields
        data(qid, doc, label, g=group) + sep + "extra",  # too many
        data(qid, doc + rng.choice(_CONTROLS), "1"),
        f"{qid}{sep}{doc}\r{sep}1",  # a CR that ends no line
        "\ufeff" + data(qid, doc, label),  # a byte-order mark inside the file
        data(qid, "d" * (limits.MAX_ID_BYTES + rng.choice((-1, 0, 1))), "1"),  # ids at and beyond the limit
        data("q" * (limits.MAX_ID_BYTES + rng.choice((-1, 0, 1))), doc, "1"),
        data(qid, "é" * (limits.MAX_ID_BYTES // 2 + rng.choice((0, 1))), "1"),
        data(qid, "d" * (limits.MAX_TREC_LINE_BYTES + 1), "1"),  # beyond the line limit
        data(qid, doc, "1", blank=rng.choice(("\xa0", "\u3000", "\u2028"))),  # no separator but to str.split
        "\t".join((qid, "", "1")) if shape == "beir" else data("", doc, "1"),  # an empty field
        rng.choice(("\u3000# comment", "\xa0", "\u3000" + data(qid, doc, "1"))),  # Unicode blanks leading
        data("q\u00e9", "d", "1"),
        BEIR_QRELS_HEADER,
        sep.join((qid, doc, "1") if shape == "trec" else (qid, "0", doc, "1")),  # the other width
        "\t".join((qid, doc + " x", "1 2")) if shape == "beir" else f"{qid} 0 {doc} 1 2",
        data(qid, doc, "") if shape == "beir" else data(qid, doc, "-"),
        "# \xe9 comment",  # non-ASCII in a comment only
        "\x00",
        data(qid, doc, label, g=group) + " \t",  # trailing blanks: fine
    ))
    if rng.random() < 0.5 and at < len(lines):
        lines[at] = new
    else:
        lines.insert(at, new)


def random_file(rng: random.Random, hostile: bool) -> tuple[str, bytes, bool]:
    """``(name, bytes, regular)``: a qrels file of a random shape and layout; ``regular`` when it
    holds nothing the fast path must give up on."""
    shape = rng.choice(("trec", "compact", "beir"))
    unicode = hostile and rng.random() < 0.25
    rows = _rows(rng, shape == "beir", unicode)
    sep = rng.choice((None, " ", "\t")) if shape != "beir" else None  # one separator, or a mix
    lines = [_line(rng, shape, row, sep) for row in rows]
    for _ in range(rng.choice((0, 0, 1, 3, 10))):
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(_BLANK_LINES + _COMMENTS))
    if shape == "beir":
        lines.insert(0, BEIR_QRELS_HEADER + rng.choice(("", "", " ", "  ")))
    mutated = hostile and rng.random() < 0.85
    if mutated:
        for _ in range(rng.choice((1, 1, 2))):
            _hostile(rng, shape, lines, rows)
    ends = rng.choice(("\n", "\r\n", "mixed"))
    text = "".join(line + (rng.choice(("\n", "\r\n")) if ends == "mixed" else ends) for line in lines)
    if rng.random() < 0.2:
        text = text.rstrip("\r\n")  # no line end after the last line
    data = text.encode("utf-8", "surrogatepass")
    if hostile and rng.random() < 0.1:  # invalid UTF-8 somewhere
        cut = rng.randrange(len(data) + 1)
        data = data[:cut] + rng.choice((b"\xff", b"\xc3", b"\xed\xa0\x80")) + data[cut:]
        mutated = True
    if rng.random() < 0.15:
        data = b"\xef\xbb\xbf" + data
    gz = rng.random() < 0.15
    name = ("test.tsv" if shape == "beir" else "qrels.txt") + (".gz" if gz else "")
    return name, gzip.compress(data) if gz else data, not (mutated or unicode)


@pytest.mark.parametrize("block_size", BLOCK_SIZES)
@pytest.mark.parametrize("hostile", [False, True], ids=["regular", "hostile"])
def test_random_files_read_the_same(tmp_path, monkeypatch, block_size, hostile):
    monkeypatch.setattr(qrels_module, "_FAST_BLOCK_SIZE", block_size)
    rng = random.Random(f"{block_size}-{hostile}")
    outcomes = {"ok": 0, "error": 0}
    for case in range(60 if block_size == 5 else 150):
        name, data, regular = random_file(rng, hostile)
        path = tmp_path / f"{case}" / name
        path.parent.mkdir()
        path.write_bytes(data)
        outcomes[check_file(path, regular)[0]] += 1
    if hostile:  # the hostile files reach both outcomes
        assert outcomes["ok"] >= 10 and outcomes["error"] >= 30, outcomes


# ---------------------------------------------------------------------------
# Chosen cases
# ---------------------------------------------------------------------------


def _bench_lines(queries: int, per_query: int, seed: int = 7) -> list[str]:
    """Lines shaped like benchmarks/bench_compare.py's qrels: ``1000 0 D1234 2``."""
    rng = random.Random(seed)
    return [f"{1000 + q} 0 D{d} {rng.choice('000123')}"
            for q in range(queries) for d in rng.sample(range(5000), per_query)]


def test_benchmark_shape_is_read_by_the_fast_path(tmp_path):
    path = write(tmp_path, "qrels.txt", "\n".join(_bench_lines(300, 60)) + "\n")
    assert check_file(path, regular=True)[0] == "ok"
    assert len(read_qrels(path)) == 18_000


@pytest.mark.parametrize("gz", [False, True])
def test_layouts_on_the_fast_path(tmp_path, monkeypatch, gz):
    """CRLF, a byte-order mark, comments, blank lines, tabs and runs of blanks stay fast."""
    monkeypatch.setattr(qrels_module, "_FAST_BLOCK_SIZE", 64)
    text = ("\ufeff# header\r\n\r\n1 0 a 1\r\n1\t0\tb\t0\r\n   \t\r\n  2  Q0 a -1 \r\n"
            "\t# indented comment\r\n1 0 c 10\r\n2 0 msmarco#13_5 +2")
    path = write(tmp_path, "qrels.txt.gz" if gz else "qrels.txt", text, gz=gz)
    assert check_file(path, regular=True)[4] == [
        ("1", dict, [("a", 1, int), ("b", 0, int), ("c", 10, int)]),
        ("2", dict, [("a", -1, int), ("msmarco#13_5", 2, int)]),
    ]


def test_beir_on_the_fast_path(tmp_path, monkeypatch):
    monkeypatch.setattr(qrels_module, "_FAST_BLOCK_SIZE", 32)
    text = f"{BEIR_QRELS_HEADER}  \n1\tdoc a\t1\n2\t 31715818 \t0\n# c\n1\tx\t2\n"
    path = write(tmp_path, "test.tsv", text)
    assert check_file(path, regular=True)[4] == [
        ("1", dict, [("doc a", 1, int), ("x", 2, int)]),
        ("2", dict, [("31715818", 0, int)]),
    ]


def test_interleaved_queries_keep_first_appearance_order(tmp_path, monkeypatch):
    monkeypatch.setattr(qrels_module, "_FAST_BLOCK_SIZE", 40)
    lines = [f"q{i % 7} 0 d{i} {i % 3}" for i in range(200)]
    path = write(tmp_path, "qrels.txt", "\n".join(lines) + "\n")
    judgments = check_file(path, regular=True)[4]
    assert [q for q, _, _ in judgments] == [f"q{i}" for i in range(7)]
    assert [d for d, _, _ in judgments[3][2]] == [f"d{i}" for i in range(3, 200, 7)]


@pytest.mark.parametrize("bad, message", [
    ("1.5", "relevance '1.5' is not an integer (integer labels only)"),
    ("1_0", "relevance '1_0' is not an integer (integer labels only)"),
    ("99999999999999999999", "relevance '99999999999999999999' is beyond the 64-bit integer range"),
])
def test_bad_label_in_the_middle_of_a_later_block(tmp_path, monkeypatch, bad, message):
    monkeypatch.setattr(qrels_module, "_FAST_BLOCK_SIZE", 4096)
    lines = _bench_lines(50, 60)
    lines[2345] = lines[2345].rsplit(" ", 1)[0] + " " + bad
    path = write(tmp_path, "qrels.txt", "\n".join(lines) + "\n")
    assert check_file(path, regular=False) == ("error", str(path), 2346, message)
    expect_error(read_qrels, path, 2346, message)


def test_duplicate_in_a_later_block_names_the_first_line(tmp_path, monkeypatch):
    monkeypatch.setattr(qrels_module, "_FAST_BLOCK_SIZE", 4096)
    lines = _bench_lines(50, 60)
    qid, _, doc, _ = lines[10].split()
    lines.insert(2500, f"{qid} 1 {doc} 3")
    path = write(tmp_path, "qrels.txt", "\n".join(lines) + "\n")
    message = (f"duplicate judgment of document '{doc}' for query '{qid}' (first at line 11); "
               "column 2 differs ('0', '1'): multiple judgment groups are not supported")
    assert check_file(path, regular=False) == ("error", str(path), 2501, message)


def test_no_break_space_is_part_of_a_docno(tmp_path):
    path = write(tmp_path, "qrels.txt", "q 0 a\xa0b 1\nq 0 c 2\n")
    assert fast_outcome(path) is None  # not ASCII: the line reader reads it
    assert check_file(path, regular=False)[4] == [("q", dict, [("a\xa0b", 1, int), ("c", 2, int)])]


def test_width_is_set_by_the_first_data_line_in_a_later_block(tmp_path, monkeypatch):
    monkeypatch.setattr(qrels_module, "_FAST_BLOCK_SIZE", 16)
    path = write(tmp_path, "qrels.txt", "# a long comment line\n\n   \nq d 1\nq e 2\nq 0 f 1\n")
    assert check_file(path, regular=False) == (
        "error", str(path), 6, "expected 3 fields 'qid docno rel', like the first line, got 4")


@pytest.mark.parametrize("text, got", [("q 0 a 1 2\nq 0 b 1 2\n", 5), ("1 2\n3 4\n", 2), ("7\n", 1)])
def test_a_file_of_another_width_throughout(tmp_path, monkeypatch, text, got):
    monkeypatch.setattr(qrels_module, "_FAST_BLOCK_SIZE", 5)
    path = write(tmp_path, "qrels.txt", text)
    assert check_file(path, regular=False) == (
        "error", str(path), 1, f"expected 4 fields 'qid iter docno rel' or 3 fields 'qid docno rel', got {got}")


def test_beir_header_starting_a_later_block_is_data(tmp_path, monkeypatch):
    monkeypatch.setattr(qrels_module, "_FAST_BLOCK_SIZE", 5)
    path = write(tmp_path, "test.tsv", f"1\td\t1\n{BEIR_QRELS_HEADER}\n2\te\t0\n")
    assert check_file(path, regular=False) == (
        "error", str(path), 2, "relevance 'score' is not an integer (integer labels only)")


@pytest.mark.parametrize("text", ["", "# only a comment\n\n", f"{BEIR_QRELS_HEADER}\n", "\ufeff"])
def test_files_without_judgments(tmp_path, text):
    path = write(tmp_path, "qrels.txt", text)
    assert check_file(path, regular=True)[4] == []


def test_a_wrong_fast_path_is_caught(tmp_path, monkeypatch):
    """The comparison would see a fast path that read labels wrong (a mutation check)."""
    path = write(tmp_path, "qrels.txt", "q 0 a 1\nq 0 b -1\n")
    monkeypatch.setattr(qrels_module, "_labels", lambda labels: [abs(int(x)) for x in labels])
    with pytest.raises(AssertionError):
        check_file(path, regular=True)


# Real qrels in ../shared: (path, read by the fast path); the .123 files judge a document twice.
REAL_QRELS = [
    ("runs/trec-dl-2019-passage/qrels/qrels.dl19-passage.txt", True),
    ("runs/trec-dl-2020-passage/qrels/qrels.dl20-passage.txt", True),
    ("runs/trec-dl-2019-passage/alt_qrels_reannotation/sean-macavaney-qrels.txt", True),
    ("cranfield/cranqrel", True),
    ("vaswani/qrels", True),
    ("scifact/beir_test_qrels_topics/qrels.beir-v1.0.0-scifact.test.txt", True),
    ("trec_eval_tests/v10.0/qrels.test", True),
    ("trec_eval_tests/v10.0/qrels.comment.test", True),
    ("trec_eval_tests/v10.0/qrels.123", False),
    ("trec_eval_tests/v10.0/qrels.comments.123", False),
]


@pytest.mark.parametrize("name, regular", REAL_QRELS)
def test_real_qrels_read_the_same(name, regular):
    check_file(need(REALDATA / name), regular)
