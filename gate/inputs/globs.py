"""The one meaning of a glob in the config (``runner.inputs``, ``watch``, ``prompts``).

A glob names files by their path inside the repository, written relative to the config's folder
(as every path in the config is). The cache key expands it over the working tree, the watch list
and the goalposts match a PR's changed files against it, the archive matches its uncommitted
files against it: all through :func:`compile_glob`, so a file is code under test for one exactly
when it is for the others. ``Path.glob`` is not used: on Python 3.11 ``search/**`` yields only
folders (3.13 yields files too), and ``Path.match`` matches from the right.

* ``*`` is any run of characters within one folder (dotfiles too), ``?`` one character,
  ``[ab]`` / ``[a-z]`` one of a set, ``[!ab]`` (or ``[^ab]``) one not in it; none of them
  matches ``/``. ``[*]``, ``[?]`` and ``[[]`` are the characters themselves.
* ``**`` as a whole segment is any number of folders, none included: ``**/x.py`` is ``x.py``
  at any depth, ``a/**/b`` is ``a/b`` too. At the end (``dir/**``, or ``dir/``) it is the folder
  and everything in it, at any depth: a submodule at ``dir``, which git lists as one path, too.
* ``.`` and empty segments are dropped; ``..`` steps back one folder (``../lib/**`` from a config
  in ``services/search`` is ``services/lib/**``). A glob that can never match a repository path
  (an absolute one, one whose ``..`` goes above the repository's top or back over a wildcard) is
  refused (:class:`GlobError`).
* Names are compared as Unicode NFC (a name typed on macOS is NFD on disk); a name that is not
  UTF-8 is compared as it is shown, its bytes escaped (``\\xe9``).
"""

from __future__ import annotations

import itertools
import os
import posixpath
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from gate.common.errors import InputError
from gate.inputs import git

_GROUPS = itertools.count()  # unique group names across one compiled glob
#: Characters with a meaning in a glob: :func:`escape` makes each one literal.
_SPECIAL = frozenset("*?[")


class GlobError(ValueError):
    """A glob that can never match a file of the repository (the message says why)."""


@dataclass(frozen=True)
class Glob:
    """A compiled glob: ``pattern`` as the config writes it, ``path`` the repository glob it
    names (the config's folder joined in front, escaped), and the one regular expression both
    the matcher and the expander use."""

    pattern: str
    path: str
    regex: re.Pattern[str]

    @property
    def literal(self) -> str | None:
        """The one repository path this glob names when it has no wildcard (else None)."""
        return None if any(c in _SPECIAL for c in self.path) else self.path

    def matches(self, path: str) -> bool:
        """Whether the repository path ``path`` (posix, as git lists it) is one this glob names."""
        return self.regex.match(_nfc(path)) is not None


def compile_glob(pattern: str, folder: str = "") -> Glob:
    """``pattern`` (relative to ``folder``, the config's folder as a repository path; "" at the
    top) as a :class:`Glob` of repository paths. Raises :class:`GlobError` when it can never match."""
    return _compiled(pattern, folder.strip("/"))


@lru_cache(maxsize=4096)
def _compiled(pattern: str, folder: str) -> Glob:
    if not pattern or not pattern.strip():
        raise GlobError(f"{pattern!r}: an empty glob names no file")
    if pattern.startswith("/"):
        raise GlobError(f"{pattern!r}: an absolute path can never match: a glob names files of the repository, "
                        "relative to the config's folder")
    if "\0" in pattern:
        raise GlobError(f"{pattern!r}: a NUL character is in no file name")
    segments = [s for s in _nfc(pattern).split("/") if s not in ("", ".")]
    if pattern.endswith("/") and (not segments or segments[-1] != "**"):
        segments.append("**")  # a folder: everything in it
    if not segments:
        segments = ["**"]
    joined = _resolved(pattern, [escape(s) for s in _nfc(folder).split("/") if s] + segments)
    try:
        regex = re.compile(_regex(joined), re.DOTALL)
    except re.error as problem:
        raise GlobError(f"{pattern!r}: not a glob ({problem.msg})") from None
    return Glob(pattern, "/".join(joined), regex)


def _resolved(pattern: str, segments: list[str]) -> list[str]:
    """The folder's segments and the glob's, ``..`` stepped back and ``**/**`` made ``**``."""
    joined: list[str] = []
    literal = 0  # how many of ``joined``'s last segments are plain names a ".." may step back over
    for segment in segments:
        if segment == "..":
            # A monorepo's config may name shared code beside its folder (``../lib/**``): the
            # repository path is what is matched, so ".." is resolved here, within the repository.
            if not literal:
                where = "above the repository's top" if not joined else f"back over the wildcard in {joined[-1]!r}"
                raise GlobError(f"{pattern!r}: '..' goes {where}: it can never match a file of the repository")
            joined.pop()
            literal -= 1
        elif segment == "**" and joined and joined[-1] == "**":
            continue  # "**/**" is "**"
        else:
            joined.append(segment)
            literal = literal + 1 if _plain(segment) else 0
    if not joined:
        raise GlobError(f"{pattern!r}: names the repository's top itself, not files in it: write **")
    return joined


def _plain(segment: str) -> bool:
    """A segment that names one folder (no wildcard; ``[*]``, ``[?]``, ``[[]`` are characters)."""
    return segment != "**" and not any(c in _SPECIAL for c in segment.replace("[*]", "").replace(
        "[?]", "").replace("[[]", ""))


