"""A set of saved reports, one per suite: what the comment job posts as one combined comment and
the matrix workflow's status job turns into one required check.

Where the reports are (:func:`read_report_folder`, :func:`read_report_files`):

- the Action's (and ``run``'s) output folder: ``suites.json`` listing each suite with its
  ``<suite>/report.json`` (the status job's folder has the same shape);
- a matrix workflow's downloaded artifacts: ``retrieval-gate-report-<suite>/report.json`` (or
  ``<suite>/report.json``) per suite, without suites.json;
- report files named one by one (``--report`` given several times).

Every report came out of a job that ran the pull request's code, so nothing in them is believed
that can be checked (:func:`standing_of`): each report's suite must be one the trusted config
names (the default branch's suites file), no suite may have two reports, a folder's name and its
report's suite must agree, and a suites.json must agree with the reports it names (their suite,
verdict and exit code, and which is the worst). A suite the trusted config names with no report
(a matrix job that failed) is a row saying so, never left out. Refusals are one line
(:class:`InputError`) naming the file; nothing is posted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from gate.common import limits
from gate.common.errors import InputError
from gate.common.limits import shorten
from gate.inputs.readers.fields import parse_json_document
from gate.inputs.readers.textlines import read_text_file
from gate.publishing.matrix import SUITE_ARTIFACT_PREFIX
from gate.report.spine import Report
from gate.verdict.kinds import EXIT_BY_KIND, severity

__all__ = ["MAX_SUITES", "SUITES_FILE", "Planned", "SavedReport", "SetStanding", "read_plan", "read_report_files",
           "read_report_folder", "standing_of", "suites_document"]

SUITES_FILE = "suites.json"
REPORT_FILE = "report.json"
#: Suites (folders, rows, report files) read from one set at most: a set is a repository's search
#: surfaces, not thousands; an artifact folder holding more is not one the gate wrote.
MAX_SUITES = 200
_SMALL_JSON = 4 * limits.MIB  # suites.json and plan.json: a row per suite

Loader = Callable[[Path], Report]


@dataclass(frozen=True)
class SavedReport:
    """One suite's report as read from its file."""

    suite: str
    path: Path
    report: Report
    kind: str  # the verdict's
    exit_code: int


@dataclass(frozen=True)
class _Listed:
    """A suites.json row that names no report: a suite not run (skipped) or whose job saved none."""

    suite: str
    skipped: bool


@dataclass(frozen=True)
class SavedSet:
    """What one folder (or list of files) holds: the reports, and suites.json's rows without one."""

    source: str  # the folder or file named, for messages
    reports: tuple[SavedReport, ...]
    listed: tuple[_Listed, ...] = ()
    has_index: bool = False  # a suites.json said which suites there are


@dataclass(frozen=True)
class Planned:
    """What ``plan --format github-matrix`` said of the suites: the gate jobs it started."""

    touched: tuple[str, ...]
    skipped: tuple[str, ...]
    removed: tuple[str, ...] = ()


@dataclass(frozen=True)
class SetStanding:
    """The set as the comment and the status show it: each report, and the suites without one."""

    reports: tuple[SavedReport, ...]
    missing: tuple[str, ...]  # a report was due (a touched suite) and none was saved
    skipped: tuple[str, ...]  # not run: the pull request touches nothing the suite watches

    @property
    def worst(self) -> tuple[str, str | None, int]:
        """(suite, verdict kind, exit code) of the worst suite (gate.verdict.kinds.severity); a
        missing report (kind None) stands as an inconclusive that blocks: exit 3."""
        rows: list[tuple[str, str | None, int]] = [(r.suite, r.kind, r.exit_code) for r in self.reports]
        rows += [(name, None, EXIT_BY_KIND["inconclusive"]) for name in self.missing]
        rows += [(name, "skipped", 0) for name in self.skipped]
        return min(rows, key=lambda row: (severity(row[1], row[2]), row[0]), default=("", "skipped", 0))

    @property
    def all_skipped(self) -> bool:
        return not self.missing and all(r.kind == "skipped" for r in self.reports)


