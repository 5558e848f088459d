"""The files a verdict is measured against, held by their digests from before the pull request's
code runs until its last run is over.

The command runner runs the PR's code. Without a box of its own (a self-hosted runner without
root) that code runs as the gate's uid and can write whatever the gate can: the checkout's .git,
the copy of the base's yardstick the gate made, the manifest folder, the gate's own copy of the
base's corpus. So every file a check reads after a run is digested before the first run starts
(the gate reads the rest into memory then), and checked unchanged before the checks read it and
once the runs are done: a file that changed in between ends the run with exit 2, naming it. A
verdict on inputs that moved under it would be no verdict, and nothing but the PR's code runs
in between.

A digest is the sha256 of the file's bytes, streamed (a corpus may be gigabytes): memory stays
one block per file.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from gate.common.errors import InputError
from gate.inputs.readers.corpus import corpus_files

#: Bytes read at a time while digesting.
BLOCK = 1 << 20


def file_digest(path: str | os.PathLike) -> str | None:
    """The sha256 of the bytes of ``path`` (hex), streamed; None when there is no such file, and
    what is wrong for anything that is not a readable regular file (never equal to a digest)."""
    try:
        # O_NONBLOCK: a FIFO put in a file's place must not hang the gate (no effect on a file).
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None
    except OSError as error:
        return f"unreadable ({error.strerror or error})"
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return "not a regular file"
    with os.fdopen(fd, "rb") as handle:
        digest = hashlib.sha256()
        while block := handle.read(BLOCK):
            digest.update(block)
    return digest.hexdigest()


def _shown(digest: str | None) -> str:
    if digest is None:
        return "absent"
    return digest[:12] if len(digest) == 64 else digest


class InputChanged(InputError):
    """A file the verdict is measured against changed while the PR's code ran (exit 2)."""

    def __init__(self, name: str, change: str):
        super().__init__(name, None, f"changed while the pull request's code ran ({change}): no verdict is given on "
                                     "inputs that moved under it")


@dataclass(frozen=True)
class HeldFile:
    """A file a check reads after the runs: how a message names it, where it is, and its digest
    before any run (None: it was not there; a file that appears is a change too)."""

    name: str
    path: Path
    sha256: str | None

    def change(self) -> InputChanged | None:
        now = file_digest(self.path)
        if now == self.sha256:
            return None
        return InputChanged(self.name, f"sha256 {_shown(self.sha256)} before its runs, {_shown(now)} after")


@dataclass(frozen=True)
class HeldTree:
    """A folder-of-files corpus before any run: the files the corpus reader lists, by their path
    below it, and each one's sha256 as 32 bytes in one string (a folder of a million pages is
    held in tens of MB). A file added, removed or changed is named."""

    name: str
    path: Path
    files: tuple[str, ...]
    digests: bytes  # the sha256 of files[i] is digests[32 * i:32 * i + 32]

    def change(self) -> InputChanged | None:
        try:
            now = tree_files(self.path)
        except (InputError, OSError) as error:  # a symlink out of it or a loop, planted by the PR's code
            return InputChanged(self.name, f"its files can no longer be listed: {error}")
        if now != self.files:
            added, removed = sorted(set(now) - set(self.files)), sorted(set(self.files) - set(now))
            return InputChanged(self.name, "; ".join(
                part for part in (f"added {', '.join(added[:3])}" if added else "",
                                  f"removed {', '.join(removed[:3])}" if removed else "") if part))
        for i, rel in enumerate(self.files):
            before, now_digest = self.digests[32 * i:32 * i + 32], file_digest(self.path / rel)
            if _raw(now_digest) != before:
                return InputChanged(f"{self.name.rstrip('/')}/{rel}",
                                    f"sha256 {before.hex()[:12]} before its runs, {_shown(now_digest)} after")
        return None


def _raw(digest: str | None) -> bytes:
    """A digest as 32 bytes; what is not a file's digest (absent, unreadable) as bytes no file's
    digest is."""
    if digest is not None and len(digest) == 64:
        return bytes.fromhex(digest)
    return hashlib.sha256(f"not a file's digest: {digest}".encode()).digest()


def tree_files(folder: Path) -> tuple[str, ...]:
    """The files of a folder-of-files corpus as the corpus reader lists them, by relative path."""
    return tuple(item.relative_to(folder).as_posix() for item in corpus_files(folder))


@dataclass(frozen=True)
class Held:
    """What the verdict's inputs were before the first run: the files (and folders of files) a
    check reads after one."""

    files: tuple[HeldFile, ...] = ()
    trees: tuple[HeldTree, ...] = ()

    def __add__(self, other: Held) -> Held:
        seen = {item.path for item in self.files}
        return Held((*self.files, *(item for item in other.files if item.path not in seen)),
                    (*self.trees, *other.trees))

    def check(self) -> None:
        """Raise :class:`InputChanged` for the first held input that is no longer as it was held."""
        items: tuple[HeldFile | HeldTree, ...] = (*self.files, *self.trees)
        for item in items:
            change = item.change()
            if change is not None:
                raise change


def hold_files(named: Iterable[tuple[str, Path]]) -> Held:
    """``named`` files, each (how a message names it, its path), digested now."""
    return Held(tuple(HeldFile(name, Path(path), file_digest(path)) for name, path in named))


def hold_tree(name: str, folder: Path, digests: Mapping[str, str] | None = None) -> Held:
    """A folder-of-files corpus, listed now, each file digested now (``digests``: the sha256 of
    each file by its path below ``folder``, where they were taken as the files were written)."""
    files = tree_files(folder)
    known = digests or {}
    raw = b"".join(_raw(known[rel] if rel in known else file_digest(folder / rel)) for rel in files)
    return Held(trees=(HeldTree(name, folder, files, raw),))
