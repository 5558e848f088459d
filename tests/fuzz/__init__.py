"""Property-based fuzz tests of every reader and the config loader.

The hypothesis profiles live here so the whole fuzz suite is deterministic in
CI (``derandomize=True``, no example database) and bounded in time:

* ``retrieval-gate-ci`` (default): small example counts, the suite runs in
  well under a minute;
* ``retrieval-gate-long``: ``RETRIEVAL_GATE_FUZZ=long`` raises the example
  counts twentyfold for a deeper local run, and shrinks failures (still
  derandomized, so a failure found there is reproducible);
* ``retrieval-gate-shrink``: ``RETRIEVAL_GATE_FUZZ=shrink``, the CI counts
  but with shrinking, to get a minimal falsifying example of a CI failure.

CI does not shrink (a failing example that hangs would cost the full alarm
on every shrink step); it stops at the first failing example of a test.

The profiles are applied per test with :data:`FUZZ` (``@FUZZ``) rather than
``settings.load_profile``: loading a profile is global and would change the
settings of the other hypothesis tests in the session (tests/statistics).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

_COMMON = dict(
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                           HealthCheck.function_scoped_fixture, HealthCheck.large_base_example],
)

#: Examples per property in CI; ``scaled(n)`` multiplies a property's own count.
CI_EXAMPLES = 40
LONG_FACTOR = 20

# CI does not shrink: a failing example that hangs costs the full alarm per
# shrink step, and a bounded suite matters more there than a minimal example.
# The failure is still deterministic and printed (with a reproduce blob).
_NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate, Phase.target)
settings.register_profile("retrieval-gate-ci", max_examples=CI_EXAMPLES, derandomize=True, phases=_NO_SHRINK,
                          report_multiple_bugs=False, **_COMMON)
settings.register_profile("retrieval-gate-shrink", max_examples=CI_EXAMPLES, derandomize=True, **_COMMON)
settings.register_profile("retrieval-gate-long", max_examples=CI_EXAMPLES * LONG_FACTOR, derandomize=True, **_COMMON)

MODE = os.environ.get("RETRIEVAL_GATE_FUZZ", "ci").strip().lower()
LONG = MODE == "long"

PROFILE = settings.get_profile({"long": "retrieval-gate-long", "shrink": "retrieval-gate-shrink"}.get(
    MODE, "retrieval-gate-ci"))


def fuzz_settings(examples: int | None = None) -> settings:
    """The active profile, with ``examples`` (CI count) scaled up in long mode."""
    if examples is None:
        return settings(PROFILE)
    return settings(PROFILE, max_examples=examples * (LONG_FACTOR if LONG else 1))


FUZZ = fuzz_settings()
