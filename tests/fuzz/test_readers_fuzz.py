"""Fuzz the data readers: runs, qrels, queries, corpus, BEIR folders.

The contract: given any bytes a reader either returns a value that
round-trips (written back in its format and read again, it is equal) or
raises :class:`InputError` naming the file and, when it has one, a line of
the file.  Never another exception, a hang, or memory out of proportion to
the input.  On top of that, parsed values must be *consistent* with the
input: a well-formed file parses to exactly its model, no data line is
silently dropped (a corrupt gzip is an error, not a shorter file), and the
vectorised run reader agrees with a line-by-line oracle of its docstring.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from gate.inputs.readers.anchored import AnchoredJudgments, read_anchored
from gate.inputs.readers.beir import read_beir
from gate.inputs.readers.corpus import _HEADERS as CORPUS_HEADERS
from gate.inputs.readers.corpus import iter_corpus
from gate.inputs.readers.qrels import BEIR_QRELS_HEADER, read_qrels
from gate.inputs.readers.queries import read_queries
from gate.inputs.readers.runs import read_run
from gate.inputs.readers.textlines import is_skipped
from tests.fuzz import fuzz_settings
from tests.fuzz.strategies import (
    UNICODE_SPACES,
    Outcome,
    check_error,
    corpus_models,
    corpus_summary,
    corpus_to_text,
    decompress_prefix,
    gz,
    is_gzip,
    mutated,
    oracle_run,
    outcome_of,
    qrels_models,
    qrels_summary,
    qrels_to_text,
    queries_summary,
    queries_to_text,
    query_models,
    run_models,
    run_summary,
    run_to_text,
    score_tokens,
    strict_decompress,
    texty_bytes,
    write_corpus,
    write_qrels,
    write_queries,
    write_run,
)

# =========================================================================== reader table


def _data_lines(data: bytes) -> list[str] | None:
    """Data lines as gate.inputs.readers.textlines defines them (None when not decodable)."""
    text = strict_decompress(data)
    if text is None:
        return None
    if text.startswith(b"\xef\xbb\xbf"):
        text = text[3:]
    try:
        s = text.decode("utf-8")
    except UnicodeDecodeError:
        return None
    lines = s.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out = []
    for line in lines:
        if line.endswith("\r"):
            line = line[:-1]
        if not is_skipped(line):
            out.append(line)
    return out


def _count_qrels(data: bytes) -> int | None:
    lines = _data_lines(data)
    if lines is None:
        return None
    text = strict_decompress(data) or b""
    first = text.removeprefix(b"\xef\xbb\xbf").split(b"\n", 1)[0].rstrip(b"\r").rstrip(b" ")
    return len(lines) - (1 if lines and first == BEIR_QRELS_HEADER.encode() else 0)


def _count_corpus_tsv(data: bytes) -> int | None:
    lines = _data_lines(data)
    if lines is None:
        return None
    header = bool(lines) and tuple(f.strip().lower() for f in lines[0].split("\t")) in CORPUS_HEADERS
    return len(lines) - (1 if header else 0)


def _count_lines(data: bytes) -> int | None:
    lines = _data_lines(data)
    return None if lines is None else len(lines)


def anchored_to_text(found: AnchoredJudgments) -> bytes:
    rows = []
    for j in found.judgments:
        row: dict[str, Any] = {"query_id": j.query_id, "grade": j.grade}
        row.update({"chunk_id": j.chunk_id} if j.chunk_id is not None else {"doc_id": j.doc_id})
        if j.start is not None:
            row.update(start=j.start, end=j.end)
        if j.quote is not None:
            row["quote"] = j.quote
        rows.append(json.dumps(row, ensure_ascii=False) + "\n")
    return "".join(rows).encode("utf-8")


def anchored_summary(found: AnchoredJudgments) -> Any:
    return [(j.query_id, j.grade, j.doc_id, j.chunk_id, j.start, j.end, j.quote) for j in found.judgments]


@dataclass(frozen=True)
class Reader:
    name: str
    filename: str
    read: Callable[[Path], Any]
    write: Callable[[Any], bytes]  # value -> file bytes (same format)
    summary: Callable[[Any], Any]  # value -> comparable meaning
    count: Callable[[bytes], int | None] | None  # input -> number of records it must give
    size: Callable[[Any], int]


READERS = {
    "run": Reader("run", "run.txt", read_run, run_to_text, run_summary, None, len),
    "qrels": Reader("qrels", "qrels.txt", read_qrels, qrels_to_text, qrels_summary, _count_qrels, len),
    "queries_tsv": Reader("queries_tsv", "queries.tsv", read_queries, lambda v: queries_to_text(v, False),
                          queries_summary, _count_lines, len),
    "queries_jsonl": Reader("queries_jsonl", "queries.jsonl", read_queries, lambda v: queries_to_text(v, True),
                            queries_summary, _count_lines, len),
    "corpus_tsv": Reader("corpus_tsv", "corpus.tsv", iter_corpus, lambda v: corpus_to_text(v, False),
                         corpus_summary, _count_corpus_tsv, len),
    "corpus_jsonl": Reader("corpus_jsonl", "corpus.jsonl", iter_corpus, lambda v: corpus_to_text(v, True),
                           corpus_summary, _count_lines, len),
    "anchored": Reader("anchored", "judged.jsonl", read_anchored, anchored_to_text, anchored_summary, _count_lines,
                       lambda v: len(v.judgments)),
}


# =========================================================================== the contract


def check_contract(reader: Reader, data: bytes, folder: Path) -> Outcome:
    """Read ``data`` as ``reader``'s format and check the whole contract; returns the outcome."""
    path = folder / reader.filename
    path.write_bytes(data)
    size = max(len(data), len(decompress_prefix(data)))
    out = outcome_of(lambda: reader.read(path))
    problem = out.violation(size)
    assert problem is None, f"{reader.name} reader: {problem}"
    if out.error is not None:
        check_error(out.error, path, data)
        return out
    # Parsed: a gzip that does not decompress completely must not give a (shorter) value.
    if is_gzip(data) and strict_decompress(data) is None:
        raise AssertionError(f"{reader.name} reader parsed a corrupt/truncated gzip file without an error "
                             f"({reader.size(out.value)} records): data silently dropped")
    if reader.count is not None:
        expected = reader.count(data)
        assert expected is not None, f"{reader.name} reader accepted a file that is not UTF-8 text"
        assert reader.size(out.value) == expected, (
            f"{reader.name} reader gave {reader.size(out.value)} records for {expected} data lines")
    # Round trip.
    again = folder / ("again-" + reader.filename)
    try:
        written = reader.write(out.value)
    except UnicodeEncodeError as exc:
        raise AssertionError(f"{reader.name} reader returned text that cannot be written as UTF-8: {exc}") from None
    again.write_bytes(written)
    back = outcome_of(lambda: reader.read(again))
    assert back.violation(len(written)) is None and back.error is None, (
        f"{reader.name}: the value written back does not read: {back.error or back.violation(len(written))}")
    assert reader.summary(back.value) == reader.summary(out.value), f"{reader.name}: round trip changed the value"
    return out


