"""The demo, run once for every module that reads it (it takes ~20 s), and the demo's small world,
built once for every module that reads it (tests/conftest.py keeps the tests of each on one
pytest-xdist worker, so that each is built once per run)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def demo(tmp_path_factory):
    pytest.importorskip("faiss")
    pytest.importorskip("bm25s")
    from gate.demo.end_to_end import run_demo
    from tests.regression import scenarios

    return run_demo(tmp_path_factory.mktemp("demo"), progress=lambda m: None, **scenarios.DEMO)


SMALL_SCALE = 0.1


@pytest.fixture(scope="session")
def demo_world(tmp_path_factory):
    """The demo's world at seed 7 and a tenth of the scale (calibrated: its pilot computed, not
    cached). Read only: a test that changes a file copies it first."""
    from gate.demo import world as W

    return W.build_world(tmp_path_factory.mktemp("demo-world"), seed=7, scale=SMALL_SCALE)
