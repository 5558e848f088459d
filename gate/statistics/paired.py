"""One paired comparison of two runs over the same queries.

:func:`compare_paired` puts together everything the report says about
``candidate - baseline``: the bootstrap interval, the sign-flip randomization
p-value, win/loss/tie counts and the minimum detectable effect.  Bootstrap and
randomization use the same ``samples`` and ``seed`` (each from its own
``default_rng(seed)``), and both are recorded.

The two random streams are consumed side by side (two threads; numpy releases the
GIL while it draws and reduces) and what :func:`gate.statistics.evidence.evidence`
needs of them is kept for it (:data:`gate.statistics.bootstrap.SUMMARIES`); the
numbers are those of :func:`gate.statistics.bootstrap.paired_bootstrap` and
:func:`gate.statistics.randomization.sign_flip_p`, bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .bootstrap import (
    DEFAULT_SAMPLES,
    DEFAULT_SEED,
    PARALLEL_MIN_DRAWS,
    as_differences,
    bootstrap_moments,
    bootstrap_result,
    check_method,
    check_samples,
    check_seed,
    run_both,
)
from .power import difference_sd, minimum_detectable_effect
from .randomization import EXACT_MAX_N, TOLERANCE, monte_carlo_p, sign_flip_p, sign_sums


class WinsLossesTies(NamedTuple):
    wins: int
    losses: int
    ties: int


def wins_losses_ties(d) -> WinsLossesTies:
    """Queries where the candidate is better (``d > 0``), worse (``d < 0``) or equal (``d == 0``)."""
    d = as_differences(d)
    return WinsLossesTies(
        wins=int(np.count_nonzero(d > 0)),
        losses=int(np.count_nonzero(d < 0)),
        ties=int(np.count_nonzero(d == 0)),
    )


@dataclass(frozen=True)
class PairedComparison:
    """``candidate - baseline`` over ``n`` aligned queries.

    ``mean``/``ci_low``/``ci_high``/``p_le_zero`` come from the paired bootstrap
    (``method`` names the interval), ``p_randomization`` from the two-sided
    sign-flip test (``randomization`` is ``"exact"`` or ``"monte-carlo"``),
    ``mde`` is the normal-approximation minimum detectable effect (``inf`` for
    one query) and ``sd`` the sample sd of the differences (0.0 for one query).
    No field is ever NaN.
    """

    n: int
    mean: float
    ci_low: float
    ci_high: float
    p_le_zero: float
    samples: int
    seed: int
    method: str
    wins: int
    losses: int
    ties: int
    p_randomization: float
    randomization: str
    mde: float
    sd: float


def paired_differences(baseline, candidate) -> np.ndarray:
    """``candidate - baseline`` as float64, after checking the two are aligned and usable."""
    base = np.asarray(baseline, dtype=np.float64)
    cand = np.asarray(candidate, dtype=np.float64)
    if base.ndim != 1 or cand.ndim != 1:
        raise ValueError(
            f"baseline and candidate must be 1-D per-query arrays, got shapes {base.shape} and {cand.shape}"
        )
    if base.shape != cand.shape:
        raise ValueError(
            f"baseline has {base.size} queries but candidate has {cand.size}; "
            "a paired comparison needs both runs scored on the same queries"
        )
    if base.size == 0:
        raise ValueError("baseline and candidate are empty: a paired comparison needs at least one query")
    as_differences(base, "baseline")
    as_differences(cand, "candidate")
    return as_differences(cand - base, "candidate - baseline")


def compare_paired(baseline, candidate, *, samples: int = DEFAULT_SAMPLES, seed: int = DEFAULT_SEED,
                   method: str = "percentile") -> PairedComparison:
    """Compare two runs scored on the same queries (arrays aligned query by query).

    Raises ``ValueError`` for empty, misaligned or non-finite input, an unknown
    ``method`` (``percentile``, ``basic``, ``bca``), or bad ``samples``/``seed``.
    """
    check_method(method)
    samples = check_samples(samples)
    seed = check_seed(seed)
    d = paired_differences(baseline, candidate)
    n = d.size
    # The same numbers as paired_bootstrap(d, samples, seed, method) and
    # sign_flip_p(d, samples, seed), from one pass over each random stream, the two
    # side by side.  The passes also keep what evidence() needs of the same streams
    # (the resampled second and third moments, how many signs each vector keeps), so
    # evidence(d, margin, samples, seed, alpha=...) right after does not draw them again.
    hall_moments = 3 if n >= 2 and float(np.std(d, ddof=1)) != 0.0 else 1
    monte_carlo = n > EXACT_MAX_N
    moments, sums = run_both(
        lambda: bootstrap_moments(d, samples, seed, hall_moments, keep=True),
        lambda: sign_sums(d, samples, seed, counts=True, keep=True) if monte_carlo else None,
        parallel=monte_carlo and n * samples >= PARALLEL_MIN_DRAWS,
    )
    boot = bootstrap_result(d, moments[0], samples, seed, method)
    if sums is None:
        p_rand, kind = sign_flip_p(d, samples, seed)
    else:
        threshold = abs(float(d.mean())) - TOLERANCE
        p_rand, kind = monte_carlo_p(sums[0], n, threshold, samples), "monte-carlo"
    wlt = wins_losses_ties(d)
    return PairedComparison(
        n=int(d.size),
        mean=boot.mean,
        ci_low=boot.ci_low,
        ci_high=boot.ci_high,
        p_le_zero=boot.p_le_zero,
        samples=boot.samples,
        seed=boot.seed,
        method=boot.method,
        wins=wlt.wins,
        losses=wlt.losses,
        ties=wlt.ties,
        p_randomization=float(p_rand),
        randomization=kind,
        mde=minimum_detectable_effect(d),
        sd=difference_sd(d),
    )
