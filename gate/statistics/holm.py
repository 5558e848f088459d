"""Holm's step-down adjustment for several p-values tested together."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm-adjusted p-values, in the input order.

    Sort ascending, multiply the ``i``-th smallest (0-based) by ``m - i``, take
    the running maximum (so adjusted values never decrease along the sorted
    order) and cap at 1.  Reject hypothesis ``k`` at level ``alpha`` iff
    ``adjusted[k] <= alpha``, which is Holm's procedure.  Tied p-values get the
    same adjusted value whichever order they are sorted in.

    An empty input gives an empty array.  Raises ``ValueError`` for values
    outside ``[0, 1]``, NaN, or more than one dimension.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"pvalues must be a 1-D sequence, got shape {p.shape}")
    if np.any(np.isnan(p)) or np.any((p < 0.0) | (p > 1.0)):
        raise ValueError("pvalues must all be in [0, 1] (no NaN)")
    m = p.size
    if m == 0:
        return p.copy()
    order = np.argsort(p, kind="stable")
    scaled = p[order] * np.arange(m, 0, -1, dtype=np.float64)
    stepped = np.minimum(np.maximum.accumulate(scaled), 1.0)
    adjusted = np.empty(m, dtype=np.float64)
    adjusted[order] = stepped
    return adjusted
