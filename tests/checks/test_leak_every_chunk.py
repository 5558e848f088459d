"""leakcheck reports every chunk a golden query leaked into, not only its best one, and the
recommendation names every document behind them (Cranfield query 172 sits in 320, 321 and 322)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import NamedTuple

import pytest

from gate.checks import leakage
from gate.checks.leakage import find_leaks, render_text
from gate.inputs.readers.records import Query
from tests.shared_data import REALDATA, REPO, need

QUERY = "solution of the blasius problem with three point boundary conditions"


class Chunk(NamedTuple):
    chunk_id: str
    doc_id: str | None
    text: str


def _corpus(copies: int, filler: int = 30) -> list[Chunk]:
    chunks = [Chunk(f"f{i}", f"F{i}", f"unrelated text number {i} about wings and heat") for i in range(filler)]
    for i in range(copies):  # spread through the corpus, one document each
        chunks.insert(3 * i + 1, Chunk(f"c{i}#0", f"D{i}", f"as shown in {QUERY} earlier"))
    return chunks


@pytest.mark.parametrize("workers", [0, 2])
def test_every_matched_chunk_is_kept_in_corpus_order(workers, monkeypatch):
    monkeypatch.setattr(leakage, "WORKERS_AFTER_CHUNKS", 5)  # the worker path on a small corpus too
    chunks = _corpus(7)
    result = find_leaks([Query("172", QUERY)], iter(chunks), workers=workers)
    (match,) = result.matched
    assert match.chunks_matched == 7
    assert [c for c, _ in match.chunks] == [f"c{i}#0" for i in range(7)]
    assert [d for _, d in match.chunks] == [f"D{i}" for i in range(7)]
    assert [doc for doc, _ in result.sources()] == sorted(f"D{i}" for i in range(7))
    text = render_text(result)
    assert "-> c0#0, c1#0, c2#0, c3#0, c4#0 and 2 more (exact, 7 chunks)" in text
    assert all(f"D{i} (1 match)" in text for i in range(7))
    assert json.loads(json.dumps(result.to_dict()))["matched"][0]["chunks"][6] == {"chunk_id": "c6#0", "doc_id": "D6"}


@pytest.mark.parametrize("workers", [0, 2])
def test_the_kept_chunks_are_capped_and_the_count_is_not(workers, monkeypatch):
    monkeypatch.setattr(leakage, "WORKERS_AFTER_CHUNKS", 5)
    monkeypatch.setattr(leakage, "SOURCES_NAMED", 10)  # fewer than the kept chunks: the "more" path
    copies = leakage.CHUNKS_KEPT + 12
    result = find_leaks([Query("172", QUERY)], iter(_corpus(copies, filler=3 * copies)), workers=workers)
    (match,) = result.matched
    assert match.chunks_matched == copies
    assert [c for c, _ in match.chunks] == [f"c{i}#0" for i in range(leakage.CHUNKS_KEPT)]
    recommendation = result.recommendation()
    assert recommendation.count("(1 match)") == leakage.SOURCES_NAMED
    assert f"{leakage.CHUNKS_KEPT - leakage.SOURCES_NAMED} more documents hold" in recommendation


def test_cranfield_query_172_names_all_three_documents(tmp_path):
    seed = need(REALDATA / "ir_datasets_seed")
    home = tmp_path / "irds"
    shutil.copytree(seed, home)
    # A process of its own: ir_datasets reads IR_DATASETS_HOME once, when imported, and another test
    # of this process (whichever ran first here) may have imported it already.
    env = {**os.environ, "IR_DATASETS_HOME": str(home), "PYTHONPATH": str(REPO),
           "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}
    done = subprocess.run([sys.executable, "-m", "gate", "leakcheck", "--queries", "irds:cranfield", "--corpus",
                           "irds:cranfield"], env=env, capture_output=True, text=True, timeout=600)
    out = done.stdout
    assert done.returncode == 1, done.stderr
    line = next(candidate for candidate in out.splitlines() if candidate.lstrip().startswith("172 "))
    assert "-> 320, 321, 322 (exact, 3 chunks)" in line
    assert "320 (1 match), 321 (1 match), 322 (1 match)" in out
