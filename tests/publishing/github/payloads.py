"""Webhook payloads for the tests: GitHub's real example when ``../shared`` is beside the project,
otherwise a minimal one with the fields the gate reads, shaped as GitHub sends them - so the
Action's end-to-end tests run on a fresh clone too.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from tests.shared_data import GITHUB

SYNCHRONIZE = "webhook_example_pull_request_synchronize.payload.json"

# The fields of a pull_request event the gate reads (gate.inputs.github_event.read_event), as GitHub sends them.
_MINIMAL: dict[str, Any] = {
    "action": "synchronize", "number": 0,
    "pull_request": {"number": 0, "state": "open", "title": "a retrieval change", "body": None, "labels": [],
                     "head": {"sha": "", "ref": "feature", "repo": {"full_name": "octo-org/octo-repo", "fork": False}},
                     "base": {"sha": "", "ref": "main", "repo": {"full_name": "octo-org/octo-repo", "fork": False}}},
    "repository": {"full_name": "octo-org/octo-repo"},
}


def pull_request_event(number: int, head: str, base: str, *, labels=(), body: str | None = None,
                       repository: str | None = None, name: str = SYNCHRONIZE) -> dict[str, Any]:
    """A pull_request payload for PR ``number`` at ``head`` on ``base``."""
    real = GITHUB / name
    payload = json.loads(real.read_text()) if real.is_file() else copy.deepcopy(_MINIMAL)
    pr = payload["pull_request"]
    pr["number"] = number
    payload["number"] = number
    pr["head"]["sha"] = head
    pr["base"]["sha"] = base
    pr["labels"] = [{"name": label} for label in labels]
    pr["body"] = body
    if repository is not None:
        payload["repository"]["full_name"] = repository
        pr["head"]["repo"]["full_name"] = repository
        pr["base"]["repo"]["full_name"] = repository
    return payload


WORKFLOW_RUN_COMPLETED = "webhook_example_workflow_run_completed.payload.json"

# The fields of a workflow_run event the comment job reads (gate.inputs.github_event.read_workflow_run).
_MINIMAL_WORKFLOW_RUN: dict[str, Any] = {
    "action": "completed",
    "workflow_run": {"id": 1001, "name": "retrieval-gate", "event": "pull_request", "status": "completed",
                     "conclusion": "success", "head_sha": "", "head_branch": "feature", "pull_requests": []},
    "repository": {"full_name": "octo-org/octo-repo"},
}


def workflow_run_event(head: str, conclusion: str | None) -> dict[str, Any]:
    """A completed workflow_run payload (what starts the comment job) for a run at ``head``."""
    real = GITHUB / WORKFLOW_RUN_COMPLETED
    payload = json.loads(real.read_text()) if real.is_file() else copy.deepcopy(_MINIMAL_WORKFLOW_RUN)
    payload["workflow_run"]["head_sha"] = head
    payload["workflow_run"]["conclusion"] = conclusion
    payload["workflow_run"]["event"] = "pull_request"
    return payload
