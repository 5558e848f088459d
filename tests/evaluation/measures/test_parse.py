"""Measure names: the syntax is the value (ir_measures style)."""

from __future__ import annotations

import dataclasses

import pytest

from gate.common.errors import InputError
from gate.evaluation.measures import (
    AP,
    NDCG,
    REGISTRY,
    RR,
    Judged,
    Measure,
    Precision,
    Recall,
    Success,
    known_measures,
    parse_measure,
    parse_measures,
)

CANONICAL = [
    "nDCG",
    "nDCG@10",
    "AP",
    "AP@100",
    "AP(rel=2)",
    "AP(rel=2)@100",
    "RR",
    "RR@10",
    "RR(rel=2)@10",
    "R@100",
    "R(rel=2)@100",
    "P@10",
    "P(rel=2)@10",
    "Success@10",
    "Success(rel=2)@10",
    "Judged@10",
]


@pytest.mark.parametrize("name", CANONICAL)
def test_canonical_names_round_trip(name):
    measure = parse_measure(name)
    assert str(measure) == name
    assert measure.name == name
    assert parse_measure(str(measure)) == measure
    assert eval(repr(measure), {"parse_measure": parse_measure}) == measure


def test_parsed_fields_and_classes():
    assert parse_measure("nDCG@10") == NDCG(cutoff=10)
    assert parse_measure("AP") == AP()
    assert parse_measure("AP(rel=2)@100") == AP(cutoff=100, rel=2)
    assert parse_measure("RR(rel=2)@10") == RR(cutoff=10, rel=2)
    assert parse_measure("R@100") == Recall(cutoff=100)
    assert parse_measure("P(rel=3)@5") == Precision(cutoff=5, rel=3)
    assert parse_measure("Success@1") == Success(cutoff=1)
    assert parse_measure("Judged@10") == Judged(cutoff=10)
    assert isinstance(parse_measure("AP"), Measure)


def test_non_canonical_spellings_are_canonicalized():
    # rel after the cutoff (ir_measures accepts both orders), spaces, rel=1 spelled out.
    assert str(parse_measure("RR@10(rel=2)")) == "RR(rel=2)@10"
    assert str(parse_measure(" AP( rel = 2 ) ")) == "AP(rel=2)"
    assert str(parse_measure("P(rel=1)@10")) == "P@10"
    assert str(parse_measure("nDCG@010")) == "nDCG@10"


def test_a_measure_object_parses_to_itself():
    m = AP(cutoff=5)
    assert parse_measure(m) is m


def test_with_default_rel_fills_only_an_open_rel():
    assert str(parse_measure("AP").with_default_rel(2)) == "AP(rel=2)"
    assert str(parse_measure("RR@10").with_default_rel(3)) == "RR(rel=3)@10"
    assert str(parse_measure("AP").with_default_rel(1)) == "AP"
    # The name fixed it: the default does not override.
    assert str(parse_measure("AP(rel=3)").with_default_rel(2)) == "AP(rel=3)"
    assert str(parse_measure("P(rel=1)@10").with_default_rel(2)) == "P@10"
    # Graded / coverage measures take no rel: unchanged.
    assert parse_measure("nDCG@10").with_default_rel(2) == NDCG(cutoff=10)
    assert parse_measure("Judged@10").with_default_rel(2) == Judged(cutoff=10)


def test_threshold_defaults_to_one():
    assert parse_measure("AP").threshold == 1
    assert parse_measure("AP(rel=2)").threshold == 2


def test_measures_are_frozen_and_hashable():
    m = parse_measure("nDCG@10")
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.cutoff = 5  # type: ignore[misc]
    assert len({parse_measure("AP"), parse_measure("AP"), parse_measure("AP@10")}) == 2


def test_parse_measures_drops_repeats_in_order():
    assert [str(m) for m in parse_measures(["AP", "nDCG@10", "AP", "RR@10(rel=2)", "RR(rel=2)@10"])] == [
        "AP",
        "nDCG@10",
        "RR(rel=2)@10",
    ]


def test_registry_has_every_measure_with_its_formula_documented():
    assert set(known_measures()) == {"nDCG", "AP", "RR", "R", "P", "Success", "Judged"}
    for name, cls in REGISTRY.items():
        assert cls.NAME == name
        doc = (cls.__doc__ or "") + (__import__(cls.__module__, fromlist=["x"]).__doc__ or "")
        assert "=" in doc, f"{name} has no formula in its module docstring"


@pytest.mark.parametrize(
    "text, suggestion",
    [
        ("ndcg@10", "nDCG@10"),
        ("NDCG@10", "nDCG@10"),
        ("MAP", "AP"),
        ("map", "AP"),
        ("MRR@10", "RR@10"),
        ("recip_rank", "RR"),
        ("Recall@100", "R@100"),
        ("ndcg_cut_10", "nDCG@10"),
        ("P_10", "P@10"),
        ("recall_100", "R@100"),
        ("success_10", "Success@10"),
        ("RR@@10", "RR@10"),
        ("judged@10", "Judged@10"),
    ],
)
def test_unknown_names_suggest_the_right_one(text, suggestion):
    with pytest.raises(InputError) as info:
        parse_measure(text)
    err = info.value
    assert err.path is None and err.line is None
    assert err.message.startswith(f"unknown measure {text!r} (known: AP, Judged, nDCG, P, R, RR, Success)")
    assert f"did you mean {suggestion!r}?" in err.message


@pytest.mark.parametrize("text", ["", "Foo", "xyzzy@10", "AP(rel=2)(rel=3)", "AP@10(rel=x)", "AP rel=2", "@10"])
def test_bad_syntax_is_an_unknown_measure(text):
    with pytest.raises(InputError, match=r"^unknown measure .* \(known: "):
        parse_measure(text)


@pytest.mark.parametrize(
    "text, message",
    [
        ("nDCG(rel=2)@10", "nDCG takes no rel"),
        ("Judged(rel=2)@10", "Judged takes no rel"),
        ("P", "P needs a cutoff"),
        ("R", "R needs a cutoff"),
        ("Success", "Success needs a cutoff"),
        ("Judged", "Judged needs a cutoff"),
        ("P@0", "cutoff must be a positive integer"),
        ("nDCG@-5", "cutoff must be a positive integer"),
        ("AP(rel=0)", "rel must be a positive integer"),
        ("AP(rel=-1)", "rel must be a positive integer"),
    ],
)
def test_invalid_parameters_say_what_is_wrong(text, message):
    with pytest.raises(InputError, match=message):
        parse_measure(text)


def test_non_strings_are_rejected():
    with pytest.raises(InputError):
        parse_measure(10)  # type: ignore[arg-type]
