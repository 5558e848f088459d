"""Floating-point results that are the same on every x86-64 (and every other) CPU.

Where a result is computed decides whether it depends on the machine:

* **BLAS and LAPACK** (``a @ b`` on float arrays, ``np.linalg``, ``scipy.linalg``) pick a kernel by
  the CPU (OpenBLAS's Haswell and SkylakeX kernels sum in different orders) and by the thread
  count: ``a.T @ a`` differs in the last bits between an AVX-512 and an AVX2 machine.
* **numpy's transcendental functions** (``np.log``, ``np.log2``, ``np.exp``, ...) run an AVX-512
  implementation where the CPU has it and another elsewhere; they differ by an ulp.
* **faiss** distances dispatch by SIMD level the same way (see :mod:`gate.runs.reference`).

An ulp is enough to reorder two near-tied documents, rebuild an HNSW graph differently and move
a demo's nDCG@10 in the third decimal. What does *not* depend on the CPU: IEEE's correctly
rounded elementwise ``+ - * / sqrt``, numpy's reductions (a fixed summation order), integer
arithmetic, scipy's sparse products (plain loops), :mod:`decimal`.

So this module offers the few dense operations the reference retriever and the measures need,
built from those alone:

* :func:`grid_product` -- ``a @ b`` through BLAS, on inputs rounded to a grid coarse enough that
  every product and every partial sum is an exact float64: any kernel, any summation order,
  any thread count gives the same bits (the rounding is the price: ``bits`` binary digits below
  each row's and column's largest entry, 18 or more for inner dimensions up to 2^17).
* :func:`upper_cholesky`, :func:`upper_inverse`, :func:`symmetric_eigen` -- small dense
  factorizations (a few hundred rows) in numpy's elementwise operations and fixed-order
  reductions, instead of LAPACK.
* :func:`log` and :func:`log2_of_integers` -- logarithms computed with :mod:`decimal` and
  rounded once to float64.
"""

from __future__ import annotations

import math
import threading
from decimal import Context, Decimal
from functools import lru_cache

import numpy as np

__all__ = ["grid_product", "grid_bits", "upper_cholesky", "upper_inverse", "symmetric_eigen", "log",
           "log2_of_integers", "power", "NotPositiveDefinite"]

_DECIMAL = Context(prec=40)
_MANTISSA = 53  # float64


class NotPositiveDefinite(ArithmeticError):
    """:func:`upper_cholesky` met a pivot that is not positive."""


