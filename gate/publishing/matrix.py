"""The plan as a GitHub Actions matrix: one job per run, split to fit GitHub's 256 jobs a matrix.

``retrieval-gate plan --format github-matrix`` prints one line of JSON::

    {"count": 13, "counts": [13], "parts": [{"include": [{"key": ..., ...}, ...]}]}

Each ``include`` entry is one run a ``produce`` job makes: its key, purpose, the retrieval config
file, queries, corpus, noise repeat and seed, the path the gate's ``runs-dir`` expects it at
(``output``) and the artifact name to upload it under. Only the runs the gate needs are listed.
A workflow with P ``produce`` jobs passes ``--parts P`` and gives job k
``fromJSON(needs.plan.outputs.plan).parts[k]``, skipping it when ``counts[k]`` is 0 (GitHub
refuses an empty matrix).
"""

from __future__ import annotations

import math
from pathlib import PurePosixPath
from typing import Any, Sequence

from gate.common.errors import UsageError

#: GitHub Actions runs at most this many jobs from one matrix.
MAX_JOBS_PER_MATRIX = 256
ARTIFACT_PREFIX = "retrieval-gate-run-"


def matrix_entry(run: Any) -> dict[str, Any]:
    """One job of the matrix (``run``: a :class:`gate.pipeline.run.PlannedRun`)."""
    return {
        "key": run.key,
        "purpose": run.purpose,
        "config": run.config_file,
        "queries": run.queries,
        "corpus": run.corpus or "",
        "repeat": run.repeat,
        # A string: GitHub's expressions hold numbers as doubles, and seeds go up to 2^63 - 1.
        "seed": str(run.seed),
        "output": run.output,
        "file": PurePosixPath(run.output).name,
        "artifact": ARTIFACT_PREFIX + run.key,
        "code_commit": run.code_commit or "",
    }


def github_matrix(planned: Sequence[Any], parts: int = 1) -> dict[str, Any]:
    """The needed runs of ``planned`` as ``parts`` matrices of at most 256 jobs each, in order."""
    if parts < 1:
        raise UsageError(f"--parts {parts}: at least 1")
    entries = [matrix_entry(run) for run in planned if run.needed]
    if math.ceil(len(entries) / parts) > MAX_JOBS_PER_MATRIX:
        need = math.ceil(len(entries) / MAX_JOBS_PER_MATRIX)
        raise UsageError(f"{len(entries)} runs do not fit {parts} matri{'x' if parts == 1 else 'ces'} of at most "
                         f"{MAX_JOBS_PER_MATRIX} jobs: pass --parts {need} (and give the workflow {need} produce "
                         "jobs)")
    # Even parts, in order (sizes differ by one at most): no part is empty while another has two.
    small, extra = divmod(len(entries), parts)
    chunks, start = [], 0
    for i in range(parts):
        size = small + (1 if i < extra else 0)
        chunks.append(entries[start:start + size])
        start += size
    return {"count": len(entries), "counts": [len(c) for c in chunks], "parts": [{"include": c} for c in chunks]}
