"""The golden set a config names: queries, qrels, corpus, their fingerprints.

Everything a comparison is measured against is loaded here once, with the
canonical fingerprints the manifest records and commensurability compares.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gate.common.errors import InputError
from gate.inputs.anchoring import DEFAULT_SHARE, MappedJudgments, judgments_from_qrels, map_judgments
from gate.inputs.config import Config, is_spec
from gate.inputs.fingerprint import corpus_fingerprint, qrels_fingerprint, queries_fingerprint
from gate.inputs.manifest import CorpusRecord, InputRecord
from gate.inputs.readers.anchored import AnchoredJudgments, is_anchored_file, read_anchored
from gate.inputs.readers.beir import SPLIT_SUFFIX, beir_folder_of
from gate.inputs.readers.corpus import iter_corpus
from gate.inputs.readers.qrels import load_qrels
from gate.inputs.readers.queries import load_queries
from gate.inputs.readers.records import Qrels, QuerySet
from gate.inputs.retrieval_config import RetrievalConfig
from gate.inputs.universe import Universe, query_universe

_PLACEHOLDER = re.compile(r"\{([A-Za-z0-9_.\-]+)\}")


@dataclass(frozen=True)
class CorpusSnapshot:
    """The corpus a retrieval config indexes: the path a runner gets and its fingerprint."""

    path: str
    record: CorpusRecord


@dataclass(frozen=True)
class Golden:
    queries: QuerySet
    qrels: Qrels
    universe: Universe
    queries_record: InputRecord
    qrels_record: InputRecord
    queries_path: str  # what a runner receives as {queries}
    corpus_template: str | None  # the config's corpus; may name retrieval-config keys: corpus-{ingestion.parser}.jsonl
    corpus_location: str | None
    resolve: Callable[[str], str]
    # Judgments anchored to documents, spans or quotes (an anchored file, or a plain qrels file with
    # golden.anchor: document): mapped onto each side's own chunks. None: ``qrels`` names chunks.
    anchored: AnchoredJudgments | None = None
    span_share: float = DEFAULT_SHARE
    _snapshots: dict = field(default_factory=dict, compare=False, repr=False)
    _mapped: dict = field(default_factory=dict, compare=False, repr=False)

    def corpus(self, retrieval: RetrievalConfig | None) -> CorpusSnapshot | None:
        """The snapshot ``retrieval`` indexes (placeholders filled from its keys), fingerprinted once."""
        if self.corpus_template is None:
            return None
        flat = retrieval.flat() if retrieval is not None else {}

        def fill(match: re.Match) -> str:
            key = match.group(1)
            if key not in flat:
                raise InputError(None, None, f"corpus '{self.corpus_template}' names {{{key}}}, which the retrieval "
                                             f"config {retrieval.source if retrieval else ''} does not set")
            return str(flat[key])

        configured = _PLACEHOLDER.sub(fill, self.corpus_template)
        if configured not in self._snapshots:
            path = self.resolve(configured)
            if not configured.startswith("irds:") and not Path(path).exists():
                raise InputError(path, None, "corpus snapshot not found (the config's corpus)")
            fp = corpus_fingerprint(path)
            if fp.count == 0:
                raise InputError(path, None, "the corpus holds no chunks (the config's corpus)")
            self._snapshots[configured] = CorpusSnapshot(
                path, CorpusRecord(configured, fp.sha256, fp.count, self.corpus_location))
        return self._snapshots[configured]

    def qrels_for(self, retrieval: RetrievalConfig | None) -> Qrels:
        """The judgments of the side that indexes ``retrieval``'s corpus: ``qrels`` itself for
        chunk-id qrels; anchored judgments mapped onto that snapshot's chunks otherwise."""
        mapped = self.mapping_for(retrieval)
        return self.qrels if mapped is None else mapped.qrels

    def mapping_for(self, retrieval: RetrievalConfig | None) -> MappedJudgments | None:
        """How the anchored judgments map onto ``retrieval``'s corpus (once per snapshot); None for
        chunk-id qrels."""
        if self.anchored is None:
            return None
        snapshot = self.corpus(retrieval)
        if snapshot is None:  # load_golden refuses anchored judgments without a corpus
            raise InputError(self.anchored.source, None, "anchored judgments need a corpus to be mapped onto")
        if snapshot.path not in self._mapped:
            mapped = map_judgments(self.anchored, iter_corpus(snapshot.path), share=self.span_share,
                                   corpus=snapshot.record.id)
            # Mapped judgments read negative labels as the file's own qrels do.
            qrels = Qrels(mapped.qrels.source, mapped.qrels.judgments, self.qrels.negative_is_judged)
            self._mapped[snapshot.path] = MappedJudgments(qrels, mapped.summary)
        return self._mapped[snapshot.path]


