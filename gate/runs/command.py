"""The ``command`` runner: a team's own retrieval, run as a subprocess.

The template's placeholders ({config}, {queries}, {corpus}, {run}, {repeat},
{seed}) are filled per token after ``shlex.split``, so paths with spaces need
no quoting and no shell is involved; ``shell: true`` runs the template through
``/bin/sh`` with every value ``shlex.quote``d. The environment is scrubbed of
credentials; output goes to a log file whose tail is shown on failure.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
from pathlib import Path
from typing import Any

from gate.common.environment import scrubbed_environment
from gate.common.errors import InputError
from gate.runs.request import RunnerFailed, RunRequest

PLACEHOLDERS = ("config", "queries", "corpus", "run", "repeat", "seed")


def log_tail(path: Path, lines: int = 20) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


class CommandRunner:
    name = "command"

    def __init__(self, template: str, *, timeout: float = 3600.0, shell: bool = False,
                 env_passthrough: tuple[str, ...] = (), cwd: Path | None = None, source: str = "runner.command"):
        if not template or not template.strip():
            raise InputError(source, None, "runner.type is 'command' but runner.command is empty")
        self.template = template
        self.timeout = timeout
        self.shell = shell
        self.env_passthrough = env_passthrough
        self.cwd = cwd
        try:
            tokens = shlex.split(template)
        except ValueError as error:
            raise InputError(source, None, f"runner.command cannot be split: {error}") from error
        for token in tokens:
            try:
                token.format(**{name: "" for name in PLACEHOLDERS})
            except (KeyError, IndexError, ValueError) as error:
                raise InputError(source, None, f"runner.command has an unknown placeholder {error} "
                                 f"(known: {', '.join('{' + p + '}' for p in PLACEHOLDERS)}; write a literal "
                                 "brace doubled: {{ and }})") from error
        self.tokens = tokens

    def identity(self) -> dict[str, Any]:
        # shell changes how the same command text is parsed, so it is part of what a run depends on.
        return {"type": "command", "command": self.template, "shell": self.shell}

    def argv(self, values: dict[str, str]) -> list[str] | str:
        if self.shell:
            return self.template.format(**{k: shlex.quote(v) for k, v in values.items()})
        return [token.format(**values) for token in self.tokens]

    def produce(self, request: RunRequest, config_file: Path, out_path: Path, log_path: Path) -> None:
        values = {
            "config": str(config_file),
            "queries": str(request.queries),
            "corpus": str(request.corpus or ""),
            "run": str(out_path),
            "repeat": str(request.repeat),
            "seed": str(request.seed),
        }
        env = scrubbed_environment(
            self.env_passthrough,
            extra={
                "RETRIEVAL_GATE_REPEAT": str(request.repeat),
                "RETRIEVAL_GATE_SEED": str(request.seed),
                "RETRIEVAL_GATE_PURPOSE": request.purpose,
            },
        )
        command = self.argv(values)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "wb") as log:
            try:
                # A baseline runs in a checkout of its own commit: the code it was measured with.
                cwd = request.code.root if request.code is not None and request.code.root is not None else self.cwd
                proc = subprocess.Popen(
                    command, shell=self.shell, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL, start_new_session=True,
                )
            except (OSError, ValueError) as error:
                raise RunnerFailed(request.purpose, f"could not start the runner command: {error}",
                                   log_path) from error
            try:
                code = proc.wait(timeout=self.timeout)
            except subprocess.TimeoutExpired as error:
                _kill_group(proc)
                raise RunnerFailed(request.purpose, f"runner command timed out after {self.timeout:g}s",
                                   log_path, log_tail(log_path)) from error
            # What it left running in the background goes too: nothing of the code under test
            # outlives its run (the gate fetches from GitHub with credentials afterwards).
            _kill_group(proc, leader_exited=True)
        if code != 0:
            raise RunnerFailed(request.purpose, f"runner command exited with code {code}", log_path,
                               log_tail(log_path))
        if not out_path.exists():
            raise RunnerFailed(request.purpose, f"runner command did not write the run file {out_path}",
                               log_path, log_tail(log_path))


def _kill_group(proc: subprocess.Popen, leader_exited: bool = False) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        if not leader_exited:
            proc.kill()
    proc.wait()
