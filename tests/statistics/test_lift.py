"""Movement buckets (gate.statistics.movement) and the four lift files (gate.publishing.lift_files)."""

from __future__ import annotations

import csv
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from gate.common.errors import InputError
from gate.evaluation.evaluate import evaluate
from gate.inputs.readers.records import Qrels, Query, QuerySet, Run
from gate.publishing.lift_files import FILES, write_lift
from gate.rendering.markdown import md_text
from gate.statistics.movement import BUCKETS, CSV_COLUMNS, compute_lift, strata_section
from gate.verdict.directions import STRATA_DIRECTIONS
from tests.shared_data import REALDATA, REPO, need

DL19 = REALDATA / "runs" / "trec-dl-2019-passage"


# --------------------------------------------------------------------------- a hand-made case


def ranking(*docs, scores=None):
    """Docs best first with descending scores (or the given ones)."""
    scores = scores or [float(len(docs) - i) for i in range(len(docs))]
    return dict(zip(docs, scores))


QRELS = Qrels("qrels.txt", {
    "promoted": {"r": 1, "x": 0},
    "demoted": {"r": 2},
    "new": {"r": 1, "r2": 1},
    "lost": {"r": 1},
    "same": {"r": 1},
    "miss": {"r": 1},
    "norel": {"a": 0},
    "tie": {"r": 1},
    "gone": {"r": 1},  # absent from the after run
    "neither": {"r": 1},  # absent from both runs: a miss in both (trec_eval -c, as compare scores it 0)
})

BEFORE = Run.from_rankings("before.run", {
    "promoted": ranking("a", "b", "c", "r"),
    "demoted": ranking("r", "a", "b"),
    "new": ranking(*[f"d{i}" for i in range(12)], "r"),  # r at 13: outside the top 10
    "lost": ranking("a", "r"),
    "same": ranking("a", "r", "b"),
    "miss": ranking("a", "b"),
    "norel": ranking("a"),
    # equal scores: trec_eval puts docno descending, so "z" (1) before "r" (2).
    "tie": {"r": 1.0, "z": 1.0, "a": 0.5},
    "gone": ranking("r"),
}, tag="bm25")
AFTER = Run.from_rankings("after.run", {
    "promoted": ranking("r", "a"),
    "demoted": ranking("a", "b", "r"),
    "new": ranking("a", "r2", "r"),
    "lost": ranking(*[f"d{i}" for i in range(10)], "r"),
    "same": ranking("b", "r"),
    "miss": ranking("c"),
    "norel": ranking("a"),
    "tie": ranking("r", "z"),
}, tag="rerank")


def test_buckets_on_a_hand_made_case():
    result = compute_lift(BEFORE, AFTER, QRELS, rel_threshold=1, k_rank=10, k_recall=100)
    by = {m.query_id: m for m in result.movements}
    assert {q: m.bucket for q, m in by.items()} == {
        "promoted": "promoted", "demoted": "demoted", "new": "new_hit", "lost": "lost_hit",
        "same": "unchanged_hit", "miss": "unchanged_miss", "tie": "promoted", "gone": "lost_hit",
        "neither": "unchanged_miss",
    }
    assert result.no_relevant == ("norel",)
    assert result.missing_in_before == ("neither",)
    assert result.missing_in_after == ("gone", "neither")
    assert result.unjudged_run_queries == ()
    p = by["promoted"]
    assert (p.before_rank, p.after_rank, p.rank_movement) == (4, 1, 3)
    assert p.rr_delta == pytest.approx(1 - 1 / 4)
    assert by["demoted"].rank_movement == -2
    # Ranks are at any depth; rank movement is for hits only.
    assert (by["new"].before_rank, by["new"].after_rank, by["new"].rank_movement) == (13, 2, None)
    assert by["new"].rr_delta == pytest.approx(0.5)
    assert by["new"].recall_delta == pytest.approx(1.0 - 0.5)  # r2 was never retrieved before
    assert by["lost"].after_rank == 11 and by["lost"].rr_delta == pytest.approx(-0.5)
    assert by["same"].rank_movement == 0 and by["same"].rr_delta == 0
    assert by["miss"].before_rank is None and by["miss"].rr_before == 0
    # The tie: "r" shares score 1.0 with "z" at the top; docno order alone puts it second.
    assert by["tie"].before_rank == 2 and by["tie"].tie_sensitive
    assert not any(m.tie_sensitive for q, m in by.items() if q != "tie")

    stats = {s.bucket: s for s in result.buckets}
    assert [s.bucket for s in result.buckets] == list(BUCKETS)
    assert stats["promoted"].count == 2 and stats["promoted"].tie_sensitive == 1
    assert stats["promoted"].mean_rank_movement == pytest.approx((3 + 1) / 2)
    assert stats["new_hit"].mean_rank_movement is None
    assert sum(s.count for s in result.buckets) + len(result.no_relevant) == 10
    assert sum(s.share for s in result.buckets) == pytest.approx(1.0)
    # Bucket contributions add up to the mean RR change.
    mean = np.mean([m.rr_delta for m in result.movements])
    assert sum(s.rr_contribution for s in result.buckets) == pytest.approx(mean)


