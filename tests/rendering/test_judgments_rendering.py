"""The ``judgments`` section in the comment, report.md and the terminal: one compact line when
judgments were mapped, a warning when some land on one side's chunks only, ids escaped."""

from __future__ import annotations

import json
from pathlib import Path

from gate.inputs.anchoring import RULE
from gate.rendering import comment as rendering
from gate.rendering.terminal import run_summary_lines
from gate.report.spine import Report

PINNED = Path(__file__).resolve().parents[1] / "regression" / "pinned" / "demo-seed7.json"


def _side(corpus: str, chunks: int, missed: list[tuple[str, str]], not_landed: int | None = None) -> dict:
    return {"corpus": corpus, "landed": 100 - len(missed), "not_landed": len(missed) if not_landed is None
            else not_landed, "not_landed_first": [{"query_id": q, "anchor": a, "line": i + 1}
                                                   for i, (q, a) in enumerate(missed)],
            "chunk_judgments": chunks * 2, "chunks_judged": chunks, "unjudged_share": 0.2}


def _report(baseline: dict | None, candidate: dict) -> Report:
    report = json.loads(PINNED.read_text())["report"]
    report["judgments"] = {"source": "judged.jsonl", "rule": RULE, "share": 0.5,
                           "kinds": {"document": 10, "span": 80, "quote": 10, "chunk": 0},
                           "baseline": baseline, "candidate": candidate}
    return Report.from_dict(report)


def test_one_compact_line_when_every_judgment_lands_alike():
    report = _report(_side("corpus-v1.jsonl", 412, []), _side("corpus-v2.jsonl", 455, []))
    body = rendering.render_comment(report)
    line = ("Judgments mapped from documents and spans onto each side's chunks: baseline 412 chunks judged, "
            "candidate 455; every judgment lands on a chunk of each side.")
    assert line in body and "land on no" not in body and "⚠️ some judgments" not in body
    assert f"judgments: {line[:-1]}" in run_summary_lines(report)


def test_judgments_landing_on_one_side_only_are_counted_and_warned_about():
    missed = [("q1", "span:guides/setup[120,380)"), ("q2", "doc:faq"), ("q7", "quote:faq \"the passage\"")]
    report = _report(_side("corpus-v1.jsonl", 412, []), _side("corpus-v2.jsonl", 455, missed))
    body = rendering.render_comment(report)
    assert ("baseline 412 chunks judged, candidate 455; 3 judgments land on no candidate chunk. ⚠️ some judgments "
            "land on no candidate chunk but on baseline chunks (e.g. query q1: span:guides/setup\\[120,380)): the "
            "candidate has no chunk for those passages, so they count against it as relevant documents it cannot "
            "retrieve (its corpus lacks them: no chunk of it meets those spans, or holds those documents or "
            "quotes).") in body
    terminal = run_summary_lines(report)
    assert any(line.startswith("warning: some judgments land on no candidate chunk") for line in terminal)
    full = rendering._full_report(report) or ""
    assert "Landing on no candidate chunk (corpus-v2.jsonl): query q1, span:guides/setup\\[120,380) (line 1)" in full


def test_ids_from_data_are_escaped_everywhere():
    hostile = [("q1 @admin", "doc:<script>alert(1)</script> [x](https://evil.example) #12")]
    report = _report(_side("corpus-v1.jsonl", 10, []), _side("corpus-v2.jsonl", 10, hostile))
    for text in (rendering.render_comment(report), rendering._full_report(report) or ""):
        assert "<script>" not in text and "](https://" not in text and "@admin" not in text
    for line in run_summary_lines(report):
        assert "\x1b" not in line and "\n" not in line


def test_chunk_id_qrels_say_nothing_about_a_mapping():
    report = json.loads(PINNED.read_text())["report"]
    for value in (None, ...):
        data = dict(report)
        if value is None:
            data["judgments"] = None
        else:
            data.pop("judgments", None)
        record = Report.from_dict(data)
        assert "Judgments mapped" not in rendering.render_comment(record)
        assert not any(line.startswith("judgments:") for line in run_summary_lines(record))


def test_no_baseline_maps_the_candidate_only():
    report = _report(None, _side("corpus-v2.jsonl", 455, [("q1", "doc:gone")]))
    assert ("Judgments mapped from documents and spans onto the candidate's chunks: 455 chunks judged; 1 judgment "
            "lands on no candidate chunk") in rendering._full_report(report)
