"""The stored noise band: measured from repeats, judged current, re-scorable or stale.

``measure_noise`` re-runs one configuration N times through the runner (each
repeat gets ``{repeat}``, ``{seed}`` and ``RETRIEVAL_GATE_REPEAT``, so a stack
can rebuild its index); ``noise_from_runs`` does the same from existing run
files. ``applicable_band`` decides, against the baseline being compared
(never the candidate: every PR changes the config), whether a stored band is
current, can be re-scored (only queries/qrels changed and the stored repeat
runs cover today's queries), or is stale.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gate.checks.commensurability import run_request
from gate.common.errors import InputError
from gate.evaluation.evaluate import evaluate
from gate.evaluation.measures import Measure
from gate.inputs.golden import Golden
from gate.inputs.readers.records import Qrels, Run
from gate.inputs.readers.runs import read_run
from gate.inputs.retrieval_config import RetrievalConfig, flatten
from gate.runs.produce import RunProducer, answered_empty, missing_queries, sidecar_of
from gate.statistics.noise import NoiseBand, band_from_dict, noise_band

DEFAULT_INVALIDATE_ON = ("index", "embedding", "ingestion", "chunking", "bm25", "ann")


def index_values(config: RetrievalConfig, invalidate_on: Sequence[str]) -> dict[str, Any]:
    """Values of the config keys that build the index (dotted paths or their prefixes)."""
    flat = flatten(config.data)
    keep = {}
    for key, value in flat.items():
        if any(key == prefix or key.startswith(prefix + ".") for prefix in invalidate_on):
            keep[key] = value
    return keep


def band_fingerprints(golden: Golden, config: RetrievalConfig | None, invalidate_on: Sequence[str]) -> dict[str, Any]:
    snapshot = golden.corpus(config)
    corpus = None if snapshot is None else snapshot.record
    return {
        "queries": golden.queries_record.sha256,
        "qrels": golden.qrels_record.sha256,
        "corpus": None if corpus is None else corpus.sha256,
        "config": None if config is None else config.sha256,
        "index_keys": {} if config is None else index_values(config, invalidate_on),
        "invalidate_on": list(invalidate_on),
    }


@dataclass(frozen=True)
class MeasuredNoise:
    band: NoiseBand
    runs: tuple[Run, ...]
    seconds: tuple[float, ...]
    # Per run, the queries its runner answered with no documents ("hits": 0 in its timings).
    answered_empty: tuple[frozenset[str], ...] = ()


def measure_noise(
    config: RetrievalConfig,
    golden: Golden,
    measure: Measure,
    producer: RunProducer,
    queries_path: str,
    repeats: int,
    rel: int,
    invalidate_on: Sequence[str] = DEFAULT_INVALIDATE_ON,
    base_seed: int = 1000,
    progress: Callable[[str], None] = lambda message: None,
    code=None,
) -> MeasuredNoise:
    """N identical runs of ``config`` through the runner; one progress line per repeat."""
    if repeats < 2:
        raise InputError(None, None, "--repeats must be at least 2 to measure a spread")
    values, runs, seconds, seeds = [], [], [], []
    empties: list[frozenset[str]] = []
    latencies: list[np.ndarray] | None = []  # None once a repeat has no timings
    metric = str(measure)
    for repeat in range(1, repeats + 1):
        started = time.monotonic()
        request = run_request(f"noise repeat {repeat}/{repeats}", config, golden, queries_path,
                              repeat=repeat, seed=base_seed + repeat, code=code)
        run, produced = producer.produce(request, golden.universe.query_ids)
        if latencies is not None and produced.timings is not None:
            latencies.append(produced.timings.aligned(golden.universe.query_ids)[0])
        else:
            latencies = None
        per_query = evaluate(run, golden.qrels_for(config), [measure], golden.universe.query_ids, rel=rel)
        values.append(per_query.values[metric])
        runs.append(run)
        empties.append(answered_empty(produced.timings))
        seeds.append(base_seed + repeat)
        elapsed = time.monotonic() - started
        seconds.append(elapsed)
        progress(f"noise repeat {repeat}/{repeats}: {metric} {per_query.mean(metric):.4f} ({elapsed:.1f}s)")
    strata = {q.query_id: q.stratum for q in golden.queries.queries}
    band = noise_band(metric, golden.universe.query_ids, values, strata,
                      band_fingerprints(golden, config, invalidate_on), "repeats", (), seeds, latencies)
    return MeasuredNoise(band, tuple(runs), tuple(seconds), tuple(empties))


#: The band's key (beside ``runs_files``, one list per stored repeat run) naming the queries each
#: repeat answered with no documents: the TREC file stored cannot say it, and without it a repeat
#: run would look like one that dropped them. Absent when no repeat answered a query with nothing.
ANSWERED_EMPTY_KEY = "runs_answered_empty"


def stored_runs_cover(stored: Mapping[str, Any] | None, runs: Sequence[Run], expected: Sequence[str]) -> bool:
    """Whether every stored repeat run covers ``expected`` (:func:`missing_queries`), its empty
    answers read from the band's :data:`ANSWERED_EMPTY_KEY` (checked by ``stored_band``)."""
    empties = (stored or {}).get(ANSWERED_EMPTY_KEY) or [()] * len(runs)
    return all(not missing_queries(run, expected, frozenset(empty)) for run, empty in zip(runs, empties))


