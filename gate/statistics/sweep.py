"""The honest sweep: what a grid of configs is worth once the choice among them is paid for.

A sweep scores ``C`` configs (cells) on the same ``n`` queries and reports the best. That best
is the maximum of ``C`` noisy estimates, so it sits above the chosen cell's true quality by an
amount that grows with the grid, not with retrieval quality. :func:`analyze_sweep` reports, from
the per-query values of every cell (one row per cell, aligned on one query list):

* every cell's mean with a 95% bootstrap interval (one set of resample indices for all cells),
  and the maximum, labelled as the optimistic number;
* the **held-out estimate** when a tuning split is given: the cell with the best mean on the
  tuning queries, scored on the held-out ones;
* the **cross-validated estimate** (K folds, seeded, stratified by stratum when strata are
  given): in each fold the cell with the best mean on the other folds is chosen and scored on
  this fold's queries; the chosen cells' values form one per-query array, every query scored by a
  cell chosen without it, whose mean is the estimate. Its interval comes from the whole procedure
  run again on every bootstrap resample of the queries (each keeping its fold): the choices vary
  with the data, and a bootstrap of the honest array alone, which holds them fixed, covered the
  truth of 24 equally good cells in 88% of generated grids at 95%; re-running the choices covers
  it (conservatively there, at the nominal rate when one cell is truly better);
* the **optimism**: the maximum minus the cross-validated estimate, with its interval from the
  same resamples (the maximum re-taken on each), and the optimism expected from noise alone:
  every cell re-centred on the grid mean, so all are equally good, the bootstrap distribution of
  the maximum over the cells, minus the grid mean;
* the interval widths of the held-out and cross-validated estimates side by side.

Ties in a choice go to the first cell in grid order, so the result does not depend on how
floating-point sums happen to round. Folds: within each stratum (or over all queries) the query
positions are shuffled with ``numpy.random.default_rng(seed)`` and dealt to folds 0, 1, ...,
K-1 in turn, the dealing continuing from stratum to stratum (strata in byte order of their
names) so fold sizes differ by at most one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gate.common.numbers import counted, fixed, signed
from gate.statistics.bootstrap import (
    DEFAULT_SAMPLES,
    DEFAULT_SEED,
    MAX_BLOCK_INDICES,
    bootstrap_means,
    check_samples,
    check_seed,
    confidence_interval,
    index_blocks,
)

__all__ = ["DEFAULT_FOLDS", "Estimate", "SweepCell", "SweepResult", "analyze_sweep", "choose", "folds_of",
           "expected_optimism"]

DEFAULT_FOLDS = 5
#: Held-out queries below which no held-out estimate is given (an interval of one query is no interval).
MIN_HELD_OUT = 2


@dataclass(frozen=True)
class Estimate:
    """A mean over queries with its 95% bootstrap interval."""

    mean: float
    ci_low: float
    ci_high: float
    query_count: int

    @property
    def width(self) -> float:
        return self.ci_high - self.ci_low

    def to_dict(self) -> dict[str, Any]:
        return {"mean": self.mean, "ci_low": self.ci_low, "ci_high": self.ci_high, "query_count": self.query_count,
                "width": self.width}


@dataclass(frozen=True)
class SweepCell:
    name: str
    estimate: Estimate
    folds_chosen: int  # how many cross-validation folds chose this cell
    params: tuple[tuple[str, Any], ...] = ()  # the swept values, when the cell comes from sweep.params
    # this cell minus the config as it stands, paired over queries (None without a reference cell)
    against_reference: Estimate | None = None

    def to_dict(self) -> dict[str, Any]:
        vs = self.against_reference
        return {"name": self.name, **self.estimate.to_dict(), "folds_chosen": self.folds_chosen,
                "params": {key: value for key, value in self.params},
                "delta_vs_reference": None if vs is None else {"mean": vs.mean, "ci_low": vs.ci_low,
                                                                "ci_high": vs.ci_high}}


@dataclass(frozen=True)
class HeldOut:
    """The cell chosen on the tuning queries, scored on the held-out ones."""

    chosen: str
    tuning_count: int
    estimate: Estimate

    def to_dict(self) -> dict[str, Any]:
        return {"chosen": self.chosen, "tuning_count": self.tuning_count, **self.estimate.to_dict()}


@dataclass(frozen=True)
class SweepResult:
    metric: str
    cells: tuple[SweepCell, ...]
    maximum: str  # the cell with the best mean over every query
    cross_validated: Estimate
    fold_choices: tuple[str, ...]  # the cell each fold chose, fold by fold
    folds: int
    stratified: bool
    optimism: Estimate  # maximum minus the cross-validated estimate, paired over queries
    expected_optimism: float  # of the maximum over this many equally good cells (noise alone)
    expected_optimism_high: float  # its 95th percentile
    held_out: HeldOut | None
    reference: str | None  # the config as it stands, when it is a cell
    samples: int
    seed: int
    query_ids: tuple[str, ...]
    honest: np.ndarray  # the cross-validated per-query array, aligned on query_ids
    values: np.ndarray  # every cell's per-query values (cells x queries)
    held_out_note: str | None = None  # why a tuning split gave no held-out estimate

    def best_on(self, query_ids) -> tuple[str, ...]:
        """The cells with the best mean on ``query_ids``, ties included (within TIE_TOLERANCE), in
        grid order: what a sweep tuned on those queries would pick from."""
        wanted = set(query_ids)
        columns = np.asarray([i for i, q in enumerate(self.query_ids) if q in wanted], dtype=np.int64)
        if not len(columns):
            return ()
        return tuple(self.cells[i].name for i in best_cells(self.values, columns))

    def cell(self, name: str) -> SweepCell:
        return next(cell for cell in self.cells if cell.name == name)

    @property
    def maximum_estimate(self) -> Estimate:
        return self.cell(self.maximum).estimate

    def trade_off(self) -> str:
        """The hold-out against cross-validation in one sentence (the seed's trade-off)."""
        cv = self.cross_validated
        optimism = fixed(self.optimism.mean)
        owed = (f"it removes the {optimism} the maximum owes to the choice" if fixed(self.optimism.mean) != fixed(0.0)
                else "the maximum owes nothing measurable to the choice here")
        if self.held_out is None:
            why = self.held_out_note or "no tuning split is declared to compare a hold-out with"
            return (f"Cross-validation scores every one of the {counted(cv.query_count, 'query', 'queries')} with a "
                    f"cell chosen without it: its interval is {fixed(cv.width)} wide, and {owed}; {why}.")
        held = self.held_out.estimate
        wider = held.width > self.optimism.mean and fixed(self.optimism.mean) != fixed(0.0)
        return (f"A hold-out of {counted(held.query_count, 'query', 'queries')} removes the optimism too, but its "
                f"interval is {fixed(held.width)} wide against cross-validation's {fixed(cv.width)} on all "
                f"{counted(cv.query_count, 'query', 'queries')}" + (f", wider than the {optimism} it removes" if wider
                                                                    else "")
                + ("; on a small golden set, prefer cross-validation" if held.width > cv.width else "")
                + (f" ({self.held_out_note})" if self.held_out_note else "") + ".")

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "cells": [cell.to_dict() for cell in self.cells],
            "maximum": {"cell": self.maximum, **self.maximum_estimate.to_dict(), "optimistic": True},
            "cross_validated": {**self.cross_validated.to_dict(), "folds": self.folds,
                                "stratified": self.stratified, "fold_choices": list(self.fold_choices)},
            "optimism": {**self.optimism.to_dict(), "expected_from_noise": self.expected_optimism,
                         "expected_from_noise_95": self.expected_optimism_high},
            "held_out": self.held_out.to_dict() if self.held_out is not None else None,
            "held_out_note": self.held_out_note,
            "reference": self.reference,
            "trade_off": self.trade_off(),
            "samples": self.samples,
            "seed": self.seed,
        }

    def sentence(self) -> str:
        top = self.maximum_estimate
        return (f"{self.metric}: the best of {len(self.cells)} cells reads {fixed(top.mean)} (optimistic); "
                f"cross-validated {fixed(self.cross_validated.mean)} [{fixed(self.cross_validated.ci_low)}, "
                f"{fixed(self.cross_validated.ci_high)}], optimism {signed(self.optimism.mean)} "
                f"(noise alone would give {signed(self.expected_optimism)} for a grid this size)")


