"""report.json: its one writer, its schema check and its validating reader (the report is
assembled once, in :mod:`gate.report.build`).

``report.json`` is a contract: every key is documented in
``gate/report/report.schema.json``. Versioning rule: adding keys bumps the
minor part of ``schema_version``; renaming or removing bumps the major part.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

from gate.common.errors import InputError
from gate.common.jsontext import json_text
from gate.report import spine
from gate.report.typed import InvalidRecord
from gate.verdict.reasons import DECISION_INTERVAL_CODES, LIMIT_CODES

# 1.11: judgments (anchored judgments mapped onto each side); 1.10: trend, history_url, latency, cost, timings_note
SCHEMA_VERSION = "1.11"


def report_json(data: Mapping[str, Any]) -> str:
    """report.json's text (:func:`gate.common.jsontext.json_text`)."""
    return json_text(data)


def report_record(data: Mapping[str, Any], what: str = "report.json") -> spine.Report:
    """The gate's own report as its typed record: built from ``data`` (its sections: records the
    gate built, or plain values), then held, as it will be written, to the schema the comment job
    holds it to (:func:`check_own_report`). A key or value of the wrong kind is the gate's own
    bug (:class:`gate.report.typed.InvalidRecord`, exit 4)."""
    report = spine.Report.from_dict(as_loaded(data))
    written = report.to_dict()
    # allow_nan=False: a NaN or an infinity written as a number is the gate's bug, raised here
    check_own_report(written, what, as_json=json.loads(json.dumps(written, allow_nan=False)))
    return report


def as_loaded(value: Any) -> Any:
    """``value`` as the records load it: arrays as lists (a tuple is the gate's own array), the
    records the gate built as they are."""
    if isinstance(value, Mapping):
        return {key: as_loaded(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_loaded(item) for item in value]
    return value


def read_report(data: Any, source: str) -> spine.Report:
    """An untrusted report (a fork's artifact) as its typed record: validated against the
    schema first (:class:`InputError` names the first key at fault), then built, once."""
    checked = reasons_as_of_1_9(validate_report(data, source))
    try:
        return spine.Report.from_dict(checked)
    except InvalidRecord as problem:  # the schema's check and the records' must agree; if not, still one line
        raise InputError(source, None, f"not a report this version can read: {problem}") from None


# Exactly as gates before schema 1.9 wrote them: "...; limit 20%" at the end of a message, and
# "decision interval [-0.058, +0.051]" (signed, three decimals) inside one.
_OLD_LIMIT = re.compile(r"; limit (\S+)\Z")
_OLD_END = r"([+-]?\d+\.\d+|-?∞|n/a)"  # gate.common.numbers.signed: an end not finite is ∞ or n/a
_OLD_INTERVAL = re.compile(rf"decision interval \[{_OLD_END}, {_OLD_END}\]")


def reasons_as_of_1_9(report: dict[str, Any]) -> dict[str, Any]:
    """A report of schema 1.8 or older (a comment job reading an artifact an older gate wrote)
    with its reasons' values as 1.9 keeps them beside the message: the limit of the two rules
    that name one, and the decision interval a calibrated statistical reason quotes (to the three
    decimals the message shows). Read once here, so that nothing downstream reads a message; a
    1.9 report is returned as it is."""
    version = report.get("schema_version")
    major, _, minor = str(version).partition(".")
    if not (major == "1" and minor.isdigit() and int(minor) < 9):
        return report
    upgraded = dict(report)
    for section, key in (("verdict", "reasons"), ("decision", "reasons"), ("accepted", "failed_on")):
        block = report.get(section)
        if isinstance(block, dict) and isinstance(block.get(key), list):
            upgraded[section] = {**block, key: [_reason_as_of_1_9(r) for r in block[key]]}
    return upgraded


def _reason_as_of_1_9(reason: Any) -> Any:
    if not isinstance(reason, dict) or not isinstance(reason.get("message"), str):
        return reason
    code, message, out = reason.get("code"), reason["message"], dict(reason)
    limit = _OLD_LIMIT.search(message) if code in LIMIT_CODES and "limit" not in reason else None
    if limit:
        out["limit"] = limit.group(1)
    interval = (_OLD_INTERVAL.search(message) if code in DECISION_INTERVAL_CODES and "decision_interval" not in reason
                else None)
    if interval:
        out["decision_interval"] = [None if end in ("∞", "-∞", "n/a") else float(end) for end in interval.groups()]
    return out


# --------------------------------------------------------------------------- reading a saved report

_SCHEMA_PATH = Path(__file__).with_name("report.schema.json")
_JSON_TYPES: dict[str, type | tuple[type, ...]] = {
    "object": dict, "array": list, "string": str, "boolean": bool, "null": type(None),
    "integer": int, "number": (int, float),
}


def _is_type(value: Any, name: str) -> bool:
    if name in ("integer", "number") and isinstance(value, bool):
        return False
    if name == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _JSON_TYPES[name])