def grid_bits(inner: int) -> int:
    """Binary digits kept per entry so that an inner product of length ``inner`` is exact in float64.

    Entries become integers of at most ``bits`` digits (times a power of two): a product has at
    most ``2 * bits`` digits and the sum of ``inner`` of them at most ``2 * bits + ceil(log2(inner))``,
    which must fit float64's 53.
    """
    return max(1, (_MANTISSA - max(1, math.ceil(math.log2(max(inner, 2))))) // 2)


def _on_grid(x: np.ndarray, axis: int, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """``x`` as integers (in float64) times ``2**shift`` per row (``axis=1``) or column (``axis=0``)."""
    largest = np.max(np.abs(x), axis=axis, keepdims=True)
    _, exponent = np.frexp(largest)  # largest < 2**exponent
    shift = exponent.astype(np.int64) - bits
    shift[largest == 0] = 0
    if shift.size and -1000 < shift.min() and shift.max() < 1000:
        return np.rint(x * np.ldexp(1.0, -shift)), shift  # a normal power of two: the product is exact (and fast)
    return np.rint(np.ldexp(x, -shift)), shift  # extreme magnitudes: ldexp is exact where 2**-shift overflows


def grid_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` (2-D float arrays) in float64, the same bits on every CPU and thread count.

    Each row of ``a`` and each column of ``b`` is rounded to :func:`grid_bits` binary digits below
    its largest entry; the product of the rounded matrices is then exact in float64 whatever
    order BLAS sums it in, and is scaled back exactly (powers of two).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"grid_product: shapes {a.shape} and {b.shape} do not multiply")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("grid_product: the inputs must be finite")
    if a.shape[1] == 0 or a.shape[0] == 0 or b.shape[1] == 0:
        return np.zeros((a.shape[0], b.shape[1]))
    bits = grid_bits(a.shape[1])
    a_int, a_shift = _on_grid(a, 1, bits)  # (m, 1) shifts
    b_int, b_shift = _on_grid(b, 0, bits)  # (1, n) shifts
    exact = a_int @ b_int  # integers below 2**53: every kernel gets the same sums
    return np.ldexp(exact, a_shift + b_shift)  # one exact scaling (two could overflow half-way)


def _dot_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Column-wise ``sum(x * y, axis=0)`` in numpy's fixed order (never BLAS)."""
    return np.add.reduce(x * y, axis=0)


def upper_cholesky(g: np.ndarray) -> np.ndarray:
    """Upper triangular ``r`` with ``r.T @ r == g`` (symmetric positive definite ``g``, a few hundred rows).

    Raises :class:`NotPositiveDefinite` on a pivot that is not positive.
    """
    g = np.asarray(g, dtype=np.float64)
    n = g.shape[0]
    r = np.zeros_like(g)
    for j in range(n):
        pivot = g[j, j] - _dot_rows(r[:j, j], r[:j, j])
        if not pivot > 0:
            raise NotPositiveDefinite(f"pivot {j} is {pivot!r}")
        r[j, j] = math.sqrt(pivot)
        if j + 1 < n:
            r[j, j + 1:] = (g[j, j + 1:] - _dot_rows(r[:j, j, None], r[:j, j + 1:])) / r[j, j]
    return r


def upper_inverse(r: np.ndarray) -> np.ndarray:
    """The inverse of an upper triangular ``r`` with a non-zero diagonal, by back substitution."""
    r = np.asarray(r, dtype=np.float64)
    n = r.shape[0]
    x = np.zeros_like(r)
    for i in range(n - 1, -1, -1):
        row = np.zeros(n)
        row[i] = 1.0
        if i + 1 < n:
            row = row - _dot_rows(r[i, i + 1:, None], x[i + 1:, :])
        x[i, :] = row / r[i, i]
    return x


def symmetric_eigen(a: np.ndarray, max_sweeps: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (descending) and unit eigenvectors (columns) of a small symmetric matrix.

    Cyclic Jacobi rotations in round-robin order: each round rotates ``n/2`` disjoint index pairs
    at once, ``n - 1`` rounds a sweep, until the off-diagonal part is below ``1e-13`` of the
    matrix (float64's resolution of a few hundred rows). A round is whole-matrix arithmetic: a
    column ``j`` becomes ``c_j * col_j + s_j * col_partner(j)`` (rows likewise). Ties between
    eigenvalues keep the lower index first.
    """
    a = np.array(a, dtype=np.float64)
    n = a.shape[0]
    vectors = np.eye(n)
    if n < 2:
        return np.diag(a).copy(), vectors
    if not np.all(np.isfinite(a)):
        raise ValueError("symmetric_eigen: the matrix must be finite")
    # Scaled by a power of two (exact) so that its largest entry is about 1: the sums of squares
    # below neither overflow nor underflow; the eigenvalues are scaled back at the end.
    largest = float(np.max(np.abs(a)))
    if largest == 0.0:
        return np.zeros(n), vectors
    power = math.frexp(largest)[1]
    a = np.ldexp(a, -power)
    players = list(range(n + (n % 2)))  # an odd n gets a bye (index n) each round
    m = len(players)
    scale = math.sqrt(float(np.add.reduce((a * a).ravel())))
    converged = False
    columns = np.arange(n)
    for _ in range(max_sweeps):
        off = a - np.diag(np.diag(a))
        if math.sqrt(float(np.add.reduce((off * off).ravel()))) <= 1e-13 * scale:
            converged = True
            break
        for _ in range(m - 1):
            partner = columns.copy()
            for i in range(m // 2):
                x, y = players[i], players[m - 1 - i]
                if x < n and y < n:
                    partner[x], partner[y] = y, x
            p = np.flatnonzero(partner > columns)  # the lower index of each pair
            q = partner[p]
            apq = a[p, q]
            active = apq != 0
            theta = np.where(active, (a[q, q] - a[p, p]) / np.where(active, 2.0 * apq, 1.0), 0.0)
            sign = np.where(theta >= 0, 1.0, -1.0)
            t = np.where(active, sign / (np.abs(theta) + np.sqrt(theta * theta + 1.0)), 0.0)
            c = np.ones(n)
            s = np.zeros(n)
            c[p] = c[q] = 1.0 / np.sqrt(t * t + 1.0)
            s[p] = -t * c[p]  # column p becomes c * col_p - s * col_q ...
            s[q] = t * c[p]   # ... and column q becomes s * col_p + c * col_q
            a = a * c + a[:, partner] * s
            a = a * c[:, None] + a[partner, :] * s[:, None]
            vectors = vectors * c + vectors[:, partner] * s
            players = [players[0], players[-1]] + players[1:-1]
    if not converged:
        off = a - np.diag(np.diag(a))
        if math.sqrt(float(np.add.reduce((off * off).ravel()))) > 1e-13 * scale:
            raise ArithmeticError(f"symmetric_eigen: no convergence in {max_sweeps} sweeps")
    values = np.ldexp(np.diag(a), power)
    order = np.lexsort((np.arange(n), -values))
    return values[order], vectors[:, order]


@lru_cache(maxsize=1 << 16)
def _ln(x: float) -> float:
    return float(Decimal(x).ln(_DECIMAL))


def log(values: np.ndarray | float) -> np.ndarray:
    """Natural logarithm of positive values, elementwise, the same bits everywhere (via :mod:`decimal`).

    Meant for arrays with few distinct values (term frequencies, document frequencies): each
    distinct value is computed once.
    """
    array = np.asarray(values, dtype=np.float64)
    if array.size and not np.all(array > 0):
        raise ValueError("log: the values must be positive")
    distinct, inverse = np.unique(array, return_inverse=True)
    logs = np.array([_ln(float(x)) for x in distinct.tolist()], dtype=np.float64)
    return logs[inverse].reshape(array.shape)


def power(x: float, y: float) -> float:
    """``x ** y`` for ``x >= 0`` and a positive finite ``y``, the same bits everywhere (via
    :mod:`decimal`, then rounded to float64). Python's ``**`` on floats is the C library's
    ``pow``: glibc takes an FMA variant where the CPU has FMA, and the two differ in the last bit
    on about one input in 1,400."""
    if not (x >= 0.0 and y > 0.0 and math.isfinite(y)):
        raise ValueError(f"power: x must be >= 0 and y positive and finite, got {x!r}, {y!r}")
    if x == 0.0 or math.isinf(x):
        return x
    return float(_DECIMAL.power(Decimal(x), Decimal(y)))


_LOG2_LOCK = threading.Lock()
_LOG2: list[np.ndarray] = [np.zeros(1)]  # _LOG2[0][k] = log2(k) for k >= 1 (index 0 unused)
_LN2 = Decimal(2).ln(_DECIMAL)


def _log2_decimal(k: int) -> float:
    return float(_DECIMAL.divide(Decimal(k).ln(_DECIMAL), _LN2))


_TABLE_MAX = 1 << 16  # ranks below this come from the table; deeper ones are computed one distinct value at a time


def log2_of_integers(values: np.ndarray) -> np.ndarray:
    """``log2`` of positive integers (given as any numeric dtype), the same bits everywhere: a table."""
    array = np.asarray(values)
    if array.size == 0:
        return np.zeros(array.shape, dtype=np.float64)
    index = array.astype(np.int64)
    if np.any(index < 1) or np.any(index != array):
        raise ValueError("log2_of_integers: the values must be positive integers")
    top = int(np.max(index))
    table = _LOG2[0]
    want = min(top, _TABLE_MAX - 1)
    if want >= len(table):
        with _LOG2_LOCK:
            table = _LOG2[0]
            if want >= len(table):
                size = min(max(want + 1, 2 * len(table), 1024), _TABLE_MAX)
                grown = np.zeros(size, dtype=np.float64)
                grown[:len(table)] = table
                for k in range(max(1, len(table)), size):
                    grown[k] = _log2_decimal(k)
                _LOG2[0] = table = grown
    if top < len(table):
        return table[index]
    out = np.empty(index.shape, dtype=np.float64)
    small = index < len(table)
    out[small] = table[index[small]]
    deep, inverse = np.unique(index[~small], return_inverse=True)
    out[~small] = np.array([_deep_log2(int(k)) for k in deep.tolist()])[inverse]
    return out


@lru_cache(maxsize=1 << 16)
def _deep_log2(k: int) -> float:
    return _log2_decimal(k)
