"""What "Where the movement is" says: rounding residues are no movement, and "concentrated in N
queries" names the queries carrying the net effect (gate.statistics.factorial.concentration, read
through analyze_grid and the rendered attribution section)."""

from __future__ import annotations

import numpy as np
import pytest

from gate.rendering.sections import render_attribution
from gate.report.spine import Attribution
from gate.statistics.attribution import analyze_grid

FACTORS = ["model", "corpus"]


def additive_grid(n: int, interaction) -> dict:
    """A 2x2 grid built from decimal per-query parts: base a, model gain m, corpus gain c, plus
    ``interaction`` in the both-new cell. In exact arithmetic the interaction contrast
    (nn - on) - (no - oo) is exactly ``interaction``; in floating point the queries where it is 0
    come out as +-1e-17 residues."""
    a = np.array([(0.1, 0.2, 0.3, 0.4)[i % 4] for i in range(n)])
    m = np.array([(0.2, 0.1, 0.3)[i % 3] for i in range(n)])
    c = np.array([(0.7, 0.3, 0.4, 0.5, 0.6)[i % 5] for i in range(n)])
    return {("old", "old"): a, ("new", "old"): a + m, ("old", "new"): a + c,
            ("new", "new"): a + m + c + np.asarray(interaction)}


def raw_interaction(values) -> np.ndarray:
    return ((values[("new", "new")] - values[("old", "new")])
            - (values[("new", "old")] - values[("old", "old")]))


def attribute(values, n: int, samples: int = 500):
    r = analyze_grid(FACTORS, values, [f"q{i:03d}" for i in range(n)], samples=samples, seed=7)
    d = r.to_dict()
    return r, d, render_attribution(Attribution.from_dict(d))


def row(text: str, start: str) -> str:
    """The one line of the "Where the movement is" table starting with ``start``."""
    table = text.split("### Where the movement is", 1)[1]
    lines = [line for line in table.splitlines() if line.startswith(start)]
    assert len(lines) == 1, lines
    return lines[0]


def test_seed_two_by_two_interaction_counts_the_designed_movers_only():
    # The design: the interaction is -0.05 on 68 of 140 queries and 0 on the other 72.
    n = 140
    t = np.zeros(n)
    t[:68] = -0.05
    values = additive_grid(n, t)
    raw = raw_interaction(values)
    residues = (raw != 0) & (np.abs(raw) < 1e-12)
    assert residues[68:].sum() > 20 and (raw[68:][residues[68:]] > 0).any()  # the arithmetic leaves some
    r, d, text = attribute(values, n)
    conc = {c["id"]: c for c in d["concentration"]}["model×corpus"]
    assert (conc["same_sign_queries"], conc["opposite_sign_queries"]) == (68, 0)
    assert conc["opposite_sign_total"] == 0.0
    assert row(text, "| model×corpus |") == (
        "| model×corpus | — | -0.024 | concentrated in 68 queries, each moving about -0.050 | 68 of 140 | -0.050 "
        "| -3.400 (68) | 0.000 (0) |")
    # the queries that did not move are exact zeros in every statistic, not residues
    assert np.count_nonzero(r.contrasts["model×corpus"]) == 68


def one_sign_residue_grid(n: int = 140, k: int = 12) -> dict:
    """An interaction that is exactly 0 on every query: (1.0 - 0.8) - (0.3 - 0.1) on the first
    ``k`` queries (-2.8e-17 in floating point, every one the same sign), 0.5 everywhere else."""
    values = {cell: np.full(n, 0.5) for cell in [("old", "old"), ("new", "old"), ("old", "new"), ("new", "new")]}
    for cell, x in zip([("old", "old"), ("new", "old"), ("old", "new"), ("new", "new")], [0.1, 0.3, 0.8, 1.0]):
        values[cell][:k] = x
    return values


