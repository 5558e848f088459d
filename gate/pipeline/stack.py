"""What every verb sets up from the config: its checks, its measures, the runner and the run
producer, the code under test, and paths as a report shows them."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate.common.atomic import write_text_atomic
from gate.common.errors import InputError
from gate.evaluation.evaluate import PerQuery, evaluate
from gate.evaluation.measures import Measure, parse_measure
from gate.inputs import git
from gate.inputs.config import Config, is_spec
from gate.inputs.fingerprint import file_sha256
from gate.inputs.golden import Golden
from gate.inputs.readers.records import Run
from gate.inputs.retrieval_config import RetrievalConfig
from gate.inputs.traffic_shares import strata_spec_from_config
from gate.inputs.yardstick import config_globs, outside_links
from gate.runs import missing_reference_modules
from gate.runs.code import CodeIdentity, commit_tree, declared_inputs, working_tree
from gate.runs.command import CommandRunner
from gate.runs.http import HttpRunner, http_settings
from gate.runs.produce import RunProducer

Progress = Callable[[str], None]


def stderr_progress(message: str) -> None:
    print(f"[retrieval-gate] {message}", file=sys.stderr, flush=True)


def measures_of(config: Config) -> tuple[Measure, tuple[Measure, ...]]:
    def parse(name: str, key: str) -> Measure:
        try:
            return parse_measure(name).with_default_rel(config.golden.rel)
        except InputError as error:
            raise config.key_error(key, error.message) from None

    primary = parse(config.metric, "metric")
    others: list[Measure] = []
    for name in config.also:
        measure = parse(name, "also")
        if measure != primary and measure not in others:
            others.append(measure)
    return primary, tuple(others)


#: Config keys that name one file, and whose copy they resolve against (yardstick: the
#: config's folder, on a PR the base commit's copy; workspace: the PR's code).
_FILE_KEYS = (
    ("golden.queries", "yardstick"), ("golden.qrels", "yardstick"), ("strata.assignments", "yardstick"),
    ("retrieval.config", "workspace"), ("runner.baseline_run", "workspace"), ("runner.candidate_run", "workspace"),
    ("runner.baseline_timings", "workspace"), ("runner.candidate_timings", "workspace"),
)


def check_config(config: Config) -> None:
    """Everything about a config that can be checked before any run: measure names, strata
    shares, and every file it names - each error at the config's file:line and key.

    ``plan``, ``run``, ``archive``, ``replay`` and ``noise`` all call it first, so each refuses
    exactly what the others refuse.
    """
    measures_of(config)
    _check_named_files(config)
    for key, target in outside_links(config):
        why = (f"is a symlink to {target}, outside the repository: a PR could change what it reads without the "
               "diff showing it")
        if key == "config":
            raise InputError(str(config.path), None, f"the gate config {why}")
        raise config.key_error(key, f"{config.value(key)!r} {why}")
    declared_factors(config)
    _check_globs(config, "prompts")
    _check_globs(config, "watch")
    _check_globs(config, "runner.inputs")
    for name in config.environment:
        if not name or any(c in name for c in "*?["):
            raise config.key_error("environment", f"{name!r}: name a file (globs are not expanded)")
    if config.noise.file:
        # Missing is a state, not a mistake: noise.file names where `retrieval-gate noise` writes the
        # band, and a baseline is archived before it is measured (the report says "absent").
        band_path = config.resolve(config.noise.file)
        assert band_path is not None  # noise.file is set
        _require_file(config, "noise.file", band_path, missing_ok=True)
    strata_spec_from_config(config)


def _check_named_files(config: Config) -> None:
    """Every file the config names exists (a BEIR folder for the golden set), the corpus too
    unless it is an ``irds:`` id or a pattern filled in per run."""
    for key, side in _FILE_KEYS:
        value = config.value(key)
        if value is None or is_spec(str(value)):
            continue
        path = config.resolve(value) if side == "yardstick" else config.here(value)
        assert path is not None  # value is not None
        _require_file(config, key, path, folder_ok=key.startswith("golden."))  # a BEIR folder
    corpus = config.corpus
    if corpus is not None and not is_spec(corpus) and "{" not in corpus:
        corpus_path = config.here(corpus)
        assert corpus_path is not None  # corpus is not None
        if not corpus_path.exists():
            raise config.key_error("corpus", f"no such file or folder '{corpus}' ({corpus_path})")
    tuning = config.tuning.queries
    if isinstance(tuning, str) and not is_spec(tuning):
        tuning_path = config.resolve(tuning)
        assert tuning_path is not None  # tuning is a str
        _require_file(config, "tuning.queries", tuning_path)
    for key in ("tuning.queries", "tuning.holdout"):
        value = config.value(key)
        if value is not None and not isinstance(value, (str, list)):
            raise config.key_error(key, "expected a query file or a list of query ids")


def check_base(config: Config, base: str | None) -> None:
    """``--base REF`` must name a commit of the workspace's repository: a typo would otherwise
    compare the PR with whatever the fallback finds (the newest manifest, or nothing)."""
    if base is None:
        return
    if not base or base.startswith("-") or len(base) > 256 or any(c.isspace() or ord(c) < 32 for c in base):
        raise InputError(None, None, f"--base {base[:60]!r}: not a git revision")
    root = git.repo_root(config.workspace_root)
    if root is None:
        raise InputError(None, None, f"--base {base}: {config.workspace_root} is not in a git repository")
    if git.rev_parse(root, base) is None:
        raise InputError(None, None,
                         f"--base {base}: no such commit in {root}{git.missing_revision_advice(root, base)}")


def _check_globs(config: Config, key: str) -> None:
    config_globs(config, key)  # a glob that can never match is refused at its line (gate.inputs.globs)


def _require_file(config: Config, key: str, path: Path, missing_ok: bool = False, folder_ok: bool = False) -> None:
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        if missing_ok:
            return
        raise config.key_error(key, f"no such file '{config.value(key)}' ({path})") from None
    except OSError as error:
        raise config.key_error(key, f"cannot read '{config.value(key)}': {error.strerror}") from None

    if not stat.S_ISREG(mode) and not (folder_ok and stat.S_ISDIR(mode)):
        kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file"
        raise config.key_error(key, f"'{config.value(key)}' is {kind}, expected a file")


def make_runner(config: Config, progress: Progress | None = None):
    if config.runner.type == "http":
        settings = http_settings(config.runner.http, str(config.path), config.lines)
        return HttpRunner(settings, progress=progress or stderr_progress)
    if config.runner.type == "command":
        if not config.runner.command:
            return None
        return CommandRunner(
            config.runner.command,
            timeout=config.runner.timeout,
            shell=config.runner.shell,
            env_passthrough=config.runner.env_passthrough,
            cwd=config.workspace_root,
            source=str(config.path), line=config.lines.get("runner.command"),
        )
    if config.runner.type == "reference":

        missing = missing_reference_modules()
        if missing:
            raise config.key_error("runner.type", "'reference' needs the extra: pip install "
                                   f"'retrieval-gate[reference]' (missing: {', '.join(missing)})")

        # Lazy: the reference runner needs the `reference` extra (scipy, bm25s, faiss), which the
        # Action's image and a plain install do not have.
        from gate.runs.reference import ReferenceRunner

        return ReferenceRunner(config.runner.options)
    return None  # run-file: runs come from files, the runs folder or the cache


def work_dir_of(config: Config) -> Path:
    return config.workspace_root / ".retrieval-gate" / "work"


def make_producer(config: Config, runs_dir: Path | None, progress: Progress) -> RunProducer:
    return RunProducer(
        runner=make_runner(config, progress),
        work_dir=work_dir_of(config),
        cache_dir=config.here(config.cache_dir) if config.cache_enabled else None,
        runs_dir=runs_dir,
        progress=progress,
        repo=config.workspace_root,
    )


def gate_folders(config: Config, runs_dir: Path | None = None) -> list[Path]:
    """What the gate itself writes in the workspace: never part of the code under test (or the
    key of a run would change with the runs, the cache and the reports it produced)."""
    own, cache, manifest = config.here(".retrieval-gate"), config.here(config.cache_dir), config.here(config.manifest)
    assert own is not None and cache is not None and manifest is not None  # here() of a str is a Path
    folders = [own, cache, work_dir_of(config), manifest.parent]
    return folders + ([runs_dir] if runs_dir is not None else [])


def not_code(config: Config, runs_dir: Path | None = None) -> list[Path]:
    """What the code under test leaves out: the gate's own folders, and the retrieval config, whose
    every change the config diff names (in the code's tree too, a config-only PR would also read
    as an unattributed code change)."""
    retrieval_config = config.here(config.retrieval_config)
    assert retrieval_config is not None  # here() of a str is a Path
    return [*gate_folders(config, runs_dir), retrieval_config]


def code_under_test(config: Config, runs_dir: Path | None = None) -> CodeIdentity | None:
    """The code the PR's runs come from (part of their cache keys); None for runners whose code
    is not the team's (run files, the reference retriever)."""
    if config.runner.type != "command":
        return None
    if config.runner.inputs:
        try:
            return declared_inputs(config.workspace_root, config.runner.inputs, exclude=gate_folders(config, runs_dir))
        except InputError as error:
            raise config.key_error("runner.inputs", error.message) from None
    return working_tree(config.workspace_root, not_code(config, runs_dir))


