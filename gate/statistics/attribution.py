"""Attribution of a retrieval change to its parts: the 2^k factorial grid.

A candidate usually differs from its baseline in several changes at once (a
model, a corpus fix, a reranker). Each change is a *factor* with two levels,
``old`` (the baseline's value) and ``new`` (the candidate's); running every
combination (``2**k`` cells) on the same queries, judgments and corpus
snapshots is the only way to say what each change did. Subtracting one delta
from another assumes the changes add up, which is exactly what is unknown.

:func:`analyze_grid` takes per-query values of every cell and reports

* every simple effect (a factor's effect at each combination of the others'
  levels); the one with every other factor at its new level is what ships,
  labelled ``in production`` and used as the headline;
* every interaction as a difference of lower-order effects, computed from
  each of its factors' simple effects and checked to agree;
* a paired bootstrap 95% interval for each (one set of resample indices for
  all of them, :func:`gate.statistics.bootstrap.bootstrap_means`; intervals are
  *not* adjusted for multiplicity) and a two-sided sign-flip p-value, Holm
  adjusted across all effects;
* how concentrated each effect is over the queries (the fewest queries carrying its net change,
  or a redistribution when the queries moving the other way cancel most of it);
* the wall time of each cell and of the grid.

Before computing anything the grid is verified: every cell must carry the
same query-set and qrels fingerprints, and one corpus snapshot per level of
the corpus factor (one overall when no factor changes the corpus). A grid
that fails is refused with :class:`GridRefused`; so is a cell run that misses
golden queries (:func:`factorial_from_runs`), since a missing query scoring 0
in one cell would look like an effect.

With more than ``max_factors`` changes (default 3) or with attribution
disabled, :func:`bundle_result` labels the change a bundle and apportions no
credit.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gate.common.errors import InputError, UsageError
from gate.common.numbers import signed
from gate.evaluation.evaluate import evaluate
from gate.evaluation.measures import parse_measure
from gate.inputs.fingerprint import Fingerprint, qrels_fingerprint, queries_fingerprint, query_ids_fingerprint
from gate.inputs.readers.qrels import load_qrels
from gate.inputs.readers.queries import load_queries
from gate.inputs.readers.records import Qrels, QuerySet
from gate.inputs.readers.runs import read_run
from gate.inputs.universe import Universe, query_universe, require_overlap
from gate.runs.produce import answered_empty, missing_queries, sidecar_of
from gate.statistics.bootstrap import (
    DEFAULT_SAMPLES,
    DEFAULT_SEED,
    bootstrap_means,
    check_method,
    check_samples,
    check_seed,
    confidence_interval,
)
from gate.statistics.factorial import (
    CONCENTRATION_SHARE,
    LEVELS,
    NEW,
    OLD,
    REDISTRIBUTION_RATIO,
    FactorialGrid,
    Term,
    check_factors,
    concentration,
    grid_cells,
    terms,
)
from gate.statistics.holm import holm
from gate.statistics.randomization import sign_flip_p

__all__ = [
    "DEFAULT_MAX_FACTORS",
    "CI_NOTE",
    "INTERACTION_TOLERANCE",
    "GridRefused",
    "CellProvenance",
    "Effect",
    "AttributionResult",
    "parse_factors",
    "parse_cell_levels",
    "parse_cells",
    "format_levels",
    "cell_key",
    "verify_grid",
    "analyze_grid",
    "bundle_result",
    "factorial_from_runs",
]

DEFAULT_MAX_FACTORS = 3
CI_NOTE = "unadjusted 95% CIs"
#: Largest |difference| between the ways of computing an interaction that counts as agreement.
INTERACTION_TOLERANCE = 1e-12
#: How many missing query ids a refusal quotes.
EXAMPLES = 5

Cell = tuple[str, ...]


class GridRefused(Exception):
    """The grid cannot be attributed as given; ``reason`` says why in one line.

    Callers report it as an inconclusive result (or exit 2 for bad CLI input).
    """

    def __init__(self, reason: str):
        self.reason = " ".join(str(reason).split())
        super().__init__(self.reason)


@dataclass(frozen=True)
class CellProvenance:
    """What a cell was scored against: sha256 of its query set, qrels and corpus (None = unknown)."""

    queries_sha256: str | None = None
    qrels_sha256: str | None = None
    corpus_sha256: str | None = None

    @staticmethod
    def coerce(value: CellProvenance | Mapping[str, Any] | None) -> CellProvenance:
        if value is None:
            return CellProvenance()
        if isinstance(value, CellProvenance):
            return value
        if isinstance(value, Mapping):
            unknown = set(value) - {"queries_sha256", "qrels_sha256", "corpus_sha256"}
            if unknown:
                raise ValueError(f"unknown provenance key(s): {', '.join(sorted(unknown))}")
            return CellProvenance(**{k: _sha(v) for k, v in value.items()})
        raise ValueError(f"provenance must be a CellProvenance or a mapping, got {type(value).__name__}")


def _sha(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, Fingerprint):
        return value.sha256
    return str(value)


# --------------------------------------------------------------------------- #
# Factors and cell levels
# --------------------------------------------------------------------------- #


def parse_factors(factors: Sequence[str] | str) -> tuple[str, ...]:
    """Factor names (a list, or one comma-separated string); :class:`UsageError` when unusable."""
    names = [f.strip() for f in factors.split(",")] if isinstance(factors, str) else [str(f).strip() for f in factors]
    if not names or names == [""]:
        raise UsageError("--factor: name at least one changed factor")
    for name in names:
        if not name:
            raise UsageError("--factor: empty factor name")
        bad = next((ch for ch in name if ch in ",=|×" or ch.isspace()), None)
        if bad is not None:
            raise UsageError(f"--factor '{name}': a factor name cannot contain {bad!r}")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise UsageError(f"--factor: duplicate factor name(s): {', '.join(dup)}")
    return tuple(names)


def parse_cell_levels(text: str, factors: Sequence[str]) -> Cell:
    """``"model=new,corpus=old"`` -> ``("new", "old")`` in factor order, strictly.

    Every factor must be named exactly once, with level ``old`` or ``new``;
    anything else is a :class:`UsageError` quoting the ``--cell`` value.
    """
    names = tuple(factors)
    shown = f"--cell '{text}'"
    levels: dict[str, str] = {}
    parts = str(text).split(",")
    for part in parts:
        factor, eq, level = part.partition("=")
        factor, level = factor.strip(), level.strip()
        if not part.strip():
            raise UsageError(f"{shown}: empty entry (expected 'factor=old|new' separated by commas)")
        if not eq or not factor:
            raise UsageError(f"{shown}: '{part.strip()}' is not 'factor=level'")
        if factor not in names:
            raise UsageError(f"{shown}: unknown factor '{factor}' (factors: {', '.join(names)})")
        if level not in LEVELS:
            raise UsageError(f"{shown}: level '{level}' of factor '{factor}' must be 'old' or 'new'")
        if factor in levels:
            raise UsageError(f"{shown}: factor '{factor}' is given twice")
        levels[factor] = level
    absent = [f for f in names if f not in levels]
    if absent:
        raise UsageError(f"{shown}: no level for factor(s) {', '.join(absent)}")
    return tuple(levels[f] for f in names)


def format_levels(factors: Sequence[str], cell: Cell) -> str:
    """``("new", "old")`` -> ``"model=new,corpus=old"``."""
    return ",".join(f"{f}={level}" for f, level in zip(factors, cell))


#: The most factors a grid may have (2^10 = 1,024 cells): beyond, enumerating the cells is the cost.
MAX_GRID_FACTORS = 10


def parse_cells(
    factors: Sequence[str], cells: Mapping[str, Any] | Iterable[tuple[str, Any]]
) -> dict[Cell, tuple[str, Any]]:
    """``{LEVELS: value}`` (or ``(LEVELS, value)`` pairs) -> ``{cell: (LEVELS, value)}``.

    Refuses (:class:`UsageError`) a bad LEVELS string, two entries for the
    same cell, and a grid with cells missing.
    """
    names = tuple(factors)
    if len(names) > MAX_GRID_FACTORS:
        raise UsageError(f"--factor: {len(names)} factors would need 2^{len(names)} cells; at most "
                         f"{MAX_GRID_FACTORS} factors ({2 ** MAX_GRID_FACTORS:,} cells) are supported")
    pairs = list(cells.items()) if isinstance(cells, Mapping) else list(cells)
    out: dict[Cell, tuple[str, Any]] = {}
    for text, value in pairs:
        cell = parse_cell_levels(text, names)
        if cell in out:
            raise UsageError(f"--cell '{text}': duplicate cell (already given as --cell '{out[cell][0]}')")
        out[cell] = (text, value)
    absent = [format_levels(names, c) for c in grid_cells(len(names)) if c not in out]
    if absent:
        need = 2 ** len(names)
        raise UsageError(
            f"--cell: {len(absent)} of the {need} cells of the {len(names)}-factor grid are missing: "
            f"{'; '.join(absent)}"
        )
    return out


def cell_key(factors: Sequence[str], key: Any) -> Cell:
    """A cell as a tuple of levels in factor order, from any accepted spelling.

    Accepts a tuple/list of levels in factor order, a mapping or a
    (frozen)set of ``(factor, level)`` pairs, or a ``"model=new,corpus=old"``
    string. ``ValueError`` (a :class:`UsageError` for strings) otherwise.
    """
    names = tuple(factors)
    if isinstance(key, str):
        return parse_cell_levels(key, names)
    if isinstance(key, Mapping):
        pairs = dict(key)
    elif isinstance(key, (set, frozenset)):
        pairs = dict(key)
        if len(pairs) != len(key):
            raise ValueError(f"cell {key!r} gives a factor more than one level")
    elif isinstance(key, (tuple, list)):
        if len(key) != len(names):
            raise ValueError(f"cell {key!r} has {len(key)} levels for {len(names)} factors")
        pairs = dict(zip(names, key))
    else:
        raise ValueError(f"cannot read a cell from {key!r}")
    if set(pairs) != set(names):
        raise ValueError(f"cell {key!r} must give a level for exactly the factors {', '.join(names)}")
    bad = {f: v for f, v in pairs.items() if v not in LEVELS}
    if bad:
        raise ValueError(f"cell {key!r}: levels must be 'old' or 'new'")
    return tuple(pairs[f] for f in names)


def _keyed(factors: tuple[str, ...], mapping: Mapping[Any, Any] | None, what: str) -> dict[Cell, Any]:
    out: dict[Cell, Any] = {}
    for key, value in (mapping or {}).items():
        cell = cell_key(factors, key)
        if cell in out:
            raise ValueError(f"{what}: cell {format_levels(factors, cell)} is given twice")
        out[cell] = value
    return out


# --------------------------------------------------------------------------- #
# Verification
# --------------------------------------------------------------------------- #


def _check_shared(
    factors: tuple[str, ...], values: dict[Cell, str | None], what: str, scope: str = ""
) -> str | None:
    """The one fingerprint every cell carries, None when none does; GridRefused otherwise."""
    known = {c: v for c, v in values.items() if v is not None}
    if not known:
        return None
    unknown = [c for c in values if values[c] is None]
    if unknown:
        shown = "; ".join(format_levels(factors, c) for c in unknown)
        raise GridRefused(
            f"cannot verify one {what}{scope}: {len(unknown)} cell(s) carry no {what} fingerprint ({shown}) "
            f"while {len(known)} do"
        )
    groups: dict[str, list[Cell]] = {}
    for cell, sha in known.items():
        groups.setdefault(sha, []).append(cell)
    if len(groups) > 1:
        parts = []
        for sha, cells in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            parts.append(f"{sha[:12]} in {'; '.join(format_levels(factors, c) for c in cells)}")
        raise GridRefused(
            f"cells were scored against different {what}s{scope} ({' vs '.join(parts)}): "
            f"every cell must use the same {what}, or the differences between cells are not effects"
        )
    return next(iter(groups))


def verify_grid(
    factors: Sequence[str],
    provenance: Mapping[Any, CellProvenance | Mapping[str, Any] | None] | None,
    corpus_factor: str | None = None,
) -> dict[str, Any]:
    """Check that the cells are commensurable; return what was verified.

    Every cell must carry one query-set fingerprint and one qrels fingerprint
    (all equal), and one corpus fingerprint per level of ``corpus_factor``
    (one for the whole grid when no factor changes the corpus). A fingerprint
    that no cell carries is left unverified (None in the record); one carried
    by some cells but not others cannot be verified and is refused.
    Raises :class:`GridRefused` with the reason.
    """
    names = check_factors(factors)
    if corpus_factor is not None and corpus_factor not in names:
        raise GridRefused(f"corpus factor '{corpus_factor}' is not one of the factors ({', '.join(names)})")
    given = _keyed(names, provenance, "provenance")
    cells = {c: CellProvenance.coerce(given.get(c)) for c in grid_cells(len(names))}
    queries = _check_shared(names, {c: p.queries_sha256 for c, p in cells.items()}, "query set")
    qrels = _check_shared(names, {c: p.qrels_sha256 for c, p in cells.items()}, "qrels")
    notes: list[str] = []
    if corpus_factor is None:
        one = _check_shared(names, {c: p.corpus_sha256 for c, p in cells.items()}, "corpus")
        corpus: dict[str, str | None] | None = None if one is None else {"all": one}
    else:
        i = names.index(corpus_factor)
        corpus = {}
        for level in LEVELS:
            sub = {c: p.corpus_sha256 for c, p in cells.items() if c[i] == level}
            corpus[level] = _check_shared(names, sub, "corpus", f" at {corpus_factor}={level}")
        old_corpus = corpus[OLD]
        if old_corpus is not None and old_corpus == corpus[NEW]:
            notes.append(
                f"the corpus factor '{corpus_factor}' leaves the corpus fingerprint unchanged "
                f"({old_corpus[:12]} at both levels)"
            )
        if corpus[OLD] is None and corpus[NEW] is None:
            corpus = None
    return {
        "queries_sha256": queries,
        "qrels_sha256": qrels,
        "corpus_factor": corpus_factor,
        "corpus_sha256": corpus,
        "notes": notes,
    }


# --------------------------------------------------------------------------- #
# Result
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class Effect:
    """One estimated contrast with its interval and p-values."""

    term: Term
    estimate: float
    ci_low: float
    ci_high: float
    p: float
    p_kind: str  # "exact" | "monte-carlo"
    p_holm: float
    label: str
    ways: dict[str, float] = field(default_factory=dict)  # interactions: the estimate via each factor

    @property
    def id(self) -> str:
        return self.term.id

    def to_dict(self) -> dict[str, Any]:
        out = {
            "id": self.term.id,
            "term": self.term.name,
            "kind": self.term.kind,
            "order": self.term.order,
            "given": self.term.given_dict(),
            "estimate": self.estimate,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "p": self.p,
            "p_kind": self.p_kind,
            "p_holm": self.p_holm,
            "label": self.label,
        }
        if self.ways:
            out["ways"] = dict(self.ways)
        return out


@dataclass
class AttributionResult:
    """The attribution of one change set; :meth:`to_dict` is report.json's ``attribution``."""

    factors: tuple[str, ...]
    metric: str
    samples: int
    seed: int
    bundle: dict[str, Any] | None = None
    query_ids: tuple[str, ...] = ()
    cells: list[dict[str, Any]] = field(default_factory=list)
    effects: list[Effect] = field(default_factory=list)
    interaction_check: dict[str, Any] | None = None
    concentration: list[dict[str, Any]] = field(default_factory=list)
    headline: dict[str, Any] = field(default_factory=dict)
    sentences: list[str] = field(default_factory=list)
    readings: dict[str, Any] = field(default_factory=dict)  # the sentences by section (for the template)
    grid: dict[str, Any] | None = None
    cost: dict[str, Any] = field(default_factory=dict)
    verification: dict[str, Any] = field(default_factory=dict)
    ci_method: str = "percentile"
    notes: list[str] = field(default_factory=list)
    contrasts: dict[str, np.ndarray] = field(default_factory=dict, repr=False)  # effect id -> per-query contrast

    @property
    def is_bundle(self) -> bool:
        return self.bundle is not None

    def effect(self, id_or_factor: str, **given: str) -> Effect:
        """Look up an effect by id (``model|corpus=new``) or by term and ``given`` levels."""
        if given:
            want = Term(tuple(id_or_factor.split("×")), tuple((f, given[f]) for f in self.factors if f in given))
            id_or_factor = want.id
        for e in self.effects:
            if e.id == id_or_factor:
                return e
        raise KeyError(f"no effect {id_or_factor!r} (have: {', '.join(e.id for e in self.effects)})")

    def to_dict(self) -> dict[str, Any]:
        return {
            "factors": list(self.factors),
            "metric": self.metric,
            "queries": len(self.query_ids),
            "cells": [dict(c) for c in self.cells],
            "grid": self.grid,
            "effects": [e.to_dict() for e in self.effects],
            "interaction_check": self.interaction_check,
            "concentration": [dict(c) for c in self.concentration],
            "bundle": self.bundle,
            "headline": dict(self.headline),
            "sentences": list(self.sentences),
            "readings": dict(self.readings),
            "cost": dict(self.cost),
            "verification": dict(self.verification),
            "notes": list(self.notes),
            "samples": self.samples,
            "seed": self.seed,
            "ci_method": self.ci_method,
            "ci_note": CI_NOTE,
        }


