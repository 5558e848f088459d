"""Strata's traffic shares: ``SHARES.yml``, the config's ``strata:`` block, ``strata.tsv``.

A stratum is a kind of query (navigational, error string, ...). Each golden
query belongs to one, either through the ``stratum`` field of the query file
or through an assignments file, ``strata.tsv`` (``query_id<TAB>stratum`` per
line). Each stratum carries the share of production traffic it stands for;
the per-stratum results are weighted by those shares to say how much of the
traffic a change improved or damaged.

Accepted shapes of a shares file (read with ruamel.yaml so every error names
its line):

* a plain mapping ``stratum: share``::

      navigational: 0.22
      error_string: 0.18

* the config's block, on its own or under a top-level ``strata:`` key (so
  ``load_strata_spec(".retrieval-gate.yml")`` reads the config's block)::

      strata:
        shares: {navigational: 0.22, error_string: 0.18, ...}
        assignments: strata.tsv     # relative to this file's folder
        guarded: [navigational, error_string]

Shares are fractions (>= 0) that sum to 1 within :data:`SUM_TOLERANCE`.
They are checked against the *full* golden set once
(:func:`validate_against`): a stratum with golden queries but no share, or a
share whose stratum has no golden query, is an error there. A subset of the
golden set (held-out or leak-free reporting set) may leave a stratum empty;
that is reported as not measured, never an error.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from gate.common import limits
from gate.common.errors import InputError
from gate.inputs.config import Config, yaml_key_line, yaml_node_line
from gate.inputs.readers.records import QuerySet
from gate.inputs.readers.textlines import read_text_file
from gate.inputs.readers.yaml_source import load_yaml

#: Shares must sum to 1 within this.
SUM_TOLERANCE = 1e-6

#: Keys of the block form (``strata:`` in the config).
BLOCK_KEYS = ("shares", "assignments", "guarded")


@dataclass(frozen=True)
class StrataSpec:
    """Traffic shares per stratum, the guarded strata and optional query assignments.

    ``shares`` keeps the file's order. ``assignments`` maps query id to
    stratum when an assignments file was named (``None`` otherwise).
    ``source`` is the file the shares came from; ``lines`` gives the line of
    each stratum's share (for errors found later), ``shares_line`` the line of
    the mapping itself, ``assignment_lines`` the line of each assignment.
    """

    shares: dict[str, float]
    guarded: tuple[str, ...] = ()
    assignments: dict[str, str] | None = None
    source: str = "<shares>"
    lines: Mapping[str, int] = field(default_factory=dict)
    shares_line: int | None = None
    assignments_source: str | None = None
    assignment_lines: Mapping[str, int] = field(default_factory=dict)

    @property
    def strata(self) -> tuple[str, ...]:
        return tuple(self.shares)

    def error(self, stratum: str | None, message: str) -> InputError:
        """An error placed at ``stratum``'s share (or at the shares mapping)."""
        line = self.lines.get(stratum) if stratum is not None else None
        return InputError(self.source, line if line is not None else self.shares_line, message)


# --------------------------------------------------------------------------- YAML helpers


def _describe(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (dict, CommentedMap)):
        return "a mapping"
    if isinstance(value, (list, CommentedSeq)):
        return "a list"
    return f"'{value}'"


def _read_yaml(path: Path, display: str) -> Any:
    try:
        source = read_text_file(path, "a shares file")
    except InputError as error:
        if error.message == "no such file":
            raise InputError(display, None, "no such shares file") from None
        raise InputError(display, error.line, error.message) from None
    document = load_yaml(source, display)
    if document is None:
        raise InputError(display, None, "the shares file is empty")
    return document


# --------------------------------------------------------------------------- shares


def _is_block(node: Mapping) -> bool:
    return "shares" in node and isinstance(node["shares"], (dict, CommentedMap))


