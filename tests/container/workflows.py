"""The example workflows, step by step, as the runner would run them here.

The steps come from ``examples/workflows/*.yml`` themselves: each ``run:`` script runs as
written (as the runner user, with the step's ``env:``), each ``if:`` is evaluated, and the
``uses:`` steps are played by what they do: ``actions/checkout`` by :meth:`Runner.checkout`,
the gate by :meth:`Runner.docker_action` on the built image with the step's ``with:`` (and
``action.yml``'s defaults for the rest), ``upload-artifact``/``download-artifact`` by reading
and writing the files as the runner user, ``setup-python`` and the pip install of the gate by
the gate installed on this machine. ``${{ ... }}`` expressions are looked up in a table of the
ones the examples use: an expression the table does not know fails the suite, so a changed
example cannot silently run differently from what is tested.
"""

from __future__ import annotations

import io
import os
import re
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from tests.container.conftest import TOKEN
from tests.container.github_runner import Runner, Step, as_runner

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "workflows"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


@dataclass
class PlayedStep(Step):
    name: str = ""
    artifact: dict[str, bytes] = field(default_factory=dict)


def load_workflow(name: str, folder: Path | None = None) -> dict[str, Any]:
    """A workflow of ``examples/workflows`` (or of ``folder``: the ones `retrieval-gate init` wrote)."""
    return YAML(typ="safe").load(((folder or EXAMPLES) / name).read_text())


def action_inputs() -> dict[str, Any]:
    return YAML(typ="safe").load((REPO / "action.yml").read_text())["inputs"]


def _evaluate(text: Any, context: dict[str, Any]) -> Any:
    if not isinstance(text, str):
        return text
    whole = EXPRESSION.fullmatch(text.strip())
    if whole:
        return _lookup(whole.group(1), context)
    return EXPRESSION.sub(lambda m: str(_lookup(m.group(1), context)), text)


def _lookup(expression: str, context: dict[str, Any]) -> Any:
    if expression not in context:
        raise KeyError(f"the container suite does not know the expression ${{{{ {expression} }}}}: add it to the "
                       "context in tests/container/workflows.py")
    return context[expression]


def _condition(step: dict[str, Any], context: dict[str, Any]) -> bool:
    if "if" not in step:
        return True
    value = step["if"]
    inner = EXPRESSION.fullmatch(value.strip())
    return bool(_lookup(inner.group(1) if inner else value.strip(), context))


