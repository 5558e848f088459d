"""The gate's main job, stage by stage: config -> commensurable baseline ->
candidate run -> evaluation -> statistics -> verdict -> report.

``archive``, ``replay``, ``plan`` and ``run`` are the library verbs behind the
commands of the same names. Each returns plain results; the CLI only prints
them and maps verdicts to exit codes.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gate.checks.commensurability import (
    Incommensurable,
    ResolvedBaseline,
    base_config_from_git,
    input_differences,
    reconstruct,
    resolve_from_manifest,
    run_request,
)
from gate.checks.judged_share import judged_check, qrels_style_notice
from gate.checks.prompts import scan_prompts
from gate.checks.tuning import looks_tunable, tuning_check
from gate.checks.validity import Validity, compare_leakage, reporting_set, validity_warnings
from gate.common.atomic import write_text_atomic
from gate.common.errors import InputError
from gate.common.numbers import counted, listed
from gate.evaluation.evaluate import PerQuery, evaluate
from gate.evaluation.measures import Measure, parse_measure
from gate.inputs import git
from gate.inputs.config import Config, is_spec, load_config
from gate.inputs.fingerprint import file_sha256
from gate.inputs.golden import Golden, load_golden
from gate.inputs.manifest import Manifest, environment_record, load_manifest, write_manifest
from gate.inputs.readers.records import Run, same_rankings
from gate.inputs.readers.runs import read_run
from gate.inputs.retrieval_config import RetrievalConfig, config_diff, load_retrieval_config
from gate.inputs.traffic_shares import assign_strata, strata_spec_from_config, validate_against
from gate.report.document import SCHEMA_VERSION as REPORT_SCHEMA_VERSION
from gate.runs.code import CodeIdentity, commit_tree, declared_inputs, working_tree
from gate.runs.command import CommandRunner
from gate.runs.produce import RunProducer, check_coverage, missing_queries
from gate.runs.request import RunMissing, RunnerFailed
from gate.statistics.band import BandStatus, applicable_band, band_sentence, measure_noise, tie_floor
from gate.statistics.movement import strata_section
from gate.statistics.paired import compare_paired
from gate.statistics.strata import ALPHA as STRATA_ALPHA
from gate.verdict.rules import MIN_MOVERS, Findings, Verdict, decide, failures_of, inconclusive, traffic_findings

Progress = Callable[[str], None]


def stderr_progress(message: str) -> None:
    print(f"[retrieval-gate] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- setup


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
)


def check_config(config: Config) -> None:
    """Everything about a config that can be checked before any run: measure names, strata
    shares, and every file it names - each error at the config's file:line and key.

    ``plan``, ``run``, ``archive``, ``replay`` and ``noise`` all call it first, so each refuses
    exactly what the others refuse.
    """
    measures_of(config)
    for key, side in _FILE_KEYS:
        value = config.value(key)
        if value is None or is_spec(str(value)):
            continue
        _require_file(config, key, config.resolve(value) if side == "yardstick" else config.here(value),
                      folder_ok=key.startswith("golden."))  # a BEIR folder
    corpus = config.corpus
    if corpus is not None and not is_spec(corpus) and "{" not in corpus:
        path = config.here(corpus)
        if not path.exists():
            raise config.key_error("corpus", f"no such file or folder '{corpus}' ({path})")
    tuning = config.tuning.queries
    if isinstance(tuning, str) and not is_spec(tuning):
        _require_file(config, "tuning.queries", config.resolve(tuning))
    for key in ("tuning.queries", "tuning.holdout"):
        value = config.value(key)
        if value is not None and not isinstance(value, (str, list)):
            raise config.key_error(key, "expected a query file or a list of query ids")
    from gate.inputs.yardstick import outside_links

    for key, target in outside_links(config):
        why = (f"is a symlink to {target}, outside the repository: a PR could change what it reads without the "
               "diff showing it")
        if key == "config":
            raise InputError(str(config.path), None, f"the gate config {why}")
        raise config.key_error(key, f"{config.value(key)!r} {why}")
    declared_factors(config)
    _check_globs(config, "prompts")
    _check_globs(config, "watch")
    for name in config.environment:
        if not name or any(c in name for c in "*?["):
            raise config.key_error("environment", f"{name!r}: name a file (globs are not expanded)")
    if config.noise.file:
        # Missing is a state, not a mistake: noise.file names where `retrieval-gate noise` writes the
        # band, and a baseline is archived before it is measured (the report says "absent").
        _require_file(config, "noise.file", config.resolve(config.noise.file), missing_ok=True)
    strata_spec_from_config(config)


def plan_pull_request(config_path: Path, runs_dir: Path | None, base: str,
                      env: Mapping[str, str] | None = None, noise_repeats: int = 0,
                      sweep: bool = False) -> list[PlannedRun]:
    """``plan`` as the gate will judge the PR: the yardstick (gate config, runner, golden set,
    manifest) as of ``base``, and the base's archived baseline looked up on the baselines branch
    when the checkout has none - so every key is the one the gate step will ask for. The base's
    golden files go to the work folder (the step that produces the runs reads them there)."""
    import os

    from gate.inputs.yardstick import baseline_from_branch, fetch_archived_commit, load_yardstick

    env = os.environ if env is None else env
    workspace = load_config(config_path)
    check_base(workspace, base)
    changed = git.changed_since(workspace.workspace_root, base)
    overlay = work_dir_of(workspace) / "yardstick"
    if overlay.exists():
        import shutil

        shutil.rmtree(overlay)
    overlay.mkdir(parents=True)
    yard = load_yardstick(Path(config_path), base, overlay, changed)
    config = yard.config
    manifest = config.resolve(config.manifest)
    if not manifest.exists():
        baseline_from_branch(config.workspace_root, git.rev_parse(config.workspace_root, base) or base, manifest.parent,
                             token=env.get("GITHUB_TOKEN"), remote_url=git.repository_url(env))
    fetch_archived_commit(config.workspace_root, manifest, token=env.get("GITHUB_TOKEN"),
                          remote_url=git.repository_url(env))
    return plan(config, runs_dir, base, noise_repeats, sweep)


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
        raise InputError(None, None, f"--base {base}: no such commit in {root}{git.missing_revision_advice(root, base)}")


def _check_globs(config: Config, key: str) -> None:
    for pattern in config.value(key) or ():
        if not pattern or Path(pattern).is_absolute() or ".." in Path(pattern).parts:
            raise config.key_error(key, f"{pattern!r}: a glob relative to the repository, inside it")


def _require_file(config: Config, key: str, path: Path, missing_ok: bool = False, folder_ok: bool = False) -> None:
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        if missing_ok:
            return
        raise config.key_error(key, f"no such file '{config.value(key)}' ({path})") from None
    except OSError as error:
        raise config.key_error(key, f"cannot read '{config.value(key)}': {error.strerror}") from None
    import stat

    if not stat.S_ISREG(mode) and not (folder_ok and stat.S_ISDIR(mode)):
        kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file"
        raise config.key_error(key, f"'{config.value(key)}' is {kind}, expected a file")


def make_runner(config: Config):
    if config.runner.type == "command":
        if not config.runner.command:
            return None
        return CommandRunner(
            config.runner.command,
            timeout=config.runner.timeout,
            shell=config.runner.shell,
            env_passthrough=config.runner.env_passthrough,
            cwd=config.workspace_root,
            source=str(config.path),
        )
    if config.runner.type == "reference":
        from gate.runs import missing_reference_modules

        missing = missing_reference_modules()
        if missing:
            raise config.key_error("runner.type", "'reference' needs the extra: pip install "
                                   f"'retrieval-gate[reference]' (missing: {', '.join(missing)})")
        from gate.runs.reference import ReferenceRunner

        return ReferenceRunner(config.runner.options)
    return None  # run-file: runs come from files, the runs folder or the cache


def work_dir_of(config: Config) -> Path:
    return config.workspace_root / ".retrieval-gate" / "work"


def make_producer(config: Config, runs_dir: Path | None, progress: Progress) -> RunProducer:
    return RunProducer(
        runner=make_runner(config),
        work_dir=work_dir_of(config),
        cache_dir=config.here(config.cache_dir) if config.cache_enabled else None,
        runs_dir=runs_dir,
        progress=progress,
        repo=config.workspace_root,
    )


def gate_folders(config: Config, runs_dir: Path | None = None) -> list[Path]:
    """What the gate itself writes in the workspace: never part of the code under test (or the
    key of a run would change with the runs, the cache and the reports it produced)."""
    folders = [config.here(".retrieval-gate"), config.here(config.cache_dir), work_dir_of(config),
               config.here(config.manifest).parent]
    return folders + ([runs_dir] if runs_dir is not None else [])


def not_code(config: Config, runs_dir: Path | None = None) -> list[Path]:
    """What the code under test leaves out: the gate's own folders, and the retrieval config, whose
    every change the config diff names (in the code's tree too, a config-only PR would also read
    as an unattributed code change)."""
    return [*gate_folders(config, runs_dir), config.here(config.retrieval_config)]


def code_under_test(config: Config, runs_dir: Path | None = None) -> CodeIdentity | None:
    """The code the PR's runs come from (part of their cache keys); None for runners whose code
    is not the team's (run files, the reference retriever)."""
    if config.runner.type != "command":
        return None
    if config.runner.inputs:
        try:
            return declared_inputs(config.workspace_root, config.runner.inputs)
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


