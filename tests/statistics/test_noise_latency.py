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