def gate_job_steps(runner: Runner, image: str, remote_url: str, event: dict, event_name: str, github, *,
                   merge_sha: str, workflow: str = "retrieval-gate.yml", inputs: dict[str, str] | None = None,
                   gate_env: dict[str, str] | None = None, checkout_token: str | None = None,
                   workflows: Path | None = None) -> list[PlayedStep]:
    """The gate job of ``workflow`` for ``event``; ``inputs`` override the step's ``with:``."""
    document = load_workflow(workflow, workflows)
    job = next(iter(document["jobs"].values()))
    pull = event.get("pull_request") or {}
    group = event.get("merge_group") or {}
    context: dict[str, Any] = {
        "github.event_name == 'merge_group' && '0' || '2'": "0" if event_name == "merge_group" else "2",
        "!cancelled() && github.event_name == 'pull_request'": event_name == "pull_request",
        "github.event.pull_request.number": str(pull.get("number", "")),
        "github.event.pull_request.head.sha": (pull.get("head") or {}).get("sha", ""),
        "github.event.pull_request.number || github.ref": str(pull.get("number") or "refs/heads/main"),
        "github.token": TOKEN,
    }
    ref = f"refs/pull/{pull['number']}/merge" if pull else (group.get("head_ref") or "refs/heads/main")
    played: list[PlayedStep] = []
    failed = False
    installed = False  # after `pip install retrieval-gate`, run: steps run where it is installed
    for step in job["steps"]:
        name = step.get("name") or step.get("uses") or "step"
        if failed or not _condition(step, context):
            continue
        uses = step.get("uses", "")
        with_ = {k: _evaluate(v, context) for k, v in (step.get("with") or {}).items()}
        if uses.startswith("actions/setup-python@"):
            result = PlayedStep(0, "the machine's Python", name=name)
        elif "run" in step and "pip install" in step["run"]:
            assert "retrieval-gate" in step["run"], f"{workflow}: the suite cannot play {name!r}"
            installed = True
            result = PlayedStep(0, f"the gate as pip installs it: the image {image}", name=name)
        elif "run" in step and installed:
            env = _step_env(step, context)
            env.update({"GITHUB_EVENT_NAME": event_name, "GITHUB_EVENT_PATH": _event_file(runner, event)})
            done = runner.run_step_with_gate(image, step["run"], env)
            result = PlayedStep(done.returncode, done.log, done.outputs, done.summary, name=name)
        elif uses.startswith("actions/checkout@"):
            depth = int(with_.get("fetch-depth", 1))
            done = runner.checkout(remote_url, ref, merge_sha, depth=depth, token=checkout_token,
                                   persist_credentials=str(with_.get("persist-credentials", "true")).lower() == "true")
            result = PlayedStep(done.returncode, done.stdout + done.stderr, name=name)
        elif uses.startswith("your-org/retrieval-gate@"):
            values = _action_values(with_, context, workflow, inputs)
            # GITHUB_SERVER_URL is the git remote here: the gate fetches from the repository's
            # own address (server + GITHUB_REPOSITORY), never from what the checkout's origin says.
            server = remote_url.rsplit("/", 2)[0]
            step_result = runner.docker_action(image, event_name, event, values, api_url=github.url,
                                               server_url=server, sha=merge_sha, ref=ref, env=gate_env)
            result = PlayedStep(step_result.returncode, step_result.log, step_result.outputs, step_result.summary,
                                name=name)
            context.update({f"steps.{step.get('id', 'gate')}.outputs.{k}": v for k, v in result.outputs.items()})
        elif uses.startswith("actions/upload-artifact@"):
            result = _upload(runner, with_["path"], name)
        elif "run" in step:
            env = _step_env(step, context)
            done = runner.run_step(step["run"], env)
            result = PlayedStep(done.returncode, done.log, done.outputs, done.summary, name=name)
        else:
            raise AssertionError(f"{workflow}: the suite cannot play step {name!r} ({uses})")
        played.append(result)
        failed = result.returncode != 0
    return played


def _action_values(with_: dict[str, Any], context: dict[str, Any], workflow: str,
                   overrides: dict[str, str] | None = None) -> dict[str, str]:
    """The action's inputs as the runner hands them over: the step's ``with:`` over
    ``action.yml``'s defaults (``overrides`` last); an input action.yml does not declare fails."""
    declared = action_inputs()
    unknown = sorted(set(with_) - set(declared))
    assert not unknown, f"{workflow} passes inputs action.yml does not declare: {unknown}"
    values = {key: str(_evaluate(spec.get("default", ""), context)) for key, spec in declared.items()}
    values.update({k: str(v) for k, v in with_.items()})
    values.update(overrides or {})
    return values


def _step_env(step: dict[str, Any], context: dict[str, Any]) -> dict[str, str]:
    return {k: str(_evaluate(v, context)) for k, v in (step.get("env") or {}).items()}


def _event_file(runner: Runner, event: dict) -> str:
    """The event payload where the runner keeps it for every step (``GITHUB_EVENT_PATH``)."""
    import json

    from tests.container.github_runner import RUNNER_GID, RUNNER_UID

    path = runner.workflow / "event.json"
    path.write_text(json.dumps(event))
    os.chown(path, RUNNER_UID, RUNNER_GID)
    return str(path)