# --------------------------------------------------------------------------- #
# Plain-language pieces
# --------------------------------------------------------------------------- #


def _given_phrase(given: Sequence[tuple[str, str]]) -> str:
    return ", ".join(f"{f} {level}" for f, level in given)


def _subject(term: Term, k: int) -> str:
    """"switching model with corpus old", "switching model in production", "the model×corpus interaction"."""
    if term.order == 1:
        text = f"switching {term.factors[0]}"
        if term.given and all(level == NEW for _, level in term.given):
            text += f" with {_given_phrase(term.given)}, in production"
        elif term.given:
            text += f" with {_given_phrase(term.given)}"
        return text
    text = f"the {term.name} interaction"
    return text + (f" with {_given_phrase(term.given)}" if term.given else "")


def _label(term: Term, k: int) -> str:
    if term.order == 1:
        levels = {level for _, level in term.given}
        if levels <= {NEW}:
            return "in production"
        if levels == {OLD}:
            return "at baseline"
        return ""
    if k == 2:
        return "interaction"
    return {2: "two-way", 3: "three-way"}.get(term.order, f"{term.order}-way") + " interaction"


def _interaction_sentence(term: Term, ways: Mapping[str, float], way: str, digits: int = 3) -> str:
    """``switching model is worth 0.036 less when corpus is new than when it is old``.

    For a two-way term the reading is built from ``way``'s simple effects
    differenced over the other factor. Higher orders read as the lower-order
    interaction (without the outermost factor) differenced over that factor.
    """
    value = ways[way]
    order = [way] + [f for f in term.factors if f != way]
    outer = order[-1]
    inner = order[:-1]
    what = f"switching {inner[0]}" if len(inner) == 1 else f"the {'×'.join(inner)} interaction"
    prefix = f"With {_given_phrase(term.given)}, " if term.given else ""
    if round(abs(value), digits) == 0:
        body = f"{what} is worth the same (to {digits} decimals) whether {outer} is new or old"
    else:
        more = "more" if value > 0 else "less"
        body = f"{what} is worth {abs(value):.{digits}f} {more} when {outer} is new than when it is old"
    if not prefix:
        body = body[0].upper() + body[1:]
    return prefix + body + "."