def evaluate_all(run: Run, golden: Golden, measures: Sequence[Measure], rel: int) -> PerQuery:
    return evaluate(run, golden.qrels, measures, golden.universe.query_ids, rel=rel)


# --------------------------------------------------------------------------- archive


@dataclass(frozen=True)
class ArchiveResult:
    manifest: Manifest
    mean: float
    query_count: int
    run_source: str


def archive(config: Config, run_path: Path | None = None, runs_dir: Path | None = None,
            progress: Progress = stderr_progress, noise_repeats: int = 0) -> ArchiveResult:
    check_config(config)
    primary, others = measures_of(config)
    measures = (primary, *others)
    golden = load_golden(config)
    notice = qrels_style_notice(golden.qrels, golden.universe.query_ids, rel=config.golden.rel,
                                qrels_style=config.judged.qrels_style, max_unjudged=config.policy.max_unjudged,
                                max_judged_drop=config.policy.max_judged_drop)
    if notice is not None:  # said now, not on the first PR the judged-share check fails
        progress(notice)
    retrieval = load_retrieval_config(config.here(config.retrieval_config))
    code = code_under_test(config, runs_dir)
    if run_path is None and config.runner.type == "run-file" and config.runner.baseline_run:
        run_path = config.here(config.runner.baseline_run)
    if run_path is not None:
        run = read_run(run_path)
        try:
            check_coverage(run, golden.universe.query_ids, "archive", str(run_path))
        except RunnerFailed as failure:
            raise InputError(str(run_path), None, failure.message) from None
        source = "file"
    else:
        producer = make_producer(config, runs_dir, progress)
        request = run_request("baseline archive", retrieval, golden, runner_queries_path(golden, producer.work_dir),
                              code=code)
        try:
            run, produced = producer.produce(request, golden.universe.query_ids)
        except RunnerFailed as failure:
            if producer.runner is None and runs_dir is None:  # run-file: nothing was named to archive
                raise config.key_error("runner.type", "'run-file' archives a run it is given: pass --run FILE, "
                                       "set runner.baseline_run, or --runs-dir DIR (see plan)") from None
            raise failure
        source = produced.source
    values = evaluate_all(run, golden, measures, config.golden.rel)
    extra: dict[str, Any] = {}
    extra_files: dict[str, bytes] = {}
    if noise_repeats:
        import hashlib

        from gate.inputs.manifest import run_to_trec_gz

        producer = make_producer(config, runs_dir, progress)
        measured = measure_noise(retrieval, golden, primary, producer, runner_queries_path(golden, producer.work_dir),
                                 noise_repeats, config.golden.rel, config.noise.invalidate_on,
                                 config.noise.base_seed, progress, code=code)
        names = []
        for repeat_run in measured.runs:
            data = run_to_trec_gz(repeat_run)
            name = f"noise-run-{hashlib.sha256(data).hexdigest()[:16]}.trec.gz"
            extra_files[name] = data
            names.append(name)
        from gate.verdict.calibration import calibrate

        calibration = calibrate(measured.runs, golden.qrels, golden.universe.query_ids, str(primary),
                                config.golden.rel, policy=config.policy,
                                samples=config.statistics.samples, seed=config.statistics.seed,
                                noise_threshold=measured.band.overall.threshold,
                                candidate_runs=config.noise.candidate_runs, rerun=config.noise.rerun)
        progress(f"calibration: {calibration.sentence}")
        progress(f"setup ({config.policy.mode} mode): {calibration.setup['sentence']}")
        if calibration.setup_repeats:
            progress(f"setup ({config.policy.mode} mode), {calibration.setup_repeats['sentence']}")
        extra["noise_band"] = {**measured.band.to_dict(), "runs_files": names,
                               "seconds": [round(x, 3) for x in measured.seconds],
                               "calibration": calibration.to_dict()}
    else:
        kept = _still_valid_band(config, golden, retrieval, primary, progress)
        if kept is not None:
            extra["noise_band"], extra_files = kept
        from gate.statistics.power import setup_check

        # The kept band's calibration measured the stack's A/A spread; the policy may have changed since.
        stored = ((kept[0].get("calibration") or {}).get("setup") or {}) if kept is not None else {}
        if (stored.get("mode") == config.policy.mode and stored.get("margin") == config.policy.max_regression
                and stored.get("n") == len(golden.universe.query_ids) and isinstance(stored.get("sentence"), str)):
            setup = stored  # measured with the band, the rule's own simulation included
        else:
            noise_sd = stored.get("noise_sd") if isinstance(stored.get("noise_sd"), (int, float)) else None
            movers = stored.get("mover_share") if isinstance(stored.get("mover_share"), (int, float)) else None
            band = kept[0].get("threshold") if kept is not None and noise_sd is not None else None
            setup = setup_check(len(golden.universe.query_ids), config.policy.max_regression, config.policy.mode,
                                noise_sd, band if isinstance(band, (int, float)) else None, movers).to_dict()
            if setup.get("mode") == "non-inferiority" and setup.get("supports"):
                setup["sentence"] += ("; the formula's word only: retrieval-gate calibrate puts the rule itself "
                                      "through simulated no-op PRs")
        progress(f"setup ({config.policy.mode} mode): {setup['sentence']}")
        again = ((kept[0].get("calibration") or {}).get("setup_repeats") or {}) if kept is not None else {}
        if (again.get("candidate_runs") == min(config.noise.candidate_runs, again.get("candidate_runs") or 0)
                and setup is stored and isinstance(again.get("sentence"), str)
                and again.get("alpha") == repeat_alpha(config)):
            progress(f"setup ({config.policy.mode} mode), {again['sentence']}")  # measured with the band
        else:
            stored_runs = len((kept[0].get("runs_files") or []) if kept is not None else [])
            _setup_with_repeats(config, setup, progress, 1 + stored_runs)
    if code is not None:
        extra["code"] = code.to_dict()  # what the archived run was produced by (a replay runs the commit's)
    head = git.head_commit(config.workspace_root)
    uncommitted = uncommitted_recorded_files(config, golden, retrieval)
    if uncommitted and head is not None:
        progress(f"warning: {', '.join(uncommitted)} differ{'s' if len(uncommitted) == 1 else ''} from commit "
                 f"{head[:12]} (not committed): the manifest records that commit, but archives the files as they "
                 "are now; commit them and archive again, or a replay at that commit will not be this baseline")
    ignored = ignored_recorded_files(config, golden, retrieval)
    if ignored and head is not None:
        one = len(ignored) == 1 and " and " not in ignored[0] and ", " not in ignored[0]
        progress(f"warning: {', '.join(ignored)} {'is' if one else 'are'} ignored by git: commit "
                 f"{head[:12]}, which the manifest records, does not hold {'it' if one else 'them'}; "
                 "a replay reads what the workspace holds then, and the sha256 the manifest records tells whether "
                 "it is this copy (keep it where every checkout finds it, or commit it)")
    changed_code = [name for name in (uncommitted_code(config, runs_dir) if run_path is None else [])
                    if not _touched(uncommitted, [name])]  # a recorded file is named once, above
    if changed_code and head is not None:
        progress(f"warning: the code under test has changes not in commit {head[:12]} ({listed(changed_code, 5)}): "
                 "the archived run was produced by them, but a replay at that commit, which the manifest records, runs the "
                 "committed code; commit them and archive again")
    per_query = {
        name: {qid: float(v) for qid, v in zip(values.query_ids, array)} for name, array in values.values.items()
    }
    manifest = write_manifest(
        config.resolve(config.manifest).parent,
        suite=config.suite,
        config_path=config.retrieval_config,
        config=retrieval,
        corpus=None if golden.corpus(retrieval) is None else golden.corpus(retrieval).record,
        queries=golden.queries_record,
        qrels=golden.qrels_record,
        metric=str(primary),
        measures=tuple(str(m) for m in measures),
        rel=config.golden.rel,
        runner={"type": config.runner.type, "command": config.runner.command},
        run=run,
        per_query=per_query,
        environment=environment_record(environment_files(config, progress)),
        git_commit=head,
        extra=extra,
        extra_files=extra_files,
    )
    return ArchiveResult(manifest, values.mean(str(primary)), len(values.query_ids), source)


def _recorded_paths(config: Config, golden: Golden, retrieval: RetrievalConfig, root: Path) -> list[str]:
    """The files a manifest records (the gate config, the retrieval config, the golden queries and
    qrels, the corpus, the environment files), relative to the repository at ``root``."""
    snapshot = golden.corpus(retrieval)
    named = [config.path, config.here(config.retrieval_config), config.resolve(config.golden.queries),
             config.resolve(config.golden.qrels), Path(snapshot.path) if snapshot is not None else None,
             *(config.here(name) for name in config.environment)]
    out: list[str] = []
    for path in named:
        if path is None or is_spec(str(path)):
            continue
        inside = git.repository_path(root, path)
        if inside is not None:
            out.append(inside.as_posix())
    return list(dict.fromkeys(out))