def noise_from_runs(
    run_paths: Sequence[str | Path],
    qrels: Qrels,
    query_ids: Sequence[str],
    measure: Measure,
    rel: int,
    strata: Mapping[str, str | None] | None = None,
    fingerprints: Mapping[str, Any] | None = None,
) -> NoiseBand:
    """The band from existing runs of one configuration (each must cover the golden queries)."""
    if len(run_paths) < 2:
        raise InputError(None, None, "--from-runs needs at least two runs of the same configuration")
    metric = str(measure)
    values = []
    latencies: list[np.ndarray] = []  # from the sidecars beside the runs (<run>.timings.jsonl), where every run has one
    for path in run_paths:
        run = read_run(path)
        timings = sidecar_of(Path(path), run, None, "file", query_ids)  # a bad sidecar: one line, exit 2
        missing = missing_queries(run, query_ids, answered_empty(timings))
        if missing:
            raise InputError(str(path), None, f"misses {len(missing)} of {len(query_ids)} judged queries "
                                              f"(e.g. {', '.join(missing[:5])}): not a run of the same set")
        values.append(evaluate(run, qrels, [measure], query_ids, rel=rel).values[metric])
        if timings is not None:
            latencies.append(timings.aligned(query_ids)[0])
    return noise_band(metric, query_ids, values, strata, fingerprints, "runs", tuple(str(p) for p in run_paths),
                      latencies=latencies if len(latencies) == len(values) else None)


@dataclass(frozen=True)
class BandStatus:
    band: NoiseBand | None  # the band to use (re-scored when needed); None when absent or stale
    state: str  # "current" | "rescored" | "stale" | "absent"
    reason: str

    @property
    def usable(self) -> bool:
        return self.band is not None


def applicable_band(
    stored: Mapping[str, Any] | None,
    stored_runs: Sequence[Run] | None,
    golden: Golden,
    baseline_config: RetrievalConfig,
    measure: Measure,
    rel: int,
) -> BandStatus:
    """Judge a stored band against the baseline being compared and today's inputs."""
    if stored is None:
        return BandStatus(None, "absent", "no noise band is stored")
    band = band_from_dict(stored)
    fp = band.fingerprints
    metric = str(measure)
    if band.metric != metric:
        return BandStatus(None, "stale", f"the band was measured on {band.metric}, not {metric}")
    snapshot = golden.corpus(baseline_config)
    current_corpus = None if snapshot is None else snapshot.record.sha256
    # A band computed from run files (--from-runs) does not know its corpus: not checked.
    if fp.get("corpus") is not None and fp.get("corpus") != current_corpus:
        return BandStatus(None, "stale", "the corpus differs from the one the band was measured on")
    invalidate_on = fp.get("invalidate_on") or list(DEFAULT_INVALIDATE_ON)
    if fp.get("config") is not None:
        now = index_values(baseline_config, invalidate_on)
        then = fp.get("index_keys") or {}
        changed = sorted(k for k in set(now) | set(then) if now.get(k) != then.get(k))
        if changed:
            return BandStatus(None, "stale", f"index-building keys differ from the band's: {', '.join(changed)}")
    same_queries = fp.get("queries") == golden.queries_record.sha256
    same_qrels = fp.get("qrels") == golden.qrels_record.sha256
    if same_queries and same_qrels:
        return BandStatus(band, "current", f"measured on these inputs ({band.runs} runs)")
    if stored_runs and stored_runs_cover(stored, stored_runs, golden.universe.query_ids):
        qrels = golden.qrels_for(baseline_config)  # the repeats ran the baseline's config on its corpus
        values = [evaluate(r, qrels, [measure], golden.universe.query_ids, rel=rel).values[metric]
                  for r in stored_runs]
        strata = {q.query_id: q.stratum for q in golden.queries.queries}
        fresh = noise_band(metric, golden.universe.query_ids, values, strata,
                           {**fp, "queries": golden.queries_record.sha256, "qrels": golden.qrels_record.sha256},
                           band.source, band.run_files, band.seeds)
        return BandStatus(fresh, "rescored", "re-scored from the stored repeat runs on today's queries and qrels")
    what = "query set" if not same_queries else "qrels"
    return BandStatus(None, "stale", f"the {what} fingerprint differs from the band's and its repeat runs "
                                     "cannot be re-scored")


