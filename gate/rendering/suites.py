"""The combined PR comment of several suites: a verdict table on top, then one collapsed section per suite.

One row per suite (its verdict in the single comment's words, the primary delta with its interval,
the rule that decided), the worst first; under it, each suite's own comment
(:func:`gate.rendering.comment.comment_sections`, without a marker: the publisher adds the set's)
in a ``<details>`` element, judged suites by how bad their verdict is, skipped ones last. A suite
whose job saved no report is a row saying so, never left out.

GitHub caps a comment at 65,536 characters. The table is never cut; the sections share what is
left: a section that fits whole stays whole, the others get equal shares of the rest, each cut
by the single comment's rules (detail dropped last first, never inside a table or a fence) with
a note that the full report is in the job summary and the report artifact. The job summary
(:func:`render_suites_summary`) is the same table over each suite's own job summary, under 1 MiB.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gate.common.numbers import counted
from gate.rendering.comment import EMOJI, SUMMARY_LIMIT, comment_sections, headline_cells, render_summary
from gate.rendering.jinja import environment
from gate.rendering.markdown import Inert, md_text
from gate.rendering.markdown_cut import COMMENT_LIMIT, fit_sections, truncate_markdown
from gate.report.spine import Report
from gate.verdict.kinds import INCONCLUSIVE_NOT_BLOCKING_EXIT, severity

__all__ = ["MARKER_ROOM", "SuiteStanding", "render_suites_comment", "render_suites_summary", "standings"]

#: Characters kept free for the hidden marker the publisher puts on the comment's first line.
MARKER_ROOM = 400
#: A section given less room than this is not shown at all (a note says where the report is).
SECTION_FLOOR = 700

NO_REPORT = "❔ no report"


@dataclass(frozen=True)
class SuiteStanding:
    """One suite of the set: its report, or why there is none."""

    name: str
    report: Report | None  # None: not run (skipped, untouched) or no report saved (missing)
    missing: bool = False  # expected a report (a touched suite), and its job saved none

    @property
    def kind(self) -> str | None:
        """The verdict's kind; "skipped" for a suite not run; None for a missing report."""
        if self.report is None:
            return None if self.missing else "skipped"
        return str(self.report.verdict.kind) if self.report.verdict else None

    @property
    def exit_code(self) -> int | None:
        if self.report is None:
            return None if self.missing else 0
        code = self.report.verdict.exit_code if self.report.verdict else None
        return code if isinstance(code, int) else None

    @property
    def severity(self) -> int:
        return severity(self.kind, self.exit_code)


def standings(reports: Sequence[Mapping[str, Any] | Report], *, missing: Sequence[str] = (),
              skipped: Sequence[str] = ()) -> tuple[SuiteStanding, ...]:
    """The set's suites, the worst first (ties by name): each report (a report.json's content, or
    its record), each suite in ``missing`` (no report although one was due) and in ``skipped``
    (not run: the PR touches nothing it watches). A suite named twice is a :class:`ValueError`."""
    found: list[SuiteStanding] = []
    for item in reports:
        # A report of this run is its record as the renderers read it; one from an artifact is read
        # (and validated) by the caller first: gate.report.document.read_report.
        report = item if isinstance(item, Report) else Report.from_dict(dict(item))
        found.append(SuiteStanding(_suite_of(report), report))
    found += [SuiteStanding(str(name), None, missing=True) for name in missing]
    found += [SuiteStanding(str(name), None) for name in skipped]
    names = [standing.name for standing in found]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"suite {twice[0]!r} is given more than once")
    return tuple(sorted(found, key=lambda s: (s.severity, s.name)))


def _suite_of(report: Report) -> str:
    return str(report.suite) if isinstance(report.suite, str) and report.suite else "retrieval"


def worst(entries: Sequence[SuiteStanding]) -> SuiteStanding | None:
    """The suite whose verdict is the set's: the worst (the first of :func:`standings`' order)."""
    return min(entries, key=lambda s: (s.severity, s.name), default=None)


