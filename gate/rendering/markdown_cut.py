"""Cutting Markdown at GitHub's size caps, never inside a table, a fence or a ``<details>``.

The renderers fit the comment (:func:`fit_comment`) and the job summary
(:func:`fit_sections`) under their caps; the publishers,
:mod:`gate.publishing.github.sticky_comment` and :mod:`gate.publishing.workflow_commands`
(``$GITHUB_OUTPUT``, the step summary, ``::group::`` and annotations), cut what is still
too long with :func:`truncate_markdown`.

Cutting rules: only at a line boundary; never inside a table (between its
header and its last row), a fenced code block or a ``<details>`` element,
unless no such boundary exists before the cap, in which case the cut falls on
a row/line boundary and open fences and ``<details>`` are closed. A single
line longer than the cap is the only thing ever cut mid-line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

__all__ = ["COMMENT_LIMIT", "fit_comment", "fit_sections", "truncate_markdown"]

# A GFM delimiter row: | --- | :---: | ---: |  (pipes required, as our renderer writes them)
_DELIMITER_ROW = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)+\|?\s*$|^\s*\|\s*:?-+:?\s*\|\s*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_DETAILS_OPEN = re.compile(r"<details\b", re.IGNORECASE)
_DETAILS_CLOSE = re.compile(r"</details\s*>", re.IGNORECASE)


def _scan(lines: list[str]) -> tuple[list[bool], list[str | None], list[int]]:
    """For every cut point i (keep ``lines[:i]``): is it safe, which fence is open, how many <details> are open."""
    n = len(lines)
    fence_at, depth_at = _fences_and_details(lines)
    in_table = _table_cuts(lines, fence_at)
    safe = [not in_table[i] and fence_at[i] is None and depth_at[i] == 0 for i in range(n + 1)]
    return safe, fence_at, depth_at


def _fences_and_details(lines: list[str]) -> tuple[list[str | None], list[int]]:
    """For every cut point i: the code fence open there (its opening run of backticks or tildes) and
    how many <details> are open (outside fences)."""
    n = len(lines)
    fence_at: list[str | None] = [None] * (n + 1)
    depth_at = [0] * (n + 1)
    fence: str | None = None
    depth = 0
    for i, line in enumerate(lines):
        fence_at[i] = fence
        depth_at[i] = depth
        match = _FENCE.match(line)
        if fence is None:
            if match:
                fence = match.group(1)
                continue
            depth += len(_DETAILS_OPEN.findall(line)) - len(_DETAILS_CLOSE.findall(line))
            depth = max(depth, 0)
        elif match and _closes(fence, match.group(1), line):
            fence = None
    fence_at[n] = fence
    depth_at[n] = depth
    return fence_at, depth_at


def _closes(fence: str, run: str, line: str) -> bool:
    """Whether ``line``, starting with the fence run ``run``, closes the code block ``fence`` opened:
    the same character, at least as many, and nothing after it."""
    return run[0] == fence[0] and len(run) >= len(fence) and not line.strip()[len(run):].strip()


def _table_cuts(lines: list[str], fence_at: list[str | None]) -> list[bool]:
    """For every cut point i: whether it falls inside a table (a header row with a pipe, a
    delimiter row, then every following non-blank line)."""
    n = len(lines)
    in_table = [False] * (n + 1)
    h = 0
    while h < n - 1:
        header, delimiter = lines[h], lines[h + 1]
        if (fence_at[h] is None and "|" in header and "|" in delimiter
                and _DELIMITER_ROW.match(delimiter.rstrip("\r\n"))):
            end = h + 1
            while (end + 1 < n and lines[end + 1].strip() and fence_at[end + 1] is None
                   and not _FENCE.match(lines[end + 1])):
                end += 1
            for cut in range(h + 1, end + 1):
                in_table[cut] = True
            h = end + 1
        else:
            h += 1
    return in_table


def _closers(fence: str | None, depth: int) -> str:
    return (f"{fence}\n" if fence else "") + "</details>\n" * depth


def _join(kept: str, tail: str) -> str:
    # kept ends with a newline; trimming blank lines never makes the result longer than kept + tail
    return kept.rstrip("\r\n") + "\n" + tail


def truncate_markdown(
    text: str,
    limit: int,
    note: str,
    *,
    measure: Callable[[str], int] = len,
) -> tuple[str, bool]:
    """Fit ``text`` into ``limit`` (as counted by ``measure``), appending ``note`` when cut.

    Returns ``(result, truncated)``. ``measure`` must be additive over
    concatenation (``len`` for characters, UTF-8 byte length for bytes).
    ``note`` is appended after a blank line and always fits: a
    :class:`ValueError` is raised when the note alone is over the limit.
    """
    if measure(text) <= limit:
        return text, False
    tail = "\n" + note.strip("\n") + "\n"
    budget = limit - measure(tail)
    if budget < 0:
        raise ValueError(f"the truncation note alone is longer than the limit ({limit})")

    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n"
    safe, fence_at, depth_at = _scan(lines)
    sizes = [0]
    for line in lines:
        sizes.append(sizes[-1] + measure(line))

    best_safe = 0
    best_any = 0
    for i in range(1, len(lines) + 1):
        if sizes[i] > budget:
            break
        best_any = i
        if safe[i]:
            best_safe = i
    if best_safe > 0:
        return _join("".join(lines[:best_safe]), tail), True

    # No safe boundary fits: cut at a line boundary and close what is open.
    for i in range(best_any, 0, -1):
        closers = _closers(fence_at[i], depth_at[i])
        if sizes[i] + measure(closers) <= budget:
            return _join("".join(lines[:i]) + closers, tail), True

    # The first line alone is over the cap: the only mid-line cut.
    first = lines[0] if lines else ""
    closers = _closers(fence_at[1] if len(lines) > 0 else None, depth_at[1] if len(lines) > 0 else 0)
    room = budget - measure(closers) - 1
    lo, hi = 0, len(first)
    while lo < hi:  # binary search: bounded by log2(len(first))
        mid = (lo + hi + 1) // 2
        if measure(first[:mid]) <= room:
            lo = mid
        else:
            hi = mid - 1
    return first[:lo] + "\n" + closers + tail, True


def fit_sections(
    sections: Sequence[tuple[str, bool]],
    limit: int,
    *,
    dropped_note: Callable[[int], str],
    cut_note: str,
    measure: Callable[[str], int] = len,
) -> str:
    """Join Markdown sections (``(markdown, droppable)``) into at most ``limit`` (by ``measure``).

    Sections are joined with a blank line. When too long, droppable (detail)
    sections are dropped whole, last first - so a table is never cut - and
    ``dropped_note(n)`` says how many went. If the rest is still too long it is
    cut at a line boundary outside tables, code fences and ``<details>``, with
    ``cut_note``. The PR comment counts characters, the job summary bytes.
    """
    parts = [(str(markdown).strip("\n"), bool(droppable)) for markdown, droppable in sections]

    def joined(kept: list, dropped: int) -> str:
        text = "\n\n".join(md for md, _ in kept if md)
        return text + ("\n\n" + dropped_note(dropped) if dropped else "")

    kept, dropped = list(parts), 0
    text = joined(kept, dropped)
    for index in range(len(parts) - 1, -1, -1):
        if measure(text) <= limit:
            return text
        if parts[index][1]:
            del kept[index]
            dropped += 1
            text = joined(kept, dropped)
    if measure(text) <= limit:
        return text
    return truncate_markdown(text, limit, cut_note, measure=measure)[0]


#: GitHub's limit on an issue comment's body, in characters.
COMMENT_LIMIT = 65_536


def fit_comment(sections: Sequence[tuple[str, bool]], limit: int = COMMENT_LIMIT) -> str:
    """Join Markdown sections (``(markdown, droppable)``) into at most ``limit`` characters.

    Sections are joined with a blank line. When too long, droppable (detail)
    sections are dropped one by one, last first, and a note says how many
    went; a section is dropped whole, so a table in it is never cut. If the
    rest is still too long it is cut at a line boundary outside tables, code
    fences and ``<details>``, with a note.
    """
    return fit_sections(
        sections, limit,
        dropped_note=lambda n: (f"_{n} detail section{'s' if n != 1 else ''} left out to stay under GitHub's "
                                f"{limit:,}-character comment limit; the full report is in the job summary and "
                                "the report artifact._"),
        cut_note=(f"> **Note:** this comment was cut to fit GitHub's {limit:,}-character limit; "
                  "the full report is in the job summary and the report artifact."),
    )


