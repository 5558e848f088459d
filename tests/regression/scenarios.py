"""The reports the project pins: the demo (seed 7) and ``compare`` on generated runs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.regression.pinning import normalized, repository_commits

SHARES = "navigational: 0.22\nerror_string: 0.18\nentity_attribute: 0.15\nmigration: 0.06\nhow_to: 0.31\ntail: 0.08\n"

DEMO = dict(seed=7, scale=0.25, repeats=5, samples=2000)
# The demo as `./run demo` runs it (the full tier pins it: tests/demo/test_demo_full_scale.py).
DEMO_FULL = dict(seed=7, scale=1.0, repeats=5, samples=10_000)


def demo_report(result: Any) -> Any:
    """The demo's report.json, report.md and comment.md, normalized (``result`` is what
    ``run_demo`` returned)."""
    files = {name: (result.out / name).read_text(encoding="utf-8") for name in ("report.json", "report.md",
                                                                             "comment.md")}
    pinned = {"exit_code": result.exit_code, "report": json.loads(files.pop("report.json")),
              "markdown": {name: text.splitlines() for name, text in files.items()}}
    return normalized(pinned, roots=[result.out], commits=repository_commits(result.out / "repo"))


def demo(scratch: Path) -> Any:
    from gate.demo.end_to_end import run_demo

    return demo_report(run_demo(scratch, progress=lambda m: None, **DEMO))


def demo_full(scratch: Path) -> Any:
    from gate.demo.end_to_end import run_demo

    return demo_report(run_demo(scratch, progress=lambda m: None, **DEMO_FULL))


def _compare(scratch: Path, *options: str, strata: bool, swap: bool = False) -> Any:
    from gate.cli import main
    from gate.demo.example_files import write_example_files

    files = write_example_files(scratch / "in", seed=7, queries=120, docs=300)
    baseline, candidate = (files.candidate, files.baseline) if swap else (files.baseline, files.candidate)
    args = ["compare", "--baseline", str(baseline), "--candidate", str(candidate),
            "--qrels", str(files.qrels), "--queries", str(files.queries), "--out", str(scratch / "out"), *options]
    if strata:
        shares = scratch / "shares.yml"
        shares.write_text(SHARES, encoding="utf-8")
        args += ["--strata", str(shares)]
    code = main(args)
    report = json.loads((scratch / "out" / "report.json").read_text(encoding="utf-8"))
    markdown = (scratch / "out" / "report.md").read_text(encoding="utf-8").splitlines()
    return normalized({"exit_code": code, "report": report, "markdown": {"report.md": markdown}}, roots=[scratch])


def compare_with_strata(scratch: Path) -> Any:
    """Strata, traffic and buckets; the BCa interval; the calibrated decision."""
    return _compare(scratch, "--samples", "2000", "--seed", "11", "--ci-method", "bca",
                    "--also", "AP,RR@10,R@100,Judged@10,P@5,nDCG@20", strata=True)


def compare_graded(scratch: Path) -> Any:
    """A graded threshold, a non-default primary measure, a margin and --require-improvement."""
    return _compare(scratch, "--metric", "RR(rel=2)@10", "--rel", "2", "--samples", "1500",
                    "--max-regression", "0.01", "--require-improvement", "--fail-on-decision", strata=False)


def compare_regression(scratch: Path) -> Any:
    """The same runs the other way round: a regression beyond the margin, exit 1."""
    return _compare(scratch, "--samples", "1500", "--fail-on-decision", strata=True, swap=True)


ALL: dict[str, Callable[[Path], Any]] = {
    "demo-seed7": demo,
    "demo-seed7-scale1": demo_full,
    "compare-with-strata": compare_with_strata,
    "compare-graded": compare_graded,
    "compare-regression": compare_regression,
}