# --------------------------------------------------------------------------- the table


def _verdict_words(entry: SuiteStanding) -> str:
    if entry.report is None:
        return NO_REPORT if entry.missing else f"{EMOJI['skipped']} skipped"
    words = headline_cells(entry.report).verdict
    if entry.kind == "inconclusive" and entry.exit_code == INCONCLUSIVE_NOT_BLOCKING_EXIT:
        words += " (does not block)"
    return words


def _row(entry: SuiteStanding) -> dict[str, Any]:
    if entry.report is None:
        why = "its gate job saved no report (it failed or was cancelled)" if entry.missing \
            else "not run: the PR touches nothing this suite watches"
        return {"suite": entry.name, "verdict": Inert(_verdict_words(entry)), "delta": Inert("—"), "rule": why}
    cells = headline_cells(entry.report)
    return {"suite": entry.name, "verdict": Inert(_verdict_words(entry)), "delta": Inert(cells.delta or "—"),
            "rule": Inert(cells.rule or "—")}


def _counts(entries: Sequence[SuiteStanding]) -> str:
    tally: dict[str, int] = {}
    for entry in entries:
        word = "without a report" if entry.report is None and entry.missing else str(entry.kind or "no verdict")
        tally[word] = tally.get(word, 0) + 1
    parts = ", ".join(f"{n} {word}" for word, n in tally.items())
    return f"{counted(len(entries), 'suite', 'suites')} ({md_text(parts, 300)})"


def _head(entries: Sequence[SuiteStanding], title: str | None, cut_note: str | None) -> str:
    top = worst(entries)
    verdict = _verdict_words(top) if top is not None else "ℹ️ no suites"
    context = {"verdict": Inert(verdict), "title": title or "retrieval-gate", "counts": Inert(_counts(entries)),
               "rows": [_row(entry) for entry in entries], "cut": Inert(cut_note) if cut_note else None}
    return str(_macros().head(context)).strip("\n") + "\n"


def _macros() -> Any:
    return environment().get_template("suites.md.j2").module


# --------------------------------------------------------------------------- the sections

_BACKSLASHED = re.compile(r"\\([!-/:-@\[-`{-~])")


def _summary_text(value: object, limit: int) -> str:
    """Data for a ``<summary>``, where GitHub may or may not read Markdown: :func:`md_text`'s
    escaping with its backslash escapes turned into character references, which read the same
    either way."""
    return _BACKSLASHED.sub(lambda m: f"&#{ord(m.group(1))};", md_text(value, limit))


def _wrapped(entry: SuiteStanding, body: str) -> str:
    verdict = html.unescape(_verdict_words(entry))  # the gate's own words: emoji and a kind
    context = {"verdict": Inert(_summary_text(verdict, 80)), "suite": Inert(_summary_text(entry.name, 100)),
               "body": Inert(body.strip("\n"))}
    return str(_macros().section(context)).strip("\n") + "\n"


