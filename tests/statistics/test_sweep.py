"""The honest sweep's statistics (gate.statistics.sweep) on generated grids whose truth is known,
and against an independent computation with the same folds."""

from __future__ import annotations

import numpy as np
import pytest

from gate.statistics.sweep import analyze_sweep, choose, folds_of

N, CELLS, NOISE = 140, 24, 0.15  # the seed's golden set and grid (4 rrf_k x 6 weights)


def _grid(rng: np.random.Generator, advantage: np.ndarray | None = None) -> np.ndarray:
    """Per-query difficulty shared by every cell (mean 0.5) plus per-cell, per-query noise."""
    difficulty = rng.uniform(0.2, 0.8, size=N)
    values = difficulty[None, :] + rng.normal(0.0, NOISE, size=(CELLS, N))
    return values + (advantage[:, None] if advantage is not None else 0.0)


def _ids(n: int = N) -> list[str]:
    return [f"q{i:03d}" for i in range(n)]


def test_on_equally_good_cells_the_maximum_overshoots_by_the_expected_optimism_and_cv_covers_the_truth():
    rng = np.random.default_rng(2026)
    truth = 0.5
    overshoot, expected, covered = [], [], 0
    reps = 200
    for rep in range(reps):
        result = analyze_sweep(_grid(rng), [f"c{i}" for i in range(CELLS)], _ids(), "nDCG@10",
                               samples=500, seed=rep)
        overshoot.append(result.maximum_estimate.mean - truth)
        expected.append(result.expected_optimism)
        cv = result.cross_validated
        covered += cv.ci_low <= truth <= cv.ci_high
    # E[max of 24 noisy means] - truth is ~1.95 standard errors of a cell's noise: ~0.025 here.
    assert 0.018 < np.mean(expected) < 0.032
    assert abs(np.mean(overshoot) - np.mean(expected)) < 0.2 * np.mean(expected)
    assert covered / reps >= 0.90  # a 95% interval, 200 grids


def test_one_truly_better_cell_is_chosen_in_most_folds_and_its_mean_covered():
    rng = np.random.default_rng(11)
    advantage = np.zeros(CELLS)
    advantage[17] = 0.08  # about four standard errors of a cell difference
    chosen_most, covered, reps = 0, 0, 100
    for rep in range(reps):
        result = analyze_sweep(_grid(rng, advantage), [f"c{i}" for i in range(CELLS)], _ids(), "nDCG@10",
                               samples=500, seed=rep)
        chosen_most += result.cell("c17").folds_chosen >= 3
        cv = result.cross_validated
        covered += cv.ci_low <= 0.58 <= cv.ci_high
    assert chosen_most / reps >= 0.9
    assert covered / reps >= 0.88


def _naive_cv(values: list[list[float]], fold_of: np.ndarray, folds: int) -> tuple[list[int], list[float]]:
    """Plain Python: the cell with the best mean on the other folds, fold by fold."""
    n = len(values[0])
    choices, honest = [], [0.0] * n
    for fold in range(folds):
        train = [q for q in range(n) if fold_of[q] != fold]
        means = [sum(row[q] for q in train) / len(train) for row in values]
        best = max(range(len(means)), key=lambda c: (means[c], -c))
        choices.append(best)
        for q in range(n):
            if fold_of[q] == fold:
                honest[q] = values[best][q]
    return choices, honest


