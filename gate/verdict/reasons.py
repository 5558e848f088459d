"""A verdict's reason: a rule's stable code, what it found, and the policy's limit it broke.

Its own module, free of the config and the statistics, because a report read back from
report.json (``gate.report.spine``) needs the same format to take the finding off a message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gate.common.numbers import finite_or_none

#: Between a reason's finding and its limit in the message; ``report.spine`` takes the finding back
#: off a report's message by it (:func:`finding_of`), so the two stay one format.
LIMIT_SEPARATOR = "; limit "


def reason_message(finding: str, limit: str | None) -> str:
    """A reason's message: its finding, then the policy's limit it broke, where its rule has one
    ("9 golden queries newly appear ...; limit 0"). The headline quotes the finding alone."""
    return finding if limit is None else f"{finding}{LIMIT_SEPARATOR}{limit}"


def finding_of(message: str, limit: str | None) -> str:
    """The finding of a reason whose message :func:`reason_message` made from it and ``limit``; a
    message not made so (a hand-edited one, or one that would leave no finding) is its own finding."""
    suffix = None if limit is None else f"{LIMIT_SEPARATOR}{limit}"
    if suffix and message.endswith(suffix) and message[:-len(suffix)].strip():
        return message[:-len(suffix)]
    return message


#: The rules whose message names the policy's limit after the finding (the only ones that give
#: ``limit``), and the statistical rules whose message quotes the calibrated rule's decision
#: interval: a report of schema 1.8 or older carries these values only in its messages.
LIMIT_CODES = frozenset({"new_leaked_queries", "damaged_traffic", "latency_increase", "cost_increase"})
DECISION_INTERVAL_CODES = frozenset({"regression_shown", "improvement_required", "improvement_shown",
                                     "no_regression_shown", "non_inferior", "underpowered"})


@dataclass(frozen=True)
class Reason:
    """A rule's stable code and what it found; ``limit`` is the policy's limit the finding broke,
    as shown ("0", "20%"), for the rules that name theirs after the finding; ``decision_interval``
    the calibrated rule's interval (low, high) that a statistical finding quotes."""
    code: str
    finding: str
    limit: str | None = None
    decision_interval: tuple[float, float] | None = None

    @property
    def message(self) -> str:
        return reason_message(self.finding, self.limit)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.limit is not None:
            out["limit"] = self.limit
        if self.decision_interval is not None:
            out["decision_interval"] = [finite_or_none(end) for end in self.decision_interval]
        return out