def _shares(needs: Sequence[int], budget: int) -> list[int]:
    """Room for each section: its whole size where the equal share allows, the rest split equally
    among the larger ones (smallest first, so what a small one leaves goes to the others)."""
    room = [0] * len(needs)
    left, count = budget, len(needs)
    for index in sorted(range(len(needs)), key=lambda i: needs[i]):
        share = max(0, left // count) if count else 0
        room[index] = min(needs[index], share)
        left -= room[index]
        count -= 1
    return room


@dataclass(frozen=True)
class _Fitting:
    """How one rendering (the comment, or the job summary) fits its sections."""

    limit: int
    measure: Callable[[str], int]
    whole: Callable[[Report], str]  # a suite's section body, uncut
    cut: Callable[[Report, int], str]  # a suite's section body within so much room
    what: str  # "comment" | "job summary"


def _fitted(entries: Sequence[SuiteStanding], title: str | None, fitting: _Fitting) -> str:
    shown = [e for e in entries if e.report is not None]
    bodies = [_wrapped(e, fitting.whole(e.report)) for e in shown if e.report is not None]
    head = _head(entries, title, None)
    text = "\n".join([head, *bodies])
    if fitting.measure(text) <= fitting.limit:
        return text
    note = (f"_Sections below are shortened to fit GitHub's {fitting.what} limit; each suite's full report is in "
            "the job summary and the report artifact._")
    head = _head(entries, title, note)
    overhead = [fitting.measure(_wrapped(e, "")) + 1 for e in shown]  # the wrapper and the joining newline
    budget = fitting.limit - fitting.measure(head)
    rooms = _shares([fitting.measure(body) + 1 for body in bodies], budget)
    parts = [head]
    for entry, body, room, wrap in zip(shown, bodies, rooms, overhead):
        assert entry.report is not None
        if fitting.measure(body) + 1 <= room:
            parts.append(body)
        elif room - wrap >= SECTION_FLOOR:
            parts.append(_wrapped(entry, fitting.cut(entry.report, room - wrap)))
        elif room >= wrap + 200:
            parts.append(_wrapped(entry, f"_Not shown: no room left in the {fitting.what}; this suite's full "
                                         "report is in the job summary and the report artifact._"))
    text = "\n".join(parts)
    if fitting.measure(text) > fitting.limit:  # a table longer than the cap itself (hundreds of suites)
        text = truncate_markdown(text, fitting.limit, f"> **Note:** cut to fit GitHub's {fitting.what} limit; "
                                 "every suite's report is in the report artifact.", measure=fitting.measure)[0]
    return text


def _cut_comment(report: Report, room: int) -> str:
    return fit_sections(
        comment_sections(report), room,
        dropped_note=lambda n: (f"_{n} detail section{'s' if n != 1 else ''} left out to share the comment with "
                                "the other suites; the full report is in the job summary and the report artifact._"),
        cut_note=("> **Note:** this section was cut to share the comment with the other suites; the full report "
                  "is in the job summary and the report artifact."),
    )


def _whole_comment(report: Report) -> str:
    return "\n\n".join(text.strip("\n") for text, _ in comment_sections(report))


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def render_suites_comment(reports: Sequence[Mapping[str, Any] | Report], *, title: str | None = None,
                          missing: Sequence[str] = (), skipped: Sequence[str] = (),
                          limit: int = COMMENT_LIMIT - MARKER_ROOM) -> str:
    """The combined PR comment (without the hidden marker), at most ``limit`` characters.

    ``reports``: each suite's report.json content (or its record); ``missing``: suites whose report
    was due and is not there (a matrix job that failed): a row "no report"; ``skipped``: suites not
    run because the PR touches nothing they watch, with no report of their own. ``title`` names the
    set on the first line (e.g. the suites file), default "retrieval-gate"."""
    entries = standings(reports, missing=missing, skipped=skipped)
    fitting = _Fitting(limit, len, _whole_comment, _cut_comment, "comment")
    return _fitted(entries, title, fitting).rstrip("\n") + "\n"


def _cut_summary(report: Report, room: int) -> str:
    return fit_sections(
        comment_sections(report), room, measure=_utf8_len,
        dropped_note=lambda n: (f"_{n} detail section{'s' if n != 1 else ''} left out to share the job summary "
                                "with the other suites; the full report is in the report artifact._"),
        cut_note=("> **Note:** this section was cut to share the job summary with the other suites; the full "
                  "report is in the report artifact."),
    )


def render_suites_summary(reports: Sequence[Mapping[str, Any] | Report], *, title: str | None = None,
                          missing: Sequence[str] = (), skipped: Sequence[str] = (),
                          limit: int = SUMMARY_LIMIT) -> str:
    """The job summary: the same table, then each suite's own job summary (its comment and full
    report) collapsed; within ``limit`` UTF-8 bytes, shortened as the comment is when it is over."""
    entries = standings(reports, missing=missing, skipped=skipped)
    fitting = _Fitting(limit, _utf8_len, lambda report: render_summary(report), _cut_summary, "job summary")
    return _fitted(entries, title, fitting).rstrip("\n") + "\n"
