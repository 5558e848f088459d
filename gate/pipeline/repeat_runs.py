"""Repeat runs: the stored noise band with its repeats, and how many candidate runs a verdict
needs (``noise.candidate_runs``, ``noise.rerun``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gate.checks.commensurability import (
    ResolvedBaseline,
)
from gate.common.errors import InputError
from gate.common.limits import MAX_RECORD_FILE_BYTES
from gate.evaluation.evaluate import PerQuery
from gate.evaluation.measures import Measure
from gate.inputs.config import Config
from gate.inputs.golden import Golden
from gate.inputs.manifest import Manifest, load_manifest
from gate.inputs.readers.fields import parse_json_document
from gate.inputs.readers.records import Run
from gate.inputs.readers.runs import read_run
from gate.inputs.readers.textlines import read_text_file
from gate.pipeline.stack import Progress, RunOptions, evaluate_all
from gate.statistics.band import ANSWERED_EMPTY_KEY, BandStatus, applicable_band, stored_runs_cover
from gate.statistics.noise import check_band_dict
from gate.verdict.levels import look_alpha, looks
from gate.verdict.reruns import setup_with_repeats


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
                stored: tuple[Mapping[str, Any] | None, list[Run] | None]) -> RepeatPlan:
    """Decided before the first look, from the setting, the runner and the stored band alone,
    so that the level each look is tested at never depends on what the first look saw."""

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
    if not stored_runs_cover(data, runs, golden.universe.query_ids):
        return RepeatPlan(1, False, "not rerun: the stored repeat runs do not cover today's golden queries")
    repeats = tuple(evaluate_all(run, golden, measures, config.golden.rel, baseline.config) for run in runs)
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

    values = {name: np.mean(np.vstack([r.values[name] for r in runs]), axis=0) for name in first.values}
    return dataclasses.replace(first, values=values)


def planned_candidate_runs(config: Config, manifest: Manifest | None) -> int:
    """The candidate's runs ``plan`` lists: ``noise.candidate_runs``, at most the archived run and
    the repeats stored with the baseline ``manifest`` (as many as ``run_gate`` can use), and
    one when the stored band has no repeat runs of that baseline's config or is zero."""
    wanted = config.noise.candidate_runs
    if manifest is None:
        return 1  # no baseline, no repeats stored with it
    band = manifest.extra.get("noise_band") or {}
    names = band.get("runs_files") or []
    fingerprint = (band.get("fingerprints") or {}).get("config") if isinstance(band, dict) else None
    threshold = band.get("threshold") if isinstance(band, dict) else None
    if (wanted <= 1 or not isinstance(names, list) or not names or fingerprint != manifest.config_sha256
            or not isinstance(threshold, (int, float)) or not threshold > 0):
        return 1
    return min(wanted, 1 + len(names))


def repeat_alpha(config: Config) -> float:
    """The level the deciding look is tested at under this config's repeat setting."""

    return look_alpha(looks(config.noise.candidate_runs, config.noise.rerun))


def setup_check_with_repeats(config: Config, setup: Mapping[str, Any] | None, progress: Progress,
                        available: int) -> None:
    """With ``noise.candidate_runs`` above 1, the setup check once more for means of that many
    runs (at most the ``available`` baseline runs)."""

    runs = min(config.noise.candidate_runs, available)
    more = setup_with_repeats(dict(setup or {}), runs, config.noise.rerun) if setup and runs > 1 else None
    if more:
        progress(f"setup ({config.policy.mode} mode), {more}")


def stored_band(config: Config, manifest: Manifest | None) -> tuple[Mapping[str, Any] | None, list[Run] | None]:
    """The band stored with the manifest (and its repeat runs), else the config's noise.file."""

    if manifest is not None and manifest.extra.get("noise_band") is not None:
        data = check_band_dict(manifest.extra["noise_band"], str(manifest.manifest_path))
        names = data.get("runs_files") or []
        if not isinstance(names, list) or not all(isinstance(n, str) and "/" not in n and n not in ("", ".", "..")
                                                  for n in names):
            raise InputError(str(manifest.manifest_path), None, "noise band 'runs_files' must be file names of "
                             "the baseline folder")
        empties = data.get(ANSWERED_EMPTY_KEY)
        if empties is not None and not (isinstance(empties, list) and len(empties) == len(names) and all(
                isinstance(e, list) and all(isinstance(q, str) for q in e) for e in empties)):
            raise InputError(str(manifest.manifest_path), None, f"noise band '{ANSWERED_EMPTY_KEY}' must hold a "
                             "list of query ids for each of 'runs_files'")
        return data, [read_run(manifest.folder / name) for name in names]
    path = config.resolve(config.noise.file) if config.noise.file else None
    if path is not None and path.exists():
        text = read_text_file(path, "a noise band", limit=MAX_RECORD_FILE_BYTES)
        return check_band_dict(parse_json_document(str(path), text), str(path)), None
    return None, None


def missing_band_file(config: Config, manifest: Manifest | None) -> str | None:
    """A warning when ``noise.file`` names no file and no band is stored with the baseline (that
    one wins): the gate goes on without a band, as documented, but a misspelt path must not pass
    unseen. None otherwise."""

    if not config.noise.file or (manifest is not None and manifest.extra.get("noise_band") is not None):
        return None
    path = config.resolve(config.noise.file)
    if path is None or path.exists():
        return None
    return (f"noise.file {config.noise.file} is not there ({path}): judged without a noise band "
            f"(retrieval-gate noise --out {config.noise.file} measures one)")


def still_valid_band(config: Config, golden: Golden, retrieval, primary: Measure,
                      progress: Progress) -> tuple[dict[str, Any], dict[str, bytes]] | None:
    """A plain ``archive`` (no ``--noise-repeats``) keeps the band stored with the previous
    baseline while it still applies (same metric, corpus, index-building keys, queries and
    qrels), repeat runs included; a band that no longer applies is dropped, and said so."""

    path = config.resolve(config.manifest)
    assert path is not None  # resolve() of a str is a Path
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
                 stored: tuple[Mapping[str, Any] | None, list[Run] | None]) -> tuple[BandStatus, dict | None]:
    """The band that applies (``stored``: :func:`stored_band`'s), and the A/A calibration stored
    with it (when current)."""
    data, runs = stored
    measure = next(m for m in measures if str(m) == metric)
    status = applicable_band(data, runs, golden, baseline.config, measure, config.golden.rel)
    calibration = (data or {}).get("calibration") if status.state == "current" else None
    return status, calibration if isinstance(calibration, dict) else None
