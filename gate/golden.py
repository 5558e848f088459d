"""The yardstick a config names: golden queries, qrels, corpus, and their fingerprints.

Everything a comparison is measured against is loaded here once, with the
canonical fingerprints the manifest records and commensurability compares.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gate.config import Config
from gate.evaluate import Universe, query_universe
from gate.fingerprint import corpus_fingerprint, qrels_fingerprint, queries_fingerprint
from gate.io.qrels import load_qrels
from gate.io.queries import load_queries
from gate.io.records import Qrels, QuerySet
from gate.manifest import CorpusRecord, InputRecord


@dataclass(frozen=True)
class Golden:
    queries: QuerySet
    qrels: Qrels
    universe: Universe
    queries_record: InputRecord
    qrels_record: InputRecord
    corpus_record: CorpusRecord | None
    queries_path: str  # what a runner receives as {queries}
    corpus_path: str | None  # what a runner receives as {corpus}


def load_golden(config: Config, with_corpus: bool = True) -> Golden:
    queries_spec = config.spec(config.golden.queries)
    qrels_spec = config.spec(config.golden.qrels)
    queries = load_queries(queries_spec)
    qrels = load_qrels(qrels_spec)
    if config.golden.negative_is_judged is not None and config.golden.negative_is_judged != qrels.negative_is_judged:
        qrels = Qrels(qrels.source, qrels.judgments, config.golden.negative_is_judged)
    universe = query_universe(qrels, queries)
    qfp, rfp = queries_fingerprint(queries), qrels_fingerprint(qrels)
    corpus_record = None
    corpus_path = None
    if config.corpus:
        corpus_path = config.spec(config.corpus)
        if with_corpus:
            cfp = corpus_fingerprint(corpus_path)
            corpus_record = CorpusRecord(config.corpus, cfp.sha256, cfp.count, config.corpus_location)
    queries_path = queries_spec
    folder = Path(queries_spec)
    if folder.is_dir() and (folder / "queries.jsonl").exists():
        queries_path = str(folder / "queries.jsonl")  # a BEIR folder: runners get its query file
    return Golden(
        queries=queries,
        qrels=qrels,
        universe=universe,
        queries_record=InputRecord(config.golden.queries, qfp.sha256, qfp.count),
        qrels_record=InputRecord(config.golden.qrels, rfp.sha256, rfp.count),
        corpus_record=corpus_record,
        queries_path=queries_path,
        corpus_path=corpus_path,
    )
