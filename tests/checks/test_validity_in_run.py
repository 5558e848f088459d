"""Validity checks inside `run`: leaks tagged new/removed/both, the reporting set, tuning
held-out reporting and overlap, prompt leaks, judged share; all on a small real retrieval."""

from __future__ import annotations

import json

from gate.inputs.config import load_config
from gate.pipeline.archive import archive
from gate.pipeline.run import run_gate
from tests.support.small_world import small_world as _world


def _silent(message: str) -> None:
    pass


def test_new_leaks_are_tagged_excluded_from_the_reporting_set_and_fail(tmp_path):
    path = _world(tmp_path, leak_in_new=True)
    archive(load_config(path), progress=_silent)
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v2}\nboost: 1.0\n")
    outcome = run_gate(load_config(path), progress=_silent)
    report = outcome.report
    leakage = report["leakage"]
    assert leakage["new"] == ["q_0001", "q_0004", "q_0007"] and leakage["removed"] == []
    assert {m["tag"] for m in leakage["matched"]} == {"new"}
    assert leakage["recommendation"] == "exclude faq/common-questions from the snapshot or re-judge."
    assert report["reporting_set"]["query_count"] == 17
    assert report["reporting_set"]["excluded_leaked"] == ["q_0001", "q_0004", "q_0007"]
    assert report["query_count"] == 17
    assert report["delta_all_queries"]["query_count"] == 20
    assert "delta_with_leaked" in leakage and "delta_without_leaked" in leakage
    assert outcome.verdict.kind == "fail"
    assert outcome.verdict.reasons[0].code == "new_leaked_queries"
    assert "faq/common-questions" in outcome.verdict.reasons[0].message


def test_leaks_in_both_snapshots_are_tagged_both_and_do_not_fail(tmp_path):
    path = _world(tmp_path, leak_in_new=True)
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v2}\nboost: 1.0\n")
    archive(load_config(path), progress=_silent)
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v2}\nboost: 2.0\n")
    report = run_gate(load_config(path), progress=_silent).report
    assert report["leakage"]["both"] == ["q_0001", "q_0004", "q_0007"] and report["leakage"]["new"] == []
    assert report["leakage"]["same_snapshot"] is True
    assert report["verdict"]["reasons"][0]["code"] != "new_leaked_queries"


def test_changing_a_tunable_parameter_reports_on_held_out_queries(tmp_path):
    tuning_ids = [f"q_{i:04d}" for i in range(12)]
    extra = f"tuning:\n  queries: {json.dumps(tuning_ids)}\n  params: [boost]\n"
    path = _world(tmp_path, leak_in_new=False, extra_config=extra)
    archive(load_config(path), progress=_silent)
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 3.0\n")
    report = run_gate(load_config(path), progress=_silent).report
    assert report["tuning"]["applies"] is True and report["tuning"]["changed_params"] == ["boost"]
    assert report["tuning"]["holdout_count"] == 8
    assert report["reporting_set"]["held_out_only"] is True
    assert report["query_count"] == 8 and report["reporting_set"]["name"].startswith("held-out")


def test_tuning_and_reporting_overlap_fails_and_no_split_warns(tmp_path):
    extra = "tuning:\n  queries: [q_0000, q_0001]\n  holdout: [q_0001, q_0002, q_0003]\n  params: [boost]\n"
    path = _world(tmp_path, leak_in_new=False, extra_config=extra)
    archive(load_config(path), progress=_silent)
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 3.0\n")
    outcome = run_gate(load_config(path), progress=_silent)
    assert outcome.verdict.kind == "fail"
    assert [r.code for r in outcome.verdict.reasons][0] == "tuning_overlap"

    path = _world(tmp_path, leak_in_new=False, extra_config="tuning:\n  params: [boost]\n")
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 3.0\n")
    outcome = run_gate(load_config(path), progress=_silent)
    assert any("no tuning split is declared" in w for w in outcome.report["warnings"])


def test_prompt_files_quoting_golden_queries_or_relevant_documents_are_reported(tmp_path):
    path = _world(tmp_path, leak_in_new=False, extra_config="prompts: ['prompts/*.txt']\n")
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "rewrite.txt").write_text(
        "You rewrite search queries.\n"
        "Example: how do i configure webhooks with giraffe settings\n"
        "Cite guide/rate-limits-1#c0 when relevant.\n"
        "Text: webhooks violin part 0 configure the dashboard settings before\n")
    archive(load_config(path), progress=_silent)
    report = run_gate(load_config(path), progress=_silent).report
    kinds = {(m["file"], m["line"], m["kind"]) for m in report["prompts"]["matches"]}
    assert ("prompts/rewrite.txt", 2, "query_text") in kinds
    assert ("prompts/rewrite.txt", 3, "relevant_doc_id") in kinds
    assert any(kind == "relevant_doc_text" for _, _, kind in kinds)


def _reasons(outcome) -> list[tuple[str, str]]:
    return [(r.code, r.message) for r in outcome.verdict.reasons]


