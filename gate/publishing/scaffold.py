"""``retrieval-gate init``: the gate's files written into a repository, from what is found there.

It writes the gate config (``.retrieval-gate.yml``), the three workflows (the check, the fork-safe
comment job, the archive job on the default branch) and the ``.gitignore`` lines for the gate's
scratch folders, and returns the next steps. It asks nothing: what it cannot find it leaves for
the options (``--queries``, ``--qrels``, ``--corpus``, ``--retrieval-config``, ``--command``), and
it refuses in one line when a required file is neither found nor given.

What it finds, it reads with the gate's own readers before writing a word of it: a golden query
file that does not parse is no candidate, and qrels that judge only relevant documents (most
BEIR sets, Cranfield, CISI) get ``judged.qrels_style: relevance-only`` so the judged-share check
does not fail every PR on "71% unjudged".

The suite is named once, in the config: the comment workflow reads it from the default branch's
copy of the config (``retrieval-gate comment --config``), never from a second place to keep in step.
The workflows are the ones in ``examples/workflows`` (shipped in the package as
``gate/publishing/workflows``), with the config path, the baseline folder, the default branch and
the Action's reference filled in.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import subprocess
import unicodedata
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path, PurePosixPath

from gate.checks.judged_share import judges_only_relevant
from gate.common.atomic import write_text_atomic
from gate.common.errors import InputError
from gate.inputs.readers.corpus import iter_corpus
from gate.inputs.readers.qrels import load_qrels
from gate.inputs.readers.queries import load_queries
from gate.inputs.readers.records import Qrels
from gate.inputs.retrieval_config import load_retrieval_config
from gate.runs.command import CommandRunner

__all__ = ["InitOptions", "Found", "InitResult", "discover", "init_repository", "WORKFLOWS", "ACTION_PLACEHOLDER"]

CONFIG_NAME = ".retrieval-gate.yml"
WORKFLOWS = ("retrieval-gate.yml", "retrieval-gate-comment.yml", "retrieval-gate-archive.yml")
ACTION_PLACEHOLDER = "your-org/retrieval-gate@v1"
GITIGNORE_LINES = (".retrieval-gate/cache/", ".retrieval-gate/work/", ".retrieval-gate/out/")
SUITE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
ACTION_REF = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+(/[A-Za-z0-9_./-]+)?@[A-Za-z0-9_./-]+")
BRANCH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,99}")

# Folders never searched: tools' environments, caches, build output, the gate's own scratch.
_SKIP_DIRS = {".git", ".venv", "venv", "env", "node_modules", "__pycache__", ".tox", ".nox", ".mypy_cache",
              ".pytest_cache", ".retrieval-gate", "site-packages", "dist", "build", ".idea", ".vscode", "site"}
_MAX_DEPTH = 4
_MAX_FILES = 100_000  # the shallowest 100,000 files of a monorepo are plenty to find a golden set

_QUERY_FILE = re.compile(r"(golden|queries|topics|questions)[\w.-]*\.(jsonl|tsv|txt)(\.gz)?$", re.I)
_QRELS_FILE = re.compile(r"(qrels|judg(e)?ments|relevance)[\w.-]*\.(txt|tsv|trec)(\.gz)?$", re.I)
_CORPUS_FILE = re.compile(r"(corpus|documents|docs|chunks|passages)[\w.-]*\.(jsonl|tsv)(\.gz)?$", re.I)
_RETRIEVAL_FILE = re.compile(r"(retrieval|search|rag|retriever|index)[\w.-]*\.(ya?ml|json)$", re.I)


@dataclass(frozen=True)
class InitOptions:
    root: Path  # the repository (its top level, or the folder the config goes in)
    suite: str | None = None
    queries: str | None = None
    qrels: str | None = None
    corpus: str | None = None
    retrieval_config: str | None = None
    command: str | None = None
    action: str = ACTION_PLACEHOLDER
    branch: str | None = None
    force: bool = False


@dataclass(frozen=True)
class Found:
    """What :func:`discover` found (paths relative to the root, POSIX) and why each was taken."""
    queries: str | None = None
    qrels: str | None = None
    corpus: str | None = None
    retrieval_config: str | None = None
    relevance_only: bool = False  # the qrels judge no document non-relevant
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class InitResult:
    config_path: Path
    written: tuple[str, ...]  # repository-relative paths written or changed
    kept: tuple[str, ...]  # files that existed and were left alone
    found: Found
    suite: str
    next_steps: tuple[str, ...]
    warnings: tuple[str, ...] = field(default_factory=tuple)


def _walk(root: Path) -> list[PurePosixPath]:
    """Files below ``root``, shallow folders first (breadth-first), at most :data:`_MAX_FILES`: a
    deep, crowded folder cannot hide ``eval/golden.jsonl``. Symlinked folders are not followed."""
    out: list[PurePosixPath] = []
    queue = deque([PurePosixPath()])
    while queue:
        rel = queue.popleft()
        try:
            entries = sorted(os.scandir(root / rel), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in _SKIP_DIRS and not entry.name.startswith(".") and len(rel.parts) + 1 < _MAX_DEPTH:
                    queue.append(rel / entry.name)
            elif entry.is_file():
                out.append(rel / entry.name)
                if len(out) >= _MAX_FILES:
                    return out
    return out


def _rank(paths: Iterable[PurePosixPath], pattern: re.Pattern[str], prefer: tuple[str, ...]) -> list[PurePosixPath]:
    """Paths whose name matches, those in a preferred folder (eval/, golden/, ...) first, then shallower."""
    hits = [p for p in paths if pattern.search(p.name)]

    def key(p: PurePosixPath) -> tuple[int, int, str]:
        preferred = any(part.lower() in prefer or any(w in p.name.lower() for w in prefer) for part in p.parts[:-1]) \
            or any(w in p.name.lower() for w in prefer)
        return (0 if preferred else 1, len(p.parts), str(p))

    return sorted(hits, key=key)


def _beir_folders(root: Path, paths: Iterable[PurePosixPath]) -> list[PurePosixPath]:
    folders = sorted({p.parent for p in paths if p.name in ("queries.jsonl", "queries.jsonl.gz")},
                     key=lambda p: (len(p.parts), str(p)))
    return [f for f in folders if (root / f / "qrels").is_dir()]


def _reads(reader: Callable[[str], object], path: Path) -> bool:
    try:
        reader(str(path))
    except (InputError, OSError, ValueError):
        return False
    return True


def _relevance_only(qrels: Qrels) -> bool:
    return bool(judges_only_relevant(qrels))


def _inside(path: Path, top: Path) -> bool:
    """Whether ``path`` (symlinks resolved) lies in the repository: a file outside it is not in the
    PR's diff (``plan`` refuses such a link)."""
    try:
        path.resolve().relative_to(top)
    except (ValueError, OSError):
        return False
    return True


