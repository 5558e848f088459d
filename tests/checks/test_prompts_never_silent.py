"""Issue 19: tuning and prompt leakage checks that never go silent. Each test is one bullet of the
issue's "Why", on generated files, through `run` and its comment, and on TREC DL 2019's queries
and NIST qrels (MS MARCO's numeric doc ids)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from gate.checks.normalize import normalize, window_score
from gate.checks.prompts import one_changed_word_score, scan_prompts, short_queries
from gate.checks.tuning import looks_tunable, tuning_check
from gate.checks.validity import ReportingSet
from gate.inputs.config import load_config
from gate.inputs.readers.records import Qrels, Query
from gate.inputs.retrieval_config import ABSENT
from gate.pipeline.archive import archive
from gate.pipeline.run import run_gate
from gate.rendering import comment as rendering
from gate.report.spine import Report
from gate.verdict.levels import ALPHA, MIN_QUERIES
from gate.verdict.rules import Findings, Policy, decide
from tests.shared_data import REALDATA, need
from tests.support.small_world import small_world as _world

DL19 = REALDATA / "runs" / "trec-dl-2019-passage"
QUERY = "how do i configure webhooks with giraffe settings"  # q_0000 of the small world


def _silent(message: str) -> None:
    pass


def _qrels(judgments: dict[str, dict[str, int]]) -> Qrels:
    return Qrels("test", judgments)


def _scan(root: Path, globs, queries, judgments, texts=None, **options):
    return scan_prompts(root, globs, queries, _qrels(judgments), texts or {}, **options)


def _where(check, kind="query_text"):
    return [(m.file, m.line, m.query_id or m.doc_id) for m in check.matches if m.kind == kind]


def _comment(report) -> str:
    return rendering.render_comment(Report.from_dict(json.loads(json.dumps(report))))


# --------------------------------------------------------------------------- every quote


def test_every_file_and_line_quoting_a_query_is_reported_not_only_the_first(tmp_path):
    """The old scan kept one match per query across all files: 3 quotes read as 1."""
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "a.txt").write_text(f"Example one: {QUERY}\nfiller line\nAgain: {QUERY.upper()}!\n")
    (tmp_path / "p" / "b.txt").write_text(f"{QUERY}\n")
    queries = [Query("q1", QUERY), Query("q2", "what is the capital of a small country")]
    check = _scan(tmp_path, ["p/*.txt"], queries, {"q1": {"d1": 1}})
    assert _where(check) == [("p/a.txt", 1, "q1"), ("p/a.txt", 3, "q1"), ("p/b.txt", 1, "q1")]
    assert check.to_dict()["by_query"] == [{"kind": "query_text", "id": "q1", "count": 3, "files": 2,
                                            "first": "p/a.txt:1"}]


def test_the_comment_groups_every_quote_per_query_with_counts_and_and_n_more(tmp_path):
    lines = "".join(f"shot {i}: {QUERY}\n" for i in range(8))
    extra = "prompts: ['prompts/*']\n"
    path = _world(tmp_path, leak_in_new=False, extra_config=extra)
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "shots.txt").write_text(lines)
    (tmp_path / "prompts" / "more.txt").write_text(f"{QUERY}\n")
    (tmp_path / "prompts" / "other.txt").write_text("how do i configure rate limits with lantern settings\n")
    archive(load_config(path), progress=_silent)
    outcome = run_gate(load_config(path), progress=_silent)
    prompts = outcome.report["prompts"]
    assert prompts["count"] == 10 and prompts["by_query"][0] == {
        "kind": "query_text", "id": "q_0000", "count": 9, "files": 2, "first": "prompts/more.txt:1"}
    body = _comment(outcome.report)
    line = next(candidate for candidate in body.splitlines() if candidate.startswith("  - query q"))
    assert "9 times in 2 files" in line and line.endswith("and 4 more")
    assert "prompts/more.txt:1, prompts/shots.txt:1, prompts/shots.txt:2" in line
    assert "- **Prompts**: 3 prompt files scanned; the golden set is quoted in 10 places:" in body
    groups = [group for group in body.splitlines() if group.startswith("  - query q")]  # each group a line of its own
    assert len(groups) == 2 and groups[1] == "  - query q\\_0001, once: prompts/other.txt:1"
    warning = next(r.message for r in outcome.verdict.reasons if r.message.startswith("prompt files quote"))
    assert warning.startswith("prompt files quote the golden set in 10 places: query q_0000 9 times "
                              "(prompts/more.txt:1, prompts/shots.txt:1, prompts/shots.txt:2 and 6 more)")


# --------------------------------------------------------------------------- templates


def test_a_query_folded_over_yaml_lines_is_found_at_the_line_its_value_starts(tmp_path):
    (tmp_path / "few.yaml").write_text(
        "system: You are helpful.\n"
        "examples:\n"
        "  - question: >\n"
        "      how do i configure webhooks\n"
        "      with giraffe settings\n"
        "    answer: |\n"
        "      Open the dashboard.\n")
    check = _scan(tmp_path, ["*.yaml"], [Query("q1", QUERY)], {"q1": {"d1": 1}})
    assert _where(check) == [("few.yaml", 4, "q1")]
    assert check.notes == ()


def test_a_passage_with_newline_escapes_in_a_json_string_is_found(tmp_path):
    passage = ("Webhooks are configured per project and every delivery is retried three times "
               "with exponential backoff before it is dropped")
    escaped = passage.replace(" every", "\\nevery").replace(" with", "\\n\\twith")
    (tmp_path / "shots.json").write_text('{\n  "shots": [\n    {"q": "x",\n     "context": "' + escaped + '"}]\n}\n')
    check = _scan(tmp_path, ["*.json"], [Query("q1", QUERY)], {"q1": {"doc-7": 1}}, {"doc-7": passage})
    assert _where(check, "relevant_doc_text") == [("shots.json", 4, "doc-7")]
    # Read as plain text, the escape is a stray token ("nevery") that breaks every shingle across it.
    raw = (tmp_path / "shots.json").read_text()
    assert "nevery" in normalize(raw).split()
    assert _where(_scan(tmp_path, ["*.json"], [], {"q1": {"doc-7": 1}}, {"doc-7": passage}), "relevant_doc_text")


def test_a_json_string_quoting_a_query_with_an_escape_is_found(tmp_path):
    (tmp_path / "p.jsonl").write_text(json.dumps({"messages": [{"role": "user",
                                                                "content": QUERY.replace(" with", "\nwith")}]})
                                      + "\n" + json.dumps({"messages": []}) + "\n")
    check = _scan(tmp_path, ["*.jsonl"], [Query("q1", QUERY)], {"q1": {"d1": 1}})
    assert _where(check) == [("p.jsonl", 1, "q1")]


def test_plain_text_is_read_across_line_breaks(tmp_path):
    (tmp_path / "prompt.md").write_text("# Few-shot\nQ: how do i configure\nwebhooks with giraffe settings\nA: ...\n")
    check = _scan(tmp_path, ["*.md"], [Query("q1", QUERY)], {"q1": {"d1": 1}})
    assert _where(check) == [("prompt.md", 2, "q1")]


def test_a_yaml_template_that_does_not_parse_is_scanned_as_text_and_noted(tmp_path):
    (tmp_path / "t.yaml").write_text("prompt: {{ system }}\n  bad: [\nexample: " + QUERY + "\n")
    check = _scan(tmp_path, ["*.yaml"], [Query("q1", QUERY)], {"q1": {"d1": 1}})
    assert _where(check) == [("t.yaml", 3, "q1")]
    assert len(check.notes) == 1 and check.notes[0].startswith("t.yaml is not valid YAML (line ")
    assert check.notes[0].endswith("): scanned as plain text") and check.problems == ()


def test_invalid_json_is_named_with_its_line(tmp_path):
    (tmp_path / "x.json").write_text('{"a": 1,\n "b": }\n')
    check = _scan(tmp_path, ["*.json"], [Query("q1", QUERY)], {"q1": {"d1": 1}})
    assert check.notes == ("x.json is not valid JSON (line 2: Expecting value): scanned as plain text",)


# --------------------------------------------------------------------------- numeric doc ids


MSMARCO = {"q1": {"6138": 2, "1729": 2, "7067032": 1, "7067034": 0, "8000001": 1}}


def test_numbers_that_happen_to_be_relevant_doc_ids_are_not_flagged_outside_an_id_context(tmp_path):
    """`seed: 6138` and `year: 1729` in a settings file were flagged as relevant doc ids."""
    (tmp_path / "settings.yaml").write_text("seed: 6138\nyear: 1729\nmax_tokens: 7067032\nnote: set seed 6138\n")
    (tmp_path / "notes.txt").write_text("seed: 6138, year 1729 and 3.6138 and v1729 and 6138-1729\n")
    (tmp_path / "cfg.json").write_text('{"seed": 6138, "years": [1729, 2024], "top_k": 1729}\n')
    check = _scan(tmp_path, ["*"], [Query("q1", QUERY)], MSMARCO)
    assert _where(check, "relevant_doc_id") == []


@pytest.mark.parametrize("name, text, expected", [
    ("doc.yaml", "doc: 6138\n", [("doc.yaml", 1, "6138")]),
    ("doc.yaml", "examples:\n  - passage_id: 1729\n    docId: '6138'\n",
     [("doc.yaml", 2, "1729"), ("doc.yaml", 3, "6138")]),
    ("doc.yaml", "relevant: [7067032, 7067034]\n", [("doc.yaml", 1, "7067032")]),  # 7067034 is judged, not relevant
    ("doc.yaml", "positives:\n  6138: first\n  1729: second\n", [("doc.yaml", 2, "6138"), ("doc.yaml", 3, "1729")]),
    ("ids.json", '{"pids": [6138, 1729]}', [("ids.json", 1, "1729"), ("ids.json", 1, "6138")]),
    ("p.txt", "see https://example.org/passages/6138 and corpus/1729.txt\n",
     [("p.txt", 1, "1729"), ("p.txt", 1, "6138")]),
    ("p.txt", "Answer from doc 6138. Also passage_id=1729, [pid: 7067032], docid:8000001\n",
     [("p.txt", 1, "1729"), ("p.txt", 1, "6138"), ("p.txt", 1, "7067032"), ("p.txt", 1, "8000001")]),
    ("p.txt", "relevant: 6138, 7067034, 1729\n", [("p.txt", 1, "1729"), ("p.txt", 1, "6138")]),
    ("ids.txt", "6138\n7067034\n", [("ids.txt", 1, "6138")]),  # one id a line: a list
    ("p.txt", "costs 6,138,000 or 1729\n6138\n", []),  # thousands, a number alone
])
def test_numeric_doc_ids_count_in_an_id_context(tmp_path, name, text, expected):
    (tmp_path / name).write_text(text)
    check = _scan(tmp_path, [name], [Query("q1", QUERY)], MSMARCO)
    assert sorted(_where(check, "relevant_doc_id")) == expected


def test_ids_with_letters_still_count_anywhere_as_whole_words(tmp_path):
    (tmp_path / "p.txt").write_text("cite MED-10 here, not MED-101\n")
    check = _scan(tmp_path, ["p.txt"], [Query("q1", QUERY)], {"q1": {"MED-10": 1}})
    assert _where(check, "relevant_doc_id") == [("p.txt", 1, "MED-10")]


# --------------------------------------------------------------------------- short queries


def test_one_changed_word_in_a_nine_token_query_scores_below_the_threshold_and_the_query_is_named_short():
    """The docs once said one changed word is still caught; in a 9-token query it scores under 0.85."""
    query = "what is the most popular food in switzerland today"
    changed = "what is the most popular dish in switzerland today"
    assert len(query.split()) == 9 and round(window_score(query, changed), 2) == 0.78
    assert one_changed_word_score(normalize(query)) < 0.85
    assert short_queries([Query("q", query)], 0.85, 3) == ("q",)
    long = ("what is the most popular traditional food eaten in the mountain villages of switzerland during "
            "the long winter months")
    assert len(long.split()) >= 18 and one_changed_word_score(normalize(long)) >= 0.85
    assert short_queries([Query("q", long)], 0.85, 3) == ()
    assert window_score(long, long.replace("food", "dish")) >= 0.85


def test_the_cheapest_changed_word_score_is_what_window_score_gives_for_that_change():
    """An independent computation: each word in turn replaced by a word of new letters (sharing no
    trigram with the query, none repeated), scored by the reference window_score; the best."""
    import random

    rng = random.Random(19)
    words = "alpha brave cobalt delta ember falcon garnet harbor indigo jasper kelvin lumen a of".split()
    for _ in range(300):
        query = " ".join(rng.choice(words) for _ in range(rng.randint(2, 16)))
        toks = query.split()
        expected = max(window_score(query, " ".join(toks[:i] + ["".join(chr(0x4E00 + j) for j in range(len(w)))]
                                                    + toks[i + 1:]))
                       for i, w in enumerate(toks))
        assert one_changed_word_score(query) == pytest.approx(expected, abs=1e-12)


def test_the_docs_state_the_trigram_reach_by_query_length_as_measured():
    validity = (Path(__file__).resolve().parents[2] / "docs" / "validity.md").read_text()
    from benchmarks.trigram_reach import TOPICS, reach_table

    for path in TOPICS:
        need(path)

    table = reach_table()
    assert table in validity, "docs/validity.md's reach table is not what benchmarks/trigram_reach.py measures"


# --------------------------------------------------------------------------- tuning


def test_a_held_out_set_of_three_queries_is_inconclusive_under_either_rule_and_says_how_many_more():
    """3 held-out queries gave a fail at sign-flip p 0.25 and a pass with an MDE from 3 values."""
    import numpy as np

    from gate.statistics.evidence import evidence

    deltas = np.array([-0.3, -0.2, -0.25])
    for decision in ("interval", "calibrated"):
        policy = Policy(decision=decision)
        findings = Findings(metric="nDCG@10", query_count=3, delta=-0.25, ci_low=-0.3, ci_high=-0.2, mde=0.019,
                            evidence=evidence(deltas, policy.max_regression, 500, 0, alpha=ALPHA),
                            reporting_set=ReportingSet("held-out golden queries", ("q1", "q2", "q3"), (), True))
        verdict = decide(findings, policy)
        assert verdict.kind == "inconclusive" and verdict.reasons[0].code == "held_out_too_small"
        assert f"hold out at least {MIN_QUERIES - 3} more queries" in verdict.reasons[0].message
    assert MIN_QUERIES == 6  # 2**-6 <= 0.025 < 2**-5


def test_a_small_held_out_set_in_run_is_inconclusive_and_the_comment_says_how_many_more(tmp_path):
    tuning_ids = [f"q_{i:04d}" for i in range(17)]
    extra = f"tuning:\n  queries: {json.dumps(tuning_ids)}\n  params: [boost]\n"
    path = _world(tmp_path, leak_in_new=False, extra_config=extra)
    archive(load_config(path), progress=_silent)
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 3.0\n")
    outcome = run_gate(load_config(path), progress=_silent)
    assert outcome.report["query_count"] == 3 and outcome.verdict.kind == "inconclusive"
    assert outcome.verdict.reasons[0].code == "held_out_too_small" and outcome.verdict.exit_code == 3
    body = _comment(outcome.report)
    assert "hold out at least 3 more queries" in body


def test_a_changed_key_that_looks_tunable_but_is_undeclared_is_a_warning_naming_it(tmp_path):
    path = _world(tmp_path, leak_in_new=False)
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 1.0\nfusion: {rrf_k: 60}\n")
    archive(load_config(path), progress=_silent)
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 1.0\nfusion: {rrf_k: 20}\n")
    outcome = run_gate(load_config(path), progress=_silent)
    tuning = outcome.report["tuning"]
    assert tuning["undeclared_changes"] == [{"path": "fusion.rrf_k", "old": 60, "new": 20}]
    warned = [r.message for r in outcome.verdict.reasons if r.code == "warning"]
    assert any(w.startswith("this PR changes fusion.rrf_k 60 → 20, which looks like a tuned parameter but is not "
                            "in tuning.params") for w in warned)
    assert "fusion.rrf\\_k 60 → 20" in _comment(outcome.report) or "fusion.rrf_k 60 → 20" in _comment(outcome.report)


@pytest.mark.parametrize("path, old, new, tunable", [
    ("fusion.rrf_k", 60, 20, True), ("bm25.k1", 0.9, 1.2, True), ("bm25.b", 0.4, ABSENT, True),
    ("weights.title", 1, 2, True), ("retriever.score_threshold", 0.2, 0.3, True), ("boost", 1.0, 3.0, True),
    ("chunking.size", 256, 512, False), ("bm25.stemmer", "porter", "krovetz", False),
    ("rerank.enabled", True, False, False), ("model.name", "a", "b", False), ("index.shards", 2, 4, False),
    ("fusion.weights", [0.5, 0.5], [0.7, 0.3], True), ("bm25.k1", "0.9", "1.2", True),
    ("retrieval.lightweight_mode", 0, 1, False), ("retriever.scoreThreshold", 0.1, 0.2, True),
    ("bm25.k1", "0.9", "fast", False), ("fusion.weights", [[1]], [[2]], False),
    ("retriever.similarity_top_k", 5, 10, True), ("bm25.k1", None, 1.2, True), ("bm25.b", 0.75, "0.75", False),
    ("bm25.threads", 4, 8, False), ("reranker.batch_size", 16, 32, False), ("fusion.timeout_s", 5, 10, False),
])
def test_which_keys_look_tunable(path, old, new, tunable):
    assert looks_tunable(path, old, new) is tunable


def test_a_declared_parameter_is_not_warned_about_as_undeclared():
    check = tuning_check(["q1", "q2"], ["bm25.k1"], ["bm25"], None, None, [("bm25.k1", 0.9, 1.2)])
    assert check.undeclared == () and check.hints == ()


def test_an_empty_holdout_list_says_what_is_wrong():
    check = tuning_check(["q1", "q2"], ["boost"], ["boost"], ["q1"], [])
    assert check.problems == ("tuning.holdout names no judged golden query (none): there is nothing to report on",)


# --------------------------------------------------------------------------- TREC DL 2019


def _dl19():
    topics = need(DL19 / "topics" / "topics.dl19-passage.txt")
    judgments: dict[str, dict[str, int]] = {}
    for line in (DL19 / "qrels" / "qrels.dl19-passage.txt").read_text().splitlines():
        qid, _, doc, label = line.split()
        judgments.setdefault(qid, {})[doc] = int(label)
    queries = [Query(qid, text) for qid, text in (line.split("\t", 1) for line in topics.read_text().splitlines())
               if qid in judgments]
    return queries, judgments


def test_dl19_prompts_every_quote_numeric_ids_and_short_queries(tmp_path):
    queries, judgments = _dl19()
    assert len(queries) == 43 and judgments["19335"]["1729"] == 2 and judgments["1133167"]["6138"] == 2
    by_id = {q.query_id: q.text for q in queries}
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "settings.yaml").write_text("seed: 6138\nyear: 1729\ntemperature: 0.2\n")
    (tmp_path / "prompts" / "few.yaml").write_text(
        "examples:\n"
        f"  - q: >\n      {' '.join(by_id['156493'].split()[:2])}\n      {' '.join(by_id['156493'].split()[2:])}\n"
        f"    doc: 1729\n"
        f"  - q: \"{by_id['1110199']}\"\n")
    (tmp_path / "prompts" / "shots.txt").write_text(f"{by_id['156493']}\n{by_id['1110199']}\n{by_id['156493']}\n")
    check = scan_prompts(tmp_path, ["prompts/*"], queries, Qrels("dl19", judgments), {})
    assert sorted(_where(check)) == [("prompts/few.yaml", 3, "156493"), ("prompts/few.yaml", 6, "1110199"),
                                     ("prompts/shots.txt", 1, "156493"), ("prompts/shots.txt", 2, "1110199"),
                                     ("prompts/shots.txt", 3, "156493")]
    assert _where(check, "relevant_doc_id") == [("prompts/few.yaml", 5, "1729")]  # not seed: 6138, year: 1729
    # Most DL19 queries are too short for a copy with one changed word to reach 0.85.
    assert len(check.short) == 35


def test_dl19_a_tuning_split_with_a_trailing_space_matches_no_query():
    queries, judgments = _dl19()
    universe = sorted(judgments)
    check = tuning_check(universe, ["bm25.k1"], ["bm25"], ["nope1", "nope2", "156493 "])
    assert check.tuning_count == 0 and check.unknown == ("nope1", "nope2", "156493 ")
    assert check.problems[0].startswith("tuning.queries names no judged golden query")
    assert len(check.holdout) == 43  # nothing held out: and reporting_set does not call it held-out


def test_undecodable_prompt_files_and_an_empty_glob_are_named_on_dl19(tmp_path):
    queries, judgments = _dl19()
    text = queries[0].text
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "a.txt.gz").write_bytes(gzip.compress(text.encode()))
    (tmp_path / "prompts" / "b.txt").write_bytes(text.encode("utf-16-le"))
    (tmp_path / "prompts" / "c.txt").write_bytes(text.encode("latin-1") + b"\xe9")
    check = scan_prompts(tmp_path, ["prompts/*", "prompt/*.txt"], queries, Qrels("dl19", judgments), {})
    assert check.files == () and len(check.problems) == 4


def test_the_json_walk_agrees_with_the_yaml_parser_on_random_documents():
    """JSON is read by a one-pass walk over the text (the YAML parser takes seconds a megabyte);
    on random documents it finds what ruamel.yaml's composer finds, line by line."""
    import random

    from gate.checks.prompts import _json_scalars

    rng = random.Random(19)
    judged = frozenset({"6138", "1729", "MED-10"})

    def value(depth):
        roll = rng.random()
        if depth > 3 or roll < 0.4:
            return rng.choice([6138, 1729, 7, 2.5, -3, True, None, "MED-10", "a b\nc", "é \u00e9 \\/ x",
                               "long text " * 6, ""])
        if roll < 0.7:
            return [value(depth + 1) for _ in range(rng.randint(0, 4))]
        keys = ["doc", "seed", "6138", "1729", "pid", "q" * 45, "x"]
        return {rng.choice(keys): value(depth + 1) for _ in range(rng.randint(0, 4))}

    for _ in range(200):
        doc = value(0)
        text = json.dumps(doc, indent=rng.choice([None, 1, 2]), ensure_ascii=rng.random() < 0.5)
        walked = sorted((s.line, s.text, s.key or "", s.in_id_list) for s in _json_scalars(text, judged))
        import io

        from ruamel.yaml import YAML

        from gate.checks.prompts import _walk

        composed: list = []
        node = YAML(typ="rt").compose(io.StringIO(text))
        if node is not None:
            _walk(node, None, judged, composed, set())
        assert walked == sorted((s.line, s.text, s.key or "", s.in_id_list) for s in composed), text


