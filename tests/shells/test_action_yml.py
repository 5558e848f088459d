"""action.yml and the Dockerfile: the contracts a Docker action must keep."""

from __future__ import annotations

import io
import json
import re

import jsonschema
import pytest
from ruamel.yaml import YAML

from gate.action import ActionInputError, main, read_inputs
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


@pytest.mark.parametrize("wait", ["inf", "-inf", "nan", "1e300", "3601", "-1"])
def test_a_github_max_wait_that_is_no_budget_is_one_line_and_exit_2(wait):
    """inf (or 1e300) overflowed the watchdog's timer and let a trickling server hold the job;
    nan became a 0 s budget: both are refused as the CLI's --max-wait refuses them."""
    env = {"INPUT_TOKEN": "t", "INPUT_GITHUB-MAX-WAIT": wait}
    with pytest.raises(ActionInputError, match="github-max-wait"):
        read_inputs(env)
    out = io.StringIO()
    assert main(env, stdout=out) == 2
    lines = [line for line in out.getvalue().splitlines() if not line.startswith("::add-mask::")]
    assert len(lines) == 1 and lines[0].startswith("::error") and "at most 3600" in lines[0]


@pytest.mark.parametrize("wait", ["0", "3600", "15.5"])
def test_a_github_max_wait_within_the_bound_is_taken(wait):
    assert read_inputs({"INPUT_TOKEN": "t", "INPUT_GITHUB-MAX-WAIT": wait}).github_max_wait == float(wait)
