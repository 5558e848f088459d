"""``retrieval-gate demo --runner http``: the demo's story through the HTTP runner, asking the reference
retriever served on 127.0.0.1 (gate.demo.search_service), gives the in-process demo's report, number
for number; only wall times, run keys, commits and the runner's identity may differ. The bearer
token the runner sends from the environment appears in none of the demo's files."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.regression import scenarios

pytest.importorskip("faiss")
pytest.importorskip("bm25s")

TOKEN = "demo-http-token-3c9e51b7"  # noqa: S105 - the test's own bearer token, looked for in the output

#: report.json fields (dotted, list items as [i]) that may differ between the two demos, and why.
ALLOWED_TO_DIFFER: dict[str, str] = {
    r"elapsed_seconds": "wall time",
    r"attribution\.cells\[\d+\]\.seconds": "wall time",
    r"attribution\.cost\.(cell_seconds\..+|cells_total_seconds|grid_seconds)": "wall time",
    r"latency\.(baseline|candidate)\.run_wall_time_ms": "wall time (reported, never judged)",
    r"baseline\.archived\.created": "the archive's clock time",
    r"event\.(base|head)_sha": "commits: the gate config names the service (its port)",
    r"trend\.points\[\d+\]\.commit": "commits",
    r"reproduce_command": "names the base commit",
    r"yardstick\.source": "names the base commit",
    r"leakage\.baseline_corpus": "names the base commit",
    r"lift\.(before|after)\.source": "run keys (the runner's identity is in the key)",
    r"run_scores\.(baseline|candidate)\.run": "run keys",
    r"lift\.(before|after)\.tag": "the runner's identity: the TREC run's tag",
}


def _flat(value: Any, path: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        return {k: v for key, item in value.items() for k, v in _flat(item, f"{path}.{key}" if path else key).items()}
    if isinstance(value, list) and value:
        return {k: v for i, item in enumerate(value) for k, v in _flat(item, f"{path}[{i}]").items()}
    return {path: value}


@pytest.fixture(scope="module")
def http_demo(tmp_path_factory):
    from gate.demo.end_to_end import DEMO_TOKEN_VARIABLE, run_demo

    progress: list[str] = []
    result = run_demo(tmp_path_factory.mktemp("demo-http"), progress=progress.append, runner="http",
                      http_token=TOKEN, **scenarios.DEMO)
    return result, progress, DEMO_TOKEN_VARIABLE


def test_the_demo_through_http_gives_the_same_report_numbers(demo, http_demo):
    result, _, _ = http_demo
    assert "type: http" in (result.repo / ".retrieval-gate.yml").read_text()
    assert "type: reference" in (demo.repo / ".retrieval-gate.yml").read_text()
    here, there = _flat(demo.report), _flat(result.report)
    assert len(here) > 1000 and set(here) == set(there)  # the whole report, strata and grid included
    allowed = re.compile("|".join(f"(?:{pattern})" for pattern in ALLOWED_TO_DIFFER))
    differing = {key for key in here if here[key] != there[key]}
    assert {key for key in differing if not allowed.fullmatch(key)} == set()
    # The list is no wider than it must be: every pattern names a field that really differs.
    assert {pattern for pattern in ALLOWED_TO_DIFFER
            if not any(re.fullmatch(pattern, key) for key in differing)} == set()
    # The numbers the issue names, said outright: quality, strata, the interaction, latency p50/p95.
    assert result.report["verdict"] == demo.report["verdict"]
    assert result.report["latency"]["candidate"]["p95_ms"] == demo.report["latency"]["candidate"]["p95_ms"]
    assert result.exit_code == demo.exit_code


def test_the_token_is_in_none_of_the_demos_files_logs_or_commits(http_demo):
    result, progress, variable = http_demo
    assert variable not in os.environ  # set for the demo's run only
    assert f"${{{variable}}}" in (result.repo / ".retrieval-gate.yml").read_text()  # the config names it
    assert not [line for line in progress if TOKEN in line]
    holding = [path for path in Path(result.out).rglob("*") if path.is_file() and TOKEN.encode() in path.read_bytes()]
    assert holding == []
    objects = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], cwd=result.repo,
                             capture_output=True, check=True).stdout  # every commit, tree and blob, inflated
    assert len(objects) > 1000 and TOKEN.encode() not in objects
