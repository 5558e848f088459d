"""2^k factorial contrasts and concentration (gate.statistics.factorial)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from gate.statistics.factorial import (
    FactorialGrid,
    Term,
    concentration,
    grid_cells,
    terms,
)

FACTORS3 = ("model", "corpus", "reranker")


def model_grid(n: int = 25, seed: int = 3):
    """Per-query values from a full factorial model with known per-query coefficients.

    y(a, b, c) = mu + A a + B b + C c + AB ab + AC ac + BC bc + ABC abc, with a,
    b, c in {0 (old), 1 (new)} and every coefficient a per-query array.
    """
    rng = np.random.default_rng(seed)
    coef = {name: rng.normal(0, 0.1, n) for name in ("A", "B", "C", "AB", "AC", "BC", "ABC")}
    mu = rng.uniform(0.3, 0.7, n)
    values = {}
    for cell in grid_cells(3):
        a, b, c = (1.0 if level == "new" else 0.0 for level in cell)
        values[cell] = (mu + coef["A"] * a + coef["B"] * b + coef["C"] * c + coef["AB"] * a * b
                        + coef["AC"] * a * c + coef["BC"] * b * c + coef["ABC"] * a * b * c)
    return values, coef


def test_grid_cells_and_terms():
    assert grid_cells(1) == [("old",), ("new",)]
    assert grid_cells(2) == [("old", "old"), ("old", "new"), ("new", "old"), ("new", "new")]
    two = terms(("model", "corpus"))
    assert [t.id for t in two] == [
        "model|corpus=old", "model|corpus=new", "corpus|model=old", "corpus|model=new", "model×corpus",
    ]
    three = terms(FACTORS3)
    assert sum(t.order == 1 for t in three) == 12
    assert sum(t.order == 2 for t in three) == 6
    assert [t.id for t in three if t.order == 3] == ["model×corpus×reranker"]
    assert Term(("model", "corpus"), (("reranker", "old"),)).id == "model×corpus|reranker=old"
    with pytest.raises(ValueError, match="duplicate"):
        terms(("a", "a"))
    with pytest.raises(ValueError, match="at least one"):
        terms(())


def test_two_by_two_by_hand():
    values = {
        ("old", "old"): np.array([0.5, 0.7]),
        ("new", "old"): np.array([0.6, 0.7]),
        ("old", "new"): np.array([0.9, 0.7]),
        ("new", "new"): np.array([0.6, 0.8]),
    }
    g = FactorialGrid(("model", "corpus"), values)
    by_id = {t.id: g.contrast(t) for t in terms(g.factors)}
    np.testing.assert_allclose(by_id["model|corpus=old"], [0.1, 0.0], atol=1e-15)
    np.testing.assert_allclose(by_id["model|corpus=new"], [-0.3, 0.1], atol=1e-15)
    np.testing.assert_allclose(by_id["corpus|model=old"], [0.4, 0.0], atol=1e-15)
    np.testing.assert_allclose(by_id["corpus|model=new"], [0.0, 0.1], atol=1e-15)
    inter = Term(("model", "corpus"), ())
    ways = g.ways(inter)
    # model's effect when corpus is new minus when old; corpus's effect when model new minus when old
    np.testing.assert_allclose(ways["model"], [-0.4, 0.1], atol=1e-15)
    np.testing.assert_allclose(ways["corpus"], [-0.4, 0.1], atol=1e-15)


def test_three_factor_grid_math():
    values, coef = model_grid()
    g = FactorialGrid(FACTORS3, values)
    A, B, C = FACTORS3
    lv = {"old": 0.0, "new": 1.0}
    for t in terms(FACTORS3):
        given = t.given_dict()
        if t.order == 1:
            f = t.factors[0]
            # the simple effect of one factor at the others' levels, from the model
            if f == A:
                b, c = lv[given[B]], lv[given[C]]
                want = coef["A"] + coef["AB"] * b + coef["AC"] * c + coef["ABC"] * b * c
            elif f == B:
                a, c = lv[given[A]], lv[given[C]]
                want = coef["B"] + coef["AB"] * a + coef["BC"] * c + coef["ABC"] * a * c
            else:
                a, b = lv[given[A]], lv[given[B]]
                want = coef["C"] + coef["AC"] * a + coef["BC"] * b + coef["ABC"] * a * b
            # and equal to the difference of the two cells
            hi = g.cell({**given, f: "new"})
            lo = g.cell({**given, f: "old"})
            np.testing.assert_array_equal(g.contrast(t), hi - lo)
        elif t.order == 2:
            (third, level), = t.given
            x = lv[level]
            key = "".join(sorted({A: "A", B: "B", C: "C"}[f] for f in t.factors))
            want = coef[key] + coef["ABC"] * x
            # the two-way interaction at a level of the third factor is a difference of simple effects
            f1, f2 = t.factors
            s_new = g.contrast(Term((f1,),
                                    tuple(sorted({**given, f2: "new"}.items(), key=lambda kv: FACTORS3.index(kv[0])))))
            s_old = g.contrast(Term((f1,),
                                    tuple(sorted({**given, f2: "old"}.items(), key=lambda kv: FACTORS3.index(kv[0])))))
            np.testing.assert_allclose(g.contrast(t), s_new - s_old, atol=1e-15)
        else:
            want = coef["ABC"]
            # the three-way interaction is a difference of two-way interactions
            ab_new = g.contrast(Term((A, B), ((C, "new"),)))
            ab_old = g.contrast(Term((A, B), ((C, "old"),)))
            np.testing.assert_allclose(g.contrast(t), ab_new - ab_old, atol=1e-15)
        np.testing.assert_allclose(g.contrast(t), want, atol=1e-12)
        # every way of building the term agrees
        for v in g.ways(t).values():
            np.testing.assert_allclose(v, g.contrast(t), atol=1e-14)


def test_three_way_interaction_is_the_signed_cell_sum():
    values, _ = model_grid(n=7, seed=11)
    g = FactorialGrid(FACTORS3, values)
    signed_sum = sum(
        (-1) ** sum(level == "old" for level in cell) * values[cell] for cell in grid_cells(3)
    )
    np.testing.assert_allclose(g.contrast(Term(FACTORS3, ())), signed_sum, atol=1e-14)


def test_grid_rejects_incomplete_or_misaligned():
    good = {c: np.zeros(3) for c in grid_cells(2)}
    with pytest.raises(ValueError, match="no values"):
        FactorialGrid(("a", "b"), {c: v for c, v in good.items() if c != ("new", "new")})
    with pytest.raises(ValueError, match="aligned"):
        FactorialGrid(("a", "b"), {**good, ("new", "new"): np.zeros(4)})
    with pytest.raises(ValueError, match="non-finite"):
        FactorialGrid(("a", "b"), {**good, ("new", "new"): np.array([0.0, np.nan, 0.0])})
    with pytest.raises(ValueError, match="not a cell"):
        FactorialGrid(("a", "b"), {**good, ("new", "newer"): np.zeros(3)})


def reference_concentration(d, share=1.0):
    """The definition, written out with a loop: the fewest same-sign queries, largest first, whose
    changes add up to ``share`` of the net."""
    net = sum(d)
    sign = 1 if net >= 0 else -1
    same = sorted((x for x in d if x * sign > 0), key=abs, reverse=True)
    total = sum(same)
    running, count = 0.0, 0
    for x in same:
        running += abs(x)
        count += 1
        if running >= share * abs(net) - 1e-12:
            break
    return sign, count, sum(same[:count]) / count, total, sum(x for x in d if x * sign < 0)


def test_concentrated_movement():
    # 140 queries: 19 move by about +0.2 each, a few small wobbles either way.
    rng = np.random.default_rng(5)
    d = np.zeros(140)
    d[:19] = rng.uniform(0.15, 0.25, 19)
    d[19:40] = rng.uniform(-0.01, 0.01, 21)
    rng.shuffle(d)
    ids = [f"q{i:03d}" for i in range(140)]
    c = concentration(d, ids)
    sign, count, mean_move, same_total, opp_total = reference_concentration(d.tolist())
    assert c.sign == sign == 1
    assert c.queries == count
    assert c.mean_movement == pytest.approx(mean_move, abs=1e-12)
    assert c.same_sign_total == pytest.approx(same_total, abs=1e-12)
    assert c.opposite_sign_total == pytest.approx(opp_total, abs=1e-12)
    assert c.net == pytest.approx(d.sum(), abs=1e-12)
    assert not c.redistribution
    assert c.queries <= 19
    top = sorted(range(140), key=lambda i: -d[i])[: c.queries]
    assert list(c.query_ids) == [ids[i] for i in top]
    # the chosen queries carry the net: their changes add up to it, one fewer would not
    assert d[top].sum() >= d.sum() - 1e-12 > d[top[:-1]].sum()
    assert c.phrase() == f"concentrated in {c.queries} queries, each moving about {c.mean_movement:+.3f}"
    sentence = c.sentence("Switching model with corpus old (+0.024)")
    assert sentence.startswith(f"Switching model with corpus old (+0.024): concentrated in {c.queries} queries")
    assert f"which carry the net {d.sum():+.3f} summed over 140 queries" in sentence


def test_concentrated_reading_carries_the_net_not_a_share_of_the_gains():
    # ten gains of +0.3 (+3.0), ten losses of -0.05 (-0.5): the net +2.5 needs nine of the gains
    # (eight, 80% of the gains, would carry only +2.4 of it)
    d = np.array([0.3] * 10 + [-0.05] * 10 + [0.0] * 5)
    c = concentration(d)
    assert (c.queries, c.same_sign_queries, c.opposite_sign_queries) == (9, 10, 10)
    assert not c.redistribution
    assert c.phrase() == "concentrated in 9 queries, each moving about +0.300"
    assert c.sentence("Switching model (+0.100)") == (
        "Switching model (+0.100): concentrated in 9 queries, each moving about +0.300, which carry the net "
        "+2.500 summed over 25 queries (10 queries moved that way, +3.000 in total; the 10 moving the other "
        "way sum to -0.500).")
    # one query carrying it all: the count and the noun agree
    c = concentration(np.array([0.0, 0.4, 0.0]))
    assert c.phrase() == "concentrated in 1 query, each moving about +0.400"
    assert c.sentence("Switching model (+0.133)") == (
        "Switching model (+0.133): concentrated in 1 query, each moving about +0.400, which carries the net "
        "+0.400 summed over 3 queries (no query moved the other way).")


def test_redistribution_not_concentrated():
    # gains of 3.0 and losses of 2.7: net 0.3 < 0.5 * 3.0
    d = np.array([1.0, 1.0, 1.0, -0.9, -0.9, -0.9, 0.0])
    c = concentration(d)
    assert c.sign == 1
    assert c.net == pytest.approx(0.3)
    assert c.same_sign_total == pytest.approx(3.0)
    assert c.opposite_sign_total == pytest.approx(-2.7)
    assert c.redistribution
    assert c.phrase() == "redistribution: 3 queries gained +3.000 in total, 3 lost -2.700"
    assert c.sentence("Switching model in production (+0.043)") == (
        "Switching model in production (+0.043): redistribution: 3 queries gained +3.000 in total, 3 lost "
        "-2.700, netting +0.300 (under 50% of the gain).")
    # a negative net with the same balance
    c = concentration(-d)
    assert c.sign == -1 and c.redistribution and c.same_sign_total == pytest.approx(-3.0)
    assert c.phrase() == "redistribution: 3 queries lost -3.000 in total, 3 gained +2.700"
    # the other way cancels more than the net left: |net| 0.4 < 0.5 * same-sign total 1.0
    c = concentration(np.array([1.0, -0.6]))
    assert c.redistribution and c.phrase() == "redistribution: 1 query gained +1.000 in total, 1 lost -0.600"
    # outside the threshold: |net| 0.6 >= 0.5 * same-sign total 1.0
    c = concentration(np.array([1.0, -0.4]))
    assert not c.redistribution and c.phrase() == "concentrated in 1 query, each moving about +1.000"


def test_concentration_edge_cases():
    c = concentration(np.zeros(4))
    assert c.sign == 0 and c.queries == 0 and not c.redistribution
    assert c.phrase() == "no query moved"
    c = concentration(np.array([0.5]))
    assert (c.queries, c.mean_movement) == (1, 0.5)
    c = concentration(np.array([0.1, -0.1]))  # net exactly 0 with movement: a redistribution
    assert c.redistribution
    # five equal movements carry the net only all together
    c = concentration(np.full(5, 0.1))
    assert c.queries == 5
    with pytest.raises(ValueError):
        concentration(np.array([]))
    with pytest.raises(ValueError):
        concentration(np.array([1.0, np.inf]))
    with pytest.raises(ValueError):
        concentration(np.array([1.0]), ["a", "b"])


def test_rounding_residues_are_not_movement():
    # (1.0 - 0.8) - (0.3 - 0.1) is 0 in exact arithmetic and -2.8e-17 in floating point
    oo, no, on, nn = 0.1, 0.3, 0.8, 1.0
    assert (nn - on) - (no - oo) != 0.0
    values = {("old", "old"): [oo, 0.5], ("new", "old"): [no, 0.5], ("old", "new"): [on, 0.5],
              ("new", "new"): [nn, 0.5]}
    g = FactorialGrid(("model", "corpus"), values)
    inter = Term(("model", "corpus"), ())
    raw = g.contrast(inter)
    assert raw[0] != 0.0 and raw[1] == 0.0
    assert g.term_cells(inter) == grid_cells(2)
    tol = g.tolerance(inter)
    assert np.all(tol < 1e-14) and abs(raw[0]) <= tol[0]
    assert g.settled(inter).tolist() == [0.0, 0.0]
    # the residue counted as a query that moved is the bug; zeroed, nothing moved
    assert concentration(raw).moved
    c = concentration(raw, tolerance=tol)
    assert not c.moved and c.phrase() == "no query moved"
    # a real difference is far above the tolerance and is kept
    simple = Term(("model",), (("corpus", "old"),))
    assert g.settled(simple) == pytest.approx([0.2, 0.0])
    assert g.term_cells(simple) == [("old", "old"), ("new", "old")]


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_ways_agree_for_any_k(k):
    rng = np.random.default_rng(k)
    factors = tuple(f"f{i}" for i in range(k))
    values = {cell: rng.uniform(0, 1, 9) for cell in grid_cells(k)}
    g = FactorialGrid(factors, values)
    all_terms = terms(factors)
    assert len(all_terms) == sum(
        len(list(itertools.combinations(factors, r))) * 2 ** (k - r) for r in range(1, k + 1)
    )
    for t in all_terms:
        ways = list(g.ways(t).values())
        for w in ways[1:]:
            np.testing.assert_allclose(w, ways[0], atol=1e-13)