def _regex(segments: list[str]) -> str:
    out: list[str] = []
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        if segment == "**":
            if last:  # the folder itself (a submodule, a folder replaced by a file) and all below it
                out[-1:] = [out[-1][:-1] + "(?:/.*)?"] if out else [".+"]
            else:
                out.append("(?:[^/]+/)*")
            continue
        out.append(_segment(segment) + ("" if last else "/"))
    return "".join(out) + r"\Z"


def _segment(segment: str) -> str:
    """One path segment: ``*``, ``?`` and ``[...]`` within it, every other character literal.

    Each ``*`` but the last matches up to the first place the fixed-length piece after it fits,
    and never gives that back (an atomic group, written as fnmatch writes it so Python 3.10 reads
    it too): the leftmost fit is always right for such a piece, and ``[^/]*`` before each one let
    the regex engine try every split: ``*_*_*_*_*_x.py`` took seconds on a 200-character name
    a pull request may choose."""
    pieces: list[list[str]] = [[]]  # the fixed-length pieces between the stars
    i = 0
    while i < len(segment):
        c = segment[i]
        if c == "*":
            while i + 1 < len(segment) and segment[i + 1] == "*":
                i += 1  # "a**b" is "a*b": any run within the segment
            pieces.append([])
        elif c == "?":
            pieces[-1].append("[^/]")
        elif c == "[":
            start = i + 1
            negate = start < len(segment) and segment[start] in "!^"
            if negate:
                start += 1
            end = segment.find("]", start + 1)  # a "]" first in the set is one of its characters
            if end == -1:
                pieces[-1].append(re.escape(c))  # no closing bracket: a literal "["
            else:
                body = "".join(ch if ch == "-" else re.escape(ch) for ch in segment[start:end])
                pieces[-1].append(f"(?!/)[{'^' if negate else ''}{body}]")
                i = end
        else:
            pieces[-1].append(re.escape(c))
        i += 1
    texts = ["".join(piece) for piece in pieces]
    if len(texts) == 1:
        return texts[0]
    head, *middle, tail = texts
    out = [head]
    for piece in middle:
        name = f"g{next(_GROUPS)}"
        out.append(f"(?=(?P<{name}>[^/]*?{piece}))(?P={name})")  # atomic: (?>[^/]*?piece)
    return "".join(out) + "[^/]*" + tail


def escape(path: str) -> str:
    """A path as a glob that names exactly it (``a[1]*.yml`` -> ``a[[]1][*].yml``)."""
    return "".join(f"[{c}]" if c in _SPECIAL else c for c in path)


def matches(path: str, globs: Iterable[str | Glob]) -> bool:
    """Whether the repository path ``path`` is named by one of ``globs`` (repository globs)."""
    return any((g if isinstance(g, Glob) else compile_glob(g)).matches(path) for g in globs)


def shown(name: str) -> str:
    """A file name as git's and the filesystem's bytes both read it (surrogate-escaped bytes that
    are not UTF-8 written ``\\xe9``): what is matched, and what a message may quote."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def walk(folder: Path) -> Iterator[str]:
    """Every file below ``folder`` as a posix path relative to it, for a folder outside git:
    ``.git`` left out, every symlink listed and none entered (as git records a link, not what it
    points at; a link to ``/`` or a loop would not end)."""
    stack = [""]
    while stack:
        prefix = stack.pop()
        try:
            with os.scandir(folder / prefix if prefix else folder) as entries:
                found = sorted(entries, key=lambda e: e.name, reverse=True)
        except OSError:
            continue
        for entry in found:
            if entry.name == ".git":
                continue
            name = f"{prefix}/{entry.name}" if prefix else entry.name
            try:
                if entry.is_symlink():
                    yield name  # a link, to a file, a folder or nothing: git records the link
                elif entry.is_dir(follow_symlinks=False):
                    stack.append(name)
                elif entry.is_file(follow_symlinks=False):
                    yield name
            except OSError:
                continue


def matched_inputs(root: Path, globs: Sequence[str], source: str = "runner.inputs",
                   exclude: Sequence[Path] = ()) -> dict[str, Path]:
    """The files the globs name, by their path relative to ``root`` (as the key records them)."""
    top = git.repo_root(root)
    inside = git.repository_path(top, Path(root)) if top is not None else None
    folder = "" if inside is None or inside.as_posix() == "." else inside.as_posix()
    try:
        compiled = [compile_glob(pattern, folder) for pattern in globs]
    except GlobError as problem:
        raise InputError(source, None, str(problem)) from None
    listed = git.tree_files(top) if top is not None else None
    if top is None or listed is None:
        top, folder, listed = Path(root), "", list(walk(Path(root)))
    left_out = [found.as_posix() for path in exclude
                if (found := git.repository_path(top, path)) is not None and found.as_posix() != "."]
    files = {}
    for name in listed:
        if any(name == out or name.startswith(out + "/") for out in left_out):
            continue
        if any(glob.matches(shown(name)) for glob in compiled):
            files[posixpath.relpath(name, folder or ".")] = top / name
    return files


def _nfc(text: str) -> str:
    return text if text.isascii() else unicodedata.normalize("NFC", text)