def test_a_long_file_is_scanned_in_segments_and_every_quote_found_at_its_line(tmp_path):
    """Long text is handed to the engine in overlapping segments of SEGMENT tokens; a quote across
    a segment boundary, and one wrapped over two lines there, is found once, at its line."""
    from gate.checks import prompts

    filler = [f"w{i}" for i in range(7)]
    lines, expected = [], []
    for number in range(1, 401):
        if number % 37 == 0:
            expected.append(number)
            if number % 2:
                lines.append(f"see {QUERY} here")
            else:  # wrapped
                words = QUERY.split()
                lines.append("x " + " ".join(words[:3]))
                lines.append(" ".join(words[3:]) + " y")
                continue
        lines.append(" ".join(filler))
    (tmp_path / "long.txt").write_text("\n".join(lines) + "\n")
    check = _scan(tmp_path, ["long.txt"], [Query("q1", QUERY)], {"q1": {"d1": 1}})
    got = [line for _, line, _ in _where(check)]
    starts = [i + 1 for i, line in enumerate(lines) if line.startswith(("see ", "x "))]
    assert got == starts and len(got) == len(expected)
    assert 7 * 400 > 10 * prompts.SEGMENT  # the file spans many segments


def test_a_prompt_file_over_the_size_limit_is_named_not_scanned(tmp_path, monkeypatch):
    from gate.checks import prompts

    monkeypatch.setattr(prompts, "MAX_PROMPT_BYTES", 2**20)
    (tmp_path / "big.txt").write_text((QUERY + "\n") * 30_000)
    (tmp_path / "small.txt").write_text(QUERY + "\n")
    check = _scan(tmp_path, ["*.txt"], [Query("q1", QUERY)], {"q1": {"d1": 1}})
    assert check.problems == ("the prompt file big.txt is 1.4 MiB, over the 1 MiB a prompt file may have: not scanned",)
    assert _where(check) == [("small.txt", 1, "q1")]