def test_rel_threshold_and_windows():
    # With rel 2 only "demoted" has a relevant document.
    result = compute_lift(BEFORE, AFTER, QRELS, rel_threshold=2)
    assert [m.query_id for m in result.movements] == ["demoted"]
    assert len(result.no_relevant) == 9
    # A window of 1: "promoted" is a new hit (rank 4 -> 1), "demoted" a lost hit.
    small = {m.query_id: m.bucket for m in compute_lift(BEFORE, AFTER, QRELS, k_rank=1).movements}
    assert small["promoted"] == "new_hit" and small["demoted"] == "lost_hit"
    with pytest.raises(ValueError):
        compute_lift(BEFORE, AFTER, QRELS, k_rank=0)


def test_run_queries_without_judgments_are_counted_not_bucketed():
    # Two of the qrels' queries are not in the runs, one is: like TREC DL (200 run topics, 43 judged),
    # the judged queries are bucketed (missing ones as misses) and the others counted.
    other = Qrels("msmarco-dev.qrels", {"1": {"x": 1}, "2": {"y": 1}, "promoted": {"r": 1}})
    result = compute_lift(BEFORE, AFTER, other)
    assert {m.query_id: m.bucket for m in result.movements} == {
        "1": "unchanged_miss", "2": "unchanged_miss", "promoted": "promoted"}
    assert len(result.unjudged_run_queries) == 8  # the other 8 run queries
    assert result.to_dict()["unjudged_run_queries"] == 8


def test_runs_that_share_no_query_with_the_qrels_are_refused():
    other = Qrels("msmarco-dev.qrels", {"1": {"x": 1}, "2": {"y": 1}})
    with pytest.raises(InputError) as caught:
        compute_lift(BEFORE, AFTER, other)
    assert caught.value.path == "before.run"
    assert caught.value.message.startswith("none of the run's 9 queries is among the 2 judged ones of "
                                           "msmarco-dev.qrels: nothing to compare")
    empty = Run.from_rankings("empty.run", {})
    with pytest.raises(InputError) as caught:
        compute_lift(BEFORE, empty, QRELS)
    assert str(caught.value) == "empty.run: the run has no rows: nothing to compare"


def test_tie_sensitivity_compares_scores_as_float32_like_the_ordering():
    # 11.98829954303801 and 11.988299543038 differ in float64 but not in float32 (trec_eval's
    # precision): the two documents tie, and docno order ("z" > "r") puts the relevant one second.
    qrels = Qrels("q", {"t": {"r": 1}})
    before = Run.from_rankings("b.run", {"t": {"r": 11.98829954303801, "z": 11.988299543038}})
    after = Run.from_rankings("a.run", {"t": {"r": 2.0, "z": 1.0}})
    result = compute_lift(before, after, qrels)
    (m,) = result.movements
    assert (m.before_rank, m.after_rank, m.bucket) == (2, 1, "promoted")
    assert m.tie_sensitive