#: Means closer than this are tied. Two cells with the same per-query values in another order can
#: differ in the last bit of their float means; the documented tie rule (the first cell in grid
#: order) must not be decided by rounding. A real difference of means of [0, 1]-valued measures
#: is far larger than this on any golden set the gate can hold.
TIE_TOLERANCE = 1e-9


def _first_best(means: np.ndarray) -> np.ndarray:
    """Per row of ``means`` (resamples x cells, or one row): the first cell within TIE_TOLERANCE
    of the row's best."""
    means = np.atleast_2d(means)
    return np.argmax(means >= means.max(axis=1, keepdims=True) - TIE_TOLERANCE, axis=1)


def best_cells(values: np.ndarray, columns: np.ndarray | None = None) -> np.ndarray:
    """Every row whose mean over ``columns`` ties for the largest (within TIE_TOLERANCE)."""
    block = values if columns is None else values[:, columns]
    means = block.mean(axis=1)
    return np.flatnonzero(means >= means.max() - TIE_TOLERANCE)


def choose(values: np.ndarray, columns: np.ndarray | None = None) -> int:
    """The row with the largest mean over ``columns`` (all when None); ties to the first row."""
    return int(best_cells(values, columns)[0])


def folds_of(n: int, folds: int, seed: int, strata: Sequence[str | None] | None = None) -> np.ndarray:
    """The fold (0..folds-1) of each of ``n`` query positions (see the module docstring)."""
    rng = np.random.default_rng(seed)
    out = np.empty(n, dtype=np.int64)
    groups: dict[str, list[int]] = {}
    for position in range(n):
        label = "" if strata is None or strata[position] is None else str(strata[position])
        groups.setdefault(label, []).append(position)
    dealt = 0
    for label in sorted(groups, key=lambda name: name.encode("utf-8", "surrogatepass")):
        members = np.asarray(groups[label], dtype=np.int64)
        order = members[rng.permutation(len(members))]
        out[order] = (dealt + np.arange(len(order))) % folds
        dealt += len(order)
    return out


