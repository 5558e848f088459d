"""A run digested on the second core, in a process of its own, while this one digests the other.

Reading and evaluating a run piece by piece (:func:`gate.evaluation.streaming.digest_run`) is
mostly Python work per row, which holds the GIL: two threads give two large runs about 7% over
one after the other, a second process nearly 2x. :func:`start` launches
``python -c ...main()`` (:mod:`gate.evaluation.digest_child_main`) with the run's path, the
qrels spec (the child loads the same qrels itself: the same file gives the same judgments), the
query list and the settings on stdin as JSON; :meth:`DigestChild.result` returns its
:class:`RunDigest`, pickled on stdout.

The child gets a scrubbed environment (no token, no ``ACTIONS_*``: it reads two files) and
imports the gate from where this process did, never from the working directory (a checked-out
PR's ``gate.py``). Bad input comes back as one JSON line on stderr and exit 2: the parent
raises the same :class:`InputError`, file and line included. Anything else is the gate's bug.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from gate.common.environment import scrubbed_environment
from gate.common.errors import InputError

__all__ = ["DigestChild", "start"]

_CHILD = ("import sys; sys.path[:] = [{root!r}] + [p for p in sys.path if p not in ('', '.')]; "
          "from gate.evaluation.digest_child_main import main; raise SystemExit(main())")


class DigestChild:
    """A child process digesting one run; :meth:`result` waits for it."""

    def __init__(self, proc: subprocess.Popen[bytes], err_file: IO[bytes]):
        self.proc = proc
        self.err_file = err_file

    @property
    def _stdout(self) -> IO[bytes]:
        stdout = self.proc.stdout
        assert stdout is not None  # started with stdout=PIPE
        return stdout

    def result(self) -> Any:
        """The child's :class:`gate.evaluation.streaming.RunDigest`; raises its InputError."""
        try:
            data = self._stdout.read()
        finally:
            self._stdout.close()
            code = self.proc.wait()
        err = self._stderr()
        if code == 0:
            return pickle.loads(data)  # noqa: S301 - our own child's output, never a user's file
        if code == 2:
            try:
                problem = json.loads(err.strip().splitlines()[-1])
                error = InputError(problem["file"], problem["line"], problem["message"])
            except (ValueError, KeyError, IndexError, TypeError):
                error = None
            if error is not None:
                raise error
        raise RuntimeError(f"the run digest process exited {code}: {err.strip()[-2000:]}")

    def stop(self) -> None:
        """Kill the child (the other run failed: its answer is no longer wanted)."""
        if self.proc.poll() is None:
            self.proc.kill()
        self._stdout.close()
        self.proc.wait()
        self._stderr()

    def _stderr(self) -> str:
        try:
            self.err_file.seek(0, os.SEEK_END)
            size = self.err_file.tell()
            self.err_file.seek(max(0, size - (1 << 16)))  # the last 64 KiB: the error line comes last
            return self.err_file.read().decode("utf-8", "replace")
        finally:
            self.err_file.close()


def start(path: str | os.PathLike, qrels_spec: str, measures: Sequence[str], query_ids: Sequence[str] | None, *,
          rel: int, k_rank: int, k_recall: int, sha256: bool, queries_spec: str | None = None) -> DigestChild:
    """Start digesting the run at ``path`` in a child process, on ``query_ids``; None: on the
    universe of the qrels and ``queries_spec`` (:func:`gate.inputs.universe.query_universe`)."""
    root = str(Path(__file__).resolve().parents[2])
    payload = json.dumps({"path": os.fspath(path), "qrels": os.fspath(qrels_spec),
                          "measures": [str(m) for m in measures],
                          "query_ids": None if query_ids is None else list(query_ids),
                          "queries": None if queries_spec is None else os.fspath(queries_spec),
                          "rel": rel, "k_rank": k_rank, "k_recall": k_recall, "sha256": sha256}).encode("utf-8")
    # stderr to a file, not a pipe: a child that fills a pipe there before it writes stdout
    # would wait on this process while this one waits on its stdout.
    err_file = tempfile.TemporaryFile()
    proc = subprocess.Popen([sys.executable, "-c", _CHILD.format(root=root)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=err_file, env=scrubbed_environment())
    stdin = proc.stdin
    assert stdin is not None  # started with stdin=PIPE
    try:
        stdin.write(payload)
        stdin.close()
    except BrokenPipeError:  # it died at start-up: result() says why
        pass
    return DigestChild(proc, err_file)

