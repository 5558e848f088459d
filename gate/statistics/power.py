"""How small a mean difference this query set could have detected.

The minimum detectable effect uses the normal approximation to the sampling
distribution of a paired mean:

    MDE = (z_{1 - alpha/2} + z_{power}) * sd(d, ddof=1) / sqrt(n)

With the defaults (two-sided alpha 0.05, power 0.8) the multiplier is
``1.95996 + 0.84162 = 2.80158``.  It is an approximation: it ignores the
uncertainty in the estimated sd (a t-based figure would be a little larger on
small query sets) and assumes the mean difference is roughly normal.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from .bootstrap import as_differences

_STD_NORMAL = NormalDist()


def difference_sd(d) -> float:
    """Sample standard deviation of ``d`` (``ddof=1``); 0.0 when ``n < 2``.

    One query carries no information about spread; rather than NaN, the report
    shows 0.0 here and ``inf`` for the minimum detectable effect.
    """
    d = as_differences(d)
    if d.size < 2:
        return 0.0
    return float(np.std(d, ddof=1))


def minimum_detectable_effect(d, alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest true mean difference detected with probability ``power`` (normal approximation).

    ``(z_{1-alpha/2} + z_power) * sd(d, ddof=1) / sqrt(n)`` with quantiles from
    :class:`statistics.NormalDist`.  Returns ``inf`` - not estimable - when
    ``n < 2`` or when every difference is equal (no query moved, or all by the
    same amount: no spread is seen, so no effect size can be promised; 0.000
    would claim that any change is detectable).  Never NaN.  Raises ``ValueError`` on empty input or
    ``alpha``/``power`` outside ``(0, 1)``.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if not 0.0 < power < 1.0:
        raise ValueError(f"power must be in (0, 1), got {power!r}")
    d = as_differences(d)
    n = d.size
    if n < 2:
        return math.inf
    multiplier = _STD_NORMAL.inv_cdf(1.0 - alpha / 2.0) + _STD_NORMAL.inv_cdf(power)
    sd = difference_sd(d)
    if sd <= 1e-12:  # all equal (up to rounding: np.full(10, 0.3) has sd 5.9e-17)
        return math.inf
    return float(multiplier * sd / math.sqrt(n))