def _ci_text(e: Effect) -> str:
    return f"95% CI {signed(e.ci_low)} to {signed(e.ci_high)}, unadjusted; Holm-adjusted p {e.p_holm:.4f}"


# --------------------------------------------------------------------------- #
# The analysis
# --------------------------------------------------------------------------- #


def bundle_result(
    changed_factors: Sequence[str],
    max_factors: int = DEFAULT_MAX_FACTORS,
    *,
    disabled: bool = False,
    metric: str = "nDCG@10",
    samples: int = DEFAULT_SAMPLES,
    seed: int = DEFAULT_SEED,
) -> AttributionResult:
    """The result for a change set whose credit is not apportioned.

    Used when more than ``max_factors`` things changed (the grid would need
    ``2**k`` runs) or attribution is ``disabled``.
    """
    names = check_factors(changed_factors)
    k = len(names)
    runs = 2**k
    noun = "change" if k == 1 else "changes"
    text = f"credit not apportioned: {k} {noun} would need {runs} runs"
    if disabled:
        reason = "attribution is disabled"
    else:
        reason = f"more than {max_factors} changed factors (the limit is {max_factors}, {2 ** max_factors} runs)"
    sentence = (
        f"This result is a bundle ({text}; {reason}). It measures the changes together: "
        f"{', '.join(names)}."
    )
    return AttributionResult(
        factors=names,
        metric=metric,
        samples=samples,
        seed=seed,
        bundle={
            "text": text,
            "reason": reason,
            "disabled": bool(disabled),
            "changed": list(names),
            "runs_needed": runs,
            "max_factors": max_factors,
        },
        headline={"text": text, "effects": []},
        sentences=[sentence],
        readings={"headline": text, "bundle": sentence},
    )


