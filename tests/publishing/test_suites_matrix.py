"""plan with several suites: one gate job per touched suite (github-matrix), the others named
skipped; text and json list each suite; what cannot be planned for several suites is one line."""

from __future__ import annotations

import json

import pytest

from gate.cli import main
from tests.support.suites_world import commit, suites_repo, touch_alpha, touch_beta


@pytest.fixture()
def repo(tmp_path, monkeypatch):
    root = tmp_path / "repo"
    base = suites_repo(root)
    monkeypatch.chdir(root)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    return root, base


def _matrix(capsys, *args: str) -> dict:
    assert main(["plan", "--config", ".retrieval-gate.yml", "--format", "github-matrix", *args]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1  # one line: a step output
    return json.loads(out)


def test_one_entry_per_touched_suite(repo, capsys):
    root, base = repo
    touch_alpha(root)
    commit(root, "alpha")
    matrix = _matrix(capsys, "--base", base)
    entry = {"suite": "alpha", "config": "a/gate.yml", "artifact": "retrieval-gate-report-alpha"}
    assert matrix == {"count": 1, "suites": [entry], "skipped": ["beta"], "removed": [], "include": [entry]}


def test_both_touched_and_none_touched(repo, capsys):
    root, base = repo
    (root / "README.md").write_text("# docs only\n")
    readme = commit(root, "readme")
    matrix = _matrix(capsys, "--base", base)
    assert matrix["count"] == 0 and matrix["include"] == [] and matrix["skipped"] == ["alpha", "beta"]
    touch_alpha(root)
    touch_beta(root)
    commit(root, "both")
    matrix = _matrix(capsys, "--base", readme)
    assert [e["suite"] for e in matrix["include"]] == ["alpha", "beta"] and matrix["skipped"] == []


def test_without_a_base_every_suite_is_planned(repo, capsys):
    assert _matrix(capsys)["count"] == 2


def test_a_config_glob_plans_the_same(repo, capsys):
    root, base = repo
    touch_beta(root)
    commit(root, "beta")
    assert main(["plan", "--config", "*/gate.yml", "--format", "github-matrix", "--base", base]) == 0
    assert [e["suite"] for e in json.loads(capsys.readouterr().out)["include"]] == ["beta"]


def test_json_lists_each_suite_with_its_runs(repo, capsys):
    root, base = repo
    touch_alpha(root)
    commit(root, "alpha")
    assert main(["plan", "--config", ".retrieval-gate.yml", "--format", "json", "--base", base]) == 0
    listing = json.loads(capsys.readouterr().out)["suites"]
    assert [(s["suite"], s["state"]) for s in listing] == [("alpha", "touched"), ("beta", "skipped")]
    assert any(run["purpose"] == "candidate" for run in listing[0]["runs"]) and listing[1]["runs"] == []


@pytest.mark.parametrize("extra, problem", [(["--runs-dir", "runs"], "plan each suite's runs in its own gate job"),
                                            (["--parts", "2"], "--parts splits one suite's runs")])
def test_what_several_suites_cannot_plan_is_one_line(repo, capsys, extra, problem):
    assert main(["plan", "--config", ".retrieval-gate.yml", "--format", "github-matrix", *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert problem in err and "\n" not in err
