"""Plain-text phrases about a report that the terminal and the PR comment both print: what the
candidate's repeats did, the means note, a config value as text. Not yet escaped: the comment's
templates escape them, the terminal makes them terminal-safe."""

from __future__ import annotations

import json
from typing import Any

from gate.report.spine import Report


def value_text(value: Any) -> str:
    """A config value as text (strings as they are, anything else as compact JSON); not yet escaped."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


def repeats_sentence(report: Report) -> str | None:
    """What the candidate's repeats did (report.repeats), in one sentence; None without them."""
    repeats = report.repeats
    if not repeats or not isinstance(repeats.reason, str):
        return None
    looks = list(repeats.looks or ())
    last = looks[-1] if looks else None
    level = (f"; each look tested at α = {last.alpha:g} (the 2.5% split over {len(looks) if len(looks) > 1 else 2} "
             "looks)" if last is not None and isinstance(last.alpha, (int, float)) and last.alpha < 0.025 else "")
    if repeats.decided_on_means and last is not None:
        if len(looks) > 1:
            why = repeats.reason.removeprefix("rerun: ")
            return (f"decided on per-query means of {last.candidate_runs} candidate and {last.baseline_runs} baseline "
                    f"runs: the first look, on one run each, was undecided ({why}){level}")
        return (f"decided on per-query means of {last.candidate_runs} candidate and {last.baseline_runs} baseline "
                f"runs ({repeats.reason})")
    return f"candidate runs {repeats.candidate_runs}, {repeats.rerun}: {repeats.reason}{level}"


def means_note(report: Report) -> str:
    """``" (means of R runs each)"`` when the report's numbers are per-query means of repeats."""
    repeats = report.repeats
    if not repeats:
        return ""
    looks = list(repeats.looks or ())
    if not looks or not repeats.decided_on_means:
        return ""
    return f" (means of {looks[-1].candidate_runs} runs each)"


def _not_landed_words(counts: list[tuple[int, str]]) -> str:
    """``"1 judgment lands on no baseline chunk, 3 on no candidate chunk"`` for the nonzero counts."""
    shown = [(n, side) for n, side in counts if n]
    if not shown:
        return "every judgment lands on a chunk of each side"
    first, *rest = shown
    verb = "judgment lands" if first[0] == 1 else "judgments land"
    return ", ".join([f"{first[0]} {verb} on no {first[1]} chunk", *(f"{n} on no {side} chunk" for n, side in rest)])


def judgments_sentences(report: Report) -> tuple[str | None, str | None]:
    """(the mapping line, a warning) of ``report.judgments``: how anchored judgments were mapped onto
    each side's chunks, and a warning when some land on one side's chunks only (the other side
    cannot retrieve them). (None, None) for chunk-id qrels. Not yet escaped: the ids are data."""
    mapped = report.judgments
    if not mapped:
        return None, None
    base, cand = mapped.baseline, mapped.candidate
    if base is None:
        return (f"Judgments mapped from documents and spans onto the candidate's chunks: {cand.chunks_judged} chunks "
                f"judged; {_not_landed_words([(cand.not_landed, 'candidate')])}"), None
    line = (f"Judgments mapped from documents and spans onto each side's chunks: baseline {base.chunks_judged} "
            f"chunks judged, candidate {cand.chunks_judged}; "
            + _not_landed_words([(base.not_landed, "baseline"), (cand.not_landed, "candidate")]))
    named_base = {(n.query_id, n.anchor) for n in base.not_landed_first}
    named_cand = {(n.query_id, n.anchor) for n in cand.not_landed_first}
    if base.not_landed == cand.not_landed and named_base == named_cand:
        return line, None
    side, other, only = (("baseline", "candidate", named_base - named_cand) if base.not_landed > cand.not_landed
                         else ("candidate", "baseline", named_cand - named_base))
    example = next(iter(sorted(only)), None)
    named = f" (e.g. query {example[0]}: {example[1]})" if example is not None else ""
    return line, (f"some judgments land on no {side} chunk but on {other} chunks{named}: the {side} has no chunk "
                  f"for those passages, so they count against it as relevant documents it cannot retrieve (its "
                  f"corpus lacks them: no chunk of it meets those spans, or holds those documents or quotes)")