def band_sentence(delta: float, status: BandStatus, measure_command: str,
                  interval: tuple[float, float] | None = None) -> tuple[bool | None, str]:
    """(exceeded, words) for the report. ``exceeded`` compares ``|delta|`` with the band; the
    words say "exceeds" only when the ``interval`` (the delta's 95% CI) also excludes zero: a
    delta above the band with an interval across zero has not been shown to exceed anything."""
    if status.band is None:
        return None, (f"no usable noise band ({status.reason}); measure one with: {measure_command}")
    band = status.band
    if abs(delta) > band.threshold:
        if interval is not None and interval[0] <= 0.0 <= interval[1]:
            return True, (f"|Δ| is above the noise band (±{band.threshold:.3f} from {band.runs} identical runs), "
                          "but its interval crosses zero: not shown to exceed it")
        return True, f"exceeds the noise band: ±{band.threshold:.3f} from {band.runs} identical runs"
    return False, f"within the noise band: ±{band.threshold:.3f} from {band.runs} identical runs"


def mean_of(values: np.ndarray) -> float:
    return float(values.mean()) if len(values) else 0.0


@dataclass(frozen=True)
class TieFloor:
    """Queries whose value depends on docno tie order alone: a deterministic floor of the noise."""

    count: int
    span: float  # largest per-query change when the tie order is reversed
    mean_shift: float  # change of the mean when every tie is broken the other way
    queries: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "max_query_span": self.span, "mean_shift": self.mean_shift,
                "queries": list(self.queries[:50])}


def tie_floor(run: Run, qrels: Qrels, measure: Measure, query_ids: Sequence[str], rel: int) -> TieFloor:
    """Evaluate again with ties broken by docno ascending instead of descending.

    Docnos are renamed so that their byte order reverses (qrels renamed alike),
    which leaves every score untouched and flips only the tie-breaking.
    """
    metric = str(measure)
    before = evaluate(run, qrels, [measure], query_ids, rel=rel)
    names = sorted({str(d) for d in run.doc_ids} | {d for docs in qrels.judgments.values() for d in docs})
    width = len(str(len(names)))
    rename = {name: str(len(names) - 1 - i).zfill(width) for i, name in enumerate(names)}
    flipped = Run(run.source, run.query_ids, run.starts,
                  np.array([rename[str(d)] for d in run.doc_ids], dtype=str) if len(run.doc_ids) else run.doc_ids,
                  run.scores, run.tag)
    flipped_qrels = Qrels(qrels.source,
                          {q: {rename[d]: v for d, v in docs.items()} for q, docs in qrels.judgments.items()},
                          qrels.negative_is_judged)
    after = evaluate(flipped, flipped_qrels, [measure], query_ids, rel=rel)
    diff = after.values[metric] - before.values[metric]
    flags = before.ties.get(metric)
    moved = np.abs(diff) > 0
    if flags is not None:
        moved |= flags  # tied across the cutoff even where both orders happen to score alike
    tied = tuple(q for q, m in zip(query_ids, moved) if m)
    span = float(np.abs(diff).max()) if len(diff) else 0.0
    return TieFloor(len(tied), span, float(diff.mean()) if len(diff) else 0.0, tied)
