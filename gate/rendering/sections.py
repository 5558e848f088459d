"""Sections rendered on their own: the attribution (``factorial``), the lift (``retrieval_lift.md``)."""

from __future__ import annotations

import json
import os
from typing import Any

from gate.common.jsontext import json_text
from gate.rendering.jinja import render
from gate.report.spine import Attribution
from gate.statistics.attribution import AttributionResult
from gate.statistics.movement import BUCKET_MEANING, BUCKETS, HIT_BUCKETS, LiftResult


def _label(source: str, tag: str | None) -> dict[str, str | None]:
    """A run's file name and its tag (``None`` when the name already says it)."""
    name = os.path.basename(source.rstrip("/")) or source
    return {"name": name, "tag": tag if tag and tag not in name else None}


def render_lift_markdown(result: LiftResult) -> str:
    """``retrieval_lift.md`` from :data:`gate/rendering/templates/lift.md.j2`."""
    data = result.to_dict()
    # How the mean RR change splits over the buckets (the contributions add up to it),
    # largest first, and the bucket that carries most of it in its direction.
    parts = sorted((b for b in data["buckets"] if b["rr_contribution"]),
                   key=lambda b: -abs(b["rr_contribution"]))
    main = None
    delta = data["mean_rr_delta"]
    if parts and delta:
        same_way = [b for b in parts if b["rr_contribution"] * delta > 0]
        main = same_way[0]["bucket"] if same_way else None
    examples: dict[str, list[dict[str, Any]]] = {}
    for example in result.examples():
        examples.setdefault(example["bucket"], []).append(example)
    return render(
        "lift.md.j2",
        lift=data,
        before_label=_label(result.before, result.before_tag),
        after_label=_label(result.after, result.after_tag),
        meaning=BUCKET_MEANING,
        buckets=BUCKETS,
        main=main,
        parts=parts,
        qrels_label=_label(result.qrels, None)["name"],
        examples=examples,
        hit_buckets=HIT_BUCKETS,
    )


def render_attribution(attribution: AttributionResult | Attribution) -> str:
    """The Markdown attribution section (``gate/rendering/templates/attribution.md.j2``), read
    from the typed record (an :class:`AttributionResult` is written as report.json holds it, then
    read back as its record)."""
    if isinstance(attribution, AttributionResult):
        attribution = Attribution.from_dict(json.loads(json_text(attribution.to_dict())), "attribution")
    return render("attribution.md.j2", a=attribution)