def analyze_grid(
    factors: Sequence[str],
    cell_values: Mapping[Any, Any],
    query_ids: Sequence[str],
    metric: str = "nDCG@10",
    samples: int = DEFAULT_SAMPLES,
    seed: int = DEFAULT_SEED,
    cell_seconds: Mapping[Any, float | None] | None = None,
    corpus_factor: str | None = None,
    *,
    provenance: Mapping[Any, CellProvenance | Mapping[str, Any] | None] | None = None,
    grid_seconds: float | None = None,
    max_factors: int = DEFAULT_MAX_FACTORS,
    ci_method: str = "percentile",
    share: float = CONCENTRATION_SHARE,
    redistribution_ratio: float = REDISTRIBUTION_RATIO,
    cell_info: Mapping[Any, Mapping[str, Any]] | None = None,
    notes: Sequence[str] = (),
) -> AttributionResult:
    """Attribute a change over a full ``2**k`` grid of per-query values.

    ``cell_values`` maps every cell (a tuple of levels in factor order, a
    (frozen)set or mapping of ``(factor, level)``, or ``"model=new,corpus=old"``)
    to per-query values aligned on ``query_ids``. ``cell_seconds`` (same
    keys) is each cell's wall time, ``grid_seconds`` the whole grid's (default:
    the sum of the cells'). ``provenance`` (same keys) carries each cell's
    fingerprints, verified by :func:`verify_grid` before anything is computed.
    ``cell_info`` adds caller fields (e.g. ``run``) to each cell's record.

    More than ``max_factors`` factors gives :func:`bundle_result`.
    Raises :class:`GridRefused` when verification fails, ``ValueError`` for
    malformed arguments (missing cells, misaligned arrays, bad samples).
    """
    names = check_factors(factors)
    k = len(names)
    samples = check_samples(samples)
    seed = check_seed(seed)
    check_method(ci_method)
    if k > max_factors:
        return bundle_result(names, max_factors, metric=metric, samples=samples, seed=seed)

    values = _keyed(names, cell_values, "cell_values")
    seconds = _keyed(names, cell_seconds, "cell_seconds")
    info = _keyed(names, cell_info, "cell_info")
    verification = verify_grid(names, provenance, corpus_factor)  # before computing anything
    grid = FactorialGrid(names, values)
    qids = tuple(str(q) for q in query_ids)
    if len(qids) != grid.n:
        raise ValueError(f"query_ids has {len(qids)} entries but the cells have {grid.n} values each")
    if len(set(qids)) != len(qids):
        raise ValueError("query_ids has duplicates")
    verification["query_ids_sha256"] = query_ids_fingerprint(qids).sha256
    verification["queries"] = len(qids)

    means = grid.means()
    cell_records = _cell_records(names, grid, means, seconds, info)
    cost = _cost(cell_records, grid_seconds)

    # Effects: one stacked bootstrap (shared indices), one sign-flip test each, Holm across all.
    # Every statistic uses the settled contrasts: a query whose contrast is a rounding residue
    # (~1e-16 where exact arithmetic gives 0) did not move, so it is exactly 0 before the estimate,
    # the interval, the p-value and the concentration see it (an effect that is zero by
    # construction then has estimate 0 and the interval 0 to 0, not one excluding zero).
    all_terms = terms(names)
    contrasts = [grid.settled(t) for t in all_terms]
    effects, checks = _effects(grid, all_terms, contrasts, k, samples, seed, ci_method)
    by_id = {e.id: e for e in effects}
    contrast_by_id = {t.id: d for t, d in zip(all_terms, contrasts)}
    interaction_check = _interaction_check(names, checks)
    conc_records, conc_sentences = _concentrations(effects, contrast_by_id, qids, k, share, redistribution_ratio)
    headline = _headline(effects, metric, k)
    headline_text = headline["text"]

    readings: dict[str, Any] = {"headline": headline_text, "additivity": None, "interactions": [],
                                "check": None, "concentration": [], "notes": []}
    grid_table = None
    if k == 2:
        readings["additivity"], grid_table = _two_factor_reading(names, grid, means, by_id)
    readings["interactions"] = _interaction_readings(effects, k)
    if interaction_check is not None:
        readings["check"] = _check_reading(interaction_check)
    shown = [e for e in effects if e.term.order == 1 and (k <= 2 or e.label == "in production")]
    readings["concentration"] = [conc_sentences[e.id] for e in shown]
    all_notes = _grid_notes(notes, verification)
    readings["notes"] = [n[0].upper() + n[1:] + ("" if n.endswith(".") else ".") for n in all_notes]
    sentences = _grid_sentences(headline_text, readings)

    return AttributionResult(
        factors=names,
        metric=metric,
        samples=samples,
        seed=seed,
        bundle=None,
        query_ids=qids,
        cells=cell_records,
        effects=effects,
        interaction_check=interaction_check,
        concentration=conc_records,
        headline=headline,
        sentences=sentences,
        readings=readings,
        grid=grid_table,
        cost=cost,
        verification=verification,
        ci_method=ci_method,
        notes=all_notes,
        contrasts=contrast_by_id,
    )


