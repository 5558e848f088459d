"""Atomic file writes: a reader never sees half a report or half a baseline.

The temporary file comes from ``mkstemp`` (mode 0600, so no other process can
write into it while it fills); before the rename it gets the mode an ordinary
``open()`` would have given it, ``0666 & ~umask`` (0644 under the usual 022).
Reports, runs, caches and baselines are read by later workflow steps that may
run as another user (the runner user, uid 1001, after a container ran as root).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from gate.common.errors import InputError


def current_umask() -> int:
    """The process umask (read by setting and restoring it: there is no getter)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_bytes_atomic(path: str | Path, data: bytes) -> Path:
    """Write to a temporary file in the same folder, fsync, then rename over ``path``.

    A place that cannot be written (``--out`` naming a file, a read-only folder, a full
    disk) is an :class:`InputError` naming the path: the user's to fix, not a crash.
    """
    target = Path(path)
    if target.is_dir():
        raise InputError(str(target), None, "cannot write: is a folder")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as error:
        blocker = next((p for p in target.parents if p.exists()), None)
        if blocker is not None and not blocker.is_dir():
            raise InputError(str(target), None, f"cannot write: {blocker} is a file, not a folder") from None
        raise InputError(str(target), None, f"cannot write: {error.strerror or error}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), 0o666 & ~current_umask())
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException as error:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(error, OSError):
            raise InputError(str(target), None, f"cannot write: {error.strerror or error}") from None
        raise
    return target


def write_text_atomic(path: str | Path, text: str) -> Path:
    return write_bytes_atomic(path, text.encode("utf-8"))
