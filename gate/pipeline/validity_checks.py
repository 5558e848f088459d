"""The validity checks of a gate run (leakage, tuning, prompts, judged share, score order) and
what of them the verdict and the report take."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gate.checks.commensurability import (
    ResolvedBaseline,
)
from gate.checks.judged_share import judged_check
from gate.checks.prompts import scan_prompts
from gate.checks.score_order import score_order
from gate.checks.tuning import looks_tunable, tuning_check
from gate.checks.validity import Validity, compare_leakage, reporting_set, validity_warnings
from gate.evaluation.evaluate import PerQuery
from gate.inputs.config import Config
from gate.inputs.golden import Golden
from gate.inputs.query_ids import configured_query_ids
from gate.inputs.readers.corpus import iter_corpus
from gate.inputs.readers.records import Run
from gate.inputs.retrieval_config import RetrievalConfig
from gate.pipeline.baseline import BaseCorpus
from gate.pipeline.stack import Progress


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


def check_validity(config: Config, golden: Golden, baseline: ResolvedBaseline, candidate_run: Run,
                   candidate: PerQuery, retrieval: RetrievalConfig, diff, metric: str,
                   strata: dict[str, str | None], progress: Progress, base_corpus: BaseCorpus | None = None,
                   not_prompts: Sequence[Path] = ()) -> Validity:
    """``base_corpus``: the baseline's corpus as read before the runs (with the leak check on)."""
    universe = golden.universe.query_ids
    candidate_snapshot = golden.corpus(retrieval)
    leakage = None
    if config.leakage.enabled and candidate_snapshot is not None:
        assert base_corpus is not None  # read before the runs whenever the leak check runs
        leakage = _leakage(config, golden, base_corpus, candidate_snapshot, progress)
    # Each side judged on the chunks of the corpus it indexes (the same qrels unless they are anchored).
    judged = judged_check(baseline.run, candidate_run, baseline.values, candidate, golden.qrels_for(baseline.config),
                          universe, metric, strata, k=config.judged.k, rel=config.golden.rel,
                          max_unjudged=config.policy.max_unjudged, max_judged_drop=config.policy.max_judged_drop,
                          qrels_style=config.judged.qrels_style, candidate_qrels=golden.qrels_for(retrieval))
    tuning = None
    tuning_ids = configured_query_ids(config.tuning.queries, config, "tuning.queries")
    changes = [(c.path, c.old, c.new) for c in diff]
    if tuning_ids is not None or config.tuning.params or any(looks_tunable(*c) for c in changes):
        tuning = tuning_check(universe, [c.path for c in diff], config.tuning.params, tuning_ids,
                              configured_query_ids(config.tuning.holdout, config, "tuning.holdout"), changes)
    prompts = _prompts(config, golden, retrieval, candidate_snapshot, not_prompts) if config.prompts else None
    reporting = reporting_set(universe, leakage, tuning, config.policy.exclude_leaked)
    return Validity(leakage, judged, tuning, prompts, reporting, tuple(validity_warnings(tuning, prompts)))


def _leakage(config: Config, golden: Golden, base_corpus: BaseCorpus, candidate_snapshot, progress: Progress):
    """The golden queries looked for in the candidate's corpus and in the baseline's."""
    base_path, base_sha, how = base_corpus.path, base_corpus.sha256, base_corpus.how
    if base_corpus.note is not None:
        progress(base_corpus.note)
    progress(f"leakage: scanning {candidate_snapshot.record.id} ({candidate_snapshot.record.count} chunks)"
             + ("" if base_sha == candidate_snapshot.record.sha256 or base_path is None
                else f" and the baseline's corpus ({how})"))
    in_universe = set(golden.universe.query_ids)
    golden_queries = [q for q in golden.queries.queries if q.query_id in in_universe]
    leakage = compare_leakage(
        golden_queries, base_path, candidate_snapshot.path, base_sha, candidate_snapshot.record.sha256,
        modes=config.leakage.modes, threshold=config.leakage.threshold, min_tokens=config.leakage.min_tokens,
    )
    return dataclasses.replace(leakage, baseline_source=how)


def _prompts(config: Config, golden: Golden, retrieval: RetrievalConfig, candidate_snapshot,
             not_prompts: Sequence[Path]):
    """The few-shot prompt files scanned for golden queries and the texts of their relevant
    documents (read from the candidate's corpus)."""
    judged = golden.qrels_for(retrieval)  # the candidate's chunks: its corpus gives the texts
    relevant = {doc for docs in judged.judgments.values() for doc, label in docs.items()
                if label >= config.golden.rel}
    texts: dict[str, str] = {}
    if candidate_snapshot is not None and relevant:
        for chunk in iter_corpus(candidate_snapshot.path, check_duplicates=False):
            if chunk.chunk_id in relevant or chunk.doc_id in relevant:
                key = chunk.chunk_id if chunk.chunk_id in relevant else chunk.doc_id
                texts[key] = (texts.get(key, "") + " " + chunk.text).strip()
    return scan_prompts(config.workspace_root, config.prompts, golden.queries.queries, judged, texts,
                        rel=config.golden.rel, threshold=config.leakage.threshold,
                        min_tokens=config.leakage.min_tokens,
                        exclude=[config.workspace_root / ".retrieval-gate", *not_prompts])


def score_orders(baseline_run: Run | None, candidate_run: Run, query_ids: Sequence[str]) -> dict[str, Any]:
    """:func:`gate.checks.score_order.score_order` of each run, over the judged golden queries."""

    orders = {} if baseline_run is None else {"baseline": score_order(baseline_run, query_ids, "baseline")}
    orders["candidate"] = score_order(candidate_run, query_ids, "candidate")
    return orders