def test_checks_that_cannot_run_are_named_in_the_comment_as_warnings_or_under_strict_validity_failures(tmp_path):
    """Done when: a glob matching nothing, an undecodable prompt file and a split matching nothing
    each give a named warning (a failure under strict_validity) in report.json and the comment."""
    extra = ("prompts: ['prompt/*.txt', 'prompts/*']\n"
             'tuning:\n  queries: [nope1, nope2, "q_0001 "]\n  params: [boost]\n')
    path = _world(tmp_path, leak_in_new=False, extra_config=extra)
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "packed.txt.gz").write_bytes(gzip.compress(QUERY.encode()))
    archive(load_config(path), progress=_silent)
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 3.0\n")
    named = ["the prompts glob 'prompt/*.txt' matches no file",
             "the prompt file prompts/packed.txt.gz is gzip-compressed",
             "tuning.queries names no judged golden query"]
    outcome = run_gate(load_config(path), progress=_silent)
    assert outcome.verdict.kind != "fail"
    warned = [r.message for r in outcome.verdict.reasons if r.code == "warning"]
    body = _comment(outcome.report)
    for words in named:
        assert any(w.startswith(words) for w in warned), words
        assert any(line.startswith("- ⚠️ ") and words in line.replace("\\", "") for line in body.splitlines()), words

    path.write_text(path.read_text() + "policy: {strict_validity: true}\n")
    strict = run_gate(load_config(path), progress=_silent)
    assert strict.verdict.kind == "fail" and strict.verdict.exit_code == 1
    failed = [r.message for r in strict.verdict.reasons if r.code == "validity_check_off"]
    assert len(failed) == 3 and all(any(m.startswith(w) for m in failed) for w in named)
    body = _comment(strict.report)
    assert body.startswith("### ❌ fail")
    for words in named:
        assert any(line.startswith("- ❌ ") and words in line.replace("\\", "") for line in body.splitlines()), words


