"""Where the yardstick is read from: the base commit (the workspace when the base is unreadable).

On a PR, everything the candidate is measured against - the gate config, the
golden queries and qrels, the strata file, the tuning split, the baseline
manifest and the noise band - is read as of the base commit, so a PR cannot
move its own goalposts. The PR head supplies only the code under test (the
retrieval config, the corpus its ingestion produces, prompts). A PR that
edits the yardstick is listed under "goalposts changed".

The base commit's files are written into a folder that mirrors the
repository (an overlay); the config is loaded from there with its
``workspace`` pointing at the real checkout.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from gate.common.errors import InputError, name_copies_by_origin
from gate.inputs import git
from gate.inputs.config import Config, is_spec, load_config
from gate.inputs.globs import Glob, GlobError, compile_glob, escape, matches
from gate.inputs.manifest import load_manifest

BASELINES_BRANCH = "retrieval-gate-baselines"
#: The watch glob of a command runner without runner.inputs: its whole working tree is its code.
EVERYTHING = "**"


@dataclass(frozen=True)
class Yardstick:
    config: Config
    source: str  # "base commit <sha>" | "workspace"
    warning: str | None  # loud when the base commit could not be read
    goalposts: tuple[dict, ...]  # yardstick files the PR changed: {path, change}
    watch: tuple[str, ...] = ()  # repository globs whose change makes the gate relevant


def repository_path(root: Path, absolute: Path) -> str | None:
    """``absolute`` as a path of the repository at ``root``, lexically: a symlink is matched by
    its own path (replacing retrieval/config.yml by a symlink changes retrieval/config.yml), never
    by where it points. None outside the repository."""
    relative = git.repository_path(root, absolute)
    return None if relative is None else relative.as_posix()


def _relative(config: Config, value: str) -> str | None:
    """A yardstick path as a repository path (posix), or None for irds: ids and outside paths."""
    if is_spec(value):
        return None
    path = Path(value)
    absolute = path if path.is_absolute() else config.root / path
    root = git.repo_root(config.root)
    if root is None:
        return None
    return repository_path(root, absolute)


def outside_links(config: Config) -> list[tuple[str, str]]:
    """(key, target) of every file the config names (yardstick or code under test) that is a
    symlink leading out of the repository: the PR's diff would not show a change to what it
    reads."""
    root = git.repo_root(config.workspace_root)
    if root is None:
        return []
    top = Path(os.path.realpath(root))
    named = [("golden.queries", config.resolve(config.golden.queries)),
             ("golden.qrels", config.resolve(config.golden.qrels)),
             ("retrieval.config", config.here(config.retrieval_config)), ("config", Path(config.path).absolute())]
    if config.corpus and not is_spec(config.corpus) and "{" not in config.corpus:
        named.append(("corpus", config.here(config.corpus)))
    out = []
    for key, path in named:
        if path is None or is_spec(str(path)):
            continue
        real = Path(os.path.realpath(path))
        if os.path.islink(path) or any(os.path.islink(p) for p in Path(os.path.abspath(path)).parents
                                       if str(p).startswith(str(top))):
            try:
                real.relative_to(top)
            except ValueError:
                out.append((key, str(real)))
    return out


def yardstick_paths(config: Config) -> list[str]:
    """Repository paths of the yardstick files (the config itself first); folders end with '/'."""
    paths: list[str | None] = []
    root = git.repo_root(config.root)
    if root is not None:
        own = repository_path(root, Path(config.path).absolute())
        if own is not None:
            paths.append(own)
    for value in (config.golden.queries, config.golden.qrels, config.strata.assignments, config.noise.file):
        if isinstance(value, str):
            paths.append(_relative(config, value))
    for value in (config.tuning.queries, config.tuning.holdout):
        if isinstance(value, str):
            paths.append(_relative(config, value))
    manifest = _relative(config, config.manifest)
    if manifest is not None:
        paths.append(manifest.rsplit("/", 1)[0] + "/" if "/" in manifest else manifest)
    out: list[str] = []
    for p in paths:
        if p and p not in out:
            out.append(p)
    return with_link_targets(root, out)


def with_link_targets(root: Path | None, paths: list[str]) -> list[str]:
    """``paths`` and, for each one resolved through symlinks in the working tree, every link met
    on the way (a folder link ``retrieval -> configs1``, each link of a chain ``config.yml ->
    a.yml -> b.yml``) and the file it ends at: a PR that retargets ``configs/a.yml``, or edits
    ``b.yml``, changes ``retrieval/config.yml`` without touching it. ``paths`` are literal (a
    glob's wildcards are not followed); links that leave the repository are refused elsewhere
    (:func:`outside_links`)."""
    if root is None:
        return paths
    top = os.path.realpath(root)
    out: list[str] = []

    def add(path: str) -> None:
        if path not in out:
            out.append(path)

    for path in paths:
        add(path)
        if not path:
            continue
        folder = path.endswith("/")
        parts = [p for p in path.rstrip("/").split("/") if p]
        for i, part in enumerate(parts):
            parent = os.path.realpath(os.path.join(top, *parts[:i])) if i else top
            here = os.path.join(parent, part)
            hops = 0
            while os.path.islink(here) and hops < 40:
                rel = os.path.relpath(here, top)
                if not rel.startswith(".."):
                    add(rel.replace(os.sep, "/"))
                here = os.path.normpath(os.path.join(os.path.dirname(here), os.readlink(here)))
                hops += 1
        final = os.path.relpath(os.path.realpath(os.path.join(top, *parts)), top)
        if not final.startswith(".."):
            add(final.replace(os.sep, "/") + ("/" if folder else ""))
    return out


def config_folder(config: Config) -> str:
    """The config's folder as a repository path: what its globs are relative to ("" at the
    repository's top, and outside a repository)."""
    folder = config.workspace_root  # the real checkout's folder, also for a config read from the base commit
    root = git.repo_root(folder)
    inside = repository_path(root, folder) if root is not None else None
    return "" if inside in (None, "", ".") else inside


def config_globs(config: Config, key: str, folder: str | None = None) -> list[Glob]:
    """The globs of ``key`` (``runner.inputs``, ``watch``, ``prompts``) as repository globs; one
    that can never match is refused at the key's line (exit 2)."""
    where = config_folder(config) if folder is None else folder
    out = []
    for pattern in config.value(key) or ():
        try:
            out.append(compile_glob(pattern, where))
        except GlobError as problem:
            raise config.key_error(key, str(problem)) from None
    return out


def watched(config: Config) -> list[str]:
    """Repository globs whose change makes the gate relevant; ``watch:`` (relative to the config's
    folder, as its other globs) overrides the default."""
    root = git.repo_root(config.root)
    folder = config_folder(config)
    if config.watch:
        return _watch_list(root, [], config_globs(config, "watch", folder))
    paths = yardstick_paths(config)  # literal repository paths; a folder's ends with "/"
    patterns: list[str | Glob] = []
    for value in (config.retrieval_config, config.corpus):
        rel = _relative(config, value) if value else None
        if not rel:
            continue
        # A corpus may be a folder (BEIR, or a folder of files): a change to any file in it is a
        # change to the corpus.
        folder_too = value is config.corpus
        if "{" in rel:
            glob = _template_glob(escape(rel)).rstrip("/")
            patterns += [glob, glob + "/**"] if folder_too else [glob]
        else:
            paths += [rel.rstrip("/"), rel.rstrip("/") + "/"] if folder_too else [rel.rstrip("/")]
    patterns += config_globs(config, "prompts", folder)
    # Files, not globs (check_config refuses wildcards): paths like the retrieval config's, so a
    # lock file above a subfolder config (../../poetry.lock) is watched too.
    paths += [rel for name in config.environment if (rel := _relative(config, name))]
    patterns += code_globs(config, folder)
    patterns.append(".github/workflows/**")
    return _watch_list(root, paths, patterns)


def _watch_list(root: Path | None, paths: list[str], patterns: Iterable[str | Glob]) -> list[str]:
    """``paths`` (literal repository paths; a folder's ends with "/") and ``patterns`` as one list
    of repository globs: a glob without a wildcard is a path too, and every path is followed
    through the symlinks on its way (:func:`with_link_targets`) and escaped."""
    globs: list[str] = []
    literal = list(paths)
    for pattern in patterns:
        glob = pattern if isinstance(pattern, Glob) else compile_glob(pattern)
        if glob.literal is not None:
            literal.append(glob.literal)
        elif glob.path not in globs:
            globs.append(glob.path)
    for path in with_link_targets(root, list(dict.fromkeys(literal))):
        named = escape(path.rstrip("/")) + "/**" if path.endswith("/") else escape(path)
        if named not in globs:
            globs.append(named)
    return globs


def _template_glob(path: str) -> str:
    """A templated corpus path (``corpus-{ingestion.parser}.jsonl``, ``data/{v}/corpus.jsonl``)
    as a glob over every file it can name."""
    head, _, rest = path.partition("{")
    if "/" in rest:  # the template names a folder: everything below the part before it
        return (head.rsplit("/", 1)[0] + "/**") if "/" in head else EVERYTHING
    return head + "*"


def code_globs(config: Config, folder: str) -> list[str | Glob]:
    """The code under test of a command runner: what its runs are keyed on (gate.runs.code).
    ``runner.inputs`` when declared; otherwise the whole working tree is the code, so every
    changed file makes the gate relevant."""
    if config.runner.type != "command":
        return []
    if config.runner.inputs:
        return list(config_globs(config, "runner.inputs", folder))
    return [EVERYTHING]


def _ls_tree(workspace: Path, ref: str, folder: str) -> list[str]:
    """The repository paths of the files below ``folder`` at ``ref`` (NUL-separated: a name git
    would quote, non-ASCII or with a newline, comes back as it is)."""
    try:
        proc = git.run(workspace, "ls-tree", "-r", "-z", "--full-tree", "--name-only", ref, "--",
                       f":(literal){folder}")
    except (OSError, subprocess.TimeoutExpired):
        return []
    if proc.returncode != 0:
        return []
    return [name for name in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if name]


def _write(dest: Path, rel: str, content: bytes) -> None:
    target = dest / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content)


