"""The saved-report check the comment job relies on agrees with jsonschema (the oracle).

``gate.report.document.validate_report`` implements the part of JSON Schema that report.schema.json
uses, so the privileged comment job needs no extra dependency to refuse an artifact that is
not a report. Here it must accept every real report and refuse exactly what jsonschema
refuses on a few hundred mutations of them.
"""

from __future__ import annotations

import copy
import json
import random

import jsonschema
import pytest

from gate.cli import main
from gate.common.errors import InputError
from gate.report.document import _SCHEMA_PATH, validate_report
from tests.cli_matrix.world import build_files, build_repo

SCHEMA = json.loads(_SCHEMA_PATH.read_text())
ORACLE = jsonschema.Draft202012Validator(SCHEMA)


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("reports")
    files = build_files(tmp / "files")
    assert main(["compare", "--baseline", str(files.baseline), "--candidate", str(files.candidate), "--qrels",
                 str(files.qrels), "--queries", str(files.queries_jsonl), "--strata", str(files.strata_yml),
                 "--samples", "200", "--out", str(tmp / "compare")]) == 0
    repo = build_repo(tmp / "repo", files)
    assert main(["run", "--config", str(repo.root / ".retrieval-gate.yml"), "--out", str(tmp / "run")]) in (0, 1, 3)
    return [json.loads((tmp / name / "report.json").read_text()) for name in ("compare", "run")]


def _agree(report) -> tuple[bool, bool]:
    oracle = ORACLE.is_valid(report)
    try:
        validate_report(report, "report.json")
        ours = True
    except InputError:
        ours = False
    return oracle, ours


def test_real_reports_are_valid(reports):
    for report in reports:
        assert _agree(report) == (True, True)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, sub in value.items():
            yield from _paths(sub, (*prefix, key))
    elif isinstance(value, list) and value:
        yield from _paths(value[0], (*prefix, 0))


_REPLACEMENTS = [None, "text", 3, -1, 2.5, True, [], {}, [1, "a"], {"x": 1}]


def test_mutations_are_judged_as_jsonschema_judges_them(reports):
    rng = random.Random(12)
    checked = refused = 0
    for report in reports:
        paths = [p for p in _paths(report) if p]
        for _ in range(300):
            mutant = copy.deepcopy(report)
            path = rng.choice(paths)
            parent = mutant
            for key in path[:-1]:
                parent = parent[key]
            if rng.random() < 0.2 and isinstance(parent, dict):
                del parent[path[-1]]
            else:
                parent[path[-1]] = rng.choice(_REPLACEMENTS)
            oracle, ours = _agree(mutant)
            assert oracle == ours, (path, oracle, ours)
            checked += 1
            refused += not oracle
    assert checked == 600 and refused > 100  # the mutations do hit the schema


def test_the_error_names_the_key(reports):
    report = copy.deepcopy(reports[1])
    report["delta"] = []
    with pytest.raises(InputError) as caught:
        validate_report(report, "artifact/report.json")
    assert str(caught.value) == ("artifact/report.json: not a report this version can read: delta must be object, "
                                 "got list")


def test_the_gate_checks_its_own_reports(reports, monkeypatch, capsys, tmp_path):
    """A report the gate is about to write that its schema refuses: a bug line on stderr (the
    verdict stands) by default, an AssertionError in the suite, one line per key with log:."""
    from gate.report.document import check_own_report

    report = copy.deepcopy(reports[1])
    check_own_report(report)  # the real one passes
    report["not_in_the_schema"] = 1
    report["delta"]["wins"] = "many"
    monkeypatch.setenv("RETRIEVAL_GATE_REPORT_CHECK", "")
    check_own_report(report)
    err = capsys.readouterr().err
    assert err.startswith("retrieval-gate: bug: report.json does not match its schema (") and err.count("\n") == 1
    monkeypatch.setenv("RETRIEVAL_GATE_REPORT_CHECK", "raise")
    with pytest.raises(AssertionError, match="not_in_the_schema is not a report key"):
        check_own_report(report)
    log = tmp_path / "problems.log"
    monkeypatch.setenv("RETRIEVAL_GATE_REPORT_CHECK", f"log:{log}")
    check_own_report(report)
    assert sorted(log.read_text().splitlines()) == ["run\tdelta.wins must be integer, got str",
                                                    "run\tnot_in_the_schema is not a report key"]


@pytest.mark.parametrize("row, problem", [
    ({"query_id": "q", "stratum": None, "baseline": True, "candidate": 0.0, "delta": 0.0},
     "per_query[1].baseline must be number or null, got bool"),
    ({"query_id": 7, "stratum": None, "baseline": 0.1, "candidate": 0.0, "delta": 0.0},
     "per_query[1].query_id must be string, got int"),
    ({"query_id": "q", "stratum": None, "baseline": 0.1, "candidate": 0.0}, "per_query[1].delta is missing"),
    ({"query_id": "q", "stratum": None, "baseline": 0.1, "candidate": 0.0, "delta": 0.0, "x": 1},
     "per_query[1].x is not a report key"),
    (["q", 0.1], "per_query[1] must be object, got list"),
])
def test_the_self_check_of_per_query_rows_finds_a_bad_row_among_plain_ones(reports, row, problem):
    """Per-query rows (10,000 of them at scale) pass a quick check; a row that fails it gets the
    full check, which names the key."""
    from gate.report.document import _problems, _schema

    report = copy.deepcopy(next(r for r in reports if len(r.get("per_query", ())) >= 2))
    assert _problems(report, _schema()) == []
    report["per_query"][1] = row
    assert _problems(report, _schema()) == [problem]
