"""The report's ``judgments`` section (report.json 1.11): how anchored judgments were mapped onto
each side's chunks, and the unjudged share each side has under that mapping."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gate.inputs.anchoring import MappedSides, MappingSummary

__all__ = ["judgments_section"]


def _side(summary: MappingSummary, judged_side: Mapping[str, Any] | None) -> dict[str, Any]:
    return {
        "corpus": summary.corpus,
        "landed": summary.landed,
        "not_landed": summary.not_landed,
        "not_landed_first": [{"query_id": item.query_id, "anchor": item.anchor, "line": item.line}
                             for item in summary.not_landed_first],
        "chunk_judgments": summary.chunk_judgments,
        "chunks_judged": summary.chunks_judged,
        # The judged-share check's own figure (judged.<side>.unjudged), not computed again here.
        "unjudged_share": None if judged_side is None else judged_side.get("unjudged"),
    }


def judgments_section(mapped: MappedSides | None, judged: Mapping[str, Any] | None) -> dict[str, Any]:
    """``judgments``: null for chunk-id qrels; else the rule, the share, the judgments by kind and
    each side's mapping. ``judged``: the report's ``judged`` section, whose unjudged shares are quoted."""
    if mapped is None:
        return {"judgments": None}
    summary = mapped.candidate
    return {"judgments": {
        "source": mapped.source,
        "rule": summary.rule,
        "share": summary.share,
        "kinds": dict(summary.judgments),
        "baseline": None if mapped.baseline is None else _side(mapped.baseline, (judged or {}).get("baseline")),
        "candidate": _side(summary, (judged or {}).get("candidate")),
    }}
