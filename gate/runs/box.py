"""The box a pull request's command runs in (the ``command`` runner's only way to start it).

The gate never starts the PR's code itself: it asks the box keeper (:mod:`gate.runs.box_keeper`),
a separate process started before the gate reads anything of the PR's and, in the Action, before
it drops root. The gate sends the command, its working folder, its (scrubbed) environment and two
descriptors: the log it writes to and the file its run is copied into. The keeper answers once
the command and everything it started have ended, so nothing of the PR's code is running while
the gate reads the run, decides, or talks to GitHub with its token.

As root (the Action, a CI container) the command runs as a uid and gid used for nothing else,
with no supplementary groups: it reads what everyone may read and writes only its own HOME,
TMPDIR and output folder. Without root there is no box: the command runs as the user; the token
is still out of its reach (the gate re-executed itself without it and is non-dumpable) and
whatever it leaves running is still killed, but it can write what the user can write, which one
warning line says (:data:`UNCONFINED_WARNING`).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate.runs.box_keeper import receive_message, send_message

# What a boxed command's environment never holds: the paths of the job's file commands (it could
# not write them as the box's uid; without a box it must not even be told where they are).
FILE_COMMAND_VARIABLES = ("GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_STATE", "GITHUB_STEP_SUMMARY")
KEEPER_GRACE_SECONDS = 600.0
UNCONFINED_WARNING = (
    "no box for the runner command (not root): it runs as your own user and can do what your user can - write "
    "the checkout and the job's files, read a token another process of yours holds, stop the gate; judge only "
    "code you would run anyway (see the security model)"
)


@dataclass(frozen=True)
class BoxedCommand:
    """One command for the box: ``argv`` (a list, or a text for ``/bin/sh -c`` when ``shell``)."""

    argv: Sequence[str] | str
    shell: bool
    cwd: Path | None
    env: Mapping[str, str]
    timeout: float
    max_output_bytes: int
    hide: tuple[Path, ...] = ()  # folders whose git folders are closed while it runs (the checkout's)


@dataclass(frozen=True)
class BoxFolders:
    """The folders one command owns (created when it starts, removed when it ends)."""

    home: Path
    tmp: Path
    out: Path


@dataclass(frozen=True)
class BoxOutcome:
    """How a boxed command ended. ``collected``: "yes", or why its output was not copied out."""

    returncode: int | None
    timed_out: bool
    leftovers: int
    collected: str
    refused: str | None = None
    start_error: str | None = None
    # The second file asked for (the run's timings sidecar): "yes", "missing", or why not copied.
    collected_also: str | None = None


@dataclass(frozen=True)
class BoxIdentity:
    confined: bool
    uid: int
    gid: int
    kill: str  # "uid" or "tree"

    def describe(self) -> str:
        if self.confined:
            return (f"runner commands run boxed: uid {self.uid} and gid {self.gid} of their own, no groups, their own "
                    "HOME and TMPDIR, nothing of the job writable; all of their processes end with each run")
        return "runner commands run as this user (no box: not root); all of their processes end with each run"


class BoxBroken(RuntimeError):
    """The keeper is gone or answered nonsense: a command's own doing (it can kill a same-uid
    keeper) or a bug; never a verdict."""


class KeeperBox:
    """The gate's end of the keeper's socket."""

    def __init__(self, sock: socket.socket, proc: subprocess.Popen | None, hello: Mapping[str, Any]):
        self._sock = sock
        self._proc = proc
        self.root = Path(str(hello["root"]))
        self.identity = BoxIdentity(bool(hello["confined"]), int(hello["uid"]), int(hello["gid"]), str(hello["kill"]))
        self._next = 0
        self._broken: str | None = None  # why no run can be asked of the keeper any more

    @classmethod
    def start(cls) -> KeeperBox:
        """Start a keeper as this process's user (root: a confining one)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        package_parent = str(Path(__file__).resolve().parents[2])
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
               # Found from a checkout without installing (tests, entrypoint.py) as from an install.
               "PYTHONPATH": package_parent, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONSAFEPATH": "1"}
        try:
            proc = subprocess.Popen([sys.executable, "-I", "-c", _KEEPER_BOOT, package_parent, str(theirs.fileno())],
                                    pass_fds=(theirs.fileno(),), env=env, stdin=subprocess.DEVNULL, cwd="/")
        finally:
            theirs.close()
        hello, _fds = receive_message(ours)
        if hello is None or "error" in hello:
            raise BoxBroken(f"the box keeper did not start ({(hello or {}).get('error', 'it exited')})")
        return cls(ours, proc, hello)

    def folders(self) -> tuple[int, BoxFolders]:
        """The folders the next command will own (made by the keeper when it starts)."""
        self._next += 1
        base = self.root / str(self._next)
        return self._next, BoxFolders(base / "home", base / "tmp", base / "out")

    def run(self, number: int, command: BoxedCommand, log_fd: int, collect: str, dest_fd: int,
            also: tuple[str, int] | None = None) -> BoxOutcome:
        """Run ``command`` in box ``number``; copy its output file ``collect`` to ``dest_fd`` (and
        ``also``'s file name to its descriptor: the timings sidecar) once nothing of it runs."""
        if self._broken is not None:
            raise BoxBroken(self._broken)
        env = {k: v for k, v in command.env.items() if k not in FILE_COMMAND_VARIABLES}
        request = {"op": "run", "n": number, "argv": command.argv if command.shell else list(command.argv),
                   # The gate's own folder when the runner names none, as a subprocess of it would have.
                   "shell": command.shell, "cwd": str(command.cwd if command.cwd is not None else Path.cwd()),
                   "env": env,
                   "timeout": command.timeout, "collect": collect, "max_bytes": command.max_output_bytes,
                   "hide": [str(p) for p in command.hide], "collect_also": None if also is None else also[0]}
        # The keeper answers within the command's timeout and the kill; one that does not (stopped
        # by a command of the same uid, without a box) is gone.
        self._sock.settimeout(command.timeout + KEEPER_GRACE_SECONDS)
        try:
            send_message(self._sock, request, [log_fd, dest_fd, *([] if also is None else [also[1]])])
            reply, fds = receive_message(self._sock)
        except (OSError, EOFError, ValueError) as error:
            self._broken = f"the box keeper is gone ({error or type(error).__name__})"
            raise BoxBroken(self._broken) from None
        for fd in fds:
            os.close(fd)
        if reply is None:
            self._broken = "the box keeper is gone (it closed the connection)"
            raise BoxBroken(self._broken)
        if "error" in reply:
            raise BoxBroken(f"the box keeper failed: {reply['error']}")
        return BoxOutcome(reply.get("returncode"), bool(reply.get("timed_out")), int(reply.get("leftovers", 0)),
                          str(reply.get("collected", "missing")), reply.get("refused"), reply.get("start_error"),
                          None if also is None else str(reply.get("collected_also", "missing")))

    def close(self) -> None:
        self._sock.close()
        if self._proc is not None:
            try:
                self._proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()


# The keeper is started with -I (no user site, no PYTHON* variables, no cwd on the path): it
# imports the gate from where this process found it, and nothing a PR put in the working folder.
_KEEPER_BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from gate.runs.box_keeper import main; " \
               "sys.exit(main(sys.argv[1:]))"

_box: KeeperBox | None = None
_warned = False


def start_box() -> KeeperBox:
    """The process's box, started on first use (the Action starts it before dropping root)."""
    global _box
    if _box is None:
        _box = KeeperBox.start()
    return _box


def current_box(warn: Any = None) -> KeeperBox:
    """The box, and (once) the warning line when it does not confine."""
    global _warned
    box = start_box()
    if not box.identity.confined and not _warned:
        _warned = True
        if warn is not None:
            warn(UNCONFINED_WARNING)
    return box