def test_a_prompts_check_that_cannot_run_says_so_and_fails_under_strict_validity(tmp_path):
    """A glob for a misspelt folder scanned nothing, and a UTF-16 or gzip file was 'scanned' with
    no match; each passed without a word (issue 19)."""
    import gzip

    query = "how do i configure webhooks with giraffe settings"
    extra = "prompts: ['prompt/*.txt', 'prompts/*']\n"
    path = _world(tmp_path, leak_in_new=False, extra_config=extra)
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "bom16.txt").write_bytes(f"Example: {query}\n".encode("utf-16"))  # with its BOM
    (tmp_path / "prompts" / "plain16.txt").write_bytes(f"Example: {query}\n".encode("utf-16-le"))  # no BOM
    (tmp_path / "prompts" / "packed.txt.gz").write_bytes(gzip.compress(f"Example: {query}\n".encode()))
    archive(load_config(path), progress=_silent)
    outcome = run_gate(load_config(path), progress=_silent)
    prompts = outcome.report["prompts"]
    assert ("prompts/bom16.txt", 1, "query_text") in {(m["file"], m["line"], m["kind"]) for m in prompts["matches"]}
    problems = prompts["problems"]
    assert "the prompts glob 'prompt/*.txt' matches no file: nothing was scanned for it" in problems
    assert any(p.startswith("the prompt file prompts/plain16.txt holds NUL bytes") for p in problems)
    assert any(p.startswith("the prompt file prompts/packed.txt.gz is gzip-compressed") for p in problems)
    assert prompts["files_scanned"] == 1
    warned = [m for code, m in _reasons(outcome) if code == "warning"]
    assert all(p in warned for p in problems) and outcome.verdict.kind != "fail"

    path.write_text(path.read_text().replace("statistics: {samples: 500}\n",
                                             "statistics: {samples: 500}\npolicy: {strict_validity: true}\n"))
    strict = run_gate(load_config(path), progress=_silent)
    assert strict.verdict.kind == "fail"
    assert sum(code == "validity_check_off" for code, _ in _reasons(strict)) == 3


def test_a_tuning_split_that_names_no_golden_query_is_named_not_taken_for_a_hold_out(tmp_path):
    extra = 'tuning:\n  queries: [nope1, nope2, "q_0001 "]\n  params: [boost]\n'
    path = _world(tmp_path, leak_in_new=False, extra_config=extra)
    archive(load_config(path), progress=_silent)
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 3.0\n")
    outcome = run_gate(load_config(path), progress=_silent)
    tuning = outcome.report["tuning"]
    assert tuning["unknown_ids"] == ["nope1", "nope2", "q_0001 "] and tuning["unknown_count"] == 3
    assert tuning["problems"][0].startswith("tuning.queries names no judged golden query ('nope1', 'nope2', 'q_0001 ')")
    assert not outcome.report["reporting_set"]["name"].startswith("held-out")  # nothing was held out
    assert any(code == "warning" and "names no judged golden query" in m for code, m in _reasons(outcome))

    extra = "tuning:\n  queries: [q_0000, q_0001, typo_9]\n  params: [boost]\n"
    path = _world(tmp_path, leak_in_new=False, extra_config=extra)
    outcome = run_gate(load_config(path), progress=_silent)
    assert outcome.report["tuning"]["problems"] == [
        "1 id in the tuning split is no judged golden query and was left out: 'typo_9'"]


def _everything_leaked(tmp_path, extra_config=""):
    import gate

    path = _world(tmp_path, leak_in_new=True, extra_config=extra_config)
    queries = [json.loads(line) for line in (tmp_path / "golden.jsonl").read_text().splitlines()]
    faq = "".join(json.dumps({"id": f"faq/common-questions#q{i}", "text": f"Questions people ask: {q['text']}?"})
                  + "\n" for i, q in enumerate(queries))
    (tmp_path / "corpus-v2.jsonl").write_text((tmp_path / "corpus-v1.jsonl").read_text() + faq)
    archive(load_config(path), progress=_silent)
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v2}\nboost: 1.0\n")
    return gate.run(path, progress=_silent)


def test_when_every_query_is_leaked_the_leaks_fail_and_the_checks_still_say_what_they_found(tmp_path):
    """No query is left to report on, but the validity checks still decide: the new leaks fail
    the PR (found by an outside tester: it was inconclusive, which passes where inconclusive does
    not block), the empty reporting set is said, the validity checks' sections are in the report
    and the candidate's unjudged documents are written beside it."""
    result = _everything_leaked(tmp_path)
    assert result.verdict.kind == "fail" and result.verdict.exit_code == 1
    assert [r.code for r in result.verdict.reasons] == ["new_leaked_queries", "empty_reporting_set"]
    report = result.report.to_dict()
    assert report["reporting_set"]["query_count"] == 0 and len(report["leakage"]["new"]) == 20
    assert "delta" not in report and "decision" not in report  # no statistics on no query
    assert report["judged"]["query_count"] == 20  # the judged-share check ran on every golden query
    written = {p.name for p in result.write(tmp_path / "out")}
    assert written == {"report.json", "report.md", "comment.md", "unjudged.tsv"}


def test_every_query_leaked_fails_even_where_inconclusive_does_not_block(tmp_path):
    result = _everything_leaked(tmp_path, extra_config="policy: {inconclusive_blocks: false}\n")
    assert (result.verdict.kind, result.verdict.exit_code) == ("fail", 1)


def test_an_empty_reporting_set_without_a_validity_failure_is_inconclusive(tmp_path):
    result = _everything_leaked(tmp_path, extra_config="policy: {max_leaked: 1000}\n")
    assert result.verdict.kind == "inconclusive"
    assert [r.code for r in result.verdict.reasons] == ["empty_reporting_set"]
