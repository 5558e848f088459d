"""A large corpus read and normalized on the second core, for the leak scan.

Reading a JSONL corpus strictly (JSON validation, ids, Unicode) and normalizing
each chunk costs about as much as the exact scan itself, and all of it holds the
GIL. For a large corpus, :func:`iter_normalized` runs both in a child process,
``gate.checks.leak_stream.main([SPEC])``, the same :func:`iter_corpus` and
:func:`normalize`, and reads its chunks back, already normalized, while this
process scans: the exact check of a million chunks then takes about half as long.

The child gets a scrubbed environment (no token, no ``ACTIONS_*``: it reads a
file and needs nothing else), writes one line per chunk, ``chunk id TAB doc id
TAB normalized text``, which is unambiguous (ids hold no controls, normalized
text no tab or newline), and reports bad input as one JSON line on stderr with
exit code 2: the parent raises the same :class:`InputError`, file and line
included. Small corpora, ``irds:`` ids and anything that is not a regular file
are read in this process (starting a child would cost more than it saves).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from gate.checks.normalize import normalize
from gate.common.environment import scrubbed_environment
from gate.common.errors import InputError
from gate.inputs.readers.beir import beir_corpus
from gate.inputs.readers.corpus import iter_corpus

try:  # a Unix: the pipe from the child can be widened (see _widen_pipe)
    import fcntl
except ImportError:  # pragma: no cover - Windows: the pipe keeps its size
    fcntl = None  # type: ignore[assignment]

__all__ = ["NormalizedChunk", "iter_normalized", "CHILD_MIN_BYTES"]

# Below this many bytes of corpus the child's start-up (~0.2 s) costs more than it saves.
CHILD_MIN_BYTES = 16 << 20


class NormalizedChunk(NamedTuple):  # a tuple: made a million times, 3x cheaper than a frozen dataclass
    chunk_id: str
    doc_id: str
    text: str  # already normalized (gate.checks.normalize): find_leaks does not normalize it again
    normalized: bool = True


def _corpus_file(spec: str) -> Path | None:
    """The regular file a spec reads, when it is one (a BEIR folder's corpus file included)."""
    if spec.startswith("irds:"):
        return None
    path = Path(spec)
    try:
        if path.is_dir():
            path = beir_corpus(path)
        return path if path.is_file() and not path.is_symlink() else None
    except (OSError, InputError):
        return None  # the in-process reader gives the message


def iter_normalized(spec: str, *, child: bool | None = None) -> Iterator[NormalizedChunk]:
    """The chunks of ``spec`` with their normalized text, duplicate ids refused at the end.

    ``child``: read in a child process (True), here (False), or by size (None, the default).
    """
    spec = os.fspath(spec)
    if child is None:
        path = _corpus_file(spec)
        child = path is not None and path.stat().st_size >= CHILD_MIN_BYTES
    if not child:
        for chunk in iter_corpus(spec, check_duplicates="at-end"):
            yield NormalizedChunk(chunk.chunk_id, chunk.doc_id, normalize(chunk.text) if chunk.text else "")
        return
    yield from _from_child(spec)


# The child's start: the gate imported from where this process imported it, never from the
# working directory (``python -m`` and ``-c`` put it first on sys.path, and in CI that is the
# checked-out repository, whose ``gate.py`` would then run and could feed the scan its own chunks).
_CHILD = ("import sys; sys.path[:] = [{root!r}] + [p for p in sys.path if p not in ('', '.')]; "
          "from gate.checks.leak_stream import main; raise SystemExit(main(sys.argv[1:]))")


def _from_child(spec: str) -> Iterator[NormalizedChunk]:
    root = str(Path(__file__).resolve().parents[2])
    # stderr to a file, not a pipe: a child that writes more than a pipe holds there before it
    # closes stdout would otherwise wait on this process while this one waits on its stdout.
    with tempfile.TemporaryFile() as err_file:
        proc = subprocess.Popen([sys.executable, "-c", _CHILD.format(root=root), spec], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=err_file, env=scrubbed_environment(),
                                bufsize=1 << 20)
        assert proc.stdout is not None
        _widen_pipe(proc.stdout.fileno())
        finished = False
        try:
            for raw in proc.stdout:
                chunk_id, doc_id, text = raw.decode("utf-8").rstrip("\n").split("\t", 2)
                yield NormalizedChunk(chunk_id, doc_id, text)
            finished = True
        finally:
            if not finished:  # the scan stopped early (an error, or the caller closed the generator)
                proc.kill()
            proc.stdout.close()
            code = proc.wait()
        size = err_file.seek(0, os.SEEK_END)
        err_file.seek(max(0, size - (1 << 16)))  # the last 64 KiB: the error line comes last
        err = err_file.read().decode("utf-8", "replace")
    if code == 2:
        try:
            problem = json.loads(err.strip().splitlines()[-1])
            raise InputError(problem["file"], problem["line"], problem["message"])
        except (ValueError, KeyError, IndexError, TypeError):
            pass
    if code != 0:
        raise RuntimeError(f"the corpus reader for the leak scan exited {code}: {err.strip()[-500:]}")


def _widen_pipe(fd: int) -> None:
    """A 1 MiB pipe instead of 64 KiB (Linux): the reader runs ahead instead of waiting on every few chunks."""
    if fcntl is None:
        return
    try:
        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
    except OSError:
        pass  # another platform, or a lower /proc/sys/fs/pipe-max-size: only slower


def main(argv: list[str]) -> int:
    """The child: the chunks read in process, one line each, in blocks; bad input as one JSON line, exit 2."""
    if len(argv) != 1:
        print("usage: python -m gate.checks.leak_stream CORPUS", file=sys.stderr)
        return 4
    out = sys.stdout.buffer
    lines: list[str] = []
    try:
        for chunk in iter_normalized(argv[0], child=False):
            lines.append(f"{chunk.chunk_id}\t{chunk.doc_id}\t{chunk.text}\n")
            if len(lines) >= 2048:
                out.write("".join(lines).encode("utf-8"))
                lines.clear()
    except InputError as error:
        print(json.dumps({"file": error.path, "line": error.line, "message": error.message}), file=sys.stderr)
        return 2
    finally:  # the chunks before an error too: the parent has scanned them when it reports it
        out.write("".join(lines).encode("utf-8"))
        out.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
