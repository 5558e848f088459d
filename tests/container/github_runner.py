"""The GitHub-hosted runner, played on this machine: its folders, its user, its checkout, and the
way it starts a Docker action.

What the runner does, and this module does the same:

* the job's folders belong to the runner user (uid 1001, ``runner``): the workspace
  ``_work/<repo>/<repo>``, and ``_temp`` with ``_github_home``, ``_github_workflow`` (the event
  file) and ``_runner_file_commands`` (the ``GITHUB_OUTPUT``/``GITHUB_STEP_SUMMARY`` files the
  runner creates, empty, before each step);
* ``run:`` steps are ``bash -e {0}`` as that user;
* ``actions/checkout`` (a PR): ``git init``, ``git remote add origin``, a fetch of
  ``+<merge sha>:refs/remotes/pull/<n>/merge`` at ``fetch-depth`` with the token as an
  ``http.extraheader`` that is removed afterwards when ``persist-credentials: false``, then
  ``git checkout --force refs/remotes/pull/<n>/merge``: the merge commit, detached, shallow;
* a Docker action: ``docker run --rm --workdir /github/workspace`` as root (the image has no
  ``USER``), the four folders mounted at ``/github/workspace``, ``/github/home``,
  ``/github/workflow`` and ``/github/file_commands``, the inputs as ``INPUT_<NAME>`` (hyphens
  kept), the ``GITHUB_*``/``RUNNER_*`` variables with container paths, and the runtime's own
  secrets (``ACTIONS_RUNTIME_TOKEN``, ``ACTIONS_ID_TOKEN_REQUEST_TOKEN``) that any Docker
  action receives, and ``-v /var/run/docker.sock:/var/run/docker.sock``; ``--network host`` here
  so that 127.0.0.1 is this machine's;
* a ``docker://`` action (a released tag's prebuilt image): ``docker pull`` of the image when the
  job is set up, then the same ``docker run``.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

RUNNER_UID = 1001
RUNNER_GID = 1001  # the docker group on hosted runners is 118; the user's own group is 1001 ("runner")
RUNTIME_TOKEN = "ACTIONS-RUNTIME-TOKEN-must-not-leak-6f1d"
ID_TOKEN = "ACTIONS-ID-TOKEN-must-not-leak-93b2"
DOCKER_SOCKET = "/var/run/docker.sock"


def as_runner(argv: list[str], cwd: Path, env: Mapping[str, str] | None = None, timeout: float = 300,
              input: str | None = None) -> subprocess.CompletedProcess:
    """``argv`` as the runner user (uid 1001, no supplementary groups)."""
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    return subprocess.run(["setpriv", f"--reuid={RUNNER_UID}", f"--regid={RUNNER_GID}", "--clear-groups", "--", *argv],
                          cwd=cwd, env={**base, **(env or {})}, capture_output=True, text=True, timeout=timeout,
                          input=input)


def chown_tree(path: Path, uid: int = RUNNER_UID, gid: int = RUNNER_GID) -> None:
    for root, dirs, files in os.walk(path):
        os.chown(root, uid, gid)
        for name in dirs + files:
            os.lchown(os.path.join(root, name), uid, gid)


def owners(path: Path) -> dict[str, int]:
    """Files below ``path`` by owner uid -> count (what a later step, or a cleanup, meets)."""
    out: dict[str, int] = {}
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            uid = os.lstat(os.path.join(root, name)).st_uid
            out[str(uid)] = out.get(str(uid), 0) + 1
    return out


@dataclass
class Step:
    """What one step left behind: its exit code, its log, and the file commands it wrote."""

    returncode: int
    log: str
    outputs: dict[str, str] = field(default_factory=dict)
    summary: str = ""


def parse_outputs(text: str) -> dict[str, str]:
    """``$GITHUB_OUTPUT`` as the runner parses it: ``name=value`` or ``name<<DELIM`` ... ``DELIM``."""
    values: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line:
            i += 1
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            values[name] = "\n".join(lines[i + 1:end])
            i = end + 1
        else:
            name, _, value = line.partition("=")
            values[name] = value
            i += 1
    return values


class Runner:
    """One job's folders on the runner, below ``root``."""

    def __init__(self, root: Path, repository: str = "octo-org/octo-repo"):
        self.root = Path(root)
        self.repository = repository
        name = repository.split("/")[1]
        self.work = self.root / "_work"
        self.workspace = self.work / name / name
        self.temp = self.work / "_temp"
        self.home = self.temp / "_github_home"
        self.workflow = self.temp / "_github_workflow"
        self.file_commands = self.temp / "_runner_file_commands"
        for folder in (self.workspace, self.home, self.workflow, self.file_commands):
            folder.mkdir(parents=True, exist_ok=True)
        # The runner user owns its folders, and may traverse to them.
        for parent in [self.root, *self.root.parents]:
            if parent == Path("/"):
                break
            os.chmod(parent, os.stat(parent).st_mode | 0o011)
        chown_tree(self.work)

    # ------------------------------------------------------------------ checkout

    def checkout(self, remote_url: str, ref: str, sha: str, *, depth: int = 2, token: str | None = None,
                 persist_credentials: bool = False) -> subprocess.CompletedProcess:
        """What actions/checkout does for ``ref`` (``refs/pull/N/merge``, ``refs/heads/main``) at ``sha``."""
        if self.workspace.exists():
            shutil.rmtree(self.workspace)
        self.workspace.mkdir(parents=True)
        chown_tree(self.workspace)
        local = ref.replace("refs/pull/", "refs/remotes/pull/").replace("refs/heads/", "refs/remotes/origin/")
        header = []
        if token:
            basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
            header = ["config", "--local", f"http.{remote_url.split('/', 3)[0]}//{remote_url.split('/', 3)[2]}/"
                      ".extraheader", f"AUTHORIZATION: basic {basic}"]
        env = {"HOME": str(self.home), "GIT_TERMINAL_PROMPT": "0"}
        commands = [["git", "init", "-q", str(self.workspace)],
                    ["git", "remote", "add", "origin", remote_url],
                    ["git", "config", "--local", "gc.auto", "0"]]
        if header:
            commands.append(["git", *header])
        commands += [["git", "-c", "protocol.version=2", "fetch", "--no-tags", "--prune", "--no-recurse-submodules",
                      "--quiet"] + ([f"--depth={depth}"] if depth > 0 else []) + ["origin", f"+{sha}:{local}"],
                     ["git", "checkout", "--quiet", "--force", local if depth > 0 or "pull" in ref else sha]]
        if header and not persist_credentials:
            commands.append(["git", "config", "--local", "--unset-all", header[2]])
        for argv in commands:
            done = as_runner(argv, self.workspace, env)
            if done.returncode != 0:
                return done
        return done

    # ------------------------------------------------------------------ a run: step

    def run_step(self, script: str, env: Mapping[str, str] | None = None, cwd: Path | None = None) -> Step:
        """A ``run:`` step: ``bash -e`` as the runner user, with fresh file-command files."""
        output, summary = self._file_commands()
        host_env = {"HOME": str(self.home), "GITHUB_WORKSPACE": str(self.workspace), "RUNNER_TEMP": str(self.temp),
                    "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(summary), "CI": "true",
                    "GITHUB_ACTIONS": "true", **(env or {})}
        done = as_runner(["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", script],
                         cwd or self.workspace, host_env)
        return Step(done.returncode, done.stdout + done.stderr, parse_outputs(output.read_text()),
                    summary.read_text())

    def run_step_with_gate(self, image: str, script: str, env: Mapping[str, str] | None = None,
                           cwd: Path | None = None) -> Step:
        """A ``run:`` step on a runner where ``pip install retrieval-gate`` has run: the same
        script as the runner user, in the action's image (which is that install) with the job's
        folders at their own paths."""
        output, summary = self._file_commands()
        variables = {"HOME": str(self.home), "GITHUB_WORKSPACE": str(self.workspace), "RUNNER_TEMP": str(self.temp),
                     "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(summary), "CI": "true",
                     "GITHUB_ACTIONS": "true", **(env or {})}
        argv = ["docker", "run", "--rm", "--network", "host", "--user", f"{RUNNER_UID}:{RUNNER_GID}",
                "-v", f"{self.work}:{self.work}", "--workdir", str(cwd or self.workspace), "--entrypoint", "bash"]
        for key in variables:
            argv += ["-e", key]
        argv += [image, "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", script]
        done = subprocess.run(argv, env={"PATH": os.environ["PATH"], **variables}, capture_output=True, text=True,
                              timeout=300)
        return Step(done.returncode, done.stdout + done.stderr, parse_outputs(output.read_text()),
                    summary.read_text())

    def _file_commands(self) -> tuple[Path, Path]:
        suffix = uuid.uuid4()
        output = self.file_commands / f"set_output_{suffix}"
        summary = self.file_commands / f"step_summary_{suffix}"
        for path in (output, summary):
            path.write_text("")
            os.chown(path, RUNNER_UID, RUNNER_GID)
            os.chmod(path, 0o644)
        return output, summary

    # ------------------------------------------------------------------ a Docker action

    def pull_action_image(self, image: str, timeout: float = 900) -> Step:
        """What "Set up job" does for ``runs.image: docker://<image>``: ``docker pull`` it, nothing
        built (an ``image: Dockerfile`` action is built instead); :meth:`docker_action` then runs
        ``<image>`` as it came."""
        done = subprocess.run(["docker", "pull", image], capture_output=True, text=True, timeout=timeout)
        return Step(done.returncode, done.stdout + done.stderr)

    def docker_action(self, image: str, event_name: str, event: dict, inputs: Mapping[str, str], *,
                      api_url: str, server_url: str = "https://github.com", sha: str = "", ref: str = "",
                      env: Mapping[str, str] | None = None, timeout: float = 600,
                      name: str | None = None, volumes: Mapping[str, str] | None = None) -> Step:
        """``docker run`` of the action's image the way the runner starts it: the Docker socket
        mounted too, as GitHub mounts it into every Docker action. ``volumes``: more, host -> container."""
        (self.workflow / "event.json").write_text(json.dumps(event))
        os.chown(self.workflow / "event.json", RUNNER_UID, RUNNER_GID)
        output, summary = self._file_commands()
        variables = {
            "HOME": "/github/home",
            "GITHUB_JOB": "gate", "GITHUB_REF": ref, "GITHUB_SHA": sha, "GITHUB_REPOSITORY": self.repository,
            "GITHUB_REPOSITORY_OWNER": self.repository.split("/")[0], "GITHUB_RUN_ID": "1001",
            "GITHUB_RUN_NUMBER": "7", "GITHUB_RETENTION_DAYS": "90", "GITHUB_RUN_ATTEMPT": "1",
            "GITHUB_ACTOR": "octocat", "GITHUB_TRIGGERING_ACTOR": "octocat", "GITHUB_WORKFLOW": "retrieval-gate",
            "GITHUB_HEAD_REF": "", "GITHUB_BASE_REF": "", "GITHUB_EVENT_NAME": event_name,
            "GITHUB_SERVER_URL": server_url, "GITHUB_API_URL": api_url, "GITHUB_GRAPHQL_URL": api_url + "/graphql",
            "GITHUB_REF_NAME": ref.rsplit("/", 1)[-1], "GITHUB_REF_PROTECTED": "false", "GITHUB_REF_TYPE": "branch",
            "GITHUB_WORKSPACE": "/github/workspace", "GITHUB_ACTION": "gate",
            "GITHUB_EVENT_PATH": "/github/workflow/event.json", "GITHUB_ACTION_REPOSITORY": "",
            "GITHUB_ACTION_REF": "", "GITHUB_PATH": f"/github/file_commands/add_path_{uuid.uuid4()}",
            "GITHUB_ENV": f"/github/file_commands/set_env_{uuid.uuid4()}",
            "GITHUB_STEP_SUMMARY": f"/github/file_commands/{summary.name}",
            "GITHUB_STATE": f"/github/file_commands/save_state_{uuid.uuid4()}",
            "GITHUB_OUTPUT": f"/github/file_commands/{output.name}",
            "RUNNER_OS": "Linux", "RUNNER_ARCH": "X64", "RUNNER_NAME": "GitHub Actions 2",
            "RUNNER_ENVIRONMENT": "github-hosted", "RUNNER_TOOL_CACHE": "/opt/hostedtoolcache",
            "RUNNER_TEMP": "/home/runner/work/_temp", "RUNNER_WORKSPACE": "/home/runner/work/octo-repo",
            "ACTIONS_RUNTIME_URL": "https://pipelines.actions.githubusercontent.com/abc/",
            "ACTIONS_RUNTIME_TOKEN": RUNTIME_TOKEN, "ACTIONS_CACHE_URL": "https://artifactcache.actions.githubusercontent.com/abc/",
            "ACTIONS_RESULTS_URL": "https://results-receiver.actions.githubusercontent.com/",
            "ACTIONS_ID_TOKEN_REQUEST_URL": "https://pipelines.actions.githubusercontent.com/abc/idtoken",
            "ACTIONS_ID_TOKEN_REQUEST_TOKEN": ID_TOKEN,
            "GITHUB_ACTIONS": "true", "CI": "true",
            **{f"INPUT_{key.upper()}": value for key, value in inputs.items()},
            **(env or {}),
        }
        argv = ["docker", "run", "--rm", "--network", "host", "--workdir", "/github/workspace",
                "--name", name or f"retrieval-gate-{uuid.uuid4().hex[:12]}",
                "-v", f"{self.home}:/github/home", "-v", f"{self.workflow}:/github/workflow",
                "-v", f"{self.file_commands}:/github/file_commands", "-v", f"{self.workspace}:/github/workspace"]
        if os.path.exists(DOCKER_SOCKET):
            argv += ["-v", f"{DOCKER_SOCKET}:{DOCKER_SOCKET}"]
        for host, inside in (volumes or {}).items():
            argv += ["-v", f"{host}:{inside}"]
        for key in variables:
            argv += ["-e", key]
        argv.append(image)
        done = subprocess.run(argv, env={"PATH": os.environ["PATH"], **variables}, capture_output=True, text=True,
                              timeout=timeout)
        return Step(done.returncode, done.stdout + done.stderr, parse_outputs(output.read_text()),
                    summary.read_text())
