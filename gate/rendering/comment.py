"""Renderings of report.json for reviewers: the short, decision-first PR comment, the job summary.

The comment is built from sections, each ``(markdown, droppable)``:

1. the headline (first line: verdict, the rule that decided, the delta with
   its CI and the noise phrase, the query count), the suite, every reason,
   and the measures table;
2. commensurability (how the baseline was made comparable, what differed);
3. what this PR changed: the config diff (capped) and the attribution grid;
4. validity: reporting set, leakage, judged share, tuning, prompts, goalposts;
5. strata with traffic shares and a text forest plot;
6. detail (droppable): leaked queries, movement buckets, biggest wins and
   losses, the full config diff, the full attribution section;
7. reproduce: the command, input fingerprints, seed, samples, versions.

:func:`render_comment` joins them with :func:`gate.rendering.markdown_cut.fit_comment`, which
drops detail sections (last first, never cutting a table) to stay within
GitHub's 65,536 characters. :func:`render_summary` is the same plus the full
report, kept under the job summary's 1 MiB. Every value that comes from data
(query texts and ids, config keys and values, file names, stratum and suite
names) passes through the ``md`` filter, so it cannot break a table, open
HTML or mention anyone. The hidden marker is added by
:func:`gate.publishing.github.sticky_comment.publish_comment`, not here.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import re
import shlex
from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import Any, TypeGuard

import jinja2

from gate.common.numbers import counted
from gate.rendering.jinja import ReportEnvironment, environment
from gate.rendering.markdown import Inert, fence, finalizer, inert, md_text, signed
from gate.rendering.markdown_cut import COMMENT_LIMIT, fit_comment, fit_sections
from gate.rendering.phrases import judgments_sentences, means_note, repeats_sentence, value_text
from gate.rendering.resource_rows import resource_rows, resource_title
from gate.report.spine import (
    Accepted,
    ArchivedBaseline,
    AttributionGrid,
    AttributionReadings,
    Baseline,
    Candidate,
    CandidateConfig,
    Delta,
    DeltaAllQueries,
    Judged,
    NoiseBand,
    Prompts,
    Reason,
    Report,
    ReportingSet,
    Traffic,
    Tuning,
    Verdict,
)
from gate.report.typed import ABSENT, Absent, empty

__all__ = [
    "EMOJI",
    "DEFAULT_REPRODUCE_COMMAND",
    "SUMMARY_LIMIT",
    "headline",
    "headline_cells",
    "comment_sections",
    "render_comment",
    "render_summary",
]

log = logging.getLogger("gate.rendering.comment")

EMOJI = {"pass": "✅", "fail": "❌", "inconclusive": "⚠️", "skipped": "⏭️", "accepted": "☑️"}
DEFAULT_REPRODUCE_COMMAND = "retrieval-gate run --config .retrieval-gate.yml"
REPRODUCE_ARGUMENT_LIMIT = 1000  # characters of a config path or base ref quoted in the reproduce command
SUMMARY_LIMIT = 1024 * 1024  # bytes: GitHub's job summary cap per step

CONFIG_ROWS = 15  # config diff rows shown before the detail section takes over
CONFIG_DETAIL_ROWS = 300  # rows in the (droppable) full config diff
TOP_QUERIES = 10  # biggest wins and losses each
LEAK_ROWS = 30

# Reasons whose message repeats the interval the headline already shows.
_STATISTICAL = {"regression_shown", "non_inferior", "improvement_shown", "improvement_required", "underpowered",
                "too_few_movers", "no_regression_shown"}
_GOOD_REASONS = {"non_inferior", "improvement_shown", "unchanged", "not_relevant", "no_regression_shown"}
# Reasons that leave the question open (the verdict is inconclusive on them), whatever else failed.
_OPEN_REASONS = {"too_few_movers", "held_out_too_small", "underpowered", "base_unavailable", "runner_failed",
                 "empty_reporting_set", "missing_run"}
_RESOLUTION_WORDS = {
    "reused": "the archived per-query values",
    "rescored": "the archived ranked lists re-scored against today's qrels",
    "replayed": "the archived config re-run on today's queries",
    "reconstructed": "not archived: the base commit's config re-run",
}


# --------------------------------------------------------------------------- formatting helpers


def md(value: object, limit: int | None = None) -> str:
    """:func:`gate.rendering.markdown.md_text` (the comment's name for it)."""
    return md_text(value, limit)


def msigned(value: float | None, digits: int = 3) -> str:
    """``signed`` with a typographic minus (−0.012), as the comment prints deltas."""
    return signed(value, digits).replace("-", "−")


_ASCII_MINUS = re.compile(r"""(?<![\w.\-'"`/])-(?=\d)""")


def typographic_minus(text: str) -> str:
    """The report's prose (a reason: ``delta -0.012``) with the comment's minus sign (−0.012), so a
    reason and the table beside it print one sign; a hyphen inside an id or a date (``q-1``,
    ``2026-12-02``) stays a hyphen."""
    return _ASCII_MINUS.sub("−", text)


def interval(low: float | None, high: float | None, digits: int = 3) -> str:
    return f"[{msigned(low, digits)}, {msigned(high, digits)}]"


def bar(count: Any, top: Any, width: int = 16) -> str:
    """A text bar for a non-negative count, as an inert code span."""
    try:
        count, top = float(count or 0), float(top or 0)
    except (TypeError, ValueError):
        return ""
    if top <= 0 or count <= 0 or not math.isfinite(count):
        return ""
    cells = max(1, round(count / top * width))
    return "`" + "█" * cells + "`"


def _fenced(markdown: str) -> Iterator[tuple[str, bool]]:
    """Each line with whether it is inside (or opens/closes) a code fence."""
    fence_mark = None
    for line in markdown.split("\n"):
        match = re.match(r"^ {0,3}(`{3,}|~{3,})", line)
        if fence_mark is None and match:
            fence_mark = match.group(1)
            yield line, True
        elif fence_mark is not None:
            if match and match.group(1)[0] == fence_mark[0] and len(match.group(1)) >= len(fence_mark):
                fence_mark = None
            yield line, True
        else:
            yield line, False


def _demote(markdown: str, levels: int) -> str:
    """Push ATX headings down ``levels`` (outside code fences), so an included report nests under ours."""
    out: list[str] = []
    for line, fenced in _fenced(markdown):
        if not fenced and re.match(r"^#{1,6} ", line):
            hashes = len(line) - len(line.lstrip("#"))
            line = "#" * min(6, hashes + levels) + line[hashes:]
        out.append(line)
    return "\n".join(out)


def _tidy(markdown: str) -> str:
    """Collapse runs of blank lines (outside code fences) left by optional template parts."""
    out: list[str] = []
    blank = False
    for line, fenced in _fenced(markdown):
        if not fenced and not line.strip():
            if blank:
                continue
            blank, line = True, ""
            out.append(line)
            continue
        blank = False
        out.append(line)
    return "\n".join(out)


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    # The shared environment's settings, filters and globals, in an environment
    # of our own: adding our filters never touches the one gate.rendering.jinja uses.
    base = environment()
    env = ReportEnvironment(loader=base.loader, finalize=finalizer(md))
    env.filters.update(base.filters)
    env.globals.update(base.globals)
    env.filters["md"] = inert(md)
    env.filters["msigned"] = inert(msigned)
    env.filters["value"] = value_text  # not yet escaped: `value | md`
    env.filters["fence"] = inert(fence)
    env.globals["interval"] = inert(interval)
    env.globals["bar"] = inert(bar)
    return env


def _macros() -> Any:
    return _env().get_template("comment.md.j2").module


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


# --------------------------------------------------------------------------- the headline


def _commensurable(report: Report) -> bool:
    """False when a run's baseline could not be made commensurable (``baseline.resolution`` null)."""
    return not (report.baseline and report.baseline.resolution is None)


def _shown_delta(report: Report) -> Delta | None:
    """The delta the comment may show: only on a commensurable baseline, and only a finite one."""
    delta = report.delta
    if not delta or not _commensurable(report) or _num(delta.mean) is None:
        return None
    return delta


def _kind(report: Report) -> str:
    return str(report.verdict.kind) if report.verdict else ""


def _query_count(report: Report) -> int | None:
    verdict_set = report.verdict.reporting_set if report.verdict else ABSENT
    for value in (report.query_count, report.reporting_set.query_count if report.reporting_set else ABSENT,
                  verdict_set.query_count if verdict_set else ABSENT):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _noise_phrase(report: Report) -> str | None:
    band = report.noise_band
    if not band:
        return None
    threshold = _num(band.threshold)
    if threshold is not None:
        delta = report.delta
        low, high = (_num(delta.ci_low), _num(delta.ci_high)) if delta else (None, None)
        if band.exceeded and low is not None and high is not None and low <= 0.0 <= high:
            # |delta| is above the band but the interval crosses zero: nothing is shown to exceed it.
            return f"noise ±{threshold:.3f}"
        word = "exceeds" if band.exceeded else "within"
        return f"{word} noise ±{threshold:.3f}"
    if band.state == "stale" or band.stale:
        return "noise band stale"
    return "no noise band"


#: The headline's phrase for a statistical reason whose interval the headline shows beside it.
_SHOWN = {"regression_shown": "regression shown", "improvement_shown": "improvement shown",
          "improvement_required": "improvement required but not shown", "no_regression_shown": "no regression shown"}


def _rule_phrase(report: Report, reason: Reason, delta_shown: bool) -> str:
    """The rule that decided, shortened where the headline already shows the interval; its
    numbers come from the report's records (the decision, the reporting set, the power line),
    never from the reason's message."""
    code = str(reason.code or "")
    if code == "held_out_too_small":
        return _held_out_phrase(report)
    if delta_shown and code in _STATISTICAL:
        if code in _SHOWN:
            return _SHOWN[code]
        if code == "non_inferior":
            # (Reports of schema 1.0-1.2 carry no decision block: no margin is shown for them.)
            margin = _num(report.decision.margin) if report.decision else None
            return f"non-inferior (margin −{margin:g})" if margin is not None else "non-inferior"
        if code == "too_few_movers":
            decision = report.decision
            movers, n = (decision.movers, decision.n) if decision else (None, None)
            return (f"only {movers} of {counted(n, 'query', 'queries')} moved"
                    if isinstance(movers, int) and isinstance(n, int) else "too few queries moved")
        return _neither_phrase(report)
    # The limit ("...; limit 20%") is in the reasons list below; the headline keeps the finding.
    return typographic_minus(" ".join(reason.finding.split()))


def _held_out_phrase(report: Report) -> str:
    """The list below gives the whole reason (how many more to hold out); the headline, its
    gist, from the reporting set the verdict was computed on."""
    held_out = report.verdict.reporting_set if report.verdict else None
    count = held_out.query_count if held_out else None
    if not isinstance(count, int):
        return "the held-out set is too small: too few to decide"
    name = (held_out.name if held_out and isinstance(held_out.name, str) else None) or "held-out golden queries"
    return f"only {counted(count, 'query', 'queries')} to report on ({name}): too few to decide"


def _neither_phrase(report: Report) -> str:
    """Neither claim shown: with the power line's figure where there is one, so the headline
    and the line below agree."""
    caught = _num(report.power.regression_80) if report.power else None
    if caught is not None:
        return (f"neither a regression nor non-inferiority shown (a −{caught:.3f} regression is caught 80% of the "
                "time)")
    mde = _num(report.delta.mde) if report.delta else None
    return "neither a regression nor non-inferiority shown" + (
        f" (minimum detectable effect {mde:.3f})" if mde is not None else " (minimum detectable effect not estimable)")


def _headline_parts(report: Report) -> list[tuple[str, str]]:
    """(plain, markdown) pieces, joined by ' — '; in the markdown form every piece of data is escaped."""
    kind = _kind(report)
    delta = _shown_delta(report)
    parts: list[tuple[str, str]] = [_data_part(f"ℹ️ {kind or 'no verdict'}", 60) if kind not in EMOJI
                                    else (f"{EMOJI[kind]} {kind}",) * 2]
    rule = _rule_part(report, kind, delta is not None)
    if rule is not None:
        parts.append(_data_part(rule))
    if delta is not None:
        parts.append(_delta_part(report, delta))
    elif kind != "skipped" and not _commensurable(report):  # a skipped change: the reason says why
        parts.append(("no delta: the baseline is not commensurable",) * 2)
    count = _query_count(report)
    if count is not None and delta is not None:
        parts.append((f"{count} q",) * 2)
    return parts


def _data_part(text: str, limit: int = 240) -> tuple[str, str]:
    """A headline piece that quotes data: plain, and escaped for Markdown."""
    plain = " ".join(str(text).split())
    return plain, md(plain, limit)


def _rule_part(report: Report, kind: str | None, delta_shown: bool) -> str | None:
    """The rule that decided; for an accepted change, the rule that failed and who accepted it."""
    reasons = list(report.verdict.reasons or ()) if report.verdict else []
    if kind == "accepted":
        # The rule that failed, and who accepted it on purpose (the justification is quoted below).
        accepted = report.accepted or empty(Accepted)
        failed: list[Any] = list(accepted.failed_on or ())
        failed = failed or [r for r in reasons if not str(r.code or "").startswith("accept")]
        phrase = _rule_phrase(report, failed[0], delta_shown) + ", accepted" if failed else "accepted"
        return phrase + (f" ({accepted.label})" if accepted.label else "")
    return _rule_phrase(report, reasons[0], delta_shown) if reasons else None


def _delta_part(report: Report, delta: Any) -> tuple[str, str]:
    """The metric, its delta and interval, and what qualifies them (the noise band, judgments)."""
    metric = " ".join(str(report.metric or "delta").split())
    numbers = f" {msigned(delta.mean)} {interval(delta.ci_low, delta.ci_high)}"
    extra = [p for p in (_noise_phrase(report),) if p]
    if report.judged and report.judged.judgment_limited:
        extra.append("judgment-limited")
    tail = "".join(f", {e}" for e in extra)
    shown_metric = metric if len(metric) <= 60 else metric[:59] + "…"
    return shown_metric + numbers + tail, md(metric, 60) + numbers + tail


#: Characters of the comment's first line (``### `` and the Markdown headline) and of the plain
#: headline: GitHub's notification previews cut a first line beyond this.
HEADLINE_LIMIT = 300
_SEPARATOR = " — "
_CLAUSE_ENDS = (": ", "; ", " — ", ", ", " (")
_PARENTHETICAL = re.compile(r"\s*\([^()]*\)")


def _gist(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters: whole when it fits; else its gist, without its
    parentheticals (the detail the reasons list gives in full) and cut before the first "; "
    (the advice that follows the finding), or after its last clause that fits, or at a word; a
    cut text ends with "…"."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return "…"[:max(limit, 0)]
    while True:
        spans = list(_PARENTHETICAL.finditer(text))
        if not spans:
            break
        last = spans[-1]
        text = text[:last.start()] + text[last.end():]
        if len(text) <= limit and "; " not in text:
            return text
    room = limit - 1  # for the "…"
    finding = text.find("; ")  # what was found comes first; what to do about it, after a "; "
    if 12 <= finding <= room:
        return text[:finding].rstrip(" ,;:—") + "…"
    ends = [i for sep in _CLAUSE_ENDS for i in _positions(text, sep) if 12 <= i <= room]
    if ends:
        return text[:max(ends)].rstrip(" ,;:—") + "…"
    cut = text[:room]
    space = cut.rfind(" ")
    if space > room // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:—") + "…"


def _positions(text: str, sep: str) -> list[int]:
    out, at = [], text.find(sep)
    while at >= 0:
        out.append(at)
        at = text.find(sep, at + 1)
    return out


def _fitted_parts(report: Report) -> list[tuple[str, str]]:
    """:func:`_headline_parts` within :data:`HEADLINE_LIMIT`: the verdict and the main number
    stay; the rule's phrase (a reason's message, quoting data and advice) is shortened to its gist,
    the whole reason being the first of the reasons listed below the headline."""
    parts = _headline_parts(report)
    if len(parts) < 2 or parts[1][0] == parts[1][1] == "no delta: the baseline is not commensurable":
        return parts
    plain_rule = parts[1][0]
    others_plain = sum(len(p) for i, (p, _) in enumerate(parts) if i != 1) + len(_SEPARATOR) * (len(parts) - 1)
    others_md = sum(len(m) for i, (_, m) in enumerate(parts) if i != 1) + len(_SEPARATOR) * (len(parts) - 1)
    md_room = HEADLINE_LIMIT - len("### ") - others_md
    budget = min(len(plain_rule), HEADLINE_LIMIT - others_plain)
    while True:
        short = _gist(plain_rule, max(budget, 1))
        marked = md(short, max(budget, 1))
        if (len(marked) <= md_room and len(short) <= HEADLINE_LIMIT - others_plain) or budget <= 1:
            break
        budget -= max(1, len(marked) - md_room)
    if short == plain_rule:
        return parts
    return [parts[0], (short, marked), *parts[2:]]


def headline(report: Report, *, markdown: bool = True) -> str:
    """The one-line verdict: ``❌ fail — <rule> — nDCG@10 −0.012 [−0.031, +0.008], within noise ±0.013 — 140 q``.

    With ``markdown=True`` (the default) data is escaped for Markdown (the
    comment's first line is ``### `` plus this); ``markdown=False`` gives
    plain text, e.g. for a commit status description. Either is at most
    :data:`HEADLINE_LIMIT` characters (the Markdown one with its ``### ``): a long rule
    (many reasons, long stratum names, advice) is cut to its gist, and is given whole among the
    reasons below it.
    """
    if not isinstance(report, Report):
        raise TypeError(f"the headline renders a gate.report.spine.Report, not a {type(report).__name__}")
    text = _SEPARATOR.join(md if markdown else plain for plain, md in _fitted_parts(report))
    limit = HEADLINE_LIMIT - (len("### ") if markdown else 0)
    if len(text) > limit:  # parts the gate does not shorten (a hostile report's): cut at a space
        cut = text[:limit - 1]
        space = cut.rfind(" ")
        text = (cut[:space] if space > limit // 2 else cut) + "…"
    return text


@dataclasses.dataclass(frozen=True)
class HeadlineCells:
    """The headline's pieces as Markdown (data escaped), for a row of a table of several suites."""

    verdict: str  # the emoji and the kind: "❌ fail"
    rule: str  # the rule that decided, its gist ("" when the verdict has no reason)
    delta: str  # the primary measure's delta with its interval and noise phrase ("" when none is shown)


def headline_cells(report: Report, rule_limit: int = 160) -> HeadlineCells:
    """:func:`headline`'s verdict, rule and delta apart, each escaped; the rule cut to its gist
    within ``rule_limit`` characters (the reasons in the suite's own section give it whole)."""
    if not isinstance(report, Report):
        raise TypeError(f"the headline renders a gate.report.spine.Report, not a {type(report).__name__}")
    kind = _kind(report)
    delta = _shown_delta(report)
    verdict = _data_part(f"ℹ️ {kind or 'no verdict'}", 60)[1] if kind not in EMOJI else f"{EMOJI[kind]} {kind}"
    rule = _rule_part(report, kind, delta is not None)
    if delta is not None:
        shown = _delta_part(report, delta)[1]
    elif kind != "skipped" and not _commensurable(report):
        shown = "no delta: the baseline is not commensurable"
    else:
        shown = ""
    return HeadlineCells(verdict, md(_gist(" ".join(rule.split()), rule_limit), rule_limit) if rule else "", shown)


def headlined(report: Report, reproduce_command: str | None = None) -> Report:
    """``report`` with ``verdict.headline`` set to its plain-text :func:`headline`: what the
    comment's first line says, kept in report.json (the Action's and ``run``'s alike); and with
    ``reproduce_command`` when given, so that a comment rendered later from report.json alone
    (``retrieval-gate comment`` in a fork-safe workflow) quotes the same command."""
    if not isinstance(report, Report):
        raise TypeError(f"the headline renders a gate.report.spine.Report, not a {type(report).__name__}")
    if reproduce_command is not None:
        report = dataclasses.replace(report, reproduce_command=reproduce_command)
    if not report.verdict:
        return report
    return dataclasses.replace(report, verdict=dataclasses.replace(report.verdict,
                                                                   headline=headline(report, markdown=False)))


def reproduce_command(config_path: str, base: str | None = None) -> str:
    """The shell command that reproduces a gate run: ``retrieval-gate run --config <path>
    [--base <ref>]``, each argument shell-quoted."""
    return shlex.join(["retrieval-gate", "run", "--config", str(config_path), *(["--base", base] if base else [])])


def quoted_reproduce_command(report: Report) -> str | None:
    """The report's ``reproduce_command`` when it is one this tool writes, rebuilt from its parts;
    ``None`` otherwise. report.json may come from a fork's artifact, and a reviewer copies this
    line into a shell: anything but ``retrieval-gate run --config <path> [--base <ref>]`` with plain
    arguments (printable ASCII, none starting with '-', at most 1000 characters) is not quoted."""
    text = report.reproduce_command
    if not isinstance(text, str) or not text:
        return None
    try:
        words = shlex.split(text)
    except ValueError:
        return None
    if words[:3] != ["retrieval-gate", "run", "--config"] or len(words) not in (4, 6):
        return None
    if len(words) == 6 and words[4] != "--base":
        return None
    values = words[3::2]
    if any(not value or value.startswith("-") or len(value) > REPRODUCE_ARGUMENT_LIMIT
           or not all(" " <= c <= "~" for c in value) for value in values):
        return None  # printable ASCII only: a filler or blank that looks like nothing is not quoted
    return reproduce_command(values[0], values[1] if len(values) == 2 else None)


# --------------------------------------------------------------------------- section views


def _reason_rows(report: Report) -> list[dict[str, str]]:
    kind = _kind(report)
    quoted = bool(report.accepted)  # the acceptance is quoted on its own, with its justification
    rows = []
    for reason in (report.verdict.reasons or ()) if report.verdict else ():
        code = str(reason.code or "")
        if code == "accepted" and quoted:
            continue
        if code == "warning":
            icon = "⚠️"
        elif code in _GOOD_REASONS and kind in ("fail", "inconclusive", "accepted"):
            icon = "•"  # a finding in its favour, not a check mark inside a verdict that is not a pass
        elif code in _GOOD_REASONS:
            icon = "✅"
        elif code in _OPEN_REASONS:
            icon = "⚠️"
        elif code.startswith("accept"):
            icon = "☑️"
        elif kind in ("fail", "accepted"):
            icon = "❌"
        elif kind == "inconclusive":
            icon = "⚠️"
        else:
            icon = "•"
        rows.append({"icon": icon, "code": code, "message": typographic_minus(str(reason.message or ""))})
    return rows


def _measure_rows(report: Report) -> list[dict[str, Any]]:
    metric = report.metric
    delta = report.delta
    rows = []
    for name, m in (report.measures or {}).items():
        primary = name == metric
        rows.append({
            "name": name, "primary": primary, "baseline": _num(m.baseline),
            "candidate": _num(m.candidate), "delta": _num(m.delta),
            "ci": Inert(interval(delta.ci_low, delta.ci_high)) if primary and delta else "",
        })
    rows.sort(key=lambda r: not r["primary"])
    return rows


def _per_query_view(report: Report) -> dict[str, Any] | None:
    scored = [(row, delta) for row in report.per_query or () if (delta := _num(row.delta)) is not None]
    if not scored:
        return None
    losses = [row for row, _ in sorted(((row, delta) for row, delta in scored if delta < 0),
                                       key=lambda scored_row: (scored_row[1], str(scored_row[0].query_id)))]
    wins = [row for row, _ in sorted(((row, delta) for row, delta in scored if delta > 0),
                                     key=lambda scored_row: (-scored_row[1], str(scored_row[0].query_id)))]
    shown = wins[:TOP_QUERIES] + losses[:TOP_QUERIES]
    return {
        "wins": wins[:TOP_QUERIES],
        "losses": losses[:TOP_QUERIES],
        "n_wins": len(wins),
        "n_losses": len(losses),
        "n_ties": len(scored) - len(wins) - len(losses),
        "total": len(scored),
        "has_stratum": any(r.stratum is not None for r in shown),
    }


def _config_view(report: Report) -> dict[str, Any] | None:
    if isinstance(report.config_diff, Absent):
        return None
    rows = list(report.config_diff)
    return {"rows": rows, "shown": rows[:CONFIG_ROWS], "detail": rows[:CONFIG_DETAIL_ROWS],
            "more": max(0, len(rows) - CONFIG_ROWS), "detail_more": max(0, len(rows) - CONFIG_DETAIL_ROWS)}


def _attribution_view(report: Report) -> dict[str, Any] | None:
    a = report.attribution
    if not a:
        return None
    if _given(a.refused):
        return {"kind": "refused", "text": a.refused}
    if _given(a.error):
        return {"kind": "error", "text": a.error}
    if a.bundle:
        return {"kind": "bundle", "bundle": a.bundle}
    readings = a.readings or empty(AttributionReadings)
    head = (a.headline.text if a.headline else None) or readings.headline or None
    return {
        "kind": "grid",
        "headline": typographic_minus(str(head)) if head else None,
        "grid": _drawable_grid(a.grid),
        "additivity": typographic_minus(str(readings.additivity)) if readings.additivity else None,
        "interactions": [typographic_minus(str(s)) for s in readings.interactions or () if s][:2],
        "factors": [str(f) for f in a.factors or ()],
        "metric": a.metric or report.metric,
        "queries": a.queries if a.queries is not ABSENT else None,
        "runs": len(a.cells or ()),
    }


def _given(value: object) -> bool:
    """Whether the report gives the key a value (neither leaves it out nor writes null)."""
    return value is not ABSENT and value is not None


def _pair(value: object) -> TypeGuard[tuple[Any, Any]]:
    return isinstance(value, tuple) and len(value) == 2


def _drawable_grid(grid: AttributionGrid | Absent | None) -> AttributionGrid | None:
    """The attribution's 2x2 grid when the comment can draw it (rows and columns named, two by two
    means, two row and two column effects); else None."""
    if not grid or not (grid.has("rows") and grid.has("columns")):
        return None
    means = grid.means
    if not (_pair(means) and all(_pair(row) for row in means) and _pair(grid.row_effects)
            and _pair(grid.column_effects)):
        return None
    return grid


def _full_attribution(report: Report) -> str | None:
    """The whole attribution section (attribution.md.j2), headings nested under the comment's."""
    a = report.attribution
    if not a or _given(a.refused) or _given(a.error):
        return None
    if not a.bundle and not a.effects:
        return None
    try:
        text = _env().get_template("attribution.md.j2").render(a=a)
    except (jinja2.TemplateError, TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:
        log.warning("attribution detail not rendered: %s", md_text(exc, 200))
        return None
    text = re.sub(r"\A\s*## Attribution\s*\n", "", text)
    return typographic_minus(_demote(text, 2).strip("\n"))  # the comment's minus sign, as in its tables


def _lift_view(report: Report) -> dict[str, Any] | None:
    lift = report.lift
    buckets = list(lift.buckets or ()) if lift else []
    if not buckets:
        return None
    top = max((b.count or 0 for b in buckets), default=0)
    return {"lift": lift, "buckets": buckets, "top": top}


_ONE_UNIT = {"queries": "query", "chunks": "chunk", "judgments": "judgment", "rows": "row"}


def _inputs_view(report: Report) -> list[dict[str, Any]]:
    rows = []
    for name, item in (report.inputs or {}).items():
        count = item.count if item.count is not ABSENT else None
        unit = str(item.unit or "")
        rows.append({"name": name, "path": item.path or None, "sha": str(item.sha256 or "")[:12], "count": count,
                     "unit": _ONE_UNIT.get(unit, unit) if count == 1 else unit})
    return rows


def _power_sentence(report: Report) -> str | None:
    """The power line: what this golden set can catch, from the PR's own spread (report.power)."""
    power = report.power
    if not power or not isinstance(power.sentence, str) or not power.sentence.strip():
        return None
    return typographic_minus(power.sentence)


def _baseline_description(baseline: Baseline) -> Any:
    """The baseline's description after "Baseline **<resolution>**, <its words>:": without the
    "reconstructed, not archived: " it opens with, which those words already say."""
    description = baseline.description
    words = _RESOLUTION_WORDS.get(str(baseline.resolution), "")
    opening = f"{baseline.resolution}, not archived: "
    if isinstance(description, str) and words.startswith("not archived") and description.startswith(opening):
        return description[len(opening):]
    return description


def _context(report: Report, reproduce_command: str | None) -> dict[str, Any]:
    """What the comment's sections (the macros of comment.md.j2) read, as ``c``."""
    verdict = report.verdict or empty(Verdict)
    context = {
        **_verdict_context(report, verdict),
        **_numbers_context(report, verdict),
        **_baseline_context(report),
        **_validity_context(report, verdict),
        **_detail_context(report),
        **_reproduce_context(report, reproduce_command),
    }
    if not context["commensurable"]:
        # No difference between incommensurable numbers, anywhere in the comment.
        context.update(strata=[], traffic=empty(Traffic), wins_sentence=None, lift=None, per_query=None, measures=[],
                       all_queries=empty(DeltaAllQueries), attribution=None, power=None, repeats=None, means_note="",
                       resources=[])
    return context


def _verdict_context(report: Report, verdict: Verdict) -> dict[str, Any]:
    """The headline, what the verdict was computed on, and its reasons."""
    return {
        "r": report,
        "headline": Inert(headline(report)),  # escapes its data parts itself
        "kind": _kind(report),
        "suite": report.suite if report.suite is not ABSENT else None,
        "metric": report.metric,
        "query_count": _query_count(report),
        "reporting": report.reporting_set or verdict.reporting_set or empty(ReportingSet),
        "reasons": _reason_rows(report),
        "accepted": report.accepted or empty(Accepted),
    }


def _numbers_context(report: Report, verdict: Verdict) -> dict[str, Any]:
    """The delta and the measures, what the set can catch, and the noise band."""
    return {
        "delta": _shown_delta(report),
        "commensurable": _commensurable(report),
        "measures": _measure_rows(report) if _shown_delta(report) else [],
        "power": _power_sentence(report),
        "repeats": repeats_sentence(report),
        "means_note": means_note(report),
        # a reason quotes the calibrated rule's decision interval: say what it is
        "decision_explained": any(r.decision_interval is not ABSENT for r in verdict.reasons or ()),
        "decision_mode": str(report.decision.mode) if report.decision and isinstance(report.decision.mode, str)
        else None,
        "noise": report.noise_band or empty(NoiseBand),
        "all_queries": report.delta_all_queries or empty(DeltaAllQueries),
        # latency and cost beside the delta (gate.rendering.resource_rows): [] says nothing about them
        "resources": [{**{k: Inert(v) if isinstance(v, str) and k != "name" else v
                             for k, v in dataclasses.asdict(row).items()}} for row in resource_rows(report)],
        "resources_title": resource_title(report),
    }


def _baseline_context(report: Report) -> dict[str, Any]:
    """How the baseline was made commensurable."""
    baseline = report.baseline or empty(Baseline)
    return {
        "baseline": baseline,
        "archived": baseline.archived or empty(ArchivedBaseline),
        "resolution_words": _RESOLUTION_WORDS,
        "baseline_description": _baseline_description(baseline),
    }


def _validity_context(report: Report, verdict: Verdict) -> dict[str, Any]:
    """What the PR changed, and the checks of the numbers' validity."""
    reason_messages = {str(r.message) for r in verdict.reasons or ()}
    return {
        "config": _config_view(report),
        "attribution": _attribution_view(report),
        "leakage": report.leakage if report.leakage is not ABSENT else None,  # {}: checked, none found
        "judged": report.judged or empty(Judged),
        "judgments": judgments_sentences(report),
        "tuning": report.tuning or empty(Tuning),
        "prompts": report.prompts or empty(Prompts),
        "goalposts": list(report.goalposts or ()),
        "warnings": [str(w) for w in report.warnings or () if str(w) not in reason_messages],
    }


def _detail_context(report: Report) -> dict[str, Any]:
    """The strata, the traffic, the movement buckets and the biggest wins and losses."""
    return {
        "strata": list(report.strata or ()),
        "traffic": report.traffic or empty(Traffic),
        "wins_sentence": report.wins_sentence or None,
        "lift": _lift_view(report),
        "per_query": _per_query_view(report),
    }


def _reproduce_context(report: Report, reproduce_command: str | None) -> dict[str, Any]:
    """A failed candidate run's log, and what reproduces the report: inputs, tool, command."""
    candidate = report.candidate or empty(Candidate)
    return {
        "candidate_error": candidate.error or None,
        "log_tail": candidate.log_tail or None,
        "log": candidate.log or None,
        "inputs": _inputs_view(report),
        "tool": report.tool,
        "command": reproduce_command or quoted_reproduce_command(report) or DEFAULT_REPRODUCE_COMMAND,
        "candidate_config": report.candidate_config or empty(CandidateConfig),
    }


# --------------------------------------------------------------------------- public API


_SECTIONS: Sequence[tuple[str, bool]] = (
    ("header", False),
    ("candidate_failed", False),
    ("commensurability", False),
    ("changes", False),
    ("validity", False),
    ("leaks", True),
    ("strata", False),
    ("buckets", True),
    ("queries", True),
    ("config_detail", True),
    ("attribution_detail", True),
    ("reproduce", False),
)


def _named_sections(report: Report, reproduce_command: str | None) -> list[tuple[str, str, bool]]:
    if not isinstance(report, Report):  # a dict is read once, validating: gate.report.document.read_report
        raise TypeError(f"the comment renders a gate.report.spine.Report, not a {type(report).__name__}")
    context = _context(report, reproduce_command)
    macros = _macros()
    sections: list[tuple[str, str, bool]] = []
    for name, droppable in _SECTIONS:
        if name == "attribution_detail":
            text = (_full_attribution(report) or "") if context["commensurable"] else ""
            if text:
                text = str(macros.attribution_detail(Inert(text)))  # rendered by attribution.md.j2
        else:
            text = str(getattr(macros, name)(context))
        text = _tidy(text).strip("\n")
        if text.strip():
            sections.append((name, text + "\n", droppable))
    return sections


def comment_sections(report: Report, *, reproduce_command: str | None = None) -> list[tuple[str, bool]]:
    """The comment as ``(markdown, droppable)`` sections, in order; empty sections are left out.

    Droppable sections are detail a reviewer can find in the job summary and
    the report artifact; :func:`gate.rendering.markdown_cut.fit_comment` drops them last first.
    """
    return [(text, droppable) for _name, text, droppable in _named_sections(report, reproduce_command)]


def render_comment(report: Report, *, reproduce_command: str | None = None,
                   limit: int = COMMENT_LIMIT) -> str:
    """The PR comment body (without the hidden marker), at most ``limit`` characters."""
    body = fit_comment(comment_sections(report, reproduce_command=reproduce_command), limit=limit).rstrip("\n")
    return body + "\n" if len(body) < limit else body


def _full_report(report: Report) -> str | None:
    template = "run.md.j2" if report.command == "run" or report.verdict else "report.md.j2"
    try:
        text = _env().get_template(template).render(report=report)
    except (jinja2.TemplateError, TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:
        log.warning("full report not rendered for the job summary: %s", md_text(exc, 200))
        return None
    return _demote(text, 1).strip("\n")


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def _fit_bytes(sections: Sequence[tuple[str, bool]], limit: int) -> str:
    """:func:`fit_comment`'s rules, counting UTF-8 bytes (the job summary's unit)."""
    return fit_sections(
        sections, limit, measure=_utf8_len,
        dropped_note=lambda n: (f"_{n} detail section{'s' if n != 1 else ''} left out to stay under the job "
                                f"summary's {limit:,}-byte limit; the full report is in the report artifact._"),
        cut_note=("> **Note:** this summary was cut to stay under GitHub's 1 MiB job summary limit; "
                  "the full report is in the report artifact."),
    )


def render_summary(report: Report, *, reproduce_command: str | None = None,
                   limit: int = SUMMARY_LIMIT) -> str:
    """The job summary: the comment's sections, then the full report, within ``limit`` UTF-8 bytes.

    When the full report does not fit it is replaced by a note, and the
    comment's sections are fitted as the comment's are (detail dropped last
    first, never cutting a table), counting bytes.
    """
    named = _named_sections(report, reproduce_command)
    full = _full_report(report)
    template = _env().get_template("summary.md.j2")
    if full:
        # The full report carries the whole attribution section and config diff: not twice.
        repeated = {"attribution_detail", "config_detail"}
        tail = str(template.render(full_report=Inert(full), too_large=False)).strip("\n")  # rendered by run.md.j2
        sections = [(text, droppable) for name, text, droppable in named if name not in repeated]
        sections.append((tail + "\n", True))
        text = "\n\n".join(md.strip("\n") for md, _ in sections)
        if _utf8_len(text) < limit:
            return text + "\n"
    tail = str(template.render(full_report=None, too_large=bool(full))).strip("\n")
    sections = [(text, droppable) for _name, text, droppable in named] + [(tail + "\n", False)]
    body = _fit_bytes(sections, limit).rstrip("\n")
    return body + "\n" if _utf8_len(body) < limit else body
