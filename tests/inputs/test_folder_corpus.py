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
from gate.pipeline.archive import archive
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
    path.write_text(path.read_text().replace("corpus: corpus-{ingestion.parser}.jsonl",
                                             "corpus: corpus-{ingestion.parser}"))
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


def _git(cwd: Path, *args: str) -> str:
    import subprocess

    return subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout.strip()


def _folder_repo(tmp_path: Path) -> tuple[Path, str, list[str]]:
    """A repository whose corpus is one folder of files (docs/), with runner.inputs declared (so
    only the yardstick and the corpus make a PR relevant), a page in it already quoting a golden
    query at the base commit, and the baseline archived there."""
    path = small_world(tmp_path, leak_in_new=False)
    docs = _as_folder(tmp_path / "corpus-v1.jsonl")
    (tmp_path / "corpus-v2.jsonl").unlink()
    docs.rename(tmp_path / "docs")
    queries = [json.loads(line)["text"] for line in (tmp_path / "golden.jsonl").read_text().splitlines()]
    (tmp_path / "docs" / "old-faq.txt").write_text(f"Asked before: {queries[2]}?\n")
    text = path.read_text().replace("corpus: corpus-{ingestion.parser}.jsonl", "corpus: docs")
    text = text.replace("--output {run}\"\n", "--output {run}\"\n  inputs: [search/*.py]\n")
    assert "inputs: [search/*.py]" in text
    path.write_text(text)
    (tmp_path / "search").mkdir()
    (tmp_path / "search" / "rank.py").write_text("# the code the runs depend on\n")
    (tmp_path / ".gitignore").write_text(".retrieval-gate/cache/\n.retrieval-gate/work/\n.retrieval-gate/out/\n")
    _git(tmp_path, "init", "-q", "-b", "main")
    archive(load_config(path), progress=lambda m: None)
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "base")
    return path, _git(tmp_path, "rev-parse", "HEAD"), queries


def test_a_pr_that_only_adds_a_page_to_a_folder_corpus_is_judged_and_an_old_leak_stays_old(tmp_path, capsys):
    path, base, queries = _folder_repo(tmp_path)
    (tmp_path / "docs" / "release-notes.txt").write_text("Release notes: faster dashboards.\n")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "an unrelated page")
    code = main(["run", "--config", str(path), "--base", base, "--out", str(tmp_path / "out")])
    capsys.readouterr()
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["verdict"]["kind"] != "skipped"  # the corpus folder is watched, file by file
    leakage = report["leakage"]
    assert [m["chunk_id"] for m in leakage["matched"]] == ["old-faq.txt"]
    assert leakage["new"] == [] and len(leakage["both"]) == 1  # the base's own page: not a new leak
    assert "new_leaked_queries" not in [r["code"] for r in report["verdict"]["reasons"]] and code != 4


def test_a_pr_that_plants_a_page_in_a_folder_corpus_fails(tmp_path, capsys):
    path, base, queries = _folder_repo(tmp_path)
    (tmp_path / "docs" / "faq.txt").write_text(f"People ask: {queries[5]}? And: {queries[7]}?\n")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "a leaking page")
    code = main(["run", "--config", str(path), "--base", base, "--out", str(tmp_path / "out")])
    capsys.readouterr()
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert code == 1 and report["verdict"]["reasons"][0]["code"] == "new_leaked_queries"
    assert len(report["leakage"]["new"]) == 2


@pytest.mark.parametrize("corpus", ["docs", "docs/", "corpus-{ingestion.parser}"])
def test_every_file_of_a_folder_corpus_is_watched(tmp_path, corpus):
    """The Action skips a PR that touches nothing it watches: a page added to a folder corpus must
    be watched even with runner.inputs declared (it once was watched as the folder's own path)."""
    from gate.inputs.yardstick import matches, watched

    path, _, _ = _folder_repo(tmp_path)
    (tmp_path / "corpus-v1").mkdir()
    path.write_text(path.read_text().replace("corpus: docs", f"corpus: {corpus}"))
    globs = watched(load_config(path))
    folder = corpus.rstrip("/").replace("{ingestion.parser}", "v2")
    for name in (f"{folder}/faq.txt", f"{folder}/deep/er/page.md"):
        assert matches(name, globs), (name, globs)


def test_a_folder_holding_corpus_jsonl_and_other_files_is_refused_not_half_read(tmp_path, capsys):
    """Read as BEIR, only corpus.jsonl would be scanned: a leaked page beside it never found."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "page0.md").write_text("How do I reset my password? Use settings.\n")
    (docs / "corpus.jsonl").write_text('{"_id": "export1", "text": "an unrelated export"}\n')
    (docs / "README.md").write_text("what these files are\n")  # a BEIR download's own README is fine
    queries = tmp_path / "q.tsv"
    queries.write_text("q1\thow do i reset my password\n")
    assert main(["leakcheck", "--queries", str(queries), "--corpus", str(docs)]) == 2
    err = capsys.readouterr().err
    assert "holds corpus.jsonl and other files (page0.md)" in err and err.count("\n") == 1
    (docs / "page0.md").unlink()
    assert main(["leakcheck", "--queries", str(queries), "--corpus", str(docs)]) == 0  # a BEIR corpus again
    (docs / "README-faq.md").write_text("How do I reset my password?\n")  # a document, not the download's notes
    assert main(["leakcheck", "--queries", str(queries), "--corpus", str(docs)]) == 2
    assert "(README-faq.md)" in capsys.readouterr().err


def test_archive_names_the_ignored_file_inside_a_folder_corpus(tmp_path):
    path, _, _ = _folder_repo(tmp_path)
    with open(tmp_path / ".gitignore", "a") as ignore:
        ignore.write("docs/scratch.md\n")
    _git(tmp_path, "commit", "-qam", "ignore a scratch page")
    (tmp_path / "docs" / "scratch.md").write_text("a draft\n")
    said: list[str] = []
    archive(load_config(path), progress=said.append)
    [warning] = [m for m in said if m.startswith("warning:")]
    assert warning.startswith("warning: docs/scratch.md (in the folder docs) is ignored by git: commit ")
