"""The report is made once, from records, in gate/report/build.py (issue 33)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from gate.inputs.config import Policy
from gate.pipeline.compare import compare_files
from gate.report.build import GateRun, Head, NoBaseline, PullRequestFacts, build_report
from gate.verdict.rules import skipped

GATE = Path(__file__).resolve().parents[2] / "gate"


def _write_pair(folder: Path, queries: int = 40, seed: int = 3) -> tuple[Path, Path, Path]:
    """Two runs and graded qrels over ``queries`` queries, the candidate a noisy copy."""
    rng = np.random.default_rng(seed)
    qrels, base, cand = [], [], []
    for q in range(queries):
        docs = [f"d{q}-{i}" for i in range(30)]
        for doc in rng.choice(docs, size=6, replace=False):
            qrels.append(f"q{q} 0 {doc} {int(rng.integers(0, 3))}")
        for name, lines in (("base", base), ("cand", cand)):
            scores = rng.random(len(docs))
            for rank, i in enumerate(np.argsort(-scores)):
                lines.append(f"q{q} Q0 {docs[i]} {rank + 1} {scores[i]:.6f} {name}")
    paths = folder / "qrels.txt", folder / "base.run", folder / "cand.run"
    for path, lines in zip(paths, (qrels, base, cand)):
        path.write_text("\n".join(lines) + "\n")
    return paths


def test_the_primary_delta_is_one_number_by_one_formula(tmp_path):
    """The headline shows delta.mean and the measures table its row's delta: the same number,
    bit for bit (before, the row was the difference of the means: equal only up to rounding)."""
    qrels, base, cand = _write_pair(tmp_path)
    report = compare_files(str(base), str(cand), str(qrels)).report.to_dict()
    metric = report["metric"]
    assert report["measures"][metric]["delta"] == report["delta"]["mean"]
    others = [name for name in report["measures"] if name != metric]
    for name in others:  # the other measures: the difference of their means, as before
        m = report["measures"][name]
        assert m["delta"] == pytest.approx(m["candidate"] - m["baseline"], abs=1e-15)


def test_a_pull_requests_facts_go_into_the_one_report():
    verdict = skipped(2, Policy(), ("README.md", "docs/a.md"))
    run = GateRun(Head("search", "nDCG@10"), verdict, NoBaseline("not run"))
    facts = PullRequestFacts(goalposts=(), warnings=("base said so",),
                             yardstick={"source": "base", "baseline_source": None}, event={"name": "pull_request"})
    report = build_report(run, facts).to_dict()
    assert report["verdict"]["kind"] == "skipped"
    assert report["warnings"] == ["base said so"]
    assert report["baseline"] == {"resolution": None, "description": "not run"}
    assert report["event"] == {"name": "pull_request"}
    assert "goalposts" in report and "accepted" not in report
    # The records are frozen: a step cannot write into what an earlier one found.
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.verdict = verdict  # type: ignore[misc]
    assert build_report(run, facts) == build_report(run, facts)


def _calls(name: str) -> list[str]:
    """The modules of gate/ that call ``name`` (an attribute or a plain name)."""
    found = []
    for path in sorted(GATE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
                if called == name:
                    found.append(path.relative_to(GATE).as_posix())
                    break
    return found


def test_only_gate_report_makes_a_report_from_a_dict():
    """report_record (a dict held to the schema, then typed) is called by build.py alone; a
    report read back from report.json goes through read_report (the untrusted reader)."""
    assert _calls("report_record") == ["report/build.py"]