def _touched(paths: Sequence[str], changed: Sequence[str]) -> list[str]:
    """The ``paths`` that are, or (a folder corpus) hold, one of ``changed``."""
    changed = set(changed)
    return [path for path in paths
            if path in changed or any(name.startswith(path.rstrip("/") + "/") for name in changed)]


def uncommitted_recorded_files(config: Config, golden: Golden, retrieval: RetrievalConfig) -> list[str]:
    """The recorded files (:func:`_recorded_paths`) that differ from HEAD: changed and not
    committed, or not in it at all. The manifest names HEAD's commit, whose files these are not."""
    root = git.repo_root(config.workspace_root)
    if root is None or git.head_commit(root) is None:
        return []
    return _touched(_recorded_paths(config, golden, retrieval, root), git.changed_since(root, "HEAD") or ())


def ignored_recorded_files(config: Config, golden: Golden, retrieval: RetrievalConfig) -> list[str]:
    """The recorded files that git ignores: no commit holds them, so a replay at the manifest's
    commit reads whatever the workspace holds then (their sha256, recorded, tells a different one)."""
    root = git.repo_root(config.workspace_root)
    if root is None or git.head_commit(root) is None:
        return []
    paths = _recorded_paths(config, golden, retrieval, root)
    ignored = git.ignored_files(root, paths) or []
    out = []
    for path in paths:
        if path in ignored:
            out.append(path)
            continue
        inside = [name for name in ignored if name.startswith(path.rstrip("/") + "/")]
        if inside:
            out.append(f"{listed(inside, 3)} (in the folder {path})")
    return out


def uncommitted_code(config: Config, runs_dir: Path | None = None) -> list[str]:
    """Files of the code under test (``runner.inputs``, or the whole working tree without the gate's
    own folders) that differ from HEAD: an archived run produced by them is not what a replay at
    HEAD's commit, the one the manifest names, produces."""
    if config.runner.type != "command":
        return []
    root = git.repo_root(config.workspace_root)
    if root is None or git.head_commit(root) is None:
        return []
    changed = git.changed_since(root, "HEAD") or []
    skipped = [inside.as_posix() for folder in gate_folders(config, runs_dir)
               if (inside := git.repository_path(root, folder)) is not None]
    changed = [name for name in changed if not _touched(skipped, [name])]
    if config.runner.inputs:
        declared = {inside.as_posix() for pattern in config.runner.inputs
                    for path in Path(config.workspace_root).glob(pattern)
                    if (inside := git.repository_path(root, path)) is not None}
        # A declared file that was deleted no longer matches its glob: the diff still names it.
        changed = [name for name in changed if name in declared or not (root / name).exists()
                   and any(Path(name).match(pattern) for pattern in config.runner.inputs)]
    return changed


# --------------------------------------------------------------------------- baseline


def resolve_baseline(
    config: Config,
    golden: Golden,
    measures: Sequence[Measure],
    primary: str,
    producer: RunProducer,
    base: str | None,
    candidate_code: CodeIdentity | None = None,
) -> ResolvedBaseline:
    """The commensurable baseline, or :class:`Incommensurable`. A baseline that must be run
    (replayed, reconstructed) runs from a checkout of its own commit: its code, not the PR's."""
    queries_path = runner_queries_path(golden, producer.work_dir)
    manifest_path = config.resolve(config.manifest)
    manifest = load_manifest(manifest_path) if manifest_path.exists() else None
    base_config = None
    base_readable = False
    if base is not None:
        base_config = base_config_from_git(config.workspace_root, base, config.here(config.retrieval_config))
        base_readable = base_config is not None
    if manifest is not None and (base_config is None or base_config.sha256 == manifest.config_sha256):
        return resolve_from_manifest(manifest, golden, measures, primary, config.golden.rel, producer,
                                     queries_path, environment_files(config),
                                     code=commit_code(config, manifest.git_commit, producer.runs_dir),
                                     candidate_code=candidate_code)
    if manifest is None:
        reason = f"no archived manifest at {config.manifest}"
    else:
        reason = (f"the archived manifest's retrieval config ({manifest.config_sha256[:12]}) is not the base "
                  f"commit's ({base_config.sha256[:12]})")
    if base is None:
        raise Incommensurable("no_baseline", f"no baseline: {reason}, and no base commit was given to "
                                             "reconstruct one from (run --base REF)")
    if not base_readable:
        raise Incommensurable("no_baseline", f"no baseline: {reason}, and the base commit {base} (or its "
                                             f"{config.retrieval_config}) cannot be read")
    return reconstruct(base_config, base, golden, measures, primary, config.golden.rel, producer, queries_path,
                       reason, code=commit_code(config, base, producer.runs_dir), candidate_code=candidate_code)


# --------------------------------------------------------------------------- run


@dataclass(frozen=True)
class RunOptions:
    candidate_run: Path | None = None
    runs_dir: Path | None = None
    base: str | None = None
    out: Path | None = None  # where the reports go: never read as prompt files


@dataclass
class GateOutcome:
    report: dict[str, Any]
    verdict: Verdict
    baseline: ResolvedBaseline | None = None
    candidate_values: PerQuery | None = None
    extras: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from gate.report.document import check_own_report

        check_own_report(self.report, "the run report")


def _num(value: float) -> float | None:
    import math

    value = float(value)
    return value if math.isfinite(value) else None


def _candidate(config: Config, golden: Golden, producer: RunProducer, options: RunOptions,
               retrieval: RetrievalConfig, code: CodeIdentity | None = None) -> tuple[Run, str, float]:
    path = options.candidate_run
    if path is None and config.runner.type == "run-file" and config.runner.candidate_run:
        path = config.here(config.runner.candidate_run)
    if path is not None:
        run = read_run(path)  # bad file: InputError, exit 2
        check_coverage(run, golden.universe.query_ids, "candidate", str(path))
        return run, f"file {path}", 0.0
    queries_path = runner_queries_path(golden, producer.work_dir)
    run, produced = producer.produce(run_request("candidate", retrieval, golden, queries_path, code=code),
                                     golden.universe.query_ids)
    return run, produced.source, produced.seconds


def shown_path(path: str | Path, config: Config, out: Path | None = None) -> str:
    """``path`` as a report shows it: relative to the workspace (or else to the output folder),
    never the absolute path of the machine the gate ran on; its file name when it is in neither."""
    import os

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
    import os

    roots = {str(Path(os.path.abspath(root))) for root in (config.workspace_root, out) if root is not None}
    for root in sorted(roots, key=len, reverse=True):
        if root != "/":
            text = text.replace(root + "/", "")
    return text


def _lift_shown(lift: dict[str, Any], config: Config, out: Path | None) -> dict[str, Any]:
    """The lift's run files and qrels as a report shows them: the qrels as the config names them,
    a run relative to the workspace (or its file name), never a temporary folder of the job."""
    return {**lift, "before": {**lift["before"], "source": shown_path(lift["before"]["source"], config, out)},
            "after": {**lift["after"], "source": shown_path(lift["after"]["source"], config, out)},
            "qrels": config.golden.qrels}


