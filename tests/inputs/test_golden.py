"""The corpus a retrieval config indexes: placeholders filled from the config's keys."""

import pytest

from gate.common.errors import InputError
from gate.inputs.config import load_config
from gate.inputs.golden import load_golden
from gate.inputs.retrieval_config import parse_retrieval_config


def test_corpus_placeholders_pick_the_snapshot_each_config_indexes(tmp_path):
    (tmp_path / "q.tsv").write_text("1\thow many webhooks per project\n")
    (tmp_path / "qrels.txt").write_text("1 0 a#c1 1\n")
    (tmp_path / "corpus-v1.jsonl").write_text('{"id": "a#c1", "text": "webhooks"}\n')
    (tmp_path / "corpus-v2.jsonl").write_text('{"id": "a#c1", "text": "webhooks"}\n'
                                              '{"id": "a#c2", "text": "limit | 10"}\n')
    (tmp_path / "r.yml").write_text("ingestion: {parser: v1}\n")
    (tmp_path / "gate.yml").write_text(
        "golden: {queries: q.tsv, qrels: qrels.txt}\ncorpus: corpus-{ingestion.parser}.jsonl\n"
        "retrieval: {config: r.yml}\n")
    golden = load_golden(load_config(tmp_path / "gate.yml"))
    v1 = golden.corpus(parse_retrieval_config("ingestion: {parser: v1}\n", "a"))
    v2 = golden.corpus(parse_retrieval_config("ingestion: {parser: v2}\n", "b"))
    assert v1.path.endswith("corpus-v1.jsonl") and v1.record.count == 1
    assert v2.path.endswith("corpus-v2.jsonl") and v2.record.count == 2
    assert v1.record.sha256 != v2.record.sha256
    with pytest.raises(InputError, match="names \\{ingestion.parser\\}"):
        golden.corpus(parse_retrieval_config("embedding: {model: x}\n", "c"))
