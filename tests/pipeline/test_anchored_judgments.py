"""`run` on a small world whose ingestion change re-chunks every document (v1 -> v2).

With judgments anchored to spans of the documents, both sides are judged alike: the unjudged
share of the two top-10s stays near equal. With chunk-id judgments made on v1 (today's qrels),
the candidate's chunks are all unjudged: its unjudged share jumps, and the comparison is unfair.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gate.cli import main
from gate.inputs.config import load_config
from gate.pipeline.archive import archive
from gate.pipeline.run import run_gate
from gate.rendering.comment import render_comment
from gate.report.spine import Report
from tests.support.small_world import RUNNER, TOPICS, WORDS

SENTENCES = 8


def _silent(message: str) -> None:
    pass


def _document(i: int) -> tuple[str, list[str]]:
    topic = TOPICS[i % len(TOPICS)]
    parts = [f"{topic} {WORDS[i]} part {j} configure the dashboard settings before deploying. "
             for j in range(SENTENCES)]
    return f"guide/{topic.replace(' ', '-')}-{i}", parts


def _chunks(doc: str, text: str, bounds: list[int], tag: str) -> list[dict]:
    return [{"id": f"{doc}#{tag}{k}", "doc_id": doc, "text": text[a:b], "start_char_idx": a, "end_char_idx": b}
            for k, (a, b) in enumerate(zip(bounds, bounds[1:], strict=False))]


def rechunked_world(tmp: Path, *, anchored: bool) -> Path:
    """20 queries, one document each of 8 sentences; v1 cuts at sentences, v2 half a sentence
    later (the same number of chunks, every boundary moved, every chunk id new)."""
    queries, chunk_qrels, anchored_lines, v1, v2 = [], [], [], [], []
    for i in range(20):
        doc, parts = _document(i)
        text = "".join(parts)
        qid = f"q_{i:04d}"
        queries.append({"query_id": qid, "text": f"how do i configure {TOPICS[i % len(TOPICS)]} with {WORDS[i]}"})
        starts = [sum(len(p) for p in parts[:j]) for j in range(SENTENCES)] + [len(text)]
        half = [0] + [s + len(parts[0]) // 2 for s in starts[:-2]] + [len(text)]
        v1 += _chunks(doc, text, starts, "c")
        v2 += _chunks(doc, text, half, "p")
        grades = [2, 1, 1] + [0] * (SENTENCES - 3)
        chunk_qrels += [f"{qid} 0 {doc}#c{j} {g}" for j, g in enumerate(grades)]
        anchored_lines.append({"query_id": qid, "doc_id": doc, "start": starts[0], "end": starts[1], "grade": 2})
        anchored_lines.append({"query_id": qid, "doc_id": doc, "start": starts[1], "end": starts[3], "grade": 1})
    anchored_lines.append({"query_id": "q_0000", "doc_id": "guide/gone", "grade": 1})  # in neither corpus
    (tmp / "golden.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (tmp / "qrels.txt").write_text("\n".join(chunk_qrels) + "\n")
    (tmp / "judged.jsonl").write_text("".join(json.dumps(j) + "\n" for j in anchored_lines))
    for name, chunks in (("corpus-v1.jsonl", v1), ("corpus-v2.jsonl", v2)):
        (tmp / name).write_text("".join(json.dumps(c) + "\n" for c in chunks))
    (tmp / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 1.0\n")
    (tmp / "gate.yml").write_text(
        f"suite: rechunk\ngolden: {{queries: golden.jsonl, qrels: {'judged.jsonl' if anchored else 'qrels.txt'}}}\n"
        "corpus: corpus-{ingestion.parser}.jsonl\nretrieval: {config: retrieval.yml}\n"
        f"runner:\n  command: \"{sys.executable} {RUNNER} --config {{config}} --queries {{queries}} "
        "--corpus {corpus} --output {run}\"\n"
        "statistics: {samples: 500}\nleakage: {enabled: false}\n")
    return tmp / "gate.yml"


def _rechunked_run(tmp: Path, *, anchored: bool) -> dict:
    path = rechunked_world(tmp, anchored=anchored)
    archive(load_config(path), progress=_silent)
    (tmp / "retrieval.yml").write_text("ingestion: {parser: v2}\nboost: 1.0\n")
    return run_gate(load_config(path), progress=_silent).report


def test_anchored_judgments_judge_both_chunkings_alike(tmp_path):
    report = _rechunked_run(tmp_path, anchored=True)
    judged = report["judged"]
    base, cand = judged["baseline"]["unjudged"], judged["candidate"]["unjudged"]
    assert abs(base - cand) <= 0.05, (base, cand)
    section = report["judgments"]
    assert section["kinds"] == {"document": 1, "span": 40, "quote": 0, "chunk": 0}
    assert section["share"] == 0.5 and "highest grade" in section["rule"]
    for side, corpus in (("baseline", "corpus-v1.jsonl"), ("candidate", "corpus-v2.jsonl")):
        mapped = section[side]
        assert mapped["corpus"] == corpus
        assert (mapped["landed"], mapped["not_landed"]) == (40, 1)
        assert mapped["not_landed_first"] == [{"query_id": "q_0000", "anchor": "doc:guide/gone", "line": 41}]
        assert mapped["chunks_judged"] == 160 and mapped["chunk_judgments"] == 160
        assert mapped["unjudged_share"] == judged[side]["unjudged"]  # the judged-share check's own figure
    # The candidate's sentence 0 is split over p0 (half) and p1 (half, with half of sentence 1):
    # both take grade 2 - the same documents are relevant on both sides.
    comment = render_comment(Report.from_dict(report))
    assert ("Judgments mapped from documents and spans onto each side's chunks: baseline 160 chunks judged, "
            "candidate 160; 1 judgment lands on no baseline chunk, 1 on no candidate chunk") in comment


def test_chunk_id_judgments_made_on_v1_leave_the_rechunked_candidate_unjudged(tmp_path):
    report = _rechunked_run(tmp_path, anchored=False)
    judged = report["judged"]
    assert judged["baseline"]["unjudged"] < 0.3
    assert judged["candidate"]["unjudged"] == 1.0  # every v2 chunk id is new: nothing the candidate finds is judged
    assert report["judgments"] is None


def test_golden_anchor_document_maps_a_plain_qrels_file_by_document(tmp_path, capsys):
    path = rechunked_world(tmp_path, anchored=False)
    # The same world's qrels, by document: each query judges its own document 1.
    (tmp_path / "qrels.txt").write_text("".join(f"q_{i:04d} 0 {_document(i)[0]} 1\n" for i in range(20)))
    path.write_text(path.read_text().replace("qrels: qrels.txt", "qrels: qrels.txt, anchor: document"))
    archive(load_config(path), progress=_silent)
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v2}\nboost: 1.0\n")
    report = run_gate(load_config(path), progress=_silent).report
    assert report["judgments"]["kinds"]["document"] == 20
    assert report["judgments"]["baseline"]["chunks_judged"] == report["judgments"]["candidate"]["chunks_judged"]
    assert abs(report["judged"]["baseline"]["unjudged"] - report["judged"]["candidate"]["unjudged"]) <= 0.05


def test_anchored_judgments_without_a_corpus_are_one_line_exit_2(tmp_path, capsys):
    path = rechunked_world(tmp_path, anchored=True)
    path.write_text(path.read_text().replace("corpus: corpus-{ingestion.parser}.jsonl\n", ""))
    assert main(["archive", "--config", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "judged.jsonl holds judgments anchored to documents and spans" in err
    assert "names no corpus (add corpus:)" in err


def test_a_span_on_a_corpus_without_offsets_is_one_line_exit_2(tmp_path, capsys):
    path = rechunked_world(tmp_path, anchored=True)
    v2 = tmp_path / "corpus-v2.jsonl"
    rows = [json.loads(line) for line in v2.read_text().splitlines()]
    v2.write_text("".join(json.dumps({k: v for k, v in row.items() if not k.endswith("_char_idx")}) + "\n"
                          for row in rows))
    archive(load_config(path), progress=_silent)
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v2}\nboost: 1.0\n")
    assert main(["run", "--config", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "judged.jsonl:1: span [0, " in err and "corpus-v2.jsonl have none (start_char_idx / end_char_idx)" in err