# --------------------------------------------------------------------------- reading


def read_report_files(paths: Sequence[str | Path], load: Loader) -> SavedSet:
    """Reports named one by one; two of one suite are refused."""
    if len(paths) > MAX_SUITES:
        raise InputError(str(paths[0]), None, f"{len(paths)} reports given; a set holds at most {MAX_SUITES}")
    reports = [_saved(Path(path), load(Path(path))) for path in paths]
    _distinct(reports)
    return SavedSet(", ".join(str(p) for p in paths[:3]) + (", ..." if len(paths) > 3 else ""), tuple(reports))


def read_report_folder(folder: str | Path, load: Loader, *, may_be_empty: bool = False) -> SavedSet:
    """The reports of a folder: its suites.json and the reports it names, or else each
    sub-folder's report.json (a matrix workflow's ``retrieval-gate-report-<suite>`` artifacts),
    or else the folder's own report.json (one suite's output). ``may_be_empty``: a folder with
    none is an empty set (a matrix that started no gate job), not a refusal."""
    root = Path(folder)
    if not root.is_dir():
        raise InputError(str(root), None, "not a folder (--reports names the folder the reports were downloaded to)")
    index = root / SUITES_FILE
    if index.is_file():
        return _read_index(root, _inside_folder(index, root), load)
    found: list[SavedReport] = []
    for child in _children(root):
        report_path = child / REPORT_FILE
        if not report_path.is_file():
            continue
        saved = _saved(report_path, load(_inside_folder(report_path, root)))
        folder_suite = child.name[len(SUITE_ARTIFACT_PREFIX):] if child.name.startswith(SUITE_ARTIFACT_PREFIX) \
            else child.name
        if saved.suite != folder_suite:
            raise InputError(str(report_path), None, f"is a report of suite {shorten(repr(saved.suite), 60)}, but "
                             f"its folder is {shorten(repr(child.name), 80)}: not posted")
        found.append(saved)
    if not found and (root / REPORT_FILE).is_file():
        found.append(_saved(root / REPORT_FILE, load(_inside_folder(root / REPORT_FILE, root))))
    if not found and not may_be_empty:
        raise InputError(str(root), None, f"holds no {SUITES_FILE}, no {REPORT_FILE} and no folder with one: "
                         "no report to read")
    _distinct(found)
    return SavedSet(str(root), tuple(found))


def _children(root: Path) -> list[Path]:
    children = []
    for entry in sorted(root.iterdir()):
        if entry.is_dir() and not entry.is_symlink():
            children.append(entry)
            if len(children) > MAX_SUITES:
                raise InputError(str(root), None, f"holds more than {MAX_SUITES} folders: not a set of suites' "
                                 "reports")
    return children


def _saved(path: Path, report: Report) -> SavedReport:
    suite = report.suite if isinstance(report.suite, str) and report.suite else "retrieval"
    verdict = report.verdict
    if not verdict or not isinstance(verdict.exit_code, int):
        raise InputError(str(path), None, "has no verdict: not posted")
    return SavedReport(suite, path, report, str(verdict.kind), verdict.exit_code)


def _distinct(reports: Iterable[SavedReport]) -> None:
    seen: dict[str, SavedReport] = {}
    for saved in reports:
        if saved.suite in seen:
            raise InputError(str(saved.path), None, f"is a second report of suite {shorten(repr(saved.suite), 60)} "
                             f"(the first: {shorten(str(seen[saved.suite].path), 120)}): not posted")
        seen[saved.suite] = saved


def _small_json(path: Path, what: str) -> Any:
    return parse_json_document(str(path), read_text_file(str(path), what, limit=_SMALL_JSON))


