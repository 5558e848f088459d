"""Fixtures of the container suite: the engine and the image (once per session), the fake GitHub
API and git remote, and a runner's folders per test.

The suite runs only when asked (``./run container-test``, or ``RETRIEVAL_GATE_CONTAINER`` set):
building the image takes minutes and needs root. ``RETRIEVAL_GATE_CONTAINER=required`` (what
``.ci/run`` sets) makes a missing engine a failure instead of a skip.
"""

from __future__ import annotations

import os

import pytest

from tests.container import engine

MODE = os.environ.get("RETRIEVAL_GATE_CONTAINER", "").strip().lower()


def pytest_collection_modifyitems(config, items):
    if MODE:
        return
    skip = pytest.mark.skip(reason="the container suite runs with ./run container-test (RETRIEVAL_GATE_CONTAINER=1)")
    for item in items:
        if "tests/container/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def image() -> str:
    problem = engine.engine_problem()
    if problem is not None:
        if MODE == "required":
            pytest.fail(f"the container suite is required here, but: {problem}")
        pytest.skip(f"no Docker engine: {problem}")
    return engine.build_action_image()


@pytest.fixture()
def github():
    from tests.publishing.github.fake_github import FakeGitHub

    with FakeGitHub(token=TOKEN) as fake:
        yield fake


@pytest.fixture()
def remote(tmp_path):
    from tests.container.git_http import GitRemote

    with GitRemote(tmp_path / "remote") as served:
        yield served


TOKEN = "ghs_containerSuiteToken0123456789abcdef"