# =========================================================================== well-formed inputs


@st.composite
def run_files(draw):
    model = draw(run_models())
    return model, draw(write_run(model))


@st.composite
def qrels_files(draw):
    model = draw(qrels_models())
    layout, data = draw(write_qrels(model))
    return model, layout, data


@st.composite
def queries_files(draw, jsonl: bool):
    models = draw(query_models(jsonl))
    return models, draw(write_queries(models, jsonl))


@st.composite
def corpus_files(draw, jsonl: bool):
    models = draw(corpus_models())
    data, expected = draw(write_corpus(models, jsonl))
    return expected, data


_IDS = st.sampled_from(["q1", "q2", "guides/setup", "doc 7", "ünï", "a#1", "42"])


@st.composite
def anchored_files(draw):
    """Anchored judgments of every kind, each anchor once per query, as JSON Lines."""
    rows: dict[tuple, dict] = {}
    for _ in range(draw(st.integers(0, 12))):
        row: dict[str, Any] = {"query_id": draw(_IDS), "grade": draw(st.integers(-1, 3))}
        kind = draw(st.sampled_from(["document", "span", "quote", "chunk"]))
        row["chunk_id" if kind == "chunk" else "doc_id"] = draw(_IDS)
        if kind == "span":
            start = draw(st.integers(0, 500))
            row.update(start=start, end=start + draw(st.integers(1, 500)))
        if kind == "quote":
            row["quote"] = draw(st.sampled_from(["the exact passage", "a  b\tc", "ünïcode words"]))
        anchor = tuple(sorted((k, str(v)) for k, v in row.items() if k != "grade"))
        rows.setdefault(anchor, row)
    return "".join(json.dumps(r) + "\n" for r in rows.values()).encode("utf-8")