def run_gate(config: Config, options: RunOptions = RunOptions(), progress: Progress = stderr_progress) -> GateOutcome:
    started = time.monotonic()
    check_config(config)
    check_base(config, options.base)
    policy = config.policy
    primary, others = measures_of(config)
    measures = (primary, *others)
    metric = str(primary)
    golden = load_golden(config)
    progress(f"golden set: {len(golden.universe.query_ids)} judged queries "
             f"({len(golden.universe.unjudged)} without judgments left out)")
    retrieval = load_retrieval_config(config.here(config.retrieval_config))
    producer = make_producer(config, options.runs_dir, progress)
    report: dict[str, Any] = {
        "schema_version": REPORT_SCHEMA_VERSION,
        "command": "run",
        "suite": config.suite,
        "metric": metric,
        "candidate_config": {"path": config.retrieval_config, "sha256": retrieval.sha256},
        "inputs": {
            "queries": {"path": config.golden.queries, "sha256": golden.queries_record.sha256,
                        "count": golden.queries_record.count, "unit": "queries", "canonical": True},
            "qrels": {"path": config.golden.qrels, "sha256": golden.qrels_record.sha256,
                      "count": golden.qrels_record.count, "unit": "judgments", "canonical": True},
        },
        "tool": _tool(),
    }
    snapshot = golden.corpus(retrieval)
    if snapshot is not None:
        report["inputs"]["corpus"] = {"path": snapshot.record.id, "sha256": snapshot.record.sha256,
                                      "count": snapshot.record.count, "unit": "chunks", "canonical": True}
    reporting = {"name": "golden", "query_count": len(golden.universe.query_ids)}
    # The PR's code, part of every key its runs are cached under: a PR that changes only
    # search/bm25.py is re-run, never served the baseline's run.
    code = code_under_test(config, options.runs_dir) if options.candidate_run is None else None
    if code is not None:
        report["candidate_code"] = code.to_dict()
        if not code.known:
            progress(f"warning: {code.description}: the run cache is not used for its runs")

    try:
        baseline = resolve_baseline(config, golden, measures, metric, producer, options.base, candidate_code=code)
    except Incommensurable as problem:
        verdict = inconclusive(problem.code, problem.message, policy, reporting)
        report["baseline"] = {"resolution": None, "archived": None, "differences": problem.differences,
                              "description": problem.message}
        report["verdict"] = verdict.to_dict()
        return GateOutcome(report, verdict)
    # The description itself is the summary's "baseline:" line: said once, at the end.
    progress(f"baseline ({baseline.resolution}): {metric} {baseline.values.mean(metric):.4f}")
    baseline_info = {"mean": _num(baseline.values.mean(metric)), **baseline.to_dict()}
    report["baseline"] = baseline_info
    report["config_diff"] = [change.to_dict() for change in config_diff(baseline.config, retrieval)]

    try:
        candidate_run, candidate_source, candidate_seconds = _candidate(config, golden, producer, options, retrieval,
                                                                        code)
    except RunnerFailed as failure:
        # The verdict (the comment's first line) says what failed, with the exit code; where the
        # log is goes in the body, relative to the workspace: an absolute path of the job's
        # machine says nothing to a reviewer.
        error = shown_paths(failure.message, config, options.out)
        verdict = inconclusive("runner_failed", f"the candidate run failed: {error}", policy, reporting)
        report["candidate"] = {"mean": None, "source": None, "error": error,
                               "log_tail": shown_paths(failure.log_tail, config, options.out)}
        if failure.log_path is not None:
            report["candidate"]["log"] = shown_path(failure.log_path, config, options.out)
        report["verdict"] = verdict.to_dict()
        return GateOutcome(report, verdict, baseline)
    candidate = evaluate_all(candidate_run, golden, measures, config.golden.rel)
    spec = strata_spec_from_config(config)
    strata = assign_strata(golden.queries, spec)
    if spec is not None:
        validate_against(spec, strata)  # once, against the full golden set
    diff = config_diff(baseline.config, retrieval)

    validity = check_validity(config, golden, baseline, candidate_run, candidate, retrieval, diff, metric, strata,
                              progress, base=options.base,
                              not_prompts=[*gate_folders(config, options.runs_dir),
                                           *([options.out] if options.out is not None else [])])
    # Scores that do not order the documents (all equal, or the rank as a number): the measures
    # keep trec_eval's order, and the terminal, the report and the comment say so loudly.
    orders = score_orders(baseline.run, candidate_run, golden.universe.query_ids)
    report["run_scores"] = {side: order.to_dict() for side, order in orders.items()}
    unordered = tuple(order.warning for order in orders.values() if order.warning)
    if unordered:
        validity = dataclasses.replace(validity, warnings=(*unordered, *validity.warnings))
    report.update(validity_section(validity))
    reporting = validity.reporting
    if not reporting.query_ids:
        verdict = inconclusive("empty_reporting_set", "no query is left to report on after the validity checks",
                               policy, reporting.to_dict())
        report["verdict"] = verdict.to_dict()
        return GateOutcome(report, verdict, baseline, candidate)

    stats = config.statistics
    from gate.inputs.universe import Universe
    from gate.report.document import paired_section
    from gate.statistics import repeats as rep
    from gate.statistics.evidence import evidence as decision_evidence
    from gate.statistics.power import detectable

    stored = stored_band(config, baseline.manifest)  # read once: the band and its repeat runs
    status, calibration = noise_status(config, golden, baseline, metric, measures, stored)
    threshold = None if status.band is None else status.band.threshold
    floor = tie_floor(candidate_run, golden.qrels, primary, reporting.query_ids, config.golden.rel)
    stratum_noise = None
    if status.band is not None and status.band.strata:
        stratum_noise = {name: item.threshold for name, item in status.band.strata.items()}
    plan = repeat_plan(config, options, status, golden, baseline, measures, stored)
    candidate_values = [candidate]  # per run, every measure, every golden query
    rerun_seeds: list[int] = []
    repeat_warning: str | None = None
    rerun_missing: RunMissing | None = None

    def rerun(count: int) -> None:
        """``count`` more runs of the candidate (cached like every run); a failure keeps what ran."""
        nonlocal repeat_warning, rerun_missing
        total = plan.candidate_runs
        queries_path = runner_queries_path(golden, producer.work_dir)
        for number in range(len(candidate_values) + 1, len(candidate_values) + count + 1):
            seed = config.noise.base_seed + number
            request = run_request(f"candidate repeat {number}/{total}", retrieval, golden, queries_path, code=code,
                                  repeat=number, seed=seed)
            try:
                run, produced = producer.produce(request, golden.universe.query_ids)
            except RunnerFailed as failure:
                if isinstance(failure, RunMissing):
                    rerun_missing = failure  # planned and handed out, never came: as any planned run
                repeat_warning = (f"the candidate's repeat {number}/{total} could not be run ({failure.message}): "
                                  f"decided on {counted(len(candidate_values), 'run', 'runs')}")
                return
            values = evaluate_all(run, golden, measures, config.golden.rel)
            candidate_values.append(values)
            rerun_seeds.append(seed)
            progress(f"candidate repeat {number}/{total}: {metric} "
                     f"{values.subset(reporting.query_ids).mean(metric):.4f} ({produced.seconds:.1f}s)")

    def look(alpha: float) -> dict[str, Any]:
        """The statistics of one look, written into the report: on single runs, or on the
        per-query means of the candidate's runs and the baseline's stored repeats."""
        # As many baseline runs as candidate runs: under no change the two means are then
        # exchangeable, so their difference is symmetric, as the sign-flip test assumes (means of
        # 5 and of 11 runs of a skewed noise differ by a skewed amount).
        runs_c = runs_b = len(candidate_values)
        base_all = baseline.values if runs_c == 1 else mean_values([baseline.values,
                                                                     *plan.baseline_repeats[:runs_c - 1]])
        cand_all = candidate if runs_c == 1 else mean_values(candidate_values)
        base_r = base_all.subset(reporting.query_ids)
        cand_r = cand_all.subset(reporting.query_ids)
        band = None if threshold is None else rep.scaled_threshold(threshold, runs_c, runs_b)
        paired = compare_paired(base_r.values[metric], cand_r.values[metric],
                                samples=stats.samples, seed=stats.seed, method=stats.ci_method)
        report.update(paired_section(metric, Universe(reporting.query_ids, golden.universe.unjudged), base_r,
                                     cand_r, paired, strata))
        report["baseline"] = {**baseline_info, "mean": _num(base_r.mean(metric))}
        report["candidate"] = {"mean": _num(cand_r.mean(metric)), "source": candidate_source}
        if reporting.excluded_leaked or reporting.held_out_only:
            # every judged query, on the same runs (or means) as the look: never single runs beside means
            everything = compare_paired(base_all.values[metric], cand_all.values[metric],
                                        samples=stats.samples, seed=stats.seed, method=stats.ci_method)
            report["delta_all_queries"] = {
                "query_count": len(golden.universe.query_ids), "mean": _num(everything.mean),
                "ci_low": _num(everything.ci_low), "ci_high": _num(everything.ci_high),
            }
            if reporting.excluded_leaked:
                carried = everything.mean - paired.mean
                report["leakage"]["delta_with_leaked"] = _num(everything.mean)
                report["leakage"]["delta_without_leaked"] = _num(paired.mean)
                # A win the leaked queries carry: shown with them, not without them.
                report["leakage"]["win_carried_by_leaks"] = bool(
                    everything.ci_low > 0 and not paired.ci_low > 0 and carried > 0)
        shown = status if band is None or runs_c == 1 else dataclasses.replace(
            status, band=dataclasses.replace(status.band, overall=dataclasses.replace(status.band.overall,
                                                                                      threshold=band)))
        exceeded, words = band_sentence(paired.mean, shown, f"retrieval-gate archive --noise-repeats "
                                                            f"{config.noise.repeats} --config {config.path.name}",
                                        (paired.ci_low, paired.ci_high))
        if runs_c > 1 and band is not None:
            words += f" (scaled to means of {runs_c} candidate and {runs_b} baseline runs)"
        report["noise_band"] = {
            "runs": None if status.band is None else status.band.runs,
            "sd": None if status.band is None else status.band.overall.sd,
            "range": None if status.band is None else status.band.overall.range,
            "threshold": band,
            "delta_sd": None if status.band is None else status.band.overall.delta_sd,
            "exceeded": exceeded,
            "stale": status.state == "stale",
            "state": status.state,
            "reason": status.reason,
            "sentence": words,
            "strata": {} if status.band is None else {
                k: rep.scaled_threshold(v.threshold, runs_c, runs_b) for k, v in status.band.strata.items()},
            "unstable_queries": 0 if status.band is None else len(status.band.unstable),
            "tie_floor": floor.to_dict(),
            "calibration": calibration,
        }
        noise = None if stratum_noise is None else {
            name: rep.scaled_threshold(value, runs_c, runs_b) for name, value in stratum_noise.items()}
        block = strata_section(base_r, cand_r, metric, strata, spec, baseline_run=baseline.run,
                               candidate_run=candidate_run, qrels=golden.qrels, queries=golden.queries,
                               noise_threshold=noise, min_effect=config.policy.min_effect,
                               margin=config.policy.max_regression, samples=stats.samples, seed=stats.seed,
                               method=stats.ci_method, alpha=STRATA_ALPHA / plan.looks)
        if "lift" in block:
            block["lift"] = _lift_shown(block["lift"], config, options.out)
        report.update(block)
        d = cand_r.values[metric] - base_r.values[metric]
        weighed = decision_evidence(d, policy.max_regression, stats.samples, stats.seed, alpha=alpha)
        report["decision"] = {"rule": policy.decision, "mode": policy.mode, **weighed.to_dict(),
                              "min_movers": MIN_MOVERS}
        power = detectable(d, policy.max_regression, band, alpha)
        report["power"] = power.to_dict()
        return {"paired": paired, "block": block, "evidence": weighed, "band": band, "d": d,
                "runs": (runs_c, runs_b), "alpha": alpha, "power": power}

    if plan.looks == 1 and plan.possible and config.noise.rerun == "always":
        progress(f"noise.rerun always: running the candidate {counted(plan.candidate_runs - 1, 'more time', 'more times')}")
        rerun(plan.candidate_runs - 1)
    first = look(rep.look_alpha(plan.looks))
    strata_block = first["block"]
    attribution = None
    missing: RunMissing | None = None
    try:
        attribution = attribute(config, golden, baseline, baseline.run, candidate_run, retrieval, diff,
                                reporting.query_ids, metric, producer, candidate_seconds, progress, code)
    except RunnerFailed as failure:
        if isinstance(failure, RunMissing):
            missing = failure
        report["attribution"] = {"error": f"a grid cell could not be run: {failure.message}"}
        # A cell the gate's own runner failed on: the verdict stands on baseline and candidate,
        # but the comment says loudly that the credit for the bundled changes is missing, and
        # why. (A planned cell missing from runs-dir makes the verdict inconclusive below.)
        report["warnings"] = [*report.get("warnings", []), f"no attribution: {failure.purpose}: {failure.message}"]
    sweep_warning = None
    from gate.pipeline.grid import gate_sweep, swept_changes

    changed_swept = swept_changes(config, [c.path for c in diff])
    if changed_swept:
        progress(f"sweep: this PR changes {', '.join(changed_swept)}; scoring the sweep grid around it")
        try:
            report["sweep"], sweep_warning = gate_sweep(
                config, golden, retrieval, producer, runner_queries_path(golden, producer.work_dir), code, progress,
                changed_swept, reporting.query_ids, report["candidate"]["mean"], samples=stats.samples,
                seed=stats.seed)
        except RunnerFailed as failure:
            if isinstance(failure, RunMissing):
                missing = missing or failure
            report["warnings"] = [*report.get("warnings", []), f"no sweep: {failure.purpose}: {failure.message}"]
        except InputError as error:  # the sweep cannot be made on this yardstick (e.g. more folds than queries)
            report["warnings"] = [*report.get("warnings", []), f"no sweep: {error}"]
    if sweep_warning:
        report["warnings"] = [*report.get("warnings", []), sweep_warning]
    if attribution is not None:
        from gate.statistics.attribution import GridRefused

        if isinstance(attribution, GridRefused):
            report["attribution"] = {"refused": attribution.reason}
        else:
            report["attribution"] = attribution.to_dict()
    identical = baseline.run is not None and same_rankings(baseline.run, candidate_run, reporting.query_ids)

    def findings_of(current: dict[str, Any]) -> Findings:
        paired = current["paired"]
        return Findings(
            metric=metric, query_count=len(reporting.query_ids), delta=paired.mean, ci_low=paired.ci_low,
            ci_high=paired.ci_high, mde=current["power"].regression_80, noise_threshold=current["band"],
            evidence=current["evidence"], reporting_set=reporting.to_dict(),
            warnings=(*validity.warnings, *filter(None, [sweep_warning, repeat_warning])),
            **validity_findings(validity),
            **traffic_findings(current["block"]),
            identical_rankings=identical)

    def look_record(current: dict[str, Any], decided: Verdict) -> rep.Look:
        e = current["evidence"]
        low = min(e.t_low, e.hall_low) if policy.mode == "non-inferiority" else e.t_low
        return rep.Look(*current["runs"], alpha=current["alpha"], kind=decided.kind,
                        codes=tuple(r.code for r in decided.reasons if r.code != "warning"),
                        delta=current["paired"].mean, low=low, high=e.t_high, band=current["band"])

    findings = findings_of(first)
    verdict = decide(findings, policy)
    looks = [look_record(first, verdict)]
    why, share = plan.reason, None
    if plan.looks == 2:
        share = rep.noise_share(first["d"], rep.noise_variance(
            [pq.subset(reporting.query_ids).values[metric] for pq in (baseline.values, *plan.baseline_repeats)]))
        undecided = rep.undecided_by_noise(policy.mode, [r.code for r in verdict.reasons], first["evidence"],
                                           policy.max_regression, first["band"], share)
        if failures_of(findings, policy):
            why = "not rerun: the verdict fails on its validity or traffic checks, which a rerun cannot change"
        elif identical:
            why = "not rerun: the candidate ranks every query as the baseline does"
        elif undecided is None:
            why = (f"not rerun: the first look decided (run-to-run noise is {share:.0%} of the per-query spread; "
                   f"reruns need {rep.NOISE_SHARE_TO_RERUN:.0%} and an undecided verdict)")
        else:
            more = plan.candidate_runs - 1
            progress(f"first look undecided ({undecided}): running the candidate "
                     f"{counted(more, 'more time', 'more times')}")
            rerun(more)
            if len(candidate_values) > 1:
                second = look(first["alpha"])
                strata_block = second["block"]
                verdict = decide(findings_of(second), policy)
                looks.append(look_record(second, verdict))
                why = f"rerun: {undecided}" + (f" ({plan.reason.partition('; ')[2]})"
                                               if plan.candidate_runs < config.noise.candidate_runs else "")
            else:
                # The first look was undecided and the reruns that were to decide it never came:
                # its verdict at ALPHA / 2 is not a decision (it could pass what one look at ALPHA
                # fails), so the PR is inconclusive, as when any run the gate needs fails.
                verdict = decide(findings_of(first), policy)
                looks[0] = look_record(first, verdict)
                why = f"rerun failed: {repeat_warning}"
                if rerun_missing is None:
                    verdict = inconclusive("runner_failed", f"the first look was undecided ({undecided}) and "
                                           f"{repeat_warning}", policy, reporting.to_dict())
    missing = missing or rerun_missing
    if config.noise.candidate_runs > 1:
        if plan.looks == 1 and plan.possible and config.noise.rerun == "always":
            why = (f"noise.rerun always: every run up front ({plan.reason})" if repeat_warning is None
                   else f"noise.rerun always: {repeat_warning}")
        report["repeats"] = rep.Repeats(config.noise.candidate_runs, config.noise.rerun, tuple(looks), why,
                                        share, tuple(rerun_seeds)).to_dict()
    if missing is not None:
        # The runs were planned and handed out (plan -> produce -> gate): one that never came
        # leaves the set incomplete, and a verdict on part of what was asked for is not given.
        verdict = inconclusive("missing_run", f"the planned run {missing.purpose} ({missing.key}) is not in the "
                               "runs folder: its produce step or matrix entry failed or did not upload it; rerun "
                               "that entry, then the gate", policy, reporting.to_dict())
    if report.get("judged") is not None:
        report["judged"]["failures"] = [r.message for r in verdict.reasons if r.code == "judged_share"]
    report["verdict"] = verdict.to_dict()
    report["elapsed_seconds"] = round(time.monotonic() - started, 3)
    return GateOutcome(report, verdict, baseline, candidate, extras={"validity": validity, "candidate_run": candidate_run})