def test_dl19_three_held_out_queries_decide_nothing_where_all_43_decide():
    """The issue's case on real runs: p_bert against bm25base_p, nDCG@10 per query; on 3 held-out
    queries no rule decides (held_out_too_small), on all 43 both rules pass it."""
    import numpy as np

    from gate.evaluation.evaluate import evaluate
    from gate.inputs.readers.qrels import read_qrels
    from gate.inputs.readers.runs import read_run
    from gate.statistics.evidence import evidence
    from gate.statistics.paired import compare_paired

    qrels = read_qrels(need(DL19 / "qrels" / "qrels.dl19-passage.txt"))
    ids = sorted(qrels.judgments)
    base = evaluate(read_run(DL19 / "official_nist" / "input.bm25base_p.gz"), qrels, ["nDCG@10"], ids)
    tuned = evaluate(read_run(DL19 / "official_nist" / "input.p_bert.gz"), qrels, ["nDCG@10"], ids)
    deltas = np.asarray(tuned.values["nDCG@10"]) - np.asarray(base.values["nDCG@10"])
    for decision in ("interval", "calibrated"):
        policy = Policy(decision=decision)
        for n, held_out in ((3, True), (43, False)):
            d = deltas[:n]
            paired = compare_paired(np.asarray(base.values["nDCG@10"])[:n], np.asarray(tuned.values["nDCG@10"])[:n],
                                    samples=1000, seed=7)
            verdict = decide(Findings(metric="nDCG@10", query_count=n, delta=paired.mean, ci_low=paired.ci_low,
                                      ci_high=paired.ci_high, mde=paired.mde,
                                      evidence=evidence(d, policy.max_regression, 1000, 7, alpha=ALPHA),
                                      reporting_set=ReportingSet("", tuple(map(str, range(n))), (), held_out)), policy)
            if held_out:
                assert verdict.reasons[0].code == "held_out_too_small", decision
            else:
                assert verdict.kind == "pass", (decision, verdict.reasons)