def parse_shares(node: Any, source: str, line: int | None = None) -> tuple[dict[str, float], dict[str, int]]:
    """Check a ``stratum: share`` mapping; returns (shares, line of each stratum).

    Every share must be a finite number >= 0 and they must sum to 1 within
    :data:`SUM_TOLERANCE`; errors name ``source`` and the line at fault.
    """
    where = yaml_node_line(node) or line
    if not isinstance(node, (dict, CommentedMap)):
        raise InputError(source, where, f"shares must be a mapping of stratum to share, got {_describe(node)}")
    if not node:
        raise InputError(source, where, "no shares given (expected 'stratum: share' entries)")
    shares: dict[str, float] = {}
    lines: dict[str, int] = {}
    for key, value in node.items():
        at = yaml_key_line(node, key) or where
        if key is None or isinstance(key, (bool, dict, list, CommentedMap, CommentedSeq)) or str(key).strip() == "":
            raise InputError(source, at, f"stratum names must be text, got {_describe(key)}")
        name = str(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(source, at, f"share of stratum '{name}' is not a number: got {_describe(value)}")
        share = float(value)
        if not math.isfinite(share) or share < 0:
            raise InputError(source, at, f"share of stratum '{name}' must be a fraction >= 0, got {value}")
        if share > 1:
            raise InputError(source, at, f"share of stratum '{name}' is {value}: shares are fractions of 1, "
                                         "not percent")
        shares[name] = share
        if at is not None:
            lines[name] = at
    total = math.fsum(shares.values())
    if abs(total - 1.0) > SUM_TOLERANCE:
        raise InputError(source, where, f"shares sum to {total:.4f}, not 1 (within 1e-6)")
    return shares, lines


def _guarded(node: Any, key_line: int | None, source: str, shares: Mapping[str, float]) -> tuple[str, ...]:
    if node is None:
        return ()
    items = [node] if isinstance(node, str) else node
    if not isinstance(items, (list, CommentedSeq)):
        raise InputError(source, key_line, f"'guarded' must be a list of strata, got {_describe(node)}")
    out: list[str] = []
    for item in items:
        if isinstance(item, (bool, dict, list, CommentedMap, CommentedSeq)) or item is None:
            raise InputError(source, key_line, f"'guarded' must list stratum names, got {_describe(item)}")
        name = str(item)
        if name not in shares:
            hint = difflib.get_close_matches(name, list(shares), n=1)
            extra = f" (did you mean '{hint[0]}'?)" if hint else ""
            raise InputError(source, key_line, f"guarded stratum '{name}' has no share{extra}")
        if name not in out:
            out.append(name)
    return tuple(out)


def spec_from_node(node: Any, source: str, base_dir: str | Path | None = None) -> StrataSpec:
    """A :class:`StrataSpec` from loaded YAML (either accepted shape) or plain dicts.

    ``source`` names the file for errors; ``base_dir`` resolves a relative
    ``assignments`` path (default: ``source``'s folder).
    """
    base = Path(base_dir) if base_dir is not None else Path(source).parent
    if not isinstance(node, (dict, CommentedMap)):
        raise InputError(source, yaml_node_line(node) or 1,
                         f"expected a mapping of stratum to share (or a 'shares:' block), got {_describe(node)}")
    node, block_line = _unwrap_strata_block(node, source)
    if not _is_block(node):
        if "shares" in node:  # a reserved word, never a stratum name
            raise InputError(source, yaml_key_line(node, "shares"),
                             f"'shares' must be a mapping of stratum to share, got {_describe(node['shares'])}")
        shares, lines = parse_shares(node, source)
        return StrataSpec(shares=shares, source=source, lines=lines, shares_line=yaml_node_line(node) or 1)

    for key in node:
        if str(key) not in BLOCK_KEYS:
            hint = difflib.get_close_matches(str(key), BLOCK_KEYS, n=1)
            extra = f" (did you mean '{hint[0]}'?)" if hint else f" (known: {', '.join(BLOCK_KEYS)})"
            raise InputError(source, yaml_key_line(node, key), f"unknown key '{key}' in the strata block{extra}")
    shares_line = yaml_key_line(node, "shares") or block_line
    shares, lines = parse_shares(node["shares"], source, shares_line)
    guarded = _guarded(node.get("guarded"), yaml_key_line(node, "guarded") or shares_line, source, shares)
    assignments, assignments_source, assignment_lines = _assignments_of_block(node, base, source)
    return StrataSpec(
        shares=shares,
        guarded=guarded,
        assignments=assignments,
        source=source,
        lines=lines,
        shares_line=yaml_node_line(node["shares"]) or shares_line,
        assignments_source=assignments_source,
        assignment_lines=assignment_lines,
    )


def _unwrap_strata_block(node: Any, source: str) -> tuple[Any, int | None]:
    """The block under a config's ``strata:`` key (and that key's line), or ``node`` itself (and None)
    when it holds no such mapping."""
    if "strata" in node and isinstance(node["strata"], (dict, CommentedMap)):
        block_line = yaml_key_line(node, "strata")
        block = node["strata"]
        if not _is_block(block):
            if "shares" in block:
                raise InputError(source, yaml_key_line(block, "shares"),
                                 f"'shares' must be a mapping of stratum to share, got {_describe(block['shares'])}")
            raise InputError(source, block_line, "the 'strata' block has no 'shares' mapping")
        return block, block_line
    return node, None


def _assignments_of_block(node: Any, base: Path, source: str) -> tuple[dict[str, str] | None, str | None,
                                                                        dict[str, int]]:
    """The block's ``assignments:`` file read (``base`` resolves a relative path): the assignments,
    the file's path and each query's line; (None, None, {}) when the block names none."""
    raw = node.get("assignments")
    if raw is None:
        return None, None, {}
    if not isinstance(raw, str) or not raw.strip():
        raise InputError(source, yaml_key_line(node, "assignments"),
                         f"'assignments' must name a strata.tsv file, got {_describe(raw)}")
    path = Path(raw)
    if not path.is_absolute():
        path = base / path
    assignments, assignment_lines = read_assignments(path)
    return assignments, str(path), assignment_lines


def load_strata_spec(path: str | Path) -> StrataSpec:
    """Read a shares file (``SHARES.yml``) or a config with a ``strata:`` block.

    Raises :class:`InputError` with file and line for: YAML errors, a share
    that is not a number (or is negative, or above 1), shares not summing to 1
    (``"shares sum to 0.9000, not 1 (within 1e-6)"``), unknown block keys,
    guarded strata without a share, and a bad assignments file.
    """
    display = str(path)
    document = _read_yaml(Path(path), display)
    return spec_from_node(document, display, Path(path).parent)


# --------------------------------------------------------------------------- strata.tsv

_HEADERS = {("qid", "stratum"), ("query_id", "stratum"), ("query-id", "stratum"), ("query", "stratum")}


def read_assignments(path: str | Path) -> tuple[dict[str, str], dict[str, int]]:
    """``query_id<TAB>stratum`` lines -> ({query_id: stratum}, {query_id: line}).

    Blank lines and lines starting with ``#`` are skipped, as is a first line
    ``qid<TAB>stratum`` / ``query_id<TAB>stratum``. A query listed twice with
    different strata is an error; listed twice with the same one is accepted.
    """
    display = str(path)
    try:
        text = read_text_file(path, "a strata assignments file", limit=limits.MAX_ASSIGNMENTS_BYTES)
    except InputError as error:
        if error.message == "no such file":
            raise InputError(display, None, "no such strata assignments file") from None
        raise InputError(display, error.line, error.message) from None
    out: dict[str, str] = {}
    lines: dict[str, int] = {}
    first = True
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip("\r")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split("\t")
        if first and tuple(f.strip().lower() for f in fields) in _HEADERS:
            first = False
            continue
        first = False
        if len(fields) != 2:
            raise InputError(display, number,
                             f"expected 'query_id<TAB>stratum', got {len(fields)} tab-separated fields")
        qid, stratum = fields[0].strip(), fields[1].strip()
        if not qid or not stratum:
            raise InputError(display, number, "empty query id or stratum")
        if qid in out and out[qid] != stratum:
            raise InputError(display, number,
                             f"query {qid} is assigned to '{stratum}' here but to '{out[qid]}' on line {lines[qid]}")
        if qid not in out:
            out[qid] = stratum
            lines[qid] = number
    if not out:
        raise InputError(display, None, "no assignments (expected 'query_id<TAB>stratum' lines)")
    return out, lines


# --------------------------------------------------------------------------- queries -> strata


def assign_strata(queries: QuerySet | Iterable[str], spec: StrataSpec | None = None,
                  field_strata: Mapping[str, str | None] | None = None) -> dict[str, str | None]:
    """Stratum of every query: from ``spec.assignments`` when given, else the query file's field.

    ``queries`` is a :class:`QuerySet` (its ``stratum`` fields are used) or
    plain ids with ``field_strata``. A query that the assignments file and the
    query file put in different strata is an error naming the assignments
    line. Queries with no stratum anywhere map to ``None``.
    """
    if isinstance(queries, QuerySet):
        ids = queries.ids()
        fields = {q.query_id: q.stratum for q in queries.queries}
    else:
        ids = list(queries)
        fields = dict(field_strata or {})
    out: dict[str, str | None] = {}
    assigned = spec.assignments if spec is not None and spec.assignments is not None else None
    for qid in ids:
        from_field = fields.get(qid) or None
        if spec is not None and assigned is not None and qid in assigned:
            stratum = assigned[qid]
            if from_field is not None and from_field != stratum:
                raise InputError(spec.assignments_source, spec.assignment_lines.get(qid),
                                 f"query {qid} is in stratum '{stratum}' here but '{from_field}' in the query file")
            out[qid] = stratum
        else:
            out[qid] = from_field
    return out


def validate_against(spec: StrataSpec, strata_by_query: Mapping[str, str | None]) -> None:
    """Check the shares against the FULL golden set (call once, not on subsets).

    ``strata_by_query`` maps every golden query id to its stratum. Errors
    (:class:`InputError` naming the shares file and line): a query without a
    stratum, a stratum with queries but no share, a share whose stratum has no
    query.
    """
    counts: dict[str, int] = {}
    unassigned: list[str] = []
    for qid, stratum in strata_by_query.items():
        if stratum is None or stratum == "":
            unassigned.append(qid)
        else:
            counts[stratum] = counts.get(stratum, 0) + 1
    if unassigned:
        shown = ", ".join(unassigned[:3]) + (", ..." if len(unassigned) > 3 else "")
        raise spec.error(None, f"{len(unassigned)} golden queries have no stratum ({shown}); "
                               "give each a stratum in the query file or the assignments file")
    for stratum in sorted(set(counts) - set(spec.shares)):
        hint = difflib.get_close_matches(stratum, list(spec.shares), n=1)
        extra = f" (did you mean '{hint[0]}'?)" if hint else ""
        raise spec.error(None, f"stratum '{stratum}' has {counts[stratum]} golden queries but no share{extra}")
    for stratum in spec.shares:
        if stratum not in counts:
            raise spec.error(stratum, f"stratum '{stratum}' has a share but no golden query")


# --------------------------------------------------------------------------- the config's block




def strata_spec_from_config(config: Config) -> StrataSpec | None:
    """The config's ``strata:`` block as a :class:`StrataSpec`, or ``None`` without shares.

    Re-reads the config file so errors carry lines; when the file is not
    readable (a config loaded from ``git show`` text), the checked values of
    ``config.strata`` are used, without lines. Paths resolve against the
    config's folder.
    """
    strata = config.strata
    if strata.shares is None:
        return None
    path = Path(config.path)
    if path.is_file():
        try:
            document = _read_yaml(path, str(config.path))
        except InputError:
            document = None
        if isinstance(document, (dict, CommentedMap)) and isinstance(document.get("strata"), (dict, CommentedMap)):
            return spec_from_node(document, str(config.path), config.root)
    block: dict[str, Any] = {"shares": dict(strata.shares)}
    if strata.assignments is not None:
        block["assignments"] = strata.assignments
    if strata.guarded:
        block["guarded"] = list(strata.guarded)
    return spec_from_node({"strata": block}, str(config.path), config.root)
