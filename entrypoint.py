"""The Docker action's entrypoint: GitHub's INPUT_* variables -> the retrieval-gate CLI.

Inputs arrive as ``INPUT_<NAME>`` with hyphens kept (``INPUT_BASELINE-RUN``),
which is why the image starts Python directly (a shell would drop them).
This first version runs ``compare`` on two run files; it writes the delta to
``$GITHUB_OUTPUT`` and the Markdown report to the job summary.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path


def _input(name: str, default: str = "", required: bool = False) -> str:
    value = os.environ.get(f"INPUT_{name.upper()}", "").strip() or default
    if required and not value:
        # The runner does not enforce `required: true`; we do.
        print(f"::error::input '{name}' is required", flush=True)
        sys.exit(2)
    return value


def _write_output(path: str, values: dict[str, str]) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        for key, value in values.items():
            delimiter = f"ghadelimiter_{uuid.uuid4().hex}"
            handle.write(f"{key}<<{delimiter}\n{value}\n{delimiter}\n")


def main() -> int:
    workspace = Path(os.environ.get("GITHUB_WORKSPACE", "."))
    workdir = workspace / _input("working-directory", ".")
    os.chdir(workdir)
    out_dir = _input("out-dir", ".retrieval-gate/out")
    argv = [
        "compare",
        "--baseline", _input("baseline-run", required=True),
        "--candidate", _input("candidate-run", required=True),
        "--qrels", _input("qrels", required=True),
        "--metric", _input("metric", "nDCG@10"),
        "--out", out_dir,
    ]
    queries = _input("queries")
    if queries:
        argv += ["--queries", queries]

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from gate.cli import main as cli_main

    code = cli_main(argv)
    report_path = Path(out_dir) / "report.json"
    if code == 0 and report_path.exists():
        report = json.loads(report_path.read_text(encoding="utf-8"))
        delta = report["delta"]
        if os.environ.get("GITHUB_OUTPUT"):
            _write_output(os.environ["GITHUB_OUTPUT"], {
                "delta": str(delta["mean"]),
                "ci-low": str(delta["ci_low"]),
                "ci-high": str(delta["ci_high"]),
                "report-path": str(report_path.resolve()),
            })
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary:
            text = (Path(out_dir) / "report.md").read_text(encoding="utf-8")
            with open(summary, "a", encoding="utf-8") as handle:
                handle.write(text[: 1024 * 1024 - 1024])
    return code


if __name__ == "__main__":
    sys.exit(main())