# --------------------------------------------------------------------------- review (helper-11)


def test_a_prompt_file_name_that_is_not_utf8_is_shown_escaped(tmp_path):
    import os

    os.makedirs(tmp_path / "p")
    with open(os.path.join(os.fsencode(tmp_path / "p"), b"latin1-\xe9.txt"), "w") as f:
        f.write(QUERY + "\n")
    check = _scan(tmp_path, ["p/*"], [Query("q1", QUERY)], {"q1": {"d1": 1}})
    assert _where(check) == [("p/latin1-\\xe9.txt", 1, "q1")]
    json.dumps(check.to_dict(), ensure_ascii=False).encode("utf-8")  # no lone surrogate


def test_long_lines_of_digits_or_ids_are_read_in_linear_time(tmp_path):
    """A 200,000-digit line took minutes (a backtracking list regex); 20,000 mentions of a
    relevant id on one line, seconds each (a copy of the text before every number)."""
    (tmp_path / "digits.txt").write_text("7" * 200_000 + "\n")
    (tmp_path / "ids.txt").write_text("see passage 1729, " * 20_000 + "\n")
    check = _scan(tmp_path, ["*.txt"], [Query("q1", QUERY)], MSMARCO)
    assert _where(check, "relevant_doc_id") == [("ids.txt", 1, "1729")]


