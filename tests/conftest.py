import sys
from pathlib import Path

# Tests import the package from the working tree even when it is not installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import os

# A report the gate writes that its own schema (the fork comment job's check) refuses is a bug:
# in the suite it fails the test that made it (subprocesses inherit this), not only a warning.
os.environ.setdefault("RETRIEVAL_GATE_REPORT_CHECK", "raise")


import pytest  # noqa: E402


@pytest.fixture()
def world(tmp_path):
    """A checkout with a base commit and an archived baseline (tests.support.action_world),
    and a local server playing GitHub: ``(checkout, fake, tmp_path)``."""
    from tests.github.fake_github import FakeGitHub
    from tests.support.action_world import TOKEN, Checkout

    checkout = Checkout(tmp_path / "repo")
    with FakeGitHub(token=TOKEN) as fake:
        yield checkout, fake, tmp_path