def _judged_share(ids: list[str], qrels: Path) -> float:
    """The share of the golden query ``ids`` the qrels judge (0 when they do not read)."""
    try:
        judged = set(load_qrels(str(qrels)).judgments)
    except (InputError, OSError, ValueError):
        return 0.0
    return sum(1 for q in ids if q in judged) / len(ids) if ids else 0.0


def _reads_corpus(path: Path) -> bool:
    """Whether the first chunks of ``path`` read as a corpus (the whole file is read by the gate later)."""
    try:
        return len(list(islice(iter_corpus(str(path), check_duplicates=False), 100))) > 0
    except (InputError, OSError, ValueError):
        return False


def _reads_retrieval_config(path: Path) -> bool:
    return path.is_file() and _reads(load_retrieval_config, path)


def discover(root: Path, top: Path | None = None) -> Found:
    """Golden queries, qrels, corpus and retrieval config found under ``root`` (each read to be sure;
    nothing outside the repository ``top``): the qrels that judge most of the golden queries, a corpus
    that reads, a retrieval config that reads."""
    top = top or root
    paths = [p for p in _walk(root) if _inside(root / p, top)]
    notes: list[str] = []
    queries = qrels = corpus = _find_beir_folder(root, paths, notes)
    prefer = ("eval", "evaluation", "golden", "gold", "benchmark", "relevance")
    if queries is None:
        queries = _find_queries(root, paths, prefer)
    if qrels is None:
        qrels = _find_qrels(root, paths, prefer, queries)
    if corpus is None:
        corpus = _find_corpus(root, paths, (queries, qrels))
    retrieval = _find_retrieval_config(root, paths)
    return Found(queries, qrels, corpus, retrieval, False, tuple(notes))