def test_queries_restrict_and_name_strata():
    queries = QuerySet("q.jsonl", (
        Query("promoted", "how to | pipe @someone", "nav"),
        Query("demoted", "b", "nav"),
        Query("new", "c", "how"),
        Query("norel", "d", "how"),
    ))
    result = compute_lift(BEFORE, AFTER, QRELS, queries=queries)
    assert [m.query_id for m in result.movements] == ["demoted", "new", "promoted"]
    assert result.no_relevant == ("norel",)
    strata = result.by_stratum()
    assert list(strata) == ["nav", "how"]
    assert strata["nav"]["counts"]["promoted"] == 1 and strata["nav"]["queries"] == 2
    assert strata["how"]["no_relevant"] == 1 and strata["how"]["counts"]["new_hit"] == 1
    # An explicit mapping (strata.tsv) wins over the query file.
    override = compute_lift(BEFORE, AFTER, QRELS, queries=queries, strata={"new": "tail"})
    assert set(override.by_stratum()) == {"tail"}


# --------------------------------------------------------------------------- the files


def test_write_lift_writes_four_files(tmp_path):
    queries = QuerySet("q.jsonl", tuple(Query(q, f"text of {q} | with a pipe", "s1" if i % 2 else "s2")
                                        for i, q in enumerate(QRELS.judgments)))
    result = write_lift(BEFORE, AFTER, QRELS, tmp_path / "out", rel_threshold=1, k_rank=10, k_recall=100,
                        queries=queries)
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES.values())
    assert result.files["json"] == out / "retrieval_lift.json"

    data = json.loads((out / "retrieval_lift.json").read_text())
    assert data["queries"] == 10 and data["no_relevant"] == 1 and data["bucketed"] == 9
    assert data["counts"] == {"promoted": 2, "demoted": 1, "new_hit": 1, "lost_hit": 2,
                              "unchanged_hit": 1, "unchanged_miss": 2}
    assert data["mean_rr_delta"] == pytest.approx(np.mean([m.rr_delta for m in result.movements]))
    assert data["before"] == {"source": "before.run", "tag": "bm25"}
    assert set(data["by_stratum"]) == {"s1", "s2"}
    assert [b["bucket"] for b in data["buckets"]] == list(BUCKETS)

    with open(out / "retrieval_lift_by_bucket.csv", newline="") as handle:
        rows = list(csv.reader(handle))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert [r[0] for r in rows[1:]] == [*BUCKETS, "no_relevant"]
    assert rows[1][:2] == ["promoted", "2"] and float(rows[1][4]) == pytest.approx(2.0)
    assert rows[3][4] == ""  # new_hit: rank movement is for hits only
    assert rows[-1][:2] == ["no_relevant", "1"]

    examples = [json.loads(line) for line in (out / "retrieval_lift_examples.jsonl").read_text().splitlines()]
    assert {"query_id", "text", "bucket", "before_rank", "after_rank", "rr_delta", "recall_delta"} <= set(examples[0])
    for bucket in BUCKETS:
        mine = [e for e in examples if e["bucket"] == bucket]
        assert len(mine) <= 3
        assert [abs(e["rr_delta"]) for e in mine] == sorted((abs(e["rr_delta"]) for e in mine), reverse=True)
    lost = [e["query_id"] for e in examples if e["bucket"] == "lost_hit"]
    assert lost == ["gone", "lost"]  # |rr_delta| 1 before 0.5

    md = (out / "retrieval_lift.md").read_text()
    assert md.startswith(f"# Retrieval lift: {md_text('before.run')} (bm25) → {md_text('after.run')} (rerank)\n")
    assert ("| bucket | meaning | queries | share | mean ΔRR@10 | mean rank movement | mean ΔR@100 "
            "| tie-sensitive |") in md
    assert "| promoted | first relevant document stayed in the window and moved up | 2 | 22.2% |" in md
    assert "| no relevant document | not bucketed | 1 |" in md
    assert "**In short:** 3 queries gained (2 promoted, 1 new hit), 3 lost ground (1 demoted, 2 lost hits)" in md
    assert "## By stratum" in md and "## Examples" in md
    # Data is escaped: the pipe in the query text cannot break the table.
    assert md_text("text of promoted | with a pipe") in md
    assert "| with a pipe" not in md


def test_markdown_without_relevant_documents(tmp_path):
    qrels = Qrels("q.txt", {q: {"zzz": 0} for q in BEFORE.query_ids})
    result = write_lift(BEFORE, AFTER, qrels, tmp_path)
    md = result.files["markdown"].read_text()
    assert "nothing to bucket" in md
    assert json.loads(result.files["json"].read_text())["bucketed"] == 0


