"""The combined comment of a set of suites, as the fork-safe comment job posts it
(``retrieval-gate comment --reports DIR --config SUITES_FILE``).

The reports come from an artifact the pull request's job wrote: untrusted. Each is checked as
one report is (its PR and head, its verdict against itself: gate.publishing.report_trust), the
set against the default branch's suites file (gate.publishing.suite_reports), all before GitHub
is asked anything. Then, with the client: "skipped" is the PR job's word, so the PR's files
(GitHub's list) and each suite's watch rules from the default branch say which suites it
touches; a touched suite the set calls skipped is a missing report. The PR workflow's result is
compared with the set's worst verdict, and the comment is rendered (gate.rendering.suites) and
posted under the set's marker.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

import jinja2

from gate.common import limits
from gate.common.errors import InputError
from gate.inputs.suite_set import SuiteSet
from gate.pipeline.suite_verdicts import files_may_be_cut, touched_by_pull
from gate.publishing import suite_reports
from gate.publishing.github.client import GitHubClient
from gate.publishing.github.sticky_comment import CommentResult, publish_suites_comment
from gate.publishing.report_trust import ConclusionDisagreement, Expected, Refused, check_report, with_disagreement
from gate.rendering.markdown_cut import COMMENT_LIMIT
from gate.rendering.suites import MARKER_ROOM, render_suites_comment

__all__ = ["SetComment", "set_comment_publisher"]


@dataclass(frozen=True)
class SetComment:
    """What the comment job knows besides the reports: the PR and head it was told of, the PR
    workflow's result (None when not known), and how to keep the comment."""

    pr: int
    head_sha: str
    conclusion: str | None
    mode: str


def set_comment_publisher(found: SuiteSet, saved: suite_reports.SavedSet, config_arg: str,
                          job: SetComment) -> Callable[[GitHubClient], CommentResult]:
    """Check every report (InputError, exit 2, before GitHub is asked), then return what posts
    the set's comment with a client (module docstring). ``found``: the trusted suites file's set
    (``config_arg`` as given); ``saved``: the artifact's reports."""
    trusted = [suite.name for suite in found.suites]
    expected = Expected(job.pr, job.head_sha)  # the PR job's result is compared with the set's worst, below
    for each in suite_reports.standing_of(saved, trusted, config_arg).reports:
        checked = check_report(each.report, expected)
        if isinstance(checked, Refused):
            raise InputError(str(each.path), None, f"{checked.problem}: not posted")
    # The set's comment is named by the suites file from the repository's top, as the Action
    # names it (found.source), wherever this job runs from and however --config spells the path.
    named = found.source or config_arg

    def publish(client: GitHubClient) -> CommentResult:
        changed = client.list_pull_files(job.pr)
        if files_may_be_cut(changed):
            print("retrieval-gate: the pull request changes 3,000 files or more (GitHub lists no more): no suite's "
                  "skip can be checked, so a suite its job calls skipped is shown as having no report", file=sys.stderr)
        standing = suite_reports.standing_of(saved, trusted, config_arg, touched=touched_by_pull(found, changed))
        _, kind, exit_code = standing.worst
        body = suites_comment_body(standing, named, set_disagreement(job.conclusion, kind, exit_code))
        return publish_suites_comment(client, job.pr, job.head_sha, named, kind or "inconclusive", body,
                                      mode=job.mode, only_update=standing.all_skipped)

    return publish


def set_disagreement(conclusion: str | None, kind: str | None, exit_code: int) -> ConclusionDisagreement | None:
    """The PR workflow's result against the set's worst exit code (its status job, or the
    Action's one job, ends with it); None when they agree or the result is not known."""
    if conclusion is None or (conclusion == "success") == (exit_code == 0):
        return None
    return ConclusionDisagreement(conclusion, kind or "inconclusive", exit_code)


def suites_comment_body(standing: suite_reports.SetStanding, title: str,
                        disagreement: ConclusionDisagreement | None) -> str:
    """The combined comment's Markdown, under GitHub's limit with the disagreement line's room;
    reports that do not render (another version's, or edited) are one line, exit 2."""
    limit = COMMENT_LIMIT - MARKER_ROOM - (len(disagreement.markdown()) + 2 if disagreement is not None else 0)
    try:
        body = render_suites_comment([each.report for each in standing.reports], title=title,
                                     missing=standing.missing, skipped=standing.skipped, limit=limit)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, ArithmeticError, RecursionError,
            jinja2.TemplateError) as error:
        raise InputError(title, None, f"the reports cannot be rendered as a comment ({type(error).__name__}: "
                         f"{limits.shorten(str(error), 80)}): not reports this version wrote") from None
    return with_disagreement(body, disagreement)
