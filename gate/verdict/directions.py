"""A stratum's direction: improved, damaged, untouched or unclear, from its statistics.

The statistics stage (:func:`gate.statistics.strata.stratum_table`) computes each stratum's
bounded-mean interval and its Holm-adjusted p at the level it is given; which of the four a
stratum is, and at what level, is policy and lives here. The rules, and why the bounded-mean
test decides them, are in :mod:`gate.statistics.strata`'s docstring.
"""

from __future__ import annotations

from dataclasses import dataclass

from gate.statistics.strata import DAMAGED, DEFAULT_MARGIN, IMPROVED, NOT_MEASURED, UNCLEAR, UNTOUCHED
from gate.verdict.levels import STRATA_ALPHA, STRATUM_MIN_QUERIES


def decide_direction(n: int, delta: float, low: float, high: float, p_holm: float | None,
                     threshold: float | None = None, alpha: float = STRATA_ALPHA,
                     margin: float = DEFAULT_MARGIN, p_alone: float | None = None) -> tuple[str, str]:
    """``(direction, decided_by)`` for one stratum.

    ``low``/``high``: the bounded-mean interval; ``p_holm``: its two-sided p, Holm-adjusted
    across the measured strata; ``threshold``: the stratum's noise band (None: none);
    ``margin``: the equivalence margin of ``untouched`` (``policy.max_regression``);
    ``p_alone``: the same p unadjusted (only to say why a stratum is unclear).
    """
    if n == 0:
        return NOT_MEASURED, "none"
    shown = p_holm is not None and p_holm < alpha and delta != 0
    within_band = threshold is not None and not abs(delta) > threshold
    if shown and not within_band:
        return (IMPROVED if delta > 0 else DAMAGED), "bounded-mean test"
    if -margin <= low and high <= margin:
        return UNTOUCHED, "equivalence"
    if threshold is not None and -threshold <= low and high <= threshold:
        # Shown to stay within what the stack moves on its own, by an interval narrow enough.
        return UNTOUCHED, "noise band"
    if shown:  # a change is shown, but not one beyond the noise band
        return UNCLEAR, "noise band"
    if p_alone is not None and p_alone < alpha and delta != 0:
        return UNCLEAR, "Holm-adjusted bounded-mean test"
    return UNCLEAR, "neither shown"


@dataclass(frozen=True)
class StrataDirections:
    """The strata table's policy (a :class:`gate.statistics.strata.DirectionRule`): the
    family-wise level of its directions, the fewest queries before a stratum is flagged
    underpowered, and the rule itself."""

    alpha: float = STRATA_ALPHA
    min_n: int = STRATUM_MIN_QUERIES

    def direction(self, n: int, delta: float, low: float, high: float, p_holm: float | None,
                  threshold: float | None, margin: float, p_alone: float | None = None) -> tuple[str, str]:
        return decide_direction(n, delta, low, high, p_holm, threshold, self.alpha, margin, p_alone)


#: The table's directions at one look (a verdict that may take two looks halves ``alpha``).
STRATA_DIRECTIONS = StrataDirections()
