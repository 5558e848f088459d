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
