"""A file a command refuses is read no further than its first bad line (or its size limit), never
to its end (issue 35: `noise --from-runs` hashed a whole 20 GB file before its reader refused it
at line 1, 134 s; every other command refused it at once).

Every command that takes a file is given, in place of one of the battery's world files, a 20 GB
sparse file (NULs, free to make: ``os.truncate``) and a file whose first line is bad followed by a
20 GB sparse tail. Each must exit 2 with one line naming the file, and read (``rchar`` of
/proc/self/io: every byte a read() returned, children it waited for included) a bounded amount:
at most :data:`READ_BUDGET`, where 20 GB is 160 times as much. The commands run in this process
(no interpreter start per case: the whole file takes seconds); a watchdog interrupts a command
that reads far past the budget, so a regression fails fast instead of reading 20 GB.
"""

from __future__ import annotations

import _thread
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from gate.cli import main
from tests.badinputs import battery as B

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="reads /proc/self/io")

SPARSE_SIZE = 20 << 30
# The largest size limit of an input the gate reads whole (a report, a strata file: 64 MiB), with
# room for the good files the command reads beside the bad one.
READ_BUDGET = 128 << 20
BAD_FIRST_LINE = b"this is no line of any format \xff\n"

# (name, argv, the world file replaced): every command that takes a file, each kind of file it takes.
EXTRA = [
    ("calibrate-from-runs", ("calibrate", "--from-runs", "runs/base.run", "runs/cand.run", "--qrels",
                             "eval/qrels.txt", "--samples", "200"), "runs/cand.run"),
    ("sweep-cell", ("sweep", "--cell", "a=runs/base.run", "--cell", "b=runs/cand.run", "--qrels", "eval/qrels.txt",
                    "--samples", "200"), "runs/cand.run"),
    ("noise-from-runs-qrels", ("noise", "--from-runs", "runs/base.run", "runs/cand.run", "--qrels", "eval/qrels.txt",
                               "--out", "n.json"), "eval/qrels.txt"),
    ("gate-config-run", ("run",), ".retrieval-gate.yml"),
    ("retrieval-config-run", ("run",), "retrieval/config.yml"),
    ("manifest-replay", ("replay",), B.MANIFEST),
    ("shares-compare", B.compare_with(queries="eval/queries.jsonl", strata="shares.yml"), "shares.yml"),
    ("report-comment", ("comment", "--report", "rep/report.json", "--pr", str(B.PR), "--head-sha", B.HEAD_SHA),
     "rep/report.json"),
]
INIT = ("init", "--queries", "eval/queries.jsonl", "--qrels", "eval/qrels.txt", "--corpus", "corpus.jsonl",
        "--retrieval-config", "retrieval/config.yml", "--force")
EXTRA += [(f"init-{name}", INIT, path) for name, path in
          (("queries", "eval/queries.jsonl"), ("qrels", "eval/qrels.txt"), ("corpus", "corpus.jsonl"))]
CASES = [(ctx.name, ctx.argv, ctx.path) for ctx in B.CONTEXTS] + EXTRA


