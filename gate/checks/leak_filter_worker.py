"""The trigram leak scan's batches in worker processes, while the scanning process reads the corpus.

Past its learning phase the trigram filter of :mod:`gate.checks.leakage` is read-only, and
a batch's windows, scores and exact hits depend on that batch's texts alone. Threads
could not run the batches side by side (each holds the GIL for about a third of its
time); these processes do. Each worker is ``main()`` of this module, started as the
corpus reader of :mod:`gate.checks.leak_stream` is: with a scrubbed environment (no
token, no ``ACTIONS_*``: it reads batches from a pipe and needs nothing else), and the
gate imported from where this process imported it, never from the working directory.

The protocol, on the worker's stdin and stdout, is frames: one kind byte, an 8-byte
little-endian length, the payload. No pickle: texts, JSON and numpy arrays only.

- ``I`` (parent): JSON (the normalized queries, the threshold, the scan's settings),
  then the learned corpus trigram frequencies (int64). The worker answers ``K`` when
  ready.
- ``B`` (parent): a batch: its number of texts n, n int64 lengths in characters, the
  texts as UTF-8. The worker answers ``R``: the counts of exact hits and of trigram
  matches, then their chunk numbers and query numbers (int64) and the scores (float64).
- ``E`` (worker): the traceback of an error, after which it exits 1.

End of stdin: the worker exits 0. It ignores SIGINT: the parent stops it (on an
interrupt or an error, by killing it), and a worker whose parent died sees its stdin
end. The parent reads each worker's answers in a thread, writes its batches in another
(so a worker that stops reading can never block it), and gives up on a worker that
dies, answers an ``E``, or neither answers nor uses any CPU time for WORKER_TIMEOUT
seconds: the scan then goes on in its own process, with the same result. A worker that
is computing is waited for however long its batch takes (a loaded machine, a huge
chunk): this process would do the same work, later. Only a stalled one (stopped,
blocked, swapped out) is given up on. Where a process's CPU time cannot be read (no
``/proc``), no answer in WORKER_TIMEOUT seconds is enough.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any, Protocol

import numpy as np

from gate.common.environment import scrubbed_environment

__all__ = ["WorkerPool", "WorkerError", "main", "WORKER_TIMEOUT", "PER_WORKER"]

# Seconds in which a worker with a batch in flight neither answers nor uses the CPU before it is
# given up on (a worker that computes is not: see the module's docstring).
WORKER_TIMEOUT = 300.0
PER_WORKER = 2  # batches in flight per worker: one being scanned, one waiting in its pipe
_HEADER = struct.Struct("<cQ")

# The worker's start: the gate imported from where this process imported it, never from the
# working directory (see gate.checks.leak_stream: ``-c`` puts it first on sys.path). The scan
# itself is gate.checks.leakage's, handed to main (this module never imports leakage, which
# imports it).
_CHILD = ("import sys; sys.path[:] = [{root!r}] + [p for p in sys.path if p not in ('', '.')]; "
          "from gate.checks.leakage import worker_scanner; from gate.checks.leak_filter_worker import main; "
          "raise SystemExit(main(sys.argv[1:], worker_scanner))")

BatchResult = tuple[list[int], list[int], list[int], list[int], list[float]]


class BatchScanner(Protocol):
    """What a worker runs on each batch (gate.checks.leakage's scan, built from the parent's settings)."""

    def scan(self, texts: Sequence[str]) -> BatchResult: ...


#: (normalized queries, threshold, the scan's settings, learned corpus trigram frequencies) -> the scanner.
ScannerFactory = Callable[[list[str], float, dict[str, Any], np.ndarray], BatchScanner]


def _clock_ticks() -> int:
    try:
        return int(os.sysconf("SC_CLK_TCK")) or 100
    except (AttributeError, ValueError, OSError):
        return 100


_TICKS = _clock_ticks()


def _cpu_seconds(pid: int) -> float | None:
    """The CPU time (user + system) a running process has used so far; None where it cannot be
    read (no ``/proc``: not Linux) or the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime (fields 14 and 15)
    except (OSError, IndexError, ValueError):
        return None