def validity_findings(validity: Validity) -> dict[str, Any]:
    """The validity checks' numbers, as :class:`gate.verdict.rules.Findings` takes them."""
    out: dict[str, Any] = {}
    if validity.leakage is not None:
        out["new_leaks"] = len(validity.leakage.new)
        sources = validity.leakage.candidate.sources()
        out["leak_sources"] = tuple(doc for doc, _ in sources[:3])
        out["leak_source_count"] = len(sources)
    if validity.judged is not None:
        waived = validity.judged.limits_waived  # judged.qrels_style: relevance-only, and the qrels are
        out.update(judged_k=validity.judged.k, unjudged_share=None if waived else 1 - validity.judged.candidate.mean,
                   judged_drop=None if waived else validity.judged.drop,
                   relevance_only_qrels=validity.judged.relevance_only)
    if validity.tuning is not None:
        out["tuning_overlap"] = tuple(validity.tuning.overlap)
    out["check_problems"] = (*(validity.tuning.problems if validity.tuning is not None else ()),
                             *(validity.prompts.problems if validity.prompts is not None else ()))
    return out


def declared_factors(config: Config) -> dict[str, list[str]]:
    """``attribution.factors`` checked: names as ``--factor`` takes them, each a non-empty list
    of dotted paths, no path (or a path below it) in two factors - a path claimed twice would
    switch in two cells at once and hand one factor's effect to the other."""
    declared = config.attribution.factors or {}
    out: dict[str, list[str]] = {}
    owner: dict[str, str] = {}
    for name, paths in declared.items():
        name = str(name)
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
        for path in paths:
            for other, by in owner.items():
                if by != name and (path == other or path.startswith(other + ".") or other.startswith(path + ".")):
                    raise config.key_error("attribution.factors", f"'{path}' (factor '{name}') overlaps '{other}' "
                                           f"(factor '{by}'): a path belongs to one factor")
            owner[path] = name
        out[name] = list(paths)
    return out


