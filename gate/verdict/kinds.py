"""The verdict's kinds, the exit code each ends the gate with, and what each reason code says of
the kind it stands in.

Its own module, free of the config and the statistics, because a report read back from an
artifact (``gate.publishing.report_trust``: the comment job) checks a verdict against the same
table the rules decide by: a report whose kind, exit code and reasons disagree was not written
so by the gate. ``tests/verdict/test_reason_kinds.py`` holds the code sets to every code the
rules give.
"""

from __future__ import annotations

KINDS = ("pass", "fail", "inconclusive", "skipped", "accepted")

#: The exit code of each kind; an inconclusive verdict ends with 0 instead where the policy says
#: it does not block (``policy.inconclusive_blocks: false``).
EXIT_BY_KIND = {"pass": 0, "skipped": 0, "accepted": 0, "fail": 1, "inconclusive": 3}
INCONCLUSIVE_NOT_BLOCKING_EXIT = 0

#: Reason codes of the rules that fail a change: the validity and traffic rules, a regression
#: shown, a latency or cost increase shown beyond its limit, an improvement required and not
#: shown, a PR that moves its own yardstick. A verdict holding one is a fail (or a fail accepted
#: on purpose).
FAILING_CODES = frozenset({"validity_check_off", "new_leaked_queries", "judged_share", "tuning_overlap",
                           "damaged_traffic", "guarded_stratum", "regression_shown", "improvement_required",
                           "goalposts_changed", "latency_increase", "cost_increase"})
#: The statistical findings a pass rests on: a pass holds one of these, and no other deciding code.
PASSING_CODES = frozenset({"no_regression_shown", "improvement_shown", "non_inferior", "unchanged"})
#: What leaves a change undecided: neither claim shown, too few queries or movers, no commensurable
#: baseline, a run that failed or is missing, a base commit the checkout lacks.
INCONCLUSIVE_CODES = frozenset({"underpowered", "too_few_movers", "held_out_too_small", "empty_reporting_set",
                                "no_baseline", "baseline_replay_failed", "baseline_reconstruction_failed",
                                "runner_failed", "missing_run", "base_unavailable"})
#: A change that touches nothing the gate watches (the one reason of a skipped verdict).
SKIPPED_CODE = "not_relevant"
#: A maintainer's acceptance (the first reason of an accepted verdict, before those it overrode).
ACCEPTED_CODE = "accepted"
#: Notes beside a verdict that decide nothing: a run's warnings, and an accept label set without
#: the justification line (the verdict it stands beside stands).
NOTE_CODES = frozenset({"warning", "accept_without_justification"})

#: How bad each standing of a suite is, worst first, when several suites are judged on one PR: the
#: PR's status is its worst suite's. A suite whose job saved no report (``None``) blocks as an
#: inconclusive does: nothing shows its change is safe.
WORST_FIRST = ("fail", "inconclusive that blocks", "inconclusive that does not block", "pass", "skipped")


def severity(kind: str | None, exit_code: int | None) -> int:
    """The place of a suite's verdict in :data:`WORST_FIRST` (0 is the worst): a fail, then an
    inconclusive that blocks (exit 3, or no report at all), one that does not (exit 0), then a pass
    (an accepted change counts as what it exits: a pass), then a skipped suite."""
    if kind is None:
        return 1
    if kind == "fail":
        return 0
    if kind == "inconclusive":
        return 1 if exit_code != INCONCLUSIVE_NOT_BLOCKING_EXIT else 2
    if kind == "skipped":
        return 4
    return 3
