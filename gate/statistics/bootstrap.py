"""Paired bootstrap over aligned per-query differences.

Everything here starts from per-query arrays aligned on the same queries
(``d = candidate - baseline``), never from means.

Resampling contract (the report records ``samples`` and ``seed`` so a number can
be reproduced bit for bit):

* ``rng = numpy.random.default_rng(seed)``;
* resample indices are ``rng.integers(0, n, size=(samples, n))``;
* the statistic of a resample is the mean of the resampled differences.

The index matrix for 10,000 queries and 10,000 resamples would be 10**8 int64
values (800 MB), so indices are drawn in blocks of rows
(:func:`chunk_rows_for`).  ``Generator.integers`` consumes the bit stream row
by row, so successive ``size=(r_i, n)`` draws with ``sum(r_i) == samples`` are
exactly the rows of one ``size=(samples, n)`` draw: chunking changes memory,
never the numbers.

:func:`bootstrap_means` applies one set of resample indices to several
contrasts at once, so effects computed from the same queries (main effects,
interactions, strata) share their resamples.  :func:`paired_bootstrap` is the
single-contrast API built on it.

Speed without changing a number: the passes over the resamples
(:func:`bootstrap_means`, :func:`resampled_moments`) draw the same rows in smaller
blocks (:data:`FAST_BLOCK_INDICES`, so they stay in the CPU cache), gather them
with ``numpy.take`` into reused buffers and reduce each row with ``mean(axis=1)``
of a C-contiguous block, exactly as ``d[idx].mean(axis=1)`` does.  What a pass
computed is kept in :data:`SUMMARIES` (keyed by the bytes of ``d``, ``samples``
and ``seed``), so :func:`gate.statistics.evidence.evidence` right after
:func:`gate.statistics.paired.compare_paired` on the same differences does not
draw the same random numbers again.
"""

from __future__ import annotations

import operator
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import NamedTuple, TypeVar

import numpy as np

DEFAULT_SAMPLES = 10_000
DEFAULT_SEED = 7

#: Largest number of resample indices drawn (and gathered) at once.  A block of
#: this many int64 indices is 32 MB, and so is the gathered float64 block.
MAX_BLOCK_INDICES = 1_000_000

#: Interval methods accepted by ``method=`` (the CLI's ``--ci-method``).
CI_METHODS = ("percentile", "basic", "bca")

#: Two-sided 95% interval: the 2.5th and 97.5th percentiles.
LOWER_PCT = 2.5
UPPER_PCT = 97.5

_STD_NORMAL = NormalDist()


# --------------------------------------------------------------------------- #
# Validation helpers (shared by the other stats modules)
# --------------------------------------------------------------------------- #


