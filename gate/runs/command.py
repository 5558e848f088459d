"""The ``command`` runner: a team's own retrieval, run as a subprocess.

The template's placeholders ({config}, {queries}, {corpus}, {run}, {repeat},
{seed}, {timings}) are filled per token after ``shlex.split``, so paths with spaces need
no quoting and no shell is involved; ``shell: true`` runs the template through
``/bin/sh`` with every value ``shlex.quote``d. A placeholder is one of those names
and nothing more, and a literal brace is doubled (``{{``, ``}}``): the template is
parsed here, not handed to ``str.format``, whose format specs, conversions,
attributes and indexes (``{run:>1000000000}`` builds a 1 GB argument,
``{config.__class__.__mro__}`` reads the gate's objects) are refused. The environment is scrubbed of
credentials; output goes to a log file whose tail is shown on failure. The command runs in the
box (:mod:`gate.runs.box`): its own uid, folders and processes, none of the job's files writable.
"""

from __future__ import annotations

import os
import re
import shlex
import string
import sys
from pathlib import Path
from typing import Any

from gate.common import limits
from gate.common.environment import scrubbed_environment
from gate.common.errors import InputError
from gate.inputs import git
from gate.inputs.readers.timings import timings_path_for
from gate.runs import file_commands_guard
from gate.runs.box import BoxBroken, BoxedCommand, current_box
from gate.runs.request import RunnerFailed, RunRequest

PLACEHOLDERS = ("config", "queries", "corpus", "run", "repeat", "seed", "timings")
# A run bigger than this is not a ranked list of a golden set (MS MARCO's 7k queries at depth 1000
# are about 400 MB).
MAX_RUN_OUTPUT_BYTES = 4 * 1024 ** 3
MAX_LOG_BYTES = 8 * 1024 * 1024