class _Invalid(Exception):
    pass


def _check(value: Any, schema: Mapping[str, Any], root: Mapping[str, Any], where: str) -> None:
    """The JSON Schema subset report.schema.json uses: type, enum, const, pattern, minimum,
    minItems, maxItems, required, properties, additionalProperties, items, $ref, allOf, if/then. The rules are
    checked in this order (the first one broken is the one reported)."""
    if "$ref" in schema:
        _check(value, _referenced(schema["$ref"], root), root, where)
    _check_value(value, schema, where)
    for sub in schema.get("allOf", ()):
        _check(value, sub, root, where)
    if "if" in schema:
        _check_conditional(value, schema, root, where)
    if isinstance(value, dict):
        _check_object(value, schema, root, where)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            _check(item, schema["items"], root, f"{where}[{i}]")


def _referenced(ref: str, root: Mapping[str, Any]) -> Any:
    """The schema node a ``$ref`` (``#/definitions/...``) points to."""
    target: Any = root
    for part in ref.lstrip("#/").split("/"):
        target = target[part]
    return target


def _check_value(value: Any, schema: Mapping[str, Any], where: str) -> None:
    """The rules on the value itself: type, enum, const, pattern, minimum, minItems, maxItems."""
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not any(_is_type(value, k) for k in kinds):
            raise _Invalid(f"{where or 'the report'} must be {' or '.join(kinds)}, got {type(value).__name__}")
    if "enum" in schema and value not in schema["enum"]:
        raise _Invalid(f"{where} must be one of {', '.join(map(str, schema['enum']))}")
    if "const" in schema and value != schema["const"]:
        raise _Invalid(f"{where} must be {schema['const']!r}")
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        raise _Invalid(f"{where} does not match {schema['pattern']}")
    if "minimum" in schema and _is_type(value, "number") and value < schema["minimum"]:
        raise _Invalid(f"{where} must be at least {schema['minimum']}")
    if isinstance(value, list) and not schema.get("minItems", 0) <= len(value) <= schema.get("maxItems", len(value)):
        raise _Invalid(f"{where} must have {_items_allowed(schema)}, got {len(value)}")


def _items_allowed(schema: Mapping[str, Any]) -> str:
    low, high = schema.get("minItems", 0), schema.get("maxItems")
    return f"{low} items" if low == high else f"at least {low} items" if high is None else f"{low} to {high} items"


def _check_conditional(value: Any, schema: Mapping[str, Any], root: Mapping[str, Any], where: str) -> None:
    """if/then: ``then`` holds wherever ``if`` does."""
    try:
        _check(value, schema["if"], root, where)
    except _Invalid:
        return
    _check(value, schema.get("then", {}), root, where)


def _check_object(value: dict[str, Any], schema: Mapping[str, Any], root: Mapping[str, Any], where: str) -> None:
    """An object's rules: required, then each key against properties or additionalProperties."""
    for key in schema.get("required", ()):
        if key not in value:
            raise _Invalid(f"{where + '.' if where else ''}{key} is missing")
    props = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for key, sub in value.items():
        path = f"{where}.{key}" if where else str(key)
        if key in props:
            _check(sub, props[key], root, path)
        elif isinstance(extra, dict):
            _check(sub, extra, root, path)
        elif extra is False:
            raise _Invalid(f"{path} is not a report key")


@lru_cache(maxsize=1)
def _schema() -> Mapping[str, Any]:
    return cast(Mapping[str, Any], json.loads(_SCHEMA_PATH.read_text(encoding="utf-8")))


def validate_report(data: Any, source: str) -> dict[str, Any]:
    """``data`` checked against gate/report/report.schema.json (the subset of JSON Schema it
    uses, without the jsonschema package); :class:`InputError` names the first key at fault."""
    schema = _schema()
    try:
        _check(data, schema, schema, "")
    except _Invalid as problem:
        raise InputError(source, None, f"not a report this version can read: {problem}") from None
    except RecursionError:
        raise InputError(source, None, "not a report this version can read: nested too deeply") from None
    return cast(dict[str, Any], data)  # the schema's root is an object: a report that passed is a dict


_PLAIN_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "null": (type(None),), "number": (int, float), "boolean": (bool,),
}


