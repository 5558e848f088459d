"""A golden set over a stack whose every build ranks a little differently
(tests/support/runners/noisy_runner.py): one relevant document per query, pushed down by the build's
draws; the qrels judge only it, so the judged-share limits are lifted."""

from __future__ import annotations

import json
import sys
from pathlib import Path

RUNNER = Path(__file__).resolve().parent / "runners" / "noisy_runner.py"


def noisy_world(tmp: Path, *, queries: int = 200, base: str = "build: a\nnoise: 0.15\n", extra: str = "") -> Path:
    (tmp / "golden.jsonl").write_text("".join(json.dumps({"query_id": f"q{i:03d}", "text": f"question number {i}"})
                                              + "\n" for i in range(queries)))
    (tmp / "qrels.txt").write_text("".join(f"q{i:03d} 0 q{i:03d}/rel 1\n" for i in range(queries)))
    (tmp / "retrieval.yml").write_text(base)
    (tmp / "gate.yml").write_text(
        "suite: noisy\ngolden: {queries: golden.jsonl, qrels: qrels.txt, rel: 1}\nretrieval: {config: retrieval.yml}\n"
        f"runner:\n  command: \"{sys.executable} {RUNNER} --config {{config}} --queries {{queries}} --output {{run}} "
        "--seed {seed}\"\n"
        "statistics: {samples: 2000}\n" + extra)
    return tmp / "gate.yml"
