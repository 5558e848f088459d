"""A faiss that cannot pin its SIMD level is a clear refusal (RunnerFailed: the verdict is
inconclusive and says why), not a TypeError."""

from __future__ import annotations

import pytest

from gate.runs import reference
from gate.runs.request import RunnerFailed

faiss = pytest.importorskip("faiss")


def test_a_faiss_without_simd_config_is_refused_with_the_reason(monkeypatch):
    monkeypatch.delattr(faiss, "SIMDConfig", raising=False)
    with pytest.raises(RunnerFailed) as refused:
        reference._faiss()
    assert refused.value.purpose == "reference"
    assert "cannot pin its SIMD level" in refused.value.message and "faiss-cpu >= 1.13" in refused.value.message
