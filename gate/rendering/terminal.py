"""The terminal's few lines about a report (``compare`` and ``run`` without ``--format json``).

Plain text: no Markdown escapes, and numbers as the comment gives them (never a negative zero).
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

from gate.common.numbers import counted
from gate.rendering.markdown import BIDI_CONTROLS, CONTROL_CHARACTERS, fixed, signed
from gate.rendering.phrases import judgments_sentences, means_note, repeats_sentence, value_text
from gate.rendering.resource_rows import resource_line
from gate.report.spine import Delta, DeltaAllQueries, Report
from gate.report.typed import Absent

# What data must not bring to a terminal: control characters (an ANSI escape, a carriage return
# that overwrites a line, a newline that forges one) and bidirectional overrides that reorder text.
_UNSAFE = re.compile(f"[{CONTROL_CHARACTERS}{BIDI_CONTROLS}]")


def terminal_safe(text: str, *, lines: bool = True) -> str:
    """``text`` with every control and bidirectional override replaced by U+FFFD (a tab by a
    space); newlines stay where ``lines`` is true (a block of the gate's own lines), else go too."""
    text = str(text).replace("\t", " ")
    if not lines:
        text = text.replace("\n", "\ufffd")
    return _UNSAFE.sub("\ufffd", text)


_BACKSLASH_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~=])")


def terminal_text(markdown: str) -> str:
    """Markdown the gate rendered (a table, a report) for a terminal: the escapes that keep data
    inert on GitHub (``\\_``, ``&gt;``, ``&#124;``, the zero-width space after ``@`` and ``#``)
    undone, so ``base_miss.run`` and ``->`` read as they are written. Not for anything rendered
    as Markdown again."""
    text = _BACKSLASH_ESCAPE.sub(r"\1", markdown)
    return html.unescape(text).replace("\u200b", "")


def _fmt(value: float | Absent | None, signed_: bool = False) -> str:
    if value is None or isinstance(value, Absent):  # a key the report leaves out (no baseline, no delta)
        return "n/a"
    return signed(value, 4) if signed_ else fixed(value, 4)


def _delta_line(delta: Delta | DeltaAllQueries, prefix: str = "delta") -> str:
    return (f"{prefix} {_fmt(delta.mean, signed_=True)}  95% CI [{_fmt(delta.ci_low, signed_=True)}, "
            f"{_fmt(delta.ci_high, signed_=True)}]")


def config_value(value: Any) -> str:
    """A config value as the comment shows it (JSON: ``false``, ``0.5``, ``["a"]``; strings as
    they are; ``absent`` for a key one side does not set), in plain text."""
    return "absent" if value == "<absent>" else terminal_safe(value_text(value), lines=False)


def _queries(count: int | Absent | None) -> str:
    return counted(count, "query", "queries") if isinstance(count, int) else f"{count} queries"


def run_summary_lines(report: Report) -> list[str]:
    """What ``run`` prints: the verdict's headline, the primary measure on the reporting set with
    the delta and its interval (or why there is none), the delta over all judged queries when the
    reporting set is smaller, and every reason the verdict gives."""
    verdict = report.verdict
    if isinstance(verdict, Absent):
        raise ValueError("run_summary_lines summarises a run's report: one with a verdict")
    # The headline names the verdict itself (its icon and kind come first).
    lines = [verdict.headline or f"{verdict.kind}: {verdict.reasons[0].message if verdict.reasons else ''}"]
    baseline = report.baseline.mean if report.baseline else None
    candidate = report.candidate.mean if report.candidate else None
    lines.append(f"{report.metric} on {_measured_on(report)}: baseline {_fmt(baseline)} -> candidate "
                 f"{_fmt(candidate)}" + means_note(report))
    delta = report.delta
    if delta:
        lines.append(_delta_line(delta) + f" ({delta.method} bootstrap, B={delta.samples}, seed={delta.seed})")
    else:
        lines.append("delta: none (the verdict was reached without comparing the two runs; the reasons say why)")
    everyone = report.delta_all_queries
    if everyone and everyone.query_count:
        lines.append(_delta_line(everyone, f"on all {everyone.query_count} judged queries: delta"))
    resources = resource_line(report)  # latency (and cost) beside the delta; nothing without timings
    if resources is not None:
        lines.append(resources)
    lines += _query_notes(report)
    mapped, mapped_warning = judgments_sentences(report)
    lines += [] if mapped is None else [f"judgments: {mapped}"]
    lines += [] if mapped_warning is None else [f"warning: {mapped_warning}"]
    lines += _power_lines(report)
    if verdict.reasons:
        lines.append("reasons:")
        lines += [f"  - {reason.code}: {reason.message}" for reason in verdict.reasons]
    said = {str(reason.message) for reason in verdict.reasons or ()}
    lines += [f"warning: {warning}" for warning in report.warnings or () if str(warning) not in said]
    lines += log_tail_lines(report)
    return [terminal_safe(line, lines=False) for line in lines]


def _measured_on(report: Report) -> str:
    """The queries the verdict was computed on: the reporting set by name, or how many there are."""
    reporting = report.reporting_set
    if reporting and reporting.name:
        return f"{reporting.name} ({_queries(reporting.query_count)})"
    return _queries(report.query_count) if report.query_count else "the golden queries"