# --------------------------------------------------------------------------- TREC DL 2019


def _read_run(path: Path) -> dict[str, list[tuple[str, float]]]:
    rows: dict[str, list[tuple[str, float]]] = {}
    with gzip.open(path, "rt") as handle:
        for line in handle:
            qid, _, doc, _, score, *_ = line.split()
            rows.setdefault(qid, []).append((doc, float(score)))
    return rows


def _independent_buckets(before_path, after_path, qrels_path, rel, k=10, k_recall=100):
    """Plain Python: parse, sort by (score desc, docno desc), first relevant rank, bucket."""
    judgments: dict[str, dict[str, int]] = {}
    for line in open(qrels_path):
        qid, _, doc, label = line.split()
        judgments.setdefault(qid, {})[doc] = int(label)
    runs = [_read_run(before_path), _read_run(after_path)]
    out = {}
    for qid, docs in judgments.items():
        relevant = {d for d, label in docs.items() if label >= rel}
        if not relevant:
            out[qid] = ("no_relevant", None, None, 0.0, 0.0)
            continue
        firsts, recalls = [], []
        for run in runs:
            ordered = [d for d, _ in sorted(run.get(qid, []), key=lambda r: (r[1], r[0]), reverse=True)]
            first = next((i + 1 for i, d in enumerate(ordered) if d in relevant), None)
            firsts.append(first)
            recalls.append(sum(1 for d in ordered[:k_recall] if d in relevant) / len(relevant))
        b, a = [f if f is not None and f <= k else None for f in firsts]
        if b and a:
            bucket = "promoted" if a < b else "demoted" if a > b else "unchanged_hit"
        elif a:
            bucket = "new_hit"
        elif b:
            bucket = "lost_hit"
        else:
            bucket = "unchanged_miss"
        rr = [1 / f if f else 0.0 for f in (b, a)]
        out[qid] = (bucket, firsts[0], firsts[1], rr[1] - rr[0], recalls[1] - recalls[0])
    return out


def _dl19_inputs():
    from gate.inputs.readers.runs import read_run

    before_path = need(DL19 / "official_nist" / "input.bm25base_p.gz")
    after_path = need(DL19 / "official_nist" / "input.p_bert.gz")
    qrels_path = need(DL19 / "qrels" / "qrels.dl19-passage.txt")
    topics_path = need(DL19 / "topics" / "topics.dl19-passage.txt")
    judgments: dict[str, dict[str, int]] = {}
    for line in open(qrels_path):
        qid, _, doc, label = line.split()
        judgments.setdefault(qid, {})[doc] = int(label)
    topics = []
    for line in open(topics_path, encoding="utf-8"):
        qid, text = line.rstrip("\n").split("\t", 1)
        topics.append(Query(qid, text))
    return (before_path, after_path, qrels_path, read_run(before_path), read_run(after_path),
            Qrels(str(qrels_path), judgments), QuerySet(str(topics_path), tuple(topics)))


def test_dl19_buckets_agree_with_an_independent_computation(tmp_path):
    before_path, after_path, qrels_path, before, after, qrels, topics = _dl19_inputs()
    result = write_lift(before, after, qrels, tmp_path, rel_threshold=2, k_rank=10, k_recall=100, queries=topics)
    expected = _independent_buckets(before_path, after_path, qrels_path, rel=2)
    got = {m.query_id: (m.bucket, m.before_rank, m.after_rank, m.rr_delta, m.recall_delta)
           for m in result.movements}
    got.update({q: ("no_relevant", None, None, 0.0, 0.0) for q in result.no_relevant})
    assert set(got) == set(expected)
    for qid, row in expected.items():
        assert got[qid][:3] == row[:3], qid
        assert got[qid][3:] == pytest.approx(row[3:]), qid
    counts = result.counts()
    assert sum(counts.values()) + len(result.no_relevant) == 43
    data = json.loads(result.files["json"].read_text())
    assert data["queries"] == 43 and sum(data["counts"].values()) + data["no_relevant"] == 43
    # The mean RR and recall agree with the evaluator's RR(rel=2)@10 and R(rel=2)@100.
    qids = tuple(sorted(qrels.judgments, key=lambda q: q.encode()))
    for run, prefix in ((before, "before"), (after, "after")):
        ev = evaluate(run, qrels, ["RR(rel=2)@10", "R(rel=2)@100"], qids, rel=2)
        assert data[f"mean_rr_{prefix}"] == pytest.approx(ev.mean("RR(rel=2)@10"))
        assert data[f"mean_recall_{prefix}"] == pytest.approx(ev.mean("R(rel=2)@100"))


