"""The commensurable baseline: the archived run replayed (or reconstructed) on today's inputs.

Given the archived manifest and today's golden inputs, the baseline is:

* ``reused``     - identical inputs: the archived per-query values stand;
* ``rescored``   - queries and/or qrels changed, corpus identical, and the
  archived ranked lists cover every current query: re-score them (no retrieval);
* ``replayed``   - otherwise: run the archived configuration through the runner
  against today's queries;
* ``reconstructed`` - no usable manifest: the base commit's retrieval config is
  run (labelled "reconstructed, not archived").

When none of these is possible the result is :class:`Incommensurable`, and no
delta is ever computed between the two numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gate.evaluation.evaluate import PerQuery, evaluate
from gate.evaluation.measures import Measure
from gate.inputs import git
from gate.inputs.golden import Golden
from gate.inputs.manifest import Manifest, archived_timings
from gate.inputs.readers.records import Run
from gate.inputs.retrieval_config import RetrievalConfig, parse_retrieval_config
from gate.runs.produce import RunProducer, answered_empty, missing_queries
from gate.runs.request import ProducedRun, RunnerFailed, RunRequest


class Incommensurable(Exception):
    """The baseline cannot be made comparable: the verdict is inconclusive."""

    def __init__(self, code: str, message: str, differences: Sequence[dict[str, Any]] = ()):
        self.code = code
        self.message = message
        self.differences = list(differences)
        super().__init__(message)


@dataclass(frozen=True)
class Difference:
    input: str  # queries | qrels | corpus | rel | environment:<file>
    archived: str
    current: str

    def to_dict(self) -> dict[str, str]:
        return {"input": self.input, "archived": self.archived, "current": self.current}


@dataclass(frozen=True)
class ResolvedBaseline:
    resolution: str  # reused | rescored | replayed | reconstructed
    config: RetrievalConfig
    run: Run
    values: PerQuery
    differences: tuple[Difference, ...]
    archived: dict[str, Any] | None  # {mean, metric, query_count, queries, qrels} as archived
    description: str
    produced: ProducedRun | None = None
    manifest: Manifest | None = None
    unattributed: tuple[Difference, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {
            "resolution": self.resolution,
            "archived": self.archived,
            "differences": [d.to_dict() for d in self.differences],
            "unattributed_changes": [d.to_dict() for d in self.unattributed],
            "description": self.description,
            "config_sha256": self.config.sha256,
            "run_source": None if self.produced is None else self.produced.source,
            "notes": list(self.notes),
        }


def input_differences(manifest: Manifest, golden: Golden, rel: int) -> list[Difference]:
    """What differs between the archive and today, for the archived config (its corpus included)."""
    out = []
    if manifest.queries.sha256 != golden.queries_record.sha256:
        out.append(Difference("queries", manifest.queries.describe("queries"),
                              golden.queries_record.describe("queries")))
    if manifest.qrels.sha256 != golden.qrels_record.sha256:
        out.append(Difference("qrels", manifest.qrels.describe("judgments"), golden.qrels_record.describe("judgments")))
    archived_corpus = manifest.corpus
    snapshot = golden.corpus(manifest.config)
    current_corpus = None if snapshot is None else snapshot.record
    if (archived_corpus is None) != (current_corpus is None) or (
        archived_corpus is not None and current_corpus is not None and archived_corpus.sha256 != current_corpus.sha256
    ):
        def describe(record) -> str:
            return "none" if record is None else f"{record.id} ({record.count} chunks, sha256 {record.sha256[:12]})"

        out.append(Difference("corpus", describe(archived_corpus), describe(current_corpus)))
    if manifest.rel != rel:
        out.append(Difference("rel", str(manifest.rel), str(rel)))
    return out


def environment_differences(manifest: Manifest, current_files: dict[str, str | None]) -> list[Difference]:
    archived = dict(manifest.environment.get("files") or {})
    out = []
    for name in sorted(set(archived) | set(current_files)):
        a, c = archived.get(name), current_files.get(name)
        if a != c:
            out.append(Difference(f"environment:{name}", (a or "absent")[:12], (c or "absent")[:12]))
    return out


def archived_summary(manifest: Manifest) -> dict[str, Any]:
    values = manifest.per_query_values().get(manifest.metric, {})
    mean = float(np.mean(list(values.values()))) if values else 0.0
    return {
        "metric": manifest.metric,
        "mean": mean,
        "query_count": len(values),
        "queries": manifest.queries.id,
        "queries_sha256": manifest.queries.sha256,
        "qrels": manifest.qrels.id,
        "qrels_sha256": manifest.qrels.sha256,
        "created": manifest.created,
        "git_commit": manifest.git_commit,
    }


def _evaluate(run: Run, golden: Golden, measures: Sequence[Measure], rel: int, config: RetrievalConfig) -> PerQuery:
    """``run`` of ``config`` scored with the judgments of the corpus that config indexes."""
    return evaluate(run, golden.qrels_for(config), measures, golden.universe.query_ids, rel=rel)


def run_request(purpose: str, config: RetrievalConfig, golden: Golden, queries_path: str,
                repeat: int = 0, seed: int = 0, code=None) -> RunRequest:
    """A run of ``config`` on today's golden queries, against the corpus that config indexes."""
    snapshot = golden.corpus(config)
    return RunRequest(
        purpose=purpose,
        config=config,
        queries=queries_path,
        queries_sha256=golden.queries_record.sha256,
        corpus=None if snapshot is None else snapshot.path,
        corpus_sha256=None if snapshot is None else snapshot.record.sha256,
        repeat=repeat,
        seed=seed,
        code=code,
    )


