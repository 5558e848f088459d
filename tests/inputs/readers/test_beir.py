"""BEIR folders: queries, qrels split, corpus path; clear errors for missing files."""

from __future__ import annotations

import json
import zipfile

import pytest

from gate.inputs.readers.beir import beir_corpus, read_beir
from gate.inputs.readers.corpus import iter_corpus
from gate.inputs.readers.qrels import load_qrels
from gate.inputs.readers.queries import load_queries
from gate.inputs.readers.records import Chunk
from tests.inputs.readers.helpers import expect_error, write
from tests.shared_data import REALDATA, need


def make_beir(folder, gz=False):
    write(folder, "corpus.jsonl" + (".gz" if gz else ""), '{"_id": "d1", "title": "T", "text": "body"}\n', gz=gz)
    write(
        folder,
        "queries.jsonl" + (".gz" if gz else ""),
        "".join(json.dumps(o) + "\n"
                for o in ({"_id": "1", "text": "one", "metadata": {}}, {"_id": "2", "text": "two"})),
        gz=gz,
    )
    write(folder, "qrels/test.tsv", "query-id\tcorpus-id\tscore\n1\td1\t1\n")
    write(folder, "qrels/dev.tsv", "query-id\tcorpus-id\tscore\n2\td1\t2\n")
    return folder


@pytest.mark.parametrize("gz", [False, True])
def test_read_beir_returns_all_queries_split_qrels_and_corpus(tmp_path, gz):
    folder = make_beir(tmp_path / "ds", gz)
    data = read_beir(folder)
    queries, qrels, corpus = data  # unpacks like a tuple
    assert queries.ids() == ["1", "2"]  # all queries, not only the judged one
    assert {q: dict(d) for q, d in qrels.judgments.items()} == {"1": {"d1": 1}}
    assert corpus == folder / ("corpus.jsonl.gz" if gz else "corpus.jsonl")
    assert read_beir(folder, split="dev").qrels.judgments == {"2": {"d1": 2}}


def test_dispatchers_accept_a_beir_folder(tmp_path):
    folder = make_beir(tmp_path / "ds")
    assert load_queries(folder).ids() == ["1", "2"]
    assert len(load_qrels(folder)) == 1 and len(load_qrels(str(folder), split="dev")) == 1
    assert list(iter_corpus(folder)) == [Chunk("d1", "d1", "T body")]


def test_missing_split_lists_available_ones(tmp_path):
    folder = make_beir(tmp_path / "ds")
    with pytest.raises(Exception) as info:
        read_beir(folder, split="train")
    assert str(info.value) == \
        f"{folder / 'qrels' / 'train.tsv'}: no such file in BEIR folder (available splits: dev, test)"


def test_missing_queries_and_folder(tmp_path):
    folder = tmp_path / "ds"
    write(folder, "qrels/test.tsv", "query-id\tcorpus-id\tscore\n")
    with pytest.raises(Exception) as info:
        read_beir(folder)
    assert str(info.value) == f"{folder / 'queries.jsonl'}: no such file in BEIR folder"
    expect_error(read_beir, tmp_path / "absent", None, "no such BEIR folder")


def test_corpus_optional_for_read_beir_but_required_by_beir_corpus(tmp_path):
    folder = make_beir(tmp_path / "ds")
    (folder / "corpus.jsonl").unlink()
    assert read_beir(folder).corpus is None
    with pytest.raises(Exception) as info:
        beir_corpus(folder)
    assert str(info.value).startswith(f"{folder / 'corpus.jsonl'}: no such file in BEIR folder (the folder holds ")


def test_real_scifact_beir_folder(tmp_path):
    """The BEIR scifact release inside the ir_datasets seed: 300 test queries, 339 judgments."""
    source = need(REALDATA / "ir_datasets_seed" / "beir" / "scifact" / "source.zip")
    with zipfile.ZipFile(source) as z:
        z.extractall(tmp_path)
    folder = tmp_path / "scifact"
    queries, qrels, corpus = read_beir(folder)
    assert len(queries) == 300 and len(qrels.judgments) == 300 and len(qrels) == 339
    assert queries.queries[0].query_id == "1"
    assert queries.queries[0].text == "0-dimensional biomaterials show inductive properties."
    assert qrels.judgments["1"] == {"31715818": 1}
    assert sum(1 for _ in iter_corpus(corpus)) == 5183