def _read_index(root: Path, index: Path, load: Loader) -> SavedSet:
    """suites.json and the reports it names, each row checked against its report."""
    document = _small_json(index, "a suites index")
    if not isinstance(document, dict) or document.get("schema") != 1 or not isinstance(document.get("suites"), list):
        raise InputError(str(index), None, "not a retrieval-gate suites.json of schema 1 (expected an object with "
                         "\"schema\": 1 and a \"suites\" list)")
    rows = document["suites"]
    if not rows or len(rows) > MAX_SUITES:
        raise InputError(str(index), None, f"lists {len(rows)} suites; a set holds 1 to {MAX_SUITES}")
    reports: list[SavedReport] = []
    listed: list[_Listed] = []
    names: set[str] = set()
    for number, row in enumerate(rows, 1):
        suite, verdict, exit_code, relative = _row(index, number, row)
        if suite in names:
            raise InputError(str(index), None, f"lists suite {shorten(repr(suite), 60)} twice: not posted")
        names.add(suite)
        if relative is None:
            if verdict not in ("skipped", None):
                raise InputError(str(index), None, f"row {number} ({shorten(repr(suite), 60)}) says {verdict} "
                                 "without a report: not posted")
            listed.append(_Listed(suite, verdict == "skipped"))
            continue
        path = _inside(root, index, number, relative)
        saved = _saved(path, load(path))
        said = (saved.suite, saved.kind, saved.exit_code)
        if said != (suite, verdict, exit_code):
            raise InputError(str(index), None, f"row {number} says suite {shorten(repr(suite), 60)}: {verdict} (exit "
                             f"{exit_code}), but {relative} is suite {shorten(repr(saved.suite), 60)}: {saved.kind} "
                             f"(exit {saved.exit_code}): not posted")
        reports.append(saved)
    _distinct(reports)
    saved_set = SavedSet(str(index), tuple(reports), tuple(listed), has_index=True)
    _check_worst(index, document.get("worst"), saved_set)
    return saved_set


def _row(index: Path, number: int, row: Any) -> tuple[str, str | None, int | None, str | None]:
    if not isinstance(row, dict):
        raise InputError(str(index), None, f"row {number} of \"suites\" is not an object")
    suite, verdict, exit_code, relative = row.get("suite"), row.get("verdict"), row.get("exit_code"), row.get("report")
    if not isinstance(suite, str) or not suite or len(suite) > 100:
        raise InputError(str(index), None, f"row {number}: \"suite\" must be a short text")
    if verdict is not None and verdict not in EXIT_BY_KIND:
        raise InputError(str(index), None, f"row {number}: \"verdict\" {shorten(repr(verdict), 40)} is not a kind "
                         "of verdict")
    if exit_code is not None and (isinstance(exit_code, bool) or not isinstance(exit_code, int)):
        raise InputError(str(index), None, f"row {number}: \"exit_code\" must be a whole number")
    if relative is not None and (not isinstance(relative, str) or not relative or len(relative) > 300
                                 or not relative.isprintable()):
        raise InputError(str(index), None, f"row {number}: \"report\" must be a path or null")
    return suite, verdict, exit_code, relative


def _inside(root: Path, index: Path, number: int, relative: str) -> Path:
    """The report a row names: a relative path inside the folder (no '..', no link out of it)."""
    parts = PurePosixPath(relative).parts
    if "\\" in relative or PurePosixPath(relative).is_absolute() or ".." in parts or not parts:
        raise InputError(str(index), None, f"row {number}: \"report\" {shorten(repr(relative), 80)} is not a path "
                         "inside the folder: not posted")
    path = root.joinpath(*parts)
    if not _stays_inside(path, root):
        raise InputError(str(index), None, f"row {number}: \"report\" {shorten(repr(relative), 80)} leads out of the "
                         "folder: not posted")
    if not path.is_file():
        raise InputError(str(index), None, f"row {number}: {shorten(relative, 80)} is not there: not posted")
    return path