def test_held_out_and_cross_validated_estimates_match_an_independent_computation_with_the_same_folds():
    rng = np.random.default_rng(5)
    advantage = rng.normal(0, 0.01, size=CELLS)
    values = _grid(rng, advantage)
    strata = [("nav", "how_to", "tail")[i % 3] for i in range(N)]
    tuning = _ids()[:90]
    result = analyze_sweep(values, [f"c{i}" for i in range(CELLS)], _ids(), "nDCG@10", strata=strata,
                           tuning=tuning, folds=5, samples=1000, seed=3)
    fold_of = folds_of(N, 5, 3, strata)
    choices, honest = _naive_cv(values.tolist(), fold_of, 5)
    assert list(result.fold_choices) == [f"c{c}" for c in choices]
    assert result.cross_validated.mean == pytest.approx(sum(honest) / N, abs=1e-12)
    assert result.honest.tolist() == pytest.approx(honest, abs=1e-15)
    # the hold-out: the best mean on the 90 tuning queries, scored on the other 50
    tune_means = [sum(row[:90]) / 90 for row in values.tolist()]
    best = max(range(CELLS), key=lambda c: (tune_means[c], -c))
    assert result.held_out.chosen == f"c{best}" and result.held_out.tuning_count == 90
    assert result.held_out.estimate.mean == pytest.approx(sum(values[best][90:]) / 50, abs=1e-12)
    assert result.held_out.estimate.query_count == 50
    top = max(range(CELLS), key=lambda c: (values[c].sum(), -c))
    assert result.maximum == f"c{top}"
    assert result.optimism.mean == pytest.approx(values[top].mean() - sum(honest) / N, abs=1e-12)
    # a 50-query hold-out's interval is wider than cross-validation's on all 140
    assert result.held_out.estimate.width > result.cross_validated.width
    assert "hold-out of 50 queries" in result.trade_off()


def test_folds_are_balanced_within_every_stratum_and_follow_the_seed():
    strata = ["a"] * 23 + ["b"] * 11 + [None] * 6
    fold_of = folds_of(40, 5, 9, strata)
    assert np.bincount(fold_of).tolist() == [8, 8, 8, 8, 8]
    for label in ("a", "b"):
        counts = np.bincount(fold_of[[i for i, s in enumerate(strata) if s == label]], minlength=5)
        assert counts.max() - counts.min() <= 1
    assert folds_of(40, 5, 9, strata).tolist() == fold_of.tolist()
    assert folds_of(40, 5, 10, strata).tolist() != fold_of.tolist()


def test_ties_go_to_the_first_cell_in_grid_order():
    values = np.array([[0.1, 0.3], [0.3, 0.1], [0.0, 0.0]])
    assert choose(values) == 0


@pytest.mark.parametrize("kwargs, message", [
    ({"folds": 1}, "folds must be an integer of at least 2"),
    ({"folds": 50}, "50 folds need at least 50 queries"),
    ({"reference": "nope"}, "is not a cell"),
])
def test_bad_arguments_are_refused(kwargs, message):
    values = np.zeros((3, 10))
    with pytest.raises(ValueError, match=message):
        analyze_sweep(values, ["a", "b", "c"], _ids(10), "nDCG@10", **kwargs)


def test_the_seeds_trade_off_a_50_query_hold_out_is_wider_than_the_three_points_it_removes():
    """The seed's sweep: 24 cells over 140 queries, the best reading 0.692 on all of them and 0.661
    when chosen on 90 and scored on the held-out 50. On a grid whose noise gives that optimism
    (about 0.03), the hold-out's interval is wider than the bias it removes, and five-fold
    cross-validation's is narrower than the hold-out's."""
    rng = np.random.default_rng(140)
    widths, optimism, cv_widths = [], [], []
    for rep in range(40):
        difficulty = rng.uniform(0.36, 0.96, size=N)  # true mean 0.661 for every cell
        values = difficulty[None, :] + rng.normal(0.0, 0.18, size=(CELLS, N))
        result = analyze_sweep(values, [f"c{i}" for i in range(CELLS)], _ids(), "nDCG@10", tuning=_ids()[:90],
                               samples=500, seed=rep)
        widths.append(result.held_out.estimate.width)
        cv_widths.append(result.cross_validated.width)
        optimism.append(result.maximum_estimate.mean - 0.661)
    assert 0.02 < np.mean(optimism) < 0.04  # the seed's "three points"
    assert np.mean(widths) > np.mean(optimism)  # the hold-out pays more width than the bias it removes
    assert np.mean(cv_widths) < np.mean(widths)


