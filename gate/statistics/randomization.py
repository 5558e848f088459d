"""Two-sided paired sign-flip randomization test for ``mean(d) != 0``.

Under the null hypothesis that baseline and candidate are exchangeable on every
query, each per-query difference is as likely to have the opposite sign.  The
p-value is the share of sign assignments whose mean is at least as far from
zero as the observed one (``|mean| >= |observed| - 1e-12``; the tolerance keeps
the observed assignment itself, and its exact mirror image, counted despite
rounding).

* ``n <= 16``: exact, over all ``2**n`` sign vectors (the identity included),
  ``p = count / 2**n``.
* otherwise Monte Carlo: ``samples`` random sign vectors from
  ``numpy.random.default_rng(seed)`` (``integers(0, 2, size=(samples, n))``,
  1 keeps the sign, 0 flips it), ``p = (1 + count) / (samples + 1)``.  Drawn in
  row blocks like the bootstrap; the block size never changes the result.
"""

from __future__ import annotations

import numpy as np

from .bootstrap import (
    DEFAULT_SAMPLES,
    DEFAULT_SEED,
    resolve_chunk_rows,
    as_differences,
    check_samples,
    check_seed,
    integer_blocks,
)

#: Largest n for which every sign vector is enumerated (2**16 = 65,536 rows).
EXACT_MAX_N = 16

#: Absolute tolerance when comparing a resampled |mean| with the observed one.
TOLERANCE = 1e-12

EXACT = "exact"
MONTE_CARLO = "monte-carlo"


def _count_extreme(d: np.ndarray, keep: np.ndarray, threshold: float) -> int:
    """Rows of ``keep`` (1 = keep sign, 0 = flip) whose |mean| reaches ``threshold``."""
    flipped = np.where(keep.astype(bool), d, -d)
    return int(np.count_nonzero(np.abs(flipped.mean(axis=1)) >= threshold))


def sign_flip_p(d, samples: int = DEFAULT_SAMPLES, seed: int = DEFAULT_SEED, *,
                exact_max_n: int = EXACT_MAX_N, chunk_rows: int | None = None) -> tuple[float, str]:
    """Two-sided sign-flip p-value for ``mean(d)``; returns ``(p, kind)``.

    ``kind`` is ``"exact"`` when ``n <= exact_max_n`` (default 16) and
    ``"monte-carlo"`` otherwise; ``samples`` and ``seed`` only matter for the
    latter.  ``exact_max_n`` lets a caller force Monte Carlo (``0``); raising it
    above 16 costs ``2**n`` evaluated sign vectors.  All-zero ``d`` gives
    ``p = 1``.  Raises ``ValueError`` on empty or non-finite input.
    """
    d = as_differences(d)
    samples = check_samples(samples)
    seed = check_seed(seed)
    n = d.size
    threshold = abs(float(d.mean())) - TOLERANCE

    if n <= exact_max_n:
        total = 1 << n
        codes = np.arange(total, dtype=np.int64)
        count = 0
        # Bit j of a code says whether query j keeps its sign; code 2**n - 1 is
        # the identity.  Blocks keep memory bounded if exact_max_n is raised.
        rows = resolve_chunk_rows(chunk_rows, n)
        for start in range(0, total, rows):
            block = codes[start:start + rows, None]
            keep = (block >> np.arange(n, dtype=np.int64)) & 1
            count += _count_extreme(d, keep, threshold)
        return count / total, EXACT

    rng = np.random.default_rng(seed)
    rows = resolve_chunk_rows(chunk_rows, n)
    count = 0
    for keep in integer_blocks(rng, 2, samples, n, rows):
        count += _count_extreme(d, keep, threshold)
    return (1 + count) / (samples + 1), MONTE_CARLO