def _goalposts(changed: Iterable[str], yard: Iterable[str]) -> tuple[dict, ...]:
    """The changed files that are yardstick files (a folder's path ends with '/': all below it)."""
    globs = [compile_glob(escape(p.rstrip("/")) + "/**" if p.endswith("/") else escape(p)) for p in yard]
    return tuple({"path": f, "change": "modified"} for f in changed if matches(f, globs))


def load_yardstick(config_path: Path, base: str | None, overlay: Path,
                   changed_files: Iterable[str] | None = None) -> Yardstick:
    """The config (and yardstick files) as of ``base``; the workspace copy with a warning when
    the base commit cannot be read."""
    workspace_config = load_config(config_path)
    root = git.repo_root(workspace_config.root)
    changed = list(changed_files or [])
    if base is None or root is None:
        return Yardstick(workspace_config, "workspace", None if base is None else
                         "the workspace is not a git repository: the yardstick is read from the PR head", (),
                         tuple(watched(workspace_config)))
    rel_config = repository_path(root, Path(config_path).absolute())
    if rel_config is None:
        raise InputError(str(config_path), None, "the gate config is outside the repository being gated")
    try:
        return _base_yardstick(workspace_config, root, rel_config, base, overlay, changed)
    except git.UnreadableAtCommit as problem:
        # Refusing would refuse every PR, the one that repairs the base included. The PR head's
        # own files still pass check_config (an outside link there is exit 2), and every
        # yardstick file the PR touches is a goalpost: it cannot pass by editing them.
        where = (problem.path or "").split(":", 1)[-1]
        warning = (f"the base commit {base[:12]} cannot state its yardstick: its {where} "
                   f"{problem.message.split(':')[0]}; the yardstick is read from the PR head, and any yardstick file "
                   "this PR changes counts as moving the goalposts")
        yard = yardstick_paths(workspace_config)
        goalposts = _goalposts(changed, yard)
        return Yardstick(workspace_config, "workspace", warning, goalposts, tuple(watched(workspace_config)))