WELL_FORMED = {
    "run": run_files().map(lambda t: t[1]),
    "qrels": qrels_files().map(lambda t: t[2]),
    "queries_tsv": queries_files(False).map(lambda t: t[1]),
    "queries_jsonl": queries_files(True).map(lambda t: t[1]),
    "corpus_tsv": corpus_files(False).map(lambda t: t[1]),
    "corpus_jsonl": corpus_files(True).map(lambda t: t[1]),
    "anchored": anchored_files(),
}


@given(data=run_files(), block=st.sampled_from([None, 1, 3, 7, 64, 1 << 20]))
@fuzz_settings(60)
def test_well_formed_run_parses_to_its_model(tmp_path, data, block):
    """A well-formed run reads to exactly its rows, whatever the layout and block size."""
    model, raw = data
    path = tmp_path / "run.txt"
    path.write_bytes(raw)
    out = outcome_of(lambda: read_run(path) if block is None else read_run(path, block_size=block))
    assert out.violation(len(raw)) is None, out.violation(len(raw))
    assert out.error is None, f"rejected a well-formed run: {out.error}"
    qids, per, tag = model.expected()
    run = out.value
    assert tuple(run.query_ids) == qids
    for q in qids:
        docs, scores = run.ranking(q)
        assert [str(d) for d in docs] == [d for d, _ in per[q]]
        assert [float(s).hex() for s in scores] == [s.hex() for _, s in per[q]]
    assert run.tag == tag
    check_contract(READERS["run"], raw, tmp_path)


@given(data=qrels_files())
@fuzz_settings(60)
def test_well_formed_qrels_parse_to_their_model(tmp_path, data):
    model, layout, raw = data
    path = tmp_path / "qrels.txt"
    path.write_bytes(raw)
    out = outcome_of(lambda: read_qrels(path))
    assert out.violation(len(raw)) is None, out.violation(len(raw))
    assert out.error is None, f"rejected well-formed {layout} qrels: {out.error}"
    assert {q: dict(d) for q, d in out.value.judgments.items()} == model.judgments()
    check_contract(READERS["qrels"], raw, tmp_path)


@given(data=queries_files(False))
@fuzz_settings(40)
def test_well_formed_tsv_queries_parse_to_their_model(tmp_path, data):
    models, raw = data
    path = tmp_path / "queries.tsv"
    path.write_bytes(raw)
    out = outcome_of(lambda: read_queries(path))
    assert out.violation(len(raw)) is None, out.violation(len(raw))
    assert out.error is None, f"rejected well-formed TSV queries: {out.error}"
    assert [(q.query_id, q.text) for q in out.value.queries] == [(m.qid, m.text) for m in models]
    check_contract(READERS["queries_tsv"], raw, tmp_path)


@given(data=queries_files(True))
@fuzz_settings(40)
def test_well_formed_jsonl_queries_parse_to_their_model(tmp_path, data):
    models, raw = data
    path = tmp_path / "queries.jsonl"
    path.write_bytes(raw)
    out = outcome_of(lambda: read_queries(path))
    assert out.violation(len(raw)) is None, out.violation(len(raw))
    assert out.error is None, f"rejected well-formed JSONL queries: {out.error}"
    got = [(q.query_id, q.text, q.stratum, json.dumps(dict(q.metadata), sort_keys=True)) for q in out.value.queries]
    assert got == [(m.qid, m.text, m.stratum, json.dumps(dict(m.metadata), sort_keys=True)) for m in models]
    check_contract(READERS["queries_jsonl"], raw, tmp_path)