def test_dl19_runs_over_200_topics_are_bucketed_on_the_43_judged():
    *_, before, after, qrels, _topics = _dl19_inputs()
    # The runs cover all 200 test topics, the qrels 43 of them: the 43 are bucketed, the 157 counted.
    result = compute_lift(before, after, qrels, rel_threshold=2)
    assert len(result.movements) + len(result.no_relevant) == 43
    assert len(result.unjudged_run_queries) == 157
    assert result.counts() == {"promoted": 15, "demoted": 3, "new_hit": 1, "lost_hit": 0, "unchanged_hit": 23,
                               "unchanged_miss": 1}


def test_strata_section_includes_the_lift():
    *_, before, after, qrels, topics = _dl19_inputs()
    qids = tuple(sorted(qrels.judgments, key=lambda q: q.encode()))
    b = evaluate(before, qrels, ["RR@10"], qids, rel=2)
    a = evaluate(after, qrels, ["RR@10"], qids, rel=2)
    strata = {q: ("even" if int(q) % 2 == 0 else "odd") for q in qids}
    section = strata_section(b, a, "RR@10", strata, baseline_run=before, candidate_run=after, qrels=qrels,
                             queries=topics, samples=500, rule=STRATA_DIRECTIONS).to_dict()
    lift = section["lift"]
    assert [x["bucket"] for x in lift["buckets"]] == list(BUCKETS)
    assert lift["no_relevant"] == 0 and lift["queries"] == 43
    assert lift["mean_rr_delta"] == pytest.approx(a.mean("RR@10") - b.mean("RR@10"))
    assert set(lift["by_stratum"]) == {"even", "odd"}
    assert [s["stratum"] for s in section["strata"]] == ["even", "odd"]


# --------------------------------------------------------------------------- default qrels


def test_default_qrels_fail_fast_offline(tmp_path):
    home = tmp_path / "irds"
    home.mkdir()
    env = {**os.environ, "IR_DATASETS_HOME": str(home), "PYTHONPATH": str(REPO),
           # no network: any connection attempt goes to a closed local port
           "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
           "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9",
           "IR_DATASETS_DL_TIMEOUT": "2", "IR_DATASETS_DL_TRIES": "1"}
    code = ("from gate.common.errors import InputError\n"
            "from gate.inputs.named import default_qrels\n"
            "try:\n    default_qrels()\nexcept InputError as e:\n    print(e)\nelse:\n    print('LOADED')\n")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("irds:msmarco-passage/dev/small: no --qrels given, and the default MS MARCO passage "
                               "dev/small qrels are not in the ir_datasets cache")
    assert "--qrels qrels.dl19-passage.txt --rel-threshold 2" in lines[0]
    assert done.stderr == ""
    # Refused at once (a closed port, one try): seconds. The bound is for a wait that never ends
    # (retries, a download timeout of minutes), far above what a loaded machine takes.
    assert elapsed < 120
    assert not any(home.iterdir()) or not (home / "msmarco-passage" / "dev" / "small" / "qrels").exists()