def _base_yardstick(workspace_config: Config, root: Path, rel_config: str, base: str, overlay: Path,
                    changed: list[str]) -> Yardstick:
    content = git.show_file(root, base, root / rel_config)
    if git.rev_parse(root, base) is None:
        warning = (f"the base commit {base} cannot be read (a shallow checkout? use fetch-depth: 2): the yardstick "
                   "is read from the PR head, and the baseline can only come from an archived manifest")
        return Yardstick(workspace_config, "workspace", warning, (), tuple(watched(workspace_config)))
    if content is None:
        warning = (f"the base commit {base[:12]} has no {rel_config}: this change adds the gate, so the yardstick is "
                   "read from it (there is nothing older to hold it to)")
        return Yardstick(workspace_config, "workspace", warning, (), tuple(watched(workspace_config)))
    _write(overlay, rel_config, content)
    # Every message about a file read from here names it by its repository path, which is what
    # the config says (the overlay mirrors the repository), never by this scratch folder.
    name_copies_by_origin(overlay, f"as of the base commit {(git.rev_parse(root, base) or base)[:12]}")
    base_config = load_config(overlay / rel_config)
    # Golden files etc. of the base commit, resolved the way the base config names them.
    probe = dataclasses.replace(base_config, root=(root / rel_config).parent, path=root / rel_config)
    for rel in yardstick_paths(probe)[1:]:
        if rel.endswith("/"):
            for item in _ls_tree(root, base, rel):
                data = git.show_file(root, base, root / item)
                if data is not None:
                    _write(overlay, item, data)
        else:
            data = git.show_file(root, base, root / rel)
            if data is not None:
                _write(overlay, rel, data)
    for key, value in (("golden.queries", base_config.golden.queries), ("golden.qrels", base_config.golden.qrels)):
        golden_rel = _relative(probe, value) if isinstance(value, str) else None
        if golden_rel is not None and not (overlay / golden_rel).exists():
            # A golden file the base commit names but does not hold (deleted, or a symlink to
            # nothing): the base cannot state its yardstick, as with a link out of the repository.
            raise git.UnreadableAtCommit(f"{base}:{golden_rel}", f"({key}) is not in the commit: missing, or a "
                                                                 "symlink to nothing")
    config = dataclasses.replace(base_config, workspace=(root / rel_config).parent.resolve())
    yard = [p for p in yardstick_paths(probe)]
    goalposts = _goalposts(changed, yard)
    return Yardstick(config, f"base commit {base[:12]}", None, goalposts, tuple(watched(probe)))


