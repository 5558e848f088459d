"""What the comment job checks of a saved report before it posts it.

``retrieval-gate comment`` holds a token that may write on every pull request; what it posts is
a report.json an untrusted job saved (on a fork, that job ran the fork's code, and a process the
PR's command left behind can rewrite the file after the verdict). The job cannot prove the
report is the gate's, but it refuses what it can show is not, and says what it cannot settle:

- the report must be of the PR and head this job was started for (its ``event``, which the
  Action records): another PR's report, or an older head's, is refused (:func:`event_problem`);
- its verdict must be one the gate writes: the kind, the exit code and the reasons agree, by
  the table the rules decide with (:mod:`gate.verdict.kinds`; :func:`verdict_problem`);
- the PR job's own result, ``workflow_run.conclusion``, is compared with the report's exit
  code, the code the gate step ends that job with: a job that failed while its report passes,
  or one that succeeded while its report blocks, is said in a line of the comment
  (:func:`conclusion_disagreement`). The comment is still posted: another step can fail the
  job, and the PR's required check is the job's result, not the comment.

Only the report record is read (``gate.report.spine.Report``, read back by ``read_report``);
nothing of the gate is run again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gate.common import limits
from gate.common.errors import InputError
from gate.common.limits import shorten
from gate.inputs.config import is_suite_name
from gate.inputs.readers.fields import parse_json_document
from gate.inputs.readers.textlines import read_text_file
from gate.rendering.markdown import md_text
from gate.report.document import read_report
from gate.report.spine import Accepted, Report, Verdict
from gate.report.typed import Absent
from gate.verdict.kinds import (
    ACCEPTED_CODE,
    EXIT_BY_KIND,
    FAILING_CODES,
    INCONCLUSIVE_CODES,
    INCONCLUSIVE_NOT_BLOCKING_EXIT,
    NOTE_CODES,
    PASSING_CODES,
    SKIPPED_CODE,
)

#: Every reason code the gate gives: a code outside it is not a verdict this version wrote.
KNOWN_CODES = FAILING_CODES | PASSING_CODES | INCONCLUSIVE_CODES | NOTE_CODES | {SKIPPED_CODE, ACCEPTED_CODE}


@dataclass(frozen=True)
class Expected:
    """What the comment job knows from its own workflow (trusted), not from the artifact."""

    pr: int  # --pr: the PR whose head GitHub says is head_sha
    head_sha: str  # --head-sha (workflow_run.head_sha), lower-case
    run_conclusion: str | None = None  # workflow_run.conclusion of the run that saved the report; None: not known


@dataclass(frozen=True)
class Refused:
    """The report is not posted: ``problem`` says why, in one line (after the report's path)."""

    problem: str


@dataclass(frozen=True)
class ConclusionDisagreement:
    """The PR job's run concluded ``conclusion``, but the report's verdict ends the gate step
    with ``exit_code``, which would have given that job the other result."""

    conclusion: str
    kind: str
    exit_code: int

    def markdown(self) -> str:
        """The comment's line that says so (every value escaped, though each is one of a fixed set)."""
        kind, conclusion = md_text(self.kind, 20), md_text(self.conclusion, 20)
        if self.exit_code == 0:
            return (f"> ⚠️ **This report does not match the PR's gate job**: the job's run concluded "
                    f"*{conclusion}*, but this report says *{kind}* (exit code 0), which lets the job succeed. "
                    "Another step may have ended the job so, or the report was changed after the gate wrote it; "
                    "the PR's check is the job's own result, not this comment.")
        return (f"> ⚠️ **This report does not match the PR's gate job**: the job's run concluded "
                f"*{conclusion}*, but this report says *{kind}* (exit code {self.exit_code}), which fails the "
                "job. The gate step may be allowed to fail (continue-on-error), or the report was changed after "
                "the gate wrote it; the PR's check is the job's own result, not this comment.")


@dataclass(frozen=True)
class Postable:
    """The report passed every check; ``disagreement`` is the line the comment adds, if any."""

    disagreement: ConclusionDisagreement | None = None


def load_saved_report(path: str | Path) -> Report:
    """A report.json from an artifact an untrusted job wrote: bounded, strict JSON, and shaped
    like a run report (a verdict the comment can state) before anything renders it."""
    shown = str(path)
    report = parse_json_document(shown, read_text_file(shown, "a report", limit=limits.MAX_REPORT_BYTES))
    if not isinstance(report, dict):
        raise InputError(shown, None, "not a retrieval-gate report (expected a JSON object)")
    version = report.get("schema_version")
    if not isinstance(version, str) or version.split(".")[0] != "1":
        raise InputError(shown, None, f"not a retrieval-gate report of schema 1.x (schema_version {version!r})")
    if report.get("command") != "run":
        raise InputError(shown, None, f"not a gate run report (command {str(report.get('command'))[:40]!r}): the "
                         "comment states a verdict, which only `retrieval-gate run` (or the Action) decides")
    verdict = report.get("verdict")
    kinds = ("pass", "fail", "inconclusive", "skipped", "accepted")
    if not isinstance(verdict, dict) or verdict.get("kind") not in kinds:
        raise InputError(shown, None, f"'verdict.kind' must be one of {', '.join(kinds)}")
    suite = report.get("suite", "retrieval")
    if not isinstance(suite, str) or not is_suite_name(suite):
        # A name a config cannot give (a '|': "suites|.retrieval-gate.yml") would keep, and so
        # replace, the comment of a set of suites instead of a suite's own.
        raise InputError(shown, None, f"'suite' {shorten(repr(suite), 60)} is not a suite's name (short and plain, "
                         "without '|', '<', '>', '`' or a line break), so no gate config gave it")
    return read_report(report, shown)


def check_report(report: Report, expected: Expected) -> Refused | Postable:
    """Every check of this module, in order: the event, the verdict, the run's conclusion."""
    verdict = report.verdict
    if not verdict:
        return Refused("has no verdict")
    problem = event_problem(report, expected.pr, expected.head_sha) or verdict_problem(verdict, report.accepted)
    if problem is not None:
        return Refused(problem)
    if expected.run_conclusion is None:
        return Postable()
    return Postable(conclusion_disagreement(verdict, expected.run_conclusion))


def event_problem(report: Report, pr: int, head_sha: str) -> str | None:
    """Why the report is not the one of PR ``pr`` at ``head_sha``, or None. The Action records
    the event it judged; a report without one (``retrieval-gate run``, a push, a merge group)
    names no PR, and cannot be posted on one."""
    event = report.event
    if not event:
        return ("records no pull request (no 'event'): only the Action's report of a pull_request run names the PR "
                "and the head it judged")
    if isinstance(event.pr, Absent) or event.pr is None:
        name = "" if isinstance(event.name, Absent) else f" (event {shorten(repr(event.name), 40)})"
        return f"records no pull request ('event.pr' is {'absent' if isinstance(event.pr, Absent) else 'null'}" \
               f"{name}): a report of no PR is not posted on one"
    if event.pr != pr:
        return f"is the report of PR #{event.pr}, not of #{pr} (--pr)"
    if isinstance(event.head_sha, Absent):
        return "records no head commit ('event.head_sha')"
    if event.head_sha.lower() != head_sha.lower():
        return f"was made for head {shorten(repr(event.head_sha), 50)}, not {head_sha} (--head-sha)"
    return None


def verdict_problem(verdict: Verdict, accepted: Accepted | Absent) -> str | None:
    """Why the verdict's kind, exit code and reasons cannot be one the gate wrote, or None.

    The table the rules decide by (:mod:`gate.verdict.kinds`): the exit code is the kind's (an
    inconclusive one 3, or 0 where it does not block); the first reason is the one that decided
    (notes come after); a pass holds only a pass's findings, a fail at least one failing rule, an
    inconclusive neither, a skipped change only ``not_relevant``; an accepted one opens with
    ``accepted``, keeps the reasons of the fail or inconclusive it overrode, and has the label's
    record."""
    kind, codes = verdict.kind, [reason.code for reason in verdict.reasons]
    if kind not in EXIT_BY_KIND:
        return f"says {shorten(repr(kind), 40)}, not a kind of verdict"
    unknown = sorted(set(codes) - KNOWN_CODES)
    if unknown:
        return f"has a reason the gate does not give ({_listed(unknown)}): not a verdict this version wrote"
    allowed_exits = {EXIT_BY_KIND[kind]} | ({INCONCLUSIVE_NOT_BLOCKING_EXIT} if kind == "inconclusive" else set())
    if verdict.exit_code not in allowed_exits:
        shown = " or ".join(str(code) for code in sorted(allowed_exits, reverse=True))
        article = "an" if kind[0] in "aeiou" else "a"
        return f"says {kind} with exit code {verdict.exit_code}; the gate ends {article} {kind} with {shown}"
    deciding = [code for code in codes if code not in NOTE_CODES]
    if not codes or codes[0] in NOTE_CODES:
        return f"says {kind} without the reason that decided it (its first reason): the gate names one first"
    return _reasons_problem(kind, codes, deciding, accepted)


def _reasons_problem(kind: str, codes: Sequence[str], deciding: Sequence[str],
                     accepted: Accepted | Absent) -> str | None:
    """The kind against its reasons (:func:`verdict_problem`), a verdict with a deciding reason first."""
    if ACCEPTED_CODE in codes[1:] or (kind != "accepted" and ACCEPTED_CODE in codes):
        return f"says {kind} with an '{ACCEPTED_CODE}' reason that is not an accepted verdict's first"
    if kind != "skipped" and SKIPPED_CODE in codes:
        return f"says {kind} with a '{SKIPPED_CODE}' reason, which only a skipped change has"
    if kind == "accepted":
        return _accepted_problem(codes, deciding, accepted)
    return _KIND_REASONS[kind](deciding)


def _pass_problem(deciding: Sequence[str]) -> str | None:
    others = sorted({code for code in deciding if code not in PASSING_CODES})
    return f"says pass, but its reasons are not a pass's ({_listed(others)})" if others else None


def _fail_problem(deciding: Sequence[str]) -> str | None:
    if set(deciding) & FAILING_CODES:
        return None
    return f"says fail, but none of its reasons fails a change ({_listed(deciding)})"


def _inconclusive_problem(deciding: Sequence[str]) -> str | None:
    if deciding[0] in INCONCLUSIVE_CODES and not set(deciding) & (FAILING_CODES | PASSING_CODES):
        return None
    return f"says inconclusive, but its reasons decide ({_listed(deciding)})"


def _skipped_problem(deciding: Sequence[str]) -> str | None:
    if list(deciding) == [SKIPPED_CODE]:
        return None
    return f"says skipped, but its reasons are not a skipped change's ({_listed(deciding)})"


_KIND_REASONS = {"pass": _pass_problem, "fail": _fail_problem, "inconclusive": _inconclusive_problem,
                 "skipped": _skipped_problem}


def _accepted_problem(codes: Sequence[str], deciding: Sequence[str], accepted: Accepted | Absent) -> str | None:
    """An acceptance first, then the reasons of the fail or blocking inconclusive it overrode, and
    the record of the label (``accepted``) beside the verdict."""
    if codes[0] != ACCEPTED_CODE:
        return f"says accepted, but its first reason is not the acceptance ({_listed(codes[:1])})"
    if not set(deciding[1:]) & (FAILING_CODES | INCONCLUSIVE_CODES):
        return "says accepted, but it keeps no fail or inconclusive reason it overrode"
    if not accepted or isinstance(accepted.label, Absent):
        return "says accepted, but has no record of the label that accepted it ('accepted')"
    return None


def conclusion_disagreement(verdict: Verdict, conclusion: str) -> ConclusionDisagreement | None:
    """The report's exit code against the PR job's result. The gate step ends its job with the
    verdict's exit code: 0 (pass, skipped, accepted, an inconclusive that does not block) lets the
    job succeed, anything else fails it. A run that concluded otherwise disagrees; a run that did
    not finish (cancelled, timed out) disagrees with a report that says the job could succeed."""
    succeeded = conclusion == "success"
    if succeeded == (verdict.exit_code == 0):
        return None
    return ConclusionDisagreement(conclusion, verdict.kind, verdict.exit_code)


def with_disagreement(body: str, disagreement: ConclusionDisagreement | None) -> str:
    """The comment's Markdown with the disagreement's line after its headline (the first line,
    which notification previews show, stays the verdict's)."""
    if disagreement is None:
        return body
    headline, _, rest = body.partition("\n")
    return f"{headline}\n\n{disagreement.markdown()}\n{rest}"


def _listed(codes: Sequence[str]) -> str:
    return shorten(", ".join(codes), 120) if codes else "none"
