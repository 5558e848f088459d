"""The report's typed spine (gate/report/spine.py) and report.schema.json say the same thing,
and a report read into records and written back is the same report, key for key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.report.spine import Report
from gate.report.typed import ABSENT, ANY, BOOL, INT, NUM, STR, InvalidRecord, ListOf, MapOf, Nullable, PairOf, RecordOf

REPO = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((REPO / "gate" / "report" / "report.schema.json").read_text())
PINNED = REPO / "tests" / "regression" / "pinned"
_SCALARS = {"string": STR, "integer": INT, "number": NUM, "boolean": BOOL}


def _resolve(node):
    if "$ref" in node:
        return SCHEMA["$defs"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def _agree(kind, node, where, problems, seen):
    node = _resolve(node)
    types = node.get("type")
    if types is None or types == "null":
        if kind is not ANY:
            problems.append(f"{where}: the schema allows any value, the record {kind}")
        return
    nullable = isinstance(types, list) and "null" in types
    base = [t for t in types if t != "null"][0] if isinstance(types, list) else types
    if nullable:
        if not isinstance(kind, Nullable):
            problems.append(f"{where}: the schema allows null, the record does not")
            return
        kind = kind.inner
    elif isinstance(kind, Nullable):
        problems.append(f"{where}: the record allows null, the schema does not")
        return
    if base in _SCALARS:
        if kind is not _SCALARS[base]:
            problems.append(f"{where}: the schema says {base}, the record {kind}")
    elif base == "array":
        pair = node.get("minItems") == node.get("maxItems") == 2
        if not isinstance(kind, PairOf if pair else ListOf):
            problems.append(f"{where}: the schema says {'a pair' if pair else 'an array'}, the record {kind}")
        else:
            _agree(kind.inner, node.get("items", {}), where + "[]", problems, seen)
    elif "properties" in node:
        if not isinstance(kind, RecordOf):
            problems.append(f"{where}: the schema says object, the record {kind}")
        else:
            _record_agrees(kind.kind, node, where, problems, seen)
    else:
        if not isinstance(kind, MapOf):
            problems.append(f"{where}: the schema says a map, the record {kind}")
        elif isinstance(node.get("additionalProperties"), dict):
            _agree(kind.inner, node["additionalProperties"], where + ".<key>", problems, seen)


def _record_agrees(record, node, where, problems, seen):
    seen.add(record)
    fields = {f.name: f for f in record.keys()}
    properties = node["properties"]
    if node.get("additionalProperties") is not False:
        problems.append(f"{where}: the schema does not refuse unknown keys")
    for name in properties.keys() - fields.keys():
        problems.append(f"{where}.{name}: in the schema, not in {record.__name__}")
    for name in fields.keys() - properties.keys():
        problems.append(f"{where}.{name}: in {record.__name__}, not in the schema")
    required = set(node.get("required", ()))
    for name in fields.keys() & properties.keys():
        if fields[name].metadata["required"] != (name in required):
            problems.append(f"{where}.{name}: required in one of the two only")
        _agree(fields[name].metadata["kind"], properties[name], f"{where}.{name}", problems, seen)


def test_every_record_mirrors_its_object_of_the_schema_key_for_key():
    problems: list[str] = []
    seen: set = set()
    _record_agrees(Report, SCHEMA, "report", problems, seen)
    assert not problems, "\n".join(problems)
    assert len(seen) >= 60  # every object of the schema has its record


def _pinned_reports():
    for pin in sorted(PINNED.glob("*.json")):
        yield pin.stem, json.loads(pin.read_text())["report"]


@pytest.mark.parametrize("name,report", list(_pinned_reports()), ids=[n for n, _ in _pinned_reports()])
def test_a_report_read_into_records_and_written_back_is_the_same_report(name, report):
    record = Report.from_dict(report)
    assert record.to_dict() == report
    assert json.dumps(record.to_dict(), sort_keys=True) == json.dumps(report, sort_keys=True)


def _demo_report():
    return json.loads((PINNED / "demo-seed7.json").read_text())["report"]


def test_absent_and_null_stay_apart():
    report = _demo_report()
    record = Report.from_dict(report)
    assert record.accepted is ABSENT and not record.accepted and not record.has("accepted")
    assert record.verdict.kind in ("pass", "fail", "inconclusive")
    with_null = Report.from_dict({**report, "leakage": None})
    assert with_null.leakage is None and with_null.has("leakage")
    assert with_null.to_dict()["leakage"] is None and "accepted" not in with_null.to_dict()


@pytest.mark.parametrize("change,message", [
    (lambda r: r.update(surprise=1), "report has an unknown key 'surprise'"),
    (lambda r: r["verdict"].pop("kind"), "report.verdict lacks the key 'kind'"),
    (lambda r: r["verdict"].update(exit_code="1"), "report.verdict.exit_code must be an integer"),
    (lambda r: r["verdict"].update(exit_code=True), "report.verdict.exit_code must be an integer"),
    (lambda r: r["delta"].update(mean="0.1"), "report.delta.mean must be a number"),
    (lambda r: r.update(per_query={}), "report.per_query must be an array"),
    (lambda r: r["per_query"][0].update(extra=1), "report.per_query[0] has an unknown key 'extra'"),
])
def test_from_dict_refuses_what_the_schema_refuses_naming_the_path(change, message):
    report = _demo_report()
    change(report)
    with pytest.raises(InvalidRecord) as caught:
        Report.from_dict(report)
    assert str(caught.value) == message


def test_records_are_frozen():
    report = _demo_report()
    record = Report.from_dict(report)
    with pytest.raises(AttributeError):
        record.verdict.kind = "pass"  # type: ignore[misc]