def _fixed_order_sums(weights: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``weights @ values.T`` summed in numpy's fixed order, not by BLAS: a BLAS kernel's order depends
    on the CPU, and the sweep's intervals moved in the last bits between an AVX-512 and an AVX2
    machine (an outside review)."""
    return np.stack([np.add.reduce(weights * row, axis=1) for row in values], axis=1)


def choice_bootstrap(values: np.ndarray, fold_of: np.ndarray, folds: int, samples: int,
                     seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The whole procedure on every resample of the queries: (cross-validated estimate, maximum)
    per resample. A resampled query keeps its fold, so it is never both chosen on and scored on;
    the resamples are the contract's (:func:`gate.statistics.bootstrap.index_blocks`)."""
    cells, n = values.shape
    test_masks = np.stack([fold_of == fold for fold in range(folds)]).astype(np.float64)  # folds x n
    train_masks = 1.0 - test_masks
    cv_out = np.empty(samples, dtype=np.float64)
    max_out = np.empty(samples, dtype=np.float64)
    done = 0
    for block in index_blocks(n, samples, seed, chunk_rows=max(1, min(1024, MAX_BLOCK_INDICES // max(n, 1)))):
        rows = block.shape[0]
        counts = np.bincount((block + (np.arange(rows) * n)[:, None]).ravel(), minlength=rows * n)
        counts = counts.reshape(rows, n).astype(np.float64)
        sums = _fixed_order_sums(counts, values)  # rows x cells: every cell's resampled total
        max_out[done:done + rows] = sums.max(axis=1) / n
        honest = np.zeros(rows, dtype=np.float64)
        for fold in range(folds):
            train = counts * train_masks[fold]
            weight = train.sum(axis=1)
            train_sums = _fixed_order_sums(train, values)
            # the first best cell, as choose() takes it (a resample without training queries keeps cell 0)
            chosen = _first_best(train_sums / np.where(weight > 0, weight, 1.0)[:, None])
            honest += np.add.reduce(counts * test_masks[fold] * values[chosen], axis=1)
        cv_out[done:done + rows] = honest / n
        done += rows
    return cv_out, max_out


def _estimate(values: np.ndarray, samples: int, seed: int, method: str) -> Estimate:
    means = bootstrap_means(values[None, :], samples, seed)[0]
    low, high = confidence_interval(values, means, method)
    return Estimate(float(values.mean()), float(low), float(high), int(len(values)))


def expected_optimism(values: np.ndarray, samples: int, seed: int) -> tuple[float, float]:
    """(mean, 95th percentile) of the bootstrap maximum over cells that are all equally good:
    each row re-centred on the grid mean, minus the grid mean."""
    grand = float(values.mean())
    centred = values - values.mean(axis=1, keepdims=True) + grand
    maxima = bootstrap_means(centred, samples, seed).max(axis=0) - grand
    return float(maxima.mean()), float(np.percentile(maxima, 95))


def analyze_sweep(
    values,
    cell_names: Sequence[str],
    query_ids: Sequence[str],
    metric: str,
    *,
    strata: Sequence[str | None] | None = None,
    tuning: Sequence[str] | None = None,
    holdout: Sequence[str] | None = None,
    folds: int = DEFAULT_FOLDS,
    samples: int = DEFAULT_SAMPLES,
    seed: int = DEFAULT_SEED,
    method: str = "percentile",
    reference: str | None = None,
    params: Sequence[Sequence[tuple[str, Any]]] | None = None,
) -> SweepResult:
    """The sweep's estimates (module docstring) from ``values`` (cells x queries)."""
    values = np.asarray(values, dtype=np.float64)
    names = tuple(str(name) for name in cell_names)
    ids = tuple(str(q) for q in query_ids)
    _check_sweep(values, names, ids, folds, strata, reference)
    n = len(ids)
    samples, seed = check_samples(samples), check_seed(seed)

    fold_of = folds_of(n, folds, seed, strata)
    honest = np.empty(n, dtype=np.float64)
    choices = []
    for fold in range(folds):
        inside = fold_of == fold
        chosen = choose(values, np.flatnonzero(~inside))
        choices.append(chosen)
        honest[inside] = values[chosen, inside]
    picked = np.bincount(np.asarray(choices), minlength=len(names))

    # One set of resample indices for every cell and for the procedure. The cross-validated
    # estimate's interval re-runs the choices on each resample: a bootstrap of the honest array
    # alone misses the noise of the choice (88% coverage of a 95% interval on 24 equally good
    # cells, tests/statistics/test_sweep.py).
    top = choose(values)
    resampled = bootstrap_means(values, samples, seed)
    estimates = []
    for row, means in zip(values, resampled):
        low, high = confidence_interval(row, means, method)
        estimates.append(Estimate(float(row.mean()), float(low), float(high), n))
    cv_means, max_means = choice_bootstrap(values, fold_of, folds, samples, seed)
    cv_low, cv_high = np.percentile(cv_means, [2.5, 97.5])
    cv = Estimate(float(honest.mean()), float(cv_low), float(cv_high), n)
    gap_low, gap_high = np.percentile(max_means - cv_means, [2.5, 97.5])
    gap = Estimate(float(values[top].mean() - honest.mean()), float(gap_low), float(gap_high), n)
    against = _against_reference(values, names, reference, samples, seed, method)
    cells = tuple(SweepCell(name, estimates[i], int(picked[i]), tuple(params[i]) if params is not None else (),
                            against[i]) for i, name in enumerate(names))
    expected, expected_high = expected_optimism(values, samples, seed)
    held, note = _held_out(values, names, ids, tuning, holdout, samples, seed, method)

    return SweepResult(metric, cells, names[top], cv, tuple(names[i] for i in choices), folds,
                       strata is not None and any(s is not None for s in strata), gap, expected,
                       expected_high, held, reference, samples, seed, ids, honest, values, note)


def _check_sweep(values: np.ndarray, names: tuple[str, ...], ids: tuple[str, ...], folds: int,
                 strata: Sequence[str | None] | None, reference: str | None) -> None:
    """ValueError for arguments a sweep cannot be read from."""
    if values.ndim != 2 or values.shape != (len(names), len(ids)):
        raise ValueError(f"values must be (cells, queries) = ({len(names)}, {len(ids)}), got {values.shape}")
    if len(names) < 2:
        raise ValueError("a sweep needs at least 2 cells")
    if len(set(names)) != len(names):
        raise ValueError("cell names must be distinct")
    if not np.all(np.isfinite(values)):
        raise ValueError("per-query values must be finite")
    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 2:
        raise ValueError(f"folds must be an integer of at least 2, got {folds!r}")
    n = len(ids)
    if n < folds:
        raise ValueError(f"{folds} folds need at least {folds} queries, got {n}")
    if strata is not None and len(strata) != n:
        raise ValueError("strata must give one label per query")
    if reference is not None and reference not in names:
        raise ValueError(f"the reference {reference!r} is not a cell")


def _against_reference(values: np.ndarray, names: tuple[str, ...], reference: str | None, samples: int, seed: int,
                       method: str) -> list[Estimate | None]:
    """Each cell minus the reference cell (None without a reference)."""
    n = values.shape[1]
    against: list[Estimate | None] = [None] * len(names)
    if reference is not None:
        # Paired over queries, on the same resamples as the cells: what switching to each cell
        # would move, with the interval a comparison of two configs on one query set has.
        differences = values - values[names.index(reference)]
        for i, (row, means) in enumerate(zip(differences, bootstrap_means(differences, samples, seed))):
            low, high = confidence_interval(row, means, method)
            against[i] = Estimate(float(row.mean()), float(low), float(high), n)
    return against


def _held_out(values: np.ndarray, names: tuple[str, ...], ids: tuple[str, ...], tuning: Sequence[str] | None,
              holdout: Sequence[str] | None, samples: int, seed: int, method: str) -> tuple[HeldOut | None, str | None]:
    """The held-out estimate of a tuning split, and the note on it (why there is none, or its overlap)."""
    held, note = None, None
    if tuning is not None:
        tuned = set(tuning)
        kept = set(holdout) if holdout is not None else None
        tune_cols = np.asarray([i for i, q in enumerate(ids) if q in tuned], dtype=np.int64)
        hold_cols = np.asarray([i for i, q in enumerate(ids) if q not in tuned and (kept is None or q in kept)],
                               dtype=np.int64)
        overlap = len(tuned & kept & set(ids)) if kept is not None else 0
        if not len(tune_cols):
            note = "the tuning split names no judged golden query, so there is no held-out estimate"
        elif len(hold_cols) < MIN_HELD_OUT:
            note = (f"the tuning split leaves "
                    f"{counted(len(hold_cols), 'held-out judged query', 'held-out judged queries')}"
                    f"{f' ({overlap} of the held-out queries are also tuning queries)' if overlap else ''}: too few "
                    "for a held-out estimate")
        else:
            chosen = choose(values, tune_cols)
            held = HeldOut(names[chosen], int(len(tune_cols)),
                           _estimate(values[chosen, hold_cols], samples, seed, method))
            if overlap:
                note = f"{overlap} held-out queries are also tuning queries: left out of the held-out estimate"
    return held, note