def _cell_records(names: tuple[str, ...], grid: FactorialGrid, means: Mapping[Cell, float],
                  seconds: Mapping[Cell, Any], info: Mapping[Cell, Any]) -> list[dict[str, Any]]:
    """Each cell's record: its name, levels, role, mean and wall time, with the caller's fields."""
    cell_records = []
    for cell in grid.cells:
        record: dict[str, Any] = {
            "name": format_levels(names, cell),
            "levels": dict(zip(names, cell)),
            "role": "baseline" if set(cell) == {OLD} else "candidate" if set(cell) == {NEW} else "",
            "mean": means[cell],
            "seconds": None if seconds.get(cell) is None else float(seconds[cell]),
        }
        record.update(info.get(cell, {}))
        cell_records.append(record)
    return cell_records


def _cost(cell_records: Sequence[Mapping[str, Any]], grid_seconds: float | None) -> dict[str, Any]:
    known = [r["seconds"] for r in cell_records if r["seconds"] is not None]
    cells_total = float(sum(known)) if len(known) == len(cell_records) else None
    return {
        "cell_seconds": {r["name"]: r["seconds"] for r in cell_records},
        "cells_total_seconds": cells_total,
        "grid_seconds": float(grid_seconds) if grid_seconds is not None else cells_total,
        "runs": len(cell_records),
    }


