"""The plan as a GitHub Actions matrix: one job per run, split to fit GitHub's 256 jobs a matrix.

``retrieval-gate plan --format github-matrix`` prints one line of JSON::

    {"count": 13, "counts": [13], "parts": [{"include": [{"key": ..., ...}, ...]}]}

Each ``include`` entry is one run a ``produce`` job makes: its key, purpose, the retrieval config
file, queries, corpus, noise repeat and seed, the path the gate's ``runs-dir`` expects it at
(``output``), its timings sidecar's file name beside it (``timings_file``, which the stack may
write) and the artifact name to upload them under. Paths below the folder plan ran in (the
workspace) are relative to it: every matrix job is a runner of its own, with its own checkout.
Only the runs the gate needs are listed. A workflow with P ``produce`` jobs passes ``--parts P``
and gives job k
``fromJSON(needs.plan.outputs.plan).parts[k]``, skipping it when ``counts[k]`` is 0 (GitHub
refuses an empty matrix).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from gate.common.errors import UsageError
from gate.inputs.readers.timings import timings_path_for

#: GitHub Actions runs at most this many jobs from one matrix.
MAX_JOBS_PER_MATRIX = 256
ARTIFACT_PREFIX = "retrieval-gate-run-"


def workspace_path(path: str, root: Path) -> str:
    """``path`` relative to ``root`` (resolved: the folder plan runs in, the job's workspace)
    when it lies below it, else as it is. Each matrix job is a fresh runner: a path into the plan
    job's workspace means nothing there (a self-hosted runner's workspace is elsewhere), while
    the same relative path in its own checkout - plus the planned files it downloads - is the
    file."""
    if not path:
        return ""
    try:
        return Path(path).resolve().relative_to(root).as_posix()
    except ValueError:
        return path


def matrix_entry(run: Any, root: Path) -> dict[str, Any]:
    """One job of the matrix (``run``: a :class:`gate.pipeline.plan.PlannedRun`); its paths are
    relative to ``root`` where they lie below it."""
    return {
        "key": run.key,
        "purpose": run.purpose,
        "config": workspace_path(run.config_file, root),
        "queries": workspace_path(run.queries, root),
        "corpus": workspace_path(run.corpus or "", root),
        "repeat": run.repeat,
        # A string: GitHub's expressions hold numbers as doubles, and seeds go up to 2^63 - 1.
        "seed": str(run.seed),
        "output": workspace_path(run.output, root),
        "file": PurePosixPath(run.output).name,
        # The run's timings sidecar, beside it in runs-dir when the stack writes one (docs: Runners)
        "timings_file": PurePosixPath(timings_path_for(PurePosixPath(run.output).name)).name,
        "artifact": ARTIFACT_PREFIX + run.key,
        "code_commit": run.code_commit or "",
    }


def github_matrix(planned: Sequence[Any], parts: int = 1) -> dict[str, Any]:
    """The needed runs of ``planned`` as ``parts`` matrices of at most 256 jobs each, in order;
    paths relative to the working folder where they lie below it."""
    if parts < 1:
        raise UsageError(f"--parts {parts}: at least 1")
    root = Path.cwd().resolve()
    entries = [matrix_entry(run, root) for run in planned if run.needed]
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


#: The artifact a suite's gate job uploads its report folder under (the comment job reads them).
SUITE_ARTIFACT_PREFIX = "retrieval-gate-report-"


def suites_matrix(touched: Sequence[Any], skipped: Sequence[str], removed: Sequence[str] = ()) -> dict[str, Any]:
    """``plan --format github-matrix`` with several suites: one gate job per touched suite
    (``touched``: gate.inputs.suite_set.Suite), as ``include`` entries of one matrix - ``count`` 0
    means no job (GitHub refuses an empty matrix: the workflow skips the job on it). ``skipped``:
    the suites the change does not touch; ``removed``: suites whose config the change deletes
    (no job can run them: the one-job Action judges them)."""
    entries = [{"suite": suite.name, "config": suite.config_shown, "artifact": SUITE_ARTIFACT_PREFIX + suite.name}
               for suite in touched]
    return {"count": len(entries), "suites": entries, "skipped": list(skipped), "removed": list(removed),
            "include": entries}
