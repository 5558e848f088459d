"""``.retrieval-gate.yml`` -> :class:`Config`.

The file is read with ruamel.yaml's round-trip loader so that every error can
name the line of the key at fault. The accepted keys are declared once, in
:data:`SCHEMA`; an unknown key is an error with a did-you-mean, because a
misspelt policy key that is silently ignored is a gate that silently passes.
Paths are relative to the config file's folder.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from gate.errors import InputError
from gate.io import limits
from gate.io.textlines import read_text_file
from gate.io.yaml_source import load_yaml

DEFAULT_PATH = ".retrieval-gate.yml"


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
    return str(value)


def integer(value: Any, where: _Where) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise where.error(f"expected an integer, got {_type_name(value)}")
    return int(value)


def positive_integer(value: Any, where: _Where) -> int:
    value = integer(value, where)
    if value < 1:
        raise where.error(f"expected a positive integer, got {value}")
    return value


def number(value: Any, where: _Where) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise where.error(f"expected a number, got {_type_name(value)}")
    value = float(value)
    if not math.isfinite(value):
        raise where.error(f"expected a finite number, got {value}")
    return value


def in_range(checker: Callable[[Any, _Where], Any], low: float | None = None, high: float | None = None,
             *, low_open: bool = False) -> Callable[[Any, _Where], Any]:
    """``checker``, then ``low <= value <= high`` (``low < value`` with ``low_open``)."""
    def check(value: Any, where: _Where) -> Any:
        value = checker(value, where)
        too_low = low is not None and (value <= low if low_open else value < low)
        if too_low or (high is not None and value > high):
            lo = "" if low is None else (f"above {low:g}" if low_open else f"at least {low:g}")
            hi = "" if high is None else f"at most {high:g}"
            raise where.error(f"expected a value {' and '.join(p for p in (lo, hi) if p)}, got {value:g}")
        return value

    return check


def fraction(value: Any, where: _Where) -> float:
    return in_range(number, 0.0, 1.0)(value, where)


seed = in_range(integer, 0, limits.MAX_SEED)


def boolean(value: Any, where: _Where) -> bool:
    if not isinstance(value, bool):
        raise where.error(f"expected true or false, got {_type_name(value)}")
    return value


def text_list(value: Any, where: _Where) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, (list, CommentedSeq)):
        raise where.error(f"expected a list of text, got {_type_name(value)}")
    return tuple(text(item, where) for item in value)


def one_of(*choices: str) -> Callable[[Any, _Where], str]:
    def check(value: Any, where: _Where) -> str:
        value = text(value, where)
        if value not in choices:
            hint = difflib.get_close_matches(value, choices, n=1)
            extra = f" (did you mean '{hint[0]}'?)" if hint else ""
            raise where.error(f"'{value}' is not one of {', '.join(choices)}{extra}")
        return value

    return check


def list_of(*choices: str) -> Callable[[Any, _Where], tuple[str, ...]]:
    """A list whose every item is one of ``choices`` (and at least one item)."""
    pick = one_of(*choices)

    def check(value: Any, where: _Where) -> tuple[str, ...]:
        items = tuple(pick(item, where) for item in text_list(value, where))
        if not items:
            raise where.error(f"expected at least one of {', '.join(choices)}")
        return items

    return check


def suite_name(value: Any, where: _Where) -> str:
    """The suite names the comment (its hidden marker) and the status: short and plain."""
    value = text(value, where)
    if not value.strip() or len(value) > 100 or any(c in value for c in "\n\r\t<>`|") or not value.isprintable():
        raise where.error(f"expected a short plain name (letters, digits, '-', '_', spaces; at most 100), got "
                          f"{value[:40]!r}")
    return value


def mapping(value: Any, where: _Where) -> dict[str, Any]:
    """A free-form mapping (values kept as plain Python data)."""
    if not isinstance(value, (dict, CommentedMap)):
        raise where.error(f"expected a mapping, got {_type_name(value)}")
    return _plain(value)


def anything(value: Any, where: _Where) -> Any:
    return _plain(value)


REQUIRED = ...

SCHEMA: dict[str, Any] = {
    "suite": (suite_name, "retrieval"),
    "golden": {
        "queries": (text, REQUIRED),
        "qrels": (text, REQUIRED),
        "rel": (in_range(positive_integer, 1, 1 << 31), 1),
        "negative_is_judged": (boolean, None),
    },
    "corpus": (text, None),
    "corpus_location": (text, None),
    "metric": (text, "nDCG@10"),
    "also": (text_list, ("RR@10", "R@100", "Judged@10")),
    "retrieval": {
        "config": (text, REQUIRED),
    },
    "runner": {
        "type": (one_of("command", "run-file", "reference"), "command"),
        "command": (text, None),
        "shell": (boolean, False),
        "timeout": (in_range(number, 0.0, 7 * 24 * 3600.0, low_open=True), 3600.0),
        "env_passthrough": (text_list, ()),
        # Globs (relative to the repository) of the code a run depends on; default: the whole
        # git tree of the code under test (the gate's own folders aside).
        "inputs": (text_list, ()),
        "baseline_run": (text, None),
        "candidate_run": (text, None),
        "options": (mapping, {}),
    },
    "baseline": {
        "manifest": (text, ".retrieval-gate/baseline/manifest.yml"),
    },
    "cache": {
        "dir": (text, ".retrieval-gate/cache"),
        "enabled": (boolean, True),
    },
    "statistics": {
        "samples": (in_range(positive_integer, 1, limits.MAX_SAMPLES), 10_000),
        "seed": (seed, 7),
        "ci_method": (one_of("percentile", "basic", "bca"), "percentile"),
    },
    "environment": (text_list, ()),
    "strata": {
        # Traffic share of each stratum (fractions summing to 1), a qid->stratum
        # TSV when the query file has no stratum field, and strata whose
        # regression fails the gate.
        "shares": (mapping, None),
        "assignments": (text, None),
        "guarded": (text_list, ()),
    },
    "leakage": {
        "enabled": (boolean, True),
        "modes": (list_of("exact", "trigram-jaccard"), ("exact", "trigram-jaccard")),
        "threshold": (in_range(number, 0.0, 1.0, low_open=True), 0.85),
        "min_tokens": (in_range(positive_integer, 1, 10_000), 3),
    },
    "tuning": {
        # Queries the tunable parameters were fitted on: a query file or a list of ids.
        "queries": (anything, None),
        # Optional explicit reporting (held-out) queries; default: golden minus tuning.
        "holdout": (anything, None),
        "params": (text_list, ()),
    },
    "prompts": (text_list, ()),
    # Repository globs whose change makes the gate relevant; default: the retrieval config,
    # the gate config, the yardstick files, corpus, prompts, environment files, .github/workflows/.
    "watch": (text_list, ()),
    "noise": {
        # A stored noise band (noise.json from `retrieval-gate noise`); the manifest's band wins when both exist.
        "file": (text, None),
        "repeats": (in_range(positive_integer, 2, limits.MAX_REPEATS), 10),
        # Config keys (or prefixes) that build the index: a band measured under other values is stale.
        "invalidate_on": (text_list, ("index", "embedding", "ingestion", "chunking", "bm25", "ann")),
        "base_seed": (in_range(integer, 0, limits.MAX_SEED - limits.MAX_REPEATS), 1000),
    },
    "attribution": {
        "enabled": (boolean, True),
        # More changed factors than this are reported as a bundle (2^k runs would be needed).
        "max_factors": (in_range(positive_integer, 1, 6), 3),
        # Named factors as groups of dotted paths; default: each changed top-level group.
        "factors": (mapping, {}),
    },
    "judged": {
        "k": (in_range(positive_integer, 1, limits.MAX_CUTOFF), 10),
    },
    "policy": {
        # Non-inferiority margin on the primary metric (README: policy defaults).
        "max_regression": (in_range(number, 0.0), 0.02),
        "require_improvement": (boolean, False),
        "inconclusive_blocks": (boolean, True),
        # Leaked golden queries are left out of the reporting set.
        "exclude_leaked": (boolean, True),
        # Golden queries that may newly appear in the candidate's corpus before the gate fails.
        "max_leaked": (in_range(integer, 0), 0),
        # Largest share of the candidate's top k that may be unjudged.
        "max_unjudged": (fraction, 0.3),
        # Largest fall of the judged share against the baseline.
        "max_judged_drop": (fraction, 0.1),
        # A stratum whose minimum detectable effect exceeds this is flagged underpowered.
        "min_effect": (in_range(number, 0.0), 0.02),
        # Share of traffic (strata shares) that may be damaged before the gate fails.
        "max_damaged_traffic": (fraction, 0.2),
        # "Improvement shown" needs a current noise band: without one a delta may be run-to-run spread.
        "improvement_needs_band": (boolean, True),
        # calibrated: sign-flip test and Hall bootstrap-t agree, >= 5 queries moved (README: the
        # decision rule); interval: the seed's rule on the reported percentile interval.
        "decision": (one_of("calibrated", "interval"), "calibrated"),
    },
}


# --------------------------------------------------------------------------- model


@dataclass(frozen=True)
class GoldenConfig:
    queries: str
    qrels: str
    rel: int = 1
    negative_is_judged: bool | None = None


@dataclass(frozen=True)
class RunnerConfig:
    type: str = "command"
    command: str | None = None
    shell: bool = False
    timeout: float = 3600.0
    env_passthrough: tuple[str, ...] = ()
    baseline_run: str | None = None
    candidate_run: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StatisticsConfig:
    samples: int = 10_000
    seed: int = 7
    ci_method: str = "percentile"


@dataclass(frozen=True)
class Config:
    path: Path  # the config file itself
    root: Path  # its folder: every relative path is resolved against it
    suite: str
    golden: GoldenConfig
    corpus: str | None
    corpus_location: str | None
    metric: str
    also: tuple[str, ...]
    retrieval_config: str
    runner: RunnerConfig
    manifest: str
    cache_dir: str
    cache_enabled: bool
    statistics: StatisticsConfig
    environment: tuple[str, ...]
    raw: Mapping[str, Any] = field(default_factory=dict)  # checked values by dotted section
    lines: Mapping[str, int | None] = field(default_factory=dict)  # dotted key -> its line in the file
    # Where the code under test lives. The yardstick (golden files, strata, tuning
    # split, manifest, noise band) resolves against ``root``, which on a PR is a
    # copy of the base commit's files; the retrieval config, corpus, prompts,
    # runner and cache resolve against the workspace (the PR head).
    workspace: Path | None = None

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
        return node.lc.key(key)[0] + 1
    except Exception:  # noqa: BLE001 - plain dicts (tests) have no positions
        return None


def yaml_node_line(node: Any) -> int | None:
    """1-based line where a ruamel.yaml node starts, or None."""
    try:
        return node.lc.line + 1
    except Exception:  # noqa: BLE001
        return None


def _check_section(node: Any, schema: Mapping[str, Any], path: str, prefix: str, out: dict[str, Any],
                   section_line: int | None = None, lines: dict[str, int | None] | None = None) -> None:
    if not isinstance(node, (dict, CommentedMap)):
        where = _Where(path, yaml_node_line(node), prefix.rstrip(".") or "(top level)")
        raise where.error(f"expected a mapping, got {_type_name(node)}")
    for key in node:
        key_text = str(key)
        if key_text not in schema:
            hint = difflib.get_close_matches(key_text, list(schema), n=1)
            extra = f" (did you mean '{prefix}{hint[0]}'?)" if hint else f" (known: {', '.join(schema)})"
            raise InputError(path, yaml_key_line(node, key), f"unknown key '{prefix}{key_text}'{extra}")
    for key, spec in schema.items():
        dotted = prefix + key
        if isinstance(spec, dict):
            if key in node and node[key] is not None:
                _check_section(node[key], spec, path, dotted + ".", out, yaml_key_line(node, key), lines)
            else:
                _check_section(CommentedMap(), spec, path, dotted + ".", out, yaml_key_line(node, key), lines)
            continue
        checker, default = spec
        if key not in node or node[key] is None:
            if default is REQUIRED:
                line = section_line if prefix else None
                raise InputError(path, line, f"missing required key '{dotted}'")
            out[dotted] = default
            continue
        line = yaml_key_line(node, key)
        if lines is not None:
            lines[dotted] = line
        out[dotted] = checker(node[key], _Where(path, line, dotted))


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
    values: dict[str, Any] = {}
    lines: dict[str, int | None] = {}
    _check_section(document, SCHEMA, display, "", values, lines=lines)
    # The folder the config file is in (its directories resolved, the file itself not): a config
    # that is a symlink to another folder still names paths beside itself.
    root = config_path.absolute().parent.resolve()
    return Config(
        path=config_path,
        root=root,
        suite=values["suite"],
        golden=GoldenConfig(
            queries=values["golden.queries"],
            qrels=values["golden.qrels"],
            rel=values["golden.rel"],
            negative_is_judged=values["golden.negative_is_judged"],
        ),
        corpus=values["corpus"],
        corpus_location=values["corpus_location"],
        metric=values["metric"],
        also=tuple(values["also"]),
        retrieval_config=values["retrieval.config"],
        runner=RunnerConfig(
            type=values["runner.type"],
            command=values["runner.command"],
            shell=values["runner.shell"],
            timeout=values["runner.timeout"],
            env_passthrough=tuple(values["runner.env_passthrough"]),
            baseline_run=values["runner.baseline_run"],
            candidate_run=values["runner.candidate_run"],
            options=values["runner.options"],
        ),
        manifest=values["baseline.manifest"],
        cache_dir=values["cache.dir"],
        cache_enabled=values["cache.enabled"],
        statistics=StatisticsConfig(
            samples=values["statistics.samples"],
            seed=values["statistics.seed"],
            ci_method=values["statistics.ci_method"],
        ),
        environment=tuple(values["environment"]),
        raw=values,
        lines=lines,
    )