def archived_missing(manifest: Manifest, archived_run: Run, expected: Sequence[str]) -> list[str]:
    """The ``expected`` queries the archived run does not cover: a query it answered with no
    documents (``"hits": 0`` in the timings archived with it) is covered, and re-scored as 0."""
    missing = missing_queries(archived_run, expected)
    if not missing:
        return missing  # the archived timings are read only when they can matter
    return missing_queries(archived_run, expected, answered_empty(archived_timings(manifest)))


def resolve_from_manifest(
    manifest: Manifest,
    golden: Golden,
    measures: Sequence[Measure],
    primary: str,
    rel: int,
    producer: RunProducer,
    queries_path: str,
    environment_files: dict[str, str | None],
    code=None,
    candidate_code=None,
) -> ResolvedBaseline:
    """``code``: the baseline's code (its archive commit), which a replay runs from;
    ``candidate_code``: the PR's, to name a code change among the unattributed ones."""
    differences = input_differences(manifest, golden, rel)
    unattributed = tuple(environment_differences(manifest, environment_files)) + code_difference(code, candidate_code)
    summary = archived_summary(manifest)
    changed = {d.input for d in differences}
    archived_run = manifest.load_run()
    expected = golden.universe.query_ids

    if not changed:
        values = _evaluate(archived_run, golden, measures, rel, manifest.config)
        archived_values = manifest.per_query_values().get(primary)
        notes: list[str] = []
        if archived_values is not None:
            stored = np.array([archived_values.get(q, 0.0) for q in expected], dtype=np.float64)
            if not np.allclose(stored, values.values[primary], atol=1e-12, rtol=0):
                notes.append("re-evaluating the archived run does not reproduce the archived values "
                             "(a measure implementation changed?); the archived values are used")
            values.values[primary] = stored
        return ResolvedBaseline(
            "reused", manifest.config, archived_run, values, (), summary,
            f"archived {summary['mean']:.3f} on {manifest.queries.id} ({summary['query_count']} q, "
            f"{manifest.qrels.id}) reused: inputs identical",
            manifest=manifest, unattributed=unattributed, notes=tuple(notes),
        )

    missing = archived_missing(manifest, archived_run, expected)
    if "corpus" not in changed and not missing:
        values = _evaluate(archived_run, golden, measures, rel, manifest.config)
        return ResolvedBaseline(
            "rescored", manifest.config, archived_run, values, tuple(differences), summary,
            f"archived {summary['mean']:.3f} on {manifest.queries.id} ({summary['query_count']} q, "
            f"{manifest.qrels.id}) -> rescored {values.mean(primary):.3f} on {golden.queries_record.id} "
            f"({len(expected)} q, {golden.qrels_record.id})",
            manifest=manifest, unattributed=unattributed,
        )

    why = "the corpus changed" if "corpus" in changed else (
        f"{len(missing)} current queries are not in the archived ranked lists")
    try:
        run, produced = producer.produce(run_request("baseline replay", manifest.config, golden, queries_path,
                                                     code=code), expected)
    except RunnerFailed as failure:
        raise Incommensurable(
            "baseline_replay_failed",
            f"the archived baseline cannot be replayed ({why}): {failure.message}",
            [d.to_dict() for d in differences],
        ) from failure
    values = _evaluate(run, golden, measures, rel, manifest.config)
    return ResolvedBaseline(
        "replayed", manifest.config, run, values, tuple(differences), summary,
        f"archived {summary['mean']:.3f} on {manifest.queries.id} ({summary['query_count']} q, "
        f"{manifest.qrels.id}) -> replayed {values.mean(primary):.3f} on {golden.queries_record.id} "
        f"({len(expected)} q, {golden.qrels_record.id}); {why}",
        produced=produced, manifest=manifest, unattributed=unattributed,
    )


def reconstruct(
    base_config: RetrievalConfig,
    base_ref: str,
    golden: Golden,
    measures: Sequence[Measure],
    primary: str,
    rel: int,
    producer: RunProducer,
    queries_path: str,
    reason: str,
    code=None,
    candidate_code=None,
) -> ResolvedBaseline:
    try:
        run, produced = producer.produce(run_request("baseline reconstruction", base_config, golden, queries_path,
                                                     code=code), golden.universe.query_ids)
    except RunnerFailed as failure:
        raise Incommensurable("baseline_reconstruction_failed",
                              f"no usable archived baseline ({reason}) and the base commit's config "
                              f"could not be run: {failure.message}") from failure
    values = _evaluate(run, golden, measures, rel, base_config)
    return ResolvedBaseline(
        "reconstructed", base_config, run, values, (), None,
        f"reconstructed, not archived: the retrieval config of {base_ref[:12]} run on "
        f"{golden.queries_record.id} ({len(golden.universe.query_ids)} q) scored {values.mean(primary):.3f}; {reason}",
        produced=produced, unattributed=code_difference(code, candidate_code),
    )


def code_difference(baseline_code, candidate_code) -> tuple[Difference, ...]:
    """The PR's code against the baseline's, when both are known: a change the config diff does
    not show (and no grid cell separates), so it is named among the unattributed ones."""
    if baseline_code is None or candidate_code is None or not (baseline_code.known and candidate_code.known):
        return ()
    if candidate_code.kind == "inputs" or baseline_code.sha == candidate_code.sha:
        return ()  # runner.inputs hashes files, not trees: not comparable with a commit's tree
    return (Difference("code", baseline_code.description, candidate_code.description),)


def base_config_from_git(workspace: Path, base_ref: str, config_file: Path) -> RetrievalConfig | None:
    content = git.show_file(workspace, base_ref, config_file)
    if content is None:
        return None
    return parse_retrieval_config(content.decode("utf-8"), f"{base_ref}:{config_file.name}", config_file.suffix.lower())
