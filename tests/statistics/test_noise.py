"""The noise band: the seed's ten runs, real nondeterminism through a runner, staleness."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from gate.cli import main
from gate.inputs.config import load_config
from gate.inputs.manifest import load_manifest
from gate.inputs.readers.records import Qrels, Run
from gate.pipeline.archive import archive
from gate.pipeline.run import run_gate
from gate.statistics.band import tie_floor
from gate.statistics.noise import noise_band, spread
from tests.support.small_world import small_world

SEED_MEANS = [0.6612, 0.6668, 0.6571, 0.6683, 0.6640, 0.6701, 0.6644, 0.6659, 0.6602, 0.6672]


def test_the_seeds_ten_identical_runs():
    band = spread(SEED_MEANS)
    assert band.mean == pytest.approx(0.66452, abs=1e-12)
    # The seed prints sd 0.00405, which its own ten values do not give: their
    # sample sd (ddof 1) is 0.004010. Do not "fix" this test to 0.00405.
    assert round(band.sd, 5) == 0.00401
    assert band.range == pytest.approx(0.0130, abs=1e-12)
    # max(3 x 0.00401, 0.0130): the range decides.
    assert band.threshold == pytest.approx(0.0130, abs=1e-12)
    assert band.delta_sd == pytest.approx(math.sqrt(2) * band.sd)


def test_identical_runs_give_a_zero_band_and_no_nan():
    values = [np.array([0.5, 0.25, 1.0])] * 4
    band = noise_band("nDCG@10", ["a", "b", "c"], values, {"a": "x", "b": "x", "c": "y"})
    data = band.to_dict()
    assert data["sd"] == 0.0 and data["range"] == 0.0 and data["threshold"] == 0.0
    assert data["unstable_queries"] == [] and data["strata"]["x"]["threshold"] == 0.0
    assert not any(isinstance(v, float) and math.isnan(v) for v in data.values())


def _silent(message: str) -> None:
    pass


def _nondeterministic(tmp_path: Path) -> Path:
    path = small_world(tmp_path, leak_in_new=False)
    # The runner perturbs scores by its {seed}: a stack whose index differs per build.
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 1.0\nshuffle_ties: true\n")
    text = path.read_text().replace("--output {run}", "--output {run} --seed {seed}")
    path.write_text(text)
    return path


def test_a_nondeterministic_runner_gives_a_nonzero_band_and_unstable_queries(tmp_path, capsys):
    path = _nondeterministic(tmp_path)
    assert main(["noise", "--config", str(path), "--repeats", "5", "--out", str(tmp_path / "noise.json")]) == 0
    band = json.loads((tmp_path / "noise.json").read_text())
    assert band["runs"] == 5 and len(band["means"]) == 5 and band["seeds"] == [1001, 1002, 1003, 1004, 1005]
    assert band["sd"] > 0 and band["threshold"] == max(3 * band["sd"], band["range"])
    assert band["unstable_queries"] and band["unstable_queries"][0]["range"] > 0
    assert set(band["strata"]) == {"how_to", "navigational"}
    assert band["fingerprints"]["config"] and band["fingerprints"]["corpus"]
    err = capsys.readouterr().err
    assert err.count("noise repeat") >= 5 and "nDCG@10" in err


def test_identical_runs_through_the_runner_give_a_zero_band(tmp_path):
    path = small_world(tmp_path, leak_in_new=False)
    assert main(["noise", "--config", str(path), "--repeats", "3", "--out", str(tmp_path / "noise.json")]) == 0
    band = json.loads((tmp_path / "noise.json").read_text())
    assert band["sd"] == 0.0 and band["range"] == 0.0 and band["unstable_queries"] == []


def test_a_band_stored_with_the_manifest_is_used_rescored_or_stale(tmp_path):
    path = _nondeterministic(tmp_path)
    archive(load_config(path), progress=_silent, noise_repeats=4)
    manifest = (tmp_path / ".retrieval-gate" / "baseline" / "manifest.yml").read_text()
    assert "noise_band:" in manifest and "noise-run-" in manifest
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 2.0\nshuffle_ties: true\n")
    report = run_gate(load_config(path), progress=_silent).report
    band = report["noise_band"]
    assert band["state"] == "current" and band["runs"] == 4 and band["threshold"] > 0
    assert band["sentence"].startswith(("within the noise band", "exceeds the noise band"))

    # Fewer judged queries: the stored repeat runs cover them, so the band is re-scored.
    qrels = (tmp_path / "qrels.txt").read_text().splitlines()
    (tmp_path / "qrels.txt").write_text("\n".join(line for line in qrels if not line.startswith("q_0019")) + "\n")
    report = run_gate(load_config(path), progress=_silent).report
    assert report["noise_band"]["state"] == "rescored"

    # A different corpus for the baseline's config: stale, not used, and the command to measure is given.
    with open(tmp_path / "corpus-v1.jsonl", "a") as handle:
        handle.write('{"id": "new/page#c0", "text": "something new"}\n')
    report = run_gate(load_config(path), progress=_silent).report
    assert report["noise_band"]["stale"] is True and report["noise_band"]["threshold"] is None
    assert "retrieval-gate archive --noise-repeats" in report["noise_band"]["sentence"]
    assert report["verdict"]["improvement_shown"] is False


def test_a_band_whose_query_set_differs_is_stale_and_not_used(tmp_path):
    path = small_world(tmp_path, leak_in_new=False)
    archive(load_config(path), progress=_silent)
    # A band measured elsewhere from run files, on another query set.
    other = tmp_path / "other.jsonl"
    other.write_text('{"query_id": "q_0000", "text": "another set", "stratum": "x"}\n')
    runs = []
    for i in range(3):
        run = tmp_path / f"r{i}.run"
        run.write_text(f"q_0000 Q0 guide/webhooks-0#c0 1 {1 + i} t\n")
        runs.append(str(run))
    assert main(["noise", "--from-runs", *runs, "--qrels", str(tmp_path / "qrels.txt"), "--queries", str(other),
                 "--out", str(tmp_path / "noise.json")]) == 0
    path.write_text(path.read_text() + "noise: {file: noise.json}\n")
    report = run_gate(load_config(path), progress=_silent).report
    assert report["noise_band"]["stale"] is True
    assert "fingerprint differs" in report["noise_band"]["reason"]
    assert report["noise_band"]["threshold"] is None


def test_tie_floor_counts_queries_whose_value_depends_on_docno_order():
    qrels = Qrels("q", {"1": {"a": 1}, "2": {"c": 1}})
    # Query 1: a and b tie at rank 1 (b wins by docno descending); query 2 has no ties.
    run = Run.from_rankings("r", {"1": {"a": 1.0, "b": 1.0}, "2": {"c": 2.0, "d": 1.0}})
    floor = tie_floor(run, qrels, __import__("gate.evaluation.measures", fromlist=["x"]).parse_measure("RR@1"),
                      ["1", "2"], 1)
    assert floor.count == 1 and floor.queries == ("1",)
    assert floor.span == 1.0 and floor.mean_shift == 0.5


def test_a_plain_archive_keeps_a_band_that_still_applies_and_drops_one_that_does_not(tmp_path):
    path = _nondeterministic(tmp_path)
    manifest_path = tmp_path / ".retrieval-gate" / "baseline" / "manifest.yml"
    archive(load_config(path), progress=_silent, noise_repeats=3)
    first = load_manifest(manifest_path).extra["noise_band"]
    said: list[str] = []
    archive(load_config(path), progress=said.append)  # the next push to main: no --noise-repeats
    kept = load_manifest(manifest_path).extra.get("noise_band")
    assert kept is not None and kept["threshold"] == first["threshold"] and kept["runs_files"] == first["runs_files"]
    assert all((manifest_path.parent / name).is_file() for name in kept["runs_files"])
    assert any("noise band is kept" in line for line in said)
    report = run_gate(load_config(path), progress=_silent).report
    assert report["noise_band"]["state"] == "current" and report["noise_band"]["runs"] == 3
    # The corpus changed: the band no longer applies, and the archive says it drops it.
    with open(tmp_path / "corpus-v1.jsonl", "a") as handle:
        handle.write('{"id": "new/page#c0", "text": "something new"}\n')
    said.clear()
    archive(load_config(path), progress=said.append)
    assert load_manifest(manifest_path).extra.get("noise_band") is None
    assert any("noise band is not kept" in line and "corpus" in line for line in said), said
