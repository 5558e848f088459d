"""The demo, run once for every module that reads it (it takes ~20 s)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def demo(tmp_path_factory):
    pytest.importorskip("faiss")
    pytest.importorskip("bm25s")
    from gate.demo.end_to_end import run_demo
    from tests.regression import scenarios

    return run_demo(tmp_path_factory.mktemp("demo"), progress=lambda m: None, **scenarios.DEMO)