def commit_code(config: Config, commit: str | None, runs_dir: Path | None = None) -> CodeIdentity | None:
    """The code of a baseline: the tree of the commit it was archived on (or of the base commit
    it is reconstructed from), run from a checkout of that commit."""
    if config.runner.type != "command":
        return None
    if commit is None:
        return CodeIdentity("unknown", None, "the baseline's commit is not recorded", config.workspace_root)
    code = commit_tree(config.workspace_root, commit, not_code(config, runs_dir))
    if not code.known:
        return CodeIdentity("unknown", None, code.description, config.workspace_root)
    return code


def runner_queries_path(golden: Golden, work_dir: Path) -> str:
    """A file a runner can read: irds: queries are written out as TSV."""
    if not golden.queries_path.startswith("irds:"):
        return golden.queries_path
    path = work_dir / "queries.tsv"
    lines = [f"{q.query_id}\t{' '.join(q.text.split())}" for q in golden.queries.queries]
    write_text_atomic(path, "\n".join(lines) + "\n")
    return str(path)


def environment_files(config: Config, progress: Progress | None = None) -> dict[str, str | None]:
    """sha256 of each ``environment`` file, ``None`` for one that is not there (a PR may delete
    one: that is a change). Said once on the progress line, since a typo would never change."""
    files: dict[str, str | None] = {}
    for name in config.environment:
        path = config.here(name)
        files[name] = file_sha256(path) if path is not None and path.is_file() else None
        if files[name] is None and progress is not None:
            progress(f"warning: environment file {name} is not a file here ({path}): recorded as absent")
    return files