def test_a_utf32_file_is_read_as_utf32_not_as_utf16(tmp_path):
    (tmp_path / "u32.txt").write_bytes(f"{QUERY}\n".encode("utf-32"))
    check = _scan(tmp_path, ["*.txt"], [Query("q1", QUERY)], {"q1": {"d1": 1}})
    assert _where(check) == [("u32.txt", 1, "q1")] and check.problems == ()


def test_the_gates_own_folder_and_git_are_never_prompts(tmp_path):
    (tmp_path / ".retrieval-gate" / "out").mkdir(parents=True)
    (tmp_path / ".retrieval-gate" / "out" / "report.json").write_text(json.dumps({"text": QUERY}))
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "x.json").write_text(json.dumps({"text": QUERY}))
    (tmp_path / "shots.json").write_text(json.dumps({"text": QUERY}))
    check = _scan(tmp_path, ["**/*.json"], [Query("q1", QUERY)], {"q1": {"d1": 1}},
                  exclude=[tmp_path / ".retrieval-gate"])
    assert _where(check) == [("shots.json", 1, "q1")] and check.files == ("shots.json",)


def test_ids_with_letters_count_in_urls_paths_and_anchors(tmp_path):
    (tmp_path / "p.md").write_text("https://kb.example.com/docs/MED-10\ncorpus/doc_12.txt\n[passage](#doc_12)\n"
                                   "doc_123 and MED-100\n")
    check = _scan(tmp_path, ["p.md"], [Query("q1", QUERY)], {"q1": {"MED-10": 1, "doc_12": 2}})
    assert sorted(_where(check, "relevant_doc_id")) == [("p.md", 1, "MED-10"), ("p.md", 2, "doc_12"),
                                                         ("p.md", 3, "doc_12")]


def test_queries_too_short_to_attribute_are_counted_and_named_in_the_comment(tmp_path):
    (tmp_path / "p.txt").write_text("define visceral?\n")
    check = _scan(tmp_path, ["p.txt"], [Query("1106007", "define visceral?"), Query("q1", "rate limit exceeded error")],
                  {"q1": {"d1": 1}})
    data = check.to_dict()
    assert data["too_short"] == ["1106007"] and data["too_short_count"] == 1 and data["min_tokens"] == 3
    from tests.rendering.test_comment_render import full_report

    report = full_report()
    report["prompts"] = data
    body = _comment(report)
    assert "1 golden query has fewer than 3 tokens and is not looked for (leakage.min_tokens)." in body
    assert "1 golden query is too short for a copy with one changed word" in body


