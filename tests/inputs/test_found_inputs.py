"""Issue 32, "found on the way": inputs users handed the gate, each refused or misread, shown fixed.

1. A plain file of query ids (the README's ``tuning.queries`` example) is read, and a message about
   a yardstick file names the path the config wrote, never the yardstick's temporary copy.
2. UTF-16 text, archives and other compressions are named as such (gzip is read).
3. A BEIR folder's split is selectable: ``golden.split`` in a config, ``DIR#split=<name>`` elsewhere.
4. An empty query or qrels file says so, instead of a garbled "query ids ;".
5. Qrels that judge only relevant documents are told apart, ``judged.qrels_style: relevance-only``
   makes the judged-share check stop failing every PR on them, and ``archive`` says so up front.
6. Every sub-command's ``--help`` has a description.
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from gate.checks.judged_share import (
    JudgmentCounts,
    count_judgments,
    judged_check,
    judges_only_relevant,
    qrels_style_notice,
)
from gate.cli import build_parser, main
from gate.common.errors import InputError
from gate.inputs.config import load_config
from gate.inputs.golden import load_golden
from gate.inputs.readers.qrels import load_qrels, read_qrels
from gate.inputs.readers.queries import load_queries, load_query_ids, read_query_ids
from gate.inputs.readers.records import Qrels, QuerySet, Run
from gate.inputs.readers.runs import read_run
from gate.inputs.readers.textlines import binary_format, read_text_file
from gate.inputs.universe import require_overlap
from gate.pipeline.archive import archive
from tests.shared_data import REALDATA, need
from tests.support.small_world import small_world

QRELS = "q1 0 d1 2\nq1 0 d2 0\nq2 0 d3 1\n"
QUERIES = "q1\twhat is a gate\nq2\thow do i tune bm25\n"
RUN = "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\nq2 Q0 d3 1 1.0 t\n"


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout.strip()


def _error(call, *args) -> str:
    with pytest.raises(InputError) as caught:
        call(*args)
    return str(caught.value)


# -- 1. a plain file of query ids -------------------------------------------------------------------

def test_a_plain_file_of_ids_is_read_one_id_per_line(tmp_path):
    path = tmp_path / "tuning-ids.txt"
    path.write_bytes(b"# fitted on these, 2024-05\r\n1\r\n2\r\n\r\n  3  \r\n# 4 was dropped\r\n10\r\n")
    assert read_query_ids(path) == ["1", "2", "3", "10"]
    assert load_query_ids(str(path)) == ["1", "2", "3", "10"]


def test_a_query_file_lists_its_ids_too(tmp_path):
    (tmp_path / "q.tsv").write_text(QUERIES)
    (tmp_path / "q.jsonl").write_text('{"_id": "q7", "text": "x"}\n{"query_id": 8, "text": "y"}\n')
    assert read_query_ids(tmp_path / "q.tsv") == ["q1", "q2"]
    assert read_query_ids(tmp_path / "q.jsonl") == ["q7", "8"]


@pytest.mark.parametrize("text, line, problem", [
    ("q1\nq2 q3\n", 2, "'q2 q3' holds blanks: give one query id per line"),
    ("q1\nq2\nq1\n", 3, "duplicate query id 'q1' (first at line 1)"),
    ("q1\n\tq2\n", 2, "empty query id"),
])
def test_a_file_of_ids_refuses_what_is_no_list_of_ids(tmp_path, text, line, problem):
    path = tmp_path / "ids.txt"
    path.write_text(text)
    message = _error(read_query_ids, path)
    assert message.startswith(f"{path}:{line}: {problem}")


def test_an_empty_file_of_ids_is_an_empty_split(tmp_path):
    (tmp_path / "ids.txt").write_text("# none yet\n")
    assert read_query_ids(tmp_path / "ids.txt") == []


def _tuned_world(repo: Path, ids: str) -> Path:
    """small_world in a git repository whose config declares the README's tuning split."""
    repo.mkdir()
    config = small_world(repo, leak_in_new=False,
                         extra_config="tuning:\n  queries: eval/tuning-ids.txt\n  params: [boost]\n")
    (repo / "eval").mkdir()
    (repo / "eval" / "tuning-ids.txt").write_text(ids)
    (repo / ".gitignore").write_text(".retrieval-gate/\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    return config


def test_the_readmes_tuning_example_is_read_on_a_pull_request(tmp_path, capsys):
    repo = tmp_path / "repo"
    config = _tuned_world(repo, "# the queries boost was fitted on\n" + "".join(f"q_{i:04d}\n" for i in range(8)))
    archive(load_config(config), progress=lambda message: None)
    (repo / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 1.5\n")  # the PR: a tuned value
    out = tmp_path / "out"
    code = main(["run", "--config", str(config), "--base", "HEAD", "--out", str(out)])
    assert code in (0, 1, 3), capsys.readouterr().err
    tuning = json.loads((out / "report.json").read_text())["tuning"]
    assert tuning["tuning_count"] == 8 and tuning["holdout_count"] == 12 and tuning["unknown_ids"] == []


def test_a_message_about_a_yardstick_file_names_the_path_the_config_wrote(tmp_path, capsys):
    """The base commit's files are read from a temporary copy; a message names the repository path
    the config wrote (and that the file is the base commit's), never the copy."""
    repo = tmp_path / "repo"
    config = _tuned_world(repo, "q_0000\nq_0001 q_0002\n")
    base = _git(repo, "rev-parse", "HEAD")
    # A change the gate judges (one that touches no watched file is skipped before any file is read).
    (repo / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 1.5\n")
    assert main(["run", "--config", str(config), "--base", "HEAD", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    line = err.strip().splitlines()[-1]  # after the progress lines
    assert line.startswith("retrieval-gate: error: eval/tuning-ids.txt:2: 'q_0001 q_0002' holds blanks"), err
    assert line.endswith(f"(as of the base commit {base[:12]})") and "retrieval-gate-yardstick" not in err


def test_sweep_takes_a_plain_file_of_ids_as_its_tuning_split(tmp_path, capsys):
    qrels = "".join(f"q{i} 0 d{i} 1\nq{i} 0 e{i} 0\n" for i in range(12))
    (tmp_path / "qrels.txt").write_text(qrels)
    for cell, first in (("a", "d"), ("b", "e")):
        (tmp_path / f"{cell}.run").write_text("".join(f"q{i} Q0 {first if i % 3 else 'd'}{i} 1 2.0 t\n"
                                                      f"q{i} Q0 x{i} 2 1.0 t\n" for i in range(12)))
    (tmp_path / "ids.txt").write_text("".join(f"q{i}\n" for i in range(6)))
    assert main(["sweep", "--cell", f"a={tmp_path / 'a.run'}", "--cell", f"b={tmp_path / 'b.run'}",
                 "--qrels", str(tmp_path / "qrels.txt"), "--tuning", str(tmp_path / "ids.txt"), "--samples", "50",
                 "--folds", "2", "--format", "json"]) == 0
    held_out = json.loads(capsys.readouterr().out)["held_out"]
    assert held_out["query_count"] == 6


# -- 2. files that are no text the gate reads ----------------------------------------------------

def _tar(name: str, data: bytes, mode: str = "w") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as tar:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _zip(name: str, data: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive_file:
        archive_file.writestr(name, data)
    return buffer.getvalue()


def _forms(text: str) -> dict[str, tuple[bytes, str]]:
    """The file a user hands in, by what it is: (bytes, what the message must say)."""
    data = text.encode()
    return {
        "utf16-le": (text.encode("utf-16"), "is UTF-16 text (byte-order mark FF FE): save it as UTF-8"),
        "utf16-be": (b"\xfe\xff" + text.encode("utf-16-be"),
                     "is UTF-16 text (byte-order mark FE FF): save it as UTF-8"),
        "utf16-no-mark": (text.encode("utf-16-le"), "is UTF-16 text (little-endian, no byte-order mark)"),
        "utf32": (text.encode("utf-32"), "is UTF-32 text (byte-order mark FF FE 00 00)"),
        "zip": (_zip("x.txt", data), "is a ZIP archive"),
        "tar": (_tar("x.txt", data), "is a tar archive: extract the file from it first"),
        "tar.gz": (_tar("x.txt", data, "w:gz"), "is a tar archive, gzip-compressed: extract the file from it first"),
        "bz2": (bz2.compress(data), "is a bzip2-compressed file: decompress it first (bunzip2)"),
        "xz": (lzma.compress(data), "is an xz-compressed file: decompress it first (unxz)"),
        "zstd": (b"\x28\xb5\x2f\xfd" + b"\x00" * 40, "is a Zstandard-compressed file"),
        "utf16.gz": (gzip.compress(text.encode("utf-16")), "is UTF-16 text (byte-order mark FF FE), gzip-compressed"),
    }


READERS = {"qrels": (read_qrels, QRELS), "queries": (load_queries, QUERIES), "run": (read_run, RUN)}


@pytest.mark.parametrize("form", list(_forms("x")))
@pytest.mark.parametrize("reader", list(READERS))
def test_a_file_in_another_format_is_named_by_every_reader(tmp_path, reader, form):
    read, text = READERS[reader]
    data, said = _forms(text)[form]
    path = tmp_path / f"input.{form}"
    path.write_bytes(data)
    message = _error(read, str(path))
    assert message.startswith(f"{path}: {said}"), message
    assert "control character" not in message
    assert message.endswith("the gate reads UTF-8 text, plain or gzip-compressed")


def test_a_corpus_in_another_format_is_named(tmp_path, capsys):
    (tmp_path / "q.tsv").write_text(QUERIES)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes('{"id": "d1", "text": "a gate"}\n'.encode("utf-16"))
    assert main(["leakcheck", "--queries", str(tmp_path / "q.tsv"), "--corpus", str(corpus)]) == 2
    assert capsys.readouterr().err.startswith(
        f"retrieval-gate: error: {corpus}: is UTF-16 text (byte-order mark FF FE)")


def test_a_config_in_another_format_is_named(tmp_path):
    path = tmp_path / "gate.yml"
    path.write_bytes("suite: x\n".encode("utf-16"))
    assert _error(read_text_file, path, "a gate config").startswith(f"{path}: is UTF-16 text (byte-order mark FF FE)")
    path.write_bytes(gzip.compress(b"suite: x\n"))  # a small file read whole is never decompressed
    assert _error(read_text_file, path, "a gate config") == (f"{path}: is a gzip-compressed file: decompress it first "
                                                             "(gunzip); the gate reads this file as plain UTF-8 text")


def test_gzip_is_still_read_and_text_that_starts_like_a_format_is_text(tmp_path):
    (tmp_path / "qrels.txt.gz").write_bytes(gzip.compress(QRELS.encode()))
    assert len(read_qrels(tmp_path / "qrels.txt.gz")) == 3
    for start in ("PK03 0 d1 1\n", "BZh9 0 d1 1\n", "PAR1 0 d1 1\n", "%PDF-1 0 d1 1\n", "7z 0 d1 1\n"):
        (tmp_path / "qrels.txt").write_text(start)
        assert len(read_qrels(tmp_path / "qrels.txt")) == 1, start
    assert binary_format("q1\tcafé\n".encode()) is None and binary_format(b"\xef\xbb\xbfq1\n") is None
    assert binary_format(b"BZh1 0 d1 1\x00\n") is None  # a NUL in text that starts like bzip2: still no bzip2


def test_real_dl19_qrels_converted_to_utf16_or_zipped_are_named(tmp_path, capsys):
    source = need(REALDATA / "runs" / "trec-dl-2019-passage" / "qrels" / "qrels.dl19-passage.txt")
    text = source.read_text()
    (tmp_path / "qrels16.txt").write_bytes(text.encode("utf-16"))
    (tmp_path / "qrels.zip").write_bytes(_zip("qrels.dl19-passage.txt", text.encode()))
    (tmp_path / "a.run").write_text("19335 Q0 1017759 1 1.0 t\n")
    for name, said in (("qrels16.txt", "is UTF-16 text (byte-order mark FF FE)"), ("qrels.zip", "is a ZIP archive")):
        assert main(["compare", "--baseline", str(tmp_path / "a.run"), "--candidate", str(tmp_path / "a.run"),
                     "--qrels", str(tmp_path / name)]) == 2
        assert capsys.readouterr().err.startswith(f"retrieval-gate: error: {tmp_path / name}: {said}")


# -- 3. a BEIR folder's split -----------------------------------------------------------------------

def _beir(folder: Path) -> Path:
    (folder / "qrels").mkdir(parents=True)
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": f"q{i}", "text": f"query {i}"}) + "\n"
                                                  for i in range(1, 5)))
    (folder / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "text": "doc"}) + "\n")
    header = "query-id\tcorpus-id\tscore\n"
    (folder / "qrels" / "test.tsv").write_text(header + "q1\td1\t1\nq2\td1\t1\n")
    (folder / "qrels" / "dev.tsv").write_text(header + "q3\td1\t1\n")
    (folder / "qrels" / "train.tsv.gz").write_bytes(gzip.compress((header + "q4\td1\t1\n").encode()))
    return folder


def test_a_beir_folder_reads_test_unless_a_split_is_named(tmp_path):
    folder = _beir(tmp_path / "scifact")
    assert load_qrels(str(folder)).query_ids() == ["q1", "q2"]
    assert load_qrels(f"{folder}#split=dev").query_ids() == ["q3"]
    assert load_qrels(f"{folder}#split=train").query_ids() == ["q4"]
    assert load_qrels(str(folder), "dev").query_ids() == ["q3"]
    assert len(load_queries(f"{folder}#split=dev")) == 4  # every query of the folder, as without a split


@pytest.mark.parametrize("suffix, problem", [
    ("#split=validation", "qrels/validation.tsv: no such file in BEIR folder (available splits: dev, test, train)"),
    ("#dev", "#dev: unknown suffix '#dev' after a BEIR folder (expected '#split=<name>', e.g. '#split=dev')"),
    ("#split=../../etc", "split '../../etc' is not a plain name"),
])
def test_a_split_the_folder_does_not_hold_is_refused_in_one_line(tmp_path, suffix, problem):
    folder = _beir(tmp_path / "scifact")
    message = _error(load_qrels, f"{folder}{suffix}")
    assert problem in message and "\n" not in message


def test_a_file_whose_name_holds_a_hash_is_still_a_file(tmp_path):
    (tmp_path / "qrels#split=dev").write_text(QRELS)
    assert len(load_qrels(str(tmp_path / "qrels#split=dev"))) == 3
    (tmp_path / "qrels.txt").write_text(QRELS)
    assert "picks qrels/<split>.tsv of a BEIR folder, and this is a file" in \
        _error(load_qrels, str(tmp_path / "qrels.txt"), "dev")


def _config(folder: Path, golden: str) -> Path:
    (folder / "retrieval.yml").write_text("k: 1\n")
    path = folder / "gate.yml"
    path.write_text(f"golden:\n{golden}retrieval: {{config: retrieval.yml}}\nrunner: {{type: run-file}}\n")
    return path


def test_golden_split_picks_the_split_and_the_manifest_records_it(tmp_path):
    _beir(tmp_path / "scifact")
    config = load_config(_config(tmp_path, "  queries: scifact\n  qrels: scifact\n  split: dev\n"))
    golden = load_golden(config)
    assert golden.universe.query_ids == ("q3",) and golden.qrels_record.id == "scifact#split=dev"
    default = load_golden(load_config(_config(tmp_path, "  queries: scifact\n  qrels: scifact\n")))
    assert default.universe.query_ids == ("q1", "q2") and default.qrels_record.id == "scifact"


def test_golden_split_refuses_what_it_cannot_apply_to(tmp_path):
    _beir(tmp_path / "scifact")
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "q.tsv").write_text(QUERIES)
    config = load_config(_config(tmp_path, "  queries: q.tsv\n  qrels: qrels.txt\n  split: dev\n"))
    assert "key 'golden.split': 'dev' picks qrels/dev.tsv of a BEIR folder, and golden.qrels 'qrels.txt' is no folder" \
        in _error(load_golden, config)
    message = _error(load_config, _config(tmp_path, "  queries: scifact\n  qrels: scifact#split=dev\n"))
    assert ":3: key 'golden.qrels'" in message and "golden.qrels: scifact and golden.split: dev" in message
    assert "key 'golden.split'" in _error(load_config, _config(tmp_path, "  queries: q.tsv\n  qrels: scifact\n"
                                                                         "  split: ../x\n"))


def test_compare_takes_a_split_on_the_command_line(tmp_path, capsys):
    folder = _beir(tmp_path / "scifact")
    (tmp_path / "a.run").write_text("q1 Q0 d1 1 1.0 t\nq3 Q0 d1 1 1.0 t\n")
    assert main(["compare", "--baseline", str(tmp_path / "a.run"), "--candidate", str(tmp_path / "a.run"),
                 "--qrels", f"{folder}#split=dev", "--samples", "20", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["inputs"]["qrels"]["count"] == 1


# -- 4. empty files ---------------------------------------------------------------------------------

@pytest.mark.parametrize("content, why", [
    (b"", "the file is empty"),
    (b"\xef\xbb\xbf", "the file is empty"),
    (b"# nothing yet\n\n   \n", "the file holds only blank lines and # comments"),
    (gzip.compress(b"", mtime=0), "the file is empty"),
])
def test_an_empty_query_or_qrels_file_says_so(tmp_path, content, why):
    path = tmp_path / "input.txt"
    path.write_bytes(content)
    assert _error(load_queries, str(path)) == f"{path}: no queries ({why})"
    assert _error(load_qrels, str(path)) == f"{path}: no judgments ({why})"


def test_qrels_with_only_the_beir_header_say_so(tmp_path):
    (tmp_path / "test.tsv").write_text("query-id\tcorpus-id\tscore\n")
    assert _error(load_qrels, str(tmp_path / "test.tsv")) == \
        f"{tmp_path / 'test.tsv'}: no judgments (the file holds only a header line)"
    (tmp_path / "q.jsonl").write_text("")
    assert _error(load_queries, str(tmp_path / "q.jsonl")) == f"{tmp_path / 'q.jsonl'}: no queries (the file is empty)"


@pytest.mark.parametrize("command", [
    ["compare", "--baseline", "{run}", "--candidate", "{run}", "--qrels", "{qrels}", "--queries", "{empty}"],
    ["noise", "--from-runs", "{run}", "{run2}", "--qrels", "{qrels}", "--queries", "{empty}", "--out", "{out}"],
    ["sweep", "--cell", "a={run}", "--cell", "b={run2}", "--qrels", "{qrels}", "--queries", "{empty}"],
    ["leakcheck", "--queries", "{empty}", "--corpus", "{corpus}"],
])
def test_every_command_names_the_empty_query_file_itself(tmp_path, capsys, command):
    files = {"run": RUN, "run2": RUN.replace("2.0", "3.0"), "qrels": QRELS, "empty": "",
             "corpus": '{"id": "d1", "text": "x"}\n'}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    values = {name: str(tmp_path / name) for name in files} | {"out": str(tmp_path / "n.json")}
    assert main([part.format(**values) for part in command]) == 2
    assert capsys.readouterr().err == f"retrieval-gate: error: {tmp_path / 'empty'}: no queries (the file is empty)\n"


def test_the_overlap_check_never_prints_an_empty_list():
    qrels = Qrels("qrels.txt", {"q1": {"d1": 1}})
    run = Run.from_rankings("a.run", {"q1": {"d1": 1.0}})
    message = _error(require_overlap, run, (), qrels, QuerySet("queries.tsv", ()))
    assert "query ids none; judged 'q1'" in message and "ids ;" not in message


# -- 5. qrels that judge only relevant documents -----------------------------------------------------

def test_relevance_only_qrels_are_told_apart_with_their_counts():
    assert count_judgments(Qrels("q", {"a": {"d1": 1, "d2": 2, "d3": -1}})) == JudgmentCounts(2, 0, 1)
    assert judges_only_relevant(Qrels("q", {"a": {"d1": 1, "d2": 2}}))
    assert not judges_only_relevant(Qrels("q", {"a": {"d1": 1, "d2": 0}}))
    assert not judges_only_relevant(Qrels("q", {"a": {"d1": 2, "d2": 1}}), rel=2)  # 1 is not relevant at rel 2
    assert not judges_only_relevant(Qrels("q", {"a": {"d1": 1, "d2": -1}}, negative_is_judged=True))
    assert not judges_only_relevant(Qrels("q", {}))  # nothing judged: nothing to say
    assert judges_only_relevant(Qrels("q", {"a": {"d1": 1}, "b": {"d2": 0}}), query_ids=["a"])


def _cisi_qrels(tmp_path: Path) -> Path:
    """CISI.REL ('qid docid 0 0.000000': every listed pair relevant) as TREC qrels."""
    rows = [line.split() for line in need(REALDATA / "cisi" / "extracted" / "CISI.REL").read_text().splitlines()]
    path = tmp_path / "cisi.qrels"
    path.write_text("".join(f"{row[0]} 0 {row[1]} 1\n" for row in rows if row))
    return path


def test_cranfield_cisi_and_scifact_judge_only_relevant_documents_and_dl19_does_not(tmp_path):
    cranfield = load_qrels(str(need(REALDATA / "cranfield" / "cranqrel")))
    assert judges_only_relevant(cranfield)  # -1 is trec_eval's "unjudged"
    assert count_judgments(cranfield) == JudgmentCounts(1612, 0, 225)
    assert not judges_only_relevant(Qrels(cranfield.source, cranfield.judgments, negative_is_judged=True))
    assert judges_only_relevant(load_qrels(str(_cisi_qrels(tmp_path))))
    scifact = REALDATA / "scifact" / "beir_test_qrels_topics" / "qrels.beir-v1.0.0-scifact.test.txt"
    assert judges_only_relevant(load_qrels(str(need(scifact))))
    dl19 = REALDATA / "runs" / "trec-dl-2019-passage" / "qrels" / "qrels.dl19-passage.txt"
    assert not judges_only_relevant(load_qrels(str(need(dl19))))


def _relevance_only_world(root: Path, extra: str = "") -> Path:
    config = small_world(root, leak_in_new=False, extra_config=extra)
    qrels = root / "qrels.txt"
    qrels.write_text("".join(line + "\n" for line in qrels.read_text().splitlines() if not line.endswith(" 0")))
    return config


def test_archive_says_when_the_judged_check_would_fail_every_pr_and_names_the_setting(tmp_path):
    said: list[str] = []
    archive(load_config(_relevance_only_world(tmp_path)), progress=said.append)
    notices = [line for line in said if line.startswith("notice:")]
    assert len(notices) == 1 and "judge only relevant documents (60 judgments, none below label 1)" in notices[0]
    assert notices[0].endswith("set judged.qrels_style: relevance-only")
    said.clear()
    (tmp_path / "gate.yml").write_text((tmp_path / "gate.yml").read_text() + "judged: {qrels_style: relevance-only}\n")
    archive(load_config(tmp_path / "gate.yml"), progress=said.append)
    assert not [line for line in said if line.startswith("notice:")]


def test_archive_says_when_relevance_only_is_declared_for_pooled_qrels(tmp_path):
    said: list[str] = []
    config = small_world(tmp_path, leak_in_new=False, extra_config="judged: {qrels_style: relevance-only}\n")
    archive(load_config(config), progress=said.append)
    assert [line for line in said if line.startswith("notice:")] == [
        "notice: judged.qrels_style is relevance-only, but the golden qrels judge 100 documents not relevant (label "
        "below 1): the judged-share limits (policy.max_unjudged, policy.max_judged_drop) apply; set "
        "judged.qrels_style: pooled to say so"]


def test_no_notice_when_the_limits_are_already_off_or_the_qrels_are_pooled():
    only = Qrels("q", {"a": {"d1": 1}})
    pooled = Qrels("q", {"a": {"d1": 1, "d2": 0}})
    kwargs = dict(rel=1, qrels_style="pooled", max_unjudged=1.0, max_judged_drop=1.0)
    assert qrels_style_notice(only, ["a"], **kwargs) is None
    assert qrels_style_notice(pooled, ["a"], **{**kwargs, "max_unjudged": 0.3}) is None
    drop_only = qrels_style_notice(only, ["a"], **{**kwargs, "max_judged_drop": 0.1})
    assert "policy.max_judged_drop would fail a PR on a fall in precision alone" in drop_only


def test_run_on_relevance_only_qrels_fails_the_judged_check_unless_the_style_is_declared(tmp_path, capsys):
    config = _relevance_only_world(tmp_path)
    archive(load_config(config), progress=lambda message: None)
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 1.5\n")
    main(["run", "--config", str(config), "--out", str(tmp_path / "out")])
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    reasons = [r for r in report["verdict"]["reasons"] if r["code"] == "judged_share"]
    assert reasons and "set judged.qrels_style: relevance-only" in reasons[0]["message"]
    config.write_text(config.read_text() + "judged: {qrels_style: relevance-only}\n")
    main(["run", "--config", str(config), "--out", str(tmp_path / "out")])
    capsys.readouterr()
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert not [r for r in report["verdict"]["reasons"] if r["code"] == "judged_share"]
    assert report["judged"]["limits"]["max_unjudged"] is None and report["judged"]["limits"]["max_judged_drop"] is None
    assert report["judged"]["candidate"]["judged"] < 0.7  # still reported: the relevant share


def test_a_declared_relevance_only_style_labels_no_delta_judgment_limited():
    qrels = Qrels("q", {"a": {"d1": 1}, "b": {"d3": 1}})
    base = Run.from_rankings("b", {"a": {"d1": 2.0, "x": 1.0}, "b": {"d3": 1.0}})
    cand = Run.from_rankings("c", {"a": {"y": 2.0, "z": 1.0}, "b": {"w": 1.0}})
    from gate.evaluation.evaluate import evaluate

    values = [evaluate(run, qrels, ["nDCG@10"], ["a", "b"]) for run in (base, cand)]
    pooled = judged_check(base, cand, *values, qrels, ["a", "b"], "nDCG@10", {})
    declared = judged_check(base, cand, *values, qrels, ["a", "b"], "nDCG@10", {}, qrels_style="relevance-only")
    assert pooled.judgment_limited and not pooled.limits_waived and pooled.limits["max_unjudged"] == 0.3
    assert not declared.judgment_limited and declared.limits_waived and declared.limits["max_unjudged"] is None
    assert declared.candidate.mean == pooled.candidate.mean  # Judged@k is reported either way


# -- 6. every sub-command's --help has a description ------------------------------------------------

def _commands():
    return build_parser()._subparsers._group_actions[0]


@pytest.mark.parametrize("name", list(_commands().choices))
def test_every_subcommands_help_opens_with_its_description(name, capsys):
    action = _commands()
    summary = next(choice.help for choice in action._choices_actions if choice.dest == name)
    with pytest.raises(SystemExit) as done:
        main([name, "--help"])
    assert done.value.code == 0
    page = "".join(capsys.readouterr().out.split())  # argparse wraps lines, after a hyphen too
    description = action.choices[name].description
    assert description and description.lower().startswith(summary.lower()) and len(description) > len(summary) + 20
    assert "".join(description.split()) in page