def test_exactly_zero_interaction_reads_as_no_movement():
    values = one_sign_residue_grid()
    raw = raw_interaction(values)
    assert np.count_nonzero(raw) == 12 and np.all(raw[:12] < 0)  # residues only, all one sign
    r, d, text = attribute(values, 140)
    e = r.effect("model×corpus")
    assert (e.estimate, e.ci_low, e.ci_high) == (0.0, 0.0, 0.0)  # not an interval excluding zero
    assert e.p == 1.0
    assert row(text, "| model×corpus |") == (
        "| model×corpus | — | 0.000 | no query moved | — | — | 0.000 (0) | 0.000 (0) |")
    assert "| model×corpus | — | 0.000 | 0.000 to 0.000 | 1.0000 |" in text
    assert "each moving about 0.000" not in text  # the simple effects do move: 12 queries, +0.200 each
    assert "| switching model | corpus new | +0.017 | concentrated in 12 queries, each moving about +0.200 |" in text
    assert "Switching model is worth the same (to 3 decimals) whether corpus is new or old." in d["sentences"]


def demo_like_values(n: int = 131):
    """Switching model on the old corpus: +0.020 net from 46 gains (25 of +0.302, 21 of +0.089) and
    62 losses of -0.11; 23 queries do not move. 80% of the gains sit in the 25 large ones."""
    d = np.zeros(n)
    d[:25] = 0.302
    d[25:46] = 0.089
    d[46:108] = -0.11
    base = np.full(n, 0.5)
    corpus = np.full(n, 0.1)
    return {("old", "old"): base, ("new", "old"): base + d, ("old", "new"): base + corpus,
            ("new", "new"): base + d + corpus}


def test_net_effect_with_many_opposite_movers_is_a_redistribution_not_concentrated():
    r, d, text = attribute(demo_like_values(), 131)
    assert f"{r.effect('model', corpus='old').estimate:+.3f}" == "+0.020"
    line = row(text, "| switching model | corpus old |")
    assert "concentrated in 25 queries, each moving about +0.302" not in text
    assert line == ("| switching model | corpus old | +0.020 | redistribution: 46 queries gained +9.419 in total, "
                    "62 lost -6.820 | — | — | +9.419 (46) | -6.820 (62) |")
    sentence = {c["id"]: c for c in d["concentration"]}["model|corpus=old"]["sentence"]
    assert sentence == ("Switching model with corpus old (+0.020): redistribution: 46 queries gained +9.419 in "
                        "total, 62 lost -6.820, netting +2.599 (under 50% of the gain).")
    assert sentence in d["readings"]["concentration"]


def test_concentrated_means_the_fewest_queries_carrying_the_net():
    # 10 gains of +0.3 and 10 losses of -0.05 on 40 queries: the net +2.5 takes 9 of the gains
    n = 40
    d = np.zeros(n)
    d[:10] = 0.3
    d[10:20] = -0.05
    base = np.full(n, 0.4)
    values = {("old", "old"): base, ("new", "old"): base + d, ("old", "new"): base, ("new", "new"): base + d}
    r, out, text = attribute(values, n)
    assert row(text, "| switching model | corpus old |") == (
        "| switching model | corpus old | +0.062 | concentrated in 9 queries, each moving about +0.300 | 9 of 40 "
        "| +0.300 | +3.000 (10) | -0.500 (10) |")
    conc = {c["id"]: c for c in out["concentration"]}["model|corpus=old"]
    assert conc["sentence"] == (
        "Switching model with corpus old (+0.062): concentrated in 9 queries, each moving about +0.300, which "
        "carry the net +2.500 summed over 40 queries (10 queries moved that way, +3.000 in total; the 10 moving "
        "the other way sum to -0.500).")
    # switching corpus changes nothing: no movement, the same way an exactly zero interaction reads
    assert row(text, "| switching corpus | model old |") == (
        "| switching corpus | model old | 0.000 | no query moved | — | — | 0.000 (0) | 0.000 (0) |")


@pytest.mark.parametrize("k, expected", [
    (1, "concentrated in 1 query, each moving about +0.500"),
    (2, "concentrated in 2 queries, each moving about +0.500"),
    (3, "spread over 3 of 4 queries, each moving about +0.500"),
])
def test_counts_and_nouns_agree(k, expected):
    n = 4
    d = np.zeros(n)
    d[:k] = 0.5
    base = np.full(n, 0.25)
    values = {("old", "old"): base, ("new", "old"): base + d, ("old", "new"): base, ("new", "new"): base + d}
    _, _, text = attribute(values, n, samples=200)
    assert f"| switching model | corpus old | {k * 0.5 / n:+.3f} | {expected} |" in text