@pytest.mark.parametrize("fmt", ["corpus_tsv", "corpus_jsonl"])
@given(data=st.data())
@fuzz_settings(40)
def test_well_formed_corpus_parses_to_its_model(tmp_path, fmt, data):
    expected, raw = data.draw(corpus_files(fmt == "corpus_jsonl"))
    reader = READERS[fmt]
    path = tmp_path / reader.filename
    path.write_bytes(raw)
    out = outcome_of(lambda: iter_corpus(path))
    assert out.violation(len(raw)) is None, out.violation(len(raw))
    assert out.error is None, f"rejected a well-formed {fmt}: {out.error}"
    assert corpus_summary(out.value) == tuple(expected)
    check_contract(reader, raw, tmp_path)


# =========================================================================== any bytes, mutations


@pytest.mark.parametrize("name", sorted(READERS))
@given(data=texty_bytes)
@fuzz_settings(40)
def test_any_bytes(tmp_path, name, data):
    check_contract(READERS[name], data, tmp_path)


# Hand-picked inputs that hypothesis' shrinker found or that matter (kept as
# @example so they are always tried first).
_QRELS_EXAMPLES = [b"q 0 d " + b"9" * 5000 + b"\n"]
_JSONL_EXAMPLES = [
    b'{"_id": ' + b"9" * 5000 + b', "chunk_id": 1, "text": "x"}\n',
    b'{"_id": "q", "chunk_id": "c", "text": "x", "m": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
    b'{"_id": "q", "chunk_id": "c", "text": "x", "m": 1' + b"0" * 5000 + b"}\n",
]


@pytest.mark.parametrize("name", sorted(READERS))
@given(data=st.data())
@fuzz_settings(60)
def test_mutated_files(tmp_path, name, data):
    """Mutations of well-formed files: value-and-round-trip, or InputError naming the file."""
    raw = data.draw(mutated(WELL_FORMED[name]), label="file bytes")
    check_contract(READERS[name], raw, tmp_path)


@pytest.mark.parametrize("name", ["qrels"])
@pytest.mark.parametrize("raw", _QRELS_EXAMPLES)
def test_known_qrels_inputs(tmp_path, name, raw):
    check_contract(READERS[name], raw, tmp_path)


@pytest.mark.parametrize("name", ["queries_jsonl", "corpus_jsonl"])
@pytest.mark.parametrize("raw", _JSONL_EXAMPLES, ids=["huge-int-id", "deep-nesting", "huge-int-field"])
def test_known_jsonl_inputs(tmp_path, name, raw):
    check_contract(READERS[name], raw, tmp_path)


# =========================================================================== run reader vs oracle


def _run_vs_oracle(tmp_path: Path, raw: bytes, block: int | None = None) -> None:
    path = tmp_path / "run.txt"
    path.write_bytes(raw)
    out = outcome_of(lambda: read_run(path) if block is None else read_run(path, block_size=block))
    size = max(len(raw), len(decompress_prefix(raw)))
    assert out.violation(size) is None, out.violation(size)
    expected = oracle_run(raw)
    if out.error is not None:
        check_error(out.error, path, raw)
        assert expected is None, f"rejected a run its docstring accepts: {out.error}"
    else:
        assert expected is not None, "accepted a run its docstring rejects"
        assert run_summary(out.value) == expected, "parsed differently from the docstring's rules"


@given(data=st.data(), block=st.sampled_from([None, None, 1, 3, 5, 64]))
@fuzz_settings(80)
def test_run_reader_agrees_with_line_oracle(tmp_path, data, block):
    raw = data.draw(st.one_of(mutated(WELL_FORMED["run"]), texty_bytes), label="run bytes")
    _run_vs_oracle(tmp_path, raw, block)


@given(tokens=st.lists(score_tokens, min_size=1, max_size=12))
@fuzz_settings(80)
def test_run_scores_are_float_exact(tmp_path, tokens):
    """Each score token gives float(token) bit for bit, or the file is rejected at that line."""
    raw = "".join(f"q Q0 d{i} {i + 1} {t} tag\n" for i, t in enumerate(tokens)).encode()
    _run_vs_oracle(tmp_path, raw)