def _find_beir_folder(root: Path, paths: list[PurePosixPath], notes: list[str]) -> str | None:
    """The shallowest BEIR folder, when its queries and qrels read (it is then all three inputs)."""
    beir = _beir_folders(root, paths)
    if beir:
        folder = beir[0]
        if _reads(load_queries, root / folder) and _reads(load_qrels, root / folder):
            notes.append(f"a BEIR folder: {folder.as_posix()} (queries, qrels/test.tsv, corpus)")
            return folder.as_posix()
    return None


def _find_queries(root: Path, paths: list[PurePosixPath], prefer: tuple[str, ...]) -> str | None:
    """The best-ranked golden query file that reads (a qrels file's name is never one)."""
    for candidate in _rank(paths, _QUERY_FILE, prefer):
        if _QRELS_FILE.search(candidate.name):
            continue
        if _reads(load_queries, root / candidate):
            return candidate.as_posix()
    return None


def _find_qrels(root: Path, paths: list[PurePosixPath], prefer: tuple[str, ...], queries: str | None) -> str | None:
    """The qrels that judge the largest share of the golden ``queries`` (without them: the first that
    reads), among the 50 best-ranked candidates."""
    qrels = None
    best = 0.0
    ids = load_queries(str(root / queries)).ids() if queries else []  # read once, not per candidate
    for candidate in _rank(paths, _QRELS_FILE, prefer)[:50]:
        share = _judged_share(ids, root / candidate) if queries else float(_reads(load_qrels, root / candidate))
        if share > best:  # ties keep the better-ranked (preferred folder, shallower) file
            qrels, best = candidate.as_posix(), share
        if best == 1.0:
            break
    return qrels


def _find_corpus(root: Path, paths: list[PurePosixPath], taken: tuple[str | None, str | None]) -> str | None:
    """The best-ranked corpus that reads, among 50 candidates (neither of the ``taken`` files)."""
    for candidate in _rank(paths, _CORPUS_FILE, ("corpus", "data"))[:50]:
        if candidate.as_posix() not in taken and _reads_corpus(root / candidate):
            return candidate.as_posix()
    return None


def _find_retrieval_config(root: Path, paths: list[PurePosixPath]) -> str | None:
    """The best-ranked retrieval config that reads (never the gate's config nor a workflow)."""
    for candidate in _rank(paths, _RETRIEVAL_FILE, ("retrieval", "search", "rag", "retriever", "config", "configs")):
        if candidate.name == CONFIG_NAME or ".github" in candidate.parts:
            continue
        if _reads_retrieval_config(root / candidate):
            return candidate.as_posix()
    return None


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _default_branch(root: Path) -> tuple[str, str | None]:
    """The branch the archive job runs on, and a warning when it is a guess that may be wrong:
    origin's HEAD; else origin's (then the local) ``main`` or ``master``; else the current branch."""
    head = _git(root, "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD")
    if head and head.startswith("origin/") and BRANCH.fullmatch(head[len("origin/"):]):
        return head[len("origin/"):], None
    for ref in ("refs/remotes/origin/main", "refs/remotes/origin/master", "refs/heads/main", "refs/heads/master"):
        if _git(root, "rev-parse", "--verify", "--quiet", ref) is not None:
            return ref.rsplit("/", 1)[1], None
    current = _git(root, "symbolic-ref", "--quiet", "--short", "HEAD")
    if current and BRANCH.fullmatch(current):
        return current, (f"the default branch is a guess: '{current}', the current branch (no origin/HEAD, main or "
                         "master); the archive workflow runs on pushes to it: --branch NAME sets another")
    return "main", "the default branch is a guess: 'main' (a detached HEAD, no remote): --branch NAME sets another"


