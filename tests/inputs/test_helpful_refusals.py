"""Refusals and warnings that tell a user what to do (issue "What users read", deliverable 5):
each case of the issue's "Why", reproduced and shown fixed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gate.checks.judged_share import relevance_only
from gate.cli import main
from gate.common.errors import InputError
from gate.inputs.config import load_config
from gate.inputs.readers.qrels import load_qrels
from gate.inputs.readers.queries import read_queries
from gate.inputs.readers.records import Qrels
from gate.pipeline.archive import archive
from gate.verdict.rules import Findings, Policy, failures_of, percentages
from tests.shared_data import REALDATA, need
from tests.support.small_world import small_world


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=cwd, check=True,
                   capture_output=True)


# -- query files in other formats ------------------------------------------------------------------

@pytest.mark.parametrize("text, names", [
    (".I 001\n.W\nwhat similarity laws must be obeyed\n", ["SMART-format", "irds:cranfield"]),
    ("<top>\n<num> Number: 301\n<title> International Organized Crime\n</top>\n", ["TREC topics", "irds:"]),
    ("  <TOP>\n", ["TREC topics"]),
    ('<?xml version="1.0"?>\n<topics>\n<topic number="1">\n', ["TREC topics", "irds:"]),
    ("<topics>\n", ["TREC topics"]),
])
def test_a_query_file_in_another_format_is_named_with_what_to_give_instead(tmp_path, text, names):
    path = tmp_path / "queries.txt"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        read_queries(path)
    message = str(caught.value)
    assert "expected 'qid<TAB>text', found no tab" in message and ":1:" in message
    for name in names:
        assert name in message


def test_a_plain_line_without_a_tab_gets_no_format_guess(tmp_path):
    path = tmp_path / "queries.txt"
    path.write_text("q1 what is bm25\n")
    with pytest.raises(InputError) as caught:
        read_queries(path)
    assert str(caught.value).endswith("expected 'qid<TAB>text', found no tab")


def test_cranfields_own_query_file_gets_the_hint(capsys):
    code = main(["leakcheck", "--queries", str(need(REALDATA / "cranfield" / "cran.qry")),
                 "--corpus", str(need(REALDATA / "cranfield" / "cran.all.1400"))])
    err = capsys.readouterr().err
    assert code == 2 and "irds:cranfield" in err and err.count("\n") == 1


def test_vaswanis_topic_file_is_pointed_at_irds_vaswani_not_at_another_collection(capsys):
    code = main(["leakcheck", "--queries", str(need(REALDATA / "vaswani" / "query-text.trec")),
                 "--corpus", str(need(REALDATA / "vaswani" / "doc-text.trec"))])
    err = capsys.readouterr().err
    assert code == 2 and "TREC topics" in err and "irds:vaswani" in err and "msmarco" not in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("corpus, names", [
    (("cranfield", "cran.all.1400"), ["SMART-format document file", "irds:cranfield"]),
    (("vaswani", "doc-text.trec"), ["TREC document file", "irds:vaswani"]),
    (("cisi", "extracted", "CISI.ALL"), ["SMART-format document file", "ir_datasets does not serve CISI"]),
    (("vaswani", "original_npl_format", "doc-text"), ["NPL format of the Vaswani collection", "irds:vaswani"]),
])
def test_a_real_corpus_in_smart_or_trec_format_gets_the_hint(tmp_path, capsys, corpus, names):
    queries = tmp_path / "q.tsv"
    queries.write_text("1\tmeasurement of dielectric constant\n")
    code = main(["leakcheck", "--queries", str(queries), "--corpus", str(need(REALDATA.joinpath(*corpus)))])
    err = capsys.readouterr().err
    assert code == 2 and ":1: expected 'id<TAB>text', found 0 tab(s); this looks like" in err
    assert err.count("\n") == 1
    for name in names:
        assert name in err


def test_a_corpus_given_as_the_queries_is_named_for_what_it_is(capsys):
    code = main(["leakcheck", "--queries", str(need(REALDATA / "vaswani" / "doc-text.trec")),
                 "--corpus", str(need(REALDATA / "vaswani" / "query-text.trec"))])
    err = capsys.readouterr().err
    assert code == 2 and "a TREC document file" in err and "a corpus, not queries" in err
    assert err.count("\n") == 1


def test_the_collection_is_guessed_from_the_files_folder_and_name_only(tmp_path):
    home = tmp_path / "cranston" / "work"  # a home folder that happens to hold "cran" is no evidence
    home.mkdir(parents=True)
    (home / "queries.txt").write_text(".I 1\n.W\nwhat\n")
    with pytest.raises(InputError) as caught:
        read_queries(home / "queries.txt")
    assert "irds:cranfield (" not in str(caught.value) and "irds:<id>" in str(caught.value)


def test_a_folder_of_files_holding_qrels_is_told_why_it_was_read_as_beir(tmp_path, capsys):
    site = tmp_path / "site"
    (site / "qrels").mkdir(parents=True)
    (site / "guide.md").write_text("how to reset a password\n")
    queries = tmp_path / "q.tsv"
    queries.write_text("1\treset a password\n")
    code = main(["leakcheck", "--queries", str(queries), "--corpus", str(site)])
    err = capsys.readouterr().err
    assert code == 2 and "corpus.jsonl: no such file in BEIR folder" in err
    assert "holds qrels/, so it is read as a BEIR folder" in err and "sub-folder" in err


# -- qrels that judge only relevant documents -------------------------------------------------------

def test_relevance_only_qrels_are_told_apart():
    assert relevance_only(Qrels("q", {"a": {"d1": 1, "d2": 2}, "b": {"d3": 1}}), ["a", "b"], 1)
    assert not relevance_only(Qrels("q", {"a": {"d1": 1, "d2": 0}}), ["a"], 1)
    assert not relevance_only(Qrels("q", {"a": {"d1": 2, "d2": 1}}), ["a"], 2)  # 1 is non-relevant at rel 2
    # A negative label is unjudged (trec_eval) unless the qrels say it is judged.
    assert relevance_only(Qrels("q", {"a": {"d1": 1, "d2": -1}}), ["a"], 1)
    assert not relevance_only(Qrels("q", {"a": {"d1": 1, "d2": -1}}, True), ["a"], 1)
    assert not relevance_only(Qrels("q", {}), ["a"], 1)  # nothing judged: nothing to say


def test_compare_on_relevance_only_qrels_warns_and_names_the_settings(tmp_path, capsys):
    (tmp_path / "q.txt").write_text("q1 0 d1 1\nq2 0 d3 1\n")
    (tmp_path / "a.run").write_text("q1 Q0 d1 1 2.0 a\nq1 Q0 d2 2 1.0 a\nq2 Q0 d3 1 1.0 a\n")
    assert main(["compare", "--baseline", str(tmp_path / "a.run"), "--candidate", str(tmp_path / "a.run"),
                 "--qrels", str(tmp_path / "q.txt"), "--samples", "50", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "warning: these qrels judge only relevant documents" in out and "policy.max_unjudged: 1.0" in out
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert report["warnings"][0].startswith("these qrels judge only relevant documents")


def test_a_usage_error_names_the_program_once(capsys):
    assert main(["compare", "--nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("retrieval-gate: error: compare: ") and err.count("retrieval-gate") == 1


def test_vaswani_judges_only_relevant_documents_and_dl19_does_not():
    vaswani = load_qrels(str(need(REALDATA / "vaswani" / "qrels")))
    assert relevance_only(vaswani, list(vaswani.judgments), 1)
    dl19 = load_qrels(str(need(REALDATA / "runs" / "trec-dl-2019-passage" / "qrels" / "qrels.dl19-passage.txt")))
    assert not relevance_only(dl19, list(dl19.judgments), 1)


def test_the_unjudged_share_failure_names_the_setting_for_relevance_only_qrels():
    findings = dict(metric="nDCG@10", query_count=20, delta=0.0, ci_low=-0.01, ci_high=0.01, judged_k=10,
                    unjudged_share=0.9, judged_drop=0.2)
    plain = failures_of(Findings(**findings), Policy())
    hinted = failures_of(Findings(**findings, relevance_only_qrels=True), Policy())
    assert [r.code for r in plain] == [r.code for r in hinted] == ["judged_share", "judged_share"]
    assert not any("policy.max_unjudged" in r.message for r in plain)
    assert "policy.max_unjudged" in hinted[0].message and "judge only relevant documents" in hinted[0].message
    assert "policy.max_unjudged" not in hinted[1].message  # said once


def test_a_share_above_its_limit_never_reads_as_the_limit():
    assert percentages(0.305, 0.3) == ("30.5%", "30%")
    assert percentages(0.3001, 0.3) == ("30.01%", "30%")
    assert percentages(0.45, 0.3) == ("45%", "30%")
    message = failures_of(Findings(metric="m", query_count=1, delta=0, ci_low=0, ci_high=0, unjudged_share=0.3049),
                          Policy())[0].message
    assert message.startswith("30.5% of the candidate's top 10 is unjudged (limit 30%)")


# -- lift with a threshold above every label ---------------------------------------------------------

def test_lift_with_a_threshold_above_every_label_says_so(tmp_path, capsys):
    (tmp_path / "q.txt").write_text("q1 0 d1 1\nq1 0 d2 0\n")
    (tmp_path / "a.run").write_text("q1 Q0 d1 1 2.0 a\nq1 Q0 d2 2 1.0 a\n")
    code = main(["lift", "--before-run", str(tmp_path / "a.run"), "--after-run", str(tmp_path / "a.run"),
                 "--qrels", str(tmp_path / "q.txt"), "--rel-threshold", "2", "--output-dir", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "no judgment" in err and "the highest is 1" in err
    assert not (tmp_path / "o").exists()


# -- archive with uncommitted changes -----------------------------------------------------------------

def _commit_all(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q", "-b", "main")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "base")


def _archived_world(tmp_path: Path) -> Path:
    path = small_world(tmp_path, leak_in_new=False)
    _commit_all(tmp_path)
    return path


def test_archive_warns_when_a_file_it_records_is_not_committed(tmp_path):
    path = _archived_world(tmp_path)
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v2}\nboost: 1.0\n")
    said: list[str] = []
    archive(load_config(path), progress=said.append)
    warnings = [m for m in said if m.startswith("warning:")]
    assert len(warnings) == 1 and "retrieval.yml" in warnings[0] and "not committed" in warnings[0]


def test_archive_of_a_clean_checkout_says_nothing_of_commits(tmp_path):
    path = _archived_world(tmp_path)
    said: list[str] = []
    archive(load_config(path), progress=said.append)
    assert not [m for m in said if m.startswith("warning:")]
    # Without runner.inputs the whole working tree is the code under test: a new file is a change
    # to it, not to a file the manifest records.
    (tmp_path / "notes.txt").write_text("an uncommitted file\n")
    said.clear()
    archive(load_config(path), progress=said.append)
    [warning] = [m for m in said if m.startswith("warning:")]
    assert "the code under test has changes" in warning and "(notes.txt)" in warning


def test_archive_warns_when_a_file_it_records_is_ignored_by_git(tmp_path):
    path = small_world(tmp_path, leak_in_new=False)
    (tmp_path / ".gitignore").write_text("corpus-*.jsonl\n")
    _commit_all(tmp_path)
    said: list[str] = []
    archive(load_config(path), progress=said.append)
    [warning] = [m for m in said if m.startswith("warning:")]
    assert warning.startswith("warning: corpus-v1.jsonl is ignored by git: commit ") and "does not hold it" in warning


def _world_with_declared_code(tmp_path: Path) -> Path:
    path = small_world(tmp_path, leak_in_new=False)
    path.write_text(path.read_text().replace('--output {run}"\n', '--output {run}"\n  inputs: [search/*.py]\n'))
    (tmp_path / "search").mkdir()
    (tmp_path / "search" / "rank.py").write_text("W = 1\n")
    _commit_all(tmp_path)
    return path


def test_archive_warns_when_the_code_under_test_is_not_committed(tmp_path):
    path = _world_with_declared_code(tmp_path)
    (tmp_path / "search" / "rank.py").write_text("W = 2\n")
    (tmp_path / "search" / "new.py").write_text("X = 1\n")
    said: list[str] = []
    archive(load_config(path), progress=said.append)
    [warning] = [m for m in said if m.startswith("warning:")]
    assert "the code under test has changes not in commit" in warning
    assert "(search/rank.py, search/new.py)" in warning and "commit them and archive again" in warning


def test_archive_names_only_declared_code_and_not_when_given_a_run_file(tmp_path):
    path = _world_with_declared_code(tmp_path)
    (tmp_path / "notes.txt").write_text("not code under test: runner.inputs says what is\n")
    said: list[str] = []
    archive(load_config(path), progress=said.append)
    assert not [m for m in said if m.startswith("warning:")]
    (tmp_path / "search" / "rank.py").unlink()  # a deleted declared file is a change too
    said.clear()
    (tmp_path / "search" / "keep.py").write_text("W = 1\n")
    archive(load_config(path), progress=said.append)
    [warning] = [m for m in said if m.startswith("warning:")]
    assert "search/rank.py" in warning and "search/keep.py" in warning


# -- a relevance threshold above every label, wherever it is set ------------------------------------

@pytest.mark.parametrize("option", [["--metric", "RR(rel=9)@10"], ["--also", "P(rel=3)@5"]])
def test_a_threshold_in_a_measure_name_above_every_label_is_refused(tmp_path, capsys, option):
    (tmp_path / "q.txt").write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n")
    (tmp_path / "a.run").write_text("q1 Q0 d1 1 2.0 a\nq1 Q0 d2 2 1.0 a\nq2 Q0 d3 1 1.0 a\n")
    code = main(["compare", "--baseline", str(tmp_path / "a.run"), "--candidate", str(tmp_path / "a.run"),
                 "--qrels", str(tmp_path / "q.txt"), "--samples", "50", *option])
    err = capsys.readouterr().err
    assert code == 2 and f"{option[1]} asks for rel" in err and "the highest is 2" in err
    assert main(["compare", "--baseline", str(tmp_path / "a.run"), "--candidate", str(tmp_path / "a.run"),
                 "--qrels", str(tmp_path / "q.txt"), "--samples", "50", "--also", "P(rel=2)@5"]) == 0


def test_golden_rel_above_every_label_is_a_config_error_at_its_line(tmp_path):
    path = small_world(tmp_path, leak_in_new=False)
    path.write_text(path.read_text().replace("rel: 1}", "rel: 3}"))
    with pytest.raises(InputError) as caught:
        archive(load_config(path), progress=lambda m: None)
    message = str(caught.value)
    assert "golden.rel" in message and "the highest is 2" in message and f"{path}:" in message