def test_without_qrels_lift_reads_ms_marco_dev_small_from_the_ir_datasets_cache(tmp_path):
    # The seed's first command has no --qrels: the MS MARCO passage dev/small qrels come from
    # ir_datasets. A cache holding that file (where ir_datasets keeps it) is all it needs.
    home = tmp_path / "irds"
    (home / "msmarco-passage" / "dev" / "small").mkdir(parents=True)
    (home / "msmarco-passage" / "dev" / "small" / "qrels").write_text("q1 0 d1 1\nq2 0 d9 1\n")
    before, after = tmp_path / "before.tsv", tmp_path / "after.tsv"
    before.write_text("q1 Q0 d0 1 2.0 dense\nq1 Q0 d1 2 1.0 dense\nq2 Q0 d9 1 1.0 dense\nq3 Q0 d3 1 1.0 dense\n")
    after.write_text("q1 Q0 d1 1 2.0 ce\nq1 Q0 d0 2 1.0 ce\nq2 Q0 d8 1 1.0 ce\nq3 Q0 d3 1 1.0 ce\n")
    env = {**os.environ, "IR_DATASETS_HOME": str(home), "PYTHONPATH": str(REPO),
           "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}
    done = subprocess.run([sys.executable, "-m", "gate", "lift", "--before-run", str(before), "--after-run",
                           str(after), "--output-dir", str(tmp_path / "out")],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    data = json.loads((tmp_path / "out" / "retrieval_lift.json").read_text())
    assert data["qrels"] == "irds:msmarco-passage/dev/small"
    assert data["counts"]["promoted"] == 1 and data["counts"]["lost_hit"] == 1
    assert data["unjudged_run_queries"] == 1  # q3
    assert done.stdout.splitlines()[0] == ("lift on 2 judged queries (label >= 1, top 10): 1 promoted, 0 demoted, "
                                           "0 new_hit, 1 lost_hit, 0 unchanged_hit, 0 unchanged_miss")


def test_the_seeds_trec_dl_command_verbatim(tmp_path):
    # retrieval-lift-analysis: --before-run, --after-run, --qrels, --rel-threshold 2, --output-dir.
    before = need(DL19 / "official_nist" / "input.bm25base_p.gz")
    after = need(DL19 / "official_nist" / "input.p_bert.gz")
    qrels = need(DL19 / "qrels" / "qrels.dl19-passage.txt")
    out = tmp_path / "outputs" / "trec_dl_2019" / "retrieval_lift_analysis"
    done = subprocess.run([sys.executable, "-m", "gate", "lift", "--before-run", str(before), "--after-run",
                           str(after), "--qrels", str(qrels), "--rel-threshold", "2", "--output-dir", str(out)],
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES.values())
    data = json.loads((out / "retrieval_lift.json").read_text())
    # bm25base_p -> p_bert at rel 2 (see test_dl19_buckets_agree_with_an_independent_computation).
    assert data["counts"] == {"promoted": 15, "demoted": 3, "new_hit": 1, "lost_hit": 0, "unchanged_hit": 23,
                              "unchanged_miss": 1}
    assert data["queries"] == 43 and data["unjudged_run_queries"] == 157
    assert "157 run queries without judgments (not evaluated)" in done.stdout


def test_each_side_finds_its_own_relevant_chunks_when_the_chunks_differ():
    """Anchored judgments mapped onto two chunkings: ``after_qrels`` names the candidate's chunks.
    With the baseline's qrels alone the re-chunked candidate would find nothing (every query lost)."""
    before_qrels = Qrels("v1", {"1": {"d#c0": 2, "d#c1": 0}, "2": {"e#c0": 1}})
    after_qrels = Qrels("v2", {"1": {"d#p0": 2, "d#p1": 2}, "2": {"e#p0": 1}})
    before = Run.from_rankings("b", {"1": {"x": 3, "d#c0": 2}, "2": {"e#c0": 3}})
    after = Run.from_rankings("a", {"1": {"d#p1": 3, "x": 2}, "2": {"y": 3, "e#p0": 2}})
    lift = compute_lift(before, after, before_qrels, after_qrels=after_qrels)
    moved = {m.query_id: (m.before_rank, m.after_rank, m.recall_after) for m in lift.movements}
    assert moved == {"1": (2, 1, 0.5), "2": (1, 2, 1.0)}
    alone = compute_lift(before, after, before_qrels)
    assert {m.query_id: m.after_rank for m in alone.movements} == {"1": None, "2": None}
    # A query relevant on one side only has no movement to bucket.
    one_sided = compute_lift(before, after, before_qrels, after_qrels=Qrels("v2", {"1": {"d#p1": 2}}))
    assert [m.query_id for m in one_sided.movements] == ["1"] and list(one_sided.no_relevant) == ["2"]
