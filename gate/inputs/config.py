"""``.retrieval-gate.yml`` -> :class:`Config`.

The file is read with ruamel.yaml's round-trip loader so that every error can
name the line of the key at fault. The accepted keys are declared once, in
:data:`SCHEMA`; an unknown key is an error with a did-you-mean, because a
misspelt policy key that is silently ignored is a gate that silently passes.
Paths are relative to the config file's folder.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarint import HexCapsInt, HexInt

from gate.common import limits
from gate.common.errors import InputError
from gate.inputs.http_templates import TemplateError, parse_body, parse_header, parse_path, parse_url
from gate.inputs.readers.beir_folder import check_split_name
from gate.inputs.readers.textlines import read_text_file
from gate.inputs.readers.yaml_source import load_yaml

DEFAULT_PATH = ".retrieval-gate.yml"
_Number = TypeVar("_Number", int, float)


# --------------------------------------------------------------------------- schema
# A field is (checker, default). A section is a dict of fields. ``...`` marks a
# required field. Checkers take (value, where) and return the checked value.


class _Where:
    """The place of a value: file, line and dotted key, for error messages."""

    def __init__(self, path: str, line: int | None, key: str):
        self.path, self.line, self.key = path, line, key

    def error(self, message: str) -> InputError:
        return InputError(self.path, self.line, f"key '{self.key}': {message}")


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return f"the text '{value}'"
    if isinstance(value, (list, CommentedSeq)):
        return "a list"
    if isinstance(value, (dict, CommentedMap)):
        return "a mapping"
    if value is None:
        return "nothing"
    return type(value).__name__


def text(value: Any, where: _Where) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise where.error(f"expected text, got {_type_name(value)}")
    if isinstance(value, float):
        # .inf, 1e3 and 1.10 would be read as "inf", "1000.0" and "1.1": not what the file says.
        raise where.error(f"'{value}' is a number here: quote it to mean the text")
    _decimal(value, where)
    return str(value)


def path_text(value: Any, where: _Where) -> str:
    """A file or folder name: text, not empty (the config's folder would be meant) and no NUL."""
    name = text(value, where)
    if not name.strip():
        raise where.error("an empty path: name a file, or remove the key")
    if "\0" in name:
        raise where.error("a NUL character is in no file name")
    return name


def _decimal(value: Any, where: _Where) -> None:
    """A number the file writes in hex (``0x10``) is refused: no key of the config is a bit
    pattern, and ``max_regression: 0x1`` is a typo, not a margin of 1. (``_`` in a number, octal,
    binary and a leading zero are refused while the YAML is read: gate.inputs.readers.yaml_source.)"""
    if isinstance(value, (HexInt, HexCapsInt)):
        raise where.error(f"'{value:#x}' is a hexadecimal number: write it in decimal")


# 1:20, 1:20.5: text to YAML 1.2, a number in base 60 (80, 80.5) to YAML 1.1.
_SEXAGESIMAL = re.compile(r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?\Z")


def _not_a_number(value: Any) -> str:
    base60 = isinstance(value, str) and _SEXAGESIMAL.match(value)
    return f"{_type_name(value)}{' (base 60 to YAML 1.1 readers: write it in decimal)' if base60 else ''}"


def integer(value: Any, where: _Where) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise where.error(f"expected an integer, got {_not_a_number(value)}")
    _decimal(value, where)
    return int(value)


def positive_integer(value: Any, where: _Where) -> int:
    count = integer(value, where)
    if count < 1:
        raise where.error(f"expected a positive integer, got {count}")
    return count


def number(value: Any, where: _Where) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise where.error(f"expected a number, got {_not_a_number(value)}")
    _decimal(value, where)
    result = float(value)
    if not math.isfinite(result):
        raise where.error(f"expected a finite number, got {result}")
    return result


def in_range(checker: Callable[[Any, _Where], _Number], low: float | None = None, high: float | None = None,
             *, low_open: bool = False) -> Callable[[Any, _Where], _Number]:
    """``checker``, then ``low <= value <= high`` (``low < value`` with ``low_open``)."""
    def check(value: Any, where: _Where) -> _Number:
        checked = checker(value, where)
        too_low = low is not None and (checked <= low if low_open else checked < low)
        if too_low or (high is not None and checked > high):
            lo = "" if low is None else (f"above {low:g}" if low_open else f"at least {low:g}")
            hi = "" if high is None else f"at most {high:g}"
            raise where.error(f"expected a value {' and '.join(p for p in (lo, hi) if p)}, got {checked:g}")
        return checked

    return check


def fraction(value: Any, where: _Where) -> float:
    return in_range(number, 0.0, 1.0)(value, where)


seed = in_range(integer, 0, limits.MAX_SEED)


# YAML 1.1's other booleans: text to the gate's YAML 1.2 reader, true/false to PyYAML.
_YAML11_BOOLEANS = {"y", "yes", "n", "no", "on", "off"}


def boolean(value: Any, where: _Where) -> bool:
    if not isinstance(value, bool):
        hint = (" (YAML 1.2 reads yes/no/on/off as text: write true or false)"
                if isinstance(value, str) and value.lower() in _YAML11_BOOLEANS else "")
        raise where.error(f"expected true or false, got {_type_name(value)}{hint}")
    return value


def text_list(value: Any, where: _Where) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, (list, CommentedSeq)):
        raise where.error(f"expected a list of text, got {_type_name(value)}")
    return tuple(text(item, where) for item in value)


def one_of(*choices: str) -> Callable[[Any, _Where], str]:
    def check(value: Any, where: _Where) -> str:
        choice = text(value, where)
        if choice not in choices:
            hint = difflib.get_close_matches(choice, choices, n=1)
            extra = f" (did you mean '{hint[0]}'?)" if hint else ""
            raise where.error(f"'{choice}' is not one of {', '.join(choices)}{extra}")
        return choice

    return check


def list_of(*choices: str, allow_empty: bool = False) -> Callable[[Any, _Where], tuple[str, ...]]:
    """A list whose every item is one of ``choices`` (and at least one item, unless ``allow_empty``)."""
    pick = one_of(*choices)

    def check(value: Any, where: _Where) -> tuple[str, ...]:
        items = tuple(pick(item, where) for item in text_list(value, where))
        if not items and not allow_empty:
            raise where.error(f"expected at least one of {', '.join(choices)}")
        return items

    return check


def is_suite_name(name: str) -> bool:
    """Whether ``name`` may name a suite: short and plain. No '|' (the set's comment is named
    ``suites|<file>``, gate.publishing.github.sticky_comment), no line breaks or markup."""
    return bool(name.strip()) and len(name) <= 100 and not any(c in name for c in "\n\r\t<>`|") \
        and name.isprintable()


def suite_name(value: Any, where: _Where) -> str:
    """The suite names the comment (its hidden marker) and the status: short and plain."""
    name = text(value, where)
    if not is_suite_name(name):
        raise where.error(f"expected a short plain name (letters, digits, '-', '_', spaces; at most 100), got "
                          f"{name[:40]!r}")
    return name


def mapping(value: Any, where: _Where) -> dict[str, Any]:
    """A free-form mapping (values kept as plain Python data)."""
    if not isinstance(value, (dict, CommentedMap)):
        raise where.error(f"expected a mapping, got {_type_name(value)}")
    plain: dict[str, Any] = anything(value, where)
    return plain


def anything(value: Any, where: _Where) -> Any:
    """Free-form data (``runner.options``, ``tuning.queries``): plain Python data whose every
    number is finite (it is written to JSON: a run's identity, report.json)."""
    plain = _plain(value)
    _check_free_form(plain, where, where.key)
    return plain


def _check_free_form(value: Any, where: _Where, path: str) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _check_free_form(item, where, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_free_form(item, where, f"{path}[{index}]")
    elif isinstance(value, float) and not math.isfinite(value):
        raise where.error(f"{limits.shorten(path, 80)} is {value}: expected a finite number")


REQUIRED = ...


def setting(check: Callable[[Any, _Where], Any], default: Any = REQUIRED) -> Any:
    """A config key: its checker and its default (``REQUIRED`` when the file must set it).

    The defaults live here and only here: the loader, the README table test and the fuzzer all
    read them from the dataclasses below."""
    metadata = {"check": check, "default": default}
    if default is REQUIRED:
        return field(metadata=metadata)
    if isinstance(default, dict):
        return field(default_factory=dict, metadata=metadata)
    return field(default=default, metadata=metadata)


def section(kind: type) -> Any:
    """A nested block of keys, read into the frozen dataclass ``kind`` (its own defaults when
    none of its keys is required)."""
    required = any(f.metadata.get("default") is REQUIRED for f in fields(kind))
    if required:
        return field(metadata={"section": kind})
    return field(default_factory=kind, metadata={"section": kind})


def golden_file(value: Any, where: _Where) -> str:
    """A golden file, BEIR folder or ``irds:`` id. A BEIR folder's split is ``golden.split``, not the
    ``DIR#split=<name>`` of the command line: the config's paths are files the yardstick copies
    from the base commit and the watch list globs, and a suffix would name none."""
    spec = text(value, where)
    if not is_spec(spec) and "#split=" in spec:
        folder, _, split = spec.rpartition("#split=")
        raise where.error(f"'{limits.shorten(spec, 80)}': in the config the split is a key of its own: golden.qrels: "
                          f"{limits.shorten(folder, 60)} and golden.split: {limits.shorten(split, 20)}")
    return spec


def beir_split(value: Any, where: _Where) -> str:
    """A BEIR split's name (``dev``, ``test``, ``train``...): the file name of its qrels, never a path."""
    value = text(value, where)
    try:
        return check_split_name(value, where.path)
    except InputError as error:
        raise where.error(error.message) from None


@dataclass(frozen=True, kw_only=True)
class GoldenConfig:
    """``golden:``, the yardstick's files."""
    queries: str = setting(golden_file)
    qrels: str = setting(golden_file)
    rel: int = setting(in_range(positive_integer, 1, 1 << 31), 1)
    negative_is_judged: bool | None = setting(boolean, None)
    # The BEIR split whose qrels/<split>.tsv golden.qrels (a BEIR folder) judges with; unset: test.
    split: str | None = setting(beir_split, None)
    # What the ids of a plain qrels file name: chunks (used as they are) or documents (mapped onto
    # each side's chunks, as anchored judgments are: a re-chunked side is judged like the other).
    anchor: str = setting(one_of("chunk", "document"), "chunk")
    # The share of the shorter of span and chunk (or quote and chunk) a chunk must overlap to take its grade.
    span_share: float = setting(in_range(number, 0.0, 1.0, low_open=True), 0.5)


@dataclass(frozen=True, kw_only=True)
class RetrievalSection:
    """``retrieval:``, the retrieval configuration under test."""
    config: str = setting(path_text)


def _template(parse: Callable[[str], Any]) -> Callable[[Any, _Where], str]:
    """Text that ``parse`` (gate.inputs.http_templates) accepts."""
    def check(value: Any, where: _Where) -> str:
        written = text(value, where)
        try:
            parse(written)
        except TemplateError as error:
            raise where.error(error.message) from None
        return written

    return check


http_url = _template(parse_url)
json_path = _template(parse_path)


def http_body(value: Any, where: _Where) -> Any:
    """``runner.http.body``: a mapping or list, the JSON body, its placeholders checked; an error
    names the line of the value at fault."""
    if not isinstance(value, (dict, CommentedMap, list, CommentedSeq)):
        raise where.error(f"expected a mapping or a list (the JSON body), got {_type_name(value)}")
    plain = anything(value, where)
    try:
        parse_body(plain)
    except TemplateError as error:
        line = _nested_line(value, error.where) or where.line
        dotted = ".".join(str(step) for step in (where.key, *error.where))
        raise InputError(where.path, line, f"key '{limits.shorten(dotted, 120)}': {error.message}") from None
    return plain


def _nested_line(node: Any, steps: tuple[str | int, ...]) -> int | None:
    """The line of the value ``steps`` (keys and list indexes) below a ruamel.yaml node, or None."""
    line = None
    for step in steps:
        if isinstance(node, dict):
            key = next((k for k in node if str(k) == str(step)), None)
            if key is None:
                break
            line, node = yaml_key_line(node, key) or line, node[key]
        elif isinstance(node, list) and isinstance(step, int) and step < len(node):
            try:
                line = node.lc.item(step)[0] + 1  # type: ignore[attr-defined]
            except Exception:  # noqa: BLE001 - plain lists (tests) have no positions
                pass
            node = node[step]
        else:
            break
    return line


def http_headers(value: Any, where: _Where) -> Mapping[str, str]:
    """``runner.http.headers``: header name -> value, ``${NAME}`` naming environment variables."""
    headers = mapping(value, where)
    out: dict[str, str] = {}
    for name, item in headers.items():
        written = text(item, _Where(where.path, where.line, f"{where.key}.{name}"))
        try:
            parse_header(name, written)
        except TemplateError as error:
            raise InputError(where.path, yaml_key_line(value, name) or where.line,
                             f"key '{where.key}': {error.message}") from None
        if name.lower() in (known.lower() for known in out):
            raise where.error(f"header '{limits.shorten(name)}' is given twice (header names ignore case)")
        out[name] = written
    return out


@dataclass(frozen=True, kw_only=True)
class HttpRunnerConfig:
    """``runner.http:``, the HTTP runner: a search service asked one request per query
    (docs/runners.md, the HTTP runner). ``url``, ``hits``, ``id`` and ``score`` are required
    when ``runner.type`` is ``http`` (checked when the runner is made)."""
    url: str | None = setting(http_url, None)
    # GET or POST; unset: POST when a body is given, else GET.
    method: str | None = setting(one_of("GET", "POST"), None)
    body: Any = setting(http_body, None)
    hits: str | None = setting(json_path, None)
    id: str | None = setting(json_path, None)
    score: str | None = setting(json_path, None)
    # The server-reported latency in ms (Elasticsearch's `took`); unset: the measured round trip.
    latency: str | None = setting(json_path, None)
    # What an answer without the hits path's last key is: refused, or a query with no hits
    # (Vespa leaves root.children out when nothing matches).
    missing_hits: str = setting(one_of("refuse", "empty"), "refuse")
    headers: Mapping[str, str] = setting(http_headers, {})
    depth: int = setting(in_range(positive_integer, 1, limits.MAX_CUTOFF), 100)
    concurrency: int = setting(in_range(positive_integer, 1, 64), 4)
    retries: int = setting(in_range(integer, 0, 20), 3)
    backoff: float = setting(in_range(number, 0.0, 30.0), 0.5)
    rate_limit: float = setting(in_range(number, 0.0, 100_000.0), 0.0)
    timeout: float = setting(in_range(number, 0.0, 3600.0, low_open=True), 10.0)
    max_queries: int = setting(in_range(integer, 0, 1 << 31), 0)
    max_seconds: float = setting(in_range(number, 0.0, 7 * 24 * 3600.0), 0.0)


@dataclass(frozen=True, kw_only=True)
class RunnerConfig:
    """``runner:``, how a run is produced."""
    type: str = setting(one_of("command", "run-file", "reference", "http"), "command")
    command: str | None = setting(text, None)
    shell: bool = setting(boolean, False)
    timeout: float = setting(in_range(number, 0.0, 7 * 24 * 3600.0, low_open=True), 3600.0)
    env_passthrough: tuple[str, ...] = setting(text_list, ())
    # Globs (relative to the repository) of the code a run depends on; default: the whole
    # git tree of the code under test (the gate's own folders aside).
    inputs: tuple[str, ...] = setting(text_list, ())
    baseline_run: str | None = setting(path_text, None)
    candidate_run: str | None = setting(path_text, None)
    # The timings sidecars of those runs (docs/runners.md: timings), each optional.
    baseline_timings: str | None = setting(path_text, None)
    candidate_timings: str | None = setting(path_text, None)
    options: Mapping[str, Any] = setting(mapping, {})
    http: HttpRunnerConfig = section(HttpRunnerConfig)


@dataclass(frozen=True, kw_only=True)
class BaselineConfig:
    """``baseline:``, where the archived baseline's manifest lives."""
    manifest: str = setting(path_text, ".retrieval-gate/baseline/manifest.yml")


@dataclass(frozen=True, kw_only=True)
class CacheConfig:
    """``cache:``, the run cache keyed by fingerprint."""
    dir: str = setting(path_text, ".retrieval-gate/cache")
    enabled: bool = setting(boolean, True)


@dataclass(frozen=True, kw_only=True)
class StatisticsConfig:
    """``statistics:``, the bootstrap's size, seed and interval."""
    samples: int = setting(in_range(positive_integer, 1, limits.MAX_SAMPLES), 10_000)
    seed: int = setting(seed, 7)
    ci_method: str = setting(one_of("percentile", "basic", "bca"), "percentile")


@dataclass(frozen=True, kw_only=True)
class StrataConfig:
    """``strata:``, traffic share of each stratum (fractions summing to 1), a qid->stratum TSV
    when the query file has no stratum field, and strata whose regression fails the gate."""
    shares: Mapping[str, Any] | None = setting(mapping, None)
    assignments: str | None = setting(path_text, None)
    guarded: tuple[str, ...] = setting(text_list, ())


@dataclass(frozen=True, kw_only=True)
class LeakageConfig:
    """``leakage:``, golden queries found in the corpus."""
    enabled: bool = setting(boolean, True)
    modes: tuple[str, ...] = setting(list_of("exact", "trigram-jaccard"), ("exact", "trigram-jaccard"))
    threshold: float = setting(in_range(number, 0.0, 1.0, low_open=True), 0.85)
    min_tokens: int = setting(in_range(positive_integer, 1, 10_000), 3)


@dataclass(frozen=True, kw_only=True)
class TuningConfig:
    """``tuning:``, the queries tunable parameters were fitted on (a query file or a list of
    ids), optional explicit reporting (held-out) queries (default: golden minus tuning), and the
    parameters themselves."""
    queries: Any = setting(anything, None)
    holdout: Any = setting(anything, None)
    params: tuple[str, ...] = setting(text_list, ())


def sweep_grid(value: Any, where: _Where) -> Mapping[str, tuple[Any, ...]]:
    """``{dotted.key: [value, ...]}``: each key a retrieval-config path, each list at least one
    distinct plain value (text, number, boolean or null); at most MAX_SWEEP_CELLS combinations."""
    grid = mapping(value, where)
    out: dict[str, tuple[Any, ...]] = {}
    cells = 1
    for key, values in grid.items():
        _check_sweep_key(key, values, out, where)
        _check_sweep_values(key, values, where)
        out[key] = tuple(values)
        cells *= len(values)
    if cells > limits.MAX_SWEEP_CELLS:
        raise where.error(f"the grid has {cells} cells (each a run); at most {limits.MAX_SWEEP_CELLS}")
    return out


def _check_sweep_key(key: str, values: Any, earlier: Mapping[str, Any], where: _Where) -> None:
    """One key of the grid: a dotted config key holding a non-empty list, inside no ``earlier`` key
    and holding none (a cell would set both)."""
    if (not key or key != key.strip() or any(c.isspace() for c in key) or key.startswith(".")
            or key.endswith(".") or ".." in key):
        raise where.error(f"'{limits.shorten(key, 60)}' is not a dotted config key (e.g. fusion.rrf_k)")
    if not isinstance(values, list) or not values:
        raise where.error(f"'{key}': expected a non-empty list of values, got {_type_name(values)}")
    for other in earlier:
        if key.startswith(other + ".") or other.startswith(key + "."):
            raise where.error(f"'{key}' and '{other}': one is inside the other, so a cell would set both")


def _check_sweep_values(key: str, values: list[Any], where: _Where) -> None:
    """The values of one key: plain (text, a finite number, a boolean or null), none listed twice."""
    seen: set[str] = set()
    for item in values:
        if isinstance(item, (dict, list)):
            raise where.error(f"'{key}': each value must be text, a number, true/false or null, got "
                              f"{_type_name(item)}")
        if isinstance(item, float) and not math.isfinite(item):
            raise where.error(f"'{key}': {item} is not a finite number")
        # 1 and 1.0 are one value (YAML and the runner's config read them alike)
        canonical = json.dumps(float(item) if isinstance(item, (int, float)) and not isinstance(item, bool)
                               else item)
        if canonical in seen:
            raise where.error(f"'{key}': the value {canonical} is listed twice")
        seen.add(canonical)


@dataclass(frozen=True, kw_only=True)
class SweepConfig:
    """``sweep:``, a grid of retrieval configs scored to measure the tuning leak."""
    # Dotted retrieval-config keys and the values each takes; the grid is every combination.
    params: Mapping[str, tuple[Any, ...]] = setting(sweep_grid, {})
    folds: int = setting(in_range(positive_integer, 2, 100), 5)


@dataclass(frozen=True, kw_only=True)
class NoiseConfig:
    """``noise:``, the run-to-run noise band."""
    # A stored noise band (noise.json from `retrieval-gate noise`); the manifest's band wins when both exist.
    file: str | None = setting(path_text, None)
    repeats: int = setting(in_range(positive_integer, 2, limits.MAX_REPEATS), 10)
    # Config keys (or prefixes) that build the index: a band measured under other values is stale.
    invalidate_on: tuple[str, ...] = setting(text_list, ("index", "embedding", "ingestion", "chunking", "bm25",
                                                         "ann"))
    base_seed: int = setting(in_range(integer, 0, limits.MAX_SEED - limits.MAX_REPEATS), 1000)
    # Runs of the candidate in all: above 1, a verdict run-to-run noise leaves undecided is
    # decided on per-query means against the stored baseline repeats (README: repeats).
    candidate_runs: int = setting(in_range(positive_integer, 1, limits.MAX_REPEATS), 1)
    # always: every run up front, one look at alpha (never weaker than one run); adaptive: the
    # reruns only when the first look is undecided by noise, each of two looks at alpha/2 (fewer
    # runs, at some power: README, repeats).
    rerun: str = setting(one_of("always", "adaptive"), "always")


@dataclass(frozen=True, kw_only=True)
class AttributionConfig:
    """``attribution:``, the 2^k grid of bundled changes."""
    enabled: bool = setting(boolean, True)
    # More changed factors than this are reported as a bundle (2^k runs would be needed).
    max_factors: int = setting(in_range(positive_integer, 1, 6), 3)
    # Named factors as groups of dotted paths; default: each changed top-level group.
    factors: Mapping[str, Any] = setting(mapping, {})


@dataclass(frozen=True, kw_only=True)
class JudgedConfig:
    """``judged:``, the depth the unjudged share is measured at, and how the qrels were judged."""
    k: int = setting(in_range(positive_integer, 1, limits.MAX_CUTOFF), 10)
    # pooled: an unjudged document is one the judges never saw, and the policy's judged-share
    # limits apply; relevance-only: the qrels list only relevant documents, unjudged means not
    # relevant, and the limits are off while the qrels judge nothing non-relevant
    # (gate.checks.judged_share).
    qrels_style: str = setting(one_of("pooled", "relevance-only"), "pooled")
    # Beside unjudged.tsv, the same documents for a labelling tool: unjudged-quepid.csv (Quepid's
    # import CSV) and/or unjudged-rank-eval.json (a _rank_eval body to rate) (gate.pipeline.judgments).
    export: tuple[str, ...] = setting(list_of("quepid", "rank-eval", allow_empty=True), ())


@dataclass(frozen=True)
class IncreaseLimit:
    """``policy.latency.p95_max_increase`` / ``policy.cost.max_increase``: how much the candidate
    may add, relative to the baseline (``"20%"``: ``value`` 0.2) or absolute (``"15ms"``; cost: a
    plain number, per query)."""
    value: float
    relative: bool
    unit: str = ""  # "ms" for an absolute latency
    # As the config wrote it ("20%", "15ms", 0.002): what as_dotted gives back, so a config written
    # back reads as the same limit, digit for digit.
    written: str | float | None = field(default=None, compare=False)

    def text(self) -> str:
        return f"{self.value * 100:g}%" if self.relative else f"{self.value:g}{self.unit}"

    def as_written(self) -> str | float:
        return self.written if self.written is not None else self.text()


_LIMIT = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(%|ms)\s*\Z")


def _increase_limit(value: Any, where: _Where, absolute_unit: str) -> IncreaseLimit:
    written = "'20%' or '15ms'" if absolute_unit else "'20%' or a number (cost per query)"
    if not absolute_unit and not isinstance(value, str):
        amount = in_range(number, 0.0)(value, where)
        return IncreaseLimit(amount, False, written=amount)
    if not isinstance(value, str):
        raise where.error(f"expected {written}, got {_type_name(value)}")
    found = _LIMIT.match(value)
    if found is None or (found.group(2) == "ms" and not absolute_unit):
        raise where.error(f"expected {written}, got '{limits.shorten(value)}'")
    amount = float(found.group(1))
    if not math.isfinite(amount):  # 400 digits parse to inf: a limit nothing could breach
        raise where.error(f"expected {written} with a finite number, got '{limits.shorten(value)}'")
    if found.group(2) == "%":
        return IncreaseLimit(amount / 100.0, True, written=value)
    return IncreaseLimit(amount, False, absolute_unit, written=value)


def latency_limit(value: Any, where: _Where) -> IncreaseLimit:
    return _increase_limit(value, where, "ms")


def cost_limit(value: Any, where: _Where) -> IncreaseLimit:
    return _increase_limit(value, where, "")


@dataclass(frozen=True, kw_only=True)
class LatencyPolicy:
    """``policy.latency:``, the latency the candidate may add (README: latency and cost)."""
    # Fails when the p95 latency's increase is beyond the noise band's latency threshold and the
    # interval's lower end is above this limit.
    p95_max_increase: IncreaseLimit | None = setting(latency_limit, None)


@dataclass(frozen=True, kw_only=True)
class CostPolicy:
    """``policy.cost:``, the cost per query the candidate may add."""
    max_increase: IncreaseLimit | None = setting(cost_limit, None)


@dataclass(frozen=True, kw_only=True)
class Policy:
    """``policy:``, the limits the verdict applies (README: policy defaults)."""
    # regression: fail when a regression beyond the noise band is shown, else pass with the
    # power line (what this set catches); non-inferiority: pass only when "no worse than
    # max_regression" is shown, inconclusive when it cannot be (README: policy modes).
    mode: str = setting(one_of("regression", "non-inferiority"), "regression")
    # The margin: the non-inferiority mode's tolerance, and the regression the setup check and
    # the power line measure the golden set against.
    max_regression: float = setting(in_range(number, 0.0), 0.02)
    require_improvement: bool = setting(boolean, False)
    inconclusive_blocks: bool = setting(boolean, True)
    # Leaked golden queries are left out of the reporting set.
    exclude_leaked: bool = setting(boolean, True)
    # Golden queries that may newly appear in the candidate's corpus before the gate fails.
    max_leaked: int = setting(in_range(integer, 0), 0)
    # Largest share of the candidate's top k that may be unjudged.
    max_unjudged: float = setting(fraction, 0.3)
    # Largest fall of the judged share against the baseline.
    max_judged_drop: float = setting(fraction, 0.1)
    # A stratum whose minimum detectable effect exceeds this is flagged underpowered.
    min_effect: float = setting(in_range(number, 0.0), 0.02)
    # Share of traffic (strata shares) that may be damaged before the gate fails.
    max_damaged_traffic: float = setting(fraction, 0.2)
    # "Improvement shown" needs a current noise band: without one a delta may be run-to-run spread.
    improvement_needs_band: bool = setting(boolean, True)
    # calibrated: a one-sided sign-flip test and the bootstrap-t interval agree (non-inferiority:
    # Hall's skew-corrected interval too), >= 5 queries moved (README: the decision rule);
    # interval: the seed's rule on the reported percentile interval.
    decision: str = setting(one_of("calibrated", "interval"), "calibrated")
    # A validity check that could not run (a prompts glob matching nothing, an undecodable prompt
    # file, a tuning split matching no golden query) fails the gate instead of warning.
    strict_validity: bool = setting(boolean, False)
    latency: LatencyPolicy = section(LatencyPolicy)
    cost: CostPolicy = section(CostPolicy)


_HTTPS_URL = re.compile(r"https://[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?(/[A-Za-z0-9._~/%+=&?#:@!$,;-]*)?")


def is_https_url(url: str) -> bool:
    return len(url) <= 2000 and _HTTPS_URL.fullmatch(url) is not None


def https_url(value: Any, where: _Where) -> str:
    """An https address the PR comment links: nothing that could close the Markdown link or
    start another (no spaces, brackets, parentheses, quotes, angle brackets or backticks)."""
    url = text(value, where)
    if not is_https_url(url):
        raise where.error(f"expected an https:// address (letters, digits and URL punctuation, no spaces, brackets "
                          f"or quotes), got {url[:60]!r}")
    return url


@dataclass(frozen=True, kw_only=True)
class HistoryConfig:
    """``history:``, where the history page (``retrieval-gate history``, published by the archive
    workflow) lives: the comment links it."""
    url: str | None = setting(https_url, None)


@dataclass(frozen=True, kw_only=True)
class Config:
    """A checked ``.retrieval-gate.yml``: one typed field per key, one dataclass per block."""
    path: Path  # the config file itself
    root: Path  # its folder: every relative path is resolved against it
    suite: str = setting(suite_name, "retrieval")
    golden: GoldenConfig = section(GoldenConfig)
    corpus: str | None = setting(path_text, None)
    corpus_location: str | None = setting(text, None)
    metric: str = setting(text, "nDCG@10")
    also: tuple[str, ...] = setting(text_list, ("RR@10", "R@100", "Judged@10"))
    retrieval: RetrievalSection = section(RetrievalSection)
    runner: RunnerConfig = section(RunnerConfig)
    baseline: BaselineConfig = section(BaselineConfig)
    cache: CacheConfig = section(CacheConfig)
    statistics: StatisticsConfig = section(StatisticsConfig)
    environment: tuple[str, ...] = setting(text_list, ())
    strata: StrataConfig = section(StrataConfig)
    leakage: LeakageConfig = section(LeakageConfig)
    tuning: TuningConfig = section(TuningConfig)
    sweep: SweepConfig = section(SweepConfig)
    prompts: tuple[str, ...] = setting(text_list, ())
    # Repository globs whose change makes the gate relevant; default: the retrieval config,
    # the gate config, the yardstick files, corpus, prompts, environment files, .github/workflows/.
    watch: tuple[str, ...] = setting(text_list, ())
    noise: NoiseConfig = section(NoiseConfig)
    attribution: AttributionConfig = section(AttributionConfig)
    judged: JudgedConfig = section(JudgedConfig)
    policy: Policy = section(Policy)
    history: HistoryConfig = section(HistoryConfig)
    lines: Mapping[str, int | None] = field(default_factory=dict)  # dotted key -> its line in the file
    # Where the code under test lives. The yardstick (golden files, strata, tuning
    # split, manifest, noise band) resolves against ``root``, which on a PR is a
    # copy of the base commit's files; the retrieval config, corpus, prompts,
    # runner and cache resolve against the workspace (the PR head).
    workspace: Path | None = None

    @property
    def retrieval_config(self) -> str:
        return self.retrieval.config

    @property
    def manifest(self) -> str:
        return self.baseline.manifest

    @property
    def cache_dir(self) -> str:
        return self.cache.dir

    @property
    def cache_enabled(self) -> bool:
        return self.cache.enabled

    def value(self, dotted: str) -> Any:
        """The value of a dotted key (``"noise.file"``), for messages that quote it."""
        node: Any = self
        for part in dotted.split("."):
            node = getattr(node, part)
        return node

    def as_dotted(self) -> dict[str, Any]:
        """Every key's value by dotted name: the config as the file would write it back."""
        out: dict[str, Any] = {}
        _dotted(self, "", out)
        return out

    @property
    def workspace_root(self) -> Path:
        return self.workspace if self.workspace is not None else self.root

    def here(self, relative: str | None) -> Path | None:
        """A path of the code under test (PR head), resolved against the workspace."""
        if relative is None:
            return None
        path = Path(relative)
        return path if path.is_absolute() else self.workspace_root / path

    def here_spec(self, relative: str) -> str:
        return relative if is_spec(relative) else str(self.here(relative))

    def resolve(self, relative: str | None) -> Path | None:
        """A path from the config, resolved against the config's folder (irds: ids kept)."""
        if relative is None:
            return None
        if is_spec(relative):
            return Path(relative)
        path = Path(relative)
        return path if path.is_absolute() else self.root / path

    def spec(self, relative: str) -> str:
        """Like :meth:`resolve` but as a string, keeping ``irds:`` ids untouched."""
        return relative if is_spec(relative) else str(self.resolve(relative))

    def key_error(self, key: str, message: str) -> InputError:
        """An error about the value of ``key``, at its line in the config file."""
        return InputError(str(self.path), self.lines.get(key), f"key '{key}': {message}")


def _keys(kind: type) -> list[Any]:
    """The fields of ``kind`` that are keys of the file, in the file's documented order."""
    return [f for f in fields(kind) if "check" in f.metadata or "section" in f.metadata]


def _dotted(node: Any, prefix: str, out: dict[str, Any]) -> None:
    for f in _keys(type(node)):
        value = getattr(node, f.name)
        if "section" in f.metadata:
            _dotted(value, prefix + f.name + ".", out)
        else:
            out[prefix + f.name] = value.as_written() if isinstance(value, IncreaseLimit) else value


def schema(kind: type = Config) -> dict[str, Any]:
    """The accepted keys as ``{key: (checker, default)}``, blocks nested: derived from the
    dataclasses, for the fuzzer and the documentation test."""
    out: dict[str, Any] = {}
    for f in _keys(kind):
        out[f.name] = schema(f.metadata["section"]) if "section" in f.metadata else (f.metadata["check"],
                                                                                    f.metadata["default"])
    return out


SCHEMA: dict[str, Any] = schema()


def is_spec(value: str) -> bool:
    return value.startswith("irds:")


# --------------------------------------------------------------------------- loading


def _plain(value: Any) -> Any:
    """Plain Python data: ruamel's round-trip types (CommentedMap, ScalarFloat, ScalarInt, ...)
    become dict, list, float, int, str, so that nothing downstream meets a YAML class."""
    if isinstance(value, (dict, CommentedMap)):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, CommentedSeq)):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    for kind in (int, float, str):
        if isinstance(value, kind):
            return kind(value)
    return value


