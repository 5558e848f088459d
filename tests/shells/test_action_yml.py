"""action.yml and the Dockerfile: the contracts a Docker action must keep."""

from __future__ import annotations

import json
import re

import jsonschema
from ruamel.yaml import YAML

from gate.action import read_inputs
from tests.shared_data import GITHUB, REPO, need

ACTION = YAML(typ="safe", pure=True).load((REPO / "action.yml").read_text())


def test_action_yml_validates_against_the_schema():
    schema = json.loads(need(GITHUB / "schemastore_github-action.json").read_text())
    jsonschema.validate(ACTION, schema)


def test_inputs_and_outputs_are_the_documented_ones():
    assert set(ACTION["inputs"]) == {"config-path", "token", "candidate-run", "runs-dir", "comment-mode",
                                     "github-max-wait", "commit-status", "working-directory"}
    assert ACTION["inputs"]["token"]["default"] == "${{ github.token }}"
    assert set(ACTION["outputs"]) == {"verdict", "delta", "ci-low", "ci-high", "report-path", "comment-url"}
    assert ACTION["runs"] == {"using": "docker", "image": "Dockerfile"}


def test_every_input_default_is_accepted_by_the_entrypoint():
    env = {f"INPUT_{name.upper()}": str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
    env["INPUT_TOKEN"] = "t"
    inputs = read_inputs(env)
    assert inputs.config_path == ".retrieval-gate.yml" and inputs.comment_mode == "update"
    assert inputs.github_max_wait == 120.0 and inputs.commit_status is False


def test_dockerfile_starts_python_directly_with_no_user_or_workdir():
    text = (REPO / "Dockerfile").read_text()
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    # The base is an ARG so the container suite can hand in its Debian stand-in; the default is
    # the official image.
    assert lines[0].startswith("ARG BASE_IMAGE=python:3.11-slim") and lines[1] == "FROM ${BASE_IMAGE}"
    assert 'ENTRYPOINT ["python", "/app/entrypoint.py"]' in lines
    assert not any(re.match(r"\s*(USER|WORKDIR)\b", line) for line in lines)
    assert any("git" in line and "apt-get install" in line for line in lines)