def grid_factors(config: Config, diff) -> dict[str, list[str]]:
    """Factor name -> the changed dotted paths it switches."""
    changed = [c.path for c in diff]
    declared = declared_factors(config)
    factors: dict[str, list[str]] = {}
    claimed: set[str] = set()
    for name, paths in declared.items():
        hits = [c for c in changed if any(c == p or c.startswith(p + ".") for p in paths)]
        if hits:
            factors[name] = hits
            claimed.update(hits)
    for path in changed:
        if path not in claimed:
            group = path.split(".")[0]
            if group in declared:
                raise config.key_error("attribution.factors", f"the change to '{path}' is in no declared factor, "
                                       f"and its group '{group}' is the name of one: list the path under a factor "
                                       "or rename the factor")
            factors.setdefault(group, []).append(path)
    return factors


def corpus_factor_of(config: Config, factors: dict[str, list[str]]) -> str | None:
    """The factor that switches the corpus snapshot (its keys fill the corpus path)."""
    import re

    if not config.corpus:
        return None
    named = set(re.findall(r"\{([A-Za-z0-9_.\-]+)\}", config.corpus))
    for name, paths in factors.items():
        if named & set(paths):
            return name
    return None


def grid_cells(config: Config, baseline_config: RetrievalConfig, retrieval: RetrievalConfig,
               factors: dict[str, list[str]]) -> list[tuple[tuple[str, ...], str, RetrievalConfig]]:
    """Every cell of the 2^k grid as (levels, label, the retrieval config it runs), all-old first.

    A cell at level "new" for a factor takes the candidate's values of that factor's paths.
    ``plan`` lists the mixed cells (the corners are the baseline and the candidate); ``run``
    produces them.
    """
    import itertools

    from gate.inputs.retrieval_config import ABSENT

    names = list(factors)
    candidate_flat = retrieval.flat()
    cells = []
    for levels in itertools.product(("old", "new"), repeat=len(names)):
        switched = {path: candidate_flat.get(path, ABSENT)
                    for name, level in zip(names, levels) if level == "new" for path in factors[name]}
        label = ",".join(f"{n}={l}" for n, l in zip(names, levels))
        cells.append((levels, label, baseline_config.with_values(switched) if switched else baseline_config))
    return cells


def attribution_applies(config: Config, factors: dict[str, list[str]]) -> bool:
    """Whether ``run`` analyses a grid: two to ``attribution.max_factors`` changed factors."""
    return bool(config.attribution.enabled) and 2 <= len(factors) <= config.attribution.max_factors


def attribute(config: Config, golden: Golden, baseline: ResolvedBaseline, baseline_run: Run, candidate_run: Run,
              retrieval: RetrievalConfig, diff, query_ids: Sequence[str], metric: str, producer: RunProducer,
              candidate_seconds: float, progress: Progress, code: CodeIdentity | None = None):
    """The 2^k grid of the changed factors: run the missing cells, then analyse (or label a bundle)."""
    from gate.statistics.attribution import CellProvenance, GridRefused, analyze_grid, bundle_result

    factors = grid_factors(config, diff)
    names = list(factors)
    stats = config.statistics
    max_factors = config.attribution.max_factors
    if len(names) < 2:
        return None  # one change (or none): the headline delta is its effect, disabled or not
    if not config.attribution.enabled or len(names) > max_factors:
        return bundle_result(names, max_factors, disabled=not config.attribution.enabled, metric=metric,
                             samples=stats.samples, seed=stats.seed)
    queries_path = runner_queries_path(golden, producer.work_dir)
    measure = parse_measure(metric)
    values, seconds, provenance, info = {}, {}, {}, {}
    started = time.monotonic()
    for levels, label, cell_config in grid_cells(config, baseline.config, retrieval, factors):
        snapshot = golden.corpus(cell_config)
        if all(level == "old" for level in levels):
            run, cell_seconds = baseline_run, (baseline.produced.seconds if baseline.produced else 0.0)
            source = "baseline"
        elif all(level == "new" for level in levels):
            run, cell_seconds, source = candidate_run, candidate_seconds, "candidate"
        else:
            progress(f"attribution: cell {label}")
            run, produced = producer.produce(run_request(f"grid cell {label}", cell_config, golden, queries_path,
                                                         code=code),
                                             golden.universe.query_ids)
            cell_seconds, source = produced.seconds, produced.source
        per_query = evaluate(run, golden.qrels, [measure], query_ids, rel=config.golden.rel)
        values[levels] = per_query.values[str(measure.with_default_rel(config.golden.rel))]
        seconds[levels] = cell_seconds
        provenance[levels] = CellProvenance(golden.queries_record.sha256, golden.qrels_record.sha256,
                                            None if snapshot is None else snapshot.record.sha256)
        info[levels] = {"source": source, "config_sha256": cell_config.sha256}
    try:
        return analyze_grid(names, values, list(query_ids), metric, stats.samples, stats.seed, seconds,
                            corpus_factor_of(config, factors), provenance=provenance,
                            grid_seconds=time.monotonic() - started + candidate_seconds, max_factors=max_factors,
                            ci_method=stats.ci_method, cell_info=info)
    except GridRefused as refused:
        return refused


# --------------------------------------------------------------------------- repeats


@dataclass(frozen=True)
class RepeatPlan:
    """Whether this run may rerun the candidate (``noise.candidate_runs`` > 1), and against what."""

    looks: int  # 1, or 2 when adaptive reruns are possible (each look at ALPHA / 2)
    possible: bool
    reason: str  # why reruns are (not) possible
    baseline_repeats: tuple[PerQuery, ...] = ()  # the stored identical runs of the baseline's config
    candidate_runs: int = 1  # runs in all: noise.candidate_runs, at most the baseline's runs


def repeat_plan(config: Config, options: RunOptions, status: BandStatus, golden: Golden,
                baseline: ResolvedBaseline, measures: Sequence[Measure],
                stored: tuple[dict | None, list[Run] | None]) -> RepeatPlan:
    """Decided before the first look, from the setting, the runner and the stored band alone,
    so that the level each look is tested at never depends on what the first look saw."""
    from gate.statistics.repeats import looks

    wanted = config.noise.candidate_runs
    if wanted <= 1:
        return RepeatPlan(1, False, "noise.candidate_runs is 1")
    if options.candidate_run is not None or (config.runner.type == "run-file" and config.runner.candidate_run):
        return RepeatPlan(1, False, "not rerun: the candidate is a run file, and a rerun needs the config's runner")
    if status.band is None:
        return RepeatPlan(1, False, f"not rerun: no usable noise band ({status.reason})")
    if not status.band.threshold > 0:
        return RepeatPlan(1, False, "not rerun: identical runs of this stack score alike (noise band 0), so a "
                                    "rerun repeats the first run")
    data, runs = stored
    if not runs:
        return RepeatPlan(1, False, "not rerun: the noise band has no stored repeat runs of the baseline "
                                    f"(retrieval-gate archive --noise-repeats {config.noise.repeats} stores them)")
    fingerprint = ((data or {}).get("fingerprints") or {}).get("config")
    if fingerprint != baseline.config.sha256:
        return RepeatPlan(1, False, "not rerun: the stored repeat runs are not runs of the baseline's retrieval "
                                    "config (archive --noise-repeats again)")
    if any(missing_queries(run, golden.universe.query_ids) for run in runs):
        return RepeatPlan(1, False, "not rerun: the stored repeat runs do not cover today's golden queries")
    repeats = tuple(evaluate_all(run, golden, measures, config.golden.rel) for run in runs)
    usable = min(wanted, 1 + len(repeats))
    capped = (f"; {usable} runs, not {wanted}: each mean is over as many baseline runs (the archived run and "
              f"{len(repeats)} repeats)" if usable < wanted else "")
    return RepeatPlan(looks(usable, config.noise.rerun), True,
                      f"{len(repeats)} stored baseline repeats, noise band ±{status.band.threshold:.3f}{capped}",
                      repeats, usable)


def mean_values(runs: Sequence[PerQuery]) -> PerQuery:
    """Per-query means of several evaluations aligned on one query list (every measure)."""
    first = runs[0]
    if any(r.query_ids != first.query_ids for r in runs):
        raise ValueError("repeat evaluations must be aligned on one query list")
    import numpy as np

    values = {name: np.mean(np.vstack([r.values[name] for r in runs]), axis=0) for name in first.values}
    return dataclasses.replace(first, values=values)


