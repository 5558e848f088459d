"""Judged@10 and the judged-fraction check: real unpooled runs, sensitivity, export."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from gate.checks.judged_share import judged_check, write_unjudged
from gate.evaluation.evaluate import evaluate
from gate.inputs.readers.qrels import read_qrels
from gate.inputs.readers.records import Qrels, Run
from gate.inputs.readers.runs import read_run
from gate.inputs.universe import query_universe
from tests.shared_data import REALDATA, need


def independent_judged_at_10(run_path: Path, qrels_path: Path) -> dict[str, float]:
    """Plain Python: trec_eval order, top 10, share carrying a label >= 0 over min(10, retrieved)."""
    labels: dict[str, dict[str, int]] = {}
    for line in qrels_path.read_text().splitlines():
        if line.strip():
            qid, _, doc, rel = line.split()
            labels.setdefault(qid, {})[doc] = int(rel)
    rows: dict[str, list[tuple[float, str]]] = {}
    opener = gzip.open if run_path.suffix == ".gz" else open
    with opener(run_path, "rt") as handle:
        for line in handle:
            parts = line.split()
            if len(parts) >= 6:
                # trec_eval 9 compares scores as C floats; a float32 round trip mirrors it.
                import struct

                score = struct.unpack("f", struct.pack("f", float(parts[4])))[0]
                rows.setdefault(parts[0], []).append((score, parts[2]))
    out = {}
    for qid in labels:
        ranked = sorted(rows.get(qid, []), key=lambda item: (item[0], item[1].encode()), reverse=True)[:10]
        if not ranked:
            out[qid] = 0.0
            continue
        judged = sum(1 for _, doc in ranked if labels[qid].get(doc, -1) >= 0)
        out[qid] = judged / len(ranked)
    return out


@pytest.mark.parametrize("name", [
    "colbert_rankzephyr_msmarco-passage-trec-dl-2019-judged.run.gz",
    "maik-froebe-colbert-run.txt.gz",
    "maik-froebe-mono-t5-base-run.txt.gz",
    "maik-froebe-splade-run.txt.gz",
    "tirex_monoelectra-base_msmarco-passage-trec-dl-2019-judged.run.gz",
])
def test_judged_at_10_of_unpooled_runs_equals_an_independent_count(name):
    dl19 = need(REALDATA / "runs" / "trec-dl-2019-passage")
    run_path = dl19 / "unpooled_runs" / name
    qrels_path = dl19 / "qrels" / "qrels.dl19-passage.txt"
    qrels = read_qrels(qrels_path)
    universe = query_universe(qrels)
    ours = evaluate(read_run(run_path), qrels, ["Judged@10"], universe.query_ids).values["Judged@10"]
    expected = independent_judged_at_10(run_path, qrels_path)
    assert len(ours) == 43
    for qid, value in zip(universe.query_ids, ours):
        assert value == pytest.approx(expected[qid], abs=1e-12), qid


def test_some_unpooled_runs_return_short_lists_so_the_short_list_rule_matters():
    dl19 = need(REALDATA / "runs" / "trec-dl-2019-passage")
    qrels = read_qrels(dl19 / "qrels" / "qrels.dl19-passage.txt")
    judged_queries = set(qrels.judgments)
    short = 0
    for path in sorted((dl19 / "unpooled_runs").iterdir()):
        run = read_run(path)
        for i, qid in enumerate(run.query_ids):
            if qid in judged_queries and run.starts[i + 1] - run.starts[i] < 10:
                short += 1
    assert short > 0


def _run(rankings):
    return Run.from_rankings("r", rankings)


def test_each_side_is_judged_with_its_own_qrels_when_the_chunks_differ():
    """Anchored judgments mapped onto two chunkings: the baseline's qrels name v1 chunks, the
    candidate's v2 chunks; each side's share is measured with its own (one qrels for both would
    make the re-chunked candidate all unjudged)."""
    base_qrels = Qrels("v1", {"1": {"d#c0": 2, "d#c1": 0}, "2": {"e#c0": 1, "e#c1": 0}})
    cand_qrels = Qrels("v2", {"1": {"d#p0": 2, "d#p1": 0}, "2": {"e#p0": 1, "e#p1": 0}})
    baseline = _run({"1": {"d#c0": 3, "d#c1": 2}, "2": {"e#c0": 2, "e#c1": 1}})
    candidate = _run({"1": {"d#p0": 3, "d#p1": 2, "x": 1}, "2": {"e#p1": 2, "e#p0": 1}})
    ids = ["1", "2"]
    b = evaluate(baseline, base_qrels, ["nDCG@10"], ids)
    c = evaluate(candidate, cand_qrels, ["nDCG@10"], ids)
    check = judged_check(baseline, candidate, b, c, base_qrels, ids, "nDCG@10", {}, candidate_qrels=cand_qrels)
    assert check.baseline.mean == 1.0
    assert check.candidate.mean == pytest.approx((2 / 3 + 1) / 2)
    assert [(q, d) for q, d, _, _ in check.unjudged_rows] == [("1", "x")]
    one_qrels = judged_check(baseline, candidate, b, c, base_qrels, ids, "nDCG@10", {})
    assert one_qrels.candidate.mean == 0.0 and one_qrels.judgment_limited
    # Sensitivity with per-side qrels: the one unjudged candidate chunk, each side augmented with its own.
    forced = judged_check(baseline, candidate, b, c, base_qrels, ids, "nDCG@10", {}, candidate_qrels=cand_qrels,
                          material_drop=0.0)
    assert forced.sensitivity is not None and forced.sensitivity.unjudged_in_union == 1
    assert forced.sensitivity.delta_unjudged_as_zero == pytest.approx(
        float((c.values["nDCG@10"] - b.values["nDCG@10"]).mean()))


def test_a_candidate_surfacing_unjudged_documents_is_judgment_limited_with_sensitivity(tmp_path):
    qrels = Qrels("q", {"1": {"a": 2, "b": 0, "c": 1}, "2": {"x": 1, "y": 0}})
    baseline = _run({"1": {"a": 3, "b": 2, "c": 1}, "2": {"x": 2, "y": 1}})
    candidate = _run({"1": {"n1": 3, "a": 2, "n2": 1}, "2": {"n3": 2, "x": 1}})
    ids = ["1", "2"]
    b = evaluate(baseline, qrels, ["nDCG@10"], ids)
    c = evaluate(candidate, qrels, ["nDCG@10"], ids)
    check = judged_check(baseline, candidate, b, c, qrels, ids, "nDCG@10", {"1": "s", "2": "t"})
    assert check.baseline.mean == 1.0
    assert check.candidate.mean == pytest.approx((1 / 3 + 1 / 2) / 2)
    assert check.judgment_limited
    # The check reports the share; the verdict applies the limit (58% unjudged > 30%).
    from gate.verdict.rules import Findings, Policy, failures_of

    reasons = failures_of(Findings("nDCG@10", 2, 0.0, 0.0, 0.0, unjudged_share=1 - check.candidate.mean,
                                   judged_drop=check.drop), Policy())
    assert [r.code for r in reasons] == ["judged_share", "judged_share"]
    assert reasons[0].message == "58% of the candidate's top 10 is unjudged (limit 30%)"
    s = check.sensitivity
    assert s.unjudged_in_union == 3 and s.top_grade == 2
    # Unjudged as 0 is the ordinary delta; as top grade the candidate gains.
    ordinary = float((c.values["nDCG@10"] - b.values["nDCG@10"]).mean())
    assert s.delta_unjudged_as_zero == pytest.approx(ordinary)
    assert s.delta_unjudged_as_top > s.delta_unjudged_as_zero
    # Condensed lists: the candidate's lists become [a] and [x], the baseline's unchanged.
    assert check.candidate.by_stratum == {"s": pytest.approx(1 / 3), "t": pytest.approx(1 / 2)}
    assert [(q, d, r) for q, d, r, _ in check.unjudged_rows] == [("1", "n1", 1), ("1", "n2", 3), ("2", "n3", 1)]
    path = write_unjudged(tmp_path / "unjudged.tsv", check.unjudged_rows)
    assert path.read_text().splitlines()[:2] == ["query_id\tdoc_id\trank\trun", "1\tn1\t1\tcandidate"]
