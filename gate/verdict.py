"""The verdict: policy applied to what the earlier stages established.

Kinds and exit codes: ``pass`` 0, ``skipped`` 0, ``accepted`` 0, ``fail`` 1,
``inconclusive`` 3 when it blocks (0 when ``inconclusive_blocks: false``).
Every verdict carries the reasons that decided it, each with a stable code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

EXIT_BY_KIND = {"pass": 0, "skipped": 0, "accepted": 0, "fail": 1, "inconclusive": 3}


@dataclass(frozen=True)
class Reason:
    code: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


@dataclass(frozen=True)
class Policy:
    max_regression: float = 0.02
    require_improvement: bool = False
    inconclusive_blocks: bool = True
    improvement_needs_band: bool = True

    @classmethod
    def from_config(cls, raw: dict[str, Any]) -> "Policy":
        return cls(
            max_regression=float(raw.get("policy.max_regression", 0.02)),
            require_improvement=bool(raw.get("policy.require_improvement", False)),
            inconclusive_blocks=bool(raw.get("policy.inconclusive_blocks", True)),
            improvement_needs_band=bool(raw.get("policy.improvement_needs_band", True)),
        )


@dataclass(frozen=True)
class Verdict:
    kind: str
    reasons: tuple[Reason, ...]
    improvement_shown: bool = False
    exit_code: int = 0
    reporting_set: dict[str, Any] = field(default_factory=dict)

    @property
    def headline_reason(self) -> str:
        return self.reasons[0].message if self.reasons else ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "reasons": [r.to_dict() for r in self.reasons],
            "improvement_shown": self.improvement_shown,
            "exit_code": self.exit_code,
            "reporting_set": dict(self.reporting_set),
        }


def _exit(kind: str, policy: Policy) -> int:
    if kind == "inconclusive" and not policy.inconclusive_blocks:
        return 0
    return EXIT_BY_KIND[kind]


def inconclusive(code: str, message: str, policy: Policy, reporting_set: dict[str, Any] | None = None) -> Verdict:
    return Verdict("inconclusive", (Reason(code, message),), False, _exit("inconclusive", policy), reporting_set or {})


def decide_delta(
    delta: float,
    ci_low: float,
    ci_high: float,
    mde: float,
    metric: str,
    query_count: int,
    policy: Policy,
    noise_threshold: float | None = None,
    reporting_set: dict[str, Any] | None = None,
) -> Verdict:
    """The statistical part of the policy: regression shown, non-inferiority, improvement."""
    band = noise_threshold if noise_threshold is not None else 0.0
    interval = f"{metric} {delta:+.3f} [{ci_low:+.3f}, {ci_high:+.3f}]"
    improvement = ci_low > 0 and abs(delta) > band and (noise_threshold is not None
                                                        or not policy.improvement_needs_band)
    reasons: list[Reason] = []
    if ci_high < 0 and abs(delta) > band:
        reasons.append(Reason("regression_shown", f"regression shown: {interval}, {query_count} q"))
        kind = "fail"
    elif ci_low >= -policy.max_regression:
        if policy.require_improvement and not improvement:
            reasons.append(Reason("improvement_required",
                                  f"improvement required but not shown: {interval}, {query_count} q"))
            kind = "fail"
        else:
            word = "improvement shown" if improvement else "non-inferior"
            reasons.append(Reason("non_inferior" if not improvement else "improvement_shown",
                                  f"{word}: {interval} (margin -{policy.max_regression:g}), {query_count} q"))
            kind = "pass"
    else:
        reasons.append(Reason("underpowered",
                              f"neither a regression nor non-inferiority is shown: {interval}, {query_count} q; "
                              f"minimum detectable effect {mde:.3f}"))
        kind = "inconclusive"
    return Verdict(kind, tuple(reasons), improvement, _exit(kind, policy), reporting_set or {})


def combine(failures, warnings, statistical: Verdict, policy: Policy) -> Verdict:
    """Validity failures decide before statistics: a fail names them first."""
    reasons = [Reason(code, message) for code, message in failures]
    if not reasons:
        extra = tuple(Reason("warning", w) for w in warnings)
        return Verdict(statistical.kind, statistical.reasons + extra, statistical.improvement_shown,
                       statistical.exit_code, statistical.reporting_set)
    reasons += list(statistical.reasons) + [Reason("warning", w) for w in warnings]
    return Verdict("fail", tuple(reasons), statistical.improvement_shown, _exit("fail", policy),
                   statistical.reporting_set)