def _rchar() -> int:
    with open("/proc/self/io") as io:
        return next(int(line.split()[1]) for line in io if line.startswith("rchar:"))


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The battery's good world, archived (``run`` finds a baseline) and judged once (``comment``
    finds a report), in a git repository (``init``)."""
    root = tmp_path_factory.mktemp("bounded")
    B.prepare(None, root)  # type: ignore[arg-type] - prepare only writes the world
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        assert main(list(B.ARCHIVE_SETUP[0])) == 0
        assert main(["run", "--out", "rep"]) == 0
    return root


class _Watchdog:
    """Interrupts the command (KeyboardInterrupt in the main thread) once this process has read
    ``limit`` bytes more than at the start: a command that reads the 20 GB fails in seconds."""

    def __init__(self, limit: int) -> None:
        self.start, self.limit = _rchar(), limit
        self.fired = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._done.wait(0.05):
            if _rchar() - self.start > self.limit:
                self.fired = True
                _thread.interrupt_main()
                return

    def __enter__(self) -> _Watchdog:
        # interrupt_main calls whatever SIGINT handler is set: make it the one that raises.
        self._handler = signal.signal(signal.SIGINT, signal.default_int_handler)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        signal.signal(signal.SIGINT, self._handler)


@pytest.mark.parametrize("variant", ["nuls", "bad-first-line"])
@pytest.mark.parametrize(("name", "argv", "path"), CASES, ids=[case[0] for case in CASES])
def test_a_refused_file_is_read_no_further_than_its_first_bad_line(world, monkeypatch, capsys, name, argv, path,
                                                                   variant):
    monkeypatch.chdir(world)
    for key in [k for k in os.environ if k.startswith(("GITHUB_", "INPUT_", "ACTIONS_", "RUNNER_"))]:
        monkeypatch.delenv(key)
    # `comment` reads its report before it would reach GitHub (nothing listens on port 9).
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_never_used")
    monkeypatch.setenv("GITHUB_REPOSITORY", "octo-org/octo-repo")
    monkeypatch.setenv("GITHUB_API_URL", "http://127.0.0.1:9")
    target = world / path
    original = target.read_bytes()
    target.unlink()
    try:
        with open(target, "wb") as handle:
            handle.write(BAD_FIRST_LINE if variant == "bad-first-line" else b"")
        os.truncate(target, SPARSE_SIZE)
        capsys.readouterr()
        with _Watchdog(8 * READ_BUDGET) as watchdog:
            code = main(list(argv))
            read = _rchar() - watchdog.start
    finally:
        target.unlink()
        target.write_bytes(original)
    err = capsys.readouterr().err
    assert not watchdog.fired, f"{' '.join(argv)} read more than {8 * READ_BUDGET >> 20} MiB of {path}"
    assert read <= READ_BUDGET, f"{' '.join(argv)} read {read >> 20} MiB before refusing {path}"
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("[retrieval-gate] ")]
    assert code == 2 and len(lines) == 1, (code, err[-600:])
    assert lines[0].startswith("retrieval-gate: error:") and Path(path).name in lines[0], lines[0]


def test_the_sparse_file_is_really_20_gb_and_the_watchdog_catches_a_command_that_reads_it(tmp_path, capsys):
    """The measure can fail: `noise --from-runs` of old hashed each file whole before reading it,
    which this stands in for (any read of the whole file must trip the watchdog)."""
    sparse = tmp_path / "sparse.run"
    with open(sparse, "wb"):
        pass
    os.truncate(sparse, SPARSE_SIZE)
    assert sparse.stat().st_size == SPARSE_SIZE
    with pytest.raises(KeyboardInterrupt), _Watchdog(READ_BUDGET) as watchdog, open(sparse, "rb") as handle:
        while handle.read(1 << 20):
            pass
    assert watchdog.fired and sys.platform.startswith("linux")


@pytest.mark.parametrize("second", ["the same path", "a copy"])
def test_noise_from_runs_still_refuses_one_run_given_twice(world, monkeypatch, capsys, second):
    """The duplicate check moved after the reading (copies) or to ``stat`` (one file twice): it
    still refuses both, in one line."""
    monkeypatch.chdir(world)
    other = "runs/base.run"
    if second == "a copy":
        other = "runs/base-copy.run"
        (world / other).write_bytes((world / "runs/base.run").read_bytes())
    try:
        code = main(["noise", "--from-runs", "runs/base.run", other, "--qrels", "eval/qrels.txt", "--out", "n.json"])
    finally:
        if second == "a copy":
            (world / other).unlink()
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and f"{other} is the same file as runs/base.run" in err[0], err


def test_a_tuning_file_is_refused_at_its_first_bad_line_before_any_digest(world, monkeypatch, capsys):
    """tuning.queries was digested whole (with the other verdict inputs) before its reader refused
    it: 58 s for a 20 GB file with a bad first line (found by the breaker)."""
    monkeypatch.chdir(world)
    config = world / ".retrieval-gate.yml"
    original = config.read_text()
    tuning = world / "eval" / "tuning.txt"
    with open(tuning, "wb") as handle:
        handle.write(BAD_FIRST_LINE)
    os.truncate(tuning, SPARSE_SIZE)
    config.write_text(original + "tuning:\n  queries: eval/tuning.txt\n  params: [bm25.k1]\n")
    try:
        capsys.readouterr()
        with _Watchdog(8 * READ_BUDGET) as watchdog:
            code = main(["run", "--out", "rep-tuning"])
            read = _rchar() - watchdog.start
    finally:
        config.write_text(original)
        tuning.unlink()
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip() and not line.startswith("[")]
    assert not watchdog.fired and read <= READ_BUDGET, read >> 20
    assert code == 2 and len(err) == 1 and "tuning.txt" in err[0], err
