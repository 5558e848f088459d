"""gate.pipeline.suite_verdicts and `run` with several suites: each suite judged into <out>/<suite>/ by
its own watch rules, the table, suites.json, and the worst verdict's exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.cli import main
from gate.inputs.suite_set import Suite
from gate.pipeline.suite_verdicts import SuiteResult, SuitesOutcome
from gate.verdict.kinds import severity
from tests.support.suites_world import commit, suites_repo, touch_alpha, touch_beta


@pytest.fixture()
def repo(tmp_path, monkeypatch):
    root = tmp_path / "repo"
    base = suites_repo(root)
    monkeypatch.chdir(root)
    return root, base


def _run(out: Path, *extra: str) -> int:
    return main(["run", "--config", ".retrieval-gate.yml", "--out", str(out), *extra])


def test_a_pr_touching_one_suite_judges_it_and_skips_the_other(repo, tmp_path, capsys):
    root, base = repo
    touch_alpha(root)
    commit(root, "alpha's parser v2")
    out = tmp_path / "out"
    assert _run(out, "--base", base) == 1
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:3] == ["suite", "verdict", "delta"]
    assert table[1].split()[:2] == ["alpha", "fail"] and table[2].split()[:3] == ["beta", "skipped", "n/a"]
    assert "worst: fail (alpha), exit 1" in table
    listing = json.loads((out / "suites.json").read_text())
    assert listing["schema"] == 1 and listing["worst"]["suite"] == "alpha" and listing["worst"]["exit_code"] == 1
    assert [(s["suite"], s["verdict"], s["exit_code"], s["report"]) for s in listing["suites"]] == [
        ("alpha", "fail", 1, "alpha/report.json"), ("beta", "skipped", 0, "beta/report.json")]
    for name in ("alpha", "beta"):
        report = json.loads((out / name / "report.json").read_text())
        assert report["suite"] == name and (out / name / "comment.md").is_file()
        assert report["reproduce_command"] == f"retrieval-gate run --config {name[0]}/gate.yml --base {base}"
    assert json.loads((out / "beta" / "report.json").read_text())["verdict"]["reasons"][0]["code"] == "not_relevant"
    combined = (out / "comment.md").read_text()
    assert "alpha" in combined and "beta" in combined and "<details" in combined


def test_a_pr_touching_both_is_as_bad_as_its_worst_suite(repo, tmp_path, capsys):
    root, base = repo
    touch_alpha(root)
    touch_beta(root)
    commit(root, "both")
    out = tmp_path / "out"
    assert _run(out, "--base", base, "--format", "json") == 1
    listing = json.loads(capsys.readouterr().out)
    assert {s["suite"]: s["verdict"] for s in listing["suites"]} == {"alpha": "fail", "beta": "pass"}
    assert listing["worst"]["verdict"] == "fail"
    assert listing == json.loads((out / "suites.json").read_text())


def test_a_pr_touching_only_the_passing_suite_exits_0(repo, tmp_path):
    root, base = repo
    touch_beta(root)
    commit(root, "beta only")
    out = tmp_path / "out"
    assert _run(out, "--base", base) == 0
    listing = json.loads((out / "suites.json").read_text())
    assert {s["suite"]: s["verdict"] for s in listing["suites"]} == {"alpha": "skipped", "beta": "pass"}


def test_a_suite_the_pr_deletes_is_judged_removed_and_fails_unless_accepted(repo, tmp_path):
    root, base = repo
    (root / "b" / "gate.yml").unlink()
    commit(root, "drop beta")
    out = tmp_path / "out"
    assert _run(out, "--base", base) == 1
    beta = json.loads((out / "beta" / "report.json").read_text())
    assert beta["verdict"]["kind"] == "fail" and beta["verdict"]["reasons"][0]["code"] == "goalposts_changed"
    assert beta["goalposts"] == [{"path": "b/gate.yml", "change": "deleted"}]
    listing = json.loads((out / "suites.json").read_text())
    assert {s["suite"]: s["state"] for s in listing["suites"]} == {"alpha": "listed", "beta": "removed"}


def test_one_config_runs_exactly_as_before(repo, tmp_path):
    root, base = repo
    out = tmp_path / "out"
    assert main(["run", "--config", "b/gate.yml", "--out", str(out), "--base", base]) == 0
    assert (out / "report.json").is_file() and not (out / "suites.json").exists() and not (out / "beta").exists()


def test_a_candidate_run_with_several_suites_is_one_line(repo, tmp_path, capsys):
    assert _run(tmp_path / "out", "--candidate-run", "x.run") == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--candidate-run is one suite's run" in err


def _result(name: str, verdict: str, exit_code: int) -> SuiteResult:
    return SuiteResult(Suite(name, Path(f"{name}.yml"), f"{name}.yml"), {}, verdict, exit_code, verdict)


@pytest.mark.parametrize("suites, worst, exit_code", [
    ([("a", "pass", 0), ("b", "fail", 1), ("c", "inconclusive", 3)], "b", 1),
    ([("a", "inconclusive", 0), ("b", "inconclusive", 3), ("c", "pass", 0)], "b", 3),
    ([("a", "pass", 0), ("b", "inconclusive", 0), ("c", "skipped", 0)], "b", 0),
    ([("a", "skipped", 0), ("b", "accepted", 0)], "b", 0),
    ([("a", "accepted", 0), ("b", "pass", 0)], "a", 0),  # accepted counts as what it exits: a pass
    ([("a", "skipped", 0), ("b", "skipped", 0)], "a", 0),
    ([("a", "inconclusive", 3), ("b", "fail", 1)], "b", 1),
])
def test_the_worst_suite_by_severity(suites, worst, exit_code):
    outcome = SuitesOutcome(tuple(_result(*s) for s in suites), "s.yml")
    assert outcome.worst.suite.name == worst and outcome.exit_code == exit_code
    assert outcome.to_dict()["worst"]["suite"] == worst


def test_severity_orders_fail_blocking_nonblocking_pass_skipped():
    order = [severity("fail", 1), severity("inconclusive", 3), severity("inconclusive", 0), severity("pass", 0),
             severity("skipped", 0)]
    assert order == sorted(order) and len(set(order)) == 5
    assert severity("accepted", 0) == severity("pass", 0)
