"""``retrieval-gate calibrate``: the gate's own false-alarm rate on a stack, from identical runs
(the repeats archived with the baseline, or runs a user made) put through the decision pair by
pair."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path

from gate.common.errors import InputError, UsageError
from gate.inputs.config import Policy, load_config
from gate.inputs.golden import load_golden
from gate.inputs.manifest import load_manifest
from gate.inputs.readers.qrels import load_qrels
from gate.inputs.readers.queries import load_queries
from gate.inputs.readers.runs import read_run
from gate.inputs.universe import query_universe, require_overlap
from gate.pipeline.repeat_runs import stored_band
from gate.pipeline.stack import Progress, check_config, measures_of, stderr_progress
from gate.verdict.calibration import Calibration, calibrate


@dataclasses.dataclass(frozen=True)
class CalibrationSettings:
    """What the command line may set; None keeps the config's (or, from runs, the default)."""

    metric: str | None = None
    rel: int | None = None
    samples: int | None = None
    seed: int | None = None
    max_regression: float | None = None
    mode: str | None = None


def calibrate_run_files(run_paths: Sequence[str], qrels_path: str, queries_path: str | None,
                        settings: CalibrationSettings = CalibrationSettings(),
                        progress: Progress = stderr_progress) -> Calibration:
    """The decision over every ordered pair of runs of one configuration a user made."""
    if len(run_paths) < 2:
        raise UsageError("calibrate --from-runs needs at least two runs of the same configuration")
    qrels = load_qrels(qrels_path)
    queries = load_queries(queries_path) if queries_path else None
    universe = query_universe(qrels, queries)
    seen: dict[tuple[int, int], str] = {}
    for path in run_paths:
        try:
            info = os.stat(path)
        except OSError:
            continue  # read_run names the problem
        if (info.st_dev, info.st_ino) in seen:
            raise UsageError(f"--from-runs names {path} twice (as {seen[(info.st_dev, info.st_ino)]}): a run "
                             "compared with itself is not a repeat of the stack")
        seen[(info.st_dev, info.st_ino)] = path
    runs = [read_run(path) for path in run_paths]
    for path, run in zip(run_paths, runs):
        require_overlap(run, universe.query_ids, qrels, queries)
        # Repeats of one stack rank every judged query; a run that skips some is not one.
        present = set(run.query_ids)
        missing = [q for q in universe.query_ids if q not in present]
        if missing:
            raise InputError(path, None, f"misses {len(missing)} of the {len(universe.query_ids)} judged queries "
                             f"(e.g. {', '.join(missing[:3])}): not a repeat of the same run")
    # No band here (as in compare): an improvement counts without one.
    policy = Policy(max_regression=0.02 if settings.max_regression is None else settings.max_regression,
                    mode=settings.mode or "regression", improvement_needs_band=False)
    return calibrate(runs, qrels, universe.query_ids, settings.metric or "nDCG@10", settings.rel or 1,
                     policy=policy, samples=settings.samples or 10_000,
                     seed=7 if settings.seed is None else settings.seed, noise_threshold=None, progress=progress,
                     candidate_runs=1, rerun="always")


def calibrate_config(config_path: str | Path, settings: CalibrationSettings = CalibrationSettings(),
                     progress: Progress = stderr_progress) -> Calibration:
    """The decision over every ordered pair of the repeats archived with the config's baseline."""
    config = load_config(config_path)
    check_config(config)
    golden = load_golden(config)
    manifest_path = config.resolve(config.manifest)
    assert manifest_path is not None  # resolve() of a str is a Path
    manifest = load_manifest(manifest_path) if manifest_path.exists() else None
    band, runs = stored_band(config, manifest)
    if not runs:
        raise UsageError(f"no stored noise repeats with the baseline ({manifest_path}): archive with "
                         "--noise-repeats N, or pass --from-runs RUN1 RUN2 ... --qrels QRELS")
    primary, _ = measures_of(config)
    policy = config.policy
    if settings.max_regression is not None:
        policy = Policy(**{**policy.__dict__, "max_regression": settings.max_regression})
    if settings.mode is not None:
        policy = Policy(**{**policy.__dict__, "mode": settings.mode})
    # The repeats are runs of the archived baseline's config: judged on the corpus it indexes.
    qrels = golden.qrels_for(manifest.config) if manifest is not None else golden.qrels
    return calibrate(runs, qrels, golden.universe.query_ids,
                     str(primary) if settings.metric is None else settings.metric,
                     config.golden.rel if settings.rel is None else settings.rel, policy=policy,
                     samples=config.statistics.samples if settings.samples is None else settings.samples,
                     seed=config.statistics.seed if settings.seed is None else settings.seed,
                     noise_threshold=(band or {}).get("threshold"), progress=progress,
                     candidate_runs=config.noise.candidate_runs, rerun=config.noise.rerun)
