"""Adversarial checks of the streamed ``compare`` (gate.inputs.readers.run_chunks,
gate.evaluation.streaming) against what it replaced: ``read_run`` of the whole file, evaluate,
and ``same_rankings`` on the loaded runs.

Each test is one input where the streamed compare differs from reading the runs whole: a valid
run refused, identical rankings not recognised, a crash, or another error (or line) than
``read_run`` names for a bad file.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from gate.cli import main
from gate.common.errors import InputError
from gate.evaluation.streaming import digest_run
from gate.inputs.readers.qrels import read_qrels
from gate.inputs.readers.records import same_rankings
from gate.inputs.readers.run_chunks import iter_run_chunks
from gate.inputs.readers.runs import read_run
from gate.inputs.universe import query_universe


def _compare(baseline: Path, candidate: Path, qrels: Path, out: Path | None = None) -> int:
    argv = ["compare", "--baseline", str(baseline), "--candidate", str(candidate), "--qrels", str(qrels),
            "--samples", "200"]
    if out is not None:
        argv += ["--out", str(out)]
    return main(argv)


def _read_run_error(path: Path) -> str:
    with pytest.raises(InputError) as caught:
        read_run(path)
    return str(caught.value)


def _assert_same_error_as_read_run(tmp_path: Path, capsys, bad: Path) -> None:
    """compare names the error read_run names for ``bad`` (the candidate; the baseline is good)."""
    expected = _read_run_error(bad)
    good = tmp_path / "good.run"
    good.write_text("q0 Q0 D0_1 1 2 t\nq0 Q0 D0_3 2 1 t\n")
    qrels = tmp_path / "qrels"
    qrels.write_text("q0 0 D0_3 1\n")
    capsys.readouterr()
    code = _compare(good, bad, qrels)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.strip() == f"retrieval-gate: error: {expected}"


# ---------------------------------------------------------------------------------------------
# A valid run refused


def test_long_tag_on_a_later_piece_first_line_is_not_an_error(tmp_path, capsys):
    """read_run checks the tag's length on the file's first data line only (it is the only tag
    kept). Each piece is read by a fresh _Reader, so the first line of every piece after the
    first is checked too: a valid 2.7 MB run whose later lines carry a 1.1 KiB tag is refused
    ("run tag is longer than 1 KiB" at line 38001), where the old compare passed."""
    long_tag = "T" * 1100
    lines = [f"q{q} Q0 D{q}_{r} {r + 1} {1000 - r} {long_tag if r == 0 and q > 0 else 'tag'}"
             for q in range(100) for r in range(1000)]
    run = tmp_path / "run.txt"
    run.write_text("\n".join(lines) + "\n")
    qrels = tmp_path / "qrels"
    qrels.write_text("".join(f"q{q} 0 D{q}_{r} 1\n" for q in range(100) for r in (3, 50)))
    assert read_run(run).tag == "tag"  # the whole-file reader accepts it
    code = _compare(run, run, qrels, tmp_path / "out")
    err = capsys.readouterr().err
    assert code == 0, err


# ---------------------------------------------------------------------------------------------
# Identical rankings


def test_identical_rankings_are_unchanged_when_one_piece_keeps_long_docnos_as_objects(tmp_path):
    """The ranking fingerprint hashes a 'U' docno array with splitmix and an object array (a
    piece holding a docno far longer than its block's others) with blake2b, so the same query
    ranked the same way gets two different fingerprints when the two files' pieces differ in
    dtype. Here the candidate is the baseline plus an unjudged query with 60-byte docnos (so its
    block's median is long and the 100-byte docno stays in the 'U' array): the old compare said
    'unchanged' (pass, exit 0), the streamed one 'too_few_movers' (inconclusive, exit 3)."""
    long_docno = "L" * 100
    q1 = [f"q1 Q0 d{i} {i + 1} {10 - i} t" for i in range(10)] + [f"q1 Q0 {long_docno} 11 -1 t"]
    extra = [f"qX Q0 {'x' * 59}{i} {i + 1} {50 - i} t" for i in range(50)]
    base, cand, qrels = tmp_path / "base.run", tmp_path / "cand.run", tmp_path / "qrels"
    base.write_text("\n".join(q1) + "\n")
    cand.write_text("\n".join(q1 + extra) + "\n")
    qrels.write_text("q1 0 d3 1\nq1 0 d5 2\n")
    assert same_rankings(read_run(base), read_run(cand), ["q1"])  # what the old compare asked
    assert _compare(base, cand, qrels, tmp_path / "out") == 0
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [r["code"] for r in report["decision"]["reasons"]] == ["unchanged"]


def _run_with_a_comment_inside_a_query(path: Path) -> None:
    """90 queries x 1,000 rows (3.2 MB), one comment line inside query q000057, placed so that
    pieces of 1 MiB cut that query at the comment while pieces of 1,638,400 bytes (what
    piece_bytes gives a 100 MiB run) do not."""
    with open(path, "w") as f:
        n = 0
        for q in range(90):
            for r in range(1000):
                n += 1
                if n == 57037:
                    f.write("# a comment inside a query\n")
                f.write(f"q{q:06d} Q0 D{q}x{r:07d} {r + 1} {1000 - r}.5 tag\n")


def test_identical_rankings_reread_does_not_crash_when_the_first_read_used_larger_pieces(tmp_path):
    """same_rankings_as reads the files again with the default 1 MiB pieces, while the first read
    used piece_bytes(size) (a 64th of the file beyond 64 MiB). A query holding a comment line is
    cut at the comment by one and not the other, so the re-read raises RunNotGrouped, which
    nothing catches: ``retrieval-gate compare --baseline R --candidate R`` on a 100 MiB run built
    this way (the file below followed by more queries) exits 4 with
    "internal error (traceback saved ...)". The old compare passed ('unchanged')."""
    run = tmp_path / "run.txt"
    _run_with_a_comment_inside_a_query(run)
    qrels_path = tmp_path / "qrels"
    qrels_path.write_text("".join(f"q{q:06d} 0 D{q}x{q * 13 % 1000 + 1:07d} 1\n" for q in range(0, 90, 5)))
    qrels = read_qrels(qrels_path)
    universe = query_universe(qrels).query_ids
    first = digest_run(run, qrels, ["nDCG@10"], universe, chunk_bytes=1_638_400)
    second = digest_run(run, qrels, ["nDCG@10"], universe, chunk_bytes=1_638_400)
    assert first.same_rankings_as(second, universe)


# ---------------------------------------------------------------------------------------------
# Bad input: the error read_run names


def test_two_errors_in_the_first_mib_name_read_runs_error(tmp_path, capsys):
    """read_run reads 1 MiB blocks and checks a block column by column (column 2 before the rank),
    the pieces read 256 KiB blocks: with a bad rank at line 11 and a bad column 2 at line 20001,
    read_run (and the old compare) name line 20001, the streamed compare line 11."""
    lines = [f"q{q} Q0 D{q}_{r} {r + 1} {1000 - r} t" for q in range(40) for r in range(1000)]
    lines[10] = "q0 Q0 D0_10 x11 990 t"
    lines[20000] = lines[20000].replace(" Q0 ", " QX ")
    bad = tmp_path / "bad.run"
    bad.write_text("\n".join(lines) + "\n")
    _assert_same_error_as_read_run(tmp_path, capsys, bad)


def test_duplicate_in_the_first_piece_and_bad_line_later_name_read_runs_error(tmp_path, capsys):
    """read_run checks duplicates once the whole file is read, so a bad line anywhere is named
    first; each piece checks its own duplicates when the piece is read, so the streamed compare
    names the duplicate at line 6 where read_run names the bad column 2 at line 90001."""
    lines = [f"q{q} Q0 D{q}_{r} {r + 1} {1000 - r} t" for q in range(100) for r in range(1000)]
    lines[5] = "q0 Q0 D0_1 6 995 t"
    lines[90000] = lines[90000].replace(" Q0 ", " QX ")
    bad = tmp_path / "bad.run"
    bad.write_text("\n".join(lines) + "\n")
    _assert_same_error_as_read_run(tmp_path, capsys, bad)


def _one_big_query(rank_error_line: int = 5) -> list[str]:
    lines = [f"q0 Q0 D{r} {r + 1} {200000 - r} t" for r in range(100000)]
    lines[rank_error_line - 1] = f"q0 Q0 D{rank_error_line - 1} x5 1 t"
    return lines


def test_overlong_line_after_an_early_error_in_one_big_query_names_the_early_error(tmp_path, capsys):
    """A first query larger than a piece is held as text until it can be cut, so a line longer
    than 64 KiB further on (found while the file is read, before any parsing) is named instead
    of the bad rank at line 5 that read_run (parsing each 1 MiB as it reads) names."""
    lines = _one_big_query()
    lines[50000] = "q0 Q0 " + "L" * 300000 + " 50001 1 t"
    bad = tmp_path / "bad.run"
    bad.write_text("\n".join(lines) + "\n")
    _assert_same_error_as_read_run(tmp_path, capsys, bad)


def test_truncated_gzip_after_an_early_error_in_one_big_query_names_the_early_error(tmp_path, capsys):
    """The same with a truncated .gz: 'corrupt or truncated gzip data after line 66329' instead
    of read_run's 'bad.run.gz:5: rank 'x5' is not an integer'."""
    data = gzip.compress(("\n".join(_one_big_query()) + "\n").encode())
    bad = tmp_path / "bad.run.gz"
    bad.write_bytes(data[: len(data) * 2 // 3])
    _assert_same_error_as_read_run(tmp_path, capsys, bad)


# ---------------------------------------------------------------------------------------------
# Memory


def test_indented_lines_are_still_read_a_piece_at_a_time(tmp_path):
    """A run whose lines start with a blank (right-aligned query ids: read_run accepts them) is
    never cut: _tail_start gives no cut for an indented last line, the limit doubles, and the
    whole file becomes one piece held as text and then parsed. On a 107 MB indented run the
    streamed compare peaks at 1.0 GB and 21 s against the old compare's 0.5 GB and 7.6 s."""
    run = tmp_path / "run.txt"
    with open(run, "w") as f:
        for q in range(120):
            f.write("".join(f"  {q:4d} Q0 D{q}x{r:07d} {r + 1} {1000 - r}.5 tag\n" for r in range(1000)))
    assert run.stat().st_size > 4 << 20
    largest = max(len(piece) for piece, _ in iter_run_chunks(run))
    assert largest <= 60_000, f"one piece of {largest:,} rows: the whole run"
