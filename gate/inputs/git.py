"""The few git calls the gate makes.

In a Docker action the workspace may belong to another uid than the gate's, and git refuses
such a repository unless it is a ``safe.directory``. Every call here names the repository's
top level (found by walking up to its ``.git``, not the current folder: with
``working-directory: svc`` the current folder is not the repository) as a safe directory
through the environment (``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n``):
nothing is written to the user's git config, and nothing shows in a process list.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gate.common.environment import scrub_token, scrubbed_environment
from gate.common.errors import InputError


def top_level(cwd: Path) -> Path:
    """The folder holding ``.git`` at or above ``cwd`` (``cwd`` itself when there is none)."""
    start = Path(os.path.abspath(cwd))
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


# What the PR's code could have planted in the checkout before (or while) the gate reads it -
# an earlier step of the job runs it, and so does the command runner - must not change what
# git tells the gate, nor run anything: hooks and an fsmonitor are off, replace refs and grafts
# (which rewrite what a commit holds, or its parents: HEAD^1) are ignored.
_HARDENING = (("core.hooksPath", "/dev/null"), ("core.fsmonitor", "false"))
_NO_GRAFTS = "/nonexistent/retrieval-gate/no-grafts"


def environment(cwd: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a git child: credentials scrubbed, the repository of ``cwd`` safe,
    hooks off, replace refs and grafts ignored."""
    env = scrubbed_environment()
    try:
        count = int(env.get("GIT_CONFIG_COUNT", "0"))
    except ValueError:
        count = 0
    top = top_level(cwd)
    settings = [("safe.directory", value) for value in dict.fromkeys([str(top), str(top.resolve())])]
    for key, value in [*settings, *_HARDENING]:
        env[f"GIT_CONFIG_KEY_{count}"] = key
        env[f"GIT_CONFIG_VALUE_{count}"] = value
        count += 1
    env["GIT_CONFIG_COUNT"] = str(count)
    env["GIT_TERMINAL_PROMPT"] = "0"  # a missing credential is an error, never a prompt that hangs
    env["GIT_NO_REPLACE_OBJECTS"] = "1"
    env["GIT_GRAFT_FILE"] = _NO_GRAFTS
    env.update(extra or {})
    return env


def run(cwd: Path, *args: str, timeout: float = 30.0, extra_env: Mapping[str, str] | None = None,
        **kwargs) -> subprocess.CompletedProcess:
    """``git args...`` in ``cwd``; output captured unless ``stdout`` is given."""
    if "stdout" not in kwargs:
        kwargs["capture_output"] = True
    return subprocess.run(["git", *args], cwd=cwd, timeout=timeout, env=environment(cwd, extra_env), **kwargs)


def fetch(cwd: Path, *refspecs: str, token: str | None = None, url: str | None = None, depth: int | None = None,
          timeout: float = 120.0) -> subprocess.CompletedProcess:
    """``git fetch`` of ``refspecs`` from ``url`` (or from ``origin`` when no URL is given).

    The token goes only with an explicit ``url`` - the repository's own address, from the
    runner's GITHUB_SERVER_URL and GITHUB_REPOSITORY - never to whatever ``origin`` says: the
    PR's code may have run in an earlier step and repointed it. The checkout keeps no
    credentials (``persist-credentials: false``), so the token is handed to one git process as
    an ``http.<scheme>://<host>/.extraheader`` in its environment: not in its arguments (any
    process can read those), not in a file. That process fetches into a fresh bare repository
    of the gate's own, with no system or global config: nothing the PR's code could have
    written (the checkout's .git/config or hooks, a ~/.gitconfig in the runner's home: an
    ``insteadOf`` to another host, a proxy, a hook that reads its environment) takes part in
    it. The checkout then fetches from that repository, without the token."""
    args = ["fetch", "--quiet", "--no-tags", "--no-recurse-submodules"]
    if depth is not None:
        args.append(f"--depth={depth}")
    if not (token and url):
        return run(cwd, *args, url or "origin", *refspecs, timeout=timeout)
    scheme, sep, rest = url.partition("://")
    if not (sep and rest):
        return run(cwd, *args, url, *refspecs, timeout=timeout)
    host = rest.split("/", 1)[0].rsplit("@", 1)[-1]
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    with tempfile.TemporaryDirectory(prefix="retrieval-gate-fetch-") as scratch:
        bare = Path(scratch) / "fetched.git"
        (Path(scratch) / "template").mkdir()
        isolated = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "HOME": scratch,
                    "GIT_TEMPLATE_DIR": str(Path(scratch) / "template")}  # no hooks from a template either
        made = run(Path(scratch), "init", "--quiet", "--bare", str(bare), extra_env=isolated)
        if made.returncode != 0:
            return made
        n = int(environment(bare, isolated)["GIT_CONFIG_COUNT"])
        secret = {**isolated, "GIT_CONFIG_COUNT": str(n + 1),
                  f"GIT_CONFIG_KEY_{n}": f"http.{scheme}://{host}/.extraheader",
                  f"GIT_CONFIG_VALUE_{n}": f"AUTHORIZATION: basic {basic}"}
        # A ref lands in the bare repository under its own name, so the checkout's fetch below
        # maps it as the caller asked; a commit asked for by its sha is fetched by its sha.
        mirrored = [f"+{spec.lstrip('+').split(':', 1)[0]}:{spec.lstrip('+').split(':', 1)[0]}" if ":" in spec
                    else spec for spec in refspecs]
        remote = run(bare, *args, url, *mirrored, timeout=timeout, extra_env=secret)
        if remote.returncode != 0:
            # What the server said goes into warnings: a hostile one can echo the header back.
            return subprocess.CompletedProcess(remote.args, remote.returncode, scrub_token(remote.stdout, token),
                                               scrub_token(remote.stderr, token))
        # The upload-pack the checkout's fetch starts here serves commits by sha, refs or not.
        with open(bare / "config", "a", encoding="utf-8") as config:
            config.write("[uploadpack]\n\tallowAnySHA1InWant = true\n")
        shallow = ["--update-shallow"] if (bare / "shallow").exists() else []
        return run(cwd, *args, *shallow, str(bare), *refspecs, timeout=timeout)


def repository_url(env: Mapping[str, str]) -> str | None:
    """The repository's own git address, from the runner's environment (GITHUB_SERVER_URL and
    GITHUB_REPOSITORY), never from the checkout's config; None outside GitHub Actions."""
    repository = env.get("GITHUB_REPOSITORY")
    if not repository or not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repository):
        return None
    server = (env.get("GITHUB_SERVER_URL") or "https://github.com").rstrip("/")
    if not re.fullmatch(r"https?://[A-Za-z0-9.-]+(:[0-9]+)?(/[A-Za-z0-9._~/-]*)?", server):
        return None
    return f"{server}/{repository}"


def _git(cwd: Path, *args: str, timeout: float = 30.0) -> subprocess.CompletedProcess:
    return run(Path(cwd).resolve(), *args, timeout=timeout)


def repo_root(cwd: Path) -> Path | None:
    try:
        proc = _git(cwd, "rev-parse", "--show-toplevel")
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    return Path(proc.stdout.decode().strip())


def head_commit(cwd: Path) -> str | None:
    return rev_parse(cwd, "HEAD")


def _is_revision(ref: str) -> bool:
    """A revision git cannot mistake for an option (``--output=...``) or split on whitespace."""
    return bool(ref) and not ref.startswith("-") and not any(c.isspace() or ord(c) < 32 for c in ref)