def _cpu_total(pids: Sequence[int]) -> float | None:
    used = [_cpu_seconds(pid) for pid in pids]
    known = [u for u in used if u is not None]
    return None if len(known) < len(used) else sum(known)


class WorkerError(RuntimeError):
    """A worker died, reported an error, sent something unreadable or did not answer in time."""


def _write_frame(out: IO[bytes], kind: bytes, *parts: bytes) -> None:
    out.write(_HEADER.pack(kind, sum(len(p) for p in parts)))
    for part in parts:
        out.write(part)
    out.flush()


def _read_frame(inp: IO[bytes]) -> tuple[bytes, bytes] | None:
    """(kind, payload), or None at the end of the stream (a frame cut short raises)."""
    head = inp.read(_HEADER.size)
    if not head:
        return None
    if len(head) < _HEADER.size:
        raise EOFError("a frame header cut short")
    kind, size = _HEADER.unpack(head)
    payload = inp.read(size)
    if len(payload) < size:
        raise EOFError("a frame cut short")
    return kind, payload


def encode_batch(texts: Sequence[str]) -> bytes:
    lengths = np.fromiter(map(len, texts), dtype="<i8", count=len(texts))
    return struct.pack("<Q", len(texts)) + lengths.tobytes() + "".join(texts).encode("utf-8", "surrogatepass")


def decode_batch(payload: bytes) -> list[str]:
    (n,) = struct.unpack_from("<Q", payload)
    lengths = np.frombuffer(payload, dtype="<i8", count=n, offset=8)
    text = payload[8 + 8 * n :].decode("utf-8", "surrogatepass")
    ends = np.cumsum(lengths).tolist()
    if (ends[-1] if ends else 0) != len(text):
        raise ValueError("a batch whose lengths do not add up to its text")
    return [text[a:b] for a, b in zip([0] + ends[:-1], ends)]


def encode_result(result: BatchResult) -> bytes:
    ex_owner, ex_query, tri_owner, tri_query, tri_score = result
    return b"".join((struct.pack("<QQ", len(ex_owner), len(tri_owner)),
                     np.asarray(ex_owner, dtype="<i8").tobytes(), np.asarray(ex_query, dtype="<i8").tobytes(),
                     np.asarray(tri_owner, dtype="<i8").tobytes(), np.asarray(tri_query, dtype="<i8").tobytes(),
                     np.asarray(tri_score, dtype="<f8").tobytes()))


def decode_result(payload: bytes) -> BatchResult:
    n_ex, n_tri = struct.unpack_from("<QQ", payload)
    if len(payload) != 16 + 16 * n_ex + 24 * n_tri:
        raise ValueError("a result of the wrong size")
    at = 16
    arrays = []
    for n, dtype in ((n_ex, "<i8"), (n_ex, "<i8"), (n_tri, "<i8"), (n_tri, "<i8"), (n_tri, "<f8")):
        arrays.append(np.frombuffer(payload, dtype=dtype, count=n, offset=at).tolist())
        at += 8 * n
    return tuple(arrays)  # type: ignore[return-value]


def _init_payload(qnorms: Sequence[str], threshold: float, corpus_cf: np.ndarray, settings: dict[str, Any]) -> bytes:
    head = json.dumps({"queries": list(qnorms), "threshold": threshold, "settings": settings}).encode("ascii")
    return struct.pack("<Q", len(head)) + head + np.asarray(corpus_cf, dtype="<i8").tobytes()


# --------------------------------------------------------------------------- the parent's side


