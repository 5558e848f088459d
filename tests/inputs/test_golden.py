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


def _anchored_world(tmp_path, golden: str, corpus: str = "corpus: corpus-{ingestion.parser}.jsonl\n"):
    (tmp_path / "q.tsv").write_text("1\thow many webhooks per project\n2\tpagination\n")
    (tmp_path / "judged.jsonl").write_text('{"query_id": "1", "doc_id": "a", "start": 0, "end": 8, "grade": 2}\n'
                                           '{"query_id": "2", "doc_id": "b", "grade": 1}\n')
    (tmp_path / "qrels.txt").write_text("1 0 a 2\n2 0 b 1\n")
    (tmp_path / "corpus-v1.jsonl").write_text(
        '{"id": "a#c1", "doc_id": "a", "text": "webhooks", "start_char_idx": 0, "end_char_idx": 8}\n'
        '{"id": "a#c2", "doc_id": "a", "text": " per project", "start_char_idx": 8, "end_char_idx": 20}\n'
        '{"id": "b#c1", "doc_id": "b", "text": "pages", "start_char_idx": 0, "end_char_idx": 5}\n')
    (tmp_path / "corpus-v2.jsonl").write_text(
        '{"id": "a#p1", "doc_id": "a", "text": "webhooks per project", "start_char_idx": 0, "end_char_idx": 20}\n'
        '{"id": "b#p1", "doc_id": "b", "text": "pages", "start_char_idx": 0, "end_char_idx": 5}\n')
    (tmp_path / "r.yml").write_text("ingestion: {parser: v1}\n")
    (tmp_path / "gate.yml").write_text(f"golden: {golden}\n{corpus}retrieval: {{config: r.yml}}\n")
    return load_golden(load_config(tmp_path / "gate.yml"))


def test_each_side_gets_qrels_for_its_own_chunks_mapped_once_per_snapshot(tmp_path):
    golden = _anchored_world(tmp_path, "{queries: q.tsv, qrels: judged.jsonl}")
    v1, v2 = (parse_retrieval_config(f"ingestion: {{parser: {v}}}\n", v) for v in ("v1", "v2"))
    assert golden.qrels_for(v1).judgments == {"1": {"a#c1": 2, "a#c2": 0}, "2": {"b#c1": 1}}
    assert golden.qrels_for(v2).judgments == {"1": {"a#p1": 2}, "2": {"b#p1": 1}}
    assert golden.qrels_for(v1) is golden.qrels_for(parse_retrieval_config("ingestion: {parser: v1}\n", "again"))
    assert golden.mapping_for(v2).summary.corpus == "corpus-v2.jsonl"
    # The universe and the fingerprint are the judgments file's, whatever the corpus.
    assert list(golden.universe.query_ids) == ["1", "2"] and golden.qrels_record.count == 2


def test_a_process_maps_the_same_judgments_onto_the_same_snapshot_once(tmp_path, monkeypatch):
    """A run loads its golden set in several stages; each would read the whole corpus to map again.
    A changed corpus (another fingerprint) is mapped afresh."""
    import gate.inputs.golden as golden_module

    calls = []
    real = golden_module.map_judgments
    monkeypatch.setattr(golden_module, "map_judgments", lambda *a, **k: calls.append(k["corpus"]) or real(*a, **k))
    monkeypatch.setattr(golden_module, "_MAPPINGS", {})
    v1 = parse_retrieval_config("ingestion: {parser: v1}\n", "v1")
    first = _anchored_world(tmp_path, "{queries: q.tsv, qrels: judged.jsonl}").qrels_for(v1)
    again = load_golden(load_config(tmp_path / "gate.yml")).qrels_for(v1)
    assert again is first and calls == ["corpus-v1.jsonl"]
    with open(tmp_path / "corpus-v1.jsonl", "a") as corpus:
        corpus.write('{"id": "c#1", "doc_id": "c", "text": "more", "start_char_idx": 0, "end_char_idx": 4}\n')
    load_golden(load_config(tmp_path / "gate.yml")).qrels_for(v1)
    assert calls == ["corpus-v1.jsonl", "corpus-v1.jsonl"]


def test_chunk_id_qrels_are_the_same_for_both_sides(tmp_path):
    golden = _anchored_world(tmp_path, "{queries: q.tsv, qrels: qrels.txt}")
    assert golden.qrels_for(parse_retrieval_config("ingestion: {parser: v2}\n", "v2")) is golden.qrels
    assert golden.mapping_for(None) is None


def test_golden_anchor_document_maps_a_plain_qrels_file(tmp_path):
    golden = _anchored_world(tmp_path, "{queries: q.tsv, qrels: qrels.txt, anchor: document, span_share: 0.9}")
    assert golden.span_share == 0.9
    v1 = parse_retrieval_config("ingestion: {parser: v1}\n", "v1")
    assert golden.qrels_for(v1).judgments == {"1": {"a#c1": 2, "a#c2": 2}, "2": {"b#c1": 1}}


@pytest.mark.parametrize(("golden", "corpus", "message"), [
    ("{queries: q.tsv, qrels: judged.jsonl}", "", "key 'golden.qrels': .*judged.jsonl holds judgments anchored to "
                                                 "documents and spans, .* names no corpus \\(add corpus:\\)"),
    ("{queries: q.tsv, qrels: qrels.txt, anchor: document}", "", "key 'golden.anchor': document: the qrels' "
                                                                "document ids are mapped .* \\(add corpus:\\)"),
    ("{queries: q.tsv, qrels: qrels.txt, anchor: documents}", None, "key 'golden.anchor': 'documents' is not one of "
                                                                    "chunk, document \\(did you mean 'document'\\?\\)"),
    ("{queries: q.tsv, qrels: qrels.txt, span_share: 0}", None, "key 'golden.span_share': expected a value above 0 "
                                                                "and at most 1, got 0"),
    ("{queries: q.tsv, qrels: qrels.txt, span_share: 1.5}", None, "expected a value above 0 and at most 1, got 1.5"),
])
def test_anchoring_keys_are_strict(tmp_path, golden, corpus, message):
    with pytest.raises(InputError, match=message):
        _anchored_world(tmp_path, golden, *(() if corpus is None else (corpus,)))