def _effects(grid: FactorialGrid, all_terms: Sequence[Term], contrasts: Sequence[np.ndarray], k: int, samples: int,
             seed: int, ci_method: str) -> tuple[list[Effect], list[dict[str, Any]]]:
    """Every term's effect (estimate, interval, p-value, Holm-adjusted across all) and, for each
    interaction, the check that its factors' ways agree."""
    resampled = bootstrap_means(np.vstack(contrasts), samples, seed)
    raw: list[tuple[Term, float, float, float, float, str, dict[str, float]]] = []
    checks: list[dict[str, Any]] = []
    for t, d, boot in zip(all_terms, contrasts, resampled):
        lo, hi = confidence_interval(d, boot, ci_method)
        p, kind = sign_flip_p(d, samples, seed)
        ways: dict[str, float] = {}
        if t.order > 1:
            ways, check = _ways_check(grid, t)
            checks.append(check)
        raw.append((t, float(d.mean()), lo, hi, float(p), kind, ways))
    adjusted = holm([r[4] for r in raw])
    effects = [
        Effect(term=t, estimate=est, ci_low=lo, ci_high=hi, p=p, p_kind=kind, p_holm=float(ph),
               label=_label(t, k), ways=ways)
        for (t, est, lo, hi, p, kind, ways), ph in zip(raw, adjusted)
    ]
    return effects, checks


def _ways_check(grid: FactorialGrid, t: Term) -> tuple[dict[str, float], dict[str, Any]]:
    """An interaction's value computed from each of its factors' simple effects, and whether they agree."""
    per_way = grid.ways(t)
    ways = {f: float(v.mean()) for f, v in per_way.items()}
    spread = max(ways.values()) - min(ways.values())
    raw_d = grid.contrast(t)  # the ways are compared unsettled: this checks the arithmetic
    per_query = max(float(np.max(np.abs(v - raw_d))) for v in per_way.values())
    return ways, {
        "term": t.name,
        "given": t.given_dict(),
        "ways": dict(ways),
        "abs_diff": float(spread),
        "max_query_abs_diff": per_query,
        "agree": bool(spread <= INTERACTION_TOLERANCE),
    }


