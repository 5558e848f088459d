"""The library's face: ``gate.compare`` and ``gate.run`` give the reports the commands write,
typed, and a Result that writes and renders itself."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

import gate
from gate.cli import main
from gate.common.errors import UsageError
from gate.demo.example_files import write_example_files
from gate.inputs.config import load_config
from gate.pipeline.archive import archive
from gate.report.spine import Report
from tests.support.small_world import small_world


def _without_clock(report: dict) -> dict:
    report.pop("elapsed_seconds", None)
    return report


def test_gate_compare_is_the_compare_command(tmp_path, capsys):
    files = write_example_files(tmp_path / "in", seed=7, queries=60, docs=200)
    shares = tmp_path / "shares.yml"
    shares.write_text("navigational: 0.3\nerror_string: 0.2\nentity_attribute: 0.1\nmigration: 0.1\n"
                      "how_to: 0.2\ntail: 0.1\n")
    assert main(["compare", "--baseline", str(files.baseline), "--candidate", str(files.candidate),
                 "--qrels", str(files.qrels), "--queries", str(files.queries), "--strata", str(shares),
                 "--samples", "800", "--out", str(tmp_path / "cli")]) == 0
    capsys.readouterr()
    result = gate.compare(str(files.baseline), str(files.candidate), str(files.qrels), queries=str(files.queries),
                          strata=str(shares), settings=gate.CompareSettings(samples=800))
    assert isinstance(result.report, Report) and isinstance(result, gate.Result)
    assert result.report.decision.kind == result.verdict.kind
    assert len(result.report.strata) == 6 and result.report.traffic.sentence
    written = result.write(tmp_path / "lib")
    assert [p.name for p in written] == ["report.json", "report.md"]
    for name in ("report.json", "report.md"):
        assert (tmp_path / "lib" / name).read_text() == (tmp_path / "cli" / name).read_text(), name
    assert result.to_json() == (tmp_path / "cli" / "report.json").read_text()
    assert result.to_markdown() == (tmp_path / "cli" / "report.md").read_text()


def test_gate_run_is_the_run_command(tmp_path, capsys):
    path = small_world(tmp_path, leak_in_new=True)
    archive(load_config(path), progress=lambda m: None)
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v2}\nboost: 1.0\n")
    code = main(["run", "--config", str(path), "--out", str(tmp_path / "cli")])
    capsys.readouterr()
    result = gate.run(path, progress=lambda m: None)
    assert code == result.verdict.exit_code == 1 and result.report.verdict.kind == "fail"
    assert [r.code for r in result.report.verdict.reasons][0] == "new_leaked_queries"
    written = result.write(tmp_path / "lib")
    assert [p.name for p in written] == ["report.json", "report.md", "comment.md", "unjudged.tsv"]
    cli = _without_clock(json.loads((tmp_path / "cli" / "report.json").read_text()))
    assert _without_clock(json.loads((tmp_path / "lib" / "report.json").read_text())) == cli
    # comment.md is the comment itself: its first line is the headline report.json keeps.
    comment = (tmp_path / "cli" / "comment.md").read_text()
    assert cli["verdict"]["headline"] and comment.startswith("### ")
    assert result.to_comment().splitlines()[0] == comment.splitlines()[0]
    assert (tmp_path / "lib" / "unjudged.tsv").read_text() == (tmp_path / "cli" / "unjudged.tsv").read_text()


def test_import_gate_loads_no_numpy_until_a_verb_is_used():
    code = ("import sys, gate\n"
            "assert 'numpy' not in sys.modules, 'import gate loaded numpy'\n"
            "gate.compare\n"
            "assert 'numpy' in sys.modules\n"
            "try:\n    gate.no_such_verb\nexcept AttributeError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "module 'gate' has no attribute 'no_such_verb'"


@pytest.mark.parametrize("settings, message", [
    (dict(samples=0), "samples 0: expected an integer from 1"),
    (dict(seed=-1), "seed -1: expected an integer from 0"),
    (dict(seed=2 ** 70), "seed 1180591620717411303424: expected an integer"),
    (dict(ci_method="xx"), "ci_method 'xx': expected percentile, basic or bca"),
    (dict(samples=True), "samples True: expected an integer"),
])
def test_settings_the_command_line_would_refuse_are_refused(settings, message):
    with pytest.raises(UsageError, match=re.escape(message)):
        gate.CompareSettings(**settings)


def test_also_as_the_command_line_writes_it_is_a_list_of_measures():
    assert gate.CompareSettings(also="AP, RR@10").also == ("AP", "RR@10")


@pytest.mark.parametrize("margin", [float("nan"), -1.0, float("inf"), "0.02"])
def test_a_margin_that_is_not_a_finite_non_negative_number_is_refused(tmp_path, margin):
    files = write_example_files(tmp_path, seed=7, queries=20, docs=50)
    with pytest.raises(UsageError, match="max_regression"):
        gate.compare(str(files.baseline), str(files.candidate), str(files.qrels), max_regression=margin)
