"""Atomic file writes: a reader never sees half a report or half a baseline.

The temporary file comes from ``mkstemp`` (mode 0600, so no other process can
write into it while it fills); before the rename it gets the mode an ordinary
``open()`` would have given it, ``0666 & ~umask`` (0644 under the usual 022).
Reports, runs, caches and baselines are read by later workflow steps that may
run as another user (the runner user, uid 1001, after a container ran as root).

A writer killed before its rename (SIGKILL, a cancelled job, the OOM killer) leaves its temporary
file behind. So the name says whose it is: ``.<name>.rg-<pid>-<start>-<boot>.<random>.tmp``,
the writer's process id, its start time (clock ticks since boot, /proc/<pid>/stat) and the boot
id, which together tell a dead writer from a live one even when its pid was given to another
process since. Before a process first writes into a folder it removes the temporary files there
whose writer is dead (:func:`sweep_stale_temp_files`); a live writer's, and any ``.tmp`` whose
name does not say its owner, are left alone.
"""

from __future__ import annotations

import fcntl
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gate.common.errors import InputError

_OWNED_TEMP = re.compile(r"\..*\.rg-(?P<pid>[0-9]+)-(?P<start>[0-9]+)-(?P<boot>[0-9a-f]+)\.[A-Za-z0-9_]+\.tmp")
_swept: set[str] = set()  # the folders this process has swept (once each: its own temps come after)


def _start_ticks(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot); None when there is no such process
    or no /proc to ask."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    try:
        return int(fields[19])  # field 22, counted from the state (field 3)
    except (IndexError, ValueError):
        return None


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as boot:
            return boot.read().strip().replace("-", "")[:8].lower() or "0"
    except OSError:
        return "0"


def owner_tag(pid: int | None = None) -> str:
    """``rg-<pid>-<start>-<boot>``: the owner a temporary file's name records (this process's)."""
    pid = os.getpid() if pid is None else pid
    return f"rg-{pid}-{_start_ticks(pid) or 0}-{_boot_id()}"


def temp_prefix(target: Path) -> str:
    """The start of the name of this process's temporary file for ``target``."""
    return f".{target.name[:120]}.{owner_tag()}."


def _owner_alive(pid: int, start: int, boot: str) -> bool:
    """The process that made a temporary file still runs (in doubt: yes)."""
    current_boot = _boot_id()
    if boot != "0" and current_boot != "0" and boot != current_boot:
        return False  # written before a reboot
    if os.path.isdir("/proc/self"):
        started = _start_ticks(pid)
        if started is None:
            return False
        return start == 0 or started == start  # another start time: the pid was reused
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's process: it exists
    return True


def is_owned_temp(name: str) -> bool:
    """Whether ``name`` is a temporary file's name that says its writer (see the module)."""
    return _OWNED_TEMP.fullmatch(name) is not None


def sweep_stale_temp_files(folder: str | Path) -> list[str]:
    """Remove the temporary files in ``folder`` whose writer is dead; returns their names.
    A live writer's, and a ``.tmp`` that does not name its owner, are kept."""
    removed: list[str] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        found = _OWNED_TEMP.fullmatch(entry.name)
        if found is None or _owner_alive(int(found["pid"]), int(found["start"]), found["boot"]):
            continue
        try:
            os.unlink(entry.path)
        except OSError:
            continue  # gone meanwhile, or not ours to remove
        removed.append(entry.name)
    return removed


def _sweep_once(folder: Path) -> None:
    key = os.path.abspath(folder)
    if key not in _swept:
        _swept.add(key)
        sweep_stale_temp_files(folder)


def current_umask() -> int:
    """The process umask (read by setting and restoring it: there is no getter)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def check_replaceable(path: str | Path) -> None:
    """Refuse a name a new file must not be renamed over: a folder, or what is no regular file (a
    device, a pipe, a socket, ``/dev/stdout``), or anything in /dev, /proc or /sys. Renaming over
    ``--out /dev/stdout`` as root would replace the system's link with a file."""
    target = Path(path)
    if target.is_dir():
        raise InputError(str(target), None, "cannot write: is a folder")
    folder = os.path.realpath(os.path.dirname(os.path.abspath(target)))
    special = folder.split(os.sep)[1:2] in (["dev"], ["proc"], ["sys"])
    if special or (target.exists() and not target.is_file()):
        raise InputError(str(target), None, "cannot write: not a regular file (a device, a pipe, /dev/stdout): the "
                                            "gate writes a file atomically, by renaming a new file over the name")


def write_bytes_atomic(path: str | Path, data: bytes) -> Path:
    """Write to a temporary file in the same folder, fsync, then rename over ``path``.

    A place that cannot be written (``--out`` naming a file, a read-only folder, a full
    disk) is an :class:`InputError` naming the path: the user's to fix, not a crash.
    """
    target = Path(path)
    check_replaceable(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _sweep_once(target.parent)
        fd, tmp = tempfile.mkstemp(prefix=temp_prefix(target), suffix=".tmp", dir=target.parent)
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


@contextmanager
def folder_lock(folder: str | Path) -> Iterator[None]:
    """An exclusive lock on ``folder`` (flock on the folder itself: no lock file to commit), held
    by whoever writes or prunes a set of files there that belong together: ``archive`` writing
    its data files and then the manifest naming them, ``archive --gc`` removing the files no
    manifest names, which would otherwise remove the data of an archive half written."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock
