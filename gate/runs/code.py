"""What code produced a run: part of the run's cache key.

A run depends on more than its retrieval config: the team's search code, its
lock file, its prompt templates. A cache keyed only on the config serves the
baseline's own run to a PR that changed ``search/bm25.py`` - a pass the PR did
not earn. So every produced run is keyed on the code it was produced by:

* ``runner.inputs`` (globs relative to the config's folder, :mod:`gate.inputs.globs`) when
  declared: the sha256 of every matching file, path and content;
* otherwise the git tree of the code under test: the working tree as a temporary
  index would commit it (tracked and untracked, ignored files aside), without
  the gate's own folders (``.retrieval-gate/``, the cache, the runs folder) - or,
  for a baseline, the tree of the commit it comes from;
* outside a git repository, with no ``runner.inputs``, the code cannot be
  seen: :attr:`CodeIdentity.known` is false and the producer does not use the
  cache for such runs.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from gate.common.errors import InputError
from gate.inputs import git
from gate.inputs.fingerprint import file_sha256
from gate.inputs.globs import matched_inputs, shown


@dataclass(frozen=True)
class CodeIdentity:
    """``kind``: ``inputs`` | ``git-tree`` | ``commit`` | ``builtin`` | ``unknown``."""

    kind: str
    sha: str | None
    description: str
    root: Path | None = None  # where the runner runs: the workspace (None: a checkout of ``commit``)
    commit: str | None = None  # for kind "commit": the commit a checkout is made of

    @property
    def known(self) -> bool:
        return self.sha is not None

    def key(self) -> dict[str, str | None]:
        """What goes into the cache key (not the root: two checkouts of one tree are one code)."""
        return {"kind": self.kind, "sha": self.sha}

    def to_dict(self) -> dict[str, str | None]:
        return {"kind": self.kind, "sha": self.sha, "description": self.description}


BUILTIN = CodeIdentity("builtin", "builtin", "the gate's own reference retriever")


def _git(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return git.run(root, *args, timeout=120, extra_env=env)


def _excludes(root: Path, folders: Sequence[Path]) -> list[str]:
    out = []
    for folder in folders:
        try:
            relative = Path(os.path.abspath(folder)).relative_to(os.path.abspath(root))
        except ValueError:
            continue  # outside the repository: not in its tree anyway
        if str(relative) not in ("", "."):
            out.append(f":(exclude){relative.as_posix()}")
    return out


def _drop(top: Path, exclude: Sequence[Path], env: dict[str, str]) -> bool:
    """Remove ``exclude`` from the temporary index ``env`` names; False when git refuses."""
    for folder in _excludes(top, exclude):
        path = folder.split(")", 1)[1]
        if _git(top, "rm", "-r", "-q", "--cached", "-f", "--ignore-unmatch", "--", path, env=env).returncode != 0:
            return False
    return True


def _scratch_objects(top: Path, tmp: Path) -> dict[str, str]:
    """New blobs and trees go to a scratch object folder, the repository's own read beside it:
    fingerprinting the code must not grow ``.git`` with copies of untracked files."""
    found = _git(top, "rev-parse", "--git-path", "objects")
    if found.returncode != 0:
        return {}
    objects = top / found.stdout.decode().strip()
    scratch = tmp / "objects"
    scratch.mkdir()
    return {"GIT_OBJECT_DIRECTORY": str(scratch), "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(objects.resolve())}


def working_tree(root: Path, exclude: Sequence[Path] = ()) -> CodeIdentity:
    """The tree ``git add -A`` would record for the working folder ``root`` (a temporary index:
    the repository's own index and history are not touched)."""
    top = git.repo_root(root)
    if top is None:
        return CodeIdentity("unknown", None, f"{root} is not in a git repository and runner.inputs is not set",
                            Path(root))
    with tempfile.TemporaryDirectory(prefix="retrieval-gate-index-") as tmp:
        index = Path(tmp) / "index"
        own = _git(top, "rev-parse", "--git-path", "index")
        own_index = top / own.stdout.decode().strip() if own.returncode == 0 else None
        if own_index is not None and own_index.is_file():
            index.write_bytes(own_index.read_bytes())  # its stat cache spares re-hashing unchanged files
            # ...with the index's own mtime: git re-hashes an entry whose file changed in the same
            # second as the index was written ("racily clean"); a copy dated now would hide a
            # same-size edit made in that second, and the PR's code would be keyed as unchanged.
            stat = own_index.stat()
            os.utime(index, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        env = {"GIT_INDEX_FILE": str(index), **_scratch_objects(top, Path(tmp))}
        # Everything (ignored files aside, as a commit would), then the gate's own folders out:
        # an exclude pathspec naming an ignored folder would make `git add` fail.
        try:
            added = _git(top, "add", "-A", "--", ".", env=env)
        except subprocess.TimeoutExpired:
            # A huge untracked file (a 20 GB dump beside the code): git would hash it all.
            return CodeIdentity("unknown", None, f"git add -A timed out in {top} (a very large untracked file? "
                                "set runner.inputs to name the code)", Path(root))
        if added.returncode != 0:
            why = " ".join(added.stderr.decode(errors="replace").split())  # one line, whatever git printed
            return CodeIdentity("unknown", None, f"git add failed in {top}: {why[:200]}", Path(root))
        # Tracked files in an excluded folder leave the index too (-f: the temporary index may hold
        # another version of them than the file and HEAD, and git refuses that without it).
        if not _drop(top, exclude, env):
            return CodeIdentity("unknown", None, f"cannot leave the gate's folders out of the tree of {top}",
                                Path(root))
        tree = _git(top, "write-tree", env=env)
    if tree.returncode != 0:
        return CodeIdentity("unknown", None, f"git write-tree failed in {top}", Path(root))
    sha = tree.stdout.decode().strip()
    return CodeIdentity("git-tree", sha, f"the working tree (git tree {sha[:12]})", Path(root))


def commit_tree(root: Path, commit: str, exclude: Sequence[Path] = ()) -> CodeIdentity:
    """The tree of ``commit`` without the gate's own folders (what a baseline was produced from)."""
    top = git.repo_root(root)
    resolved = git.rev_parse(root, commit) if top is not None else None
    if top is None or resolved is None:
        return CodeIdentity("unknown", None, f"commit {commit[:12]} is not in the repository", None)
    with tempfile.TemporaryDirectory(prefix="retrieval-gate-index-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index"), **_scratch_objects(top, Path(tmp))}
        if _git(top, "read-tree", resolved, env=env).returncode != 0:
            return CodeIdentity("unknown", None, f"cannot read the tree of {commit[:12]}", None)
        if not _drop(top, exclude, env):
            return CodeIdentity("unknown", None, f"cannot leave the gate's folders out of the tree of {commit[:12]}",
                                None)
        tree = _git(top, "write-tree", env=env)
    if tree.returncode != 0:
        return CodeIdentity("unknown", None, f"cannot write the tree of {commit[:12]}", None)
    sha = tree.stdout.decode().strip()
    return CodeIdentity("commit", sha, f"commit {resolved[:12]} (git tree {sha[:12]})", None, resolved)


@contextmanager
def checkout(code: CodeIdentity, repo: Path, scratch: Path) -> Iterator[CodeIdentity]:
    """``code`` with ``root`` set to a fresh export of its commit (``git archive``: the repository,
    its index and worktree list stay as they are - another user may own them).

    ``repo`` is the folder the workspace's own runs run in (the config's folder); the commit's
    run runs in the same folder of the export, so a command such as ``python3 search/run.py``
    and the config's relative paths mean the same files on both sides."""
    if code is None or code.root is not None or code.commit is None:
        yield code
        return
    top = git.repo_root(repo)
    assert top is not None  # a code identity with a commit is made in a repository (commit_tree)
    inside = git.repository_path(top, Path(repo))
    if inside is None:
        raise CheckoutFailed(f"{repo} is not below the repository's top {top}")
    scratch.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=f"checkout-{code.commit[:12]}-", dir=scratch))
    folder.chmod(0o755)  # the baseline's command runs here as the box's uid: it reads, never writes
    try:
        # Through a file, never memory: a monorepo's commit may hold gigabytes.
        with tempfile.TemporaryFile(dir=scratch) as tar_file:
            try:
                archive = git.run(top, "archive", "--format=tar", code.commit, timeout=600, stdout=tar_file,
                                  stderr=subprocess.PIPE)
            except subprocess.TimeoutExpired:
                raise CheckoutFailed(f"git archive {code.commit[:12]} took more than 600 s") from None
            if archive.returncode != 0:
                raise CheckoutFailed(f"git archive {code.commit[:12]} failed: "
                                     f"{' '.join(archive.stderr.decode(errors='replace').split())[:200]}")
            tar_file.seek(0)
            with tarfile.open(fileobj=tar_file) as tar:
                _extract(tar, folder)
        open_for_reading(folder)
        yield CodeIdentity(code.kind, code.sha, code.description, _same_folder(folder, inside, code.commit),
                           code.commit)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class CheckoutFailed(Exception):
    pass


def _same_folder(export: Path, inside: Path, commit: str) -> Path:
    """``inside`` (the workspace's runs' folder, relative to the repository's top) in ``export``:
    where the commit's run runs. It must be a folder of the commit itself: a baseline archived
    before the gate moved into this folder has no code here to run (running it elsewhere would
    guess which folder its relative paths meant)."""
    if inside.as_posix() in ("", "."):
        return export
    target = export / inside
    shown = inside.as_posix()
    try:
        within = target.resolve(strict=True).relative_to(export.resolve())
    except (OSError, ValueError):
        within = None
    if within is None or not target.is_dir():
        raise CheckoutFailed(f"the folder {shown}/ the runner command runs in is not a folder of commit "
                             f"{commit[:12]}: its code has nowhere to run as the candidate's does (archive the "
                             "baseline again from a commit that has the folder)")
    return export / within


def open_for_reading(tree: Path) -> None:
    """Every folder below ``tree`` enterable and listable by all, every file readable by all: the
    runner command reads them as the box's uid, and the gate's umask (077 is a user's to choose)
    made what tar or the gate wrote there the gate's alone. Writable stays as it was."""
    for parent, folders, files in os.walk(tree):
        for name, bits in [(name, 0o555) for name in folders] + [(name, 0o444) for name in files]:
            path = Path(parent) / name
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | bits)


def _extract(tar: tarfile.TarFile, folder: Path) -> None:
    """The archive into ``folder``; a member leading out of it (a symlink to ``/`` in the commit)
    fails the checkout, not the gate."""
    try:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(folder, filter="data")
            return
        for member in tar.getmembers():  # pragma: no cover - Pythons without extraction filters
            target = (folder / member.name).resolve()
            if not str(target).startswith(str(folder.resolve())) or member.islnk() or member.isdev():
                raise CheckoutFailed(f"refusing to extract {member.name!r}")
        tar.extractall(folder)
    except tarfile.TarError as error:
        raise CheckoutFailed(f"the commit's tree cannot be exported: {error}") from None


def declared_inputs(root: Path, globs: Sequence[str], source: str = "runner.inputs",
                    exclude: Sequence[Path] = ()) -> CodeIdentity:
    """sha256 over (path, content sha256) of every file the globs match (relative to ``root``,
    the config's folder; see :mod:`gate.inputs.globs`), the ``exclude`` folders (the gate's own)
    left out. In a git repository the files are those a commit of the working tree would hold
    (tracked, or untracked and not ignored): exactly what a PR's diff can name, so a file is in the
    key when, and only when, its change is watched; outside git, every file below ``root``."""
    _refuse_linked_folders(root, globs, source)
    files = matched_inputs(root, globs, source, exclude)
    if not files:
        raise InputError(source, None, f"no file matches {', '.join(globs)} below {root}: the code a run depends "
                         "on would not be seen" + _folder_hint(root, globs))
    digest = hashlib.sha256()
    for name in sorted(files):
        try:
            content = _content_sha256(files[name])
        except OSError as error:
            raise InputError(source, None, f"cannot read {shown(name)} ({error.strerror or error}): the code a run "
                             "depends on must be readable to be keyed") from None
        digest.update(f"{name}\t{content}\n".encode("utf-8", "surrogateescape"))
    sha = digest.hexdigest()
    return CodeIdentity("inputs", sha, f"{len(files)} files of runner.inputs (sha256 {sha[:12]})", Path(root))


def _content_sha256(path: Path) -> str:
    """What a file adds to the key: its content, through a symlink as the runs read it; for a link
    to no file, its target (what git records); for a submodule, the commit checked out in it."""
    if path.is_file():
        return file_sha256(path)
    if path.is_symlink():
        return "symlink:" + os.readlink(path)
    return "commit:" + (git.head_commit(path) or "unknown")


def _refuse_linked_folders(root: Path, globs: Sequence[str], source: str) -> None:
    """A glob whose folders (before its first wildcard) cross a symlink to a folder names the link,
    which git records as one path, never the files behind it: a change to them would be neither
    keyed nor watched, and a changed retriever would pass on a cached run. Refused, naming the
    target to write instead."""
    for pattern in globs:
        here = Path(root)
        for segment in [s for s in pattern.split("/") if s not in ("", ".")][:-1]:
            if any(c in segment for c in "*?["):
                break
            here = here / segment
            if here.is_symlink() and here.is_dir():
                target = os.path.relpath(os.path.realpath(here), os.path.realpath(root))
                raise InputError(source, None, f"{pattern}: {here.relative_to(root).as_posix()} is a symlink to the "
                                 f"folder {target}: git records the link, not the files behind it, so a change to them "
                                 f"would be neither keyed nor watched; name the files where they are ({target}/**)")


def _folder_hint(root: Path, globs: Sequence[str]) -> str:
    """Why a glob that names a folder matched no file: a glob names files."""
    folders = [g for g in globs if not any(c in g for c in "*?[") and (Path(root) / g).is_dir()]
    return f" ({folders[0]} is a folder: {folders[0].rstrip('/')}/** names the files in it)" if folders else ""
