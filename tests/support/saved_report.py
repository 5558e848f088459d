"""A report as the gate job saves it for the comment job: with the event the Action records.

`retrieval-gate run` on a developer's machine judges no event, so its report names no PR; the
comment job posts only a report of the PR and head it was started for (gate.publishing.report_trust).
Tests that post a `run` report give it the event the Action would have recorded (gate.action:
the event's name, the PR, its head and base), as a PR job's report has it.
"""

from __future__ import annotations

import json
from pathlib import Path


def as_the_action_saved(report: Path, pr: int, head_sha: str, base_sha: str | None = None) -> Path:
    """Write ``report`` back with ``event`` set to PR ``pr`` at ``head_sha``; returns it."""
    data = json.loads(report.read_text())
    data["event"] = {"name": "pull_request", "pr": pr, "head_sha": head_sha, "base_sha": base_sha}
    report.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return report
