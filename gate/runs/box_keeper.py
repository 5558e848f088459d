"""The box keeper: the one process that starts a pull request's command, and ends all of it.

It is started by :class:`gate.runs.box.KeeperBox` (``python -m gate.runs.box_keeper FD``) and
talks to the gate over the socket ``FD``. It holds nothing of the gate: no token (its environment
is the gate's scrubbed one), no report, no file-command paths; it only runs what the gate asks.

Two ways to confine, chosen by what the process may do:

* ``uid`` (the keeper runs as root, as a Docker action does): each command runs as a uid and
  gid used for nothing else (picked at random, unused by any process or account), with no
  supplementary groups, ``PR_SET_NO_NEW_PRIVS``, a umask of 077 and a fresh HOME, TMPDIR and
  output folder only it can write. It can read what every user may read, write nothing of the
  job's (the workspace, ``.git``, the gate's outputs, the file-command files belong to someone
  else), reach no socket that needs a group (the Docker socket), and read nothing of another
  uid's processes. When the command ends, every process of that uid is killed (``kill(-1)``
  as that uid, repeated until ``/proc`` shows none): ``setsid``, double forks and daemons
  included. A PID namespace would need ``CAP_SYS_ADMIN`` (``unshare --pid`` fails in a default
  Docker container, as GitHub starts a Docker action) and a cgroup a cgroupfs the container may
  write (it depends on the engine); a uid needs only root, which every Docker action has.
* ``tree`` (no root: a developer's machine, a self-hosted runner as a plain user): the command
  runs as the caller's own uid; the keeper is a child subreaper, so whatever the command leaves
  running (``setsid`` included) is re-parented to it and killed when the command ends. This is
  not a box: the command can write what the user can; :mod:`gate.runs.box` says so in one line.

The protocol is one JSON object a message, each preceded by its length (8 bytes, big endian);
a ``run`` request carries two descriptors (the log to write to, the file to copy the run into).
"""

from __future__ import annotations

import ctypes
import errno
import grp
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
MAX_MESSAGE = 64 * 1024 * 1024
COPY_CHUNK = 1 << 20
# The box's uid comes from a range no distribution hands out to accounts (those stop at 60000,
# rootless containers' sub-uids start at 100000 and rarely go beyond a few million).
UID_RANGE = (1_100_000_000, 1_900_000_000)
SMALL_UID_RANGE = (61_000, 64_999)  # a user namespace that maps only 65536 ids (userns-remap)


# ----------------------------------------------------------------------------- the wire


