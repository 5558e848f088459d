"""What every runner receives and returns."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from gate.inputs.retrieval_config import RetrievalConfig


@dataclass(frozen=True)
class RunRequest:
    """One ranked-list production: a retrieval config against a query set and corpus."""

    purpose: str  # "baseline", "candidate", "cell model=new,corpus=old", "noise 3"
    config: RetrievalConfig
    queries: str  # path (or spec) handed to the runner as {queries}
    queries_sha256: str
    corpus: str | None
    corpus_sha256: str | None
    repeat: int = 0
    seed: int = 0
    # The code that produces the run (gate.runs.code): the workspace's for the candidate,
    # the base commit's for a baseline. None: not tracked (a runner whose code is the gate's).
    code: Any = None

    def key_parts(self, runner_identity: Mapping[str, Any]) -> dict[str, Any]:
        """What the run depends on, each part by its fingerprint (the report names the ones that differ)."""
        parts = {
            "runner": dict(runner_identity),
            "config": self.config.sha256,
            "corpus": self.corpus_sha256,
            "queries": self.queries_sha256,
            "repeat": self.repeat,
            "seed": self.seed,
        }
        if self.code is not None:
            parts["code"] = self.code.key()
        return parts

    def cache_key(self, runner_identity: Mapping[str, Any]) -> str:
        """The fingerprint a produced run is stored and picked up under."""
        text = json.dumps(self.key_parts(runner_identity), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class RunnerFailed(Exception):
    """The runner could not produce a usable run: the verdict becomes inconclusive."""

    def __init__(self, purpose: str, message: str, log_path: Path | None = None, log_tail: str = ""):
        self.purpose = purpose
        self.message = message
        self.log_path = log_path
        self.log_tail = log_tail
        super().__init__(f"{purpose} run: {message}")


class RunMissing(RunnerFailed):
    """A planned run an earlier step was to produce (``runs-dir``) is not in the runs folder."""

    def __init__(self, purpose: str, key: str, message: str):
        self.key = key
        super().__init__(purpose, message)


class Runner(Protocol):
    name: str

    def identity(self) -> dict[str, Any]:
        """What makes two runs of the same request comparable (goes into the cache key)."""

    def produce(self, request: RunRequest, config_file: Path, out_path: Path, log_path: Path) -> None:
        """Write a TREC run for ``request`` to ``out_path`` or raise :class:`RunnerFailed`."""


@dataclass(frozen=True)
class ProducedRun:
    purpose: str
    path: Path
    key: str
    source: str  # "runner" | "cache" | "runs-dir" | "file"
    seconds: float
    query_count: int
    extra: Mapping[str, Any] = field(default_factory=dict)
    # The run's timings sidecar (gate.inputs.readers.timings.Timings), when its runner wrote one.
    timings: Any = None
