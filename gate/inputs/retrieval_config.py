"""The retrieval configuration under test: load, canonical fingerprint, dotted diff.

The gate does not interpret the retrieval config; it fingerprints it, writes
it out for runners, and diffs it key by key (``embedding.model: a -> b``).
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from gate.common.errors import InputError
from gate.common.limits import shorten
from gate.inputs.readers.fields import parse_json_document
from gate.inputs.readers.textlines import read_text_file
from gate.inputs.readers.yaml_source import load_yaml

_MISSING = "<absent>"


@dataclass(frozen=True)
class RetrievalConfig:
    source: str  # where it was read from (a path, or "<base>:path" for git)
    data: Mapping[str, Any]
    suffix: str = ".yml"

    @property
    def sha256(self) -> str:
        return canonical_sha256(self.data)

    def flat(self) -> dict[str, Any]:
        return flatten(self.data)

    def to_text(self) -> str:
        """The config written out for a runner (YAML, or JSON for .json files)."""
        if self.suffix == ".json":
            return json.dumps(self.data, indent=2, sort_keys=True) + "\n"
        buffer = io.StringIO()
        yaml = YAML(typ="safe", pure=True)
        yaml.default_flow_style = False
        yaml.dump(_plain(self.data), buffer)
        return buffer.getvalue()

    def with_values(self, values: Mapping[str, Any]) -> RetrievalConfig:
        """A copy with dotted paths set (or removed, for the absent marker)."""
        data = json.loads(json.dumps(self.data))
        for dotted, value in values.items():
            set_dotted(data, dotted, value)
        return RetrievalConfig(self.source + " (modified)", data, self.suffix)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def canonical_json(data: Any) -> str:
    return json.dumps(_plain(data), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def canonical_sha256(data: Any) -> str:
    """sha256 of canonical JSON: key order and formatting do not change it."""
    return hashlib.sha256(canonical_json(data).encode("utf-8")).hexdigest()


def parse_retrieval_config(text: str, source: str, suffix: str = ".yml") -> RetrievalConfig:
    if suffix == ".json":
        data = parse_json_document(source, text)
    else:
        data = load_yaml(text, source, typ="safe")
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise InputError(source, None, "the retrieval config must be a mapping at the top level")
    _check_values(data, source)
    return RetrievalConfig(source, _plain(data), suffix if suffix == ".json" else ".yml")


def _check_values(data: Any, source: str) -> None:
    """Values the report can carry (its ``config_diff``) and a hash can be taken of: JSON's
    types only. A YAML timestamp, ``!!binary`` or ``!!set`` (or a NaN) has no JSON form."""
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        value, where = stack.pop()
        if isinstance(value, Mapping):
            for key, sub in value.items():
                if isinstance(key, bool) or not isinstance(key, (str, int)):
                    raise InputError(source, None, f"key {str(key)[:40]!r} under '{where or '(top)'}' is not text")
                stack.append((sub, f"{where}.{key}" if where else str(key)))
        elif isinstance(value, list):
            stack.extend((sub, f"{where}[{i}]") for i, sub in enumerate(value))
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise InputError(source, None, f"'{where}' is {value}: not a finite number")
        elif value is not None and not isinstance(value, (str, int, bool)):
            raise InputError(source, None, f"'{where}' is a {type(value).__name__}, not text, a number, true/false, "
                             "a list or a mapping (quote it)")


def load_retrieval_config(path: str | Path) -> RetrievalConfig:
    path = Path(path)
    try:
        text = read_text_file(path, "a retrieval config")
    except InputError as error:
        if error.message == "no such file":
            raise InputError(str(path), None, "no such file (retrieval.config in the gate config)") from None
        raise
    return parse_retrieval_config(text, str(path), path.suffix.lower())


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, dotted + "."))
        else:
            flat[dotted] = value
    return flat


def set_dotted(data: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = data
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    if value == _MISSING:
        node.pop(parts[-1], None)
    else:
        node[parts[-1]] = value


@dataclass(frozen=True)
class ConfigChange:
    path: str
    old: Any
    new: Any

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "old": _reportable(self.old), "new": _reportable(self.new)}


_REPORT_DEPTH = 16  # report.json is read back at most 64 levels deep, this value sits 3 down


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def _reportable(value: Any) -> Any:
    """A config value as report.json holds it: as it is, or - nested deeper than the report
    can be read back - its compact JSON text, shortened."""
    if _depth(value) <= _REPORT_DEPTH:
        return value
    return shorten(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str), 200)


def config_diff(old: RetrievalConfig, new: RetrievalConfig) -> list[ConfigChange]:
    """Keys whose values differ, as dotted paths; a key on one side only shows ``<absent>``."""
    before, after = old.flat(), new.flat()
    changes = []
    for key in sorted(set(before) | set(after)):
        b, a = before.get(key, _MISSING), after.get(key, _MISSING)
        if canonical_sha256({"v": b}) != canonical_sha256({"v": a}):
            changes.append(ConfigChange(key, b, a))
    return changes


ABSENT = _MISSING