def _inside_folder(path: Path, root: Path) -> Path:
    """``path``, refused when it is a link out of ``root``: what an artifact holds is read from
    the folder it was downloaded to, never from a file a link in it names."""
    if not _stays_inside(path, root):
        raise InputError(str(path), None, "is a link out of the folder the reports were downloaded to: not posted")
    return path


def _stays_inside(path: Path, root: Path) -> bool:
    """Whether ``path``, its links followed, is inside ``root``. A path the system cannot resolve
    (a NUL byte, a loop of links, a name too long) leads nowhere the gate may read: not inside."""
    try:
        return path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError, ValueError):  # RuntimeError: a symlink loop (Python < 3.13)
        return False


def _check_worst(index: Path, worst: Any, saved: SavedSet) -> None:
    """suites.json's "worst" must be its worst suite: the status it stood for is the rows'."""
    standing = SetStanding(saved.reports, tuple(r.suite for r in saved.listed if not r.skipped),
                           tuple(r.suite for r in saved.listed if r.skipped))
    if worst is None:
        return
    said = (worst.get("suite"), worst.get("verdict"), worst.get("exit_code")) if isinstance(worst, dict) else worst
    if said != standing.worst:
        suite, kind, exit_code = standing.worst
        raise InputError(str(index), None, f"says its worst suite is {shorten(json.dumps(said, default=str), 120)}, "
                         f"but its rows' worst is {suite!r}: {kind or 'no report'} (exit {exit_code}): not posted")


def read_plan(path: str | Path) -> Planned:
    """``plan --format github-matrix``'s JSON with several suites: the touched suites (its
    ``suites``), the ``skipped`` and the ``removed`` ones."""
    shown = Path(path)
    document = _small_json(shown, "a plan")
    if not isinstance(document, dict) or not isinstance(document.get("suites"), list):
        raise InputError(str(shown), None, "not the JSON of `retrieval-gate plan --format github-matrix` with "
                         "several suites (expected an object with a \"suites\" list)")
    touched = [entry.get("suite") if isinstance(entry, dict) else None for entry in document["suites"]]
    skipped, removed = document.get("skipped", []), document.get("removed", [])
    seen: set[str] = set()
    for key, names in (("suites", touched), ("skipped", skipped), ("removed", removed)):
        # A set's suites are plain folder names (gate.inputs.suite_set): the status job prints
        # them, and a line break in one would start a workflow command of its own.
        if not isinstance(names, list) or len(names) > MAX_SUITES or \
                not all(isinstance(n, str) and _PLAIN.match(n) for n in names):
            raise InputError(str(shown), None, f"\"{key}\" must list suite names, each a plain folder name (at most "
                             f"{MAX_SUITES})")
        twice = seen.intersection(names) or {n for n in names if names.count(n) > 1}
        if twice:
            raise InputError(str(shown), None, f"names suite {min(twice)!r} twice: a plan lists each suite once")
        seen.update(names)
    return Planned(tuple(str(name) for name in touched), tuple(skipped), tuple(removed))


# --------------------------------------------------------------------------- checking


def standing_of(saved: SavedSet, trusted: Sequence[str], trusted_shown: str,
                planned: Planned | None = None, touched: Collection[str] | None = None) -> SetStanding:
    """The set checked against the trusted suites (``trusted``: the names ``trusted_shown``, the
    default branch's suites file, gives): a report or a suites.json row of another suite is
    refused. A suite with no report is missing (its job failed) unless it was not run: the
    suites.json or the plan says it is skipped. With ``planned``, the plan's touched and removed
    suites are the reports due; its suites count as trusted too (the plan read the base's set).
    ``touched``: the suites the pull request touches by the trusted suites' own watch rules (the
    comment job's reading of the PR's files): one the set calls skipped is due all the same, so
    a forged "skipped" shows as a missing report, not as nothing to post."""
    known = set(trusted) | (set(planned.touched + planned.skipped + planned.removed) if planned else set())
    _refuse_unknown_suites(saved, known, trusted_shown)
    # A report that says "skipped" of a suite the pull request touches is no report of it.
    reports = tuple(r for r in saved.reports if touched is None or r.kind != "skipped" or r.suite not in touched)
    have = {report.suite for report in reports}
    due, claimed = _due_and_claimed(saved, trusted, planned, have)
    not_run = [name for name in claimed if touched is None or name not in touched]
    missing = [name for name in (*due, *claimed) if name not in not_run]
    return SetStanding(reports, tuple(dict.fromkeys(missing)), tuple(dict.fromkeys(not_run)))


