"""Adversarial probes of the timings sidecar beside `sweep --cell` / `factorial --cell` runs
(helper-breaker)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gate.cli import main

EMPTY_Q2 = '{"query_id": "q1", "latency_ms": 1, "hits": 1}\n{"query_id": "q2", "latency_ms": 1, "hits": 0}\n'
#: What the gate's own runners write when a golden query without judgments (q3) found nothing.
WITH_UNJUDGED = EMPTY_Q2 + '{"query_id": "q3", "latency_ms": 1, "hits": 0}\n'


def _cells(tmp_path: Path, sidecar: str, names=("a", "b")) -> list[str]:
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\nq2 0 d2 1\n")
    (tmp_path / "golden.jsonl").write_text("".join(json.dumps({"query_id": q, "text": f"text {q}"}) + "\n"
                                                   for q in ("q1", "q2", "q3")))
    args = []
    for n, name in enumerate(names, 1):
        run = tmp_path / f"{name}.run"
        run.write_text(f"q1 Q0 d1 1 {n}.0 x\n")
        (tmp_path / f"{name}.timings.jsonl").write_text(sidecar)
        args += ["--cell", f"{name}={run}"]
    return args


def _err(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if not line.startswith("[retrieval-gate]")]


@pytest.mark.parametrize("with_queries", [True, False])
def test_a_sweep_cells_sidecar_may_name_a_golden_query_without_judgments(tmp_path, capsys, with_queries):
    """The HTTP runner writes a line for every golden query it was given: an unjudged one it
    found nothing for is "hits": 0 and has no run line. Refused as 'not one the runner was given'
    (it was), so the gate's own output cannot be swept."""
    args = ["sweep", "--qrels", str(tmp_path / "qrels.txt"), "--folds", "2", "--format", "json",
            *_cells(tmp_path, WITH_UNJUDGED)]
    if with_queries:
        args += ["--queries", str(tmp_path / "golden.jsonl")]
    assert main(args) == 0, _err(capsys)
    assert [c["mean"] for c in json.loads(capsys.readouterr().out)["cells"]] == [0.5, 0.5]


def test_a_factorial_cells_sidecar_may_name_a_golden_query_without_judgments(tmp_path, capsys):
    levels = ["model=old,corpus=old", "model=new,corpus=old", "model=old,corpus=new", "model=new,corpus=new"]
    cells = _cells(tmp_path, WITH_UNJUDGED, names=("oo", "no", "on", "nn"))
    args = ["factorial", "--factor", "model", "--factor", "corpus", "--qrels", str(tmp_path / "qrels.txt"),
            "--queries", str(tmp_path / "golden.jsonl"), "--samples", "200", "--format", "json"]
    for level, (flag, cell) in zip(levels, zip(cells[::2], cells[1::2])):
        args += [flag, f"{level}={cell.split('=', 1)[1]}"]
    assert main(args) == 0, _err(capsys)


def test_a_factorial_cell_that_answered_every_query_with_nothing_is_scored_not_refused(tmp_path, capsys):
    """sweep --cell scores such a cell 0 (every query "hits": 0, an empty run file); factorial
    refuses it as 'the run has no rows', though the commit says 'as in run and sweep'."""
    levels = ["model=old,corpus=old", "model=new,corpus=old", "model=old,corpus=new", "model=new,corpus=new"]
    cells = _cells(tmp_path, EMPTY_Q2, names=("oo", "no", "on", "nn"))
    (tmp_path / "oo.run").write_text("")
    (tmp_path / "oo.timings.jsonl").write_text(EMPTY_Q2.replace('"hits": 1', '"hits": 0'))
    args = ["factorial", "--factor", "model", "--factor", "corpus", "--qrels", str(tmp_path / "qrels.txt"),
            "--samples", "200", "--format", "json"]
    for level, cell in zip(levels, cells[1::2]):
        args += ["--cell", f"{level}={cell.split('=', 1)[1]}"]
    assert main(args) == 0, _err(capsys)


@pytest.mark.parametrize("kind", ["fifo", "directory", "dangling link", "device"])
def test_a_sidecar_that_is_not_a_file_is_one_line_naming_it(tmp_path, capsys, kind):
    args = _cells(tmp_path, EMPTY_Q2)
    target = tmp_path / "a.timings.jsonl"
    target.unlink()
    {"fifo": lambda: os.mkfifo(target), "directory": target.mkdir,
     "dangling link": lambda: target.symlink_to(tmp_path / "nowhere"),
     "device": lambda: target.symlink_to("/dev/zero")}[kind]()
    assert main(["sweep", "--qrels", str(tmp_path / "qrels.txt"), "--folds", "2", *args]) == 2
    said = _err(capsys)
    assert len(said) == 1 and str(target) in said[0], said
