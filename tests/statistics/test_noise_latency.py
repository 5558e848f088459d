"""The noise band keeps the repeats' latency spread; a band without it (an older gate's) stays valid."""

from __future__ import annotations

import numpy as np
import pytest

from gate.common.errors import InputError
from gate.statistics.noise import band_from_dict, check_band_dict, noise_band


def _band(latencies):
    values = [np.array([0.5, 0.6, 0.7]), np.array([0.5, 0.7, 0.7]), np.array([0.4, 0.6, 0.7])]
    return noise_band("nDCG@10", ["q1", "q2", "q3"], values, latencies=latencies)


def test_each_repeats_p50_and_p95_and_their_threshold_as_the_metrics():
    latencies = [np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.5, 3.5]), np.array([1.5, 2.0, 4.0])]
    band = _band(latencies)
    assert band.latency is not None
    p95 = [float(np.percentile(x, 95)) for x in latencies]
    assert band.latency.p95.means == pytest.approx(tuple(p95))
    spread = max(p95) - min(p95)
    assert band.latency_threshold_ms == pytest.approx(max(3 * float(np.std(p95, ddof=1)), spread))
    again = band_from_dict(check_band_dict(band.to_dict(), "noise.json"))
    assert again.latency_threshold_ms == pytest.approx(band.latency_threshold_ms)


def test_without_timings_in_every_repeat_the_band_has_no_latency_and_old_files_read():
    band = _band(None)
    assert band.latency is None and band.latency_threshold_ms is None
    data = band.to_dict()
    assert "latency" not in data  # a file an older gate wrote looks the same, and reads the same
    assert band_from_dict(check_band_dict(data, "noise.json")).latency is None


@pytest.mark.parametrize("latency", [{"p50_ms": {"means": [1.0, 2.0]}}, {"p50_ms": {"means": [1, 2]},
                                     "p95_ms": {"means": [-1.0, 2.0]}}, "fast"])
def test_a_bad_latency_spread_is_not_a_band(latency):
    data = {**_band(None).to_dict(), "latency": latency}
    with pytest.raises(InputError, match="not a noise band: 'latency"):
        check_band_dict(data, "noise.json")


def test_runs_given_with_their_sidecars_give_the_latency_spread_too(tmp_path):
    import json

    from gate.evaluation.measures import parse_measure
    from gate.inputs.readers.records import Qrels
    from gate.statistics.band import noise_from_runs

    qrels = Qrels("qrels", {"q1": {"d1": 1}, "q2": {"d2": 1}})
    paths = []
    for k, shift in enumerate((0.0, 0.5, 1.5)):
        run = tmp_path / f"repeat-{k}.run"
        run.write_text("q1 Q0 d1 1 2.0 x\nq1 Q0 d3 2 1.0 x\nq2 Q0 d4 1 2.0 x\nq2 Q0 d2 2 1.0 x\n")
        (tmp_path / f"repeat-{k}.timings.jsonl").write_text(
            "".join(json.dumps({"query_id": q, "latency_ms": 10.0 + shift + n}) + "\n"
                    for n, q in enumerate(["q1", "q2"])))
        paths.append(run)
    band = noise_from_runs(paths, qrels, ["q1", "q2"], parse_measure("nDCG@10"), 1)
    p95s = [10.95, 11.45, 12.45]  # each repeat's p95 of its two latencies
    assert band.latency is not None and band.latency.p95.means == pytest.approx(tuple(p95s))
    assert band.latency_threshold_ms == pytest.approx(3 * float(np.std(p95s, ddof=1)))  # 3 x sd beats the range
    (tmp_path / "repeat-2.timings.jsonl").unlink()
    assert noise_from_runs(paths, qrels, ["q1", "q2"], parse_measure("nDCG@10"), 1).latency is None


@pytest.mark.parametrize("kind", ["fifo", "folder", "device"])
def test_a_sidecar_that_is_not_a_file_is_one_line_not_silently_no_timings(tmp_path, kind):
    import os

    from gate.evaluation.measures import parse_measure
    from gate.inputs.readers.records import Qrels
    from gate.statistics.band import noise_from_runs

    qrels = Qrels("qrels", {"q1": {"d1": 1}})
    paths = []
    for k in range(2):
        run = tmp_path / f"repeat-{k}.run"
        run.write_text(f"q1 Q0 d1 1 2.0 x{k}\n")
        paths.append(run)
    sidecar = tmp_path / "repeat-1.timings.jsonl"
    {"fifo": os.mkfifo, "folder": os.mkdir, "device": lambda p: os.symlink("/dev/zero", p)}[kind](sidecar)
    with pytest.raises(InputError) as caught:  # and no hang on the FIFO, no endless read of /dev/zero
        noise_from_runs(paths, qrels, ["q1"], parse_measure("nDCG@10"), 1)
    assert str(caught.value).startswith(str(sidecar)) and "expected a file" in str(caught.value)