#: A failed run's log in the terminal: its last lines, each cut to this many characters.
LOG_LINES = 20
LOG_LINE_CHARACTERS = 300


def log_tail_lines(report: Report) -> list[str]:
    """A failed candidate run's log, its last :data:`LOG_LINES` lines (each at most
    :data:`LOG_LINE_CHARACTERS` characters, made terminal-safe by the caller) under a line naming
    the log file; none when the run did not fail or left no log."""
    candidate = report.candidate
    if (not candidate or not candidate.error or not isinstance(candidate.log_tail, str)
            or not candidate.log_tail.strip()):
        return []
    tail = candidate.log_tail.splitlines()[-LOG_LINES:]
    where = f" ({candidate.log})" if isinstance(candidate.log, str) and candidate.log else ""
    lines = [f"runner log, last {counted(len(tail), 'line', 'lines')}{where}:"]
    for line in tail:
        line = line.rstrip()
        if len(line) > LOG_LINE_CHARACTERS:
            line = line[:LOG_LINE_CHARACTERS - 1] + "…"
        lines.append(f"  | {line}")
    return lines


def _power_lines(report: Report) -> list[str]:
    """The power line: what this golden set can catch (report.power), when the runs were compared."""
    power = report.power
    if not power or not report.delta or not isinstance(power.sentence, str) or not power.sentence:
        return []
    lines = [f"what this set can catch: {power.sentence}"]
    repeats = repeats_sentence(report)
    return lines + ([f"repeats: {repeats}"] if repeats else [])


def _query_notes(report: Report) -> list[str]:
    """``queries: ...``: run queries scored 0 for missing, or left out of the evaluation; none
    when every query is where it should be."""
    queries = report.queries
    if not queries:
        return []
    notes = []
    for ids, label in (
        (queries.missing_in_baseline, "missing in baseline (scored 0)"),
        (queries.missing_in_candidate, "missing in candidate (scored 0)"),
        # With a query file, a run query may be judged yet not golden: "not judged" would be wrong.
        (queries.extra, "in the runs but not among the golden queries with judgments (ignored)"
         if report.inputs and "queries" in report.inputs else "in the runs but not judged (ignored)"),
        (queries.unjudged, "golden queries without qrels (left out)"),
    ):
        if ids:
            notes.append(f"{len(ids)} {label}")
    return ["queries: " + "; ".join(notes)] if notes else []


def summary_lines(report: Report) -> list[str]:
    """The primary measure's means, delta, interval and tests, the query bookkeeping, every
    other measure: a short plain-text summary of a compare report."""
    baseline, candidate, delta, measures = report.baseline, report.candidate, report.delta, report.measures
    if (isinstance(baseline, Absent) or isinstance(candidate, Absent) or isinstance(delta, Absent)
            or isinstance(measures, Absent)):
        raise ValueError("summary_lines summarises a comparison: a report with its baseline, candidate, delta "
                         "and measures")
    lines = [
        f"{report.metric}: baseline {_fmt(baseline.mean)} -> candidate {_fmt(candidate.mean)}"
        f" on {_queries(report.query_count)}",
        _delta_line(delta) + f" ({delta.method} bootstrap, B={delta.samples}, seed={delta.seed})",
        f"p(delta<=0)={_fmt(delta.p_le_zero)}  sign-flip p={_fmt(delta.p_randomization)}"
        f" ({delta.randomization})  wins/losses/ties {delta.wins}/{delta.losses}/{delta.ties}"
        f"  MDE {'not estimable' if delta.mde is None else _fmt(delta.mde)}",
    ]
    lines += _query_notes(report)
    lines += _power_lines(report)
    for name, m in measures.items():
        if name != report.metric:
            lines.append(f"  {name:<16} {_fmt(m.baseline)} -> {_fmt(m.candidate)} ({_fmt(m.delta, signed_=True)})")
    return lines


def suites_table_lines(results: Sequence[Any]) -> list[str]:
    """``run`` with several suites: one row per suite (``results``: gate.pipeline.suite_verdicts'
    SuiteResult) - its verdict, the delta with its interval, its first line - then the worst."""
    rows = [("suite", "verdict", "delta  95% CI", "headline")]
    for result in results:
        delta = result.delta()
        measured = "n/a" if delta is None else (
            f"{_fmt(_number(delta.get('mean')), signed_=True)}  [{_fmt(_number(delta.get('ci_low')), signed_=True)}, "
            f"{_fmt(_number(delta.get('ci_high')), signed_=True)}]")
        kind = result.verdict + (f" ({result.suite.state})" if result.suite.state else "")
        rows.append((terminal_safe(result.suite.name, lines=False), kind, measured,
                     _cut(terminal_safe(result.headline, lines=False), 160)))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]:<{widths[2]}}  {row[3]}".rstrip()
             for row in rows]
    return lines


def _cut(text: str, limit: int) -> str:
    """A table cell cut to ``limit`` characters, saying so (the whole line is in the suite's report)."""
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
