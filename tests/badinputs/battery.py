"""A battery of bad inputs for the ``retrieval-gate`` CLI, and the code that runs one case.

The project's rule: bad input gets ONE line on stderr (``retrieval-gate: error: ...``)
that names the file (and ``file:LINE`` when the problem is at a line), and exit code
2 - never a traceback (exit 4), a hang, unbounded memory, a silently dropped line or
silent acceptance.

How a case is built: every case starts from the same known-good *world* (a folder
with runs, qrels, queries, corpus, strata, a gate config, a retrieval config...;
see :func:`world`), optionally runs ``setup`` commands in it (e.g. ``archive`` so
that ``run``/``replay`` have a baseline), then writes its ``files`` over the world
(exactly one thing broken per case) and runs ``argv`` with the installed CLI.

Everything is deterministic: the world and the mutations come from fixed seeds.
Cases built from ``/work/shared/realdata`` (``tests/shared_data.REALDATA``) are
marked ``needs_realdata`` and skipped when that folder is absent.

Public API (used by ``benchmarks/bench_bad_inputs.py`` and ``test_battery.py``)::

    cases = build_cases()                 # list[Case], names unique
    outcome = execute(case, scratch_dir)  # runs one case as a subprocess
    outcome.ok, outcome.problem, outcome.kind
"""

from __future__ import annotations

import gzip
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
from tests.shared_data import REALDATA  # noqa: E402
from tests.support import bounded as cpu_bounded  # noqa: E402

CLI = Path(sys.executable).parent / "retrieval-gate"
if not CLI.exists():
    CLI = REPO / ".venv" / "bin" / "retrieval-gate"
# RETRIEVAL_GATE_CLI="python -m gate" (with PYTHONPATH=<a snapshot>) runs the battery against other code.
CLI_ARGV = tuple(os.environ["RETRIEVAL_GATE_CLI"].split()) if os.environ.get("RETRIEVAL_GATE_CLI") else (str(CLI),)
RUNNER = REPO / "tests" / "support" / "runners" / "overlap_runner.py"
RUNNER_COMMAND = (f"{sys.executable} {RUNNER} --config {{config}} --queries {{queries}} --corpus {{corpus}} "
                  "--output {run} --seed {seed}")
DL19 = REALDATA / "runs" / "trec-dl-2019-passage"

MB = 1 << 20
LS = "\u2028".encode()  # U+2028 LINE SEPARATOR: a line end to str.splitlines(), not to the gate
ADDRESS_SPACE_CAP = 4 << 30  # RLIMIT_AS of every child: a blow-up is a recorded failure, not an OOM
# A case's timeout counts CPU seconds (its process group's), not the wall clock: a loaded machine
# (other processes on the cores) does not turn a slow case into a hang. A case blocked without
# computing (a FIFO never opened for writing) is a hang after WALL_FACTOR times its timeout of wall
# time. Without /proc (not Linux) the wall clock alone decides, at the timeout.
DEFAULT_TIMEOUT = 60.0
HANG_TIMEOUT = 20.0  # cases that can only hang (FIFO, /dev/zero) need not wait a full minute
WALL_FACTOR = cpu_bounded.WALL_FACTOR
DEFAULT_RSS_MB = 1024  # "bounded memory" for inputs of at most a few tens of MB
HEAD_SHA = "a" * 40
PR = 7


# =========================================================================== file contents


class Content:
    def write(self, path: Path, root: Path) -> None:  # pragma: no cover - interface
        raise NotImplementedError


@dataclass(frozen=True)
class Data(Content):
    data: bytes

    def write(self, path: Path, root: Path) -> None:
        _clear(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.data)