def _plain_record_rules(node: Mapping[str, Any]) -> tuple[frozenset[str], dict[str, tuple[type, ...]]] | None:
    """For an ``items`` schema of flat records (per-query rows: keys whose only rule is a plain
    type, no other key allowed): the required keys and each key's Python types; else None."""
    if set(node) - {"type", "required", "properties", "additionalProperties", "description"} \
            or node.get("type") != "object" or node.get("additionalProperties") is not False:
        return None
    kinds: dict[str, tuple[type, ...]] = {}
    for key, sub in node.get("properties", {}).items():
        if set(sub) - {"type", "description"}:
            return None
        names = [sub["type"]] if isinstance(sub.get("type"), str) else sub.get("type", ())
        if not names or any(name not in _PLAIN_TYPES for name in names):
            return None
        kinds[key] = tuple(t for name in names for t in _PLAIN_TYPES[name])
    return frozenset(node.get("required", ())), kinds


def _plain_record_ok(item: Any, rules: tuple[frozenset[str], dict[str, tuple[type, ...]]]) -> bool:
    """Whether a flat record passes (a False sends it through the full check, which says why)."""
    required, kinds = rules
    if type(item) is not dict or not required <= item.keys():
        return False
    for key, value in item.items():
        allowed = kinds.get(key)
        # bool is an int: a boolean where a number is expected must fail, as _is_type says.
        if allowed is None or not isinstance(value, allowed) or (type(value) is bool and bool not in allowed):
            return False
    return True


def _problems(data: Any, schema: Mapping[str, Any]) -> list[str]:
    """Every schema violation of ``data`` (one per offending key), for the gate's self-check."""
    problems: list[str] = []
    own: dict[int, Mapping[str, Any]] = {}  # id(node) -> its rules without the children's (a report has 100k values)
    plain: dict[int, Any] = {}  # id(items node) -> _plain_record_rules of it

    def visit(value: Any, node: Mapping[str, Any], where: str) -> None:
        rules = own.get(id(node))
        if rules is None:
            rules = own[id(node)] = {k: v for k, v in node.items()
                                     if k not in ("properties", "items", "additionalProperties")}
        try:
            _check(value, rules, schema, where)
        except _Invalid as problem:
            problems.append(str(problem))
            return
        target = node
        while "$ref" in target:
            target = _referenced(target["$ref"], schema)
        if isinstance(value, dict):
            props = target.get("properties", {})
            extra = target.get("additionalProperties", True)
            for key, sub in value.items():
                path = f"{where}.{key}" if where else str(key)
                if key in props:
                    visit(sub, props[key], path)
                elif isinstance(extra, dict):
                    visit(sub, extra, path)
                elif extra is False:
                    problems.append(f"{path} is not a report key")
        if isinstance(value, list) and isinstance(target.get("items"), dict):
            items = target["items"]
            if id(items) not in plain:
                plain[id(items)] = _plain_record_rules(items)
            rules = plain[id(items)]
            for i, item in enumerate(value):
                # 10,000 per-query rows: the plain ones pass here, the others get the full check.
                if rules is None or not _plain_record_ok(item, rules):
                    visit(item, items, f"{where}[{i}]")

    visit(data, schema, "")
    return problems


def check_own_report(report: Mapping[str, Any], what: str = "report.json", *, as_json: Any = None) -> None:
    """The gate's own report against the schema the fork comment job holds it to.

    A report the gate writes and its own comment job would refuse is a bug of the gate: said
    on stderr (the verdict still stands and the files are still written). With
    ``RETRIEVAL_GATE_REPORT_CHECK=raise`` (the test suite) it is an AssertionError instead;
    ``log:<path>`` appends each problem to that file. ``as_json``: the report already through
    ``json.loads(json.dumps(...))`` (it is checked as it will be read)."""
    schema = _schema()
    try:
        problems = _problems(as_json if as_json is not None else json.loads(json.dumps(report, allow_nan=False)),
                             schema)
    except (TypeError, ValueError) as error:
        problems = [f"not JSON: {error}"]
    if not problems:
        return
    mode = os.environ.get("RETRIEVAL_GATE_REPORT_CHECK", "")
    if mode.startswith("log:"):
        with open(mode[4:], "a", encoding="utf-8") as log:
            for problem in problems:
                log.write(f"{report.get('command')}\t{problem}\n")
        return
    if mode == "raise":
        raise AssertionError(f"{what} does not match gate/report/report.schema.json: {'; '.join(problems[:5])}")
    print(f"retrieval-gate: bug: {what} does not match its schema ({problems[0]}); the fork comment job "
          "would refuse it: please report this", file=sys.stderr)