def planned_candidate_runs(config: Config, manifest: Manifest | None) -> int:
    """The candidate's runs ``plan`` lists: ``noise.candidate_runs``, at most the archived run and
    the repeats stored with the baseline ``manifest`` (as many as ``run_gate`` can use), and
    one when the stored band has no repeat runs of that baseline's config or is zero."""
    wanted = config.noise.candidate_runs
    band = (manifest.extra.get("noise_band") if manifest is not None else None) or {}
    names = band.get("runs_files") or []
    fingerprint = (band.get("fingerprints") or {}).get("config") if isinstance(band, dict) else None
    threshold = band.get("threshold") if isinstance(band, dict) else None
    if (wanted <= 1 or not isinstance(names, list) or not names or fingerprint != manifest.config_sha256
            or not isinstance(threshold, (int, float)) or not threshold > 0):
        return 1
    return min(wanted, 1 + len(names))


def repeat_alpha(config: Config) -> float:
    """The level the deciding look is tested at under this config's repeat setting."""
    from gate.statistics.repeats import look_alpha, looks

    return look_alpha(looks(config.noise.candidate_runs, config.noise.rerun))


def _setup_with_repeats(config: Config, setup: Mapping[str, Any] | None, progress: Progress,
                        available: int) -> None:
    """With ``noise.candidate_runs`` above 1, the setup check once more for means of that many
    runs (at most the ``available`` baseline runs)."""
    from gate.statistics.repeats import setup_with_repeats

    runs = min(config.noise.candidate_runs, available)
    more = setup_with_repeats(dict(setup or {}), runs, config.noise.rerun) if setup and runs > 1 else None
    if more:
        progress(f"setup ({config.policy.mode} mode), {more}")


def stored_band(config: Config, manifest: Manifest | None) -> tuple[dict | None, list[Run] | None]:
    """The band stored with the manifest (and its repeat runs), else the config's noise.file."""
    from gate.common.limits import MAX_RECORD_FILE_BYTES
    from gate.inputs.readers.fields import parse_json_document
    from gate.inputs.readers.textlines import read_text_file
    from gate.statistics.noise import check_band_dict

    if manifest is not None and manifest.extra.get("noise_band") is not None:
        data = check_band_dict(manifest.extra["noise_band"], str(manifest.manifest_path))
        names = data.get("runs_files") or []
        if not isinstance(names, list) or not all(isinstance(n, str) and "/" not in n and n not in ("", ".", "..")
                                                  for n in names):
            raise InputError(str(manifest.manifest_path), None, "noise band 'runs_files' must be file names of "
                             "the baseline folder")
        return data, [read_run(manifest.folder / name) for name in names]
    path = config.resolve(config.noise.file) if config.noise.file else None
    if path is not None and path.exists():
        return check_band_dict(parse_json_document(str(path), read_text_file(path, "a noise band", limit=MAX_RECORD_FILE_BYTES)), str(path)), None
    return None, None


def _still_valid_band(config: Config, golden: Golden, retrieval, primary: Measure,
                      progress: Progress) -> tuple[dict[str, Any], dict[str, bytes]] | None:
    """A plain ``archive`` (no ``--noise-repeats``) keeps the band stored with the previous
    baseline while it still applies (same metric, corpus, index-building keys, queries and
    qrels), repeat runs included; a band that no longer applies is dropped, and said so."""
    from gate.inputs.manifest import load_manifest

    path = config.resolve(config.manifest)
    if not path.exists():
        return None
    try:
        manifest = load_manifest(path)
        data, runs = stored_band(config, manifest)
    except InputError:
        return None
    if data is None or manifest.extra.get("noise_band") is None:
        return None
    status = applicable_band(data, runs, golden, retrieval, primary, config.golden.rel)
    if status.state != "current":
        progress(f"the stored noise band is not kept: {status.reason} (archive --noise-repeats N measures a new one)")
        return None
    files = {}
    for name in data.get("runs_files") or []:
        try:
            files[name] = (path.parent / name).read_bytes()
        except OSError:
            progress(f"the stored noise band is not kept: its repeat run {name} is missing")
            return None
    progress(f"the stored noise band is kept ({status.reason})")
    return dict(manifest.extra["noise_band"]), files


def noise_status(config: Config, golden: Golden, baseline: ResolvedBaseline, metric: str,
                 measures: Sequence[Measure],
                 stored: tuple[dict | None, list[Run] | None]) -> tuple[BandStatus, dict | None]:
    """The band that applies (``stored``: :func:`stored_band`'s), and the A/A calibration stored
    with it (when current)."""
    data, runs = stored
    measure = next(m for m in measures if str(m) == metric)
    status = applicable_band(data, runs, golden, baseline.config, measure, config.golden.rel)
    calibration = (data or {}).get("calibration") if status.state == "current" else None
    return status, calibration if isinstance(calibration, dict) else None


def _id_list(value: Any, config: Config, key: str) -> list[str] | None:
    """Query ids from a config value: a list of ids, or a file of ids, one per line (a query
    file, TSV or JSONL, lists its ids too; see read_query_ids)."""
    if value is None:
        return None
    if isinstance(value, list):
        return [str(v) for v in value]
    if isinstance(value, str):
        from gate.inputs.readers.queries import load_query_ids

        return load_query_ids(config.spec(value))
    raise InputError(str(config.path), None, f"key '{key}': expected a query file or a list of query ids")


def baseline_corpus(config: Config, golden: Golden, baseline: ResolvedBaseline, base: str | None,
                    progress: Progress) -> tuple[str | None, str | None, str]:
    """The corpus the baseline indexed, as of the baseline's commit: (path, sha256, how).

    Read from the workspace, a chunk the PR adds to the same file would count as already in the
    baseline's corpus (a planted leak tagged "both"). So the file comes from git at the base
    commit (or the archive's commit); a snapshot outside git is the workspace's file only when
    its fingerprint is still the one the manifest recorded. Otherwise (None, None, why): the
    baseline's corpus is unknown and every leak counts as new.
    """
    snapshot = golden.corpus(baseline.config)
    if snapshot is None:
        return None, None, "the baseline indexes no corpus"
    if is_spec(snapshot.path):
        return snapshot.path, snapshot.record.sha256, "an ir_datasets corpus (fixed)"
    commit = base or (baseline.manifest.git_commit if baseline.manifest is not None else None)
    path = Path(snapshot.path)
    if commit is not None and git.repo_root(config.workspace_root) is not None:
        from gate.inputs.readers.corpus import is_file_tree

        if is_file_tree(path):  # a folder of files: the folder as of that commit
            target = work_dir_of(config) / "base-corpus" / commit[:12] / (path.name or "corpus")
            exported = git.export_tree(config.workspace_root, commit, path, target)
        else:
            file = path / "corpus.jsonl" if path.is_dir() else path
            target = work_dir_of(config) / "base-corpus" / commit[:12] / file.name
            exported = git.export_file(config.workspace_root, commit, file, target)
        if exported:
            from gate.inputs.fingerprint import corpus_fingerprint

            return str(target), corpus_fingerprint(target).sha256, f"as of commit {commit[:12]}"
    recorded = baseline.manifest.corpus.sha256 if baseline.manifest is not None and baseline.manifest.corpus else None
    if recorded is not None and recorded == snapshot.record.sha256:
        return snapshot.path, snapshot.record.sha256, "outside git, unchanged since the archive (same fingerprint)"
    progress(f"leakage: the baseline's corpus {snapshot.record.id} cannot be read as of its commit and differs from "
             "the archived fingerprint: every leak counts as new")
    return None, None, "not readable as of the baseline's commit: every leak counts as new"


def check_validity(config: Config, golden: Golden, baseline: ResolvedBaseline, candidate_run: Run,
                   candidate: PerQuery, retrieval: RetrievalConfig, diff, metric: str,
                   strata: dict[str, str | None], progress: Progress, base: str | None = None,
                   not_prompts: Sequence[Path] = ()) -> Validity:
    universe = golden.universe.query_ids
    leakage = None
    candidate_snapshot = golden.corpus(retrieval)
    if config.leakage.enabled and candidate_snapshot is not None:
        base_path, base_sha, how = baseline_corpus(config, golden, baseline, base, progress)
        progress(f"leakage: scanning {candidate_snapshot.record.id} ({candidate_snapshot.record.count} chunks)"
                 + ("" if base_sha == candidate_snapshot.record.sha256 or base_path is None
                    else f" and the baseline's corpus ({how})"))
        golden_queries = [q for q in golden.queries.queries if q.query_id in set(universe)]
        leakage = compare_leakage(
            golden_queries, base_path, candidate_snapshot.path, base_sha, candidate_snapshot.record.sha256,
            modes=config.leakage.modes, threshold=config.leakage.threshold, min_tokens=config.leakage.min_tokens,
        )
        leakage = dataclasses.replace(leakage, baseline_source=how)
    judged = judged_check(baseline.run, candidate_run, baseline.values, candidate, golden.qrels, universe, metric,
                          strata, k=config.judged.k, rel=config.golden.rel, max_unjudged=config.policy.max_unjudged,
                          max_judged_drop=config.policy.max_judged_drop, qrels_style=config.judged.qrels_style)
    tuning = None
    tuning_ids = _id_list(config.tuning.queries, config, "tuning.queries")
    changes = [(c.path, c.old, c.new) for c in diff]
    if tuning_ids is not None or config.tuning.params or any(looks_tunable(*c) for c in changes):
        tuning = tuning_check(universe, [c.path for c in diff], config.tuning.params, tuning_ids,
                              _id_list(config.tuning.holdout, config, "tuning.holdout"), changes)
    prompts = None
    if config.prompts:
        relevant = {doc for docs in golden.qrels.judgments.values() for doc, label in docs.items()
                    if label >= config.golden.rel}
        texts: dict[str, str] = {}
        if candidate_snapshot is not None and relevant:
            from gate.inputs.readers.corpus import iter_corpus

            for chunk in iter_corpus(candidate_snapshot.path, check_duplicates=False):
                if chunk.chunk_id in relevant or chunk.doc_id in relevant:
                    key = chunk.chunk_id if chunk.chunk_id in relevant else chunk.doc_id
                    texts[key] = (texts.get(key, "") + " " + chunk.text).strip()
        prompts = scan_prompts(config.workspace_root, config.prompts, golden.queries.queries, golden.qrels, texts,
                               rel=config.golden.rel, threshold=config.leakage.threshold,
                               min_tokens=config.leakage.min_tokens,
                               exclude=[config.workspace_root / ".retrieval-gate", *not_prompts])
    reporting = reporting_set(universe, leakage, tuning, config.policy.exclude_leaked)
    return Validity(leakage, judged, tuning, prompts, reporting, tuple(validity_warnings(tuning, prompts)))