def test_quotes_inside_yaml_blocks_are_placed_on_their_own_lines(tmp_path):
    (tmp_path / "block.yaml").write_text(
        "prompt: |\n"
        "  You answer questions.\n"
        f"  Example: {QUERY}\n"
        "  Another line.\n"
        f"  Again: {QUERY}\n"
        "fold: >\n"
        "\n"
        "  how do i configure webhooks\n"
        "  with giraffe settings\n"
        "plain: how do i configure\n"
        "  webhooks with giraffe settings\n"
        "doc: 1729\n")
    check = _scan(tmp_path, ["*.yaml"], [Query("q1", QUERY)], {"q1": {"1729": 1}})
    assert _where(check) == [("block.yaml", 3, "q1"), ("block.yaml", 5, "q1"), ("block.yaml", 8, "q1"),
                             ("block.yaml", 10, "q1")]
    assert _where(check, "relevant_doc_id") == [("block.yaml", 12, "1729")]


@pytest.mark.parametrize("text", [
    "The document is 1729 words long.\nEach passage is 6138 characters.\n",
    "Price $1729 or -1729, 1729.0 and 6138.5\n",
    "max_docs: 1729\nnum_passages: 6138\nchunks: 6140\nn_ids: 6142\ntop_k: 1729\n",
    "date 12/1729/2020 or v2/6138\n",
])
def test_counts_prices_and_prose_numbers_are_not_doc_ids(tmp_path, text):
    judgments = {"q1": {"1729": 2, "6138": 2, "6140": 1, "6142": 1, "2020": 1}, "q2": {"12": 1}}
    (tmp_path / "p.yaml").write_text(text if ":" in text.split("\n")[0] and "max" in text else f"t: '{text.strip()}'\n")
    (tmp_path / "p.txt").write_text(text)
    check = _scan(tmp_path, ["p.*"], [Query("q1", QUERY)], judgments)
    # 12/1729/2020 is a date, v2/6138 a path: with a million-id collection 6138 is rare there.
    expected = sorted((f, 1, "6138") for f in ("p.txt", "p.yaml")) if text.startswith("date") else []
    assert sorted(_where(check, "relevant_doc_id")) == expected


def test_on_a_collection_of_small_numbers_lists_and_paths_are_no_evidence(tmp_path):
    """Cranfield's ids are 1..1400: every small number is a judged id, so `k_values: [1, 3, 5, 10]`
    or "Steps 1, 2, 3" say nothing; `doc: 5` still does."""
    judgments = {str(q): {str(d): 1 for d in range(q, 1401, 7)} for q in range(1, 8)}
    (tmp_path / "c.yaml").write_text("k_values: [1, 3, 5, 10]\nmax_docs: 5\ntop_passages: 3\nsee: /v1/3\ndoc: 5\n")
    (tmp_path / "c.txt").write_text("Steps 1, 2, 3\nsee /v1/3 and 4\n")
    check = _scan(tmp_path, ["c.*"], [Query("q1", QUERY)], judgments)
    assert _where(check, "relevant_doc_id") == [("c.yaml", 5, "5")]