def _git_top(root: Path) -> Path | None:
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"], capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(done.stdout.strip()).resolve() if done.returncode == 0 and done.stdout.strip() else None


def _yaml_text(value: str | None) -> str:
    """``value`` as a YAML double-quoted scalar that reads back as exactly ``value`` (None: ``null``).

    JSON's escaping is YAML's, except for the characters YAML folds or refuses inside quotes
    (NEL, the line and paragraph separators, DEL, C1 controls, a byte-order mark): those are
    escaped as ``\\uXXXX`` too."""
    text = json.dumps(value, ensure_ascii=False)
    return "".join(f"\\u{ord(c):04x}" if (unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") and c not in "\n\t")
                   else c for c in text)


_PLAIN = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9._/-]*")
_YAML_WORDS = {"null", "true", "false", "yes", "no", "on", "off", "y", "n", "~"}


def _yaml_scalar(value: str) -> str:
    """``value`` as written when YAML reads it back as that same text, else :func:`_yaml_text`."""
    if _PLAIN.fullmatch(value) and value.lower() not in _YAML_WORDS and not re.fullmatch(r"[0-9._-]+", value):
        return value
    return _yaml_text(value)


_PATTERN_SPECIAL = re.compile(r"([\\*?\[])")


def _ignore_pattern(path: str) -> str:
    """A gitignore / sparse-checkout pattern matching exactly ``path`` (from the top): specials escaped,
    anchored with a leading ``/``, trailing blanks kept."""
    escaped = _PATTERN_SPECIAL.sub(r"\\\1", path)
    if escaped.endswith(" "):
        escaped = escaped[:-1] + "\\ "
    return "/" + escaped