def _interaction_check(names: tuple[str, ...], checks: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not checks:
        return None
    top = checks[-1]  # the highest-order interaction (all factors)
    interaction_check = {"term": top["term"], "given": top["given"]}
    for i, f in enumerate(names):
        interaction_check[f"{chr(ord('a') + i)}_way"] = top["ways"][f]
    interaction_check.update({
        "ways": dict(top["ways"]),
        "agree": all(c["agree"] for c in checks),
        "abs_diff": max(c["abs_diff"] for c in checks),
        "tolerance": INTERACTION_TOLERANCE,
        "terms": checks,
    })
    return interaction_check


def _concentrations(effects: Sequence[Effect], contrast_by_id: Mapping[str, np.ndarray], qids: tuple[str, ...],
                    k: int, share: float, redistribution_ratio: float) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The concentration of every effect: its records, and its sentence by effect id."""
    conc_records = []
    conc_sentences: dict[str, str] = {}
    for e in effects:
        c = concentration(contrast_by_id[e.id], qids, share, redistribution_ratio)
        subject = _subject(e.term, k)
        subject = subject[0].upper() + subject[1:] + f" ({signed(e.estimate)})"
        sentence = c.sentence(subject)
        conc_sentences[e.id] = sentence
        record = {"id": e.id, "term": e.term.name, "given": e.term.given_dict(), "label": e.label,
                  "estimate": e.estimate}
        record.update(c.to_dict())
        record["sentence"] = sentence
        conc_records.append(record)
    return conc_records, conc_sentences


def _headline(effects: Sequence[Effect], metric: str, k: int) -> dict[str, Any]:
    """Each factor's effect with every other factor at its new level."""
    production = [e for e in effects if e.term.order == 1 and e.label == "in production"]
    parts = []
    for i, e in enumerate(production):
        verb = f"moves {metric} by" if i == 0 else "moves it by"
        parts.append(f"switching {e.term.factors[0]} {verb} {signed(e.estimate)} ({_ci_text(e)})")
    if k == 1:
        headline_text = parts[0][0].upper() + parts[0][1:] + "."
    else:
        headline_text = "In production (every other change at its new level), " + "; ".join(parts) + "."
    return {
        "text": headline_text,
        "effects": [e.id for e in production],
        "estimates": {e.term.factors[0]: e.estimate for e in production},
    }


def _two_factor_reading(names: tuple[str, ...], grid: FactorialGrid, means: Mapping[Cell, float],
                        by_id: Mapping[str, Effect]) -> tuple[str, dict[str, Any]]:
    """A 2x2 grid: the additivity sentence and the table of means and effects."""
    a, b = names
    m = {cell: means[cell] for cell in grid.cells}
    base, cand = m[(OLD, OLD)], m[(NEW, NEW)]
    additive = base + by_id[f"{a}|{b}={OLD}"].estimate + by_id[f"{b}|{a}={OLD}"].estimate
    inter = by_id[f"{a}×{b}"]
    additivity = (
        f"If the two changes added up, switching both would score {additive:.3f}; it scores {cand:.3f}, "
        f"an interaction of {signed(inter.estimate)}."
    )
    grid_table = {
        "rows": a,
        "columns": b,
        "means": [[m[(OLD, OLD)], m[(OLD, NEW)]], [m[(NEW, OLD)], m[(NEW, NEW)]]],
        # b's effect within each row (a old, a new); a's effect within each column (b old, b new)
        "row_effects": [by_id[f"{b}|{a}={OLD}"].estimate, by_id[f"{b}|{a}={NEW}"].estimate],
        "column_effects": [by_id[f"{a}|{b}={OLD}"].estimate, by_id[f"{a}|{b}={NEW}"].estimate],
        "interaction": inter.estimate,
    }
    return additivity, grid_table


def _interaction_readings(effects: Sequence[Effect], k: int) -> list[str]:
    readings = []
    for e in effects:
        if e.term.order > 1:
            # k = 2: read both ways (they are the same statement); larger grids: one reading per term.
            for f in e.term.factors if k == 2 else e.term.factors[:1]:
                readings.append(_interaction_sentence(e.term, e.ways, f))
    return readings


def _check_reading(interaction_check: Mapping[str, Any]) -> str:
    if interaction_check["agree"]:
        return (
            f"Every interaction computed from each of its factors' simple effects gives the same value "
            f"(largest difference {interaction_check['abs_diff']:.1e}, tolerance {INTERACTION_TOLERANCE:g})."
        )
    return (
        f"Warning: an interaction computed from different factors' simple effects differs by "
        f"{interaction_check['abs_diff']:.1e}, more than floating-point precision explains."
    )


def _grid_notes(notes: Sequence[str], verification: Mapping[str, Any]) -> list[str]:
    """The caller's notes, the verification's, and what could not be verified."""
    all_notes = list(notes) + list(verification.get("notes", []))
    unverified = [w for w, key in (("query set", "queries_sha256"), ("qrels", "qrels_sha256"),
                                   ("corpus", "corpus_sha256")) if verification.get(key) is None]
    if unverified:
        all_notes.append(f"not verified (no fingerprint supplied): {', '.join(unverified)}")
    return all_notes


def _grid_sentences(headline_text: str, readings: Mapping[str, Any]) -> list[str]:
    sentences = [headline_text]
    if readings["additivity"]:
        sentences.append(readings["additivity"])
    sentences.extend(readings["interactions"])
    if readings["check"]:
        sentences.append(readings["check"])
    sentences.extend(readings["concentration"])
    sentences.extend(readings["notes"])
    return sentences


# --------------------------------------------------------------------------- #
# From run files
# --------------------------------------------------------------------------- #


def factorial_from_runs(
    factors: Sequence[str] | str,
    cells: Mapping[str, str | os.PathLike] | Iterable[tuple[str, str | os.PathLike]],
    qrels: str | os.PathLike | Qrels,
    queries: str | os.PathLike | QuerySet | None = None,
    metric: str = "nDCG@10",
    allow_missing: bool = False,
    samples: int = DEFAULT_SAMPLES,
    seed: int = DEFAULT_SEED,
    *,
    rel: int = 1,
    cell_seconds: Mapping[str, float | None] | None = None,
    grid_seconds: float | None = None,
    corpus_factor: str | None = None,
    cell_corpus: Mapping[str, str | Fingerprint | None] | None = None,
    max_factors: int = DEFAULT_MAX_FACTORS,
    enabled: bool = True,
    ci_method: str = "percentile",
) -> AttributionResult:
    """Evaluate one run per cell and attribute the change (:func:`analyze_grid`).

    ``cells`` maps ``"model=new,corpus=old"`` (every factor, levels old/new)
    to a run file; ``cell_seconds`` and ``cell_corpus`` (corpus sha256 of each
    cell) use the same keys. Queries are the golden queries with a judgment
    (:func:`gate.inputs.universe.query_universe`). Every run must rank every one of
    them: a run that misses some is refused with the count and examples
    (:class:`GridRefused`) unless ``allow_missing``, when they score 0 as in
    trec_eval ``-c`` and the result says so.

    Bad ``--factor`` / ``--cell`` values raise :class:`UsageError`.
    """
    names = parse_factors(factors)
    if corpus_factor is not None and corpus_factor not in names:
        raise UsageError(f"corpus factor '{corpus_factor}' is not one of the factors ({', '.join(names)})")
    # Cells given are checked even for a bundle: half a grid is a mistake, not a bundle. (No
    # cells at all asks only for the bundle's label.)
    parsed = parse_cells(names, cells) if cells else None
    if not enabled or len(names) > max_factors:
        return bundle_result(names, max_factors, disabled=not enabled, metric=metric,
                             samples=samples, seed=seed)
    if parsed is None:
        parsed = parse_cells(names, cells)
    seconds = {parse_cell_levels(key, names): v for key, v in (cell_seconds or {}).items()}
    corpora = {parse_cell_levels(key, names): _sha(v) for key, v in (cell_corpus or {}).items()}
    measure = parse_measure(metric).with_default_rel(rel)
    metric_name = str(measure)

    qrels_obj, queries_obj, universe = _golden_universe(qrels, queries)
    queries_sha = (queries_fingerprint(queries_obj) if queries_obj is not None
                   else query_ids_fingerprint(universe.query_ids)).sha256
    qrels_sha = qrels_fingerprint(qrels_obj).sha256
    provenance = {
        cell: CellProvenance(queries_sha, qrels_sha, corpora.get(cell)) for cell in parsed
    }
    verify_grid(names, provenance, corpus_factor)  # refuse before reading any run

    runs = {cell: read_run(path) for cell, (_, path) in parsed.items()}
    # A query a cell's runner answered with no documents ("hits": 0 in the sidecar beside its run) is
    # covered and scores 0, as in run and sweep; a bad sidecar is one line, exit 2.
    empties = {cell: answered_empty(sidecar_of(Path(path), runs[cell], None, "file", universe.query_ids))
               for cell, (_, path) in parsed.items()}
    for cell, run in runs.items():
        if not empties[cell]:  # a cell that found nothing for every query is scored 0, not "wrong file"
            require_overlap(run, universe.query_ids, qrels_obj, queries_obj)
    missing = _missing_queries(runs, universe.query_ids, empties)
    notes = _missing_notes(parsed, missing, len(universe.query_ids), allow_missing)

    values = {}
    info: dict[Cell, dict[str, Any]] = {}
    for cell, run in runs.items():
        per_query = evaluate(run, qrels_obj, [measure], universe.query_ids, rel=rel)
        values[cell] = per_query.values[metric_name]
        info[cell] = {"run": str(parsed[cell][1]), "missing": len(missing.get(cell, ()))}
    return analyze_grid(
        names,
        values,
        universe.query_ids,
        metric=metric_name,
        samples=samples,
        seed=seed,
        cell_seconds=seconds,
        corpus_factor=corpus_factor,
        provenance=provenance,
        grid_seconds=grid_seconds,
        max_factors=max_factors,
        ci_method=ci_method,
        cell_info=info,
        notes=notes,
    )


def _golden_universe(qrels: str | os.PathLike | Qrels, queries: str | os.PathLike | QuerySet | None
                     ) -> tuple[Qrels, QuerySet | None, Universe]:
    """The qrels and golden queries (read when given as paths) and the queries to evaluate: those with both."""
    qrels_obj = qrels if isinstance(qrels, Qrels) else load_qrels(qrels)
    queries_obj = queries if isinstance(queries, QuerySet) or queries is None else load_queries(queries)
    universe = query_universe(qrels_obj, queries_obj)
    if not universe.query_ids:
        raise InputError(qrels_obj.source, None, "no query has both a golden entry and a qrels judgment: "
                         "nothing to compare")
    return qrels_obj, queries_obj, universe


def _missing_queries(runs: Mapping[Cell, Any], query_ids: Sequence[str],
                     empties: Mapping[Cell, frozenset[str]]) -> dict[Cell, list[str]]:
    """The golden queries each cell's run misses (cells missing none left out); ``empties``: per
    cell, those its runner answered with no documents (covered)."""
    missing: dict[Cell, list[str]] = {}
    for cell, run in runs.items():
        gone = missing_queries(run, query_ids, empties.get(cell, frozenset()))
        if gone:
            missing[cell] = gone
    return missing


def _missing_notes(parsed: Mapping[Cell, tuple[str, Any]], missing: Mapping[Cell, list[str]], n: int,
                   allow_missing: bool) -> list[str]:
    """The notes saying which runs miss queries, scored 0; :class:`GridRefused` unless ``allow_missing``."""
    notes: list[str] = []
    if missing:
        parts = [
            f"{parsed[cell][0]} ({parsed[cell][1]}) misses {len(gone)} of {n} golden queries "
            f"(e.g. {', '.join(gone[:EXAMPLES])})"
            for cell, gone in missing.items()
        ]
        if not allow_missing:
            raise GridRefused(
                "; ".join(parts) + ": a query missing from one cell scores 0 there only and would "
                "masquerade as an effect (allow missing queries to score them 0 anyway)"
            )
        notes.extend(f"{p}, scored 0 (missing queries allowed)" for p in parts)
    return notes


# --------------------------------------------------------------------------- #
# Markdown
# --------------------------------------------------------------------------- #