# =========================================================================== lines of errors


_LINE_BREAKERS = [b"\xff", b"\xc3(", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x80"]


@pytest.mark.parametrize("name", sorted(READERS))
@given(data=st.data())
@fuzz_settings(30)
def test_invalid_utf8_is_reported_at_its_line(tmp_path, name, data):
    """Invalid UTF-8 injected into data line k: InputError at line k (or at an earlier line)."""
    raw = data.draw(WELL_FORMED[name].filter(lambda b: not is_gzip(b)), label="file")
    lines = raw.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    assume(lines)
    k = data.draw(st.integers(0, len(lines) - 1), label="line index")
    bad = data.draw(st.sampled_from(_LINE_BREAKERS))
    col = data.draw(st.integers(0, len(lines[k])))
    lines[k] = lines[k][:col] + bad + lines[k][col:]
    raw = b"\n".join(lines) + b"\n"
    reader = READERS[name]
    path = tmp_path / reader.filename
    path.write_bytes(raw)
    out = outcome_of(lambda: reader.read(path))
    assert out.violation(len(raw)) is None, out.violation(len(raw))
    assert out.error is not None, "accepted invalid UTF-8"
    check_error(out.error, path, raw)
    assert out.error.line is not None and out.error.line <= k + 1, (
        f"invalid UTF-8 on line {k + 1} reported at line {out.error.line}: {out.error}")


@pytest.mark.parametrize("name", sorted(READERS))
@given(data=st.data())
@fuzz_settings(25)
def test_truncated_gzip_is_an_error_not_fewer_lines(tmp_path, name, data):
    """Every strict prefix of a gzip file (cut after the 10-byte header) is rejected."""
    raw = data.draw(WELL_FORMED[name].map(lambda b: gz(decompress_prefix(b))), label="gzip file")
    cut = data.draw(st.integers(10, len(raw) - 1), label="cut")
    out = check_contract(READERS[name], raw[:cut], tmp_path)
    assert out.error is not None


# =========================================================================== cross-reader agreement


@given(sp=st.sampled_from(UNICODE_SPACES), layout=st.sampled_from(["trec", "compact"]))
@fuzz_settings(16)
def test_run_and_qrels_tokenise_ids_alike(tmp_path, sp, layout):
    """A document id the run reader keeps whole is the same id for the qrels reader.

    The run reader splits on ASCII blanks (bytes <= 0x20) only, so ``d{sp}x``
    is one id there; a qrels reader splitting on Unicode whitespace sees two
    tokens, and the run's document can never match its judgment.
    """
    doc = f"d{sp}x"
    run_path = tmp_path / "run.txt"
    run_path.write_bytes(f"q Q0 {doc} 1 1.0 tag\n".encode())
    run = read_run(run_path)
    assert [str(d) for d in run.ranking("q")[0]] == [doc]
    qrels_path = tmp_path / "qrels.txt"
    line = f"q 0 {doc} 1\n" if layout == "trec" else f"q {doc} 1\n"
    qrels_path.write_bytes(line.encode())
    out = outcome_of(lambda: read_qrels(qrels_path))
    assert out.crash is None and not out.hang
    if out.error is None:
        assert dict(out.value.judgments.get("q", {})) == {doc: 1}, (
            f"qrels read {dict(out.value.judgments)} from {line!r}; the run reader reads the id as {doc!r}")


# =========================================================================== JSON text is Unicode


@pytest.mark.parametrize("name", ["queries_jsonl", "corpus_jsonl"])
@pytest.mark.parametrize("escape", ["\\ud800", "\\udfff", "\\ud83d"])
def test_jsonl_lone_surrogates_are_rejected(tmp_path, name, escape):
    """``"\\ud800"`` decodes to a lone surrogate: not text, it cannot be written as UTF-8 later
    (reports, run files, the manifest), so the reader must reject it at its line."""
    raw = ('{"_id": "q' + escape + '", "chunk_id": "c' + escape + '", "text": "x"}\n').encode()
    reader = READERS[name]
    path = tmp_path / reader.filename
    path.write_bytes(raw)
    out = outcome_of(lambda: reader.read(path))
    assert out.violation(len(raw)) is None
    if out.error is None:
        value = out.value.queries[0].query_id if name == "queries_jsonl" else out.value[0].chunk_id
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise AssertionError(f"{name}: accepted id {value!r} (a lone surrogate; not encodable as UTF-8)") from None
    else:
        check_error(out.error, path, raw)
        assert out.error.line == 1


# =========================================================================== BEIR folders


@st.composite
def beir_folders(draw):
    queries = draw(query_models(True, max_size=5))
    qfile = draw(write_queries(queries, True))
    qrels = draw(qrels_models(max_rows=8))
    _, qrels_file = draw(write_qrels(qrels, "beir"))
    corpus = draw(corpus_models(max_size=4))
    cfile, _ = draw(write_corpus(corpus, True))
    return qfile, qrels_file, cfile


def _write_beir(folder: Path, qfile: bytes, qrels_file: bytes, cfile: bytes | None) -> None:
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    (folder / "queries.jsonl").write_bytes(qfile)
    (folder / "qrels" / "test.tsv").write_bytes(qrels_file)
    if cfile is not None:
        (folder / "corpus.jsonl").write_bytes(cfile)


@given(files=beir_folders(), mutate=st.sampled_from(["none", "queries", "qrels", "both"]), data=st.data())
@fuzz_settings(50)
def test_beir_folder(tmp_path, files, mutate, data):
    qfile, qrels_file, cfile = files
    if mutate in ("queries", "both"):
        qfile = data.draw(mutated(st.just(qfile)))
    if mutate in ("qrels", "both"):
        qrels_file = data.draw(mutated(st.just(qrels_file)))
    folder = tmp_path / "beir"
    _write_beir(folder, qfile, qrels_file, cfile)
    out = outcome_of(lambda: read_beir(folder))
    size = len(decompress_prefix(qfile)) + len(decompress_prefix(qrels_file)) + len(qfile) + len(qrels_file)
    assert out.violation(size) is None, out.violation(size)
    if out.error is not None:
        names = [folder / "queries.jsonl", folder / "qrels" / "test.tsv"]
        check_error(out.error, names)
        if out.error.path == str(names[0]):
            check_error(out.error, names[0], qfile)
        else:
            check_error(out.error, names[1], qrels_file)
        assert mutate != "none", f"rejected a well-formed BEIR folder: {out.error}"
        return
    beir = out.value
    if (is_gzip(qfile) and strict_decompress(qfile) is None
            or is_gzip(qrels_file) and strict_decompress(qrels_file) is None):
        raise AssertionError("read_beir parsed a corrupt gzip member file: data silently dropped")
    again = tmp_path / "again"
    qrels_text = ("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{r}\n" for q, d, r in beir.qrels)).encode()
    _write_beir(again, queries_to_text(beir.queries, True), qrels_text, None)
    back = outcome_of(lambda: read_beir(again))
    assert back.error is None and back.crash is None, \
        f"written-back BEIR folder does not read: {back.error or back.crash}"
    assert queries_summary(back.value.queries) == queries_summary(beir.queries)
    assert qrels_summary(back.value.qrels) == qrels_summary(beir.qrels)


# =========================================================================== block boundaries


@pytest.mark.parametrize("block", [1, 2, 3, 4, 5, 16])
def test_leading_bom_with_any_block_size(tmp_path, block):
    """A leading BOM is skipped whatever the block size; the rows after it are all read.

    (``read_run(path, block_size)`` is public; the BOM is only looked for in the
    first block, so a first block shorter than, or exactly as long as, the BOM
    must not lose it - or the file.)
    """
    raw = b"\xef\xbb\xbfq Q0 d 1 1.0 t\nq Q0 e 2 0.5 t\n"
    path = tmp_path / "run.txt"
    path.write_bytes(raw)
    out = outcome_of(lambda: read_run(path, block_size=block))
    assert out.violation(len(raw)) is None
    assert out.error is None, f"block_size={block}: {out.error}"
    assert run_summary(out.value) == oracle_run(raw), f"block_size={block}: read {len(out.value)} of 2 rows"