def _check_path_text(path: str, what: str) -> None:
    """A path init writes into YAML, a pattern or a shell line: printable, UTF-8, one line."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(what, None, f"{path.encode('utf-8', 'backslashreplace').decode()!r}: the name is not "
                                     "UTF-8 text (git and the workflows need it to be)") from None
    if any(not c.isprintable() for c in path):
        raise InputError(what, None, f"{path!r}: a control character in a path (init writes it into workflow "
                                     "YAML and .gitignore; rename it)")


def render_config(suite: str, found: Found, command: str | None) -> str:
    """The config text: every value quoted, what is not known left as a commented placeholder."""
    lines = [
        "# The retrieval gate's config: docs/configuration.md lists every key.",
        "# Written by `retrieval-gate init`; edit freely.",
        f"suite: {_yaml_text(suite)}  # names the PR comment and the status; the comment workflow reads it here",
        "golden:",
        f"  queries: {_yaml_text(found.queries)}",
        f"  qrels: {_yaml_text(found.qrels)}",
    ]
    if found.corpus:
        lines.append(f"corpus: {_yaml_text(found.corpus)}  # scanned for leaked golden queries; passed as {{corpus}}")
    else:
        lines.append("# corpus: corpus.jsonl  # the chunks your stack indexes: enables the leakage check")
    lines += [
        "metric: nDCG@10",
        "also: [RR@10, R@100, Judged@10]",
        "retrieval:",
        f"  config: {_yaml_text(found.retrieval_config)}  # the file a PR changes",
        "runner:",
        "  type: command",
    ]
    if command:
        lines.append(f"  command: {_yaml_text(command)}")
    else:
        lines += ["  # Your search command: it reads the placeholders and writes a TREC run to {run}.",
                  '  command: "python search/run.py --config {config} --queries {queries} --corpus {corpus} '
                  '--output {run}"  # PLACEHOLDER: replace with your own']
    if found.relevance_only:
        lines += ["judged:",
                  "  # These qrels judge only relevant documents: an unjudged document is not evidence of a",
                  "  # pooling gap, so the judged-share limits are off (docs/validity.md).",
                  "  qrels_style: relevance-only"]
    lines += ["statistics:", "  seed: 7  # the bootstrap's seed, recorded in every report", ""]
    return "\n".join(lines)


def workflow_templates() -> Path:
    """The folder of the example workflows: in the installed package, or in the source tree."""
    packaged = Path(__file__).with_name("workflows")
    if packaged.is_dir():
        return packaged
    source = Path(__file__).resolve().parents[2] / "examples" / "workflows"
    if source.is_dir():
        return source
    raise FileNotFoundError("the example workflows are not installed (gate/publishing/workflows)")


def render_workflow(name: str, *, config_path: str, baseline_dir: str, branch: str, action: str) -> str:
    """One example workflow with this repository's config path, baseline folder, branch and Action.

    Each value goes into a YAML scalar the examples leave for it (``config-path:``,
    ``GATE_CONFIG:``, ``BASELINE_DIR:``, ``sparse-checkout:``, ``branches:``), quoted; the shell
    lines read them from the environment (``--config="$GATE_CONFIG"``), so no path is ever
    pasted into a script."""
    text = (workflow_templates() / name).read_text(encoding="utf-8")
    values = {
        rf"(config-path: ){re.escape(CONFIG_NAME)}": _yaml_scalar(config_path),
        rf"(GATE_CONFIG: ){re.escape(CONFIG_NAME)}": _yaml_scalar(config_path),
        r"(BASELINE_DIR: )\.retrieval-gate/baseline": _yaml_scalar(baseline_dir),
        r"(branches: \[)main(\])": _yaml_scalar(branch),
    }
    if config_path != CONFIG_NAME:  # at the top, the examples' pattern is the file's name already
        values[rf"(sparse-checkout: ){re.escape(CONFIG_NAME)}"] = _yaml_scalar(_ignore_pattern(config_path))
    for pattern, value in values.items():
        text = re.sub(pattern, functools.partial(_filled, value), text)
    if action != ACTION_PLACEHOLDER:
        owner_repo, _, ref = action.partition("@")
        owner_repo = "/".join(owner_repo.split("/")[:2])  # OWNER/REPO/sub/path@REF: the repository is OWNER/REPO
        text = text.replace("git+https://github.com/your-org/retrieval-gate@v1",
                            f"git+https://github.com/{owner_repo}@{ref}")
        text = text.replace(ACTION_PLACEHOLDER, action)
    return text


def _filled(value: str, match: re.Match[str]) -> str:
    """The text ``match`` found with ``value`` in place of the example's (between its groups)."""
    return match.group(1) + value + (match.group(2) if match.lastindex == 2 else "")


def _gitignore(top: Path, prefix: str) -> tuple[str, bool]:
    """``.gitignore`` with the gate's scratch folders: beside the config, and at the top (where a
    command run from the top, and the Action, write ``.retrieval-gate/out``)."""
    path = top / ".gitignore"
    existing = path.read_text(encoding="utf-8") if path.is_file() else ""
    have = {line.strip() for line in existing.splitlines()}
    wanted = []
    for folder in dict.fromkeys(("", prefix)):
        wanted += [_ignore_pattern(folder + line.rstrip("/")) + "/" for line in GITIGNORE_LINES]
    missing = [line for line in wanted if line not in have and line.lstrip("/") not in have]
    if not missing:
        return existing, False
    block = ("" if not existing or existing.endswith("\n") else "\n") + "# retrieval-gate's scratch folders\n"
    return existing + block + "".join(line + "\n" for line in missing), True


