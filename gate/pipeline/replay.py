"""``retrieval-gate replay``: the archived baseline made commensurable with today's inputs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate.checks.commensurability import (
    Incommensurable,
    ResolvedBaseline,
)
from gate.inputs.config import Config
from gate.inputs.golden import load_golden
from gate.pipeline.baseline import resolve_baseline
from gate.pipeline.stack import (
    Progress,
    check_base,
    check_config,
    code_under_test,
    make_producer,
    measures_of,
    stderr_progress,
)


@dataclass(frozen=True)
class ReplayResult:
    baseline: ResolvedBaseline | None
    problem: Incommensurable | None

    def to_dict(self) -> dict[str, Any]:
        if self.baseline is None:
            assert self.problem is not None
            return {"resolved": False, "reason": self.problem.message, "code": self.problem.code,
                    "differences": self.problem.differences}
        return {"resolved": True, **self.baseline.to_dict(),
                "mean": self.baseline.values.mean(next(iter(self.baseline.values.values)))}


def replay(config: Config, runs_dir: Path | None = None, base: str | None = None,
           progress: Progress = stderr_progress) -> ReplayResult:
    primary, others = measures_of(config)
    check_config(config)
    check_base(config, base)
    golden = load_golden(config)
    producer = make_producer(config, runs_dir, progress)
    try:
        resolved = resolve_baseline(config, golden, (primary, *others), str(primary), producer, base,
                                    candidate_code=code_under_test(config, runs_dir))
    except Incommensurable as problem:
        return ReplayResult(None, problem)
    return ReplayResult(resolved, None)
