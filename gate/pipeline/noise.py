"""``retrieval-gate noise``: the run-to-run noise band, from the config's runner (identical runs
of the baseline's config) or from runs a user made (``--from-runs``)."""

from __future__ import annotations

import filecmp
import os
from collections.abc import Sequence
from pathlib import Path

from gate.common.errors import InputError, UsageError
from gate.evaluation.measures import parse_measure
from gate.inputs.config import load_config
from gate.inputs.fingerprint import qrels_fingerprint, queries_fingerprint
from gate.inputs.golden import load_golden
from gate.inputs.readers.qrels import load_qrels
from gate.inputs.readers.queries import load_queries
from gate.inputs.retrieval_config import load_retrieval_config
from gate.inputs.universe import query_universe
from gate.pipeline.stack import (
    Progress,
    check_config,
    code_under_test,
    make_producer,
    measures_of,
    runner_queries_path,
    stderr_progress,
)
from gate.statistics.band import measure_noise, noise_from_runs
from gate.statistics.noise import NoiseBand


def noise_from_run_files(run_paths: Sequence[str], qrels_path: str, queries_path: str | None, metric: str,
                         rel: int) -> NoiseBand:
    """The band of runs of one configuration a user made (at least two distinct files)."""
    if len(run_paths) < 2:
        raise UsageError("noise --from-runs needs at least two runs of the same configuration")
    _refuse_the_same_file_twice(run_paths)
    queries = load_queries(queries_path) if queries_path else None
    qrels = load_qrels(qrels_path, queries=queries)
    universe = query_universe(qrels, queries)
    if not universe.query_ids:
        raise InputError(qrels_path, None, "no query has both a golden entry and a qrels judgment: nothing to measure")
    measure = parse_measure(metric).with_default_rel(rel)
    strata = {q.query_id: q.stratum for q in queries.queries} if queries else None
    fingerprints = {"queries": queries_fingerprint(queries).sha256 if queries else None,
                    "qrels": qrels_fingerprint(qrels).sha256, "corpus": None, "config": None}
    band = noise_from_runs(list(run_paths), qrels, universe.query_ids, measure, rel, strata, fingerprints)
    # Copies are compared only now, after the readers accepted every file: a bad file is refused
    # at its first bad line, never read to its end first (a 20 GB file of NULs took minutes).
    _refuse_copies(run_paths)
    return band


def _refuse(path: str, same_as: str) -> UsageError:
    return UsageError(f"--from-runs: {path} is the same file as {same_as}: a band needs distinct runs (the same "
                      "one twice shows no spread)")


def _refuse_the_same_file_twice(run_paths: Sequence[str]) -> None:
    """One file named twice (the same path, a link to it): known from ``stat`` alone."""
    seen: dict[tuple[int, int] | str, str] = {}
    for path in run_paths:
        try:
            status = os.stat(path)
            identity: tuple[int, int] | str = (status.st_dev, status.st_ino)
        except OSError:
            identity = path  # the reader names what is wrong with it
        if identity in seen:
            raise _refuse(path, seen[identity])
        seen[identity] = path


def _refuse_copies(run_paths: Sequence[str]) -> None:
    """Two files with the same bytes. Only files of equal size can be: those are compared, each
    pair stopping at its first differing block."""
    by_size: dict[int, list[str]] = {}
    for path in run_paths:
        if os.path.isfile(path):
            by_size.setdefault(os.path.getsize(path), []).append(path)
    for paths in by_size.values():
        for i, later in enumerate(paths):
            for earlier in paths[:i]:
                if filecmp.cmp(earlier, later, shallow=False):
                    raise _refuse(later, earlier)


def noise_from_config(config_path: str | Path, runs_dir: Path | None = None, repeats: int | None = None,
                      progress: Progress = stderr_progress) -> NoiseBand:
    """The band of ``repeats`` (default ``noise.repeats``) identical runs of the config's retrieval
    config by its runner. A run that fails raises :class:`gate.runs.request.RunnerFailed`."""
    config = load_config(config_path)
    check_config(config)
    primary, _ = measures_of(config)
    golden = load_golden(config)
    retrieval_path = config.here(config.retrieval_config)
    assert retrieval_path is not None  # here() of a str is a Path
    retrieval = load_retrieval_config(retrieval_path)
    producer = make_producer(config, runs_dir, progress)
    return measure_noise(retrieval, golden, primary, producer, runner_queries_path(golden, producer.work_dir),
                         repeats or config.noise.repeats, config.golden.rel, config.noise.invalidate_on,
                         config.noise.base_seed, progress, code=code_under_test(config, runs_dir)).band
