"""Which suites a ``--config`` names: one gate config, a suites file, or a glob of configs.

A repository with several search surfaces keeps one gate config per surface (each with its own
runner, golden set, suite name and watch rules, paths relative to itself) and names them all in
a *suites file*: a gate config whose only top-level key is ``suites:``, a list of paths or globs
(relative to that file, ``**`` allowed) matched against the repository's files::

    suites:
      - search/docs/.retrieval-gate.yml
      - "services/*/.retrieval-gate.yml"

``--config 'search/*/.retrieval-gate.yml'`` (a glob) finds several configs the same way. Each
suite is a :class:`Suite`; one ordinary config is one suite, so every caller treats one and
many alike. Suite names are the comment's sections, the statuses' contexts, the output folders
and the artifacts' names: they must differ, and with several suites be plain folder names.

On a pull request the set of suites is read as of the base commit, as the yardstick is
(:func:`suites_at_base`): a PR cannot drop a suite by editing the suites file. A suite whose
config the PR deletes is ``removed``; a suite the PR adds is ``new`` (judged like a PR that adds
the gate: its yardstick is its own).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from gate.common.errors import InputError
from gate.inputs import git
from gate.inputs.config import load_config, yaml_key_line, yaml_node_line
from gate.inputs.globs import Glob, GlobError, compile_glob, shown, walk
from gate.inputs.readers.textlines import read_text_file
from gate.inputs.readers.yaml_source import load_yaml

#: The one key of a suites file.
SUITES_KEY = "suites"
#: What a suite's name must be when there are several: a folder name (``<out>/<suite>/``), an
#: artifact's name (``retrieval-gate-report-<suite>``) and a status context, as it is.
_FOLDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}\Z")
_WILDCARDS = frozenset("*?[")

NEW = "new"  # a suite the base commit's set does not have: the PR adds it
REMOVED = "removed"  # a suite of the base's set whose config the PR deletes


@dataclass(frozen=True)
class Suite:
    """One suite: its name (the config's ``suite:``), its gate config in the workspace, and that
    path as the user reads it (relative to where ``--config`` is, posix)."""

    name: str
    config_path: Path
    config_shown: str
    state: str = ""  # "" (listed at the base, or no base), NEW or REMOVED


@dataclass(frozen=True)
class SuiteSet:
    """What a ``--config`` names: its suites (sorted by name) and, when it names several (a suites
    file or a glob), that file's path or the glob as given - the combined comment's identity."""

    suites: tuple[Suite, ...]
    source: str | None = None  # None: one ordinary gate config, judged exactly as a single suite

    @property
    def several(self) -> bool:
        return self.source is not None


def is_glob(config_arg: str) -> bool:
    return any(c in _WILDCARDS for c in config_arg)


def is_suites_document(document: Any) -> bool:
    """A parsed YAML document that is a suites file (a mapping with ``suites:``)."""
    return isinstance(document, (dict, CommentedMap)) and SUITES_KEY in document


def find_suites(config_arg: str, root: Path | None = None) -> tuple[Suite, ...]:
    """The suites ``config_arg`` names, relative to ``root`` (default: the current folder)."""
    return discover(config_arg, root).suites


def discover(config_arg: str, root: Path | None = None) -> SuiteSet:
    """The suites ``config_arg`` (a gate config, a suites file or a glob, relative to ``root``)
    names in the working tree."""
    folder = Path.cwd() if root is None else Path(root)
    return _discover(config_arg, _Tree.workspace(folder))


def suites_at_base(config_arg: str, root: Path, base: str | None) -> SuiteSet:
    """The suites a pull request against ``base`` is judged by: the base commit's set (its suites
    file, its globs over its files, its configs' names), each suite REMOVED when the working tree
    no longer has its config; then the working tree's suites whose names the base has not, as
    NEW. Without a base, or when the base does not have ``config_arg`` (the PR adds it) or cannot
    be read, the working tree's set (the single-suite path then says so, as today)."""
    head = discover(config_arg, root)
    top = git.repo_root(Path(root))
    if base is None or top is None or git.rev_parse(top, base) is None:
        return head
    tree = _Tree.at_commit(Path(root), top, base)
    if tree.read(tree.path_of(config_arg)) is None and not is_glob(config_arg):
        return head
    try:
        at_base = _discover(config_arg, tree)
    except InputError as problem:
        if is_glob(config_arg) and "matches no file" in problem.message:
            return head  # no config at the base matches: the PR adds them all
        raise
    ordered = _base_and_new(at_base, head)
    several = at_base.several or head.several
    if several:
        _check_folder_names(ordered, lambda suite: suite.config_shown)
    return SuiteSet(ordered, (at_base.source or head.source) if several else None)


def _base_and_new(at_base: SuiteSet, head: SuiteSet) -> tuple[Suite, ...]:
    """The base's suites (REMOVED where the working tree lost the config), then the working
    tree's suites the base has not (NEW), sorted by name."""
    suites: dict[str, Suite] = {}
    for suite in at_base.suites:
        gone = not suite.config_path.exists() and not suite.config_path.is_symlink()
        suites[suite.name] = Suite(suite.name, suite.config_path, suite.config_shown, REMOVED if gone else "")
    kept = {suite.config_path for suite in suites.values() if suite.state != REMOVED}
    for suite in head.suites:
        # A config of the base's set is that suite, whatever name the PR gives it: judged once,
        # under the base's name (a rename made it a NEW suite too, and one config judged twice).
        if suite.name not in suites and suite.config_path not in kept:
            suites[suite.name] = Suite(suite.name, suite.config_path, suite.config_shown, NEW)
    return tuple(sorted(suites.values(), key=lambda s: s.name))


# --------------------------------------------------------------------------- the tree read


@dataclass(frozen=True)
class _Tree:
    """The files suites are discovered in: the working tree, or a commit's tree (the base)."""

    root: Path  # the folder --config is relative to
    top: Path  # the repository's top (``root`` outside a repository)
    files: Callable[[], list[str]]  # every file, as a path from ``top``
    read: Callable[[str], str | None]  # a file's text by its path from ``top``; None: not there
    commit: str | None = None

    @staticmethod
    def workspace(root: Path) -> _Tree:
        top = git.repo_root(root) or root

        def files() -> list[str]:
            listed = git.tree_files(top)
            return list(walk(top)) if listed is None else [shown(name) for name in listed]

        def read(path: str) -> str | None:
            place = top / path
            if not place.exists():
                return None
            return read_text_file(place, "a gate config")

        return _Tree(root, top, files, read)

    @staticmethod
    def at_commit(root: Path, top: Path, commit: str) -> _Tree:
        def files() -> list[str]:
            try:
                proc = git.run(top, "ls-tree", "-r", "-z", "--full-tree", "--name-only", commit)
            except (OSError, subprocess.TimeoutExpired):
                return []
            return [] if proc.returncode else [n for n in proc.stdout.decode("utf-8", "backslashreplace")
                                               .split("\0") if n]

        def read(path: str) -> str | None:
            data = git.show_file(top, commit, top / path)
            if data is None:
                return None
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError:
                raise InputError(path, None, f"not UTF-8 text (as of the base commit {commit[:12]})") from None

        return _Tree(root, top, files, read, commit)

    def folder(self, path: Path) -> str:
        """``path`` (a folder) as a repository path ("" at the top)."""
        inside = git.repository_path(self.top, path)
        return "" if inside is None or inside.as_posix() == "." else inside.as_posix()

    def path_of(self, config_arg: str) -> str:
        """``config_arg`` (relative to ``root``) as a repository path."""
        place = Path(config_arg) if Path(config_arg).is_absolute() else self.root / config_arg
        inside = git.repository_path(self.top, place)
        return config_arg if inside is None else inside.as_posix()

    def shown(self, repository_path: str) -> str:
        """A repository path as the user reads it: relative to ``root`` where it lies below it."""
        below = self.folder(self.root)
        if not below:
            return repository_path
        prefix = below + "/"
        return repository_path[len(prefix):] if repository_path.startswith(prefix) else repository_path

    def display(self, repository_path: str) -> str:
        """A file's name in a message (and, at a commit, which commit)."""
        name = self.shown(repository_path)
        return name if self.commit is None else f"{name} (as of the base commit {self.commit[:12]})"


# --------------------------------------------------------------------------- discovery


def _discover(config_arg: str, tree: _Tree) -> SuiteSet:
    if not config_arg.strip():
        raise InputError(None, None, "--config: an empty path: name a gate config, a suites file or a glob")
    if is_glob(config_arg):
        return _from_glob(config_arg, tree)
    path = tree.path_of(config_arg)
    text = tree.read(path)
    if text is None:
        if tree.commit is None:
            # The usual one line (no such file: create it, or pass --config FILE), naming it as given.
            here = Path(config_arg).is_absolute() or tree.root.resolve() == Path.cwd().resolve()
            load_config(config_arg if here else tree.root / config_arg)
        raise InputError(tree.display(path), None, "no such file")
    document = load_yaml(text, tree.display(path))
    if not is_suites_document(document):
        return SuiteSet((_suite(tree, path, listed_in=None, line=None, text=text),))
    return _from_suites_file(path, document, tree)


def _from_glob(config_arg: str, tree: _Tree) -> SuiteSet:
    """The suites of ``--config GLOB``: every gate config of the repository it matches."""
    glob = _compiled(config_arg, tree.folder(tree.root), config_arg, None)
    found = [name for name in tree.files() if glob.matches(name)]
    if not found:
        raise InputError(None, None, f"--config {config_arg!r}: the glob matches no file of the repository "
                                     "(globs are matched against tracked and new files, relative to the "
                                     "current folder)")
    return SuiteSet(_distinct([_suite(tree, name, listed_in=None, line=None) for name in found], several=True),
                    config_arg)


def _from_suites_file(path: str, document: Any, tree: _Tree) -> SuiteSet:
    """The suites a suites file lists, each config once, in the file's order."""
    folder = path.rsplit("/", 1)[0] if "/" in path else ""
    names: list[str] = []
    suites: list[Suite] = []
    for pattern, line in _entries(document, tree.display(path)):
        for name in _matched(pattern, line, folder, path, tree):
            if name not in names:  # two entries naming one config: one suite
                names.append(name)
                suites.append(_suite(tree, name, listed_in=tree.display(path), line=line))
    return SuiteSet(_distinct(suites, several=True), path)


def _matched(pattern: str, line: int | None, folder: str, path: str, tree: _Tree) -> list[str]:
    """The repository paths one entry of the suites file at ``path`` names (never that file)."""
    glob = _compiled(pattern, folder, tree.display(path), line)
    literal = glob.literal
    matched = [literal] if literal is not None and tree.read(literal) is not None else (
        [] if literal is not None else [name for name in tree.files() if glob.matches(name)])
    if not matched:
        problem = "no such file" if literal is not None else "the glob matches no file of the repository"
        raise InputError(tree.display(path), line, f"suites: {pattern!r}: {problem}")
    if literal is not None and literal == path:
        raise InputError(tree.display(path), line, f"suites: {pattern!r} names this suites file itself")
    # A glob (**/.retrieval-gate.yml) that also meets the suites file skips it.
    return [name for name in matched if name != path]


def _entries(document: Any, display: str) -> list[tuple[str, int | None]]:
    """The entries of a suites file with their lines; any other key is refused at its line."""
    for key in document:
        if str(key) != SUITES_KEY:
            raise InputError(display, yaml_key_line(document, key),
                             f"key '{key}': a suites file holds only 'suites:' (each suite's settings are in its own "
                             "gate config)")
    value = document[SUITES_KEY]
    line = yaml_key_line(document, SUITES_KEY)
    if not isinstance(value, (list, CommentedSeq)) or not value:
        raise InputError(display, line, "key 'suites': expected a list of gate configs (paths or globs relative to "
                                        "this file), got " + ("an empty list" if isinstance(value, list) else
                                                              type(value).__name__ if value is not None else "nothing"))
    out: list[tuple[str, int | None]] = []
    for index, item in enumerate(value):
        item_line = _item_line(value, index) or line
        if not isinstance(item, str) or not item.strip():
            raise InputError(display, item_line, f"key 'suites': entry {index + 1} is not a path or glob")
        out.append((item, item_line))
    return out


def _item_line(sequence: Any, index: int) -> int | None:
    try:
        return int(sequence.lc.item(index)[0]) + 1
    except Exception:  # noqa: BLE001 - a plain list has no positions
        return yaml_node_line(sequence)


def _compiled(pattern: str, folder: str, display: str, line: int | None) -> Glob:
    try:
        return compile_glob(pattern, folder)
    except GlobError as problem:
        where = display if line is not None else None
        raise InputError(where, line, f"suites: {problem}" if line is not None else f"--config {problem}") from None


def _suite(tree: _Tree, name: str, *, listed_in: str | None, line: int | None, text: str | None = None) -> Suite:
    """The suite of the gate config at repository path ``name`` (read, strictly, for its name)."""
    content = tree.read(name) if text is None else text
    if content is None:
        raise InputError(listed_in, line, f"suites: {name}: no such file")
    display = tree.display(name)
    document = load_yaml(content, display)
    if is_suites_document(document):
        where = f"{listed_in}:{line}: " if listed_in is not None and line is not None else ""
        raise InputError(None, None, f"{where}{display} is itself a suites file: a suites file lists gate configs, "
                                     "not other suites files (list their configs here)")
    # Read as every gate config is (file:line: problem); at a commit, from its text.
    config = load_config(tree.top / name) if tree.commit is None else load_config(display, text_override=content)
    return Suite(config.suite, tree.top / name, tree.shown(name))


def _distinct(suites: Sequence[Suite], *, several: bool) -> tuple[Suite, ...]:
    """``suites`` sorted by name; two with one name are refused, naming both files."""
    by_name: dict[str, Suite] = {}
    for suite in suites:
        earlier = by_name.get(suite.name)
        if earlier is not None:
            raise InputError(suite.config_shown, None,
                             f"suite {suite.name!r} is also the suite of {earlier.config_shown}: two suites need two "
                             "names (set suite: in one of them)")
        by_name[suite.name] = suite
    ordered = tuple(sorted(by_name.values(), key=lambda s: s.name))
    if several:
        _check_folder_names(ordered, lambda suite: suite.config_shown)
    return ordered


def _check_folder_names(suites: Sequence[Suite], display: Callable[[Suite], str]) -> None:
    folded: dict[str, Suite] = {}
    for suite in suites:
        if not _FOLDER_NAME.match(suite.name):
            raise InputError(display(suite), None,
                             f"key 'suite': {suite.name!r}: with several suites a suite's name is its output folder "
                             "and artifact name: letters, digits, '.', '-' and '_' only (at most 100, not starting "
                             "with '.', '-' or '_')")
        twin = folded.setdefault(suite.name.casefold(), suite)
        if twin is not suite:  # <out>/Docs and <out>/docs are one folder on macOS and Windows
            raise InputError(display(suite), None,
                             f"key 'suite': {suite.name!r} and {twin.name!r} (of {display(twin)}) differ only in case: "
                             "with several suites each name is a folder and an artifact name, which a "
                             "case-insensitive file system or GitHub takes for one")


def repository_file(path: Path) -> str:
    """A suite config's path as a repository path (posix), for the combined comment's identity."""
    top = git.repo_root(path.parent)
    inside = git.repository_path(top, path) if top is not None else None
    return PurePosixPath(path.name if inside is None else inside.as_posix()).as_posix()