def _planned_paths(top: Path, root: Path) -> None:
    """Refuse, before anything is written, what would make a write fail or land elsewhere."""
    for rel, kind in ((".github", "folder"), (".github/workflows", "folder"), (".gitignore", "file")):
        path = top / rel
        if path.is_symlink():
            raise InputError(str(path.relative_to(top)), None, "is a symlink: init writes only inside the repository "
                                                               "(replace it with a real " + kind + ")")
        if path.exists() and (path.is_dir() != (kind == "folder")):
            raise InputError(str(path.relative_to(top)), None, f"is not a {kind}: init writes the workflows "
                                                               "to .github/workflows/ and the ignore lines to "
                                                               ".gitignore")
    if (root / CONFIG_NAME).is_dir():
        raise InputError(CONFIG_NAME, None, "is a folder: init writes the gate config there")


def _resolve_given(root: Path, top: Path, flag: str, value: str) -> str:
    """A path given by option, relative to ``root`` (POSIX), refused in one line when it is no file
    or folder, or lies (through a symlink) outside the repository."""
    if value.startswith("irds:"):
        return value
    if not value.strip():
        raise InputError(flag, None, "is empty: name a file")
    _check_path_text(value, flag)
    path = root / value
    if not path.exists():
        raise InputError(value, None, f"no such file or folder ({flag})")
    if not _inside(path, top):
        raise InputError(value, None, f"lies outside the repository ({flag}): a PR's diff would not show a change "
                                      "to it; put the file in the repository")
    # The path as written (a symlink inside the repository stays a symlink), made relative to root.
    absolute = Path(os.path.normpath(path.absolute()))
    return Path(os.path.relpath(absolute, Path(os.path.normpath(root.absolute())))).as_posix()


def _check_given_reads(root: Path, given: dict[str, str | None], queries: str, qrels: str, retrieval_config: str,
                       corpus: str | None) -> None:
    """Every file named by option reads with the gate's readers (what ``plan`` would refuse, refused now)."""
    if given["queries"] is not None:
        load_queries(_spec(root, queries))
    if given["qrels"] is not None:
        load_qrels(_spec(root, qrels))
    if given["retrieval_config"] is not None:
        if not (root / retrieval_config).is_file():
            raise InputError(retrieval_config, None, "is not a file (--retrieval-config names the YAML or "
                                                     "JSON file a PR changes)")
        load_retrieval_config(root / retrieval_config)
    # A corpus given by option is the corpus value itself (never None then).
    if given["corpus"] is not None and corpus is not None and not corpus.startswith("irds:") and \
            not _reads_corpus(root / corpus):
        raise InputError(corpus, None, "does not read as a corpus (JSONL with id and text, a TSV, a BEIR "
                                       "folder or a folder of text files) (--corpus)")


def _spec(root: Path, value: str) -> str:
    """A path relative to ``root`` as the readers take it (an ``irds:`` id as it is)."""
    return value if value.startswith("irds:") else str(root / value)


_FLAGS = {"queries": "--queries", "qrels": "--qrels", "corpus": "--corpus", "retrieval_config": "--retrieval-config"}
_WHAT = {"queries": "golden query file (TSV or JSONL, or a BEIR folder)", "qrels": "qrels file",
         "retrieval_config": "retrieval config (the YAML or JSON a PR changes)"}


