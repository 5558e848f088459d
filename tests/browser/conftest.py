"""The ``browser`` fixture: headless Chromium with the network off (tests.browser.harness), or a
skip that names what to install.

    def test_history_page_renders(browser, tmp_path):
        rendered = browser.render(page, 800, 600)
        assert not rendered.errors

Without Chromium the tests that take it skip ("no Chromium: install the Debian package
chromium"); ``RETRIEVAL_GATE_BROWSER=required`` (what ``.ci/run`` sets) makes that a failure.
Every test that takes the fixture belongs to the full tier (``./run test-full``; a browser start
costs about a second), whatever file it is in.
"""

from __future__ import annotations

import os

import pytest

from tests.browser import harness

ENVIRONMENT = "RETRIEVAL_GATE_BROWSER"


def required() -> bool:
    return os.environ.get(ENVIRONMENT, "").strip().lower() == "required"


# Before tests/conftest.py's own hook (also tryfirst; this conftest is registered after it, and
# pluggy calls the later one first), which deselects the full tier by its marker.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if "browser" in item.fixturenames:
            item.add_marker(pytest.mark.full)


@pytest.fixture(scope="session")
def browser() -> harness.Browser:
    found = harness.open_browser()
    if isinstance(found, str):
        if required():
            pytest.fail(f"the browser tests are required here ({ENVIRONMENT}=required), but: {found}")
        pytest.skip(found)
    return found
