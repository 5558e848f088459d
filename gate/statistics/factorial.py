"""Two-level factorial (2^k) contrasts over aligned per-query arrays.

Each factor is one change between a baseline and a candidate configuration,
with two levels: ``old`` (the baseline's value) and ``new`` (the candidate's).
A *cell* is one combination of levels, written as a tuple of levels in factor
order; ``k`` factors give ``2**k`` cells, each scored on the same queries.

Everything here is a difference of cells, query by query:

* a **simple effect** of factor ``A`` at fixed levels of the others is
  ``cell(A=new, rest) - cell(A=old, rest)``;
* an **interaction** of a set of factors ``S`` at fixed levels of the rest is
  the difference of lower-order terms: for ``S = {A, B}``, A's simple effect
  when B is new minus A's simple effect when B is old; for ``S = {A, B, C}``,
  the A x B interaction when C is new minus the one when C is old.

An interaction is a mixed difference, symmetric in its factors, so it can be
built from the simple effects of any one of them (the *way*): the A-way nests
A's simple effects and differences them over B, then C, ...; the B-way starts
from B's. The ways are equal in exact arithmetic; :meth:`FactorialGrid.ways`
returns all of them so a caller can show they agree to floating-point
precision, which is what makes the interaction a property of the set of
changes rather than of the order of subtraction.

A query whose contrast is zero in exact arithmetic can come out as ~1e-16: the
cell values added and subtracted are rounded. :meth:`FactorialGrid.settled`
returns the contrast with such rounding residues set to exactly 0 (see
:func:`rounding_tolerance`), so that a query that did not move is not counted
as moved and an effect that is zero by construction is exactly zero.

:func:`concentration` summarises how one per-query contrast is spread over the
queries: how few queries, largest movement in the effect's direction first,
carry the net effect (the per-query changes summed over every query), or
whether gains and losses mostly cancel (a redistribution).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from gate.common.numbers import counted, signed

__all__ = [
    "LEVELS",
    "OLD",
    "NEW",
    "CONCENTRATION_SHARE",
    "REDISTRIBUTION_RATIO",
    "ROUNDING_SLACK",
    "Term",
    "FactorialGrid",
    "Concentration",
    "grid_cells",
    "terms",
    "check_factors",
    "concentration",
    "rounding_tolerance",
    "zero_residues",
]

OLD = "old"
NEW = "new"
LEVELS = (OLD, NEW)

#: Share of the net movement the "fewest queries" must carry: all of it ("19 queries carry the
#: +0.024": summed over the 140 queries, their changes make up the net change).
CONCENTRATION_SHARE = 1.0
#: Below this fraction of the same-sign movement, the net change is a redistribution: with 0.5,
#: when the queries moving the other way cancel more than the net that is left (opposite-sign
#: total larger than half the same-sign total), no set of queries "carries" the effect; the
#: net is what is left of gains and losses, and the reading says so instead of "concentrated".
REDISTRIBUTION_RATIO = 0.5
#: A per-query contrast within ``ROUNDING_SLACK * m * eps * sum(|cell values|)`` of zero is a
#: rounding residue, not a moved query (``m`` cells added and subtracted, ``eps`` the float64
#: machine epsilon). Any order of the ``m - 1`` additions and subtractions errs by at most
#: ``(m - 1) * eps / 2 * sum(|values|)`` (the classic bound for a floating-point sum), so
#: ``2 * m * eps`` is four times that bound, leaving room for a few ulps of rounding in each cell's
#: own value. For metrics on [0, 1] and three factors that is under 3e-14 (under 5e-10 even at the
#: 10-factor limit), orders of magnitude below any real difference between two rankings' scores.
ROUNDING_SLACK = 2.0

Cell = tuple[str, ...]


def check_factors(factors: Sequence[str]) -> tuple[str, ...]:
    """Factor names as a tuple: at least one, non-empty strings, no duplicates (``ValueError``)."""
    if isinstance(factors, str):
        raise ValueError("factors must be a sequence of names, not one string")
    names = tuple(factors)
    if not names:
        raise ValueError("a factorial grid needs at least one factor")
    for name in names:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"factor names must be non-empty strings, got {name!r}")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"duplicate factor name(s): {', '.join(dup)}")
    return names


def grid_cells(k: int) -> list[Cell]:
    """All ``2**k`` cells in a fixed order (all-old first, all-new last)."""
    return list(itertools.product(LEVELS, repeat=k))


@dataclass(frozen=True)
class Term:
    """One estimated contrast: the differenced ``factors`` at fixed levels (``given``) of the rest.

    One factor is a simple effect, several an interaction. ``given`` lists
    ``(factor, level)`` for every other factor, in factor order.
    """

    factors: tuple[str, ...]
    given: tuple[tuple[str, str], ...]

    @property
    def order(self) -> int:
        return len(self.factors)

    @property
    def kind(self) -> str:
        return "simple" if self.order == 1 else "interaction"

    @property
    def name(self) -> str:
        return "×".join(self.factors)

    @property
    def id(self) -> str:
        """``model|corpus=new``; ``model×corpus``; ``model×corpus|reranker=old``."""
        if not self.given:
            return self.name
        return self.name + "|" + ",".join(f"{f}={level}" for f, level in self.given)

    def given_dict(self) -> dict[str, str]:
        return dict(self.given)


def terms(factors: Sequence[str]) -> list[Term]:
    """Every simple effect, then every interaction by increasing order.

    Simple effects: each factor at every combination of the others' levels
    (``k * 2**(k-1)`` terms). Interactions: every set of two or more factors,
    at every combination of the remaining factors' levels. For ``k = 2`` that
    is 4 simple effects and 1 interaction; for ``k = 3``, 12 simple effects,
    6 two-way interactions (3 pairs at each level of the third factor) and the
    three-way interaction.
    """
    names = check_factors(factors)
    out: list[Term] = []
    for order in range(1, len(names) + 1):
        for subset in itertools.combinations(names, order):
            rest = [f for f in names if f not in subset]
            for levels in itertools.product(LEVELS, repeat=len(rest)):
                out.append(Term(tuple(subset), tuple(zip(rest, levels))))
    return out


class FactorialGrid:
    """Per-query values of every cell of a ``2**k`` grid, aligned on one query list.

    ``values`` maps each cell (tuple of levels in factor order) to a 1-D array;
    every cell must be present, all arrays of one length ``n >= 1`` and finite.
    """

    def __init__(self, factors: Sequence[str], values: Mapping[Cell, np.ndarray]):
        self.factors = check_factors(factors)
        self.k = len(self.factors)
        self.cells = grid_cells(self.k)
        unknown = [c for c in values if tuple(c) not in set(self.cells)]
        if unknown:
            raise ValueError(f"not a cell of a {self.k}-factor grid: {unknown[0]!r}")
        absent = [c for c in self.cells if c not in values]
        if absent:
            raise ValueError(f"{len(absent)} of {len(self.cells)} cells have no values, e.g. {absent[0]!r}")
        rows = []
        n = None
        for cell in self.cells:
            arr = np.asarray(values[cell], dtype=np.float64)
            if arr.ndim != 1:
                raise ValueError(f"cell {cell!r}: expected a 1-D array of per-query values, got shape {arr.shape}")
            if n is None:
                n = arr.size
            if arr.size != n:
                raise ValueError(f"cell {cell!r} has {arr.size} values, another cell has {n}: cells must be aligned")
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"cell {cell!r} has non-finite per-query values")
            rows.append(arr)
        if not n:
            raise ValueError("cells have no queries: a factorial contrast needs at least one query")
        self.n = int(n)
        self.matrix = np.vstack(rows)
        self._row = {cell: i for i, cell in enumerate(self.cells)}

    def cell(self, levels: Mapping[str, str]) -> np.ndarray:
        """Per-query values of the cell with the given level of every factor."""
        key = tuple(levels[f] for f in self.factors)
        return self.matrix[self._row[key]]

    def means(self) -> dict[Cell, float]:
        return {cell: float(self.matrix[i].mean()) for i, cell in enumerate(self.cells)}

    def contrast(self, term: Term, way: str | None = None) -> np.ndarray:
        """Per-query values of ``term``, built from ``way``'s simple effects (default: its first factor).

        The nested difference: ``way``'s simple effect, differenced over each
        other factor of the term in factor order (``new - old``), at the
        term's fixed levels of the rest.
        """
        if way is None:
            way = term.factors[0]
        if way not in term.factors:
            raise ValueError(f"{way!r} is not a factor of {term.name}")
        order = [way] + [f for f in term.factors if f != way]
        return self._nested(order, dict(term.given))

    def _nested(self, order: list[str], fixed: dict[str, str]) -> np.ndarray:
        if not order:
            return self.cell(fixed)
        *inner, outer = order
        return self._nested(inner, {**fixed, outer: NEW}) - self._nested(inner, {**fixed, outer: OLD})

    def ways(self, term: Term) -> dict[str, np.ndarray]:
        """The term's per-query contrast built from each of its factors' simple effects."""
        return {f: self.contrast(term, f) for f in term.factors}

    def term_cells(self, term: Term) -> list[Cell]:
        """The ``2**order`` cells whose values ``term``'s contrast adds and subtracts."""
        given = dict(term.given)
        out = []
        for levels in itertools.product(LEVELS, repeat=term.order):
            fixed = {**given, **dict(zip(term.factors, levels))}
            out.append(tuple(fixed[f] for f in self.factors))
        return out

    def tolerance(self, term: Term) -> np.ndarray:
        """Per-query rounding tolerance of ``term``'s contrast (:func:`rounding_tolerance`)."""
        rows = [self._row[c] for c in self.term_cells(term)]
        return rounding_tolerance(self.matrix[rows])

    def settled(self, term: Term, way: str | None = None) -> np.ndarray:
        """:meth:`contrast` with rounding residues (``|d| <=`` :meth:`tolerance`) set to exactly 0.

        This is the contrast every statistic should use: a query that did not
        move must not count as moved, and an effect that is zero in exact
        arithmetic must have a zero estimate and a zero-width interval.
        """
        return zero_residues(self.contrast(term, way), self.tolerance(term))