class _Worker:
    def __init__(self, index: int, init: bytes, results: queue.Queue[Any]):
        root = str(Path(__file__).resolve().parents[2])
        # stderr to a file, not a pipe: nothing reads it until the worker has ended.
        self.err_file = tempfile.TemporaryFile()
        try:
            self.proc = subprocess.Popen([sys.executable, "-c", _CHILD.format(root=root)], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=self.err_file, env=scrubbed_environment())
        except BaseException:
            self.err_file.close()
            raise
        self.index = index
        self.ready = False
        self.failure: WorkerError | None = None  # set by the reader when the worker failed
        self.in_flight = 0
        self.results = results  # this worker's answers, in order; a WorkerError when it failed
        self.outbox: queue.Queue[bytes | None] = queue.Queue()
        self.outbox.put(init)
        self.writer = threading.Thread(target=self._write, name=f"leak-worker-{index}-writer", daemon=True)
        self.reader = threading.Thread(target=self._read, name=f"leak-worker-{index}-reader", daemon=True)
        self.writer.start()
        self.reader.start()

    def _write(self) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        first = True
        try:
            while True:
                payload = self.outbox.get()
                if payload is None:
                    break
                _write_frame(stdin, b"I" if first else b"B", payload)
                first = False
        except (OSError, ValueError):
            pass  # the worker is gone (or was killed): its reader reports it
        finally:
            try:
                stdin.close()
            except (OSError, ValueError):
                pass

    def _read(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        try:
            while True:
                frame = _read_frame(stdout)
                if frame is None:
                    raise EOFError("it exited")
                kind, payload = frame
                if kind == b"K":
                    self.ready = True
                elif kind == b"R":
                    self.results.put(decode_result(payload))
                elif kind == b"E":
                    raise WorkerError(payload.decode("utf-8", "replace").strip().splitlines()[-1][-300:])
                else:
                    raise ValueError(f"an unknown frame {kind!r}")
        except Exception as error:  # noqa: BLE001 - every failure ends this worker's use
            failure = self._failure(error)
            tail = self.stderr_tail()
            if tail and not isinstance(error, WorkerError):
                failure = WorkerError(f"{failure}: {tail.splitlines()[-1][-300:]}")
            self.failure = failure
            self.results.put(failure)
        finally:
            try:
                stdout.close()
            except (OSError, ValueError):
                pass

    def _failure(self, error: Exception) -> WorkerError:
        code = self.proc.poll()
        if code is None:
            try:
                code = self.proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                code = None
        return WorkerError(f"worker {self.index}: {error}" + (f" (exit code {code})" if code is not None else ""))

    def stderr_tail(self) -> str:
        try:
            if self.err_file.closed:
                return ""
            size = self.err_file.seek(0, os.SEEK_END)
            self.err_file.seek(max(0, size - 2000))
            return self.err_file.read().decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""

    def close(self, kill: bool) -> None:
        if kill:
            self.proc.kill()
        self.outbox.put(None)  # the writer closes stdin: a worker left alive ends there
        try:
            self.proc.wait(timeout=None if kill else 30.0)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.writer.join(timeout=5.0)
        self.reader.join(timeout=5.0)
        self.err_file.close()


class WorkerPool:
    """Worker processes, each given the queries, the learned frequencies and the scan's settings
    (gate.checks.leakage's, as its worker_scanner reads them), then batches of texts."""

    def __init__(self, n: int, qnorms: Sequence[str], threshold: float, corpus_cf: np.ndarray,
                 settings: dict[str, Any]):
        init = _init_payload(qnorms, threshold, corpus_cf, settings)
        self.workers: list[_Worker] = []
        self._error: WorkerError | None = None
        try:
            for index in range(n):
                self.workers.append(_Worker(index, init, queue.Queue()))
        except BaseException:
            self.close(kill=True)
            raise

    @property
    def error(self) -> WorkerError | None:
        """Why a worker failed, once one has (the pool is then of no further use)."""
        if self._error is None:
            self._error = next((w.failure for w in self.workers if w.failure is not None), None)
        return self._error

    def ready(self) -> bool:
        """Whether some worker has built its filter and can take batches."""
        return any(w.ready for w in self.workers)

    def wait_ready(self, timeout: float) -> None:
        """Until some worker is ready (tests: so that the batches surely go to the workers); a
        WorkerError when none is and none used any CPU time in the last ``timeout`` seconds."""
        pids = [w.proc.pid for w in self.workers]
        used = _cpu_total(pids)
        deadline = time.monotonic() + timeout
        while not self.ready():
            if self.error is not None:
                raise self.error
            if time.monotonic() > deadline:
                now = _cpu_total(pids)
                if used is None or now is None or now <= used:
                    raise WorkerError(f"no worker ready in {timeout:g} s" + ("" if now is None else
                                                                             ", and none used any CPU time"))
                used, deadline = now, time.monotonic() + timeout  # starting, however slowly
            time.sleep(0.01)

    def capacity(self) -> int:
        """Batches that may be in flight at once."""
        return PER_WORKER * sum(w.ready for w in self.workers)

    def submit(self, texts: Sequence[str]) -> int:
        """Send a batch to the ready worker with the fewest in flight; its ticket for :meth:`result`."""
        worker = min((w for w in self.workers if w.ready), key=lambda w: w.in_flight)
        worker.in_flight += 1
        worker.outbox.put(encode_batch(texts))
        return worker.index

    def result(self, ticket: int) -> BatchResult:
        """The answer to the oldest batch in flight of that worker (batches are taken in submission order)."""
        worker = self.workers[ticket]
        used = _cpu_seconds(worker.proc.pid)
        while True:
            try:
                answer = worker.results.get(timeout=WORKER_TIMEOUT)
                break
            except queue.Empty:
                now = _cpu_seconds(worker.proc.pid)
                if used is not None and now is not None and now > used:
                    used = now  # still computing (a slow machine, a long batch): not stuck
                    continue
                answer = WorkerError(f"worker {ticket}: no answer in {WORKER_TIMEOUT:g} s"
                                     + ("" if now is None else ", and no CPU time used"))
                break
        if isinstance(answer, WorkerError):
            self._error = answer
            raise answer
        worker.in_flight -= 1
        return answer

    def close(self, kill: bool = False) -> None:
        """Stop every worker: at the end of its input (or killed), and wait for it."""
        for worker in self.workers:
            if kill:
                worker.proc.kill()
        for worker in self.workers:
            worker.close(kill)
        self.workers = []


# --------------------------------------------------------------------------- the worker


def main(argv: list[str], make_scanner: ScannerFactory) -> int:
    """The worker: frames from stdin, answers to stdout (see the module's docstring); the scan of
    each batch is ``make_scanner``'s (gate.checks.leakage.worker_scanner)."""
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except (ValueError, OSError):
        pass
    inp = sys.stdin.buffer
    out = sys.stdout.buffer
    try:
        frame = _read_frame(inp)
        if frame is None:
            return 0
        kind, payload = frame
        if kind != b"I":
            raise ValueError(f"expected the queries first, got a frame {kind!r}")
        scanner = _scanner(payload, make_scanner)
        _write_frame(out, b"K")
        while True:
            frame = _read_frame(inp)
            if frame is None:
                return 0
            kind, payload = frame
            if kind != b"B":
                raise ValueError(f"an unknown frame {kind!r}")
            _write_frame(out, b"R", encode_result(scanner.scan(decode_batch(payload))))
    except BaseException:  # noqa: BLE001 - reported to the parent, which scans on without this worker
        try:
            _write_frame(out, b"E", traceback.format_exc().encode("utf-8", "replace"))
        except (OSError, ValueError):
            pass
        return 1


def _scanner(payload: bytes, make_scanner: ScannerFactory) -> BatchScanner:
    """The scanner ``make_scanner`` builds from the parent's queries, settings and learned frequencies."""
    (size,) = struct.unpack_from("<Q", payload)
    head = json.loads(payload[8 : 8 + size].decode("ascii"))
    cf = np.frombuffer(payload, dtype="<i8", offset=8 + size)
    return make_scanner(head["queries"], float(head["threshold"]), head["settings"], cf)