def send_message(sock: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    body = json.dumps(message, separators=(",", ":")).encode("utf-8")
    header = len(body).to_bytes(8, "big")
    if fds:
        socket.send_fds(sock, [header], fds)
    else:
        sock.sendall(header)
    sock.sendall(body)


def receive_message(sock: socket.socket) -> tuple[dict[str, Any] | None, list[int]]:
    """The next message and the descriptors that came with it; (None, []) at the end of the stream."""
    data, fds, _flags, _addr = socket.recv_fds(sock, 8, 4)
    if not data:
        return None, fds
    header = bytearray(data)
    while len(header) < 8:
        more = sock.recv(8 - len(header))
        if not more:
            raise EOFError("the stream ended inside a message header")
        header += more
    size = int.from_bytes(header, "big")
    if size > MAX_MESSAGE:
        raise ValueError(f"a message of {size} bytes")
    body = bytearray()
    while len(body) < size:
        more = sock.recv(min(size - len(body), 1 << 20))
        if not more:
            raise EOFError("the stream ended inside a message")
        body += more
    message = json.loads(body.decode("utf-8"))
    if not isinstance(message, dict):
        raise ValueError("a message that is not an object")
    return message, fds


# ----------------------------------------------------------------------------- processes


def _prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _status(pid: str) -> tuple[set[int], int | None, str] | None:
    """The uids (real, effective, saved, filesystem), parent pid and state of a process."""
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    uids: set[int] = set()
    parent: int | None = None
    state = "?"
    for line in text.splitlines():
        if line.startswith("Uid:"):
            uids = {int(x) for x in line.split()[1:]}
        elif line.startswith("PPid:"):
            parent = int(line.split()[1])
        elif line.startswith("State:"):
            state = line.split()[1]
    return uids, parent, state


def _processes() -> Iterator[tuple[int, set[int], int | None, str]]:
    for name in os.listdir("/proc"):
        if name.isdigit():
            found = _status(name)
            if found is not None:
                yield int(name), *found


def processes_of_uid(uid: int) -> list[int]:
    """Live (not zombie) processes any of whose uids is ``uid``."""
    return [pid for pid, uids, _parent, state in _processes() if uid in uids and state not in ("Z", "X")]


def descendants_of(ancestor: int) -> list[int]:
    """Live processes below ``ancestor`` (by parent links, read once)."""
    parents = {pid: parent for pid, _uids, parent, state in _processes() if state not in ("Z", "X")}
    below: list[int] = []
    for pid in parents:
        seen = 0
        up = parents.get(pid)
        while up is not None and seen < 4096:
            if up == ancestor:
                below.append(pid)
                break
            up = parents.get(up)
            seen += 1
    return below


def reap_children() -> None:
    """Collect every exited child (the command's orphans are re-parented to this subreaper)."""
    while True:
        try:
            pid, _status_code = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _kill_until_none(find: Callable[[], list[int]], kill: Callable[[list[int]], None], what: str,
                     rounds: int = 200) -> int:
    """Kill what ``find`` lists until it lists nothing (a process forked meanwhile is caught by
    the next round); how many were alive at the first look."""
    first: int | None = None
    for _ in range(rounds):
        reap_children()
        alive = find()
        if first is None:
            first = len(alive)
        if not alive:
            return first
        kill(alive)
    reap_children()
    left = find()
    if left:
        raise RuntimeError(f"{len(left)} processes of {what} outlived {rounds} rounds of kill")
    return first or 0


def kill_uid(uid: int) -> int:
    """Kill every process of ``uid``. ``kill(-1)`` as that uid reaches all of them at once,
    however they detached."""

    def kill_as_uid(_alive: list[int]) -> None:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child only signals and exits
            try:
                os.setgroups([])
                os.setresgid(uid, uid, uid)
                os.setresuid(uid, uid, uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)

    return _kill_until_none(lambda: processes_of_uid(uid), kill_as_uid, f"uid {uid}")


def kill_tree() -> int:
    """Kill every process below this one (the command's, re-parented here when they detached)."""
    me = os.getpid()

    def kill_each(alive: list[int]) -> None:
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    return _kill_until_none(lambda: descendants_of(me), kill_each, "this process's tree")


# Folders every user may write to: what one run of the box leaves there (a planted library, a
# poisoned cache) must not be there for the next run (the baseline's code runs as the same uid).
SHARED_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock", "/dev/mqueue")


def remove_tree(path: str) -> None:
    """``rm -rf`` that a tree built to break it cannot stop (shutil.rmtree recurses: a folder
    thousands of levels deep raises RecursionError)."""
    try:
        shutil.rmtree(path)
        return
    except FileNotFoundError:
        return
    except (OSError, RecursionError):
        pass
    subprocess.run(["rm", "-rf", "--one-file-system", "--", path], stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def hide_folders(roots: list[str], limit: int = 200_000) -> list[tuple[str, int]]:
    """Close every git folder below ``roots`` to other users (root may, whoever owns it); the modes
    to put back. ``actions/checkout`` leaves the job's token in ``.git/config`` (readable by all)
    unless told not to, in each checkout, the workspace's and any other one's below it."""
    hidden: list[tuple[str, int]] = []
    seen = 0
    for root in roots:
        for folder, dirs, _files in os.walk(root):
            seen += 1
            if seen > limit:
                return hidden
            if ".git" in dirs:
                path = os.path.join(folder, ".git")
                try:
                    info = os.lstat(path)
                    if stat.S_ISDIR(info.st_mode) and info.st_mode & 0o077:
                        os.chmod(path, stat.S_IMODE(info.st_mode) & ~0o077)
                        hidden.append((path, stat.S_IMODE(info.st_mode)))
                except OSError:
                    pass
            dirs[:] = [d for d in dirs if d != ".git" and not os.path.islink(os.path.join(folder, d))]
    return hidden


def remove_ipc_of_uid(uid: int) -> int:
    """Remove the System V shared memory, message queues and semaphores ``uid`` made (the next
    run, or anything else, must not find them)."""
    removed = 0
    libc = ctypes.CDLL(None, use_errno=True)
    for kind, remove in (("shm", libc.shmctl), ("msg", libc.msgctl), ("sem", libc.semctl)):
        try:
            with open(f"/proc/sysvipc/{kind}", encoding="ascii") as handle:
                header = handle.readline().split()
                rows = [line.split() for line in handle]
        except OSError:
            continue
        ids = [name for name in header if name.endswith("id") and name in ("shmid", "msqid", "semid")]
        if not ids or "uid" not in header:
            continue
        at_id, at_uid = header.index(ids[0]), header.index("uid")
        for row in rows:
            if len(row) > max(at_id, at_uid) and int(row[at_uid]) == uid:
                ipc_id = int(row[at_id])
                result = remove(ipc_id, 0, 0) if kind == "sem" else remove(ipc_id, 0, None)  # IPC_RMID
                removed += result == 0
    return removed


def remove_files_of_uid(uid: int) -> int:
    """Remove what ``uid`` left at the top of the shared writable folders (once none of its
    processes runs: nothing can race the removal)."""
    removed = 0
    for folder in SHARED_WRITABLE:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    remove_tree(entry.path)
                else:
                    os.unlink(entry.path)
                removed += 1
            except OSError:
                continue
    return removed


# ----------------------------------------------------------------------------- the box's uid


def _mapped_uids() -> list[tuple[int, int]]:
    """The uid ranges this user namespace maps (inside id, count)."""
    try:
        with open("/proc/self/uid_map", encoding="ascii") as handle:
            return [(int(a), int(c)) for a, _b, c in (line.split() for line in handle if line.strip())]
    except (OSError, ValueError):
        return [(0, 1 << 32)]


def _uid_is_free(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
        return False
    except KeyError:
        pass
    try:
        grp.getgrgid(uid)
        return False
    except KeyError:
        pass
    return not processes_of_uid(uid)


def choose_uid() -> int:
    """A uid (and the gid of the same number) no account, group or process uses."""
    ranges = _mapped_uids()

    def mapped(uid: int) -> bool:
        return any(start <= uid < start + count for start, count in ranges)

    for lo, hi in (UID_RANGE, SMALL_UID_RANGE):
        for _ in range(64):
            uid = lo + secrets.randbelow(hi - lo)
            if mapped(uid) and _uid_is_free(uid):
                return uid
    raise RuntimeError("no free uid for the box in this user namespace")


# ----------------------------------------------------------------------------- the keeper


class Keeper:
    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.confined = os.geteuid() == 0
        # A uid of its own for every run: what one run leaves behind (a file made readable by all,
        # shared memory) belongs to a uid the next run (the baseline's code, a noise repeat) is not.
        self.uid = choose_uid() if self.confined else os.getuid()
        self.gid = self.uid if self.confined else os.getgid()
        self.used: set[int] = set()
        self.root = tempfile.mkdtemp(prefix="retrieval-gate-box-")
        os.chmod(self.root, 0o711)  # the box may pass through to its own folders, list nothing

    def hello(self) -> dict[str, Any]:
        return {"root": self.root, "uid": self.uid, "gid": self.gid, "confined": self.confined,
                "kill": "uid" if self.confined else "tree", "pid": os.getpid()}

    def serve(self) -> None:
        send_message(self.sock, self.hello())
        try:
            while True:
                message, fds = receive_message(self.sock)
                if message is None:
                    return
                try:
                    reply = self.handle(message, fds)
                except Exception as error:  # noqa: BLE001 - answered, so the gate can say what failed
                    reply = {"error": f"{type(error).__name__}: {error}"}
                finally:
                    for fd in fds:
                        os.close(fd)
                send_message(self.sock, reply)
        finally:
            self.end_all()
            remove_tree(self.root)

    def end_all(self) -> int:
        """End every process of the runs so far, and remove what they left in shared places."""
        if not self.confined:
            return kill_tree()
        ended = 0
        for uid in sorted(self.used | {self.uid}):
            ended += kill_uid(uid)
            remove_files_of_uid(uid)
            remove_ipc_of_uid(uid)
        return ended

    def next_uid(self) -> None:
        if self.confined:
            self.used.add(self.uid)
            self.uid = self.gid = choose_uid()

    def handle(self, message: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        also = message.get("collect_also")
        if message.get("op") != "run" or len(fds) != (2 if also is None else 3):
            raise ValueError("expected a run request with two descriptors (three with collect_also)")
        log_fd, dest_fd = fds[:2]
        number = int(message["n"])
        for collect in (str(message["collect"]), *([] if also is None else [str(also)])):
            if not collect or collect in (".", "..") or "/" in collect or "\0" in collect:
                raise ValueError(f"not a file name: {collect!r}")
        folder = os.path.join(self.root, str(number))
        self.next_uid()
        os.mkdir(folder, 0o711)
        hidden = hide_folders([str(p) for p in message.get("hide", [])]) if self.confined else []
        try:
            paths = {name: os.path.join(folder, name) for name in ("home", "tmp", "out")}
            for path in paths.values():
                os.mkdir(path, 0o700)
                if self.confined:
                    os.chown(path, self.uid, self.gid)
            reply = self.run(message, paths, log_fd, dest_fd)
            if also is not None and "returncode" in reply:
                reply["collected_also"] = self.collect(os.path.join(paths["out"], str(also)), fds[2],
                                                       int(message["max_bytes"]))[0]
            return reply
        finally:
            for path, mode in hidden:
                os.chmod(path, mode)
            remove_tree(folder)

    def _can_enter(self, cwd: str) -> bool:
        """Whether the box's uid may enter ``cwd`` (asked of the kernel, ACLs included)."""
        if not self.confined:
            return True
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child only tries and exits
            code = 1
            try:
                os.setgroups([])
                os.setresgid(self.gid, self.gid, self.gid)
                os.setresuid(self.uid, self.uid, self.uid)
                os.chdir(cwd)
                os.listdir(".")
                code = 0
            except OSError:
                code = 1
            finally:
                os._exit(code)
        _pid, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status) == 0

    def run(self, message: dict[str, Any], paths: dict[str, str], log_fd: int, dest_fd: int) -> dict[str, Any]:
        cwd = message.get("cwd")
        if cwd is not None and not self._can_enter(cwd):
            return {"refused": f"the runner command's box (uid {self.uid}, no groups) cannot enter this folder: "
                               "a folder on the way is not open to other users (make it and the files the command "
                               "reads readable by all, e.g. chmod o+rX)"}
        env = {str(k): str(v) for k, v in dict(message["env"]).items()}
        env.update(HOME=paths["home"], TMPDIR=paths["tmp"], TMP=paths["tmp"], TEMP=paths["tmp"])
        shell = bool(message.get("shell"))
        argv = message["argv"]
        confined = self.confined

        def enter_box() -> None:  # runs in the child, after the uid and gid changed
            os.umask(0o077)
            if not _prctl(PR_SET_NO_NEW_PRIVS, 1):  # no sudo, no setuid program: not even as the user
                os._exit(125)

        try:
            proc = subprocess.Popen(
                argv, shell=shell, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log_fd, stderr=log_fd,
                close_fds=True, start_new_session=True, preexec_fn=enter_box,
                user=self.uid if confined else None, group=self.gid if confined else None,
                extra_groups=[] if confined else None,
            )
        except PermissionError as error:
            self.end_all()
            where = f" {error.filename}" if error.filename else ""
            return {"start_error": f"permission denied: the box (uid {self.uid}, no groups) cannot run{where}"
                                   + (": a folder on the way is closed to other users (a Python under /root, say); "
                                      "install it where every user can run it" if self.confined else "")}
        except (OSError, ValueError, subprocess.SubprocessError) as error:
            self.end_all()
            return {"start_error": str(error)}
        timed_out = False
        try:
            code: int | None = proc.wait(timeout=float(message["timeout"]))
        except subprocess.TimeoutExpired:
            timed_out = True
            code = None
        leftovers = self.end_all()
        if timed_out:
            proc.wait()
        collected, size = self.collect(os.path.join(paths["out"], str(message["collect"])), dest_fd,
                                       int(message["max_bytes"]))
        return {"returncode": code, "timed_out": timed_out, "leftovers": leftovers, "collected": collected,
                "bytes": size}

    def collect(self, path: str, dest_fd: int, max_bytes: int) -> tuple[str, int]:
        """Copy the command's output file to the gate's descriptor, once nothing of the box runs:
        only a plain file the box wrote (no symlink, no device, no hard link to another's file)."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            return "missing", 0
        except OSError as error:
            if error.errno == errno.ELOOP:
                return "symlink", 0
            return f"unreadable ({error.strerror})", 0
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return "not a regular file", 0
            if self.confined and (info.st_uid != self.uid or info.st_nlink != 1):
                return "not a file the command wrote", 0
            if info.st_size > max_bytes:
                return f"larger than {max_bytes} bytes", 0
            total = 0
            while True:
                chunk = os.read(fd, COPY_CHUNK)
                if not chunk:
                    break
                total += len(chunk)
                if total > max_bytes:
                    return f"larger than {max_bytes} bytes", 0
                view = memoryview(chunk)
                while view:
                    view = view[os.write(dest_fd, view):]
            return "yes", total
        finally:
            os.close(fd)


def main(argv: list[str]) -> int:
    sock = socket.socket(fileno=int(argv[1]))
    # A terminal's Ctrl-C reaches the whole foreground group: the keeper ends when the gate does
    # (its socket closes), killing the box on the way, not in the middle of a kill.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _prctl(PR_SET_DUMPABLE, 0)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    Keeper(sock).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
