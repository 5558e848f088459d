"""``retrieval-gate archive``: the baseline of the default branch, its manifest and runs."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate.checks.commensurability import (
    run_request,
)
from gate.checks.judged_share import qrels_style_notice
from gate.common.errors import InputError
from gate.common.numbers import listed
from gate.evaluation.measures import Measure
from gate.inputs import git
from gate.inputs.config import Config, is_spec
from gate.inputs.globs import matches
from gate.inputs.golden import Golden, load_golden
from gate.inputs.manifest import Manifest, environment_record, run_to_trec_gz, timings_record, write_manifest
from gate.inputs.readers.records import Run
from gate.inputs.readers.runs import read_run
from gate.inputs.readers.timings import Timings
from gate.inputs.retrieval_config import RetrievalConfig, load_retrieval_config
from gate.inputs.yardstick import config_globs
from gate.pipeline.repeat_runs import repeat_alpha, setup_check_with_repeats, still_valid_band
from gate.pipeline.stack import (
    Progress,
    check_config,
    code_under_test,
    environment_files,
    evaluate_all,
    gate_folders,
    make_producer,
    measures_of,
    runner_queries_path,
    stderr_progress,
)
from gate.runs.code import CodeIdentity
from gate.runs.produce import check_coverage, timings_of
from gate.runs.request import RunnerFailed
from gate.statistics.band import ANSWERED_EMPTY_KEY, measure_noise
from gate.statistics.power import setup_check
from gate.verdict.calibration import calibrate
from gate.verdict.levels import ALPHA, MIN_MOVERS, MOVERS_TO_SHOW


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
    retrieval_path = config.here(config.retrieval_config)
    assert retrieval_path is not None  # here() of a str is a Path
    retrieval = load_retrieval_config(retrieval_path)
    code = code_under_test(config, runs_dir)
    if run_path is None and config.runner.type == "run-file" and config.runner.baseline_run:
        run_path = config.here(config.runner.baseline_run)
    timings_path = config.here(config.runner.baseline_timings) if (
        run_path is not None and config.runner.baseline_timings) else None
    run, source, timings = _baseline_run(config, golden, retrieval, code, run_path, runs_dir, progress, timings_path)
    values = evaluate_all(run, golden, measures, config.golden.rel, retrieval)
    if noise_repeats:
        extra, extra_files = _measured_band(config, golden, retrieval, primary, code, runs_dir, progress,
                                            noise_repeats)
    else:
        extra, extra_files = _kept_band(config, golden, retrieval, primary, progress)
    if timings is not None:  # the baseline's latencies, for every PR that reuses it
        section, files = timings_record(timings.source)
        extra.update(section)
        extra_files = {**extra_files, **files}
    if code is not None:
        extra["code"] = code.to_dict()  # what the archived run was produced by (a replay runs the commit's)
    head = git.head_commit(config.workspace_root)
    if head is not None:
        _warn_unrecorded(config, golden, retrieval, head, runs_dir, run_path is None, progress)
    per_query = {
        name: {qid: float(v) for qid, v in zip(values.query_ids, array)} for name, array in values.values.items()
    }
    manifest_path = config.resolve(config.manifest)
    assert manifest_path is not None  # resolve() of a str is a Path
    snapshot = golden.corpus(retrieval)
    manifest = write_manifest(
        manifest_path.parent,
        suite=config.suite,
        config_path=config.retrieval_config,
        config=retrieval,
        corpus=None if snapshot is None else snapshot.record,
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


def _baseline_run(config: Config, golden: Golden, retrieval: RetrievalConfig, code: CodeIdentity | None,
                  run_path: Path | None, runs_dir: Path | None, progress: Progress,
                  timings_path: Path | None = None) -> tuple[Run, str, Timings | None]:
    """The run to archive: the file given (it must cover the golden queries; ``timings_path``: its
    sidecar, runner.baseline_timings), or the stack's own run of the config. Returns it, where it
    came from, and its timings (None: none)."""
    if run_path is not None:
        run = read_run(run_path)
        # Read before the coverage check: its "hits": 0 lines are queries answered with nothing.
        timings = None if timings_path is None else timings_of(timings_path, run, golden.queries.ids(), "file")
        try:
            check_coverage(run, golden.universe.query_ids, "archive", str(run_path), timings)
        except RunnerFailed as failure:
            raise InputError(str(run_path), None, failure.message) from None
        return run, "file", timings
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
    return run, produced.source, produced.timings


def _measured_band(config: Config, golden: Golden, retrieval: RetrievalConfig, primary: Measure,
                   code: CodeIdentity | None, runs_dir: Path | None, progress: Progress,
                   noise_repeats: int) -> tuple[dict[str, Any], dict[str, bytes]]:
    """``--noise-repeats N``: N identical runs measure the noise band, stored beside the manifest
    with the rule's calibration on them. Returns the manifest's extra record and files."""
    producer = make_producer(config, runs_dir, progress)
    measured = measure_noise(retrieval, golden, primary, producer, runner_queries_path(golden, producer.work_dir),
                             noise_repeats, config.golden.rel, config.noise.invalidate_on,
                             config.noise.base_seed, progress, code=code)
    extra_files: dict[str, bytes] = {}
    names = []  # one per repeat: identical runs share a file, named once for each
    for repeat_run in measured.runs:
        data = run_to_trec_gz(repeat_run)
        name = f"noise-run-{hashlib.sha256(data).hexdigest()[:16]}.trec.gz"
        extra_files[name] = data
        names.append(name)
    calibration = calibrate(measured.runs, golden.qrels_for(retrieval), golden.universe.query_ids, str(primary),
                            config.golden.rel, policy=config.policy,
                            samples=config.statistics.samples, seed=config.statistics.seed,
                            noise_threshold=measured.band.overall.threshold,
                            candidate_runs=config.noise.candidate_runs, rerun=config.noise.rerun)
    progress(f"calibration: {calibration.sentence}")
    assert calibration.setup is not None  # calibrate() always runs the setup check
    progress(f"setup ({config.policy.mode} mode): {calibration.setup['sentence']}")
    if calibration.setup_repeats:
        progress(f"setup ({config.policy.mode} mode), {calibration.setup_repeats['sentence']}")
    band = {**measured.band.to_dict(), "runs_files": names,
            "seconds": [round(x, 3) for x in measured.seconds], "calibration": calibration.to_dict()}
    if any(measured.answered_empty):  # what the stored TREC files cannot say (absent: none)
        band[ANSWERED_EMPTY_KEY] = [sorted(empty) for empty in measured.answered_empty]
    return {"noise_band": band}, extra_files


def _kept_band(config: Config, golden: Golden, retrieval: RetrievalConfig, primary: Measure,
               progress: Progress) -> tuple[dict[str, Any], dict[str, bytes]]:
    """No new repeats: the stored band kept while it is still valid, and the setup check said
    again (from the band's own calibration when the policy is the one it was measured under)."""
    extra: dict[str, Any] = {}
    extra_files: dict[str, bytes] = {}
    kept = still_valid_band(config, golden, retrieval, primary, progress)
    if kept is not None:
        extra["noise_band"], extra_files = kept
    # The kept band's calibration measured the stack's A/A spread; the policy may have changed since.
    calibration = (kept[0].get("calibration") or {}) if kept is not None else {}
    stored = calibration.get("setup") or {}
    setup = _setup_said(config, golden, kept, stored)
    progress(f"setup ({config.policy.mode} mode): {setup['sentence']}")
    again = calibration.get("setup_repeats") or {}
    if (again.get("candidate_runs") == min(config.noise.candidate_runs, again.get("candidate_runs") or 0)
            and setup is stored and isinstance(again.get("sentence"), str)
            and again.get("alpha") == repeat_alpha(config)):
        progress(f"setup ({config.policy.mode} mode), {again['sentence']}")  # measured with the band
    else:
        stored_runs = len((kept[0].get("runs_files") or []) if kept is not None else [])
        setup_check_with_repeats(config, setup, progress, 1 + stored_runs)
    return extra, extra_files


def _setup_said(config: Config, golden: Golden, kept: tuple[dict[str, Any], dict[str, bytes]] | None,
                stored: dict[str, Any]) -> dict[str, Any]:
    """The stored setup check when it was measured under this policy (the rule's own simulation
    included), else the formula's, from the stored band's noise when there is one."""
    if (stored.get("mode") == config.policy.mode and stored.get("margin") == config.policy.max_regression
            and stored.get("n") == len(golden.universe.query_ids) and isinstance(stored.get("sentence"), str)):
        return stored
    noise_sd = stored.get("noise_sd") if isinstance(stored.get("noise_sd"), (int, float)) else None
    movers = stored.get("mover_share") if isinstance(stored.get("mover_share"), (int, float)) else None
    band = kept[0].get("threshold") if kept is not None and noise_sd is not None else None
    setup = setup_check(len(golden.universe.query_ids), config.policy.max_regression, config.policy.mode,
                        noise_sd, band if isinstance(band, (int, float)) else None, movers, alpha=ALPHA,
                        level=ALPHA, min_movers=MIN_MOVERS, movers_to_show=MOVERS_TO_SHOW).to_dict()
    if setup.get("mode") == "non-inferiority" and setup.get("supports"):
        setup["sentence"] = (f"{setup['sentence']}; the formula's word only: retrieval-gate calibrate puts "
                             "the rule itself through simulated no-op PRs")
    return setup


def _warn_unrecorded(config: Config, golden: Golden, retrieval: RetrievalConfig, head: str,
                     runs_dir: Path | None, produced: bool, progress: Progress) -> None:
    """Warnings for what the manifest's commit does not hold: recorded files changed since it or
    ignored by git, and (when the stack produced the run) changed code under test."""
    uncommitted = uncommitted_recorded_files(config, golden, retrieval)
    if uncommitted:
        progress(f"warning: {', '.join(uncommitted)} differ{'s' if len(uncommitted) == 1 else ''} from commit "
                 f"{head[:12]} (not committed): the manifest records that commit, but archives the files as they "
                 "are now; commit them and archive again, or a replay at that commit will not be this baseline")
    ignored = ignored_recorded_files(config, golden, retrieval)
    if ignored:
        one = len(ignored) == 1 and " and " not in ignored[0] and ", " not in ignored[0]
        progress(f"warning: {', '.join(ignored)} {'is' if one else 'are'} ignored by git: commit "
                 f"{head[:12]}, which the manifest records, does not hold {'it' if one else 'them'}; "
                 "a replay reads what the workspace holds then, and the sha256 the manifest records tells whether "
                 "it is this copy (keep it where every checkout finds it, or commit it)")
    changed_code = [name for name in (uncommitted_code(config, runs_dir) if produced else [])
                    if not _touched(uncommitted, [name])]  # a recorded file is named once, above
    if changed_code:
        progress(f"warning: the code under test has changes not in commit {head[:12]} ({listed(changed_code, 5)}): "
                 "the archived run was produced by them, but a replay at that commit, which the manifest records, "
                 "runs the committed code; commit them and archive again")


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
    changed_names = set(changed)
    return [path for path in paths
            if path in changed_names or any(name.startswith(path.rstrip("/") + "/") for name in changed_names)]


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
        # The globs the key expands, matched against git's names: a deleted input is named too.
        declared = config_globs(config, "runner.inputs")
        changed = [name for name in changed if matches(name, declared)]
    return changed