def score_orders(baseline_run: Run | None, candidate_run: Run, query_ids: Sequence[str]) -> dict[str, Any]:
    """:func:`gate.checks.score_order.score_order` of each run, over the judged golden queries."""
    from gate.checks.score_order import score_order

    orders = {} if baseline_run is None else {"baseline": score_order(baseline_run, query_ids, "baseline")}
    orders["candidate"] = score_order(candidate_run, query_ids, "candidate")
    return orders


def validity_section(validity: Validity) -> dict[str, Any]:
    section: dict[str, Any] = {
        "leakage": None if validity.leakage is None else validity.leakage.to_dict(),
        "judged": None if validity.judged is None else validity.judged.to_dict(),
        "tuning": None if validity.tuning is None else validity.tuning.to_dict(),
        "prompts": None if validity.prompts is None else validity.prompts.to_dict(),
        "reporting_set": validity.reporting.to_dict(),
        "warnings": list(validity.warnings),
    }
    return section


def _tool() -> dict[str, Any]:
    from gate import __version__

    return {"name": "retrieval-gate", "version": __version__}



# --------------------------------------------------------------------------- replay / plan


@dataclass(frozen=True)
class ReplayResult:
    baseline: ResolvedBaseline | None
    problem: Incommensurable | None

    def to_dict(self) -> dict[str, Any]:
        if self.baseline is None:
            assert self.problem is not None
            return {"resolved": False, "reason": self.problem.message, "code": self.problem.code,
                    "differences": self.problem.differences}
        return {"resolved": True, **self.baseline.to_dict(),
                "mean": self.baseline.values.mean(next(iter(self.baseline.values.values)))}


def replay(config: Config, runs_dir: Path | None = None, base: str | None = None,
           progress: Progress = stderr_progress) -> ReplayResult:
    primary, others = measures_of(config)
    check_config(config)
    check_base(config, base)
    golden = load_golden(config)
    producer = make_producer(config, runs_dir, progress)
    try:
        resolved = resolve_baseline(config, golden, (primary, *others), str(primary), producer, base,
                                    candidate_code=code_under_test(config, runs_dir))
    except Incommensurable as problem:
        return ReplayResult(None, problem)
    return ReplayResult(resolved, None)


@dataclass(frozen=True)
class PlannedRun:
    purpose: str
    key: str
    config_file: str
    queries: str
    corpus: str | None
    output: str
    needed: bool
    why: str
    # The commit whose code must produce the run (a baseline replayed or reconstructed is
    # measured with the baseline's code); None: the workspace, the PR's code.
    code_commit: str | None = None
    repeat: int = 0  # a noise repeat's number (1..N), 0 for every other run
    seed: int = 0  # the seed the runner is given for it ({seed}, RETRIEVAL_GATE_SEED)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def plan(config: Config, runs_dir: Path | None = None, base: str | None = None,
         noise_repeats: int = 0, sweep: bool = False) -> list[PlannedRun]:
    """Every run the gate needs for this PR, with the key an earlier step must name it by; with
    ``noise_repeats`` N, also the N identical runs of the config that ``archive --noise-repeats N``
    (or ``noise --repeats N``) measures the noise band from; with ``sweep``, every cell of the
    config's ``sweep.params`` grid (``retrieval-gate sweep`` then finds them in the runs folder).
    A run two purposes share (a sweep cell that is the candidate's config) is listed once."""
    check_config(config)
    check_base(config, base)
    golden = load_golden(config)
    producer = make_producer(config, runs_dir, lambda message: None)
    queries_path = runner_queries_path(golden, producer.work_dir)
    runs_folder = runs_dir or Path(".retrieval-gate/runs")
    try:
        runs_folder.mkdir(parents=True, exist_ok=True)  # ready for the step that produces them
    except OSError as error:
        raise InputError(str(runs_folder), None, f"cannot create the runs folder: {error.strerror or error}") from None
    planned: list[PlannedRun] = []

    code = code_under_test(config, runs_dir)

    def add(purpose: str, retrieval: RetrievalConfig, needed: bool, why: str, code: CodeIdentity | None,
            repeat: int = 0, seed: int = 0) -> None:
        request = run_request(purpose, retrieval, golden, queries_path, code=code, repeat=repeat, seed=seed)
        key = producer.key(request)
        if any(entry.key == key for entry in planned):
            return
        if code is not None and code.commit is not None and code.known:
            why += f"; from the code of commit {code.commit[:12]}"
        commit = code.commit if code is not None and code.root is None else None
        planned.append(PlannedRun(purpose, key, str(producer.config_file(request, key)), queries_path,
                                  request.corpus, str(runs_folder / f"{key}.run"), needed, why, commit,
                                  repeat, seed))

    manifest_path = config.resolve(config.manifest)
    manifest = load_manifest(manifest_path) if manifest_path.exists() else None
    base_config = base_config_from_git(config.workspace_root, base, config.here(config.retrieval_config)) if base else None
    baseline_config = None
    baseline_manifest = None
    if manifest is not None and (base_config is None or base_config.sha256 == manifest.config_sha256):
        differences = {d.input for d in input_differences(manifest, golden, config.golden.rel)}
        from gate.runs.produce import missing_queries

        covered = not missing_queries(manifest.load_run(), golden.universe.query_ids)
        needed = "corpus" in differences or not covered
        why = ("the corpus changed" if "corpus" in differences else
               "current queries are missing from the archived lists" if not covered else
               "not needed: the archived lists are reused or re-scored")
        add("baseline replay", manifest.config, needed, why, commit_code(config, manifest.git_commit, runs_dir))
        baseline_config = manifest.config
        baseline_manifest = manifest  # its stored repeats are the baseline's
    elif base_config is not None:
        add("baseline reconstruction", base_config, True, "no usable archived manifest",
            commit_code(config, base, runs_dir))
        baseline_config = base_config
    candidate = load_retrieval_config(config.here(config.retrieval_config))
    add("candidate", candidate, True, "the PR's config", code)
    total = planned_candidate_runs(config, baseline_manifest)
    for number in range(2, total + 1):  # the requests run_gate's reruns make (same purpose, repeat, seed)
        add(f"candidate repeat {number}/{total}", candidate, True,
            "a rerun of the candidate, read when run-to-run noise leaves the first look undecided "
            "(noise.candidate_runs)" if config.noise.rerun == "adaptive" else "a run of the candidate, averaged "
            "per query (noise.candidate_runs, noise.rerun always)", code, repeat=number,
            seed=config.noise.base_seed + number)
    if baseline_config is not None:
        factors = grid_factors(config, config_diff(baseline_config, candidate))
        if attribution_applies(config, factors):
            for levels, label, cell_config in grid_cells(config, baseline_config, candidate, factors):
                if len(set(levels)) > 1:  # the corners are the baseline and the candidate
                    add(f"grid cell {label}", cell_config, True, "attribution of the bundled change", code)
    from gate.pipeline.grid import sweep_cells, swept_changes

    if sweep and not config.sweep.params:
        raise config.key_error("sweep.params", "plan --sweep: no sweep grid configured")
    changed_swept = swept_changes(config, [c.path for c in config_diff(baseline_config, candidate)]) \
        if baseline_config is not None else ()
    if sweep or changed_swept:
        why = ("a cell of the sweep grid" if not changed_swept
               else f"a cell of the sweep grid (this PR changes {', '.join(changed_swept)})")
        for cell in sweep_cells(config.sweep.params, candidate, config):
            add(f"sweep cell {cell.label}", cell.config, True, why, code)
    for repeat in range(1, noise_repeats + 1):  # the seeds measure_noise gives each repeat
        add(f"noise repeat {repeat}/{noise_repeats}", candidate, True, "an identical run for the noise band", code,
            repeat=repeat, seed=config.noise.base_seed + repeat)
    return planned