def _repository(options: InitOptions) -> tuple[Path, Path, str]:
    """The folder the config goes in, the repository's top and the suite, checked with the Action's
    reference."""
    _check_path_text(str(options.root), "--dir")
    root = options.root.resolve()
    if not root.is_dir():
        raise InputError(str(options.root), None, "no such folder")
    top = _git_top(root)
    if top is None:
        raise InputError(str(options.root), None, "is not in a git repository (run `git init` first: the gate "
                                                  "compares commits)")
    suite = options.suite or "retrieval"
    if not SUITE.fullmatch(suite):
        raise InputError("--suite", None, f"{suite[:80]!r} is not a plain name (letters, digits, '.', '_', '-'; "
                                          "at most 64)")
    if not ACTION_REF.fullmatch(options.action):
        raise InputError("--action", None, f"{options.action[:80]!r} is not OWNER/REPO@REF")
    return root, top, suite


def _branch(options: InitOptions, top: Path, warnings: list[str]) -> str:
    """The branch the archive job runs on: ``--branch``, or the default branch (a guess is a warning)."""
    if options.branch:
        branch = options.branch
    else:
        branch, guess = _default_branch(top)
        if guess:
            warnings.append(guess)
    if not BRANCH.fullmatch(branch):
        raise InputError("--branch", None, f"{branch[:80]!r} is not a branch name")
    return branch


def _inputs(options: InitOptions, root: Path, top: Path,
            warnings: list[str]) -> tuple[dict[str, str | None], Found, Qrels]:
    """The inputs the config names: each given by option (checked) or found (:func:`discover`);
    the golden queries, qrels and retrieval config are required, whatever was given must read,
    and the qrels (returned) must judge the golden queries."""
    given = {"queries": options.queries, "qrels": options.qrels, "corpus": options.corpus,
             "retrieval_config": options.retrieval_config}
    resolved = {k: (_resolve_given(root, top, _FLAGS[k], v) if v is not None else None) for k, v in given.items()}
    found = discover(root, top)
    values = {k: (resolved[k] if resolved[k] is not None else getattr(found, k)) for k in given}
    if given["queries"] is not None and given["qrels"] is None and values["qrels"] is not None:
        values["qrels"] = found.qrels  # found for other queries: the pairing is checked below
    required = []
    for key in ("queries", "qrels", "retrieval_config"):
        value = values[key]
        if value is None:
            raise InputError(str(root), None, f"no {_WHAT[key]} found here: pass {_FLAGS[key]} PATH")
        required.append(value)
    queries, qrels, retrieval_config = required
    _check_given_reads(root, given, queries, qrels, retrieval_config, values["corpus"])
    return values, found, _judged_queries(root, queries, qrels, warnings)


def _judged_queries(root: Path, queries: str, qrels_spec: str, warnings: list[str]) -> Qrels:
    """The qrels, refused when they judge none of the golden queries (a warning when only some)."""
    query_ids = load_queries(_spec(root, queries)).ids()
    qrels = load_qrels(_spec(root, qrels_spec))
    judged = sum(1 for q in query_ids if q in qrels.judgments)
    if judged == 0:
        raise InputError(qrels_spec, None, f"judges none of the {len(query_ids)} queries of {queries}: "
                                           "pass the qrels of that golden set with --qrels (or the queries with "
                                           "--queries)")
    if judged < len(query_ids):
        warnings.append(f"{qrels_spec} judges {judged} of the {len(query_ids)} queries of {queries}: "
                        "the others score 0 (trec_eval's rule)")
    return qrels


def _write_workflows(top: Path, planned: dict[str, str], force: bool, written: list[str], kept: list[str]) -> None:
    """Each workflow into .github/workflows/; one that exists is kept unless ``force``."""
    workflows = top / ".github" / "workflows"
    workflows.mkdir(parents=True, exist_ok=True)
    for name, workflow in planned.items():
        target = workflows / name
        rel = target.relative_to(top).as_posix()
        if target.exists() and not force:
            kept.append(rel)
            continue
        write_text_atomic(target, workflow)
        written.append(rel)


