"""A corpus stored as a folder of files (listed in the config table) works in every step that
reads a corpus: fingerprint, runner, leak check (the issue: it was fingerprinted and replayed,
then failed in the leak step), and leakcheck."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.cli import main
from gate.common.errors import InputError
from gate.inputs.config import load_config
from gate.inputs.fingerprint import corpus_fingerprint
from gate.inputs.readers.corpus import is_file_tree, iter_corpus
from gate.pipeline.run import archive
from tests.support.small_world import small_world


def _as_folder(jsonl: Path) -> Path:
    """The chunks of a JSONL corpus as files: chunk 'guide/x-1#c0' becomes guide/x-1/c0.txt."""
    folder = jsonl.with_suffix("")
    for line in jsonl.read_text().splitlines():
        row = json.loads(line)
        path = folder / (row["id"].replace("#", "/") + ".txt")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text((row.get("title", "") + " " + row["text"]).strip() + "\n")
    jsonl.unlink()
    return folder


def test_run_with_a_folder_corpus_finds_the_leak_in_the_new_folder(tmp_path, capsys):
    path = small_world(tmp_path, leak_in_new=True)
    for version in ("v1", "v2"):
        _as_folder(tmp_path / f"corpus-{version}.jsonl")
    path.write_text(path.read_text().replace("corpus: corpus-{ingestion.parser}.jsonl", "corpus: corpus-{ingestion.parser}"))
    assert is_file_tree(tmp_path / "corpus-v2")
    archive(load_config(path), progress=lambda m: None)
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v2}\nboost: 1.0\n")
    code = main(["run", "--config", str(path), "--out", str(tmp_path / "out")])
    capsys.readouterr()
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert code == 1 and report["verdict"]["reasons"][0]["code"] == "new_leaked_queries"
    leaked = {m["chunk_id"] for m in report["leakage"]["matched"]}
    assert leaked == {"faq/common-questions/q1.txt", "faq/common-questions/q4.txt", "faq/common-questions/q7.txt"}


def test_a_folder_corpus_reads_every_file_as_a_document(tmp_path):
    (tmp_path / "c" / "a").mkdir(parents=True)
    (tmp_path / "c" / "a" / "x.md").write_text("first document\n")
    (tmp_path / "c" / "b.txt").write_text("\ufeffsecond document\n")
    chunks = list(iter_corpus(tmp_path / "c"))
    assert [(c.chunk_id, c.doc_id, c.text) for c in chunks] == [
        ("a/x.md", "a/x.md", "first document\n"), ("b.txt", "b.txt", "second document\n")]
    assert corpus_fingerprint(tmp_path / "c").count == 2


@pytest.mark.parametrize("bad, message", [
    (lambda folder: (folder / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff\x00"), "is not UTF-8 text"),
    (lambda folder: (folder / "nul.txt").write_bytes(b"text\x00more"), "holds NUL bytes"),
    (lambda folder: (folder / "out").symlink_to("/etc/hostname"), "symlink leading out of the corpus folder"),
])
def test_a_file_that_cannot_be_a_document_is_refused_by_name(tmp_path, bad, message):
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "ok.txt").write_text("fine\n")
    bad(folder)
    with pytest.raises(InputError) as caught:
        list(iter_corpus(folder))
    assert message in str(caught.value) and str(folder) in str(caught.value)


def test_a_beir_folder_without_its_corpus_is_not_read_as_files(tmp_path):
    (tmp_path / "beir").mkdir()
    (tmp_path / "beir" / "queries.jsonl").write_text('{"_id": "1", "text": "q"}\n')
    assert not is_file_tree(tmp_path / "beir")
    with pytest.raises(InputError, match="corpus.jsonl"):
        list(iter_corpus(tmp_path / "beir"))


def test_leakcheck_on_a_folder_corpus(tmp_path, capsys):
    (tmp_path / "docs" / "faq").mkdir(parents=True)
    (tmp_path / "docs" / "faq" / "webhooks.md").write_text("Q: how many webhooks per project can i register?\n")
    (tmp_path / "docs" / "other.md").write_text("nothing to see\n")
    (tmp_path / "q.tsv").write_text("q1\thow many webhooks per project\n")
    code = main(["leakcheck", "--queries", str(tmp_path / "q.tsv"), "--corpus", str(tmp_path / "docs")])
    out = capsys.readouterr().out
    assert code == 1 and "-> faq/webhooks.md (exact)" in out
    (tmp_path / "empty").mkdir()
    assert main(["leakcheck", "--queries", str(tmp_path / "q.tsv"), "--corpus", str(tmp_path / "empty")]) == 2
    assert "holds no chunks" in capsys.readouterr().err
