"""Timings of run-file runs: the archive keeps the baseline's as a data file of its manifest, so a reused
baseline has them; a baseline archived without them gives no latency comparison and says why; a bad
sidecar is one line naming its file and line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.cli import main
from gate.inputs.config import load_config
from gate.inputs.manifest import archived_timings, gc, load_manifest
from gate.pipeline.archive import archive
from gate.pipeline.run import run_gate

QUERIES = [f"q{i}" for i in range(1, 21)]


def _run(path: Path, shift: int) -> None:
    lines = []
    for n, qid in enumerate(QUERIES):
        order = [f"{qid}-d{k}" for k in range(10)]
        if (n + shift) % 3 == 0:
            order = order[1:] + order[:1]  # the relevant document drops to the bottom
        lines += [f"{qid} Q0 {doc} {r + 1} {10.0 - r} x" for r, doc in enumerate(order)]
    path.write_text("\n".join(lines) + "\n")


def _timings(path: Path, base: float, *, cost: bool = False) -> None:
    lines = [json.dumps({"query_id": qid, "latency_ms": base + n % 5, **({"cost": 0.001} if cost else {})})
             for n, qid in enumerate(QUERIES)]
    path.write_text("\n".join(lines + [json.dumps({"run_wall_time_ms": 1234.5})]) + "\n")


def _band(tmp: Path) -> None:
    """noise.json from three identical baseline runs whose timings differ a little, as
    ``retrieval-gate noise --from-runs`` makes it: the band's latency spread is what a latency limit
    is judged against."""
    runs = []
    for k, drift in enumerate((0.0, 0.2, 0.4)):
        _run(tmp / f"repeat-{k}.run", 0)
        path = tmp / f"repeat-{k}.run"  # the same rankings under another run tag: distinct files
        path.write_text(path.read_text().replace(" x\n", f" repeat{k}\n"))
        _timings(tmp / f"repeat-{k}.timings.jsonl", 10.0 + drift)
        runs.append(str(tmp / f"repeat-{k}.run"))
    assert main(["noise", "--from-runs", *runs, "--qrels", str(tmp / "qrels.txt"), "--queries",
                 str(tmp / "queries.tsv"), "--out", str(tmp / "noise.json")]) == 0


def _world(tmp: Path, *, baseline_timings: bool = True, limit: str | None = None, band: bool = True) -> Path:
    (tmp / "queries.tsv").write_text("".join(f"{qid}\tquery {qid}\n" for qid in QUERIES))
    (tmp / "qrels.txt").write_text("".join(f"{qid} 0 {qid}-d{k} {int(k == 0)}\n" for qid in QUERIES for k in range(10)))
    (tmp / "retrieval.yml").write_text("bm25: {k1: 0.9}\n")
    _run(tmp / "base.run", 0)
    _run(tmp / "cand.run", 1)
    _timings(tmp / "base.timings.jsonl", 10.0)
    _timings(tmp / "cand.timings.jsonl", 20.0)
    if band:
        _band(tmp)
    policy = "" if limit is None else f"policy:\n  latency:\n    p95_max_increase: \"{limit}\"\n"
    config = tmp / ".retrieval-gate.yml"
    config.write_text(
        "golden: {queries: queries.tsv, qrels: qrels.txt}\nretrieval: {config: retrieval.yml}\n"
        "runner:\n  type: run-file\n  baseline_run: base.run\n  candidate_run: cand.run\n"
        + ("  baseline_timings: base.timings.jsonl\n" if baseline_timings else "")
        + "  candidate_timings: cand.timings.jsonl\n"
        "statistics: {samples: 500}\n" + ("noise: {file: noise.json}\n" if band else "") + policy)
    return config


def test_a_reused_baseline_has_its_archived_timings(tmp_path):
    config = load_config(_world(tmp_path, limit="20ms"))
    archived = archive(config, progress=lambda message: None)
    manifest = load_manifest(archived.manifest.manifest_path)
    kept = archived_timings(manifest)
    assert kept is not None and kept.origin == "archive" and kept.run_wall_time_ms == 1234.5
    assert manifest.extra["timings"]["file"].startswith("timings-")
    assert gc(manifest.folder) == [] and (manifest.folder / manifest.extra["timings"]["file"]).is_file()
    (tmp_path / "base.timings.jsonl").write_text("not read\n")  # the archive's copy is what the run reads
    outcome = run_gate(config, progress=lambda message: None)
    latency = outcome.report["latency"]
    assert outcome.report["baseline"]["resolution"] == "reused"
    assert latency["baseline"]["source"] == "archive" and latency["candidate"]["source"] == "file"
    assert latency["p95"]["change"] == pytest.approx(10.0) and latency["limit"] == "+20ms"
    assert latency["breached"] is False  # +10 ms is within 20 ms
    assert outcome.report["cost"] is None and "timings_note" not in outcome.report


def test_a_baseline_archived_without_timings_gives_no_comparison_and_says_why(tmp_path):
    config = load_config(_world(tmp_path, baseline_timings=False, limit="5%"))
    archive(config, progress=lambda message: None)
    outcome = run_gate(config, progress=lambda message: None)
    assert outcome.report["latency"] is None
    assert outcome.report["timings_note"] == "the archived baseline has no timings (archived without them)"
    codes = [r["code"] for r in outcome.report["verdict"]["reasons"]]
    assert "latency_increase" not in codes and outcome.verdict.kind != "fail"
    assert any("latency limit set (policy.latency.p95_max_increase), but the archived baseline has no timings"
               in r["message"] for r in outcome.report["verdict"]["reasons"] if r["code"] == "warning")


def test_a_limit_the_candidate_breaks_fails_with_latency_increase(tmp_path):
    config = load_config(_world(tmp_path, limit="5ms"))
    archive(config, progress=lambda message: None)
    outcome = run_gate(config, progress=lambda message: None)
    assert outcome.report["latency"]["band_threshold_ms"] > 0
    assert "latency_increase" in [r["code"] for r in outcome.report["verdict"]["reasons"]]
    assert outcome.verdict.kind == "fail" and outcome.verdict.exit_code == 1


def test_without_the_bands_latency_spread_a_latency_limit_is_a_note_not_a_fail(tmp_path):
    config = load_config(_world(tmp_path, limit="5ms", band=False))
    archive(config, progress=lambda message: None)
    outcome = run_gate(config, progress=lambda message: None)
    reasons = outcome.report["verdict"]["reasons"]
    assert "latency_increase" not in [r["code"] for r in reasons] and outcome.verdict.kind != "fail"
    assert outcome.report["latency"]["breached"] is None and outcome.report["latency"]["band_threshold_ms"] is None
    assert any("the noise band has no latency spread" in r["message"] for r in reasons if r["code"] == "warning")


@pytest.mark.parametrize("line, problem", [
    ('{"query_id": "q3", "latency_ms": -1}', "'latency_ms' must be 0 or more, got -1"),
    ('{"query_id": "q3", "latency_ms": NaN}', "invalid JSON: NaN is not a JSON number"),
    ('{"query_id": "q2", "latency_ms": 1}', "duplicate query id 'q2' (first at line 2)"),
])
def test_a_bad_candidate_sidecar_is_one_line_and_exit_2(tmp_path, capsys, line, problem):
    config = _world(tmp_path)
    archive(load_config(config), progress=lambda message: None)
    sidecar = tmp_path / "cand.timings.jsonl"
    lines = sidecar.read_text().splitlines()
    sidecar.write_text("\n".join([lines[0], lines[1], line, *lines[3:]]) + "\n")  # line 3 replaced
    code = main(["run", "--config", str(config), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1].startswith("retrieval-gate: error: ") and err[-1].endswith(f"cand.timings.jsonl:3: {problem}")
    assert "Traceback" not in "\n".join(err)


def test_a_candidate_sidecar_that_misses_a_query_is_one_line_and_exit_2(tmp_path, capsys):
    config = _world(tmp_path)
    archive(load_config(config), progress=lambda message: None)
    sidecar = tmp_path / "cand.timings.jsonl"
    sidecar.write_text("\n".join(sidecar.read_text().splitlines()[1:]) + "\n")  # q1 left out
    code = main(["run", "--config", str(config), "--out", str(tmp_path / "out"),
                 "--candidate-run", str(tmp_path / "cand.run"), "--candidate-timings", str(sidecar)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and "no timing for 1 query the run answers (e.g. 'q1')" in err[-1]



def test_costs_whose_sum_overflows_a_float_are_one_line_and_exit_2_not_a_crash(tmp_path, capsys):
    # 1e308 is finite, but a mean over 20 of them is inf: report.json could not be written (exit 4).
    config = _world(tmp_path)
    _timings(tmp_path / "base.timings.jsonl", 10.0, cost=True)
    archive(load_config(config), progress=lambda message: None)
    sidecar = tmp_path / "cand.timings.jsonl"
    sidecar.write_text(sidecar.read_text().replace('"latency_ms": ', '"cost": 1e308, "latency_ms": '))
    code = main(["run", "--config", str(config), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1].startswith("retrieval-gate: error: ") and err[-1].endswith(
        "cand.timings.jsonl:1: 'cost' must be at most 1e+12, got 1e+308")
