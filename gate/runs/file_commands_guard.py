"""The job's file-command files, kept from a runner command's reach.

``$GITHUB_ENV``, ``$GITHUB_PATH``, ``$GITHUB_OUTPUT``, ``$GITHUB_STATE`` and
``$GITHUB_STEP_SUMMARY`` steer the job after the gate: a line appended to ``$GITHUB_ENV``
(``LD_PRELOAD=...``) or ``$GITHUB_PATH`` runs code in every later step, with their tokens, and a
``verdict=pass`` appended to ``$GITHUB_OUTPUT`` after the gate's own wins. In the box the command
cannot write them (another uid owns them; one left writable by all is closed first). Without a
box it could: each is read before the command starts and compared after it ended; a change is
undone and the run refused.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass

from gate.common.errors import InputError

FILE_COMMANDS = ("GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_STATE", "GITHUB_STEP_SUMMARY")
# The runner caps a step summary at 1 MiB and the others are a few lines: held whole to undo a change.
MAX_HELD_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class FileCommandState:
    variable: str
    path: str
    exists: bool
    sha256: str
    content: bytes | None  # None: too large to hold (a change is refused, not undone)


def _read(path: str) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read(MAX_HELD_BYTES + 1)


def snapshot(env: Mapping[str, str] | None = None) -> tuple[FileCommandState, ...]:
    """The file-command files as they are now; one writable by every user is closed to them."""
    env = os.environ if env is None else env
    states = []
    for variable in FILE_COMMANDS:
        path = env.get(variable)
        if not path:
            continue
        try:
            info = os.lstat(path)
            if stat.S_ISREG(info.st_mode) and info.st_mode & 0o002 and info.st_uid == os.geteuid():
                os.chmod(path, stat.S_IMODE(info.st_mode) & ~0o002)
        except OSError:
            pass
        content = _read(path)
        digest = hashlib.sha256(content or b"").hexdigest()
        held = content if content is not None and len(content) <= MAX_HELD_BYTES else None
        states.append(FileCommandState(variable, path, content is not None, digest, held))
    return tuple(states)


def _restore(path: str, content: bytes) -> bool:
    """Put ``content`` back at ``path``, whatever the command made of it (read-only, a symlink, a
    folder): the file is replaced by a new one, never written through what is there."""
    folder, name = os.path.split(path)
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{name}.", dir=folder or ".")
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
        os.chmod(temporary, 0o644)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        os.replace(temporary, path)
        return True
    except OSError:
        return False


def check_unchanged(states: tuple[FileCommandState, ...], who: str) -> None:
    """Raise (one line) when a file-command file changed since ``states``, after undoing every change."""
    changed: list[tuple[FileCommandState, bool]] = []
    for state in states:
        now = _read(state.path)
        if (now is not None) == state.exists and hashlib.sha256(now or b"").hexdigest() == state.sha256:
            continue
        changed.append((state, state.content is not None and _restore(state.path, state.content)))
    if changed:
        names = ", ".join(f"${state.variable}" + (" (undone)" if undone else " (NOT undone)")
                          for state, undone in changed)
        raise InputError(changed[0][0].path, None, f"{who} changed the job's file-command files {names}: a pull "
                         "request's code may not steer the job's later steps")