@dataclass(frozen=True)
class Special(Content):
    """``dir``, ``fifo``, ``missing``, ``devzero`` / ``devnull`` / ``dirlink`` (symlinks), ``devnode``
    (/dev/null itself)."""

    kind: str

    def write(self, path: Path, root: Path) -> None:
        _clear(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if self.kind == "dir":
            path.mkdir()
            (path / "inside.txt").write_text("x\n")
        elif self.kind == "fifo":
            os.mkfifo(path)
        elif self.kind == "devzero":
            path.symlink_to("/dev/zero")
        elif self.kind == "devnull":
            path.symlink_to("/dev/null")
        elif self.kind == "dirlink":
            target = root / "_a_directory"
            target.mkdir(exist_ok=True)
            (target / "inside.txt").write_text("x\n")
            path.symlink_to(target)
        elif self.kind != "missing":
            raise ValueError(self.kind)


@dataclass(frozen=True)
class Lazy(Content):
    """Bytes computed at write time (large or real-data files): ``fn(*args)``."""

    fn: Callable[..., bytes]
    args: tuple = ()

    def write(self, path: Path, root: Path) -> None:
        Data(self.fn(*self.args)).write(path, root)


@dataclass(frozen=True)
class Bomb(Content):
    """A gzip file of ``members`` identical members, each ``member_mb`` MiB of ``byte``: tiny on disk."""

    byte: bytes
    member_mb: int = 64
    members: int = 64  # 64 x 64 MiB = 4 GiB decompressed

    def write(self, path: Path, root: Path) -> None:
        member = gzip.compress(self.byte * (self.member_mb * MB), compresslevel=9, mtime=0)
        _clear(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as handle:
            for _ in range(self.members):
                handle.write(member)


@dataclass(frozen=True)
class Patch(Content):
    """Edit a file the world or the setup made (``path`` may be a glob matching one file)."""

    old: bytes
    new: bytes

    def write(self, path: Path, root: Path) -> None:
        data = path.read_bytes()
        if self.old not in data:
            raise RuntimeError(f"battery bug: {self.old!r} not in {path}")
        path.write_bytes(data.replace(self.old, self.new, 1))


@dataclass(frozen=True)
class Cut(Content):
    """Keep the first ``keep`` bytes (negative: drop that many from the end) of an existing file."""

    keep: int

    def write(self, path: Path, root: Path) -> None:
        data = path.read_bytes()
        path.write_bytes(data[: self.keep])


@dataclass(frozen=True)
class CopyTree(Content):
    source: str  # absolute folder

    def write(self, path: Path, root: Path) -> None:
        _clear(path)
        shutil.copytree(self.source, path)


def _clear(path: Path) -> None:
    if path.is_symlink() or path.is_file() or (path.exists() and not path.is_dir()):
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


# =========================================================================== cases


@dataclass(frozen=True)
class Expect:
    """What a case must do.

    ``exits``: allowed exit codes (normally ``(2,)``). On exit 2 the stderr must hold
    exactly one line besides ``[retrieval-gate] ...`` progress lines, starting with
    ``retrieval-gate: error:``, containing ``names`` (the file, as the command saw it:
    a relative path is a suffix of the absolute one the gate may print) and, when
    ``line`` is set, ``names:line:``. ``contains`` is an extra substring of that line.
    ``stdout_has``: on exit 0 the stdout must contain it (controls: the good world
    really was read). ``max_rss_mb``: peak RSS budget of the command.
    """

    exits: tuple[int, ...] = (2,)
    names: str | None = None
    line: int | None = None
    contains: str | None = None
    stdout_has: str | None = None
    max_rss_mb: int = DEFAULT_RSS_MB
    # Acceptance is right only if it equals reading the good world: the same exit code and stdout as the
    # same command on the unbroken world (controls; CR-only files a reader may legitimately support).
    same_as_good: bool = False


@dataclass(frozen=True)
class Case:
    name: str
    category: str
    argv: tuple[str, ...]
    expect: Expect
    files: tuple[tuple[str, Content], ...] = ()
    setup: tuple[tuple[str, ...], ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    timeout: float = DEFAULT_TIMEOUT
    needs_realdata: bool = False
    needs_github: bool = False
    note: str = ""

    def command(self) -> str:
        import shlex

        return "retrieval-gate " + " ".join(shlex.quote(a) for a in self.argv)


# =========================================================================== the good world

Q = [f"q{i}" for i in range(1, 13)]  # 12 golden queries
STRATA = {q: ("nav" if i % 2 else "tail") for i, q in enumerate(Q)}
JUDGED = 8  # judged documents per query; runs rank them first (top 10 mostly judged)


def _vocab(rng: random.Random, n: int) -> list[str]:
    letters = "bcdfghjklmnprstvz"
    vowels = "aeiou"
    words = set()
    while len(words) < n:
        words.add("".join(rng.choice(letters) + rng.choice(vowels) for _ in range(3)))
    return sorted(words)


def _build_world() -> dict[str, bytes]:
    rng = random.Random(20240914)
    vocab = _vocab(rng, 400)
    texts = {q: " ".join(rng.sample(vocab, 5)) for q in Q}
    docs = [f"d{i:03d}" for i in range(60)]
    judged = {q: rng.sample(docs, JUDGED) for q in Q}
    labels = {q: {d: (3 if j == 0 else rng.randint(0, 2)) for j, d in enumerate(judged[q])} for q in Q}
    files: dict[str, bytes] = {}

    def put(path: str, text: str) -> None:
        files[path] = text.encode("utf-8")

    put("eval/qrels.txt", "".join(f"{q} 0 {d} {labels[q][d]}\n" for q in Q for d in judged[q]))
    put("eval/qrels3.txt", "".join(f"{q} {d} {labels[q][d]}\n" for q in Q for d in judged[q]))
    put("eval/queries.tsv", "".join(f"{q}\t{texts[q]}\n" for q in Q))
    put("eval/queries.jsonl", "".join(json.dumps({"query_id": q, "text": texts[q], "stratum": STRATA[q]}) + "\n"
                                      for q in Q))
    put("eval/strata.tsv", "".join(f"{q}\t{STRATA[q]}\n" for q in Q))
    corpus = {d: " ".join(rng.choices(vocab, k=30)) for d in docs}
    put("corpus.jsonl", "".join(json.dumps({"id": d, "title": "", "text": corpus[d]}) + "\n" for d in docs))
    put("corpus.tsv", "".join(f"{d}\t{corpus[d]}\n" for d in docs))
    put("beir/corpus.jsonl", "".join(json.dumps({"_id": d, "title": "", "text": corpus[d]}) + "\n" for d in docs))
    put("beir/queries.jsonl", "".join(json.dumps({"_id": q, "text": texts[q], "metadata": {}}) + "\n" for q in Q))
    put("beir/qrels/test.tsv", "query-id\tcorpus-id\tscore\n"
        + "".join(f"{q}\t{d}\t{labels[q][d]}\n" for q in Q for d in judged[q]))

    def run(tag: str, ideal: bool) -> str:
        out = []
        for q in Q:
            ranked = list(judged[q])
            rng.shuffle(ranked)
            if ideal:  # the candidate ranks the judged documents best first: no query loses
                ranked.sort(key=lambda d: -labels[q][d])
            ranked += [d for d in docs if d not in judged[q]][:7]
            out += [f"{q} Q0 {d} {r} {20 - r:.4f} {tag}\n" for r, d in enumerate(ranked, 1)]
        return "".join(out)

    state = rng.getstate()
    put("runs/base.run", run("base", False))
    rng.setstate(state)
    # Better rankings (most queries move up, none down): the good world passes the gate; identical
    # runs would be "too few movers" on 12 queries, inconclusive by design.
    put("runs/cand.run", run("cand", True))
    files["runs/base.run.gz"] = gzip.compress(files["runs/base.run"], mtime=0)
    put("shares.yml", "nav: 0.6\ntail: 0.4\n")
    put("shares-block.yml", "strata:\n  shares: {nav: 0.6, tail: 0.4}\n  assignments: eval/strata.tsv\n"
        "  guarded: [nav]\n")
    put("retrieval/config.yml", "embedding:\n  model: small\n  dim: 64\nbm25:\n  k1: 0.9\n  b: 0.4\n")
    put("retrieval/cmd.yml", f"copy_run: {json.dumps('runs/base.run')}\n")
    put(".retrieval-gate.yml", GATE_CONFIG)
    put("gate-cmd.yml", GATE_CMD_CONFIG)
    return files


# Line numbers of GATE_CONFIG matter: mutations name them (see CONFIG_LINES).
GATE_CONFIG = """\
suite: battery
golden:
  queries: eval/queries.jsonl
  qrels: eval/qrels.txt
  rel: 1
corpus: corpus.jsonl
metric: nDCG@10
also: [RR@10, R@100, Judged@10]
retrieval:
  config: retrieval/config.yml
runner:
  type: run-file
  candidate_run: runs/cand.run
  timeout: 60
statistics:
  samples: 200
  seed: 7
  ci_method: percentile
strata:
  shares: {nav: 0.6, tail: 0.4}
  guarded: [nav]
leakage:
  threshold: 0.85
  min_tokens: 3
noise:
  repeats: 3
  base_seed: 1000
attribution:
  max_factors: 3
judged:
  k: 10
policy:
  max_regression: 0.02
  max_leaked: 0
  max_unjudged: 0.3
  max_judged_drop: 0.1
  min_effect: 0.02
  max_damaged_traffic: 0.2
"""
CONFIG_LINES = {line.strip().split(":")[0]: n for n, line in enumerate(GATE_CONFIG.splitlines(), 1)}

GATE_CMD_CONFIG = f"""\
suite: battery-cmd
golden:
  queries: eval/queries.tsv
  qrels: eval/qrels.txt
corpus: corpus.jsonl
retrieval:
  config: retrieval/cmd.yml
runner:
  type: command
  command: "{RUNNER_COMMAND}"
  timeout: 30
statistics:
  samples: 200
noise:
  repeats: 2
"""

_WORLD: dict[str, bytes] | None = None


def world() -> dict[str, bytes]:
    global _WORLD
    if _WORLD is None:
        _WORLD = _build_world()
    return _WORLD


def good(path: str) -> bytes:
    return world()[path]


# =========================================================================== byte helpers


def lines_of(data: bytes) -> list[bytes]:
    return data.split(b"\n")[:-1]


def join(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)


def at_line(data: bytes, n: int, edit: Callable[[bytes], bytes]) -> bytes:
    lines = lines_of(data)
    lines[n - 1] = edit(lines[n - 1])
    return join(lines)


def insert_mid(raw: bytes) -> Callable[[bytes], bytes]:
    return lambda line: line[: len(line) // 2] + raw + line[len(line) // 2 :]


def set_field(i: int, value: bytes, sep: bytes | None) -> Callable[[bytes], bytes]:
    def edit(line: bytes) -> bytes:
        parts = line.split(sep)
        parts[i] = value
        return (sep or b" ").join(parts)

    return edit


def drop_field(sep: bytes | None) -> Callable[[bytes], bytes]:
    return lambda line: (sep or b" ").join(line.split(sep)[:-1])


def add_field(sep: bytes | None) -> Callable[[bytes], bytes]:
    return lambda line: line + (sep or b" ") + b"extra"


def json_set(key: str, raw: bytes) -> Callable[[bytes], bytes]:
    """Replace the value of ``key`` in a JSON line with raw (possibly invalid) JSON text."""

    def edit(line: bytes) -> bytes:
        obj = json.loads(line)
        placeholder = "@@RAW@@"
        obj[key] = placeholder
        return json.dumps(obj).encode().replace(json.dumps(placeholder).encode(), raw)

    return edit


def json_del(key: str) -> Callable[[bytes], bytes]:
    def edit(line: bytes) -> bytes:
        obj = json.loads(line)
        obj.pop(key)
        return json.dumps(obj).encode()

    return edit


def gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


DOC_FIELD = {"run": 2, "qrels4": 2, "qrels3": 1, "beirqrels": 1}


def big_line(data: bytes, n: int, size: int, where: str | int, sep: bytes | None) -> bytes:
    """Line ``n`` with field ``where`` (an index; ``'id'`` is 0) grown by ``size`` bytes, or its last field
    replaced by ``size // 4`` tokens (``where='text'``)."""
    lines = lines_of(data)
    parts = lines[n - 1].split(sep)
    if where == "text":
        parts[-1] = b" ".join([b"tok"] * (size // 4))
    else:
        i = 0 if where == "id" else int(where)
        parts[i] = parts[i] + b"x" * size
    lines[n - 1] = (sep or b" ").join(parts)
    return join(lines)


def many_rows_with_big_doc(size: int) -> bytes:
    """A valid-looking run of 5,000 rows whose line 3 has a ``size``-byte docno."""
    rows = [f"q{1 + i // 400} Q0 d{i} {i % 400 + 1} {1000 - i % 400}.0 t".encode() for i in range(5000)]
    rows[2] = rows[2].replace(b" d2 ", b" d2" + b"x" * size + b" ")
    return join(rows)


def deep_json(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


# =========================================================================== formats and contexts
#
# A *context* is a file of the world used by one command. Generic mutations are
# applied to the file of every context; heavy ones (bombs, FIFOs, 10 MB lines) only
# to the primary context of each format.

COMPARE = ("compare", "--baseline", "runs/base.run", "--candidate", "runs/cand.run", "--qrels", "eval/qrels.txt",
           "--samples", "200")
ARCHIVE_SETUP = (("archive", "--run", "runs/base.run"),)
RUN_SETUP = ARCHIVE_SETUP + (("run", "--out", "rep"),)


def compare_with(**swap: str) -> tuple[str, ...]:
    argv = list(COMPARE)
    for key, value in swap.items():
        flag = "--" + key.replace("_", "-")
        if flag in argv:
            argv[argv.index(flag) + 1] = value
        else:
            argv += [flag, value]
    return tuple(argv)


@dataclass(frozen=True)
class Context:
    name: str
    fmt: str  # run | qrels4 | qrels3 | beirqrels | qtsv | qjsonl | cjsonl | ctsv | stsv
    path: str  # the world file that is broken
    argv: tuple[str, ...]
    good_exit: int = 0
    setup: tuple[tuple[str, ...], ...] = ()
    primary: bool = False
    names: str | None = None  # what the error must name (default: path)
    runner_product: bool = False  # the file stands for a runner's output (run --candidate-run)


# Mutations after which there is nothing to compare (no rows, or no judged query).
NOTHING_TO_COMPARE = ("empty", "comments-only", "no-shared-query", "empty-after-comments")


CONTEXTS = [
    Context("run-compare-baseline", "run", "runs/base.run", COMPARE, primary=True),
    Context("run-compare-candidate", "run", "runs/cand.run", COMPARE),
    Context("run-lift", "run", "runs/base.run",
            ("lift", "--baseline", "runs/base.run", "--candidate", "runs/cand.run", "--qrels", "eval/qrels.txt",
             "--out", "liftout")),
    Context("run-noise-from-runs", "run", "runs/cand.run",
            ("noise", "--from-runs", "runs/base.run", "runs/cand.run", "--qrels", "eval/qrels.txt", "--out", "n.json")),
    Context("run-factorial", "run", "runs/cand.run",
            ("factorial", "--factor", "m", "--cell", "m=old=runs/base.run", "--cell", "m=new=runs/cand.run",
             "--qrels", "eval/qrels.txt", "--samples", "200")),
    Context("run-archive", "run", "runs/base.run", ("archive", "--run", "runs/base.run")),
    Context("run-gate-candidate", "run", "runs/cand.run", ("run", "--candidate-run", "runs/cand.run"),
            setup=ARCHIVE_SETUP, runner_product=True),
    Context("qrels4-compare", "qrels4", "eval/qrels.txt", COMPARE, primary=True),
    Context("qrels3-compare", "qrels3", "eval/qrels3.txt", compare_with(qrels="eval/qrels3.txt")),
    Context("beirqrels-compare", "beirqrels", "beir/qrels/test.tsv", compare_with(qrels="beir"), primary=True),
    Context("qrels4-lift", "qrels4", "eval/qrels.txt",
            ("lift", "--baseline", "runs/base.run", "--candidate", "runs/cand.run", "--qrels", "eval/qrels.txt",
             "--out", "liftout")),
    Context("qrels4-gate-run", "qrels4", "eval/qrels.txt", ("run",), setup=ARCHIVE_SETUP),
    Context("qtsv-compare", "qtsv", "eval/queries.tsv", compare_with(queries="eval/queries.tsv"), primary=True),
    Context("qtsv-leakcheck", "qtsv", "eval/queries.tsv",
            ("leakcheck", "--queries", "eval/queries.tsv", "--corpus", "corpus.jsonl")),
    Context("qjsonl-compare", "qjsonl", "eval/queries.jsonl", compare_with(queries="eval/queries.jsonl"), primary=True),
    Context("qjsonl-gate-run", "qjsonl", "eval/queries.jsonl", ("run",), setup=ARCHIVE_SETUP),
    Context("beirqueries-compare", "qjsonl", "beir/queries.jsonl", compare_with(qrels="beir", queries="beir")),
    Context("cjsonl-leakcheck", "cjsonl", "corpus.jsonl",
            ("leakcheck", "--queries", "eval/queries.tsv", "--corpus", "corpus.jsonl"), primary=True),
    Context("ctsv-leakcheck", "ctsv", "corpus.tsv",
            ("leakcheck", "--queries", "eval/queries.tsv", "--corpus", "corpus.tsv"), primary=True),
    Context("beircorpus-leakcheck", "cjsonl", "beir/corpus.jsonl",
            ("leakcheck", "--queries", "eval/queries.tsv", "--corpus", "beir")),
    Context("cjsonl-gate-run", "cjsonl", "corpus.jsonl", ("run",), setup=ARCHIVE_SETUP),
    Context("stsv-compare-strata", "stsv", "eval/strata.tsv",
            compare_with(queries="eval/queries.tsv", strata="shares-block.yml"), primary=True),
]

# Field layout per format: separator, index of the id field, line 3 is always a data line.
SEP = {"run": None, "qrels4": None, "qrels3": None, "beirqrels": b"\t", "qtsv": b"\t", "ctsv": b"\t", "stsv": b"\t",
       "qjsonl": None, "cjsonl": None}
JSONL = ("qjsonl", "cjsonl")
DUPLICATES_ARE_ERRORS = ("run", "qrels4", "qrels3", "beirqrels", "qtsv", "qjsonl", "cjsonl")


def _generic(ctx: Context) -> list[tuple[str, str, Content, Expect, str]]:
    """(mutation, category, content, expectation, note) applied to a context's file."""
    data = good(ctx.path)
    names = ctx.names or ctx.path
    sep = SEP[ctx.fmt]
    out: list[tuple[str, str, Content, Expect, str]] = []

    def bad(mut: str, cat: str, content: Content, line: int | None = None, note: str = "", **kw) -> None:
        if ctx.runner_product and mut in NOTHING_TO_COMPARE:
            # What a runner produced, not what the user wrote: a gate run that gets nothing
            # usable is inconclusive (exit 3) with the reason on stdout, as for a runner failure.
            out.append((mut, cat, content, Expect(exits=(3,), stdout_has="the candidate run failed"),
                        "the issue: nothing to compare in a gate run is inconclusive, exit 3"))
            return
        out.append((mut, cat, content, Expect(names=names, line=line, **kw), note))

    def control(mut: str, cat: str, content: Content, note: str = "") -> None:
        out.append((mut, cat, content, Expect(exits=(ctx.good_exit,), same_as_good=True), note))

    L = 3 if ctx.fmt != "beirqrels" else 4  # a data line (BEIR's line 1 is the header)
    bad("empty", "empty file", Data(b""))
    bad("comments-only", "empty file", Data(b"# nothing here\n\n   \n"))
    if ctx.fmt in ("beirqrels",):
        bad("header-only", "header-only file", Data(b"query-id\tcorpus-id\tscore\n"))
    if ctx.fmt == "ctsv":
        bad("header-only", "header-only file", Data(b"id\ttext\n"))
    if ctx.fmt == "stsv":
        bad("header-only", "header-only file", Data(b"qid\tstratum\n"))
    bad("cr-only-line-ends", "CR-only line endings", Data(data.replace(b"\n", b"\r")), line=None, same_as_good=True,
        note="lines end at \\n (documented): a CR-only file is one line; reading it as one row/record drops the rest")
    control("crlf-line-ends", "line endings (accepted)", Data(data.replace(b"\n", b"\r\n")))
    control("bom-at-start", "byte-order mark (accepted at start)", Data(b"\xef\xbb\xbf" + data))
    bad("nul-byte", "NUL bytes", Data(at_line(data, L, insert_mid(b"\x00"))), line=L)
    bad("bom-mid-file", "byte-order mark in the middle", Data(at_line(data, L, lambda s: b"\xef\xbb\xbf" + s)), line=L,
        note="a BOM before line 3's id silently creates a different id")
    bad("invalid-utf8", "invalid UTF-8", Data(at_line(data, L, insert_mid(b"\xff"))), line=L)
    bad("cesu-surrogate-utf8", "invalid UTF-8", Data(at_line(data, L, insert_mid(b"\xed\xa0\x80"))), line=L)
    bad("overlong-utf8", "invalid UTF-8", Data(at_line(data, L, insert_mid(b"\xc0\xaf"))), line=L)
    bad("gzip-truncated", "truncated gzip", Data(gz(data)[: len(gz(data)) // 2]))
    bad("gzip-garbage-appended", "gzip with garbage appended", Data(gz(data) + b"this is not gzip\n"))
    bad("missing", "missing path", Special("missing"))
    # Documented: a corpus (the gate's, and leakcheck's) may be "a folder of files".
    if ctx.name == "cjsonl-gate-run" or ctx.name.endswith("-leakcheck"):
        out.append(("directory", "input is a directory", Special("dir"), Expect(exits=(0, 1, 2, 3), names=names),
                    "a folder corpus is documented"))
        out.append(("symlink-to-dir", "input is a symlink to a directory", Special("dirlink"),
                    Expect(exits=(0, 1, 2, 3), names=names), "a folder corpus is documented"))
    else:
        bad("directory", "input is a directory", Special("dir"))
        bad("symlink-to-dir", "input is a symlink to a directory", Special("dirlink"))
    bad("symlink-dev-null", "input is a device", Special("devnull"))
    if ctx.fmt in DUPLICATES_ARE_ERRORS:
        dup_note = ("leakcheck reads the corpus with check_duplicates=False (corpus.py allows it for huge corpora); "
                    "the README says a repeated chunk id is an error") if ctx.argv[0] == "leakcheck" else ""
        bad("duplicate-line", "duplicates", Data(at_line(data, L, lambda s: lines_of(data)[L - 2])), line=L,
            note=dup_note)
    if ctx.fmt in JSONL:
        key = "text"
        bad("missing-text-key", "wrong column count", Data(at_line(data, L, json_del(key))), line=L)
        bad("truncated-json", "wrong column count", Data(at_line(data, L, lambda s: s[: len(s) // 2])), line=L)
    else:
        bad("field-dropped", "wrong column count", Data(at_line(data, L, drop_field(sep))), line=L)
        if ctx.fmt in ("qrels4", "qrels3", "beirqrels", "stsv"):
            bad("field-added", "wrong column count", Data(at_line(data, L, add_field(sep))), line=L)
    if ctx.fmt in ("run", "qrels4", "qrels3", "beirqrels", "qjsonl", "cjsonl"):
        cut = data[: len(data) - len(lines_of(data)[-1]) // 2 - 1]
        bad("last-line-cut", "truncated file", Data(cut), line=len(lines_of(data)),
            note="a file cut mid-line (no final newline) must not pass as complete")
    if ctx.primary:
        bad("fifo", "input is a FIFO", Special("fifo"), note="opening a FIFO with no writer blocks forever")
        bad("symlink-dev-zero", "input is a symlink to /dev/zero", Special("devzero"))
        bad("gzip-bomb-x", "gzip bomb", Bomb(b"x"), note="4 GiB of 'x', no newline, in a 4 MiB file")
        bad("gzip-bomb-newlines", "gzip bomb", Bomb(b"\n"), note="4 GiB of blank lines in a 4 MiB file")
        bad("gzip-bomb-zeros", "gzip bomb", Bomb(b"\0"))
    return out


def _format_specific(ctx: Context) -> list[tuple[str, str, Content, Expect, str]]:
    data = good(ctx.path)
    names = ctx.names or ctx.path
    sep = SEP[ctx.fmt]
    out: list[tuple[str, str, Content, Expect, str]] = []
    L = 3 if ctx.fmt != "beirqrels" else 4

    def bad(mut, cat, content, line=L, note="", **kw):
        if ctx.runner_product and mut in NOTHING_TO_COMPARE:  # as in _generic
            out.append((mut, cat, content, Expect(exits=(3,), stdout_has="the candidate run failed"),
                        "the issue: nothing to compare in a gate run is inconclusive, exit 3"))
            return
        kw.setdefault("names", names)
        out.append((mut, cat, content, Expect(line=line, **kw), note))

    def bounded(mut, cat, content, note="", rss=DEFAULT_RSS_MB):
        """Either a clean exit-2 rejection naming file:line or acceptance, in bounded memory and time."""
        out.append((mut, cat, content, Expect(exits=(0, 1, 2, 3), names=names, line=L, max_rss_mb=rss), note))

    def control(mut, cat, content, note=""):
        out.append((mut, cat, content, Expect(exits=(ctx.good_exit,), same_as_good=True), note))

    edit = lambda fn: Data(at_line(data, L, fn))  # noqa: E731
    if ctx.fmt == "run":
        for value in (b"nan", b"NaN", b"inf", b"-inf", b"Infinity", b"1e400", b"-1e400", b"9" * 5000):
            bad(f"score-{value[:12].decode()}", "non-finite score", edit(set_field(4, value, sep)))
        for value in (b"1_0", b"0x10", "\u0663".encode(), b"1.2.3", b"--1", b"1e", b"."):
            bad(f"score-junk-{value.hex()}", "score not a number", edit(set_field(4, value, sep)))
        out.append(("score-1e-400-underflow", "score (accepted)", edit(set_field(4, b"1e-400", sep)),
                    Expect(exits=(0,)), "underflows to 0.0: a finite number"))
        for value in (b"1.0", b"x", b"1e3"):
            bad(f"rank-{value.decode()}", "rank not an integer", edit(set_field(3, value, sep)))
        for value in (b"Q1", b"QO", b"00"):
            bad(f"col2-{value.decode()}", "column 2 not Q0", edit(set_field(1, value, sep)))
        bounded("rank-5000-digits", "integers of thousands of digits", edit(set_field(3, b"9" * 5000, sep)),
                note="rank is ignored; accepting is fine, crashing or blowing memory is not")
        bad("control-char-0x01", "control character", edit(insert_mid(b"\x01")))
        bad("empty-after-comments", "empty run", Data(b"# a header comment only\n"), line=None)
        shifted = b"".join(b"other" + ln[1:] + b"\n" for ln in lines_of(data))
        bad("no-shared-query", "runs and qrels share no query", Data(shifted), line=None,
            note="every row's query is unknown to the qrels: every query would silently score 0")
    elif ctx.fmt in ("qrels4", "qrels3", "beirqrels"):
        i = {"qrels4": 3, "qrels3": 2, "beirqrels": 2}[ctx.fmt]
        for value in (b"1.5", b"1.0", b"1e0", b"nan", b"inf", "\u0663".encode(), b"0x1", b"", b"one"):
            bad(f"label-{value.hex() or 'empty'}", "label not an integer", edit(set_field(i, value, sep)))
        for value in (b"99999999999999999999", b"-99999999999999999999", b"9223372036854775808"):
            bad(f"label-{value[:4].decode()}-beyond-int64", "labels beyond int64", edit(set_field(i, value, sep)))
        bad("label-5000-digits", "integers of thousands of digits", edit(set_field(i, b"9" * 5000, sep)))
        control("label-plus-sign", "label (accepted)", edit(set_field(i, b"+1", sep)))
        if ctx.fmt != "beirqrels":
            shifted = b"".join(b"other" + ln[1:] + b"\n" for ln in lines_of(data))
            bad("no-shared-query", "runs and qrels share no query", Data(shifted), line=None, names=None,
                note="the qrels judge no query of the runs: the comparison measures nothing")
    elif ctx.fmt == "qtsv":
        bad("no-tab", "wrong column count", edit(lambda s: s.replace(b"\t", b" ")))
        bad("empty-text", "wrong column count", edit(lambda s: s.split(b"\t")[0] + b"\t  "))
        bad("empty-id", "wrong column count", edit(lambda s: b"\t" + s.split(b"\t")[1]))
        bad("u2028-line-ends", "Unicode line separators", Data(data.rstrip(b"\n").replace(b"\n", LS) + b"\n"), line=1,
            note="one line to the gate, many to str.splitlines(): a runner would read other queries")
    elif ctx.fmt == "qjsonl":
        idk = "query_id" if "eval/" in ctx.path else "_id"
        for label, raw in (("float", b"1.5"), ("bool", b"true"), ("null", b"null"), ("list", b"[1]"),
                           ("object", b"{}"), ("lone-surrogate", b'"\\ud800"'), ("5000-digits", b"9" * 5000),
                           ("nan", b"NaN"), ("deep-100000", deep_json(100_000))):
            bad(f"id-{label}", "bad id", edit(json_set(idk, raw)))
        for label, raw in (("null", b"null"), ("number", b"5"), ("empty", b'""'), ("lone-surrogate", b'"\\ud800 x"'),
                           ("lone-low-surrogate", b'"a \\udfff b"'), ("deep-100000", deep_json(100_000)),
                           ("infinity", b"Infinity"), ("1e400", b"1e400")):
            bad(f"text-{label}", "bad text", edit(json_set("text", raw)))
        if idk == "query_id":
            bad("stratum-number", "bad stratum", edit(json_set("stratum", b"5")))
            bad("stratum-lone-surrogate", "lone surrogates in JSON", edit(json_set("stratum", b'"\\udc80"')))
        bad("line-is-array", "not an object", edit(lambda s: b"[" + s + b"]"))
        bad("line-deep-100000", "JSON nested 100,000 deep", edit(lambda s: deep_json(100_000)))
        bad("line-nan", "not an object", edit(lambda s: b"NaN"))
        bad("duplicate-json-key", "silent acceptance", edit(lambda s: s[:-1] + b', "text": "overridden"}'),
            note="a second 'text' key silently replaces the first (json.loads keeps the last)")
    elif ctx.fmt == "cjsonl":
        idk = "id" if ctx.path == "corpus.jsonl" else "_id"
        for label, raw in (("bool", b"true"), ("list", b"[1]"), ("lone-surrogate", b'"\\ud800"'),
                           ("5000-digits", b"9" * 5000), ("deep-100000", deep_json(100_000)), ("empty", b'""')):
            bad(f"id-{label}", "bad id", edit(json_set(idk, raw)))
        for label, raw in (("null", b"null"), ("number", b"5"), ("lone-surrogate", b'"x \\ud800 y"'),
                           ("deep-100000", deep_json(100_000))):
            bad(f"text-{label}", "bad text", edit(json_set("text", raw)))
        bad("title-number", "bad text", edit(json_set("title", b"5")))
        bad("line-deep-100000", "JSON nested 100,000 deep", edit(lambda s: deep_json(100_000)))
    elif ctx.fmt == "ctsv":
        bad("empty-id", "wrong column count", edit(lambda s: b"\t" + s.split(b"\t")[1]))
        bad("nel-in-text", "Unicode line separators", Data(at_line(data, L, insert_mid("\x85".encode()))), line=L)
    elif ctx.fmt == "stsv":
        # line 3 assigns line 2's query (q2, 'nav') to the other stratum
        bad("conflicting-assignment", "duplicates", edit(lambda s: lines_of(data)[L - 2].split(b"\t")[0] + b"\ttail"))
        bad("unknown-stratum", "silent acceptance", edit(set_field(1, b"navigational", sep)), line=None,
            names="shares-block.yml", note="a stratum with queries but no share")
    if ctx.primary and ctx.fmt != "stsv":  # a huge id in strata.tsv is just an unknown query
        kind = DOC_FIELD.get(ctx.fmt, "text")
        if ctx.fmt in JSONL:
            longtext = Lazy(_jsonl_long_text, (ctx.path, L, 10 * MB))
            million = Lazy(_jsonl_long_text, (ctx.path, L, 4 * 1_000_000))
        else:
            longtext = Lazy(big_line, (data, L, 10 * MB, kind, sep))
            million = Lazy(big_line, (data, L, 4 * 1_000_000, "text", sep))
        bounded("10mb-line", "10 MB line", longtext)
        if ctx.fmt in ("qtsv", "qjsonl"):
            bounded("million-token-query", "a query of a million tokens", million)
        if ctx.fmt not in JSONL:
            bounded("1mb-id", "1 MB docno / qid", Lazy(big_line, (data, L, MB, "id", sep)))
        if ctx.fmt == "run":
            bounded("1mb-docno", "1 MB docno / qid", Lazy(big_line, (data, L, MB, 2, sep)))
            bounded("1mb-docno-in-5000-rows", "1 MB docno / qid", Lazy(many_rows_with_big_doc, (MB,)),
                    note="docnos are padded to the longest one: 5,000 rows x 1 MiB")
    return [o for o in out if o is not None]


def _jsonl_long_text(path: str, n: int, size: int) -> bytes:
    return at_line(good(path), n, json_set("text", b'"' + b" ".join([b"tok"] * (size // 4)) + b'"'))


# Field-level mutations every context of a format gets; the primary context gets them all.
SECONDARY_MUTATIONS = ("score-nan", "score-1e400", "label-312e35", "label-9999-beyond-int64",
                       "label-5000-digits", "id-lone-surrogate", "text-lone-surrogate", "text-deep-100000",
                       "id-5000-digits", "no-shared-query", "empty-text", "no-tab")


def _context_cases() -> list[Case]:
    cases = []
    for ctx in CONTEXTS:
        specific = [m for m in _format_specific(ctx) if ctx.primary or m[0] in SECONDARY_MUTATIONS]
        for mut, cat, content, expect, note in _generic(ctx) + specific:
            timeout = HANG_TIMEOUT if mut in ("fifo", "symlink-dev-zero") else DEFAULT_TIMEOUT
            cases.append(Case(f"{ctx.name}/{mut}", cat, ctx.argv, expect, files=((ctx.path, content),),
                              setup=ctx.setup, timeout=timeout, note=note))
    return cases


# =========================================================================== YAML: strata shares


LAUGHS = b"a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + b"".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join('*' + chr(97 + i) for _ in range(9))}]\n".encode() for i in range(9))
DEEP_YAML = b"x: " + b"[" * 3000 + b"]" * 3000 + b"\n"
DEEP_BLOCK_YAML = b"x:\n  " + b"- " * 3000 + b"1\n"  # 3,000 nested block sequences on one line


def _yaml_generic(path: str, data: bytes, argv: tuple[str, ...], setup=(), good_exit=0, names: str | None = None,
                  primary: bool = True) -> list[tuple[str, str, Content, Expect, str]]:
    """Mutations any YAML input must survive: the file is ``path``, used by ``argv``."""
    names = names or path
    out = []

    def bad(mut, cat, content, line=None, note="", exits=(2,)):
        out.append((mut, cat, content, Expect(exits=exits, names=names, line=line), note))

    bad("empty", "empty file", Data(b""))
    bad("comments-only", "empty file", Data(b"# nothing\n"))
    bad("a-list", "wrong shape", Data(b"- 1\n- 2\n"))
    bad("a-scalar", "wrong shape", Data(b"just text\n"))
    bad("invalid-yaml", "invalid YAML", Data(data + b"bad: [unclosed\n"))
    bad("tab-indent", "invalid YAML", Data(data + b"x:\n\t- 1\n"))
    bad("billion-laughs", "YAML aliases (billion laughs)", Data(data + LAUGHS),
        note="9^9 references if expanded")
    bad("recursive-alias", "YAML aliases (billion laughs)", Data(data + b"loop: &loop [*loop]\n"))
    bad("complex-key", "YAML complex keys", Data(data + b"? [a, b]\n: 1\n"), line=len(lines_of(data)) + 1)
    bad("deep-3000-flow", "YAML nested 3,000 deep", Data(data + DEEP_YAML))
    bad("deep-3000-block", "YAML nested 3,000 deep", Data(data + DEEP_BLOCK_YAML))
    bad("nul-byte", "NUL bytes", Data(data + b"x: a\x00b\n"))
    bad("bom-mid-file", "byte-order mark in the middle", Data(data + b"\xef\xbb\xbfx: 1\n"))
    bad("invalid-utf8", "invalid UTF-8", Data(data + b"x: \xff\n"))
    bad("duplicate-key", "duplicates", Data(data + data.split(b"\n")[0] + b"\n"))
    bad("int-5000-digits", "integers of thousands of digits", Data(data + b"x: " + b"9" * 5000 + b"\n"))
    bad("missing", "missing path", Special("missing"))
    bad("directory", "input is a directory", Special("dir"))
    bad("symlink-dev-null", "input is a device", Special("devnull"))
    if primary:
        bad("fifo", "input is a FIFO", Special("fifo"))
        bad("symlink-dev-zero", "input is a symlink to /dev/zero", Special("devzero"))
        bad("10mb-line", "10 MB line", Data(data + b"x: " + b"y" * (10 * MB) + b"\n"))
    return out


def _strata_cases() -> list[Case]:
    argv = compare_with(queries="eval/queries.jsonl", strata="shares.yml")
    data = good("shares.yml")
    cases = []
    rows = _yaml_generic("shares.yml", data, argv)
    rows = [r for r in rows if r[0] not in ("invalid-yaml-extra",)]

    def share(mut, text, line, cat, note=""):
        rows.append((mut, cat, Data(text.encode()), Expect(names="shares.yml", line=line), note))

    for value in (".nan", ".inf", "-.inf", "-0.1", "1.5", "abc", "[0.6]", "~", "true", "1e400", "60%"):
        share(f"share-{value}", f"nav: {value}\ntail: 0.4\n", 1, "bad share values")
    share("sum-0.9", "nav: 0.5\ntail: 0.4\n", 1, "bad share values")
    share("missing-stratum", "nav: 1.0\n", None, "silent acceptance", "tail has queries but no share")
    share("extra-stratum", "nav: 0.5\ntail: 0.4\nghost: 0.1\n", 3, "silent acceptance", "a share with no queries")
    share("complex-share-key", "? [nav, tail]\n: 1.0\n", 1, "YAML complex keys")
    share("block-unknown-key", "strata:\n  shares: {nav: 0.6, tail: 0.4}\n  gaurded: [nav]\n", 3, "unknown keys")
    share("block-guarded-unknown", "strata:\n  shares: {nav: 0.6, tail: 0.4}\n  guarded: [navv]\n", 3, "unknown keys")
    share("block-assignments-missing", "strata:\n  shares: {nav: 0.6, tail: 0.4}\n  assignments: eval/none.tsv\n",
          None, "config values naming missing files")
    share("shares-alias-laughs", "x: &x 0.5\nnav: *x\ntail: 0.4\n", 1, "bad share values")
    for mut, cat, content, expect, note in rows:
        timeout = HANG_TIMEOUT if mut in ("fifo", "symlink-dev-zero") else DEFAULT_TIMEOUT
        if mut == "block-assignments-missing":
            expect = Expect(names="eval/none.tsv")
        cases.append(Case(f"strata-shares/{mut}", cat, argv, expect, files=(("shares.yml", content),),
                          timeout=timeout, note=note))
    return cases


# =========================================================================== YAML: the gate config


def _config_with(key: str, value: str) -> bytes:
    """GATE_CONFIG with ``key`` (a leaf key name, unique in GATE_CONFIG) set to ``value``."""
    out = []
    for line in GATE_CONFIG.splitlines():
        stripped = line.strip()
        if stripped.split(":")[0] == key:
            indent = line[: len(line) - len(line.lstrip())]
            line = f"{indent}{key}: {value}"
        out.append(line)
    return ("\n".join(out) + "\n").encode()


# (leaf key, values that must be refused). Every value is a YAML scalar or flow node.
CONFIG_BAD_VALUES = {
    "max_regression": [".nan", ".inf", "-.inf", "-0.5", "1e400", "abc"],
    "max_unjudged": [".nan", "-0.1", "2", ".inf"],
    "max_judged_drop": [".nan", "-0.1", ".inf"],
    "min_effect": [".nan", "-1", ".inf"],
    "max_damaged_traffic": [".nan", "-0.2", "1.5", ".inf"],
    "max_leaked": ["-1", "0.5", ".inf", "99999999999999999999"],
    "timeout": [".nan", "-1", "0", ".inf", "-.inf"],
    "samples": ["0", "-5", "1.5", "99999999999999999999", ".nan"],
    "seed": ["-1", ".nan", "1.5", "'7'"],
    "threshold": [".nan", "-0.1", "1.5", ".inf"],
    "min_tokens": ["0", "-3", ".nan"],
    "repeats": ["0", "-2", ".nan"],
    "base_seed": ["-1", ".nan", "99999999999999999999999999999999999999999"],
    "max_factors": ["0", "-1", "99999999999999999999"],
    "k": ["0", "-10", "99999999999999999999", ".nan"],
    "rel": [".nan", "1.5", "99999999999999999999", "-99999999999999999999"],
    "ci_method": ["bootstrap", "[percentile]"],
    "metric": ["nDCG@0", "nDCG@99999999999999999999", "nDGC@10", "nDCG@-1", "'nDCG@10 @10'", "''", "5",
               "RR(rel=x)@10", "P@1e3", "nDCG@nan"],
    "also": ["[nDCG@0]", "[AP@99999999999999999999]", "[bogus]", "5"],
    "suite": ["[a, b]", "''"],
    "shares": ["{nav: .nan, tail: 0.4}", "{nav: -0.6, tail: 1.6}", "{nav: .inf, tail: 0.4}", "{nav: 0.6}",
               "{nav: 0.6, tail: 0.4, ghost: 0.0}", "[0.6, 0.4]"],
    "guarded": ["[navv]", "[{a: 1}]"],
}
# values a reasonable reader may accept: the case passes on a clean 2 or on the good world's exit
CONFIG_DEBATABLE = {("max_unjudged", "2"), ("max_damaged_traffic", "1.5"), ("rel", "99999999999999999999"),
                    ("rel", "-99999999999999999999"), ("max_leaked", "99999999999999999999"),
                    ("base_seed", "99999999999999999999999999999999999999999"),
                    ("shares", "{nav: 0.6, tail: 0.4, ghost: 0.0}")}
# Keys whose line is where the error belongs (strata shares line for shares).
GATE_RUN_EXIT = 0  # the good world passes the gate


def _gate_config_cases() -> list[Case]:
    cases = []
    argv = ("run",)
    for key, values in CONFIG_BAD_VALUES.items():
        line = CONFIG_LINES[key]
        for value in values:
            exits = (2, GATE_RUN_EXIT) if (key, value) in CONFIG_DEBATABLE else (2,)
            names = ".retrieval-gate.yml"
            cases.append(Case(f"gate-config/{key}={value}", "config values (.nan/.inf/negative/absurd)", argv,
                              Expect(exits=exits, names=names, line=line),
                              files=((".retrieval-gate.yml", Data(_config_with(key, value))),), setup=ARCHIVE_SETUP,
                              note="debatable: may be accepted" if exits != (2,) else ""))
    missing = {
        "qrels": "eval/none.txt", "queries": "eval/none.jsonl", "corpus": "none.jsonl",
        "config": "retrieval/none.yml", "candidate_run": "runs/none.run",
    }
    for key, value in missing.items():
        cases.append(Case(f"gate-config/missing-file-{key}", "config values naming missing files", argv,
                          Expect(names=value), files=((".retrieval-gate.yml", Data(_config_with(key, value))),),
                          setup=ARCHIVE_SETUP))
    extra = {
        "assignments": ("strata:\n", "strata:\n  assignments: eval/none.tsv\n", "eval/none.tsv"),
        "noise-file": ("noise:\n", "noise:\n  file: eval/none-noise.json\n", "eval/none-noise.json"),
        "tuning-file": ("policy:\n", "tuning:\n  queries: eval/none-tuning.txt\n  params: [bm25.k1]\npolicy:\n",
                        "eval/none-tuning.txt"),
    }
    for name, (old, new, missing_path) in extra.items():
        # noise.file names where `retrieval-gate noise` will write the band; a baseline is archived
        # before it is measured, so a missing one is "absent" (in the report) and a warning, not an error.
        expect = (Expect(exits=(GATE_RUN_EXIT,), stdout_has="warning: noise.file eval/none-noise.json is not there")
                  if name == "noise-file"
                  else Expect(names=missing_path))
        cases.append(Case(f"gate-config/missing-file-{name}", "config values naming missing files", argv,
                          expect,
                          files=((".retrieval-gate.yml", Data(GATE_CONFIG.replace(old, new, 1).encode())),),
                          setup=ARCHIVE_SETUP))
    irds = {
        "queries-unknown-id": ("queries", "irds:no-such-dataset/at-all"),
        "qrels-not-cached": ("qrels", "irds:cranfield"),
        "qrels-msmarco-not-cached": ("qrels", "irds:msmarco-passage/dev/small"),
        "corpus-not-cached": ("corpus", "irds:vaswani"),
        "queries-empty-id": ("queries", "'irds:'"),
        "qrels-bad-suffix": ("qrels", "'irds:cranfield#nope'"),
    }
    for name, (key, value) in irds.items():
        cases.append(Case(f"gate-config/irds-{name}", "irds ids unknown or not cached", argv,
                          Expect(names=value.strip("'").split("#")[0]),
                          files=((".retrieval-gate.yml", Data(_config_with(key, value))),), setup=ARCHIVE_SETUP,
                          timeout=30))
    structural = {
        "unknown-top-key": (GATE_CONFIG + "polcy:\n  max_regression: 0.01\n", len(GATE_CONFIG.splitlines()) + 1),
        "unknown-policy-key": (GATE_CONFIG + "  max_regresion: 0.01\n", len(GATE_CONFIG.splitlines()) + 1),
        "complex-top-key": (GATE_CONFIG + "? [a, b]\n: 1\n", len(GATE_CONFIG.splitlines()) + 1),
        "complex-policy-key": (GATE_CONFIG + "  ? [a, b]\n  : 1\n", len(GATE_CONFIG.splitlines()) + 1),
        "duplicate-key": (GATE_CONFIG + "suite: again\n", len(GATE_CONFIG.splitlines()) + 1),
        "runner-options-laughs": (GATE_CONFIG.replace("runner:\n", "runner:\n  options:\n" + "".join(
            "    " + ln + "\n" for ln in LAUGHS.decode().splitlines()), 1), None),
        "tuning-queries-laughs": (GATE_CONFIG + LAUGHS.decode().replace("a: &a", "lol: &a", 1)
                                  + "tuning:\n  queries: *j\n  params: [bm25.k1]\n", None),
        "recursive-alias": (GATE_CONFIG + "tuning:\n  queries: &r [*r]\n  params: [bm25.k1]\n", None),
        "attribution-factors-deep": (GATE_CONFIG.replace("  max_factors: 3\n", "  max_factors: 3\n  factors: "
                                     + "[" * 3000 + "]" * 3000 + "\n", 1), None),
        "deep-3000-flow": (GATE_CONFIG + "suite2: " + "[" * 3000 + "]" * 3000 + "\n", None),
        "deep-3000-block": (GATE_CONFIG + DEEP_BLOCK_YAML.decode(), None),
        "policy-is-list": (GATE_CONFIG.replace("policy:\n", "policy: [1]\nignored:\n", 1), None),
        "runner-command-unbalanced-quote": (GATE_CONFIG.replace("  type: run-file\n", "  type: command\n  command: "
                                            "\"python 'unclosed {config}\"\n", 1), None),
        "runner-command-unknown-placeholder": (GATE_CONFIG.replace("  type: run-file\n", "  type: command\n  command: "
                                               "\"python x.py {nope} {run}\"\n", 1), None),
        "factors-not-paths": (GATE_CONFIG.replace("  max_factors: 3\n", "  max_factors: 3\n  factors: {m: 5}\n", 1),
                              None),
        "tuning-queries-number": (GATE_CONFIG + "tuning:\n  queries: 5\n  params: [bm25.k1]\n", None),
        "env-passthrough-map": (GATE_CONFIG.replace("  timeout: 60\n", "  timeout: 60\n  env_passthrough: {a: 1}\n", 1),
                                None),
    }
    for name, (text, line) in structural.items():
        cases.append(Case(f"gate-config/{name}", "config structure", argv,
                          Expect(names=".retrieval-gate.yml", line=line),
                          files=((".retrieval-gate.yml", Data(text.encode())),), setup=ARCHIVE_SETUP))
    # What YAML readers read differently, and runner placeholders str.format would run: refused while
    # the config is read, before any baseline is needed (no archive first: the battery's time stays flat).
    command = CONFIG_LINES["type"] + 1
    readings = {
        "max-regression-underscore": (_config_with("max_regression", "0_5").decode(), CONFIG_LINES["max_regression"]),
        "max-regression-null": (_config_with("max_regression", "").decode(), CONFIG_LINES["max_regression"]),
        "attribution-null": (GATE_CONFIG.replace("attribution:\n  max_factors: 3\n", "attribution:\n", 1),
                             CONFIG_LINES["attribution"]),
        "merge-key-without-alias": (GATE_CONFIG.replace("policy:\n", "policy:\n  <<: {max_leaked: 5}\n", 1),
                                    CONFIG_LINES["policy"] + 1),
        "yaml-1.1-directive": ("%YAML 1.1\n---\n" + GATE_CONFIG, 1),
        "runner-command-format-spec": (GATE_CONFIG.replace("  type: run-file\n", "  type: command\n  command: "
                                       "\"python x.py {run:>1000000000}\"\n", 1), command),
        "runner-command-attribute": (GATE_CONFIG.replace("  type: run-file\n", "  type: command\n  command: "
                                     "\"python x.py {config.__class__.__mro__} {run}\"\n", 1), command),
    }
    for name, (text, line) in readings.items():
        cases.append(Case(f"gate-config/{name}", "config values YAML readers read differently", argv,
                          Expect(names=".retrieval-gate.yml", line=line),
                          files=((".retrieval-gate.yml", Data(text.encode())),)))
    for mut, cat, content, expect, note in _yaml_generic(".retrieval-gate.yml", good(".retrieval-gate.yml"), argv):
        if mut in ("duplicate-key", "complex-key"):
            continue  # covered above with the right line
        timeout = HANG_TIMEOUT if mut in ("fifo", "symlink-dev-zero") else DEFAULT_TIMEOUT
        cases.append(Case(f"gate-config/yaml-{mut}", cat, argv, expect, files=((".retrieval-gate.yml", content),),
                          setup=ARCHIVE_SETUP, timeout=timeout, note=note))
    # the same broken config through every command that reads one
    broken = Data(_config_with("max_regression", ".nan"))
    laughs = Data((GATE_CONFIG + LAUGHS.decode().replace("a: &a", "lol: &a", 1)
                   + "tuning:\n  queries: *j\n  params: [bm25.k1]\n").encode())
    for cmd in (("plan",), ("replay",), ("archive", "--run", "runs/base.run"), ("archive",), ("archive", "--gc"),
                ("noise", "--repeats", "2")):
        label = "-".join(cmd).replace("--", "")
        cases.append(Case(f"gate-config-{label}/max_regression=.nan", "config values (.nan/.inf/negative/absurd)",
                          cmd, Expect(names=".retrieval-gate.yml", line=CONFIG_LINES["max_regression"]),
                          files=((".retrieval-gate.yml", broken),)))
        cases.append(Case(f"gate-config-{label}/billion-laughs", "YAML aliases (billion laughs)", cmd,
                          Expect(names=".retrieval-gate.yml"), files=((".retrieval-gate.yml", laughs),)))
        for special in ("missing", "directory", "fifo", "symlink-dev-zero"):
            kind = {"directory": "dir", "symlink-dev-zero": "devzero"}.get(special, special)
            cases.append(Case(f"gate-config-{label}/{special}", f"input is a {special}", cmd + ("--config", "cfg.yml"),
                              Expect(names="cfg.yml"), files=(("cfg.yml", Special(kind)),),
                              timeout=HANG_TIMEOUT if special in ("fifo", "symlink-dev-zero") else DEFAULT_TIMEOUT))
    return cases


# =========================================================================== the retrieval config


def _retrieval_config_cases() -> list[Case]:
    cases = []
    path = "retrieval/config.yml"
    data = good(path)
    for mut, cat, content, expect, note in _yaml_generic(path, data, ("run",), names=path):
        if mut in ("empty", "comments-only", "duplicate-key", "int-5000-digits"):
            continue  # handled below with their own expectation
        timeout = HANG_TIMEOUT if mut in ("fifo", "symlink-dev-zero") else DEFAULT_TIMEOUT
        cases.append(Case(f"retrieval-config/{mut}", cat, ("run",), expect, files=((path, content),),
                          setup=ARCHIVE_SETUP, timeout=timeout, note=note))
    opaque = Expect(exits=(0, 1, 2, 3), names=path)  # the gate does not interpret values: it must not crash
    for label, text in (("nan-value", b"bm25:\n  k1: .nan\n"), ("inf-value", b"bm25:\n  k1: .inf\n"),
                        ("timestamp-value", b"built: 2001-12-14t21:59:43.10-05:00\n"),
                        ("binary-value", b"blob: !!binary aGVsbG8=\n"), ("set-value", b"s: !!set {a, b}\n"),
                        ("int-5000-digits", b"bm25:\n  k1: " + b"9" * 5000 + b"\n"),
                        ("duplicate-key", b"bm25:\n  k1: 0.9\n  k1: 1.2\n"), ("null-key", b"~: 1\n"),
                        ("int-key", b"1: a\n2: b\n"), ("python-tag", b"x: !!python/object:os.system [ls]\n")):
        cases.append(Case(f"retrieval-config/opaque-{label}", "retrieval config values", ("run",), opaque,
                          files=((path, Data(data + text)),), setup=ARCHIVE_SETUP,
                          note="values the gate only fingerprints and diffs: any verdict or a clean 2, never a crash"))
    for label, text in (("empty", b""), ("comments-only", b"# nothing\n")):
        cases.append(Case(f"retrieval-config/{label}", "empty file", ("run",), Expect(exits=(0, 1, 2, 3), names=path),
                          files=((path, Data(text)),), setup=ARCHIVE_SETUP,
                          note="an empty retrieval config is read as {} (documented in code): any verdict, no crash"))
    jpath = "retrieval/config.json"
    cfg = GATE_CONFIG.replace("config: retrieval/config.yml", "config: retrieval/config.json").encode()
    for label, text in (("invalid", b'{"a": '), ("nan", b'{"bm25": {"k1": NaN}}'), ("deep-100000", deep_json(100_000)),
                        ("lone-surrogate", b'{"model": "\\ud800"}'),
                        ("int-5000-digits", b'{"k": ' + b"9" * 5000 + b"}"),
                        ("list", b"[1, 2]"), ("invalid-utf8", b'{"a": "\xff"}'), ("bom", b'\xef\xbb\xbf{"a": 1}'),
                        ("duplicate-key", b'{"a": 1, "a": 2}')):
        # A leading BOM is ignored by every reader (documented): '{"a": 1}' is then a valid config.
        exits = (0, 1, 2, 3) if label in ("nan", "duplicate-key", "bom") else (2,)
        cases.append(Case(f"retrieval-config-json/{label}", "retrieval config values", ("run",),
                          Expect(exits=exits, names=jpath),
                          files=((jpath, Data(text)), (".retrieval-gate.yml", Data(cfg))), setup=ARCHIVE_SETUP))
    return cases


# =========================================================================== manifest


MANIFEST = ".retrieval-gate/baseline/manifest.yml"


def _manifest_cases() -> list[Case]:
    cases = []
    for cmd in (("replay",), ("run",)):
        label = cmd[0]
        rows = [
            ("empty", "empty file", MANIFEST, Data(b""), MANIFEST),
            ("a-list", "wrong shape", MANIFEST, Data(b"- 1\n"), MANIFEST),
            ("invalid-yaml", "invalid YAML", MANIFEST, Patch(b"suite: battery", b"suite: [unclosed"), MANIFEST),
            ("schema-9", "wrong version", MANIFEST, Patch(b"schema_version: '1.0'", b"schema_version: '9.0'"),
             MANIFEST),
            ("schema-number", "wrong version", MANIFEST, Patch(b"schema_version: '1.0'", b"schema_version: 1.0"),
             MANIFEST),
            ("run-is-number", "wrong shape", MANIFEST, Patch(b"\nrun:\n", b"\nrun: 5\nxrun:\n"), MANIFEST),
            ("queries-count-text", "wrong shape", MANIFEST, Patch(b"  count: 12\n  id: eval/queries",
                                                                   b"  count: twelve\n  id: eval/queries"), MANIFEST),
            ("queries-count-5000-digits", "integers of thousands of digits", MANIFEST,
             Patch(b"  count: 12\n  id: eval/queries", b"  count: " + b"9" * 5000 + b"\n  id: eval/queries"), MANIFEST),
            ("run-file-escapes", "wrong shape", MANIFEST, Patch(b"  file: run-", b"  file: ../../../etc/passwd#run-"),
             MANIFEST),
            ("billion-laughs", "YAML aliases (billion laughs)", MANIFEST,
             Patch(b"suite: battery", b"suite: battery\n" + LAUGHS.replace(b"a: &a", b"lol: &a")), MANIFEST),
            ("deep-3000", "YAML nested 3,000 deep", MANIFEST, Patch(b"suite: battery", b"suite: battery\n" + DEEP_YAML),
             MANIFEST),
            ("nul-byte", "NUL bytes", MANIFEST, Patch(b"suite: battery", b"suite: batt\x00ery"), MANIFEST),
            ("invalid-utf8", "invalid UTF-8", MANIFEST, Patch(b"suite: battery", b"suite: batt\xffery"), MANIFEST),
            ("directory", "input is a directory", MANIFEST, Special("dir"), MANIFEST),
            ("fifo", "input is a FIFO", MANIFEST, Special("fifo"), MANIFEST),
            ("symlink-dev-zero", "input is a symlink to /dev/zero", MANIFEST, Special("devzero"), MANIFEST),
            ("per-query-tampered", "manifest data files", ".retrieval-gate/baseline/per-query-*.json",
             Patch(b"{", b"{ "), ".retrieval-gate/baseline/per-query-"),
            ("per-query-missing", "manifest data files", ".retrieval-gate/baseline/per-query-*.json",
             Special("missing"), ".retrieval-gate/baseline/per-query-"),
            ("run-gz-truncated", "truncated gzip", ".retrieval-gate/baseline/run-*.trec.gz", Cut(-40),
             ".retrieval-gate/baseline/run-"),
            ("run-gz-missing", "manifest data files", ".retrieval-gate/baseline/run-*.trec.gz", Special("missing"),
             ".retrieval-gate/baseline/run-"),
            ("config-json-tampered", "manifest data files", ".retrieval-gate/baseline/config-*.json",
             Patch(b"small", b"large"), ".retrieval-gate/baseline/config-"),
            ("config-json-invalid", "manifest data files", ".retrieval-gate/baseline/config-*.json",
             Data(b"{not json"), ".retrieval-gate/baseline/config-"),
            ("config-json-deep", "JSON nested 100,000 deep", ".retrieval-gate/baseline/config-*.json",
             Data(deep_json(100_000)), ".retrieval-gate/baseline/config-"),
            ("config-json-is-dir", "input is a directory", ".retrieval-gate/baseline/config-*.json",
             Special("dir"), ".retrieval-gate/baseline/config-"),
        ]
        for name, cat, path, content, names in rows:
            timeout = HANG_TIMEOUT if name in ("fifo", "symlink-dev-zero") else DEFAULT_TIMEOUT
            cases.append(Case(f"manifest-{label}/{name}", cat, cmd, Expect(names=names), files=((path, content),),
                              setup=ARCHIVE_SETUP, timeout=timeout))
    # A noise band file named by the config.
    noise_cfg = Data(GATE_CONFIG.replace("noise:\n", "noise:\n  file: noise.json\n", 1).encode())
    for name, body in (("invalid", b"{"), ("list", b"[]"), ("nan", b'{"metric": "nDCG@10", "overall": {"sd": NaN}}'),
                       ("deep", deep_json(100_000)), ("empty", b""), ("lone-surrogate", b'{"metric": "\\ud800"}'),
                       ("invalid-utf8", b'{"metric": "\xff"}')):
        cases.append(Case(f"noise-file/{name}", "noise band file", ("run",), Expect(names="noise.json"),
                          files=((".retrieval-gate.yml", noise_cfg), ("noise.json", Data(body))), setup=ARCHIVE_SETUP))
    return cases


# =========================================================================== report.json for `comment`


def _comment_cases() -> list[Case]:
    argv = ("comment", "--report", "rep/report.json", "--pr", str(PR), "--head-sha", HEAD_SHA)
    path = "rep/report.json"
    # The event the Action records beside the verdict (`run` judges none): the comment job posts
    # only a report of the PR and head it is started for, so each case's report has it first.
    event = (path, Patch(b'"suite": "battery"', b'"event": {"name": "pull_request", "pr": ' + str(PR).encode()
                         + b', "head_sha": "' + HEAD_SHA.encode() + b'", "base_sha": null}, "suite": "battery"'))
    cases = [Case("comment/good-report", "control", argv, Expect(exits=(0,), stdout_has="comment:"),
                  files=(event,), setup=RUN_SETUP, needs_github=True)]
    rows = [
        ("empty", "empty file", Data(b"")),
        ("invalid-json", "invalid JSON", Data(b'{"verdict": ')),
        ("a-list", "wrong shape", Data(b"[1, 2]")),
        ("a-string", "wrong shape", Data(b'"report"')),
        ("null", "wrong shape", Data(b"null")),
        ("deep-100000", "JSON nested 100,000 deep", Data(deep_json(100_000))),
        ("deep-100000-inside", "JSON nested 100,000 deep", Data(b'{"verdict": ' + deep_json(100_000) + b"}")),
        ("lone-surrogate", "lone surrogates in JSON", Patch(b'"suite": "battery"', b'"suite": "\\ud800"')),
        ("lone-surrogate-headline", "lone surrogates in JSON", Patch(b'"metric": "nDCG@10"', b'"metric": "\\udfff"')),
        ("nan-delta", "floats like 1e400 / nan / inf", Patch(b'"delta": {', b'"delta": {"mean": NaN, "x": ')),
        ("inf-delta", "floats like 1e400 / nan / inf", Patch(b'"delta": {', b'"delta": {"mean": 1e400, "x": ')),
        ("int-5000-digits", "integers of thousands of digits",
         Patch(b'"query_count": ', b'"query_count": 9' + b"9" * 5000 + b', "x": ')),
        ("verdict-string", "wrong shape", Patch(b'"verdict": {', b'"verdict": "pass", "x": {')),
        ("per-query-dict", "wrong shape", Patch(b'"per_query": [', b'"per_query": {}, "x": [')),
        ("delta-list", "wrong shape", Patch(b'"delta": {', b'"delta": [], "x": {')),
        ("invalid-utf8", "invalid UTF-8", Patch(b'"suite": "battery"', b'"suite": "batt\xffery"')),
        ("bom", "byte-order mark", Data(b"\xef\xbb\xbf{}")),
        ("nul-byte", "NUL bytes", Patch(b'"suite": "battery"', b'"suite": "batt\x00ery"')),
        ("missing", "missing path", Special("missing")),
        ("directory", "input is a directory", Special("dir")),
        ("fifo", "input is a FIFO", Special("fifo")),
        ("symlink-dev-zero", "input is a symlink to /dev/zero", Special("devzero")),
        ("symlink-dev-null", "input is a device", Special("devnull")),
        ("gzip-bomb", "gzip bomb", Bomb(b"x")),
        ("10mb-string", "10 MB line", Patch(b'"suite": "battery"', b'"suite": "' + b"b" * (10 * MB) + b'"')),
    ]
    for name, cat, content in rows:
        timeout = HANG_TIMEOUT if name in ("fifo", "symlink-dev-zero") else DEFAULT_TIMEOUT
        expect = Expect(names=path)
        if name == "10mb-string":
            expect = Expect(exits=(0, 2), names=path)  # a long suite name may be cut and posted, or refused
        cases.append(Case(f"comment/{name}", cat, argv, expect, files=(event, (path, content)), setup=RUN_SETUP,
                          needs_github=True, timeout=timeout))
    return cases


# =========================================================================== command-line options


def _option_cases() -> list[Case]:
    cases = []

    def opt(name, argv, expect=None, cat="command-line options", setup=(), note="", **kw):
        cases.append(Case(f"options/{name}", cat, tuple(argv), expect or Expect(), setup=setup, note=note, **kw))

    for metric in ("nDCG@0", "nDCG@-1", "nDCG@99999999999999999999", "nDCG@1e3", "nDGC@10", "", " ", "nDCG@10@10",
                   "RR(rel=x)@10", "RR(rel=-1)@10", "RR(rel=99999999999999999999)@10", "Judged@0", "AP@0", "nDCG@nan",
                   "P@" + "9" * 5000, "nDCG@10\n", "nDCG@\u0661\u0660"):
        opt(f"compare-metric-{metric.encode().hex()[:24]}", compare_with(metric=metric),
            Expect(names=None, contains=None), cat="absurd measure cutoffs / wrong measure names")
    for also in ("nDCG@0", "AP@99999999999999999999", "bogus", ",,,RR@0"):
        opt(f"compare-also-{also.encode().hex()[:20]}", compare_with(also=also),
            cat="absurd measure cutoffs / wrong measure names")
    for rel in ("-5", "99999999999999999999", "nan", "1.5"):
        opt(f"compare-rel-{rel}", compare_with(rel=rel))
    for samples in ("0", "-1", "99999999999999999999", "1e4", "nan"):
        opt(f"compare-samples-{samples}", compare_with(samples=samples))
    for seed in ("-1", "nan", "1.5", "-99999999999999999999"):
        opt(f"compare-seed-{seed}", compare_with(seed=seed))
    opt("compare-ci-method-bogus", compare_with(ci_method="bogus"))
    opt("compare-strata-without-queries", compare_with(strata="shares.yml"))
    opt("compare-out-is-a-file", compare_with(out="runs/base.run"), Expect(names="runs/base.run"))
    opt("compare-out-under-dev-null", compare_with(out="/dev/null/x"), Expect(names="/dev/null"))
    opt("compare-out-under-a-file", compare_with(out="runs/base.run/sub"), Expect(names="runs/base.run"))
    opt("compare-qrels-irds-unknown", compare_with(qrels="irds:no-such/dataset"), Expect(names="irds:no-such/dataset"),
        cat="irds ids unknown or not cached", timeout=30)
    opt("compare-qrels-irds-empty", compare_with(qrels="irds:"), Expect(names="irds:"),
        cat="irds ids unknown or not cached")
    opt("compare-qrels-irds-not-cached", compare_with(qrels="irds:cranfield"), Expect(names="irds:cranfield"),
        cat="irds ids unknown or not cached", timeout=30)
    opt("compare-queries-irds-not-cached", compare_with(queries="irds:vaswani"), Expect(names="irds:vaswani"),
        cat="irds ids unknown or not cached", timeout=30)
    opt("compare-qrels-beir-missing-split", compare_with(qrels="beir/qrels"), Expect(names="beir/qrels"))
    opt("compare-qrels-empty-beir-folder", compare_with(qrels="emptydir"), Expect(names="emptydir"),
        files=(("emptydir", Special("dir")),))
    opt("compare-missing-required", ("compare", "--baseline", "runs/base.run"))
    opt("compare-unknown-option", COMPARE + ("--bogus",))
    opt("compare-same-file-twice", compare_with(candidate="runs/base.run"), Expect(exits=(0,)),
        cat="control", note="identical runs: [0, 0], p = 1, exit 0")
    for mode in ("bogus", "", "exact,,bogus"):
        opt(f"leakcheck-mode-{mode or 'empty'}", ("leakcheck", "--queries", "eval/queries.tsv", "--corpus",
                                                   "corpus.jsonl", "--mode", mode))
    for threshold in ("nan", "inf", "-1", "2", "-inf", "1e400"):
        opt(f"leakcheck-threshold-{threshold}", ("leakcheck", "--queries", "eval/queries.tsv", "--corpus",
                                                 "corpus.jsonl", "--threshold", threshold))
    for value in ("0", "-1", "99999999999999999999"):
        opt(f"leakcheck-min-tokens-{value}", ("leakcheck", "--queries", "eval/queries.tsv", "--corpus", "corpus.jsonl",
                                              "--min-tokens", value),
            Expect(exits=(2, 0)) if value.startswith("9") else None)
    lift = ("lift", "--baseline", "runs/base.run", "--candidate", "runs/cand.run", "--qrels", "eval/qrels.txt",
            "--out", "liftout")
    for flag in ("--k-rank", "--k-recall"):
        for value in ("0", "-1", "99999999999999999999", "nan"):
            opt(f"lift{flag}-{value}", lift + (flag, value))
    opt("lift-rel-99999999999999999999", lift + ("--rel", "99999999999999999999"))
    opt("lift-default-qrels-not-cached", ("lift", "--baseline", "runs/base.run", "--candidate", "runs/cand.run",
                                          "--out", "liftout"), Expect(), cat="irds ids unknown or not cached",
        timeout=30)
    opt("lift-out-is-a-file", lift[:-1] + ("runs/base.run",), Expect(names="runs/base.run"))
    fact = ("factorial", "--factor", "m", "--qrels", "eval/qrels.txt", "--samples", "200")
    for name, cells in (
        ("no-equals", ["runs/base.run", "m=new=runs/cand.run"]),
        ("missing-cell", ["m=old=runs/base.run"]),
        ("duplicate-cell", ["m=old=runs/base.run", "m=old=runs/cand.run", "m=new=runs/cand.run"]),
        ("unknown-level", ["m=old=runs/base.run", "m=mid=runs/cand.run"]),
        ("unknown-factor", ["x=old=runs/base.run", "x=new=runs/cand.run"]),
        ("empty-run-path", ["m=old=", "m=new=runs/cand.run"]),
        ("cell-run-missing", ["m=old=runs/none.run", "m=new=runs/cand.run"]),
        ("cell-run-is-dir", ["m=old=runs", "m=new=runs/cand.run"]),
    ):
        argv = list(fact)
        for cell in cells:
            argv += ["--cell", cell]
        exp = (Expect(names="runs/none.run") if name == "cell-run-missing"
               else Expect(names="runs") if name == "cell-run-is-dir" else Expect())
        opt(f"factorial-{name}", argv, exp)
    opt("factorial-factor-twice", ("factorial", "--factor", "m", "--factor", "m", "--cell", "m=old=runs/base.run",
                                   "--cell", "m=new=runs/cand.run", "--qrels", "eval/qrels.txt"))
    opt("factorial-empty-factor", ("factorial", "--factor", "", "--cell", "=old=runs/base.run", "--cell",
                                   "=new=runs/cand.run", "--qrels", "eval/qrels.txt"))
    for k in (5,):
        factors = [f"f{i}" for i in range(k)]
        argv = ["factorial"] + sum((["--factor", f] for f in factors), []) + ["--qrels", "eval/qrels.txt"]
        argv += ["--cell", ",".join(f"{f}=old" for f in factors) + "=runs/base.run"]
        opt(f"factorial-{k}-factors-one-cell", argv)
    noise = ("noise", "--from-runs")
    opt("noise-from-one-run", noise + ("runs/base.run", "--qrels", "eval/qrels.txt", "--out", "n.json"),
        note="a band from one run has no spread (sd of 1 value)")
    opt("noise-from-runs-without-qrels", noise + ("runs/base.run", "runs/cand.run"))
    opt("noise-from-runs-qrels-missing", noise + ("runs/base.run", "runs/cand.run", "--qrels", "eval/none.txt"),
        Expect(names="eval/none.txt"))
    opt("noise-from-runs-bad-metric", noise + ("runs/base.run", "runs/cand.run", "--qrels", "eval/qrels.txt",
                                               "--metric", "nDCG@0"),
        cat="absurd measure cutoffs / wrong measure names")
    opt("noise-out-is-dir", noise + ("runs/base.run", "runs/cand.run", "--qrels", "eval/qrels.txt", "--out", "runs"),
        Expect(names="runs"))
    for value in ("0", "-1", "1", "99999999999999999999"):
        opt(f"noise-repeats-{value}", ("noise", "--config", "gate-cmd.yml", "--repeats", value),
            note="--repeats 0 silently falls back to noise.repeats" if value == "0" else "", timeout=60)
    opt("noise-runs-dir-missing", ("noise", "--config", "gate-cmd.yml", "--repeats", "2", "--runs-dir", "nowhere"),
        Expect(names="nowhere"), cat="--runs-dir that does not exist")
    opt("archive-noise-repeats-negative", ("archive", "--run", "runs/base.run", "--noise-repeats", "-1"))
    opt("archive-run-missing", ("archive", "--run", "runs/none.run"), Expect(names="runs/none.run"))
    opt("archive-run-is-dir", ("archive", "--run", "runs"), Expect(names="runs"))
    cmd_setup = (("archive", "--config", "gate-cmd.yml"),)
    for cmd, setup in ((("archive",), ()), (("run",), cmd_setup), (("replay",), cmd_setup)):
        for label, where in (("missing", "nowhere"), ("is-file", "runs/base.run")):
            opt(f"{cmd[0]}-runs-dir-{label}", cmd + ("--config", "gate-cmd.yml", "--runs-dir", where),
                Expect(names=where), cat="--runs-dir that does not exist", setup=setup,
                note="a command runner is configured: a --runs-dir that is not a folder must not be silently ignored")
    opt("archive-run-file-no-run", ("archive",), Expect(names=None),
        note="run-file runner, no --run: nothing to archive")
    opt("plan-runs-dir-missing", ("plan", "--runs-dir", "nowhere"), Expect(exits=(0,)), cat="control",
        note="plan names where runs WILL be written: a missing folder is normal", setup=ARCHIVE_SETUP)
    opt("run-candidate-run-missing", ("run", "--candidate-run", "runs/none.run"), Expect(names="runs/none.run"),
        setup=ARCHIVE_SETUP)
    opt("run-candidate-run-dir", ("run", "--candidate-run", "runs"), Expect(names="runs"), setup=ARCHIVE_SETUP)
    opt("run-candidate-run-fifo", ("run", "--candidate-run", "runs/fifo.run"), Expect(names="runs/fifo.run"),
        setup=ARCHIVE_SETUP, files=(("runs/fifo.run", Special("fifo")),), timeout=HANG_TIMEOUT)
    opt("run-candidate-run-empty", ("run", "--candidate-run", "runs/empty.run"),
        Expect(exits=(3,), stdout_has="the candidate run failed"), cat="empty runs", setup=ARCHIVE_SETUP,
        files=(("runs/empty.run", Data(b"")),),
        note="a candidate run with nothing in it is a failed run: inconclusive, exit 3 (the issue's rule)")
    opt("run-out-is-a-file", ("run", "--out", "runs/base.run"), Expect(names="runs/base.run"), setup=ARCHIVE_SETUP)
    opt("run-no-manifest", ("run",), Expect(exits=(3,)), cat="control",
        note="documented: no baseline -> inconclusive, exit 3")
    opt("run-good", ("run",), Expect(exits=(GATE_RUN_EXIT,), stdout_has="pass"), cat="control", setup=ARCHIVE_SETUP)
    opt("run-base-ref-nonsense", ("run", "--base", "--not-a-ref;rm"), Expect(exits=(0, 2, 3)), setup=ARCHIVE_SETUP,
        note="not a git repository: the manifest decides, or a clean error")
    opt("run-config-missing", ("run", "--config", "nope.yml"), Expect(names="nope.yml"))
    for scale in ("nan", "-1", "0", "inf", "1e9"):
        opt(f"demo-scale-{scale}", ("demo", "--out", "demo-out", "--scale", scale), timeout=30)
    for repeats in ("-1", "0"):
        opt(f"demo-repeats-{repeats}", ("demo", "--out", "demo-out", "--repeats", repeats, "--scale", "0.05"),
            timeout=60)
    comment = ("comment", "--report", "rep/report.json", "--head-sha", HEAD_SHA)
    opt("comment-pr-0", comment + ("--pr", "0"), needs_github=True, setup=RUN_SETUP)
    opt("comment-pr-huge", comment + ("--pr", "99999999999999999999"), needs_github=True, setup=RUN_SETUP)
    opt("comment-pr-unknown", comment + ("--pr", "8"), Expect(exits=(0, 2)), needs_github=True, setup=RUN_SETUP,
        note="a PR the API does not know (404): a clean error or 'not commenting', never a traceback")
    opt("comment-head-sha-empty", ("comment", "--report", "rep/report.json", "--pr", str(PR), "--head-sha", ""),
        needs_github=True, setup=RUN_SETUP)
    opt("comment-no-token", comment + ("--pr", str(PR)), env=(("GITHUB_TOKEN", ""),))
    opt("no-command", (), Expect(), note="prints help to stdout: the rule wants one line on stderr")
    opt("unknown-command", ("frobnicate",))
    return cases


# =========================================================================== real data (spliced / flipped)


def _real_bytes(rel: str) -> bytes:
    path = REALDATA / rel
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def _real_mutation(rel: str, op: str, n: int, sep: bytes | None, field_index: int = 0) -> bytes:
    data = _real_bytes(rel)
    lines = lines_of(data)
    line = lines[n - 1]
    if op == "flip-ff":
        lines[n - 1] = line[:3] + b"\xff" + line[4:]
    elif op == "nul":
        lines[n - 1] = line[:3] + b"\x00" + line[4:]
    elif op == "bom":
        lines[n - 1] = b"\xef\xbb\xbf" + line
    elif op == "set-field":
        raise ValueError("use set-field:VALUE")
    elif op.startswith("set-field:"):
        lines[n - 1] = set_field(field_index, op.split(":", 1)[1].encode(), sep)(line)
    elif op == "drop-field":
        lines[n - 1] = drop_field(sep)(line)
    elif op == "duplicate":
        lines.insert(n, line)
    elif op == "splice-dup":  # a block of earlier lines spliced in again later (a bad merge of run shards)
        lines[n : n] = lines[n - 5 : n - 1]
    elif op == "no-tab":
        lines[n - 1] = line.replace(b"\t", b" ")
    elif op == "cut-json":
        lines[n - 1] = line[: len(line) // 2]
    elif op == "json-surrogate":
        lines[n - 1] = json_set("text", b'"\\ud800"')(line)
    elif op == "big-doc":
        lines[n - 1] = set_field(2, line.split(sep)[2] + b"x" * MB, sep)(line)
    elif op == "cr-only":
        return data.replace(b"\n", b"\r")
    else:
        raise ValueError(op)
    return join(lines)


def _real_gz_mutation(rel: str, op: str, n: int) -> bytes:
    raw = (REALDATA / rel).read_bytes()
    if op == "truncate":
        return raw[:n]
    if op == "garbage":
        return raw + b"garbage after the gzip member\n"
    if op == "flip":  # one byte of the deflate stream flipped: a CRC or data error
        return raw[:n] + bytes([raw[n] ^ 0xFF]) + raw[n + 1 :]
    raise ValueError(op)


def _real_cases() -> list[Case]:
    rng = random.Random(1911)
    cases: list[Case] = []
    base = "runs/trec-dl-2019-passage/official_nist/input.bm25base_p.gz"
    cand = str(DL19 / "official_nist" / "input.p_bert.gz")
    qrels = str(DL19 / "qrels" / "qrels.dl19-passage.txt")
    run_lines = 200_000
    argv_run = ("compare", "--baseline", "base.run", "--candidate", cand, "--qrels", qrels, "--samples", "200")

    def add(name, cat, argv, expect, files, **kw):
        cases.append(Case(f"realdata/{name}", cat, tuple(argv), expect, files=tuple(files), needs_realdata=True, **kw))

    ops = [("flip-ff", "invalid UTF-8", None), ("nul", "NUL bytes", None),
           ("bom", "byte-order mark in the middle", None),
           ("set-field:nan", "non-finite score", 4), ("set-field:1e400", "non-finite score", 4),
           ("set-field:Q1", "column 2 not Q0", 1), ("drop-field", "wrong column count", None),
           ("duplicate", "duplicates", None), ("splice-dup", "duplicates", None)]
    for op, cat, fi in ops:
        for _ in range(4):
            n = rng.randrange(10, run_lines - 10)
            expected = n + 1 if op == "duplicate" else n + 1 if op == "splice-dup" else n
            add(f"dl19-run-{op}-line{n}", cat, argv_run, Expect(names="base.run", line=expected),
                [("base.run", Lazy(_real_mutation, (base, op, n, None, fi or 0)))])
    add("dl19-run-cr-only", "CR-only line endings", argv_run, Expect(names="base.run"),
        [("base.run", Lazy(_real_mutation, (base, "cr-only", 1, None)))],
        note="200,000 lines become one line of 1.2 million fields: one row of query 11096 survives")
    n = rng.randrange(10, run_lines - 10)
    add(f"dl19-run-1mb-docno-line{n}", "1 MB docno / qid", argv_run,
        Expect(exits=(0, 2), names="base.run", line=n, max_rss_mb=2048),
        [("base.run", Lazy(_real_mutation, (base, "big-doc", n, None)))],
        note="a real 200,000-row run with one 1 MiB docno: accept in bounded memory or refuse at the line")
    size = (REALDATA / base).stat().st_size if (REALDATA / base).exists() else 2_000_000
    argv_gz = tuple("base.run.gz" if a == "base.run" else a for a in argv_run)
    for _ in range(4):
        cut = rng.randrange(1000, size - 1000)
        add(f"dl19-run-gz-truncated-at-{cut}", "truncated gzip", argv_gz, Expect(names="base.run.gz"),
            [("base.run.gz", Lazy(_real_gz_mutation, (base, "truncate", cut)))])
        add(f"dl19-run-gz-flipped-at-{cut}", "truncated gzip", argv_gz, Expect(names="base.run.gz"),
            [("base.run.gz", Lazy(_real_gz_mutation, (base, "flip", cut)))])
    add("dl19-run-gz-garbage", "gzip with garbage appended", argv_gz, Expect(names="base.run.gz"),
        [("base.run.gz", Lazy(_real_gz_mutation, (base, "garbage", 0)))])
    # qrels
    qrel_rel = "runs/trec-dl-2019-passage/qrels/qrels.dl19-passage.txt"
    argv_q = ("compare", "--baseline", str(REALDATA / base), "--candidate", cand, "--qrels", "q.txt", "--samples",
              "200")
    for op, cat in (("set-field:1.5", "label not an integer"),
                    ("set-field:99999999999999999999", "labels beyond int64"),
                    ("set-field:" + "9" * 5000, "integers of thousands of digits"),
                    ("drop-field", "wrong column count"),
                    ("duplicate", "duplicates"), ("flip-ff", "invalid UTF-8"),
                    ("bom", "byte-order mark in the middle")):
        for _ in range(3):
            n = rng.randrange(5, 9250)
            add(f"dl19-qrels-{op[:24]}-line{n}", cat, argv_q,
                Expect(names="q.txt", line=n + 1 if op == "duplicate" else n),
                [("q.txt", Lazy(_real_mutation, (qrel_rel, op, n, None, 3)))])
    add("dl19-qrels-cr-only", "CR-only line endings", argv_q, Expect(names="q.txt"),
        [("q.txt", Lazy(_real_mutation, (qrel_rel, "cr-only", 1, None)))])
    # topics (TSV queries)
    topic_rel = "runs/trec-dl-2019-passage/topics/topics.dl19-passage.txt"
    argv_t = argv_q[:6] + (qrels, "--queries", "t.tsv", "--samples", "200")
    for op, cat in (("no-tab", "wrong column count"), ("duplicate", "duplicates"), ("flip-ff", "invalid UTF-8"),
                    ("bom", "byte-order mark in the middle"), ("nul", "NUL bytes")):
        for _ in range(2):
            n = rng.randrange(2, 43)
            add(f"dl19-topics-{op}-line{n}", cat, argv_t, Expect(names="t.tsv", line=n + 1 if op == "duplicate" else n),
                [("t.tsv", Lazy(_real_mutation, (topic_rel, op, n, b"\t")))])
    add("dl19-topics-cr-only", "CR-only line endings", argv_t, Expect(names="t.tsv"),
        [("t.tsv", Lazy(_real_mutation, (topic_rel, "cr-only", 1, b"\t")))])
    # SciFact corpus (JSONL) through leakcheck, with the real topics
    corpus_rel = "scifact/derived_beir_format/corpus.jsonl"
    sf_topics = "scifact/beir_test_qrels_topics/topics.beir-v1.0.0-scifact.test.tsv.gz"
    argv_c = ("leakcheck", "--queries", str(REALDATA / sf_topics), "--corpus", "corpus.jsonl", "--mode", "exact")
    for op, cat in (("cut-json", "wrong column count"), ("json-surrogate", "lone surrogates in JSON"),
                    ("flip-ff", "invalid UTF-8"), ("nul", "NUL bytes")):
        for _ in range(2):
            n = rng.randrange(2, 5183)
            add(f"scifact-corpus-{op}-line{n}", cat, argv_c, Expect(names="corpus.jsonl", line=n),
                [("corpus.jsonl", Lazy(_real_mutation, (corpus_rel, op, n, None)))])
    # Vaswani qrels, as the gate's golden qrels through compare with a synthetic run of its queries
    vq = "vaswani/qrels"
    argv_v = ("lift", "--baseline", "v.run", "--candidate", "v.run", "--qrels", "vq.txt", "--out", "liftout")
    vrun = Lazy(_vaswani_run, ())
    for op, cat in (("set-field:x", "label not an integer"), ("drop-field", "wrong column count"),
                    ("duplicate", "duplicates")):
        n = rng.randrange(5, 2000)
        add(f"vaswani-qrels-{op}-line{n}", cat, argv_v, Expect(names="vq.txt", line=n + 1 if op == "duplicate" else n),
            [("vq.txt", Lazy(_real_mutation, (vq, op, n, None, 3))), ("v.run", vrun)])
    # ir_datasets offline cache, copied (never the shared folder itself)
    seed = str(REALDATA / "ir_datasets_seed")
    env = (("IR_DATASETS_HOME", "irds"),)
    irds_files = [("irds", CopyTree(seed))]
    add("irds-control-vaswani-leak", "control", ("leakcheck", "--queries", "irds:vaswani", "--corpus", "irds:vaswani",
                                                 "--mode", "exact"),
        Expect(exits=(1,), stdout_has="72"), irds_files, env=env, timeout=60)
    add("irds-unknown-field", "irds ids unknown or not cached",
        ("leakcheck", "--queries", "irds:cranfield#field=nope", "--corpus", "corpus.jsonl"),
        Expect(names="irds:cranfield"), irds_files + [("corpus.jsonl", Data(good("corpus.jsonl")))], env=env)
    add("irds-unknown-split", "irds ids unknown or not cached",
        compare_with(qrels="irds:beir/scifact/nosuchsplit"), Expect(names="irds:beir/scifact/nosuchsplit"),
        irds_files, env=env)
    add("irds-not-cached-beside-seed", "irds ids unknown or not cached", compare_with(qrels="irds:antique/test"),
        Expect(names="irds:antique/test"), irds_files, env=env, timeout=30)
    add("irds-cache-corrupted", "irds ids unknown or not cached",
        ("leakcheck", "--queries", "irds:cranfield", "--corpus", "corpus.jsonl"), Expect(names="irds:cranfield"),
        irds_files + [("irds/cranfield/queries.txt", Data(b"\xff\x00 garbage\n")),
                      ("corpus.jsonl", Data(good("corpus.jsonl")))], env=env,
        note="a corrupted cached file: a clean error naming the dataset")
    return cases


def _vaswani_run() -> bytes:
    qids = sorted({ln.split()[0] for ln in lines_of(_real_bytes("vaswani/qrels"))}, key=int)
    return b"".join(f"{q} Q0 {d} {r} {100 - r} t\n".encode() for q in qids for r, d in enumerate(range(1, 21), 1))


# =========================================================================== the battery


def build_cases() -> list[Case]:
    cases = (_context_cases() + _strata_cases() + _gate_config_cases() + _retrieval_config_cases()
             + _manifest_cases() + _comment_cases() + _option_cases() + _real_cases())
    names = [c.name for c in cases]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise RuntimeError(f"battery bug: duplicate case names {sorted(dupes)[:5]}")
    return cases


def realdata_available() -> bool:
    return DL19.exists() and (REALDATA / "scifact").exists()


# =========================================================================== running one case


@dataclass
class Outcome:
    case: Case
    kind: str  # ok | skipped | traceback | hang | silent | wrong-exit | bad-message | memory | setup-failed
    exit_code: int | None = None
    seconds: float = 0.0
    peak_rss_mb: float = 0.0
    stderr_tail: str = ""
    traceback_tail: str = ""
    problem: str = ""
    stdout_tail: str = ""

    @property
    def ok(self) -> bool:
        return self.kind in ("ok", "skipped")


def _limit_child() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_CAP, ADDRESS_SPACE_CAP))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _child_env(case: Case, root: Path, github_url: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_", "INPUT_", "ACTIONS_", "RUNNER_")) and k != "IR_DATASETS_HOME"}
    env.update(TMPDIR=str(root / "tmp"), IR_DATASETS_HOME=str(root / "irds-empty"), PYTHONDONTWRITEBYTECODE="1",
               HOME=str(root / "home"), NO_PROXY="*", no_proxy="*")
    if github_url:
        env.update(GITHUB_API_URL=github_url, GITHUB_TOKEN="ghs_battery", GITHUB_REPOSITORY="octo-org/octo-repo")
    for key, value in case.env:
        env[key] = str(root / value) if key == "IR_DATASETS_HOME" else value
    return env


# The installed command, started from a process that has already imported what every command
# imports: a fork of it is the command after its imports (the battery's 1,200 cases spent more CPU
# importing numpy, ruamel.yaml and jinja2 than running). The child is made what a fresh
# ``retrieval-gate`` process is: its own session and limits, the case's folder, environment,
# arguments (``sys.orig_argv`` too: with a token in the environment the command re-executes
# itself, as the real one does) and standard streams; then ``gate.cli.entry`` runs and the
# process ends as the interpreter would end it (atexit functions, flushed streams, exit code).
_ZYGOTE_SOURCE = r"""
import atexit, json, os, resource, signal, sys, tempfile, time, traceback
cli, repo, cap = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path[0] = os.path.dirname(cli)  # the console script's: its own folder first
sys.path.append(repo)
from tests.support import bounded
sys.path.remove(repo)
import numpy, ruamel.yaml, jinja2, requests  # noqa: F401 - what the commands import
import gate.cli, gate.pipeline.run, gate.pipeline.compare, gate.pipeline.archive, gate.inputs.config  # noqa: F401
import gate.rendering.comment, gate.evaluation.evaluate  # noqa: F401
protocol_in, protocol_out = os.fdopen(os.dup(0), "r"), os.fdopen(os.dup(1), "w")


def run_child(request):
    code = 1
    try:
        protocol_in.close(); protocol_out.close()
        os.setsid()
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        tempfile.tempdir = None  # TMPDIR is the case's
        write = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, request["out"], write), (2, request["err"], write)):
            opened = os.open(path, flags, 0o644)
            os.dup2(opened, fd)
            os.close(opened)
        sys.argv = [cli, *request["argv"]]
        sys.orig_argv = [sys.executable, cli, *request["argv"]]
        try:
            gate.cli.entry()
            code = 0
        except SystemExit as stop:
            if stop.code is None or isinstance(stop.code, int):
                code = stop.code or 0
            else:
                print(stop.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code & 0xFF)


for line in protocol_in:
    request = json.loads(line)
    sys.stdout.flush(); sys.stderr.flush()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        run_child(request)
    polls, code, rss_kb = 0, None, 0
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            code, rss_kb = os.waitstatus_to_exitcode(status), usage.ru_maxrss
            break
        polls += 1
        if polls % 50 == 0 and bounded.hung(started, request["timeout"], pid):
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _, status, usage = os.wait4(pid, 0)
            rss_kb = usage.ru_maxrss
            break
        time.sleep(0.01)
    protocol_out.write(json.dumps([code, time.monotonic() - started, rss_kb]) + "\n")
    protocol_out.flush()
"""


class _Zygote:
    """One forking server (per battery thread); see _ZYGOTE_SOURCE."""

    def __init__(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_", "ACTIONS_", "RUNNER_"))}
        env.update(PYTHONDONTWRITEBYTECODE="1", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        self.proc = subprocess.Popen([sys.executable, "-c", _ZYGOTE_SOURCE, str(CLI), str(REPO),
                                      str(ADDRESS_SPACE_CAP)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     env=env, text=True, cwd="/")

    def spawn(self, argv: tuple[str, ...], root: Path, env: dict[str, str], timeout: float, out: Path,
              err: Path) -> tuple[int | None, float, int]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        request = {"argv": list(argv), "cwd": str(root), "env": env, "timeout": timeout, "out": str(out),
                   "err": str(err)}
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        if not answer:
            raise RuntimeError(f"battery bug: the forking server ended (exit {self.proc.wait()})")
        code, seconds, rss_kb = json.loads(answer)
        return code, seconds, rss_kb

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait()


_THIS_THREADS = __import__("threading").local()
_ZYGOTES: list[_Zygote] | None = None  # inside run_all: every thread's server, to close at its end


def _zygote() -> _Zygote | None:
    """This thread's forking server, inside :func:`run_all` and for the installed command only."""
    if _ZYGOTES is None or CLI_ARGV != (str(CLI),):
        return None
    server = getattr(_THIS_THREADS, "server", None)
    if server is None or server not in _ZYGOTES:
        server = _THIS_THREADS.server = _Zygote()
        _ZYGOTES.append(server)
    return server


def _spawn(argv: tuple[str, ...], root: Path, env: dict[str, str], timeout: float, tag: str):
    """Run the CLI; returns (exit code or None on timeout, seconds, peak RSS MiB, stdout, stderr).
    ``timeout``: CPU seconds (see WALL_FACTOR)."""
    out_path, err_path = root / f".{tag}.stdout", root / f".{tag}.stderr"
    server = _zygote()
    if server is not None:
        code, seconds, rss_kb = server.spawn(argv, root, env, timeout, out_path, err_path)
        return code, seconds, rss_kb / 1024, out_path.read_bytes(), err_path.read_bytes()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        started = time.monotonic()
        proc = subprocess.Popen([*CLI_ARGV, *argv], cwd=root, env=env, stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL, preexec_fn=_limit_child, start_new_session=True)
        code = None
        rss_kb = 0
        polls = 0
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                code = os.waitstatus_to_exitcode(status)
                rss_kb = usage.ru_maxrss
                proc.returncode = code
                break
            polls += 1
            if polls % 50 == 0 and cpu_bounded.hung(started, timeout, proc.pid):  # every half second or so
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                _, status, usage = os.wait4(proc.pid, 0)
                rss_kb = usage.ru_maxrss
                proc.returncode = -9
                break
            time.sleep(0.01)
        seconds = time.monotonic() - started
    return code, seconds, rss_kb / 1024, out_path.read_bytes(), err_path.read_bytes()


def prepare(case: Case, root: Path) -> None:
    """Write the good world into ``root`` (files only; overrides come after setup)."""
    if root.exists():
        shutil.rmtree(root)
    for sub in ("tmp", "irds-empty", "home"):
        (root / sub).mkdir(parents=True)
    for rel, data in world().items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def apply_files(case: Case, root: Path) -> None:
    for rel, content in case.files:
        path = root / rel
        if any(ch in rel for ch in "*?["):
            matches = sorted(root.glob(rel))
            if len(matches) != 1:
                raise RuntimeError(f"battery bug: {rel} matches {len(matches)} files")
            path = matches[0]
        content.write(path, root)


def _tail(data: bytes, n: int = 1) -> str:
    lines = [ln for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
    return "\n".join(lines[-n:])


_GOOD_RESULTS: dict[tuple, tuple[int | None, str]] = {}
_GOOD_LOCK = __import__("threading").Lock()


def _normalise(stdout: bytes, root: Path) -> str:
    text = stdout.decode("utf-8", "replace").replace(str(root), "<root>")
    return "\n".join(ln for ln in text.splitlines() if not ln.startswith("wrote ") and " in " not in ln[-12:])


def good_result(case: Case, scratch: Path, github_url: str | None) -> tuple[int | None, str]:
    """Exit code and normalised stdout of ``case.argv`` on the unbroken world (cached per argv and setup)."""
    key = (case.argv, case.setup, case.env)
    with _GOOD_LOCK:
        return _good_result_locked(key, case, scratch, github_url)


def _good_result_locked(key: tuple, case: Case, scratch: Path, github_url: str | None) -> tuple[int | None, str]:
    if key not in _GOOD_RESULTS:
        control = Case("_good_/" + str(abs(hash(key))), "control", case.argv, Expect(), setup=case.setup, env=case.env,
                       needs_github=case.needs_github)
        root = scratch / control.name.replace("/", "__")
        prepare(control, root)
        env = _child_env(control, root, github_url if case.needs_github else None)
        for i, argv in enumerate(control.setup):
            _spawn(argv, root, env, 120, f"setup{i}")
        code, _, _, out, _ = _spawn(case.argv, root, env, DEFAULT_TIMEOUT, "case")
        _GOOD_RESULTS[key] = (code, _normalise(out, root))
        shutil.rmtree(root, ignore_errors=True)
    return _GOOD_RESULTS[key]


def execute(case: Case, scratch: Path, github_url: str | None = None, keep: bool = False,
            timeout_cap: float | None = None) -> Outcome:
    """Run one case in ``scratch/<safe name>``; classify the result against its expectation."""
    if case.needs_realdata and not realdata_available():
        return Outcome(case, "skipped", problem=f"{REALDATA} not present")
    root = scratch / case.name.replace("/", "__").replace(" ", "_")[:150]
    prepare(case, root)
    env = _child_env(case, root, github_url if case.needs_github else None)
    for i, argv in enumerate(case.setup):
        code, seconds, _, out, err = _spawn(argv, root, env, 120, f"setup{i}")
        if code not in (0, 1, 3):
            return Outcome(case, "setup-failed", code, seconds, problem=f"setup {' '.join(argv)} exited {code}: "
                                                                          f"{_tail(err)}")
    try:
        apply_files(case, root)
    except Exception as error:  # noqa: BLE001 - a battery bug must not stop the battery
        return Outcome(case, "setup-failed", problem=f"{type(error).__name__}: {error}")
    timeout = min(case.timeout, timeout_cap) if timeout_cap else case.timeout
    code, seconds, rss, out, err = _spawn(case.argv, root, env, timeout, "case")
    outcome = Outcome(case, "ok", code, seconds, rss, _tail(err), stdout_tail=_tail(out, 3))
    _judge(outcome, err, out, root)
    if outcome.kind == "ok" and case.expect.same_as_good and code != 2:
        good_code, good_out = good_result(case, scratch, github_url)
        if (code, _normalise(out, root)) != (good_code, good_out):
            outcome.kind = "silent" if 2 in case.expect.exits else "wrong-exit"
            outcome.problem = (f"accepted (exit {code}) but the result differs from the unbroken file's "
                               f"(exit {good_code}); stdout: {outcome.stdout_tail[:200]!r}")
    if not keep and outcome.ok:
        shutil.rmtree(root, ignore_errors=True)
    return outcome


def _judge(o: Outcome, err: bytes, out: bytes, root: Path) -> None:
    e = o.case.expect
    text = err.decode("utf-8", "replace")
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("[retrieval-gate] ")]
    if o.exit_code is None:
        o.kind, o.problem = "hang", f"no exit after {o.seconds:.0f}s (killed)"
        return
    if o.exit_code == 4 or "Traceback (most recent call last)" in text or o.exit_code < 0:
        o.kind = "traceback"
        saved = next((ln.split("traceback saved to ", 1)[1].rstrip(")") for ln in lines if "traceback saved to" in ln),
                     None)
        if saved and Path(saved).is_file():
            o.traceback_tail = _tail(Path(saved).read_bytes(), 1)
        elif "Traceback" in text:
            o.traceback_tail = _tail(err, 1)
        elif o.exit_code < 0:
            o.traceback_tail = f"killed by signal {-o.exit_code}"
        o.problem = f"exit {o.exit_code}: {o.traceback_tail or o.stderr_tail}"
        return
    if o.peak_rss_mb > e.max_rss_mb:
        o.kind, o.problem = "memory", f"peak RSS {o.peak_rss_mb:.0f} MiB > {e.max_rss_mb} MiB (exit {o.exit_code})"
        return
    if o.exit_code not in e.exits and not (e.same_as_good and o.exit_code in (0, 1, 3)):
        if 2 in e.exits and o.exit_code in (0, 1, 3):
            o.kind = "silent"
            o.problem = f"accepted (exit {o.exit_code}) instead of exit 2; stdout: {o.stdout_tail[:200]!r}"
        else:
            o.kind, o.problem = "wrong-exit", f"exit {o.exit_code}, expected {e.exits}: {o.stderr_tail[:300]}"
        return
    if o.exit_code == 2:
        if len(lines) != 1:
            o.kind, o.problem = "bad-message", f"{len(lines)} stderr lines (want 1): {text[-300:]!r}"
            return
        line = lines[0]
        if not line.startswith("retrieval-gate: error:") and not line.startswith("retrieval-gate: "):
            o.kind, o.problem = "bad-message", f"not 'retrieval-gate: error: ...': {line[:300]!r}"
            return
        if e.names is not None and e.names not in line:
            o.kind, o.problem = "bad-message", f"does not name {e.names!r}: {line[:300]!r}"
            return
        if e.names is not None and e.line is not None and f"{e.names}:{e.line}:" not in line:
            o.kind, o.problem = "bad-message", f"does not say {e.names}:{e.line}: {line[:300]!r}"
            return
        if e.contains is not None and e.contains not in line:
            o.kind, o.problem = "bad-message", f"does not mention {e.contains!r}: {line[:300]!r}"
            return
    elif o.exit_code == 0 and e.stdout_has is not None and e.stdout_has not in out.decode("utf-8", "replace"):
        o.kind, o.problem = "wrong-exit", f"exit 0 but stdout lacks {e.stdout_has!r}: {o.stdout_tail[:200]!r}"


class github_server:
    """The fake GitHub of tests/publishing/github (127.0.0.1), with PR #7 whose head is HEAD_SHA; ``None`` url if
    unavailable."""

    def __enter__(self) -> str | None:
        try:
            from tests.publishing.github.fake_github import FakeGitHub
        except Exception:  # noqa: BLE001 - without it the comment cases report setup failures
            self.fake = None
            return None
        self.fake = FakeGitHub(owner="octo-org", repo="octo-repo", token="ghs_battery").start()
        self.fake.add_pull(PR, head_sha=HEAD_SHA, files=[".retrieval-gate.yml"])
        return self.fake.url

    def __exit__(self, *exc) -> None:
        if self.fake is not None:
            self.fake.stop()


def run_all(cases: list[Case], scratch: Path, jobs: int = 2, progress: Callable[[Outcome], None] | None = None,
            keep: bool = False, timeout_cap: float | None = None) -> list[Outcome]:
    """Run ``cases`` ``jobs`` at a time (threads; each case is its own subprocess)."""
    from concurrent.futures import ThreadPoolExecutor

    global _ZYGOTES
    scratch.mkdir(parents=True, exist_ok=True)
    _ZYGOTES = []
    try:
        with github_server() as url:
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                results = []
                for outcome in pool.map(lambda c: execute(c, scratch, url, keep, timeout_cap), cases):
                    results.append(outcome)
                    if progress is not None:
                        progress(outcome)
    finally:
        servers, _ZYGOTES = _ZYGOTES, None
        for server in servers:
            server.close()
    return results
