"""The gate's own process, made safe to run a pull request's code from.

The gate holds the GitHub token and starts the PR's retrieval command. Scrubbing the child's
environment is not enough: a child can read ``/proc/<gate pid>/environ`` (the environment the gate
was *started* with, whatever it removed from ``os.environ`` since) and, as the same uid, the gate's
memory. So, before any child starts, :func:`isolate` (the Action's entrypoint) and
:func:`isolate_cli` (the ``retrieval-gate`` command):

1. **re-execute the process without the secrets in its environment.** ``INPUT_TOKEN``,
   ``GITHUB_TOKEN``, ``ACTIONS_RUNTIME_TOKEN`` and ``ACTIONS_ID_TOKEN_REQUEST_TOKEN`` go over a
   pipe to the new process image instead; its ``/proc/<pid>/environ`` never held them. The CLI
   keeps them in :func:`held_secret`, never in ``os.environ`` (whence every child would inherit them);
2. **start the box keeper while still root** (:mod:`gate.runs.box`): the PR's command runs as a
   uid of its own, which can write nothing of the job's and reach nothing of another uid's;
3. (the Action) **drop to the workspace owner** when it runs as root (Docker actions do; the
   workspace belongs to the runner user, uid 1001): every file the gate writes then belongs to
   the runner user (the workflow's later steps and the next checkout can change and remove
   them), git needs no ``safe.directory``, and changing uid makes the process non-dumpable;
4. **make the process non-dumpable** (``prctl(PR_SET_DUMPABLE, 0)``) either way: then
   ``/proc/<pid>/mem``, ``/proc/<pid>/environ`` and ``ptrace`` need ``CAP_SYS_PTRACE``, which
   neither a runner user nor root in a default Docker container has.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping

from gate.runs.box import start_box

try:  # imported now: after the drop to the workspace owner, the interpreter's own folders
    import ctypes  # may not be readable (a Python under /root)
except ImportError:  # pragma: no cover - a Python built without ctypes
    ctypes = None  # type: ignore[assignment]

SECRETS = ("INPUT_TOKEN", "GITHUB_TOKEN", "ACTIONS_RUNTIME_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN")
_FD = "RETRIEVAL_GATE_SECRETS_FD"
PR_SET_DUMPABLE = 4


def _set_non_dumpable() -> bool:
    if ctypes is None:
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
    except (OSError, AttributeError):  # not Linux
        return False


def _read_secrets(fd: int) -> dict[str, str]:
    chunks = []
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    data = json.loads(b"".join(chunks).decode("utf-8"))
    return {str(k): str(v) for k, v in data.items()}


def _drop_to_workspace_owner(env: Mapping[str, str]) -> str | None:
    """Become the workspace's owner when root; returns what was done, for the log."""
    if os.geteuid() != 0:
        return None
    workspace = env.get("GITHUB_WORKSPACE")
    if not workspace:
        return None
    try:
        info = os.stat(workspace)
    except OSError:
        return None
    if info.st_uid == 0:
        return None
    os.setgroups([])
    os.setgid(info.st_gid)
    os.setuid(info.st_uid)
    return f"running as uid {info.st_uid} (the workspace owner), not root"


def _reexecute_without_secrets(argv: list[str]) -> dict[str, str]:
    """The secrets this process was started with; re-executes it first (without them in its
    environment) when they are still there. ``argv``: the interpreter's arguments (the script or
    ``-m module`` and its arguments)."""
    present = {name: os.environ[name] for name in SECRETS if name in os.environ}
    if present and _FD not in os.environ:
        read_end, write_end = os.pipe()
        os.write(write_end, json.dumps(present).encode("utf-8"))  # a few hundred bytes: the pipe holds them
        os.close(write_end)
        os.set_inheritable(read_end, True)
        clean = {k: v for k, v in os.environ.items() if k not in SECRETS}
        clean[_FD] = str(read_end)
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, [sys.executable, *argv], clean)
    secrets: dict[str, str] = {}
    if _FD in os.environ:
        secrets = _read_secrets(int(os.environ.pop(_FD)))
    return secrets


def isolate(argv: list[str] | None = None) -> tuple[dict[str, str], str | None]:
    """The Action's: the environment the gate runs with (secrets included, as a dict: never
    ``os.environ``), and a note on the identity it runs as. Re-executes the process when secrets
    are in its environment (does not return then)."""
    secrets = _reexecute_without_secrets(list(sys.argv if argv is None else argv))
    _set_non_dumpable()  # before the drop too: no moment where a same-uid process could attach
    notes = []
    if os.geteuid() == 0:
        notes.append(start_box().identity.describe())
    dropped = _drop_to_workspace_owner(os.environ)
    if dropped:
        notes.insert(0, dropped)
    _set_non_dumpable()
    return {**os.environ, **secrets}, "; ".join(notes) or None


_held: dict[str, str] | None = None


def isolate_cli() -> None:
    """The ``retrieval-gate`` command's: re-executed without the secrets in its environment (kept
    for :func:`held_secret`), and non-dumpable. The box starts when a runner command first runs."""
    global _held
    if sys.argv[:1] in (["-"], [""]) and any(name in os.environ for name in SECRETS):
        # A script read from standard input cannot be read again by the re-executed process, which
        # would run nothing and exit 0: a pass that checked nothing.
        print("retrieval-gate: error: started from standard input with a token in the environment: it cannot "
              "re-execute itself without the token; run the retrieval-gate command", file=sys.stderr)
        sys.exit(2)
    argv = list(getattr(sys, "orig_argv", sys.argv))[1:] or list(sys.argv)
    _held = _reexecute_without_secrets(argv)
    _set_non_dumpable()


def held_secret(name: str) -> str | None:
    """A secret the command was started with: from the pipe after :func:`isolate_cli`, else (the
    gate called as a library, in-process) from the environment."""
    if _held is not None:
        return _held.get(name)
    return os.environ.get(name)