def rev_parse(cwd: Path, ref: str) -> str | None:
    if not _is_revision(ref):
        return None
    try:
        proc = _git(cwd, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.decode().strip() if proc.returncode == 0 else None


def is_shallow(cwd: Path) -> bool:
    """Whether the repository at ``cwd`` is a shallow clone (its history cut at some depth)."""
    try:
        proc = _git(cwd, "rev-parse", "--is-shallow-repository")
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0 and proc.stdout.decode().strip() == "true"


def remote_branches(cwd: Path, name: str) -> list[str]:
    """The remote-tracking branches named ``name`` (``origin/main`` for ``main``), ``origin``'s
    first: what a ``--base main`` means in a CI checkout that has no local ``main``."""
    if not _is_revision(name) or name.startswith("refs/") or any(c in name for c in "*?[\\"):
        return []
    try:
        proc = _git(cwd, "for-each-ref", "--format=%(refname:short)", f"refs/remotes/*/{name}")
    except (OSError, subprocess.TimeoutExpired):
        return []
    if proc.returncode != 0:
        return []
    found = [line for line in proc.stdout.decode("utf-8", "replace").splitlines()
             if line and line.split("/", 1)[-1] == name]
    return sorted(found, key=lambda ref: (not ref.startswith("origin/"), ref))


def missing_revision_advice(cwd: Path, ref: str) -> str:
    """What to pass instead of ``ref``, which names no commit of the repository at ``cwd`` (the
    text after "no such commit in <repo>"): the remote-tracking branch when there is one
    (``origin/main``: a CI checkout creates no local branch), a deeper fetch when the clone is
    shallow, else nothing ("")."""
    remote = remote_branches(cwd, ref)
    if remote and rev_parse(cwd, remote[0]) is not None:
        return (f": there is no local branch {ref!r} (a CI checkout creates none), but the remote-tracking branch "
                f"{remote[0]!r} is there: use --base {remote[0]}")
    if is_shallow(cwd):
        return " (a shallow checkout: it needs fetch-depth: 2 or more, or the base fetched)"
    return ""


def repository_path(root: Path, path: Path) -> Path | None:
    """``path`` relative to the repository at ``root``, as named - the file itself, not where a
    symlink in the workspace points (the base's own retrieval/config.yml, not its target's).
    The folders above it may be symlinks (a workspace under /tmp -> /private/tmp)."""
    lexical = Path(os.path.normpath(os.path.abspath(path)))
    for base, candidate in ((Path(os.path.abspath(root)), lexical),
                            (Path(root).resolve(), lexical.parent.resolve() / lexical.name)):
        try:
            return candidate.relative_to(base)
        except ValueError:
            continue
    return None


class UnreadableAtCommit(InputError):
    """A path whose content the commit cannot say: a symlink leading out of the repository, or a
    loop. Bad input (exit 2) where the PR's own files are read; at the base commit, a yardstick
    the base cannot state (see :func:`gate.inputs.yardstick.load_yardstick`)."""

    def __init__(self, name: str, message: str):
        super().__init__(name, None, message)


def blob_at(cwd: Path, ref: str, path: Path) -> str | None:
    """The blob id of ``path`` as of ``ref``, following symlinks inside that commit's tree (a
    retrieval/config.yml that points at v1.yml is read as v1.yml, as the working tree reads it).
    None when the commit or the file is not there. A symlink that leads out of the repository or
    loops is refused: what it points at is not in the commit, so the commit cannot say what it is."""
    found = _find_blob(cwd, ref, path)
    return None if found is None else found[2]


def _find_blob(cwd: Path, ref: str, path: Path) -> tuple[Path, str, str] | None:
    """(the repository's top level, ``ref:path`` as messages name it, the blob id): see
    :func:`blob_at`."""
    if not _is_revision(ref):
        return None
    root = repo_root(cwd)
    if root is None:
        return None
    relative = repository_path(root, Path(path))
    if relative is None or "\n" in relative.as_posix():
        return None
    name = f"{ref}:{relative.as_posix()}"
    try:
        proc = run(root, "cat-file", "--batch-check", "--follow-symlinks", input=(name + "\n").encode("utf-8"))
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    fields = proc.stdout.decode("utf-8", errors="replace").split("\n", 1)[0].split()
    if len(fields) == 3 and fields[1] == "blob":
        return root, name, fields[0]
    if fields and fields[0] == "symlink":
        raise UnreadableAtCommit(name, "is a symlink that leads out of the repository: the commit does not hold "
                                 "what it reads")
    if fields and fields[0] == "loop":
        raise UnreadableAtCommit(name, "is a symlink loop")
    return None  # missing, dangling or a folder


class ForgedObject(InputError):
    """A git object whose bytes do not hash to its id: written into .git by something other than
    git (git does not check an object's id when it reads it). Exit 2."""

    def __init__(self, name: str, blob: str):
        super().__init__(name, None, f"git's object {blob[:12]} does not hold what its id says: the checkout's .git "
                                     "was written to outside git (by the pull request's code?); refused")


def _blob_hasher(blob: str, size: int):
    """git's id of a blob as its bytes are fed in: the hash of ``blob <size>\\0`` and the bytes
    (SHA-1, or SHA-256 in a repository of that object format, whose ids are 64 digits)."""
    digest = hashlib.sha1() if len(blob) == 40 else hashlib.sha256()
    digest.update(b"blob %d\0" % size)
    return digest


def show_file(cwd: Path, ref: str, path: Path) -> bytes | None:
    """The content of ``path`` at ``ref`` (symlinks inside the tree followed), or None when the
    commit or the file is not there. Content that does not hash to its blob id is refused
    (:class:`ForgedObject`): the PR's code, in an earlier step, may have written .git."""
    found = _find_blob(cwd, ref, path)
    if found is None:
        return None
    root, name, blob = found
    try:
        proc = _git(root, "cat-file", "blob", blob)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    check = _blob_hasher(blob, len(proc.stdout))
    check.update(proc.stdout)
    if check.hexdigest() != blob:
        raise ForgedObject(name, blob)
    return proc.stdout


def is_tracked(path: Path) -> bool:
    """Whether git tracks the file ``path`` (in the repository its folder belongs to; False
    outside a repository)."""
    folder = Path(path).parent
    root = repo_root(folder)
    if root is None:
        return False
    relative = repository_path(root, Path(path))
    if relative is None:
        return False
    try:
        proc = _git(root, "ls-files", "--error-unmatch", "--", f":(literal){relative.as_posix()}")
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


#: ``git diff`` as the gate reads a change, whatever the checkout's config says: NUL-separated
#: names, never quoted (``"gr\\303\\266\\303\\237e.yml"`` matches no glob); a rename as its two
#: names (a file moved out of the watched globs is a change to them); paths from the repository's
#: top (a ``diff.relative`` in its config would cut them to the current folder); submodules never
#: ignored.
_DIFF = ("-c", "diff.relative=false", "diff", "-z", "--name-only", "--no-renames", "--ignore-submodules=none",
         "--no-color", "--no-ext-diff")


def changed_files(cwd: Path, base: str, head: str | None = "HEAD") -> list[str] | None:
    """The repository paths a change touches: every file, link or submodule that differs between
    ``base`` and ``head`` (both names of a renamed one; a copy's new name; a mode change; a
    deletion). ``head=None``: the working tree as it is - committed or not, and untracked files
    that are not ignored - counted from where it left ``base`` (their merge base, see
    :func:`changed_since`). None when git cannot say. The Action (the PR's merge commit against
    its base) and ``run --base`` (the working tree) read a change here, one way."""
    if not (_is_revision(base) and (head is None or _is_revision(head))):
        return None
    root = repo_root(cwd)
    if root is None:
        return None
    try:
        if head is not None:
            diff = _git(root, *_DIFF, base, head, "--")
            return _names(diff.stdout) if diff.returncode == 0 else None
        fork = _git(root, "merge-base", base, "HEAD")
        since = fork.stdout.decode().strip() if fork.returncode == 0 and fork.stdout.strip() else base
        diff = _git(root, *_DIFF, since, "--")
        new = _git(root, "ls-files", "-z", "--others", "--exclude-standard", "--full-name")
    except (OSError, subprocess.TimeoutExpired):
        return None
    if diff.returncode != 0 or new.returncode != 0:
        return None
    names = _names(diff.stdout)
    return names + [name for name in _names(new.stdout) if name not in names]


def changed_since(cwd: Path, base: str) -> list[str] | None:
    """Files the working tree changes against ``base``: committed or not, tracked or new
    (what a local ``run --base`` is judged on, as the Action's merge commit is against its base).
    Counted from where the branch left ``base`` (their merge base): what the base branch changed
    since is not this change's (GitHub's merge commit does not list it either)."""
    return changed_files(cwd, base, None)


def _names(output: bytes) -> list[str]:
    """The paths of a ``-z`` listing, in order, each once. A name that is not UTF-8 is kept with
    its bytes escaped (``\\xe9``), as :func:`gate.inputs.globs.shown` writes it: a message may quote
    it, a glob's wildcard still matches it."""
    names = output.decode("utf-8", "backslashreplace").split("\0")
    return list(dict.fromkeys(name for name in names if name))


def tree_files(cwd: Path) -> list[str] | None:
    """The repository paths of what a commit of the working tree would hold (``git add -A``):
    tracked files still there and untracked files that are not ignored, in git's own bytes
    (surrogate-escaped, so each opens as named). None outside a repository or when git fails."""
    root = repo_root(cwd)
    if root is None:
        return None
    try:
        proc = _git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--full-name",
                    timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    names = dict.fromkeys(n for n in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if n)
    return [name for name in names if os.path.lexists(root / name)]


def ignored_files(cwd: Path, paths: list[str]) -> list[str] | None:
    """The files at or below ``paths`` (relative to the repository at ``cwd``) that git ignores
    and does not track: a commit never holds them. None when git cannot say."""
    if not paths:
        return []
    try:
        proc = _git(cwd, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--full-name", "--",
                    *(":(literal)" + name for name in paths))
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    return [name for name in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if name]


@dataclass(frozen=True)
class ExportedBlob:
    """A file written out of git: where it was written, git's id of its blob (which its bytes
    were checked to hash to) and the sha256 of those bytes."""

    path: Path
    blob: str
    sha256: str


#: Bytes of a blob streamed at a time: a corpus may be hundreds of MB.
_BLOCK = 1 << 20


def export_file(cwd: Path, ref: str, path: Path, target: Path, timeout: float = 600.0) -> ExportedBlob | None:
    """Write ``path`` as of ``ref`` to ``target``, streamed, symlinks inside the tree followed, and
    hashed as it is written (its sha256, and git's id, which must be the blob's: else
    :class:`ForgedObject`). None when the commit or the file is not there or git fails."""
    found = _find_blob(cwd, ref, path)
    if found is None:
        return None
    root, name, blob = found
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    try:
        hashed = _stream_blob(root, blob, partial, timeout)
    except OSError:
        hashed = None
    if hashed is None or hashed[0] != blob:
        partial.unlink(missing_ok=True)
        if hashed is not None:
            raise ForgedObject(name, blob)
        return None
    os.replace(partial, target)
    return ExportedBlob(target, blob, hashed[1])


def _stream_blob(root: Path, blob: str, target: Path, timeout: float) -> tuple[str, str] | None:
    """The blob ``blob`` written to ``target`` through ``git cat-file --batch`` (its header gives
    the size git's id is hashed with): (the id its bytes hash to, their sha256), or None when
    git gives less (killed after ``timeout`` seconds)."""
    with subprocess.Popen(["git", "cat-file", "--batch"], cwd=root, env=environment(root), stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as proc:
        assert proc.stdin is not None and proc.stdout is not None  # both are pipes
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            proc.stdin.write(f"{blob}\n".encode("ascii"))
            proc.stdin.close()
            header = proc.stdout.readline().split()
            if len(header) != 3 or header[1] != b"blob" or not header[2].isdigit():
                return None
            left = int(header[2])
            check, sha256 = _blob_hasher(blob, left), hashlib.sha256()
            with open(target, "wb") as out:
                while left:
                    block = proc.stdout.read(min(_BLOCK, left))
                    if not block:
                        return None
                    out.write(block)
                    check.update(block)
                    sha256.update(block)
                    left -= len(block)
        finally:
            timer.cancel()
            if proc.poll() is None:
                proc.kill()  # all its bytes are read (or none will be): the trailing newline is not needed
    return check.hexdigest(), sha256.hexdigest()


def export_tree(cwd: Path, ref: str, folder: Path, target: Path) -> tuple[ExportedBlob, ...] | None:
    """Write every file of ``folder`` as of ``ref`` below ``target`` (a corpus stored as a folder
    of files), each as :func:`export_file` writes one. None when the commit or the folder is not
    there, or a file cannot be written; ``target`` then holds nothing of it."""
    root = repo_root(cwd)
    if root is None or not _is_revision(ref):
        return None
    inside = repository_path(root, folder)
    if inside is None:
        return None
    try:
        proc = run(root, "ls-tree", "-r", "-z", "--full-tree", "--name-only", ref, "--", inside.as_posix() + "/",
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    names = [n for n in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if n]
    if proc.returncode != 0 or not names:
        return None
    shutil.rmtree(target, ignore_errors=True)
    prefix = inside.as_posix().rstrip("/") + "/"
    exported = []
    for name in names:
        if not name.startswith(prefix) or ".." in Path(name[len(prefix):]).parts:
            continue
        try:
            one = export_file(cwd, ref, root / name, target / name[len(prefix):])
        except ForgedObject:
            shutil.rmtree(target, ignore_errors=True)
            raise
        if one is None:
            shutil.rmtree(target, ignore_errors=True)
            return None
        exported.append(one)
    return tuple(exported)
