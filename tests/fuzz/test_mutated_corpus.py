"""A seeded corpus of mutated real files: every mutant parses consistently or is refused.

Sources: files from ../shared/realdata when present (TREC DL 2019 runs and
qrels, Cranfield and Vaswani qrels, a SciFact BEIR folder built from its
qrels / topics / corpus, trec_eval's test files), and generated TREC-like
files (always, so this runs on a fresh clone).  Mutations are drawn from a
``random.Random`` with a fixed seed: the same mutants every run.

Each mutant must either

* be refused with an :class:`InputError` naming the file (and a line that
  exists), or
* parse, and then consistently: a gzip that does not decompress completely
  must not parse (that would be silently dropped lines), and the number of
  records equals the number of data lines of the decompressed text; a run
  also agrees row for row with the line-by-line oracle of its docstring.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest

from gate.inputs.readers.beir import read_beir
from gate.inputs.readers.qrels import read_qrels
from gate.inputs.readers.runs import read_run
from tests.fuzz.strategies import (
    FOREIGN_LINES,
    INSERTS,
    check_error,
    decompress_prefix,
    gz,
    is_gzip,
    oracle_run,
    outcome_of,
    run_summary,
    strict_decompress,
)
from tests.fuzz.test_readers_fuzz import READERS, check_contract
from tests.shared_data import REALDATA, need

SEED = 20191
MUTANTS_PER_FILE = 12
#: Real files are cut to this many lines before mutation (keeps the suite fast).
HEAD_LINES = 400

DL19 = REALDATA / "runs" / "trec-dl-2019-passage"


# =========================================================================== mutations


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def mutate(rng: random.Random, data: bytes, gzipped: bool) -> tuple[str, bytes]:
    """One named mutation of ``data`` (plain text; ``gzipped`` says the file is stored gzipped)."""
    z = gz(data) if gzipped else None
    kinds = ["flip", "truncate", "splice", "insert", "dup_line", "drop_newline", "crlf_mix"]
    if gzipped:
        kinds += ["gzip_truncate", "gzip_truncate", "gzip_garbage", "gzip_flip", "gzip_concat", "gzip_zero_pad"]
    kind = rng.choice(kinds)
    if kind == "gzip_truncate":
        cut = rng.randrange(10, len(z) - 1)
        return f"gzip cut at {cut}/{len(z)}", z[:cut]
    if kind == "gzip_garbage":
        junk = rng.choice([b"x", b"garbage\n", b"\x1f\x8b", b"\x1f\x8b\x08\x00",
                           bytes(rng.randrange(256) for _ in range(17))])
        return f"gzip + {junk[:8]!r}", z + junk
    if kind == "gzip_flip":
        b = bytearray(z)
        i = rng.randrange(2, len(b))
        b[i] ^= 1 << rng.randrange(8)
        return f"gzip flip byte {i}", bytes(b)
    if kind == "gzip_concat":  # a valid multi-member gzip: must read as the concatenation
        half = rng.randrange(len(data) + 1)
        return f"gzip two members split at {half}", gz(data[:half]) + gz(data[half:])
    if kind == "gzip_zero_pad":  # zero padding after the member (tape blocks): accepted by gzip
        return "gzip + zero padding", z + b"\x00" * rng.randrange(1, 64)
    out = data
    if kind == "flip" and out:
        b = bytearray(out)
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
        out, desc = bytes(b), f"flip byte {i}"
    elif kind == "truncate" and out:
        cut = rng.randrange(len(out))
        out, desc = out[:cut], f"truncate at {cut}"
    elif kind == "splice":
        lines = _lines(out)
        i = rng.randrange(len(lines) + 1)
        lines.insert(i, rng.choice(FOREIGN_LINES))
        out, desc = b"\n".join(lines), f"splice at line {i + 1}"
    elif kind == "insert":
        i = rng.randrange(len(out) + 1)
        ins = rng.choice(INSERTS)
        out, desc = out[:i] + ins + out[i:], f"insert {ins[:10]!r} at {i}"
    elif kind == "dup_line":
        lines = _lines(out)
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
        out, desc = b"\n".join(lines), f"duplicate line {i + 1}"
    elif kind == "drop_newline":
        nl = [i for i, c in enumerate(out) if c == 10]
        if nl:
            i = rng.choice(nl)
            out, desc = out[:i] + out[i + 1:], f"join lines at byte {i}"
        else:
            desc = "no newline"
    else:
        out, desc = out.replace(b"\n", b"\r\n", rng.randrange(1, 5)), "some CRLF"
    return desc, (gz(out) if gzipped else out)


# =========================================================================== sources


def _head(path: Path, lines: int = HEAD_LINES) -> bytes:
    data = path.read_bytes()
    if is_gzip(data):
        data = gzip.decompress(data)
    return b"".join(data.splitlines(keepends=True)[:lines])


def _generated_run(rng: random.Random) -> bytes:
    out = []
    for q in range(rng.randrange(1, 6)):
        for r in range(rng.randrange(1, 40)):
            out.append(f"{1000 + q} Q0 D{rng.randrange(10**6)}_{r} {r + 1} {rng.uniform(-50, 50)!r} gen\n")
    return "".join(out).encode()


def _generated_qrels(rng: random.Random) -> bytes:
    out = []
    for q in range(rng.randrange(1, 6)):
        for r in range(rng.randrange(1, 30)):
            out.append(f"{q} 0 D{q}_{r} {rng.randrange(-1, 4)}\n")
    return "".join(out).encode()


def _sources() -> list[tuple[str, str, Path | None, int]]:
    """(reader name, case name, real file or None for generated, generator seed)."""
    cases: list[tuple[str, str, Path | None, int]] = []
    for i in range(4):
        cases.append(("run", f"generated-run-{i}", None, i))
        cases.append(("qrels", f"generated-qrels-{i}", None, i))
    runs = sorted((DL19 / "official_nist").glob("input.*.gz")) if (DL19 / "official_nist").is_dir() else []
    for p in runs[:6]:
        cases.append(("run", f"dl19-{p.name}", p, 0))
    for rel in ["runs/trec-dl-2019-passage/qrels/qrels.dl19-passage.txt", "cranfield/cranqrel", "vaswani/qrels",
                "scifact/beir_test_qrels_topics/qrels.beir-v1.0.0-scifact.test.txt",
                "trec_eval_tests/v10.0/qrels.test", "trec_eval_tests/v9.0.8/qrels.test"]:
        cases.append(("qrels", rel.replace("/", "-"), REALDATA / rel, 0))
    for rel in ["trec_eval_tests/v10.0/results.test", "trec_eval_tests/v9.0.8/results.test"]:
        cases.append(("run", rel.replace("/", "-"), REALDATA / rel, 0))
    cases.append(("queries_tsv", "dl19-topics", DL19 / "topics" / "topics.dl19-passage.txt", 0))
    cases.append(("corpus_jsonl", "scifact-corpus", REALDATA / "scifact" / "derived_beir_format" / "corpus.jsonl", 0))
    return cases


CASES = _sources()


def _check_mutant(tmp_path: Path, name: str, desc: str, mutant: bytes) -> str:
    reader = READERS[name]
    try:
        out = check_contract(reader, mutant, tmp_path)
    except AssertionError as exc:
        raise AssertionError(f"mutant '{desc}': {exc}") from None
    if name == "run":
        expected = oracle_run(mutant)
        if out.error is None:
            assert expected is not None, f"mutant '{desc}': run accepted, its docstring rejects it"
            assert run_summary(out.value) == expected, f"mutant '{desc}': run parsed differently from its lines"
        else:
            assert expected is None, f"mutant '{desc}': a valid run refused: {out.error}"
    return "error" if out.error is not None else "parsed"


@pytest.mark.parametrize("name,case,path,gen", CASES, ids=[c[1] for c in CASES])
def test_mutated_file(tmp_path, name, case, path, gen):
    rng = random.Random(f"{SEED}:{case}")
    if path is None:
        base = _generated_run(rng) if name == "run" else _generated_qrels(rng)
    else:
        base = _head(need(path))
    # The unmutated file reads, in both storage forms.
    for stored in (base, gz(base)):
        out = check_contract(READERS[name], stored, tmp_path)
        assert out.error is None, f"{case}: the unmutated file is refused: {out.error}"
    outcomes = []
    for k in range(MUTANTS_PER_FILE):
        desc, mutant = mutate(rng, base, gzipped=(k % 2 == 0))
        outcomes.append(_check_mutant(tmp_path, name, desc, mutant))
    assert outcomes  # every mutant was either refused correctly or parsed consistently


def test_truncated_gzip_of_a_real_run_at_many_cuts(tmp_path):
    """Cutting a gzipped run anywhere after its header never parses (never a shorter run)."""
    rng = random.Random(SEED)
    runs = sorted((DL19 / "official_nist").glob("input.*.gz")) if (DL19 / "official_nist").is_dir() else []
    base = _head(runs[0], 2000) if runs else _generated_run(rng) * 20
    z = gz(base)
    for cut in sorted(rng.sample(range(10, len(z) - 1), 25)) + [len(z) - 1, len(z) - 4, len(z) - 8]:
        path = tmp_path / "run.txt.gz"
        path.write_bytes(z[:cut])
        out = outcome_of(lambda path=path: read_run(path))
        assert out.violation(len(base)) is None, out.violation(len(base))
        rows = base.count(b"\n")
        assert out.error is not None, \
            f"gzip cut at {cut}/{len(z)} parsed to {len(out.value)} rows of {rows}: dropped silently"
        check_error(out.error, path)


# =========================================================================== BEIR folder


def _scifact_folder(dest: Path) -> Path:
    """A small BEIR folder from the real SciFact files (queries from the topics TSV)."""
    sf = REALDATA / "scifact"
    topics = gzip.decompress(need(sf / "beir_test_qrels_topics" / "topics.beir-v1.0.0-scifact.test.tsv.gz")
                             .read_bytes()).decode("utf-8").splitlines()[:60]
    queries = [json.dumps({"_id": t.split("\t", 1)[0], "text": t.split("\t", 1)[1], "metadata": {}}) for t in topics]
    qrels = need(sf / "beir_test_qrels_topics" / "qrels.beir-v1.0.0-scifact.test.txt").read_text().splitlines()[:80]
    (dest / "qrels").mkdir(parents=True, exist_ok=True)
    (dest / "queries.jsonl").write_text("\n".join(queries) + "\n")
    body = "".join("\t".join((f[0], f[2], f[3])) + "\n" for f in (line.split() for line in qrels))
    (dest / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + body)
    (dest / "corpus.jsonl").write_bytes(_head(need(sf / "derived_beir_format" / "corpus.jsonl"), 50))
    return dest


def test_mutated_scifact_beir_folder(tmp_path):
    folder = _scifact_folder(tmp_path / "scifact")
    base = read_beir(folder)
    assert len(base.queries) == 60 and len(base.qrels) == 80
    rng = random.Random(f"{SEED}:scifact")
    files = [folder / "queries.jsonl", folder / "qrels" / "test.tsv"]
    originals = {f: f.read_bytes() for f in files}
    for k in range(2 * MUTANTS_PER_FILE):
        target = files[k % 2]
        desc, mutant = mutate(rng, originals[target], gzipped=(k % 4 < 2))
        for f in files:
            f.write_bytes(originals[f])
        target.write_bytes(mutant)
        out = outcome_of(lambda: read_beir(folder))
        assert out.violation(len(mutant) + len(decompress_prefix(mutant))) is None, \
            f"'{desc}' on {target.name}: {out.violation(len(mutant))}"
        if out.error is not None:
            check_error(out.error, files)
            assert out.error.path == str(target), f"'{desc}' on {target.name}: error names {out.error.path}"
            check_error(out.error, target, mutant)
            continue
        if is_gzip(mutant):
            assert strict_decompress(mutant) is not None, f"'{desc}': corrupt gzip {target.name} parsed"
        # parsed: the other file's content is unchanged
        if target.name == "test.tsv":
            assert [q.query_id for q in out.value.queries.queries] == [q.query_id for q in base.queries.queries]
        else:
            assert dict(out.value.qrels.judgments) == dict(base.qrels.judgments)


def test_every_real_qrels_file_reads_in_full(tmp_path):
    """Sanity for the sources above: the unmutated real qrels read with one record per data line."""
    for name, case, path, _ in CASES:
        if name != "qrels" or path is None or not path.exists():
            continue
        out = check_contract(READERS["qrels"], path.read_bytes(), tmp_path)
        assert out.error is None, f"{case}: {out.error}"
    # reading the full DL19 qrels directly as well
    q = read_qrels(need(DL19 / "qrels" / "qrels.dl19-passage.txt"))
    assert len(q) == 9260