def evaluate_all(run: Run, golden: Golden, measures: Sequence[Measure], rel: int,
                 retrieval: RetrievalConfig | None) -> PerQuery:
    """``run`` of ``retrieval`` on every judged golden query, judged on the corpus it indexes."""
    return evaluate(run, golden.qrels_for(retrieval), measures, golden.universe.query_ids, rel=rel)


@dataclass(frozen=True)
class RunOptions:
    candidate_run: Path | None = None
    candidate_timings: Path | None = None  # the candidate run's timings sidecar (--candidate-timings)
    runs_dir: Path | None = None
    base: str | None = None
    out: Path | None = None  # where the reports go: never read as prompt files


def shown_path(path: str | Path, config: Config, out: Path | None = None) -> str:
    """``path`` as a report shows it: relative to the workspace (or else to the output folder),
    never the absolute path of the machine the gate ran on; its file name when it is in neither."""

    absolute = Path(os.path.abspath(path))
    for root in (config.workspace_root, out):
        if root is None:
            continue
        try:
            return absolute.relative_to(Path(os.path.abspath(root))).as_posix()
        except ValueError:
            continue
    return absolute.name


def shown_paths(text: str, config: Config, out: Path | None = None) -> str:
    """``text`` (a runner's error, its log) with the workspace's and the output folder's absolute
    paths made relative to them, as :func:`shown_path` shows one path."""

    roots = {str(Path(os.path.abspath(root))) for root in (config.workspace_root, out) if root is not None}
    for root in sorted(roots, key=len, reverse=True):
        if root != "/":
            text = text.replace(root + "/", "")
    return text


def declared_factors(config: Config) -> dict[str, list[str]]:
    """``attribution.factors`` checked: names as ``--factor`` takes them, each a non-empty list
    of dotted paths, no path (or a path below it) in two factors - a path claimed twice would
    switch in two cells at once and hand one factor's effect to the other."""
    declared = config.attribution.factors or {}
    out: dict[str, list[str]] = {}
    owner: dict[str, str] = {}
    for name, paths in declared.items():
        name = str(name)
        paths = _factor_paths(config, name, paths)
        for path in paths:
            _claim(config, owner, path, name)
        out[name] = paths
    return out


def _factor_paths(config: Config, name: str, paths: Any) -> list[str]:
    """One factor's name and paths checked; a single path is a list of one."""
    bad = next((ch for ch in name if ch in ",=|×" or ch.isspace() or not ch.isprintable()), None)
    if not name or bad is not None:
        raise config.key_error("attribution.factors", f"factor name {name[:40]!r} must be non-empty, without "
                               "spaces, ',', '=', '|' or '×'")
    if isinstance(paths, str):
        paths = [paths]
    if (not isinstance(paths, list) or not paths
            or not all(isinstance(p, str) and p.strip() and len(p) <= 256 for p in paths)):
        raise config.key_error("attribution.factors", f"factor '{name}': expected a dotted path or a list of "
                               "them")
    return list(paths)


def _claim(config: Config, owner: dict[str, str], path: str, name: str) -> None:
    """``path`` claimed for factor ``name``, refused when another factor holds it or a path
    above or below it."""
    for other, by in owner.items():
        if by != name and (path == other or path.startswith(other + ".") or other.startswith(path + ".")):
            raise config.key_error("attribution.factors", f"'{path}' (factor '{name}') overlaps '{other}' "
                                   f"(factor '{by}'): a path belongs to one factor")
    owner[path] = name
