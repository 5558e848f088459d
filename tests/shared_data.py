"""Where ../shared lives, and a skip marker for tests that need it.

The real data sits beside the project (``../shared``) on developer machines
and in CI, never in the repository; on a user's fresh clone it is absent and
these tests skip with a reason.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("RETRIEVAL_GATE_SHARED", REPO.parent / "shared"))
REALDATA = SHARED / "realdata"
GITHUB = SHARED / "github"
SEEDS = SHARED / "seeds"


def need(path: Path) -> Path:
    """Return ``path`` or skip the calling test when ../shared does not have it."""
    if not path.exists():
        pytest.skip(f"{path} not present (../shared is only beside the project on dev machines and CI)")
    return path
