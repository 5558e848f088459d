"""Attribution end to end: `factorial` on run files, and the 2^k grid inside `run`."""

from __future__ import annotations

import json

from gate.cli import main
from gate.inputs.config import load_config
from gate.pipeline.archive import archive
from gate.pipeline.run import run_gate
from tests.shared_data import REALDATA, need
from tests.support.small_world import small_world


def _silent(message: str) -> None:
    pass


def test_factorial_command_on_four_dl19_runs(tmp_path, capsys):
    dl19 = need(REALDATA / "runs" / "trec-dl-2019-passage")
    runs = dl19 / "official_nist"
    cells = {
        "expansion=old,reranker=old": runs / "input.bm25base_p.gz",
        "expansion=new,reranker=old": runs / "input.bm25base_rm3_p.gz",
        "expansion=old,reranker=new": runs / "input.p_bert.gz",
        "expansion=new,reranker=new": runs / "input.p_exp_rm3_bert.gz",
    }
    argv = ["factorial", "--factor", "expansion", "--factor", "reranker", "--qrels",
            str(dl19 / "qrels" / "qrels.dl19-passage.txt"), "--samples", "2000", "--out", str(tmp_path)]
    for levels, path in cells.items():
        argv += ["--cell", f"{levels}={path}"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "## Attribution" in out and "interaction" in out
    data = json.loads((tmp_path / "report.json").read_text())["attribution"]
    means = {tuple(sorted(c["levels"].items())) if isinstance(c["levels"], dict) else c["levels"]: c["mean"]
             for c in data["cells"]}
    assert len(means) == 4
    assert data["interaction_check"]["agree"] is True


def test_factorial_refuses_a_cell_that_misses_queries(tmp_path, capsys):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 a 1\n2 0 b 1\n3 0 c 1\n")
    full = tmp_path / "full.run"
    full.write_text("1 Q0 a 1 2 t\n2 Q0 b 1 2 t\n3 Q0 c 1 2 t\n")
    short = tmp_path / "short.run"
    short.write_text("1 Q0 a 1 2 t\n")
    argv = ["factorial", "--factor", "a", "--factor", "b", "--qrels", str(qrels),
            "--cell", f"a=old,b=old={full}", "--cell", f"a=new,b=old={full}",
            "--cell", f"a=old,b=new={full}", "--cell", f"a=new,b=new={short}"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "misses 2 of 3" in err
    assert main(argv + ["--allow-missing"]) == 0


def test_a_three_factor_grid_runs_end_to_end_through_a_command_runner(tmp_path):
    path = small_world(tmp_path, leak_in_new=False)
    (tmp_path / "corpus-v2.jsonl").write_text((tmp_path / "corpus-v1.jsonl").read_text()
                                              + '{"id": "extra#c0", "text": "configure webhooks with giraffe"}\n')
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 1.0\nfusion: {k: 60}\n")
    archive(load_config(path), progress=_silent)
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v2}\nboost: 3.0\nfusion: {k: 20}\n")
    report = run_gate(load_config(path), progress=_silent).report
    attribution = report["attribution"]
    assert attribution.get("bundle") is None, attribution
    assert sorted(attribution["factors"]) == ["boost", "fusion", "ingestion"]
    assert len(attribution["cells"]) == 8
    # Every effect is a real contrast of cells; the all-new cell is the candidate.
    assert len(attribution["effects"]) == 19
    sources = {c.get("source") for c in attribution["cells"]}
    assert {"baseline", "candidate", "runner"} <= sources
    # The corpus factor has one corpus per level.
    assert attribution["verification"]


def test_more_changed_factors_than_the_limit_is_a_bundle(tmp_path):
    path = small_world(tmp_path, leak_in_new=False, extra_config="attribution: {max_factors: 2}\n")
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 1.0\nfusion: {k: 60}\n")
    archive(load_config(path), progress=_silent)
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v2}\nboost: 3.0\nfusion: {k: 20}\n")
    report = run_gate(load_config(path), progress=_silent).report
    assert "credit not apportioned: 3 changes would need 8 runs" in json.dumps(report["attribution"])
