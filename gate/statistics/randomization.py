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
    SUMMARIES,
    as_differences,
    check_samples,
    check_seed,
    fast_rows_for,
    integer_blocks,
    resolve_chunk_rows,
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


#: ``keep << 63`` puts a kept sign's 1 on the float64 sign bit.
_SIGN_SHIFT = np.uint64(63)
_SIGN_SUMS = "sign-sums"


def sign_flip_sums(d: np.ndarray, samples: int, seed: int, counts: bool = False,
                   chunk_rows: int | None = None) -> tuple[np.ndarray, ...]:
    """The Monte Carlo sign vectors' flipped sums, and optionally how many signs each keeps.

    Row ``b`` of ``keep = default_rng(seed).integers(0, 2, size=(samples, n))`` (drawn in
    row blocks) gives ``sums[b]``, bit for bit ``np.add.reduce(where(keep[b], d, -d))``:
    the numerator of the flipped mean :func:`sign_flip_p` compares (``mean = sum / n``);
    with ``counts``, also ``kept[b] = keep[b].sum()`` (an int64 array).  Returns
    ``(sums,)`` or ``(sums, kept)``, read-only.

    The flipped values are made without a select: ``-d`` with its sign bit XOR-ed by the
    kept bit (``keep << 63``) is ``d`` where the sign is kept and ``-d`` where it is
    flipped, the very values ``where`` picks; the block is then reduced row by row as
    ``mean(axis=1)`` does.  ``d`` must be a validated 1-D float64 array.
    """
    d = np.ascontiguousarray(d, dtype=np.float64)
    n = d.size
    rows = fast_rows_for(n, chunk_rows)
    negated = np.negative(d).view(np.uint64)
    sums = np.empty(samples, dtype=np.float64)
    kept = np.empty(samples, dtype=np.int64) if counts else None
    start = 0
    for keep in integer_blocks(np.random.default_rng(seed), 2, samples, n, rows):
        stop = start + keep.shape[0]
        if kept is not None:
            kept[start:stop] = keep.sum(axis=1)
        bits = keep.view(np.uint64)  # int64 0/1 -> the same bits as uint64
        np.left_shift(bits, _SIGN_SHIFT, out=bits)
        np.bitwise_xor(bits, negated, out=bits)
        sums[start:stop] = np.add.reduce(bits.view(np.float64), axis=1)
        start = stop
    out = (sums,) if kept is None else (sums, kept)
    for array in out:
        array.setflags(write=False)
    return out


def sign_sums(d: np.ndarray, samples: int, seed: int, counts: bool = False,
              chunk_rows: int | None = None, *, keep: bool = False) -> tuple[np.ndarray, ...]:
    """:func:`sign_flip_sums`, read from :data:`gate.statistics.bootstrap.SUMMARIES` when an
    earlier pass left them there; ``keep=True`` leaves this pass's result there."""
    fast_rows_for(d.size, chunk_rows)  # a bad chunk_rows is an error even when cached
    cached = SUMMARIES.get(_SIGN_SUMS, d, samples, seed, lambda value: len(value) >= (2 if counts else 1))
    if cached is not None:
        return cached if counts else cached[:1]
    value = sign_flip_sums(d, samples, seed, counts, chunk_rows)
    if keep:
        SUMMARIES.put(_SIGN_SUMS, d, samples, seed, value)
    return value


def count_extreme_sums(sums: np.ndarray, n: int, threshold: float) -> int:
    """Sign vectors whose flipped mean ``sums / n`` reaches ``threshold`` in absolute value."""
    return int(np.count_nonzero(np.abs(sums / n) >= threshold))


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

    (sums,) = sign_sums(d, samples, seed, chunk_rows=chunk_rows)
    return monte_carlo_p(sums, n, threshold, samples), MONTE_CARLO


def monte_carlo_p(sums: np.ndarray, n: int, threshold: float, samples: int) -> float:
    """``(1 + count) / (samples + 1)`` over the flipped sums of :func:`sign_flip_sums`."""
    return (1 + count_extreme_sums(sums, n, threshold)) / (samples + 1)