def as_differences(d, name: str = "d") -> np.ndarray:
    """Return ``d`` as a 1-D float64 array, or raise ``ValueError``.

    Rejects empty input, more than one dimension and non-finite values (a NaN
    per-query score would silently poison every resample).
    """
    arr = np.asarray(d, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of per-query differences, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty: a paired comparison needs at least one query")
    if not np.all(np.isfinite(arr)):
        bad = int(np.count_nonzero(~np.isfinite(arr)))
        raise ValueError(f"{name} has {bad} non-finite value(s) (NaN or inf); per-query scores must be finite")
    return arr


def check_samples(samples) -> int:
    """Number of resamples as a positive ``int``."""
    try:
        value = operator.index(samples)
    except TypeError:
        raise ValueError(f"samples must be an integer, got {samples!r}") from None
    if value < 1:
        raise ValueError(f"samples must be at least 1, got {value}")
    return value


def check_seed(seed) -> int:
    """Seed as a non-negative ``int`` (it is recorded in the report)."""
    try:
        value = operator.index(seed)
    except TypeError:
        raise ValueError(f"seed must be an integer, got {seed!r}") from None
    if value < 0:
        raise ValueError(f"seed must be non-negative, got {value}")
    return value


def check_method(method: str) -> str:
    if method not in CI_METHODS:
        raise ValueError(f"unknown CI method {method!r}; expected one of {', '.join(CI_METHODS)}")
    return method


# --------------------------------------------------------------------------- #
# Chunked index draws
# --------------------------------------------------------------------------- #


def chunk_rows_for(n: int, max_indices: int = MAX_BLOCK_INDICES) -> int:
    """Rows per block so that one block holds at most ``max_indices`` indices.

    Always at least one row: with more than ``max_indices`` queries a block is a
    single resample of ``n`` indices, the smallest block there is.
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    return max(1, max_indices // n)


def resolve_chunk_rows(chunk_rows, n: int) -> int:
    if chunk_rows is None:
        return chunk_rows_for(n)
    try:
        value = operator.index(chunk_rows)
    except TypeError:
        raise ValueError(f"chunk_rows must be an integer or None, got {chunk_rows!r}") from None
    if value < 1:
        raise ValueError(f"chunk_rows must be at least 1, got {value}")
    return value


def integer_blocks(
    rng: np.random.Generator, high: int, rows: int, cols: int, chunk_rows: int
) -> Iterator[np.ndarray]:
    """Yield ``rng.integers(0, high, size=(r, cols))`` blocks whose rows add to ``rows``.

    Stacked, the blocks equal one ``rng.integers(0, high, size=(rows, cols))``
    draw from the same generator state.
    """
    done = 0
    while done < rows:
        r = min(chunk_rows, rows - done)
        yield rng.integers(0, high, size=(r, cols))
        done += r


def index_blocks(n: int, samples: int = DEFAULT_SAMPLES, seed: int = DEFAULT_SEED,
                 chunk_rows: int | None = None) -> Iterator[np.ndarray]:
    """The resample index blocks of the contract, in order.

    Each block has shape ``(r, n)`` with ``r <= chunk_rows`` (default
    :func:`chunk_rows_for`; the fast passes use smaller blocks of the same
    rows); ``numpy.vstack`` of all blocks equals
    ``default_rng(seed).integers(0, n, size=(samples, n))``.
    """
    samples = check_samples(samples)
    seed = check_seed(seed)
    rows = resolve_chunk_rows(chunk_rows, n)
    rng = np.random.default_rng(seed)
    return integer_blocks(rng, n, samples, n, rows)


# --------------------------------------------------------------------------- #
# Resampled means
# --------------------------------------------------------------------------- #


def bootstrap_means(contrasts, samples: int = DEFAULT_SAMPLES, seed: int = DEFAULT_SEED,
                    chunk_rows: int | None = None) -> np.ndarray:
    """Resampled means of every contrast row, all rows sharing the same resamples.

    ``contrasts`` is a 2-D array ``(m, n)``: ``m`` per-query contrasts (e.g.
    ``candidate - baseline``, or an interaction ``(a - b) - (c - d)``) over the
    same ``n`` queries.  Returns an ``(m, samples)`` float64 array whose entry
    ``[k, b]`` is ``contrasts[k, idx[b]].mean()`` where
    ``idx = default_rng(seed).integers(0, n, size=(samples, n))``.  The indices
    are drawn in blocks of ``chunk_rows`` resamples (default: a block small
    enough to stay in the CPU cache, :func:`fast_rows_for`); the result does not
    depend on the block size.
    """
    arr = np.asarray(contrasts, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(
            f"contrasts must be a 2-D array (m contrasts, n queries), got shape {arr.shape}; "
            "wrap a single contrast as d[None, :]"
        )
    m, n = arr.shape
    if m == 0:
        raise ValueError("contrasts has no rows: nothing to resample")
    if n == 0:
        raise ValueError("contrasts has no queries (n = 0): a paired comparison needs at least one query")
    if not np.all(np.isfinite(arr)):
        raise ValueError("contrasts has non-finite value(s) (NaN or inf); per-query scores must be finite")
    arr = np.ascontiguousarray(arr)
    samples = check_samples(samples)
    seed = check_seed(seed)
    rows = fast_rows_for(n, chunk_rows)

    out = np.empty((m, samples), dtype=np.float64)
    gathered = np.empty(min(rows, samples) * n, dtype=np.float64)
    start = 0
    for idx in integer_blocks(np.random.default_rng(seed), n, samples, n, rows):
        stop = start + idx.shape[0]
        x = gathered[: idx.size].reshape(idx.shape)
        for k in range(m):
            # One row at a time keeps the gathered block at r * n floats.  take(out=)
            # writes the very values arr[k][idx] would; "clip" only skips the bounds
            # check (every index is in [0, n)).
            np.take(arr[k], idx, out=x, mode="clip")
            out[k, start:stop] = x.mean(axis=1)
        start = stop
    return out


# --------------------------------------------------------------------------- #
# Fast passes over the resamples, shared between compare_paired and evidence
# --------------------------------------------------------------------------- #

#: Resample indices drawn, gathered and reduced at once by the fast passes: small
#: enough for the block, its gathered values and their powers to stay in the CPU
#: cache.  Rows are reduced one by one (``mean(axis=1)`` of a C-contiguous block),
#: so the block size never changes a number.
FAST_BLOCK_INDICES = 1 << 16

#: Below this many random draws the two streams of :func:`run_both` run one after
#: the other: a thread costs more than it saves.
PARALLEL_MIN_DRAWS = 1 << 21


def fast_rows_for(n: int, chunk_rows: int | None = None) -> int:
    """Rows per block of the fast passes: ``chunk_rows`` when given (validated as
    :func:`resolve_chunk_rows` does), else ``FAST_BLOCK_INDICES // n`` (at least one)."""
    if chunk_rows is not None:
        return resolve_chunk_rows(chunk_rows, n)
    return chunk_rows_for(n, FAST_BLOCK_INDICES)


def resampled_moments(d: np.ndarray, samples: int, seed: int, powers: int = 1,
                      chunk_rows: int | None = None) -> tuple[np.ndarray, ...]:
    """Per resample, the means of ``x``, ``x * x`` and ``(x * x) * x`` (the first ``powers``).

    ``x = d[idx]`` with ``idx`` the resample indices of the contract
    (``default_rng(seed).integers(0, n, size=(samples, n))``, drawn in row blocks).
    Each entry is bit for bit what ``x.mean(axis=1)``, ``(x * x).mean(axis=1)`` and
    ``(x * x * x).mean(axis=1)`` give: the same products of the same values, reduced
    row by row in the same order.  ``d`` must already be a validated 1-D float64 array.
    """
    if powers not in (1, 2, 3):
        raise ValueError(f"powers must be 1, 2 or 3, got {powers!r}")
    d = np.ascontiguousarray(d, dtype=np.float64)
    n = d.size
    rows = fast_rows_for(n, chunk_rows)
    out = tuple(np.empty(samples, dtype=np.float64) for _ in range(powers))
    size = min(rows, samples) * n
    gathered = np.empty(size, dtype=np.float64)
    product = np.empty(size, dtype=np.float64) if powers > 1 else None
    start = 0
    for idx in integer_blocks(np.random.default_rng(seed), n, samples, n, rows):
        stop = start + idx.shape[0]
        x = gathered[: idx.size].reshape(idx.shape)
        np.take(d, idx, out=x, mode="clip")
        del idx
        out[0][start:stop] = x.mean(axis=1)
        if product is not None:
            y = product[: x.size].reshape(x.shape)
            np.multiply(x, x, out=y)
            out[1][start:stop] = y.mean(axis=1)
            if powers > 2:
                np.multiply(y, x, out=y)  # (x * x) * x, as x * x * x evaluates
                out[2][start:stop] = y.mean(axis=1)
        start = stop
    for array in out:
        array.setflags(write=False)
    return out


class SummaryCache:
    """The last few per-resample summaries, keyed by the exact bytes of ``d``, ``samples`` and ``seed``.

    :func:`gate.statistics.paired.compare_paired` leaves here what it computed from the
    resamples (the resampled moments, the sign-flip sums) and
    :func:`gate.statistics.evidence.evidence`, called next on the same differences with
    the same ``samples`` and ``seed``, reads them instead of drawing the same random
    numbers a second time.  A value is a tuple of read-only arrays; ``accept(value)``
    says whether a cached value holds what the caller needs.  Thread-safe.
    """

    def __init__(self, entries: int = 8, max_bytes: int = 128 * 2**20) -> None:
        self._entries = entries
        self._max_bytes = max_bytes
        self._items: OrderedDict[tuple, tuple] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _key(kind: str, d: np.ndarray, samples: int, seed: int) -> tuple:
        return (kind, int(samples), int(seed), d.shape, np.ascontiguousarray(d, dtype=np.float64).tobytes())

    def get(self, kind: str, d: np.ndarray, samples: int, seed: int,
            accept: Callable[[tuple], bool] = lambda value: True):
        key = self._key(kind, d, samples, seed)
        with self._lock:
            value = self._items.get(key)
            if value is None or not accept(value):
                return None
            self._items.move_to_end(key)
            return value

    def put(self, kind: str, d: np.ndarray, samples: int, seed: int, value: tuple) -> None:
        size = sum(a.nbytes for a in value if isinstance(a, np.ndarray)) + d.nbytes
        if size > self._max_bytes // 2:
            return
        key = self._key(kind, d, samples, seed)
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            total = sum(sum(a.nbytes for a in v if isinstance(a, np.ndarray)) + len(k[-1])
                        for k, v in self._items.items())
            while len(self._items) > self._entries or (total > self._max_bytes and len(self._items) > 1):
                old_key, old_value = self._items.popitem(last=False)
                total -= sum(a.nbytes for a in old_value if isinstance(a, np.ndarray)) + len(old_key[-1])

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


#: The process-wide cache of resample summaries (see :class:`SummaryCache`).
SUMMARIES = SummaryCache()

_MOMENTS = "moments"


def bootstrap_moments(d: np.ndarray, samples: int, seed: int, powers: int = 1,
                      chunk_rows: int | None = None, *, keep: bool = False) -> tuple[np.ndarray, ...]:
    """:func:`resampled_moments`, read from :data:`SUMMARIES` when an earlier pass left them
    there; ``keep=True`` leaves this pass's result there for a later caller."""
    fast_rows_for(d.size, chunk_rows)  # a bad chunk_rows is an error even when cached
    cached = SUMMARIES.get(_MOMENTS, d, samples, seed, lambda value: len(value) >= powers)
    if cached is not None:
        return cached[:powers]
    value = resampled_moments(d, samples, seed, powers, chunk_rows)
    if keep:
        SUMMARIES.put(_MOMENTS, d, samples, seed, value)
    return value


_First = TypeVar("_First")
_Second = TypeVar("_Second")


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def run_both(first: Callable[[], _First], second: Callable[[], _Second],
             parallel: bool = True) -> tuple[_First, _Second]:
    """``(first(), second())``, with ``second`` in a helper thread while ``first`` runs here.

    The two draw from separate generators and write separate arrays, so running them at
    the same time changes no number; numpy releases the GIL while it draws, gathers and
    reduces, so two cores make it up to twice as fast.  Runs both here, one after the
    other, when ``parallel`` is false or only one CPU is available.  An exception of
    either is raised here (``first``'s when both fail), after both have finished.
    """
    if not parallel or _cpus() < 2:
        return first(), second()
    box: dict[str, object] = {}

    def work() -> None:
        try:
            box["value"] = second()
        except BaseException as exc:  # re-raised in the calling thread
            box["error"] = exc

    helper = threading.Thread(target=work, name="gate-stats-helper", daemon=True)
    helper.start()
    try:
        value = first()
    finally:
        helper.join()
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return value, box["value"]  # type: ignore[return-value]


# --------------------------------------------------------------------------- #
# Intervals
# --------------------------------------------------------------------------- #


def jackknife_acceleration(d: np.ndarray) -> float:
    """BCa acceleration from the jackknife of the mean.

    ``a = sum((m_dot - m_i)**3) / (6 * sum((m_dot - m_i)**2) ** 1.5)`` with
    ``m_i`` the mean leaving query ``i`` out and ``m_dot`` their mean.  Zero when
    it is undefined (fewer than two queries, or every leave-one-out mean equal).
    """
    n = d.size
    if n < 2:
        return 0.0
    loo = (d.sum() - d) / (n - 1)
    dev = loo.mean() - loo
    den = float(np.sum(dev**2))
    if den == 0.0:
        return 0.0
    return float(np.sum(dev * dev * dev) / (6.0 * den**1.5))  # not dev**3: numpy's power kernel is CPU-dependent


def _bca_levels(d: np.ndarray, means: np.ndarray, observed: float) -> tuple[float, float] | None:
    """Adjusted percentile levels (0-100) for BCa, or ``None`` when degenerate."""
    if means.min() == means.max():
        return None  # every resample agrees: there is no spread to adjust
    samples = means.size
    share = float(np.count_nonzero(means < observed)) / samples
    # Keep z0 finite when no (or every) resample falls below the observed mean;
    # with continuous data and thousands of resamples this never binds.
    half = 0.5 / samples
    share = min(max(share, half), 1.0 - half)
    z0 = _STD_NORMAL.inv_cdf(share)
    a = jackknife_acceleration(d)
    levels = []
    for pct in (LOWER_PCT, UPPER_PCT):
        z = _STD_NORMAL.inv_cdf(pct / 100.0)
        shifted = z0 + z
        levels.append(100.0 * _STD_NORMAL.cdf(z0 + shifted / (1.0 - a * shifted)))
    return levels[0], levels[1]


def confidence_interval(d, means, method: str = "percentile") -> tuple[float, float]:
    """Two-sided 95% interval for ``mean(d)`` from its resampled means.

    * ``percentile``: the 2.5th and 97.5th percentiles of ``means``
      (``numpy.percentile``, default linear interpolation);
    * ``basic``: ``(2*mean - q97.5, 2*mean - q2.5)``;
    * ``bca``: bias-corrected and accelerated.  ``z0 = Phi^-1(share of means <
      mean(d))``, acceleration from the jackknife of the mean
      (:func:`jackknife_acceleration`), levels
      ``Phi(z0 + (z0 + z_q) / (1 - a (z0 + z_q)))`` for ``z_q`` at 2.5% and 97.5%,
      then ``numpy.percentile`` at those levels.  When every resampled mean is
      equal the interval is that value; a share of exactly 0 or 1 is clamped to
      ``[0.5/B, 1 - 0.5/B]`` so ``z0`` stays finite.

    ``d`` is the contrast the means were resampled from (BCa needs it for the
    jackknife; the other methods only use its mean).
    """
    check_method(method)
    d = as_differences(d)
    means = np.asarray(means, dtype=np.float64)
    if means.ndim != 1 or means.size == 0:
        raise ValueError(f"means must be a non-empty 1-D array of resampled means, got shape {means.shape}")
    observed = d.mean()
    if method == "percentile":
        lo, hi = np.percentile(means, [LOWER_PCT, UPPER_PCT])
    elif method == "basic":
        q_lo, q_hi = np.percentile(means, [LOWER_PCT, UPPER_PCT])
        lo, hi = 2.0 * observed - q_hi, 2.0 * observed - q_lo
    else:
        levels = _bca_levels(d, means, float(observed))
        if levels is None:
            lo = hi = means[0]
        else:
            lo, hi = np.percentile(means, list(levels))
    return float(lo), float(hi)


# --------------------------------------------------------------------------- #
# Single-contrast API
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class BootstrapResult:
    """Mean difference, its 95% interval and the share of resampled means <= 0."""

    mean: float
    ci_low: float
    ci_high: float
    p_le_zero: float
    samples: int
    seed: int
    method: str


def bootstrap_result(d: np.ndarray, means: np.ndarray, samples: int, seed: int, method: str) -> BootstrapResult:
    """The :class:`BootstrapResult` of validated differences ``d`` and their resampled ``means``."""
    lo, hi = confidence_interval(d, means, method)
    return BootstrapResult(
        mean=float(d.mean()),
        ci_low=lo,
        ci_high=hi,
        p_le_zero=float((means <= 0).mean()),
        samples=samples,
        seed=seed,
        method=method,
    )


def paired_bootstrap(d, samples: int = DEFAULT_SAMPLES, seed: int = DEFAULT_SEED,
                     method: str = "percentile", chunk_rows: int | None = None) -> BootstrapResult:
    """Paired bootstrap of ``mean(d)``, ``d = candidate - baseline`` per query.

    ``p_le_zero`` is the share of resampled means that are ``<= 0``.  Raises
    ``ValueError`` on empty or non-finite input.  See the module docstring for
    the resampling contract and :func:`confidence_interval` for the methods.
    """
    check_method(method)
    d = as_differences(d)
    samples = check_samples(samples)
    seed = check_seed(seed)
    means = bootstrap_moments(d, samples, seed, 1, chunk_rows)[0]
    return bootstrap_result(d, means, samples, seed, method)


# --------------------------------------------------------------------------- #
# Stratified bootstrap with fixed weights
# --------------------------------------------------------------------------- #


class StratifiedEstimate(NamedTuple):
    estimate: float
    ci_low: float
    ci_high: float


def stratified_bootstrap_weighted(
    d,
    strata_labels: Sequence[Hashable],
    weights: Mapping[Hashable, float],
    samples: int = DEFAULT_SAMPLES,
    seed: int = DEFAULT_SEED,
    chunk_rows: int | None = None,
) -> StratifiedEstimate:
    """Weighted mean of per-stratum mean differences, with a percentile 95% interval.

    ``d[i]`` belongs to stratum ``strata_labels[i]``; ``weights`` maps each
    stratum to its fixed share (e.g. of traffic).  The estimate is
    ``sum_s w_s * mean(d_s) / sum_s w_s`` over the *measured* strata (those with at
    least one query): weights of strata with no queries are dropped and the rest
    renormalised, so the estimate speaks for the measured part of the
    population only.  Weights are fixed; only queries are resampled, each
    stratum within itself (its own size kept), so the interval reflects
    within-stratum sampling noise.

    Reproducibility: one ``default_rng(seed)``; strata are resampled in the
    order of ``weights``' keys, each with ``integers(0, n_s, size=(samples,
    n_s))`` drawn in row blocks (chunk-size independent, as in
    :func:`bootstrap_means`).

    Raises ``ValueError`` for empty input, a label with no weight, negative or
    non-finite weights, or measured strata whose weights sum to zero.
    """
    d = as_differences(d)
    samples = check_samples(samples)
    seed = check_seed(seed)
    labels = list(strata_labels)
    if len(labels) != d.size:
        raise ValueError(f"strata_labels has {len(labels)} entries but d has {d.size}")
    missing = {lab for lab in labels if lab not in weights}
    if missing:
        shown = ", ".join(sorted(map(repr, missing))[:5])
        raise ValueError(f"no weight for stratum label(s): {shown}")
    for lab, w in weights.items():
        if not np.isfinite(w) or w < 0:
            raise ValueError(f"weight for stratum {lab!r} must be finite and >= 0, got {w!r}")

    by_stratum: dict[Hashable, list[int]] = {}
    for i, lab in enumerate(labels):
        by_stratum.setdefault(lab, []).append(i)
    measured = [lab for lab in weights if lab in by_stratum]
    total = float(sum(weights[lab] for lab in measured))
    if total <= 0.0:
        raise ValueError("the measured strata have zero total weight")

    rng = np.random.default_rng(seed)
    estimate = 0.0
    resampled = np.zeros(samples, dtype=np.float64)
    for lab in measured:
        w = float(weights[lab]) / total
        part = d[np.asarray(by_stratum[lab])]
        n_s = part.size
        estimate += w * float(part.mean())
        start = 0
        rows = resolve_chunk_rows(chunk_rows, n_s)
        for idx in integer_blocks(rng, n_s, samples, n_s, rows):
            stop = start + idx.shape[0]
            resampled[start:stop] += w * part[idx].mean(axis=1)
            start = stop
    lo, hi = np.percentile(resampled, [LOWER_PCT, UPPER_PCT])
    return StratifiedEstimate(float(estimate), float(lo), float(hi))