def _upload(runner: Runner, path: str, name: str) -> PlayedStep:
    """upload-artifact: every file below each line of ``path`` (one path a line, as the action takes
    them; a line that names nothing is skipped, as the action warns and goes on), read as the
    runner user (it runs as the runner). The files are rooted at the paths' least common ancestor,
    so the one file a single path names is at the artifact's root."""
    lines = [line.strip() for line in path.splitlines() if line.strip()]
    found = [runner.workspace / line for line in lines if (runner.workspace / line).exists()]
    if not found:
        return PlayedStep(0, f"no files at {path}", name=name)
    root = Path(os.path.commonpath([p if p.is_dir() else p.parent for p in found]))
    members = [str(p.relative_to(root)) or "." for p in found]
    done = as_runner(["sh", "-c", 'root="$1"; shift; tar -C "$root" -cf - "$@" | base64 -w0', "upload", str(root),
                      *members], runner.workspace)
    if done.returncode != 0:
        return PlayedStep(done.returncode, done.stderr, name=name)
    import base64

    files: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(done.stdout))) as tar:
        for member in tar.getmembers():
            if member.isfile():
                files[member.name.removeprefix("./")] = tar.extractfile(member).read()
    return PlayedStep(0, f"uploaded {len(files)} files", name=name, artifact=files)


def comment_job(runner: Runner, image: str, artifact: dict[str, bytes], event: dict, github, *,
                workflow_run_head_sha: str, remote_url: str, main_sha: str,
                workflow: str = "retrieval-gate-comment.yml", workflows: Path | None = None,
                workflow_run_conclusion: str = "success") -> list[PlayedStep]:
    """The ``workflow_run`` job on a runner of its own (as GitHub gives it): its steps as written,
    the default branch (``main_sha``) checked out (the whole tree: a superset of the sparse
    checkout), the artifact downloaded to RUNNER_TEMP, the ``run:`` steps as the runner user on a
    machine where the gate is pip-installed (the action's image, whose install is that one).
    ``workflow_run_conclusion`` is how the gate job ended (the callers' gate jobs all succeed)."""
    document = load_workflow(workflow, workflows)
    job = next(iter(document["jobs"].values()))
    runner = Runner(runner.root.with_name(runner.root.name + "-comment-job"), runner.repository)
    context: dict[str, Any] = {
        "runner.temp": str(runner.temp),
        "github.event.workflow_run.id": "1001",
        "github.token": TOKEN,
        "github.event.workflow_run.head_sha": workflow_run_head_sha,
        "github.event.workflow_run.conclusion": workflow_run_conclusion,
    }
    played: list[PlayedStep] = []
    for step in job["steps"]:
        name = step.get("name") or step.get("uses") or "step"
        uses = step.get("uses", "")
        with_ = {k: _evaluate(v, context) for k, v in (step.get("with") or {}).items()}
        if uses.startswith("actions/download-artifact@"):
            target = Path(with_["path"])
            target.mkdir(parents=True, exist_ok=True)
            for rel, data in artifact.items():
                path = target / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
            from tests.container.github_runner import chown_tree

            chown_tree(target)
            result = PlayedStep(0, f"downloaded {len(artifact)} files", name=name)
        elif uses.startswith("actions/checkout@"):
            assert "ref" not in with_ and "repository" not in with_, f"{workflow}: the comment job checks out " \
                                                                   "only the default branch"
            done = runner.checkout(remote_url, "refs/heads/main", main_sha, depth=1,
                                   persist_credentials=str(with_.get("persist-credentials", "true")).lower() == "true")
            result = PlayedStep(done.returncode, done.stdout + done.stderr, name=name)
        elif uses.startswith("actions/setup-python@"):
            result = PlayedStep(0, "the machine's Python", name=name)
        elif "run" in step and "pip install" in step["run"]:
            result = PlayedStep(0, f"the gate as pip installs it: the image {image}", name=name)
        elif "run" in step:
            env = _step_env(step, context)
            env.update({"GITHUB_API_URL": github.url, "GITHUB_REPOSITORY": github.repository})
            done = runner.run_step_with_gate(image, step["run"], env, cwd=runner.temp)
            result = PlayedStep(done.returncode, done.log, done.outputs, done.summary, name=name)
            if step.get("id"):
                context.update({f"steps.{step['id']}.outputs.{k}": v for k, v in done.outputs.items()})
        else:
            raise AssertionError(f"{workflow}: the suite cannot play step {name!r} ({uses})")
        played.append(result)
        if result.returncode != 0:
            break
    return played