def _next_steps(options: InitOptions, config_rel: str, prefix: str, branch: str) -> list[str]:
    steps = []
    if not options.command:
        steps.append(f"Set runner.command in {config_rel}: the command that runs your search with "
                     "{config} {queries} {corpus} and writes a TREC run to {run} (docs/runners.md).")
    if options.action == ACTION_PLACEHOLDER:
        steps.append(f"Replace the placeholder {ACTION_PLACEHOLDER} in .github/workflows/ with the gate's "
                     "repository and tag (OWNER/retrieval-gate@TAG).")
    config_arg = "" if not prefix else " " + shlex.quote(f"--config={config_rel}")
    steps.append(f"Archive main's baseline: retrieval-gate archive{config_arg}")
    adds = " ".join(shlex.quote(p) for p in (config_rel, f"{prefix}.retrieval-gate/baseline", ".github/workflows",
                                             ".gitignore"))
    steps.append(f"Commit and push: git add -- {adds} && git commit -m 'Add retrieval-gate' && git push")
    steps.append("In the repository's settings, require the status check 'retrieval-gate' on the branch "
                 f"{branch}.")
    return steps


def init_repository(options: InitOptions, check: Callable[[Path, str], None] | None = None) -> InitResult:
    """Write the config, the workflows and the .gitignore lines; see the module docstring.

    ``check(config_path, text)`` is called with the config's text before anything is written (the
    CLI passes the check ``plan`` and ``run`` start with): a config they would refuse is never
    written. Everything else that could fail is checked first too, so a refusal leaves the
    repository as it was."""
    root, top, suite = _repository(options)
    warnings: list[str] = []
    branch = _branch(options, top, warnings)
    superproject = _git(top, "rev-parse", "--show-superproject-working-tree")
    if superproject:
        warnings.append(f"{top} is a submodule of {superproject}: GitHub runs the workflows written here only in the "
                        "submodule's own repository")
    config_file = root / CONFIG_NAME
    config_rel = config_file.relative_to(top).as_posix()
    _check_path_text(config_rel, "--dir")
    if config_file.exists() and not options.force:
        raise InputError(config_rel, None, "exists already: `retrieval-gate init --force` rewrites it (and the "
                                           "workflows)")
    _planned_paths(top, root)
    if options.command is not None:
        CommandRunner(options.command, source="--command")  # its placeholders, as plan reads them

    values, found, qrels = _inputs(options, root, top, warnings)
    relevance_only = _relevance_only(qrels)
    found = Found(values["queries"], values["qrels"], values["corpus"], values["retrieval_config"], relevance_only,
                  found.notes)
    if values["queries"] == values["qrels"]:
        warnings.append(f"{values['queries']} is a BEIR folder: its qrels/test.tsv is the one judged "
                        "(golden.split picks another)")
    if relevance_only:
        warnings.append(f"{values['qrels']} judges only relevant documents: the config sets "
                        "judged.qrels_style: relevance-only, so unjudged documents do not fail PRs")
    text = render_config(suite, found, options.command)
    if check is not None:
        check(config_file, text)

    prefix = "" if root == top else root.relative_to(top).as_posix() + "/"
    baseline_dir = f"{prefix}.retrieval-gate/baseline"
    planned_workflows = {name: render_workflow(name, config_path=config_rel, baseline_dir=baseline_dir,
                                               branch=branch, action=options.action) for name in WORKFLOWS}
    ignore_text, ignore_changed = _gitignore(top, prefix)
    written: list[str] = []
    kept: list[str] = []
    write_text_atomic(config_file, text)
    written.append(config_rel)
    _write_workflows(top, planned_workflows, options.force, written, kept)
    if ignore_changed:
        write_text_atomic(top / ".gitignore", ignore_text)
        written.append(".gitignore")
    steps = _next_steps(options, config_rel, prefix, branch)
    return InitResult(config_file, tuple(written), tuple(kept), found, suite, tuple(steps), tuple(warnings))