def yaml_key_line(node: Any, key: Any) -> int | None:
    """1-based line of ``key`` in a ruamel.yaml mapping, or None (plain dicts have no positions)."""
    try:
        line: int = node.lc.key(key)[0] + 1
    except Exception:  # noqa: BLE001 - plain dicts (tests) have no positions
        return None
    return line


def yaml_node_line(node: Any) -> int | None:
    """1-based line where a ruamel.yaml node starts, or None."""
    try:
        line: int = node.lc.line + 1
    except Exception:  # noqa: BLE001
        return None
    return line


def _check_block(node: Any, kind: type, path: str, prefix: str, lines: dict[str, int | None],
                 block_line: int | None = None) -> dict[str, Any]:
    """The checked values of one block of the file, as the keyword arguments of ``kind``."""
    if not isinstance(node, (dict, CommentedMap)):
        where = _Where(path, yaml_node_line(node), prefix.rstrip(".") or "(top level)")
        raise where.error(f"expected a mapping, got {_type_name(node)}")
    keys = _keys(kind)
    names = [f.name for f in keys]
    for key in node:
        key_text = str(key)
        if key_text not in names:
            hint = difflib.get_close_matches(key_text, names, n=1)
            extra = f" (did you mean '{prefix}{hint[0]}'?)" if hint else f" (known: {', '.join(names)})"
            raise InputError(path, yaml_key_line(node, key), f"unknown key '{prefix}{key_text}'{extra}")
    values: dict[str, Any] = {}
    for f in keys:
        dotted = prefix + f.name
        if f.name in node and node[f.name] is None:
            raise _explicit_null(f, path, yaml_key_line(node, f.name), dotted)
        given = f.name in node
        if "section" in f.metadata:
            block = node[f.name] if given else CommentedMap()
            fields_of = _check_block(block, f.metadata["section"], path, dotted + ".", lines,
                                     yaml_key_line(node, f.name))
            values[f.name] = f.metadata["section"](**fields_of)
            continue
        if not given:
            if f.metadata["default"] is REQUIRED:
                raise InputError(path, block_line if prefix else None, f"missing required key '{dotted}'")
            values[f.name] = f.metadata["default"]
            continue
        line = yaml_key_line(node, f.name)
        lines[dotted] = line
        values[f.name] = f.metadata["check"](node[f.name], _Where(path, line, dotted))
    return values


