"""What ``retrieval-gate run`` prints and writes for a reader: the delta, its interval and the
verdict's reasons whatever decided it, plain text, and comment.md, the PR comment itself."""

from __future__ import annotations

import json

import pytest

from gate.cli import main
from gate.inputs.config import load_config
from gate.pipeline.archive import archive
from gate.rendering.markdown import fixed, signed
from tests.support.small_world import small_world


@pytest.mark.parametrize("leak", [True, False], ids=["validity-fails", "clean"])
def test_run_prints_the_delta_its_interval_and_every_reason(tmp_path, capsys, leak):
    path = small_world(tmp_path, leak_in_new=leak)
    archive(load_config(path), progress=lambda m: None)
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v2}\nboost: 1.0\n")
    out = tmp_path / "out"
    code = main(["run", "--config", str(path), "--out", str(out)])
    printed = capsys.readouterr().out
    report = json.loads((out / "report.json").read_text())
    lines = printed.splitlines()
    assert lines[0] == report["verdict"]["headline"] and report["verdict"]["kind"] in lines[0]
    delta = report["delta"]
    assert (f"delta {signed(delta['mean'], 4)}  95% CI [{signed(delta['ci_low'], 4)}, "
            f"{signed(delta['ci_high'], 4)}]") in printed
    assert f"baseline {fixed(report['baseline']['mean'], 4)} -> candidate {fixed(report['candidate']['mean'], 4)}" \
        in printed
    assert "reasons:" in lines
    for reason in report["verdict"]["reasons"]:
        assert f"  - {reason['code']}: {reason['message']}" in lines
    if leak:
        assert code == 1 and report["verdict"]["reasons"][0]["code"] == "new_leaked_queries"
    # comment.md is written beside the reports, named on the last line, and is the comment.
    assert lines[-1] == f"the PR comment, as the Action would post it: {out / 'comment.md'}"
    comment = (out / "comment.md").read_text()
    assert comment.startswith("### ") and "<!--" not in comment.splitlines()[0]
    # Plain text: no Markdown escapes or HTML entities.
    for escaped in ("\\_", "\\*", "&gt;", "&lt;", "&amp;", "\\|"):
        assert escaped not in printed, escaped


def test_numbers_never_read_as_negative_zero():
    assert signed(-0.00001, 3) == "0.000" and fixed(-0.00001, 3) == "0.000" and fixed(-0.0004, 3) == "0.000"
    assert fixed(-0.0006, 3) == "-0.001" and signed(-0.0006, 3) == "-0.001"


def test_run_without_a_baseline_says_so_and_still_prints_every_reason(tmp_path, capsys):
    """No archived baseline: the verdict is inconclusive, there is no delta, and the summary says
    why instead of failing on the missing numbers (it once exited 4)."""
    path = small_world(tmp_path, leak_in_new=False)
    out = tmp_path / "out"
    code = main(["run", "--config", str(path), "--out", str(out)])
    printed = capsys.readouterr().out
    report = json.loads((out / "report.json").read_text())
    assert code == 3 and report["verdict"]["kind"] == "inconclusive"
    assert "baseline n/a -> candidate" in printed and "delta: none" in printed
    assert all(f"  - {r['code']}: {r['message']}" in printed for r in report["verdict"]["reasons"])
    assert (out / "comment.md").read_text().startswith("### ")