@dataclass
class PlayedJob:
    """One job of a workflow as played: its runner (folders of its own) and its steps."""
    name: str
    runner: Runner
    steps: list[PlayedStep]
    outputs: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(step.returncode == 0 for step in self.steps)

    def step(self, name: str) -> PlayedStep:
        return next(s for s in self.steps if s.name == name)


def matrix_workflow(root: Path, image: str, remote_url: str, event: dict, event_name: str, github, *,
                    merge_sha: str, workflow: str = "retrieval-gate-matrix.yml",
                    fail_entries: tuple[str, ...] = ()) -> dict[str, Any]:
    """``retrieval-gate-matrix.yml`` as GitHub runs it: the plan job, one produce job per matrix
    entry and the gate job, each on a runner of its own below ``root`` (its own checkout and
    folders, started afresh), nothing passing between them but the plan job's outputs and the
    artifacts. Every ``run:`` step runs in the action's image (the runner's Python with the gate
    pip-installed) as the runner user, one container a step. ``fail_entries``: keys whose
    produce job fails (its stack crashed), as a rerun would find them.

    Returns ``{"plan": PlayedJob, "produce": [PlayedJob, ...], "gate": PlayedJob}``."""
    document = load_workflow(workflow)
    jobs = document["jobs"]
    assert list(jobs) == ["plan", "produce", "gate"], f"{workflow}: the suite plays plan, produce, gate"
    pull = event.get("pull_request") or {}
    group = event.get("merge_group") or {}
    ref = f"refs/pull/{pull['number']}/merge" if pull else (group.get("head_ref") or "refs/heads/main")
    artifacts: dict[str, dict[str, bytes]] = {}
    base_context: dict[str, Any] = {
        "github.event_name == 'merge_group' && '0' || '2'": "0" if event_name == "merge_group" else "2",
        "!cancelled() && github.event_name == 'pull_request'": event_name == "pull_request",
        "!cancelled()": True,
        "github.event.pull_request.number": str(pull.get("number", "")),
        "github.event.pull_request.head.sha": (pull.get("head") or {}).get("sha", ""),
        "github.token": TOKEN,
    }

    def play(name: str, job: dict[str, Any], context: dict[str, Any], runner: Runner) -> PlayedJob:
        context = {**base_context, **context, "runner.temp": str(runner.temp)}
        played: list[PlayedStep] = []
        for step in job["steps"]:
            title = step.get("name") or step.get("uses") or "step"
            if not _condition(step, context):
                continue
            uses = step.get("uses", "")
            with_ = {k: _evaluate(v, context) for k, v in (step.get("with") or {}).items()}
            if uses.startswith("actions/setup-python@"):
                result = PlayedStep(0, "the runner's Python: the action's image", name=title)
            elif "run" in step and "pip install" in step["run"]:
                assert "retrieval-gate" in step["run"], f"{workflow}: the suite cannot play {title!r}"
                result = PlayedStep(0, f"the gate as pip installs it: the image {image}", name=title)
            elif "run" in step:
                env = _step_env(step, context)
                env.update({"GITHUB_EVENT_NAME": event_name, "GITHUB_EVENT_PATH": _event_file(runner, event)})
                done = runner.run_step_with_gate(image, step["run"], env)
                result = PlayedStep(done.returncode, done.log, done.outputs, done.summary, name=title)
                if step.get("id"):
                    context.update({f"steps.{step['id']}.outputs.{k}": v for k, v in done.outputs.items()})
            elif uses.startswith("actions/checkout@"):
                done = runner.checkout(remote_url, ref, merge_sha, depth=int(with_.get("fetch-depth", 1)),
                                       persist_credentials=False)
                result = PlayedStep(done.returncode, done.stdout + done.stderr, name=title)
            elif uses.startswith("actions/upload-artifact@"):
                result = _upload(runner, str(with_["path"]), title)
                if result.returncode == 0:
                    if not result.artifact and with_.get("if-no-files-found") == "error":
                        result = PlayedStep(1, f"no files at {with_['path']}", name=title)
                    artifacts[str(with_["name"])] = result.artifact
            elif uses.startswith("actions/download-artifact@"):
                result = _download(runner, with_, artifacts, title)
            elif uses.startswith("your-org/retrieval-gate@"):
                values = _action_values(with_, context, workflow)
                server = remote_url.rsplit("/", 2)[0]
                done = runner.docker_action(image, event_name, event, values, api_url=github.url,
                                            server_url=server, sha=merge_sha, ref=ref)
                result = PlayedStep(done.returncode, done.log, done.outputs, done.summary, name=title)
                context.update({f"steps.{step.get('id', 'gate')}.outputs.{k}": v for k, v in done.outputs.items()})
            else:
                raise AssertionError(f"{workflow}: the suite cannot play step {title!r} ({uses})")
            played.append(result)
            if result.returncode != 0:
                break
        outputs = {k: str(_evaluate(v, context)) for k, v in (job.get("outputs") or {}).items()}
        return PlayedJob(name, runner, played, outputs)

    plan = play("plan", jobs["plan"], {}, Runner(root / "plan", github.repository))
    needs = {f"needs.plan.outputs.{k}": v for k, v in plan.outputs.items()}
    needs["needs.plan.outputs.count != '0'"] = plan.outputs.get("count", "0") != "0"
    import json

    produce = jobs["produce"]
    assert produce["strategy"]["matrix"] == "${{ fromJSON(needs.plan.outputs.plan).parts[0] }}"
    entries = json.loads(plan.outputs["plan"])["parts"][0]["include"] if plan.ok else []
    produced = []
    for i, entry in enumerate(entries):
        context = {**needs, **{f"matrix.{k}": str(v) for k, v in entry.items()}}
        runner = Runner(root / f"produce-{i}", github.repository)
        if entry["key"] in fail_entries:  # the stack crashed: no artifact
            produced.append(PlayedJob(f"produce {entry['purpose']}", runner, [PlayedStep(1, "crashed", name="crash")]))
            continue
        produced.append(play(f"produce {entry['purpose']}", produce, context, runner))
    gate = play("gate", jobs["gate"], needs, Runner(root / "gate", github.repository)) if plan.ok else None
    return {"plan": plan, "produce": produced, "gate": gate, "artifacts": artifacts}


def _download(runner: Runner, with_: dict[str, Any], artifacts: dict[str, dict[str, bytes]], name: str) -> PlayedStep:
    """download-artifact: one artifact by ``name`` into ``path``, or every artifact matching
    ``pattern`` into ``path/<artifact name>/`` (no merge-multiple), written as the runner user."""
    import fnmatch

    from tests.container.github_runner import chown_tree

    target = Path(with_["path"])
    if not target.is_absolute():
        target = runner.workspace / target
    if "name" in with_:
        if with_["name"] not in artifacts:
            return PlayedStep(1, f"Unable to download artifact(s): Artifact not found for name: {with_['name']}",
                              name=name)
        chosen = {"": artifacts[with_["name"]]}
    else:
        chosen = {n: files for n, files in artifacts.items() if fnmatch.fnmatchcase(n, with_["pattern"])}
    count = 0
    for folder, files in chosen.items():
        for rel, data in files.items():
            path = target / folder / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            count += 1
    target.mkdir(parents=True, exist_ok=True)
    chown_tree(runner.work)  # what the runner user's download wrote is the runner user's
    return PlayedStep(0, f"downloaded {count} files from {len(chosen)} artifacts", name=name)