def test_symlinks_to_a_missing_file_or_out_of_the_repository_are_named(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text(QUERY + "\n")
    repo = tmp_path / "repo"
    (repo / "p").mkdir(parents=True)
    (repo / "p" / "gone.txt").symlink_to(repo / "p" / "nowhere.txt")
    (repo / "p" / "out.txt").symlink_to(outside)
    (repo / "p" / "ok.txt").write_text(QUERY + "\n")
    (repo / "p" / "loop1.txt").symlink_to(repo / "p" / "loop2.txt")
    (repo / "p" / "loop2.txt").symlink_to(repo / "p" / "loop1.txt")
    check = _scan(repo, ["p/*"], [Query("q1", QUERY)], {"q1": {"d1": 1}})
    assert check.problems == (
        "the prompt file p/gone.txt is a symlink to a missing file (or a loop): not scanned",
        "the prompt file p/loop1.txt is a symlink to a missing file (or a loop): not scanned",
        "the prompt file p/loop2.txt is a symlink to a missing file (or a loop): not scanned",
        "the prompt file p/out.txt leads out of the repository (a symlink): not scanned")
    assert _where(check) == [("p/ok.txt", 1, "q1")]


def test_a_large_yaml_file_is_read_as_text_and_noted(tmp_path, monkeypatch):
    from gate.checks import prompts

    monkeypatch.setattr(prompts, "MAX_YAML_BYTES", 1000)
    (tmp_path / "big.yaml").write_text("pad: " + "x " * 600 + f"\nq: {QUERY}\n")
    check = _scan(tmp_path, ["*.yaml"], [Query("q1", QUERY)], {"q1": {"d1": 1}})
    assert _where(check) == [("big.yaml", 2, "q1")]
    assert check.notes == ("big.yaml is over 0 MiB: scanned as plain text, not parsed as YAML",) or \
        check.notes[0].endswith("scanned as plain text, not parsed as YAML")


def test_a_file_that_cannot_be_read_says_why(tmp_path, monkeypatch):
    from gate.checks import prompts

    def denied(path):
        raise PermissionError(13, "Permission denied")

    (tmp_path / "a.txt").write_text(QUERY)
    monkeypatch.setattr(prompts, "prompt_text", denied)
    check = _scan(tmp_path, ["*.txt"], [Query("q1", QUERY)], {"q1": {"d1": 1}})
    assert check.problems == ("the prompt file a.txt cannot be read (Permission denied): not scanned",)


# --------------------------------------------------------------------------- review, second round (helper-12)


def test_reports_written_under_out_are_not_prompts_on_the_next_run(tmp_path):
    from gate.pipeline.stack import RunOptions

    path = _world(tmp_path, leak_in_new=True, extra_config="prompts: ['**/*.json', '**/*.md']\n")
    archive(load_config(path), progress=_silent)
    (tmp_path / "gate-out").mkdir()
    (tmp_path / "gate-out" / "report.json").write_text(json.dumps({"text": QUERY}))
    (tmp_path / "gate-out" / "comment.md").write_text(QUERY)
    outcome = run_gate(load_config(path), RunOptions(out=tmp_path / "gate-out"), progress=_silent)
    assert outcome.report["prompts"]["count"] == 0
    assert outcome.report["prompts"]["problems"] == [
        "the prompts glob '**/*.json' matches no file but 2 files in .git or the gate's own folders, which are "
        "never prompts: nothing was scanned for it",
        "the prompts glob '**/*.md' matches no file but 1 file in .git or the gate's own folders, which are never "
        "prompts: nothing was scanned for it"] or outcome.report["prompts"]["problems"][0].startswith(
        "the prompts glob '**/*.json' matches no file but")


def test_yaml_line_numbers_ignore_line_separators_the_parser_does_not_count(tmp_path):
    (tmp_path / "p.yaml").write_text(f"a: 'x\u2028y'\nb: z\nq: {QUERY}\n")
    check = _scan(tmp_path, ["*.yaml"], [Query("q1", QUERY)], {"q1": {"d1": 1}})
    assert _where(check) == [("p.yaml", 3, "q1")]


def test_a_letter_id_as_the_only_judged_key_of_a_mapping_is_found(tmp_path):
    (tmp_path / "p.yaml").write_text("examples:\n  MED-10: a passage\n")
    (tmp_path / "p.json").write_text('{"doc_12": "x"}')
    check = _scan(tmp_path, ["p.*"], [Query("q1", QUERY)], {"q1": {"MED-10": 1, "doc_12": 1}})
    assert sorted(_where(check, "relevant_doc_id")) == [("p.json", 1, "doc_12"), ("p.yaml", 2, "MED-10")]


def test_cranfield_like_ids_are_never_rare_and_template_numbers_are_no_ids(tmp_path):
    from gate.checks.prompts import rare_ids

    cranfield = {str(d) for d in range(1, 1401) if d % 3}
    assert rare_ids(cranfield) == frozenset()
    msmarco = {str(d) for d in range(1729, 8_800_000, 977)}
    assert rare_ids(msmarco) == frozenset(msmarco)
    judgments = {"q1": {d: 1 for d in cranfield}}
    (tmp_path / "c.txt").write_text("sizes [1024, 1200, 1280, 1300] /img/1024.png\nDocument 2: text\n[doc 2]\n")
    (tmp_path / "c.yaml").write_text("query_id: 5\nuser_id: 7\nexample_id: 8\ndoc_id: 10\n")
    check = _scan(tmp_path, ["c.*"], [Query("q1", QUERY)], judgments)
    assert _where(check, "relevant_doc_id") == [("c.yaml", 4, "10")]


def test_a_held_out_set_with_a_leaked_query_left_out_names_the_reporting_set():
    policy = Policy()
    findings = Findings(metric="nDCG@10", query_count=5, delta=0.01, ci_low=-0.1, ci_high=0.1,
                        reporting_set=ReportingSet("held-out golden queries, without 1 leaked",
                                                    ("q1", "q2", "q3", "q4", "q5"), ("q6",), True))
    reason = decide(findings, policy).reasons[0]
    assert reason.message.startswith("the reporting set (held-out golden queries, without 1 leaked) has only 5 "
                                     "queries: too few to decide")
    assert "hold out at least 1 more query" in reason.message


def test_a_symlinked_folder_leading_out_of_the_repository_is_not_entered_and_said(tmp_path):
    """A glob names the repository's files as git does: a symlinked folder is one path (the link),
    never entered; a glob that reached into it names no file, and the check says so."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.txt").write_text(QUERY)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "shared").symlink_to(outside, target_is_directory=True)
    check = _scan(repo, ["shared/*.txt"], [Query("q1", QUERY)], {"q1": {"d1": 1}})
    assert check.problems == ("the prompts glob 'shared/*.txt' matches no file: nothing was scanned for it",)
    assert check.files == ()
    check = _scan(repo, ["shared"], [Query("q1", QUERY)], {"q1": {"d1": 1}})
    assert check.problems == ("the prompt file shared leads out of the repository (a symlink): not scanned",)


def test_json_with_a_huge_integer_is_json(tmp_path):
    (tmp_path / "p.json").write_text('{"n": ' + "9" * 5000 + f', "q": "{QUERY}"}}')
    check = _scan(tmp_path, ["*.json"], [Query("q1", QUERY)], {"q1": {"d1": 1}})
    assert check.notes == () and _where(check) == [("p.json", 1, "q1")]


def test_json_lines_are_numbered_with_cr_only_line_ends_too(tmp_path):
    (tmp_path / "p.json").write_bytes(('{\r "a": "x",\r "q": "' + QUERY + '"\r}\r').encode())
    (tmp_path / "w.json").write_bytes(('{\r\n "a": "x",\r\n "q": "' + QUERY + '"\r\n}\r\n').encode())
    check = _scan(tmp_path, ["*.json"], [Query("q1", QUERY)], {"q1": {"d1": 1}})
    assert _where(check) == [("p.json", 3, "q1"), ("w.json", 3, "q1")]