def _due_and_claimed(saved: SavedSet, trusted: Sequence[str], planned: Planned | None,
                     have: set[str]) -> tuple[list[str], list[str]]:
    """The suites without a report: those whose report was due, and those said to be skipped."""
    if planned is not None:
        # A suite --config lists that the plan does not name at all is due too: a plan that
        # leaves one out cannot make it disappear from the check.
        unplanned = [name for name in trusted if name not in {*planned.touched, *planned.skipped, *planned.removed}]
        due = [name for name in (*planned.touched, *planned.removed, *unplanned) if name not in have]
        return due, [name for name in planned.skipped if name not in have]
    due = [name for name in [*trusted, *(row.suite for row in saved.listed)] if name not in have]
    return due, [row.suite for row in saved.listed if row.skipped and row.suite not in have]


def _refuse_unknown_suites(saved: SavedSet, known: set[str], trusted_shown: str) -> None:
    """A report or a suites.json row of a suite the trusted file does not list: InputError."""
    for report in saved.reports:
        if report.suite not in known:
            raise InputError(str(report.path), None, f"is a report of suite {shorten(repr(report.suite), 60)}, "
                             f"which {trusted_shown} does not list: not posted")
    for row in saved.listed:
        if row.suite not in known:
            raise InputError(saved.source, None, f"lists suite {shorten(repr(row.suite), 60)}, which {trusted_shown} "
                             "does not list: not posted")


# --------------------------------------------------------------------------- writing


def suites_document(standing: SetStanding, source: str, configs: Mapping[str, str],
                    report_path: Callable[[SavedReport], str]) -> dict[str, Any]:
    """suites.json for the set (schema 1, as ``run`` and the Action write it): a row per suite,
    with ``report`` null for a suite not run (verdict skipped) or whose job saved none (verdict
    null), and the worst."""
    rows: list[dict[str, Any]] = []
    for saved in standing.reports:
        rows.append({"suite": saved.suite, "config": configs.get(saved.suite), "verdict": saved.kind,
                     "exit_code": saved.exit_code, "headline": _headline(saved.report),
                     "report": report_path(saved)})
    for name in standing.missing:
        rows.append({"suite": name, "config": configs.get(name), "verdict": None,
                     "exit_code": EXIT_BY_KIND["inconclusive"],
                     "headline": "no report: its gate job saved none", "report": None})
    for name in standing.skipped:
        rows.append({"suite": name, "config": configs.get(name), "verdict": "skipped", "exit_code": 0,
                     "headline": "not run: the pull request touches nothing this suite watches", "report": None})
    rows.sort(key=lambda row: row["suite"])
    suite, kind, exit_code = standing.worst
    return {"schema": 1, "source": source, "suites": rows,
            "worst": {"suite": suite, "verdict": kind, "exit_code": exit_code,
                      "headline": next((row["headline"] for row in rows if row["suite"] == suite), "")}}


def _headline(report: Report) -> str:
    headline = report.verdict.headline if report.verdict else None
    return headline if isinstance(headline, str) else ""


_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}\Z")


def folder_name(suite: str) -> str:
    """A suite's folder in a written set (``<suite>/report.json``): its name, which with several
    suites is a plain folder name (gate.inputs.suite_set); anything else is refused."""
    if not _PLAIN.match(suite):
        raise InputError(suite, None, "is not a plain folder name: a suite of a set is named like one")
    return suite