def test_each_cell_against_the_config_as_it_stands_is_a_paired_difference_with_its_interval():
    rng = np.random.default_rng(8)
    values = _grid(rng, rng.normal(0, 0.02, size=CELLS))
    names = [f"c{i}" for i in range(CELLS)]
    result = analyze_sweep(values, names, _ids(), "nDCG@10", samples=1000, seed=4, reference="c3")
    for i, cell in enumerate(result.cells):
        vs = cell.against_reference
        assert vs.mean == pytest.approx(float(np.mean(values[i] - values[3])), abs=1e-12)
        assert vs.ci_low <= vs.mean <= vs.ci_high
    assert result.cell("c3").against_reference.width == 0.0
    # paired: the shared per-query difficulty cancels (here it is wider than either mean's spread alone)
    unpaired = np.sqrt(values[0].var(ddof=1) / N + values[3].var(ddof=1) / N) * 3.92
    assert result.cell("c0").against_reference.width < unpaired
    without = analyze_sweep(values, names, _ids(), "nDCG@10", samples=200, seed=4)
    assert all(cell.against_reference is None for cell in without.cells)
    assert without.to_dict()["cells"][0]["delta_vs_reference"] is None


def test_choices_follow_exact_arithmetic_where_rounding_would_break_a_tie():
    """Reciprocal ranks (1, 1/2, 1/3, 1/4) make exact ties between cells whose float means differ
    in the last bit: every fold's choice is the first cell whose exact (Fraction) training mean is
    the best, as documented, over 300 small grids of three cells."""
    from fractions import Fraction

    rng = np.random.default_rng(3)
    ties_seen = 0
    for trial in range(300):
        ranks = rng.integers(1, 5, size=(3, 12))
        values = 1.0 / ranks
        result = analyze_sweep(values, ["a", "b", "c"], _ids(12), "RR@10", folds=3, samples=50, seed=7)
        fold_of = folds_of(12, 3, 7)
        for fold, chosen in enumerate(result.fold_choices):
            train = [q for q in range(12) if fold_of[q] != fold]
            exact = [sum(Fraction(1, int(ranks[c, q])) for q in train) for c in range(3)]
            assert chosen == "abc"[exact.index(max(exact))], (trial, fold)
            ties_seen += exact.count(max(exact)) > 1
        exact_all = [sum(Fraction(1, int(r)) for r in ranks[c]) for c in range(3)]
        assert result.maximum == "abc"[exact_all.index(max(exact_all))]
        for _ in range(20):  # any training set: choose() against exact means
            columns = np.flatnonzero(rng.random(12) < 0.7)
            if len(columns):
                exact = [sum(Fraction(1, int(ranks[c, q])) for q in columns) for c in range(3)]
                assert choose(values, columns) == exact.index(max(exact))
    assert ties_seen > 20  # the case under test did occur


def test_ties_within_the_tolerance_are_ties_and_real_differences_are_not():
    values = np.array([[0.5, 0.5], [0.5 + 1e-12, 0.5], [0.5 + 1e-6, 0.5]])
    assert choose(values[:2]) == 0
    assert choose(values) == 2


@pytest.mark.parametrize("tuning, holdout, note", [
    (["nope"], None, "names no judged golden query"),
    ([f"q{i:03d}" for i in range(9)], None, "leaves 1 held-out judged query: too few"),
    ([f"q{i:03d}" for i in range(5)], ["q000", "q001", "q008", "q009"], "2 held-out queries are also tuning queries"),
])
def test_a_tuning_split_that_gives_no_honest_hold_out_says_what_is_wrong(tuning, holdout, note):
    values = np.random.default_rng(1).random((3, 10))
    result = analyze_sweep(values, ["a", "b", "c"], _ids(10), "nDCG@10", tuning=tuning, holdout=holdout,
                           folds=2, samples=50)
    assert note in result.held_out_note and note in result.trade_off()
    assert result.trade_off()[0].isupper() and result.trade_off().endswith(".")