def _explicit_null(f: Any, path: str, line: int | None, dotted: str) -> InputError:
    """A key written with no value (``max_regression:``, ``~``, ``null``): YAML reads null, which
    must not silently mean the default (a half-deleted line is a policy nobody chose)."""
    if "section" in f.metadata and any(k.metadata.get("default") is REQUIRED for k in fields(f.metadata["section"])):
        remedy = "it is required: give it its keys"
    elif "section" in f.metadata:
        remedy = "give it keys, or remove the line to use the defaults of its keys"
    elif f.metadata["default"] is REQUIRED:
        remedy = "it is required: give it a value"
    elif f.metadata["default"] is None:
        remedy = "remove the key to leave it unset"
    else:
        remedy = "give it a value, or remove the key to use the default"
    return InputError(path, line, f"key '{dotted}' has no value (null): {remedy}")


def load_config(path: str | Path = DEFAULT_PATH, text_override: str | None = None) -> Config:
    """Read and check a gate config. ``text_override`` reads that text as if it were the file
    (the base commit's copy, from ``git show``)."""
    config_path = Path(path)
    display = str(path)
    if text_override is None:
        try:
            source = read_text_file(config_path, "a gate config")
        except InputError as error:
            if error.message == "no such file":
                raise InputError(display, None, "no such file (create it, or pass --config FILE)") from None
            raise
    else:
        source = text_override
    document = load_yaml(source, display)
    if document is None:
        raise InputError(display, None, "the config is empty")
    if isinstance(document, CommentedMap) and "suites" in document:
        # A suites file (gate.inputs.suite_set) lists several suites' configs; only run and plan
        # (and the Action) read it: any other command works on one suite.
        raise InputError(display, yaml_key_line(document, "suites"),
                         "a suites file (it lists several suites' gate configs): run, plan and the Action take it; "
                         "give this command one suite's config (--config <that suite's .retrieval-gate.yml>)")
    lines: dict[str, int | None] = {}
    values = _check_block(document, Config, display, "", lines)
    # The folder the config file is in (its directories resolved, the file itself not): a config
    # that is a symlink to another folder still names paths beside itself.
    root = config_path.absolute().parent.resolve()
    return Config(path=config_path, root=root, lines=lines, **values)