def _read_judgments(config: Config, qrels_spec: str, split: str | None) -> tuple[Qrels, AnchoredJudgments | None]:
    """The qrels as read, and the anchored judgments they are when they name documents or spans."""
    if not is_spec(config.golden.qrels) and is_anchored_file(qrels_spec):
        anchored = read_anchored(qrels_spec)
        if config.corpus is None:
            raise config.key_error("golden.qrels", f"{qrels_spec} holds judgments anchored to documents and spans, "
                                   "which are mapped onto the corpus's chunks, and the config names no corpus "
                                   "(add corpus:)")
        return anchored.as_qrels(), anchored
    qrels = load_qrels(qrels_spec, split)
    if config.golden.anchor != "document":
        return qrels, None
    if config.corpus is None:
        raise config.key_error("golden.anchor", "document: the qrels' document ids are mapped onto the corpus's "
                               "chunks, and the config names no corpus (add corpus:)")
    return qrels, judgments_from_qrels(qrels)


def load_golden(config: Config) -> Golden:
    queries_spec = config.spec(config.golden.queries)
    qrels_spec = config.spec(config.golden.qrels)
    queries = load_queries(queries_spec)
    split = config.golden.split
    if split is not None and beir_folder_of(qrels_spec) is None:
        what = "an irds: id, which names its split itself" if is_spec(config.golden.qrels) else "no folder"
        raise config.key_error("golden.split", f"'{split}' picks qrels/{split}.tsv of a BEIR folder, and golden.qrels "
                                               f"'{config.golden.qrels}' is {what}")
    qrels, anchored = _read_judgments(config, qrels_spec, split)
    if config.golden.negative_is_judged is not None and config.golden.negative_is_judged != qrels.negative_is_judged:
        qrels = Qrels(qrels.source, qrels.judgments, config.golden.negative_is_judged)
    # An empty or disjoint yardstick is the config's to fix, named by its file: nothing a
    # runner produces could be measured against it.
    if not len(queries):
        raise config.key_error("golden.queries", f"{queries_spec} holds no queries")
    if not len(qrels):
        raise config.key_error("golden.qrels", f"{qrels_spec} holds no judgments")
    top = qrels.highest_label()
    if top is not None and config.golden.rel > top:
        raise config.key_error("golden.rel", f"{config.golden.rel}: no judgment in {qrels_spec} has a label of "
                               f"{config.golden.rel} or more (the highest is {top}): every binary measure would be 0")
    universe = query_universe(qrels, queries)
    if not universe.query_ids:
        ids = ", ".join(repr(q) for q in queries.ids()[:3])
        judged = ", ".join(repr(q) for q in list(qrels.judgments)[:3])
        raise config.key_error("golden.qrels", f"{qrels_spec} judges none of the golden queries of {queries_spec} "
                               f"(query ids {ids}...; judged {judged}...)")
    qfp, rfp = queries_fingerprint(queries), qrels_fingerprint(qrels)
    queries_path = queries_spec
    folder = Path(queries_spec)
    if folder.is_dir() and (folder / "queries.jsonl").exists():
        queries_path = str(folder / "queries.jsonl")  # a BEIR folder: runners get its query file
    return Golden(
        queries=queries,
        qrels=qrels,
        universe=universe,
        queries_record=InputRecord(config.golden.queries, qfp.sha256, qfp.count),
        # The split is part of what the qrels are: a baseline archived on test is not one on dev.
        qrels_record=InputRecord(config.golden.qrels + (f"{SPLIT_SUFFIX}{split}" if split is not None else ""),
                                 rfp.sha256, rfp.count),
        queries_path=queries_path,
        corpus_template=config.corpus,
        corpus_location=config.corpus_location,
        resolve=config.here_spec,
        anchored=anchored,
        span_share=config.golden.span_share,
    )
