"""``python -m gate.demo.pilot_refresh``: recompute the shipped entry of the pilot cache.

The entry is the pilot of the default demo world (seed 7, scale 1.0), stored in
:data:`gate.demo.pilot_cache.CACHE_FILE`; ``tests/demo/test_pilot_cache.py`` fails when an edit
to the retriever, the scoring or the world generator made it stale. The command builds that world
in a temporary folder with ``pilot_cache="refresh"``: it lives apart from
:mod:`gate.demo.pilot_cache` because the world reads the cache.
"""

from __future__ import annotations

import tempfile

from gate.demo.pilot_cache import CACHE_FILE
from gate.demo.world import build_world

__all__ = ["main"]


def main() -> int:
    """Recompute the shipped entry: the pilot of the default demo world (seed 7, scale 1.0)."""
    with tempfile.TemporaryDirectory() as tmp:
        build_world(tmp, seed=7, scale=1.0, pilot_cache="refresh")
    print(f"wrote {CACHE_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