def log_tail(path: Path, lines: int = 20, max_bytes: int = 64 * 1024) -> str:
    """The last ``lines`` lines of a log, read from its last ``max_bytes`` only (the command wrote
    it: it may be sparse and a terabyte long)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - max_bytes))
            data = handle.read(max_bytes)
    except OSError:
        return ""
    return "\n".join(data.decode("utf-8", errors="replace").splitlines()[-lines:])


def _bound_log(path: Path) -> None:
    """A log longer than MAX_LOG_BYTES keeps its last MAX_LOG_BYTES (with a line saying so): the
    workspace is uploaded and cached by later steps."""
    try:
        size = path.stat().st_size
        if size <= MAX_LOG_BYTES:
            return
        with open(path, "rb") as handle:
            handle.seek(size - MAX_LOG_BYTES)
            tail = handle.read(MAX_LOG_BYTES)
        with open(path, "wb") as handle:
            handle.write(f"[retrieval-gate: the first {size - MAX_LOG_BYTES} bytes of this log were cut]\n".encode())
            handle.write(tail)
    except OSError:
        pass


_KNOWN = ", ".join("{" + name + "}" for name in PLACEHOLDERS)


def check_placeholders(template: str, source: str, line: int | None = None) -> None:
    """Every ``{...}`` of ``template`` is one of :data:`PLACEHOLDERS`, written bare, and every
    other brace is doubled; else an :class:`InputError` naming the placeholder. After this,
    ``template.format(**values)`` only substitutes values (and undoubles braces)."""
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as error:  # a single '{' or '}'
        raise InputError(source, line, f"runner.command: {error} (write a literal brace doubled: {{{{ and }}}}; "
                         f"placeholders: {_KNOWN})") from None
    for _, name, spec, conversion in parts:
        if name is None:
            continue
        written = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
        shown = limits.shorten(written, 60)
        if name not in PLACEHOLDERS:
            raise InputError(source, line, f"runner.command has an unknown placeholder {shown} (known: {_KNOWN}; "
                             "write a literal brace doubled: {{ and }})")
        if conversion or spec:
            raise InputError(source, line, f"runner.command: placeholder {shown} takes no format spec or "
                             f"conversion: write {{{name}}}")


def quoted_placeholder(template: str) -> str | None:
    """The first placeholder written inside quotes in a shell template (``"{config}"``), which
    the shell would receive quoted twice (every value is ``shlex.quote``d): a path with a space
    would reach the command with the quotes in it. None when there is none."""
    quote, i = None, 0
    while i < len(template):
        c = template[i]
        if c == "\\" and quote != "'":
            i += 2  # an escaped character, outside quotes or in double quotes
            continue
        if quote is None and c in "'\"":
            quote = c
        elif c == quote:
            quote = None
        elif c == "{":
            if template.startswith("{{", i):
                i += 2
                continue
            found = re.match(r"\{([A-Za-z_]+)\}", template[i:])
            if quote is not None and found and found.group(1) in PLACEHOLDERS:
                return found.group(0)
        i += 1
    return None


class CommandRunner:
    name = "command"

    def __init__(self, template: str, *, timeout: float = 3600.0, shell: bool = False,
                 env_passthrough: tuple[str, ...] = (), cwd: Path | None = None, source: str = "runner.command",
                 line: int | None = None):
        if not template or not template.strip():
            raise InputError(source, line, "runner.type is 'command' but runner.command is empty")
        self.template = template
        self.timeout = timeout
        self.shell = shell
        self.env_passthrough = env_passthrough
        self.cwd = cwd
        try:
            tokens = shlex.split(template)
        except ValueError as error:
            raise InputError(source, line, f"runner.command cannot be split: {error}") from error
        for text in (template,) if shell else tokens:  # what argv() formats
            check_placeholders(text, source, line)
        quoted = quoted_placeholder(template) if shell else None
        if quoted is not None:
            raise InputError(source, line, f"runner.command: {quoted} is inside quotes: with runner.shell: true the "
                             "gate quotes every value itself (a path with a space stays one word), and quoted "
                             f"again it would reach the command with the quotes in it; write {quoted} bare")
        self.tokens = tokens
        # {timings}: a path the command writes its timings sidecar to (gate.inputs.readers.timings).
        # A command that does not name it has no timings; one that names it and writes none failed.
        self.writes_timings = any(name == "timings" for text in ((template,) if shell else tokens)
                                  for _, name, _, _ in string.Formatter().parse(text))

    def identity(self) -> dict[str, Any]:
        # shell changes how the same command text is parsed, so it is part of what a run depends on.
        return {"type": "command", "command": self.template, "shell": self.shell}

    def argv(self, values: dict[str, str]) -> list[str] | str:
        if self.shell:
            return self.template.format(**{k: shlex.quote(v) for k, v in values.items()})
        return [token.format(**values) for token in self.tokens]

    def produce(self, request: RunRequest, config_file: Path, out_path: Path, log_path: Path) -> None:
        box = current_box(warn=lambda line: print(f"retrieval-gate: warning: {line}", file=sys.stderr, flush=True))
        number, folders = box.folders()
        # The command writes its run in its own folder (nothing of the gate's is writable from the
        # box); the keeper copies it to out_path once every process of the command has ended.
        values = {
            "config": str(config_file),
            "queries": str(request.queries),
            "corpus": str(request.corpus or ""),
            "run": str(folders.out / out_path.name),
            "repeat": str(request.repeat),
            "seed": str(request.seed),
            "timings": str(folders.out / Path(timings_path_for(out_path)).name),
        }
        env = scrubbed_environment(
            self.env_passthrough,
            extra={
                "RETRIEVAL_GATE_REPEAT": str(request.repeat),
                "RETRIEVAL_GATE_SEED": str(request.seed),
                "RETRIEVAL_GATE_PURPOSE": request.purpose,
            },
        )
        # A baseline runs in a checkout of its own commit: the code it was measured with.
        cwd = request.code.root if request.code is not None and request.code.root is not None else self.cwd
        # The checkout's git folders (its own and any other checkout's below it) are closed to the
        # box while the command runs: actions/checkout leaves the token in .git/config by default.
        top = git.repo_root(cwd) if cwd is not None else None
        command = BoxedCommand(self.argv(values), self.shell, cwd, env, self.timeout, MAX_RUN_OUTPUT_BYTES,
                               hide=tuple(p for p in (top or cwd,) if p is not None))
        log_path.parent.mkdir(parents=True, exist_ok=True)
        file_commands = file_commands_guard.snapshot()
        timings_path = Path(timings_path_for(out_path))
        timings_path.unlink(missing_ok=True)  # a sidecar of an earlier run of this key is not this run's
        with open(log_path, "wb") as log, _fresh_output(out_path) as dest, \
                _fresh_output(timings_path if self.writes_timings else None) as timings_dest:
            also = None if timings_dest is None else (timings_path.name, timings_dest.fileno())
            try:
                outcome = box.run(number, command, log.fileno(), out_path.name, dest.fileno(), also)
            except BoxBroken as error:
                raise RunnerFailed(request.purpose, f"the runner command's box failed: {error}", log_path,
                                   log_tail(log_path)) from None
        _bound_log(log_path)
        file_commands_guard.check_unchanged(file_commands, f"the {request.purpose} run's command")
        if outcome.refused is not None:
            raise InputError(str(cwd), None, outcome.refused)
        if outcome.start_error is not None:
            raise RunnerFailed(request.purpose, f"could not start the runner command: {outcome.start_error}",
                               log_path)
        if outcome.leftovers:
            # What it left running in the background went too: nothing of the code under test
            # outlives its run (the gate talks to GitHub with credentials afterwards).
            print(f"[retrieval-gate] {request.purpose}: ended {outcome.leftovers} process(es) the runner command "
                  "left running", file=sys.stderr, flush=True)
        if outcome.timed_out:
            raise RunnerFailed(request.purpose, f"runner command timed out after {self.timeout:g}s",
                               log_path, log_tail(log_path))
        if outcome.returncode != 0:
            raise RunnerFailed(request.purpose, f"runner command exited with code {outcome.returncode}", log_path,
                               log_tail(log_path))
        if outcome.collected != "yes":
            out_path.unlink(missing_ok=True)
            what = ("did not write the run file {run}" if outcome.collected == "missing"
                    else f"wrote a run file the gate does not read: {outcome.collected}")
            raise RunnerFailed(request.purpose, f"runner command {what}", log_path, log_tail(log_path))
        if self.writes_timings:
            _check_timings_collected(outcome.collected_also, timings_path, request.purpose, log_path)


def _check_timings_collected(collected: str | None, timings_path: Path, purpose: str, log_path: Path) -> None:
    """A command that names {timings} wrote its sidecar, or its run failed (as without {run})."""
    if collected == "yes":
        return
    timings_path.unlink(missing_ok=True)
    what = ("did not write the timings file {timings}" if collected in (None, "missing")
            else f"wrote a timings file the gate does not read: {collected}")
    raise RunnerFailed(purpose, f"runner command {what}", log_path, log_tail(log_path))


class _fresh_output:
    """``out_path`` opened empty for the keeper to copy the run into (never through a symlink)."""

    def __init__(self, path: Path | None):
        self.path = path
        self.handle = None

    def __enter__(self):
        if self.path is None:  # nothing to collect: the command names no such file
            return None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.is_symlink():
            self.path.unlink()
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o666)
        self.handle = os.fdopen(fd, "wb")
        return self.handle

    def __exit__(self, *exc):
        if self.handle is not None:
            self.handle.close()
        return False