def baseline_from_branch(workspace: Path, base_sha: str, manifest_folder: Path, *, branch: str = BASELINES_BRANCH,
                         max_ancestors: int = 50, token: str | None = None, remote_url: str | None = None,
                         warnings: list[str] | None = None) -> str | None:
    """Copy ``baselines/<sha>/`` for the base commit (or its newest ancestor that has one) from the
    baselines branch into ``manifest_folder``. Returns where it came from, or None.

    The branch is fetched when the checkout lacks it, from ``remote_url`` (the repository's own
    address; ``origin`` only when none is given, outside the Action) with ``token`` (a private
    repository's checkout keeps no credentials); a fetch that fails is a loud warning in
    ``warnings``, never a silent "reconstructed". In a shallow checkout (fetch-depth 2) the base's ancestors are
    fetched too, so the newest archived ancestor can be found."""
    root = git.repo_root(workspace)
    if root is None:
        return None
    notes = warnings if warnings is not None else []
    ref = baselines_ref(root, branch, token, remote_url, notes)
    if ref is None:
        return None
    if git.rev_parse(root, f"{base_sha}^") is None and git.rev_parse(root, base_sha) is not None:
        try:  # a shallow checkout: the base's ancestors, to find the newest one with a baseline
            git.fetch(root, base_sha, token=token, url=remote_url, depth=max_ancestors, timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            pass
    for sha in _ancestors(root, base_sha, max_ancestors):
        if _copy_baseline(root, ref, f"baselines/{sha}/", manifest_folder):
            return f"{branch}:baselines/{sha}" + ("" if sha == base_sha else f" (newest ancestor of {base_sha[:12]})")
    return None


#: Seconds before the baselines branch is fetched the second time.
RETRY_PAUSE = 1.0
#: What git says when the server refused the credentials (or there were none): trying again
#: would be refused the same way.
_REFUSALS = ("401", "403", "Authentication failed", "terminal prompts disabled", "could not read Username")


def baselines_ref(root: Path, branch: str, token: str | None, remote_url: str | None,
                   notes: list[str]) -> str | None:
    """The ref of the baselines branch, fetched when the checkout lacks it; None (and why in
    ``notes``, unless the branch does not exist) when it cannot be had."""
    refs = [f"refs/remotes/origin/{branch}", f"refs/heads/{branch}"]
    # With the repository's own address (the Action, plan in a workflow) the branch is always
    # fetched from there, into a ref of the gate's own: a branch already in the checkout may have
    # been made, or moved, by the PR's code in an earlier step.
    ref = None if remote_url else next((r for r in refs if git.rev_parse(root, r) is not None), None)
    if remote_url:
        refs = [f"refs/retrieval-gate/{branch}"]
        # That ref, too, may be the PR's (written in an earlier step): when the fetch below does
        # not update it (no such branch on the remote, the remote unreachable), it must not stand.
        git.run(root, "update-ref", "--no-deref", "-d", refs[0])
        if git.rev_parse(root, refs[0]) is not None:
            notes.append(f"the {branch} branch could not be fetched (a ref {refs[0]} in the checkout cannot be "
                         "removed): the baseline is reconstructed instead of the archived one")
            return None
    if ref is not None:
        return ref
    # A fetch that fails for another reason than a missing branch is tried once more: a reset
    # connection must not turn an archived baseline into a reconstruction.
    for attempt in range(2):
        if attempt:
            time.sleep(RETRY_PAUSE)  # a reset connection, or a lock another git process holds for a moment
        try:
            done = git.fetch(root, f"+refs/heads/{branch}:{refs[0]}", token=token,
                             url=remote_url, depth=1, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as error:
            if attempt == 0:
                continue
            notes.append(f"the {branch} branch could not be fetched ({type(error).__name__}): the baseline is "
                         "reconstructed from the base commit instead of the archived one")
            return None
        if git.rev_parse(root, refs[0]) is not None:
            return refs[0]
        why = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
        missing = any("couldn't find remote ref" in line for line in why)
        said = " ".join(why)
        if missing or any(refusal in said for refusal in _REFUSALS):
            break  # the same answer again: no second try
    if not missing:
        notes.append(f"the {branch} branch could not be fetched ({git_reason(why)[:200]}): "
                     "the baseline is reconstructed instead of the archived one. A private repository "
                     "needs the action's token (input `token`, with `contents: read`)")
    return None


def git_reason(lines: list[str]) -> str:
    """The line of git's error output that says what went wrong: its first ``fatal:`` or
    ``error:`` line (git's advice after it, "and the repository exists.", says nothing)."""
    found = next((line for line in lines if line.startswith(("fatal:", "error:"))), None)
    return found or next((line for line in reversed(lines) if line.strip()), "no reason given")


def _ancestors(root: Path, base_sha: str, max_ancestors: int) -> list[str]:
    """The base commit and its ancestors, newest first (the base alone when git cannot list them)."""
    try:
        proc = git.run(root, "rev-list", f"--max-count={max_ancestors}", base_sha)
        return proc.stdout.decode().split() if proc.returncode == 0 else [base_sha]
    except (OSError, subprocess.TimeoutExpired):
        return [base_sha]


def _copy_baseline(root: Path, ref: str, folder: str, manifest_folder: Path) -> bool:
    """Copy the files below ``folder`` of ``ref`` into ``manifest_folder`` when it holds a manifest;
    False (nothing copied) when it does not."""
    files = _ls_tree(root, ref, folder)
    if not any(f.endswith("/manifest.yml") for f in files):
        return False
    for item in files:
        data = git.show_file(root, ref, root / item)
        if data is not None:
            target = manifest_folder / item[len(folder):]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    return True


def fetch_archived_commit(workspace: Path, manifest_path: Path, *, token: str | None = None,
                          remote_url: str | None = None, warnings: list[str] | None = None) -> None:
    """Make the commit a manifest was archived on present in the checkout (fetched by its sha,
    depth 1, from the repository's own address with the token, then from origin without).

    A baseline that must be re-run (a replay on changed queries or corpus) is run with that
    commit's code; in a shallow checkout it is usually not there (the archive is older than
    HEAD^1), and without it the baseline's code cannot be told from the PR's."""
    if not manifest_path.exists():
        return
    try:
        commit = load_manifest(manifest_path).git_commit
    except InputError:
        return  # said where the manifest is read for the verdict
    if not commit or git.rev_parse(workspace, commit) is not None:
        return
    attempts = ([(remote_url, token)] if remote_url else []) + [(None, None)]
    for url, credential in attempts:
        try:
            git.fetch(workspace, commit, token=credential, url=url, depth=1)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if git.rev_parse(workspace, commit) is not None:
            return
    if warnings is not None:
        warnings.append(f"the baseline's commit {commit[:12]} (from its manifest) could not be fetched: a baseline "
                        "that must be re-run cannot be run with its own code")
