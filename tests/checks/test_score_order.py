"""Runs whose scores do not order their documents (gate/checks/score_order.py), issue 32.

Scores all equal within a query, or the ranks written as scores, are ranked by trec_eval's rule
(score descending, docno descending) in an order nobody chose: DL 2019's p_bert with every score
set to 0 reads nDCG@10 0.0551 instead of 0.7380 and "regression shown", silently. The measures
keep trec_eval's order; the terminal, report.json (``run_scores``, a warning) and the PR comment
say so, naming the run and how many queries. Minus the rank orders as meant: counted, no warning.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from gate.checks.score_order import score_order, score_order_of_file
from gate.cli import _load_saved_report, main
from gate.inputs.readers.records import Run
from gate.inputs.readers.runs import read_run
from tests.shared_data import REALDATA, need

DL19 = REALDATA / "runs" / "trec-dl-2019-passage"


def _write(path: Path, rows: list[tuple[str, str, int, float]]) -> Path:
    path.write_text("".join(f"{q} Q0 {d} {r} {s!r} t\n" for q, d, r, s in rows))
    return path


def _ranked(qid: str, n: int, score, start: int = 1) -> list[tuple[str, str, int, float]]:
    return [(qid, f"d{qid}-{r}", r, float(score(r))) for r in range(start, start + n)]


def test_constant_rank_and_minus_rank_scores_are_told_apart(tmp_path):
    rows = (_ranked("a", 5, lambda r: 0) + _ranked("b", 4, lambda r: 2.5)  # constant
            + _ranked("c", 6, lambda r: r)  # the rank as the score: read in reverse
            + _ranked("d", 6, lambda r: -r) + _ranked("e", 3, lambda r: -(r - 1))  # minus the rank: as meant
            + _ranked("f", 7, lambda r: 10 - r * 0.5)  # a real ranking
            + _ranked("g", 1, lambda r: 0)  # one document: nothing to order
            + _ranked("h", 4, lambda r: 101 - r)  # 100, 99, ...: ordered as meant (DL's rankzephyr)
            + _ranked("x", 5, lambda r: 0))  # not a judged query: not counted
    path = _write(tmp_path / "r.run", rows)
    judged = list("abcdefgh")
    order = score_order(read_run(path), judged, "candidate")
    assert (order.queries, order.constant, order.rank_as_score, order.minus_rank) == (8, 2, 1, 2)
    assert order.constant_examples == ("a", "b") and order.rank_examples == ("c",)
    assert order.run == "r.run"
    warning = order.warning
    assert warning.startswith("the candidate run r.run gives every document the same score in 2 of 8 judged "
                               "queries (a, b)")
    assert "scores each document with its rank (1, 2, 3 ...) in 1 of 8 judged queries (c)" in warning
    assert "ranked by docno" in warning and "read in reverse" in warning
    # read again a few whole queries at a time (compare), the same finding
    assert score_order_of_file(str(path), judged, "candidate") == order


def test_a_run_with_real_scores_or_minus_ranks_gives_no_warning(tmp_path):
    rows = _ranked("a", 5, lambda r: -r) + _ranked("b", 5, lambda r: 1.0 / r) + _ranked("c", 5, lambda r: 7 - r)
    order = score_order(read_run(_write(tmp_path / "r.run", rows)), None, "baseline")
    assert order.warning is None and order.minus_rank == 1 and order.constant == order.rank_as_score == 0
    assert order.to_dict() == {"run": "r.run", "queries": 3, "constant": 0, "constant_examples": [],
                               "rank_as_score": 0, "rank_examples": [], "minus_rank": 1, "warning": None}


def test_the_rank_as_score_is_found_when_the_file_lists_two_rows_out_of_rank_order(tmp_path):
    rows = _ranked("a", 6, lambda r: r)
    rows[2], rows[3] = rows[3], rows[2]  # DL 2019's p_bert lists ranks 13 and 12 in that order
    order = score_order(read_run(_write(tmp_path / "r.run", rows)), ["a"], "candidate")
    assert order.rank_as_score == 1
    # 6, 5, ... 1 down the list is a score that orders as meant, though its values are 1..6
    assert score_order(Run.from_rankings("m", {"a": {f"d{r}": float(7 - r) for r in range(1, 7)}}), None,
                       "candidate").warning is None


def test_scores_equal_as_trec_eval_compares_them_are_constant(tmp_path):
    # 11.98829954303801 and 11.988299543038 differ only beyond C float: a tie for trec_eval
    rows = [("a", "d1", 1, 11.98829954303801), ("a", "d2", 2, 11.988299543038)]
    assert score_order(read_run(_write(tmp_path / "r.run", rows)), None, "candidate").constant == 1


def test_a_file_whose_queries_are_not_grouped_is_read_whole(tmp_path):
    rows = _ranked("a", 2, lambda r: 0) + _ranked("b", 2, lambda r: 0) + [("a", "late", 3, 0.0)]
    path = _write(tmp_path / "r.run", rows)
    order = score_order_of_file(str(path), None, "baseline")
    assert order.constant == 2 and order.queries == 2


# --------------------------------------------------------------------------- DL 2019, real runs


def _judged_topics(tmp: Path) -> tuple[Path, Path]:
    qrels = need(DL19 / "qrels" / "qrels.dl19-passage.txt")
    judged = {line.split()[0] for line in qrels.read_text().splitlines() if line.strip()}
    topics = [line for line in (DL19 / "topics" / "topics.dl19-passage.txt").read_text().splitlines()
              if line.split("\t")[0] in judged]
    (tmp / "topics.tsv").write_text("\n".join(topics) + "\n")
    return tmp / "topics.tsv", qrels


def _p_bert(tmp: Path, name: str, score) -> Path:
    """DL 2019's p_bert with its scores rewritten from each line's rank column."""
    source = need(DL19 / "official_nist" / "input.p_bert.gz")
    lines = []
    with gzip.open(source, "rt") as handle:
        for line in handle:
            q, z, d, r, s, tag = line.split()
            lines.append(f"{q} {z} {d} {r} {score(int(r), s)} {tag}\n")
    (tmp / name).write_text("".join(lines))
    return tmp / name


def test_compare_on_dl19_p_bert_with_every_score_0_warns_in_the_terminal_and_the_report(tmp_path, capsys):
    topics, qrels = _judged_topics(tmp_path)
    zero = _p_bert(tmp_path, "p_bert_zero.run", lambda r, s: "0")
    baseline = DL19 / "official_nist" / "input.p_bert.gz"
    code = main(["compare", "--baseline", str(baseline), "--candidate", str(zero), "--qrels", str(qrels),
                 "--queries", str(topics), "--samples", "1000", "--out", str(tmp_path / "out")])
    printed = capsys.readouterr().out.splitlines()
    assert code == 0
    # the numbers stay trec_eval's (the docno order is the rule), the warning says what they are
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert round(report["baseline"]["mean"], 4) == 0.7380 and round(report["candidate"]["mean"], 4) == 0.0551
    scores = report["run_scores"]
    assert scores["baseline"]["warning"] is None and scores["baseline"]["constant"] == 0
    assert scores["candidate"]["constant"] == 43 and scores["candidate"]["queries"] == 43
    warning = scores["candidate"]["warning"]
    assert warning.startswith("the candidate run p_bert_zero.run gives every document the same score in 43 of 43 "
                              "judged queries") and warning in report["warnings"]
    assert printed[0].startswith("decision: fail - regression shown")
    assert printed[1] == f"warning: {warning}"  # right under the decision
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "> ⚠️ **Warning**: the candidate run p\\_bert\\_zero.run gives every document the same score" in markdown
    # the tie counts in words, not "1/43"
    assert ("nDCG@10 1 in the baseline and 43 in the candidate; " in markdown and ", of 43 queries" in markdown
            and "(baseline/candidate)" not in markdown)


def test_compare_on_dl19_tells_rank_scores_from_minus_rank_scores(tmp_path, capsys):
    topics, qrels = _judged_topics(tmp_path)
    rank = _p_bert(tmp_path, "p_bert_rank.run", lambda r, s: str(r))
    minus = _p_bert(tmp_path, "p_bert_minus_rank.run", lambda r, s: str(-r))
    assert main(["compare", "--baseline", str(minus), "--candidate", str(rank), "--qrels", str(qrels),
                 "--queries", str(topics), "--samples", "200", "--out", str(tmp_path / "out")]) == 0
    capsys.readouterr()
    scores = json.loads((tmp_path / "out" / "report.json").read_text())["run_scores"]
    assert scores["baseline"]["minus_rank"] == 43 and scores["baseline"]["warning"] is None
    assert scores["candidate"]["rank_as_score"] == 43
    warning = scores["candidate"]["warning"]
    assert "scores each document with its rank (1, 2, 3 ...) in 43 of 43 judged queries" in warning


def test_run_on_dl19_says_it_in_the_reasons_the_report_and_the_comment(tmp_path, capsys, monkeypatch):
    topics, qrels = _judged_topics(tmp_path)
    _p_bert(tmp_path, "p_bert.run", lambda r, s: s)
    _p_bert(tmp_path, "p_bert_zero.run", lambda r, s: "0")
    (tmp_path / "retrieval.yml").write_text("k: 1\n")
    (tmp_path / "gate.yml").write_text(
        f"suite: dl19\ngolden: {{queries: topics.tsv, qrels: {qrels}, rel: 2}}\nmetric: nDCG@10\n"
        "retrieval: {config: retrieval.yml}\n"
        "runner: {type: run-file, baseline_run: p_bert.run, candidate_run: p_bert_zero.run}\n"
        "statistics: {samples: 500}\npolicy: {max_unjudged: 1.0, max_judged_drop: 1.0}\n")
    monkeypatch.chdir(tmp_path)
    assert main(["archive", "--config", "gate.yml"]) == 0
    (tmp_path / "retrieval.yml").write_text("k: 2\n")
    code = main(["run", "--config", "gate.yml", "--out", "out"])
    printed = capsys.readouterr().out
    assert code == 1
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    warning = report["run_scores"]["candidate"]["warning"]
    assert "gives every document the same score in 43 of 43 judged queries" in warning
    assert report["run_scores"]["baseline"]["warning"] is None
    assert {"code": "warning", "message": warning} in report["verdict"]["reasons"]
    assert f"  - warning: {warning}" in printed.splitlines()
    comment = (tmp_path / "out" / "comment.md").read_text()
    assert "- ⚠️ the candidate run p\\_bert\\_zero.run gives every document the same score in 43 of 43" in comment
    _load_saved_report(str(tmp_path / "out" / "report.json"))  # the comment job reads it: schema-valid