def rounding_tolerance(terms_matrix) -> np.ndarray:
    """Per-query tolerance of a signed sum of the rows of ``terms_matrix`` (one row per term).

    ``ROUNDING_SLACK * m * eps * sum(|terms|)`` for ``m`` rows: a contrast
    within it of zero is a rounding residue (see :data:`ROUNDING_SLACK`).
    """
    arr = np.asarray(terms_matrix, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[None, :]
    m = arr.shape[0]
    return ROUNDING_SLACK * m * np.finfo(np.float64).eps * np.abs(arr).sum(axis=0)


def zero_residues(d, tolerance) -> np.ndarray:
    """``d`` with every value whose magnitude is ``<= tolerance`` (scalar or per-query) set to 0."""
    arr = np.asarray(d, dtype=np.float64)
    tol = np.asarray(tolerance, dtype=np.float64)
    if np.any(tol < 0) or not np.all(np.isfinite(tol)):
        raise ValueError("tolerance must be finite and non-negative")
    return np.where(np.abs(arr) <= tol, 0.0, arr)


@dataclass(frozen=True)
class Concentration:
    """How a per-query contrast's movement is spread over the queries.

    ``sign`` is the sign of the net movement (+1 when it is exactly 0 but
    queries moved; 0 when nothing moved). A query moved when its contribution
    is not 0 (rounding residues are zeroed first, see :func:`concentration`).
    ``same_sign_total`` and ``opposite_sign_total`` are sums of per-query
    contributions (metric units summed over queries), ``net`` their sum.
    ``queries`` is the fewest same-sign queries, largest first, whose
    contributions add up to ``share`` of the net (all of it by default: if the
    queries moving the other way took some of it back, the largest same-sign
    queries carry that too), ``mean_movement`` their mean contribution, and
    ``query_ids`` those queries, largest first (empty without ids).
    ``redistribution`` holds when ``|net| < ratio * |same_sign_total|``: the
    other way cancels so much that no set of queries carries the net.
    """

    n: int
    sign: int
    net: float
    same_sign_total: float
    opposite_sign_total: float
    same_sign_queries: int
    opposite_sign_queries: int
    queries: int
    mean_movement: float
    share: float
    ratio: float
    redistribution: bool
    query_ids: tuple[str, ...] = ()

    @property
    def moved(self) -> bool:
        return self.sign != 0

    @property
    def concentrated(self) -> bool:
        """Some queries carry the net: something moved and it is not a redistribution."""
        return self.moved and not self.redistribution

    def phrase(self, digits: int = 3) -> str:
        """The reading: ``concentrated in 19 queries, each moving about +0.177`` (``spread over 90
        of 140 queries, ...`` when more than half the queries are needed to carry the net),
        ``no query moved`` or ``redistribution: 46 queries gained +9.281 in total, 62 lost -6.858``."""
        if not self.moved:
            return "no query moved"
        if self.redistribution:
            same, other = ("gained", "lost") if self.sign > 0 else ("lost", "gained")
            text = (f"redistribution: {counted(self.same_sign_queries, 'query', 'queries')} {same} "
                    f"{signed(self.same_sign_total, digits)} in total")
            if self.opposite_sign_queries:
                text += f", {self.opposite_sign_queries} {other} {signed(self.opposite_sign_total, digits)}"
            return text
        if 2 * self.queries > self.n:  # most queries carry it: not concentrated, shared
            where = f"spread over {self.queries} of {counted(self.n, 'query', 'queries')}"
        else:
            where = f"concentrated in {counted(self.queries, 'query', 'queries')}"
        return f"{where}, each moving about {signed(self.mean_movement, digits)}"

    def sentence(self, subject: str, digits: int = 3) -> str:
        """One plain sentence about ``subject`` (e.g. "Switching model with corpus old (+0.024)")."""
        if not self.moved:
            return f"{subject}: no query moved."
        if self.redistribution:
            same = "gain" if self.sign > 0 else "loss"
            return (f"{subject}: {self.phrase(digits)}, netting {signed(self.net, digits)} "
                    f"(under {self.ratio:.0%} of the {same}).")
        part = "" if self.share >= 1.0 else f"{self.share:.0%} of "
        verb = "carries" if self.queries == 1 else "carry"
        extra = []
        if self.same_sign_queries > self.queries:
            extra.append(f"{counted(self.same_sign_queries, 'query', 'queries')} moved that way, "
                         f"{signed(self.same_sign_total, digits)} in total")
        if self.opposite_sign_queries:
            extra.append(f"the {self.opposite_sign_queries} moving the other way sum to "
                         f"{signed(self.opposite_sign_total, digits)}")
        else:
            extra.append("no query moved the other way")
        return (f"{subject}: {self.phrase(digits)}, which {verb} {part}the net {signed(self.net, digits)} "
                f"summed over {counted(self.n, 'query', 'queries')} ({'; '.join(extra)}).")

    def to_dict(self) -> dict:
        return {
            "n": self.n,
            "sign": self.sign,
            "net": self.net,
            "same_sign_total": self.same_sign_total,
            "opposite_sign_total": self.opposite_sign_total,
            "same_sign_queries": self.same_sign_queries,
            "opposite_sign_queries": self.opposite_sign_queries,
            "queries": self.queries,
            "mean_movement": self.mean_movement,
            "share": self.share,
            "redistribution": self.redistribution,
            "phrase": self.phrase(),
            "query_ids": list(self.query_ids),
        }


def concentration(
    d,
    query_ids: Sequence[str] | None = None,
    share: float = CONCENTRATION_SHARE,
    ratio: float = REDISTRIBUTION_RATIO,
    tolerance=0.0,
) -> Concentration:
    """Concentration of the per-query contrast ``d`` (see :class:`Concentration`).

    Contributions within ``tolerance`` (a scalar or one value per query, e.g.
    :meth:`FactorialGrid.tolerance`) of zero are rounding residues: they are
    set to 0 and count as queries that did not move. Same-sign contributions
    are then sorted by size, largest first (ties in query order), and counted
    until their running sum reaches ``share`` of the net (a relative 1e-12
    slack absorbs rounding in the sums).
    """
    arr = np.asarray(d, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError("d must be a non-empty 1-D array of per-query contributions")
    if not np.all(np.isfinite(arr)):
        raise ValueError("d has non-finite values")
    if not 0.0 < share <= 1.0:
        raise ValueError(f"share must be in (0, 1], got {share!r}")
    if ratio < 0.0:
        raise ValueError(f"ratio must be non-negative, got {ratio!r}")
    ids = None if query_ids is None else list(query_ids)
    if ids is not None and len(ids) != arr.size:
        raise ValueError(f"query_ids has {len(ids)} entries but d has {arr.size}")
    arr = zero_residues(arr, tolerance)
    n = int(arr.size)
    net = float(arr.sum())
    pos, neg = arr > 0, arr < 0
    if not (pos.any() or neg.any()):
        return Concentration(n, 0, 0.0, 0.0, 0.0, 0, 0, 0, 0.0, share, ratio, False, ())
    sign = 1 if net >= 0 else -1
    same = pos if sign > 0 else neg
    other = neg if sign > 0 else pos
    same_idx = np.flatnonzero(same)
    contrib = arr[same_idx]
    order = np.argsort(-np.abs(contrib), kind="stable")
    top = contrib[order]
    same_total = float(contrib.sum())
    running = np.cumsum(np.abs(top))
    # The net is at most the same-sign total, so the running sum always reaches it.
    target = share * abs(net) * (1.0 - 1e-12)
    count = int(np.searchsorted(running, target, side="left")) + 1
    count = min(count, top.size)
    chosen = top[:count]
    chosen_ids: tuple[str, ...] = ()
    if ids is not None:
        chosen_ids = tuple(ids[i] for i in same_idx[order[:count]])
    return Concentration(
        n=n,
        sign=sign,
        net=net,
        same_sign_total=same_total,
        opposite_sign_total=float(arr[other].sum()),
        same_sign_queries=int(same_idx.size),
        opposite_sign_queries=int(np.count_nonzero(other)),
        queries=count,
        mean_movement=float(chosen.mean()),
        share=share,
        ratio=ratio,
        redistribution=bool(abs(net) < ratio * abs(same_total)),
        query_ids=chosen_ids,
    )
