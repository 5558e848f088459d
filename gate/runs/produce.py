"""Getting a run for a request: the runs folder, the cache, or the runner itself.

Order: a run named by the request's key in ``--runs-dir`` (produced by an
earlier workflow step from ``retrieval-gate plan``), then the cache, then the
runner. Whatever its source, the run is read strictly and must cover every
golden query; a run that does not is a runner failure, never a silent zero. A query the
runner answered with no documents is covered: its timings sidecar says so with ``"hits": 0``
(:func:`missing_queries`, the one rule every coverage check applies).
"""

from __future__ import annotations

import gzip
import os
import shutil
import sys
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gate import __version__
from gate.common.atomic import write_bytes_atomic, write_text_atomic
from gate.common.errors import InputError
from gate.inputs import git
from gate.inputs.readers.records import Run
from gate.inputs.readers.runs import read_run
from gate.inputs.readers.timings import Timings, read_timings, require_answered, require_hits_match, timings_path_for
from gate.runs.code import CheckoutFailed, checkout
from gate.runs.request import ProducedRun, RunMissing, Runner, RunnerFailed, RunRequest

RUN_SUFFIXES = (".run", ".run.gz", ".trec", ".trec.gz", ".txt", ".txt.gz", ".tsv")


def find_in_runs_dir(runs_dir: Path | None, key: str) -> Path | None:
    if runs_dir is None:
        return None
    for suffix in RUN_SUFFIXES:
        candidate = runs_dir / f"{key}{suffix}"
        if candidate.is_file():
            return candidate
    return None


def missing_queries(run: Run, expected: Sequence[str], answered_empty: Collection[str] = frozenset()) -> list[str]:
    """The ``expected`` queries the run does not cover, in their order. A query is covered when the
    run ranks documents for it, or when the runner answered it with none (``answered_empty``: the
    sidecar's ``"hits": 0`` queries, :func:`answered_empty`), which scores 0 as trec_eval scores
    a query absent from a run. Any other absent query is one the runner dropped."""
    present = set(run.query_ids)
    return [qid for qid in expected if qid not in present and qid not in answered_empty]


def answered_empty(timings: Timings | None) -> frozenset[str]:
    """The queries a run's timings say were answered with no documents (none without timings)."""
    return frozenset() if timings is None else timings.answered_empty


def check_coverage(run: Run, expected: Sequence[str], purpose: str, where: str,
                   timings: Timings | None = None) -> None:
    """:class:`RunnerFailed` naming the golden queries the run misses (:func:`missing_queries`)."""
    missing = missing_queries(run, expected, answered_empty(timings))
    if missing:
        examples = ", ".join(missing[:5])
        raise RunnerFailed(purpose, f"the run ({where}) misses {len(missing)} of {len(expected)} golden queries "
                                    f"(e.g. {examples}); a query answered with no documents is said by a "
                                    '"hits": 0 line in the run\'s timings sidecar')


@contextmanager
def readable_by_the_box() -> Iterator[None]:
    """As root, what the gate writes for a run (its retrieval config, queries, the export of a
    commit) is read by the box's uid: a umask closing reading to others (077) would refuse it
    every file. Writing stays closed as the mask says; the mask is restored after the run."""
    if os.geteuid() != 0:
        yield
        return
    mask = os.umask(0)
    os.umask(mask & 0o022)
    try:
        yield
    finally:
        os.umask(mask)


@dataclass
class RunProducer:
    runner: Runner | None
    work_dir: Path
    cache_dir: Path | None = None
    runs_dir: Path | None = None
    progress: Callable[[str], None] = lambda message: print(f"[retrieval-gate] {message}", file=sys.stderr, flush=True)
    repo: Path | None = None  # the repository a baseline's commit is checked out from

    def key(self, request: RunRequest) -> str:
        identity: dict[str, Any] = self.runner.identity() if self.runner is not None else {"type": "none"}
        return request.cache_key(identity)

    def config_file(self, request: RunRequest, key: str) -> Path:
        """The request's retrieval config, written out for the runner (and the plan's entries).

        Always rewritten from the request: a file already at that path is not trusted, since a
        PR can commit ``.retrieval-gate/work/configs/<key>.yml`` for a key it can predict (the
        baseline replay's) and make the baseline run a config it chose."""
        path = self.work_dir / "configs" / f"{key}{request.config.suffix}"
        text = request.config.to_text()
        if not (path.is_file() and not path.is_symlink() and path.read_text(encoding="utf-8") == text):
            if path.is_symlink() or path.is_dir():
                raise RunnerFailed(request.purpose, f"{path} is {'a symlink' if path.is_symlink() else 'a folder'}, "
                                   "where the gate writes the run's retrieval config: remove it")
            write_text_atomic(path, text)
        return path

    def produce(self, request: RunRequest, expected: Sequence[str],
                given: Collection[str] | None = None) -> tuple[Run, ProducedRun]:
        """The run of ``request`` covering ``expected``, with its timings sidecar when there is one
        (``given``: the query ids the runner was given, which the sidecar may not go beyond)."""
        key = self.key(request)
        started = time.monotonic()
        found = find_in_runs_dir(self.runs_dir, key)
        if found is not None:
            run, timings = self._from_runs_dir(found, request.purpose, expected, given)
            return run, ProducedRun(request.purpose, found, key, "runs-dir", time.monotonic() - started,
                                    len(run.query_ids), timings=timings)
        # A run whose code cannot be seen (no git, no runner.inputs) is never served from the
        # cache: the cache could not tell a changed search/bm25.py from the baseline's.
        cacheable = self.cache_dir is not None and (request.code is None or request.code.known)
        cache_folder = self._cache_folder() if cacheable else None
        # A run of another commit's code (a baseline replayed or reconstructed on a PR) is never
        # read from the cache: the cache sits where the PR's own code runs and writes, and a
        # baseline entry it rewrote would make the PR look better. Only the workspace's own
        # runs are served from it (forging those is no more than changing the code).
        readable = cache_folder is not None and (request.code is None or request.code.kind != "commit")
        hit = self._from_cache(cache_folder, key, request.purpose, expected, given) if readable else None
        if hit is not None:
            cached, cached_run, cached_timings = hit
            self.progress(f"{request.purpose}: cache hit {key}")
            return cached_run, ProducedRun(request.purpose, cached, key, "cache", time.monotonic() - started,
                                           len(cached_run.query_ids), timings=cached_timings)
        if self.runs_dir is not None:
            # The runs were to be produced by an earlier step (plan -> produce -> gate): one it
            # did not write is named, never run here behind the team's back (their stack may
            # not even exist in this container).
            raise RunMissing(request.purpose, key, f"no run named {key}.run in the runs folder {self.runs_dir}: the "
                                                "step that produces the planned runs did not write it (see "
                                                "retrieval-gate plan); with runs-dir the gate runs nothing itself")
        if self.runner is None:
            raise RunnerFailed(request.purpose, f"no runner can produce it and no run named {key}.run "
                                                f"was found in --runs-dir (see: retrieval-gate plan)")
        out_path = self.work_dir / "runs" / f"{key}.run"
        out_path.parent.mkdir(parents=True, exist_ok=True)
        if out_path.exists():
            out_path.unlink()
        Path(timings_path_for(out_path)).unlink(missing_ok=True)  # an earlier run's timings are not this run's
        log_path = self.work_dir / "logs" / f"{key}.log"
        self.progress(f"{request.purpose}: running {self.runner.name} runner (key {key})")
        if request.code is not None and request.code.root is None and request.code.commit is not None:
            self.progress(f"{request.purpose}: with the code of {request.code.description}")
        try:
            with readable_by_the_box(), checkout(request.code, self.repo or self.work_dir,
                                                 self.work_dir / "checkouts") as code:
                self.runner.produce(replace(request, code=code), self.config_file(request, key), out_path, log_path)
        except CheckoutFailed as failure:
            raise RunnerFailed(request.purpose, f"cannot check out the code it needs: {failure}") from None
        run = self._read(out_path, request.purpose, "written by the runner", log_path)
        timings = sidecar_of(out_path, run, given, "run", expected)
        check_coverage(run, expected, request.purpose, str(out_path), timings)
        seconds = time.monotonic() - started
        empty = len(answered_empty(timings))
        said = f" ({empty} answered with no documents)" if empty else ""
        self.progress(f"{request.purpose}: {len(run.query_ids) + empty} queries{said} in {seconds:.1f}s")
        if cache_folder is not None:
            self._store(cache_folder, key, out_path, request.purpose)
        return run, ProducedRun(request.purpose, out_path, key, "runner", seconds, len(run.query_ids),
                                timings=timings)

    def _from_runs_dir(self, found: Path, purpose: str, expected: Sequence[str],
                       given: Collection[str] | None) -> tuple[Run, Timings | None]:
        """A run an earlier step produced (plan -> produce -> gate), and its timings beside it."""
        for path in (found, Path(timings_path_for(found))):
            if git.is_tracked(path):
                # Runs reach the runs folder from the steps that produce them, never from the
                # repository: a committed file under a key the PR can predict (the baseline's)
                # would stand in for a run that failed or was never made (or for its timings).
                raise RunnerFailed(purpose, f"{path} is committed to the repository: a run and its timings are "
                                   "picked up from the producing steps only (remove it from git)")
        run = self._read(found, purpose, "from --runs-dir")
        timings = sidecar_of(found, run, given, "run", expected)
        check_coverage(run, expected, purpose, str(found), timings)
        return run, timings

    def _store(self, cache_folder: Path, key: str, out_path: Path, purpose: str) -> None:
        """Keep the run for next time; a cache that cannot be written (its path a file, a
        loop, a full disk) is a progress line, never the verdict's problem."""
        try:
            for stale in (cache_folder / f"{key}{suffix}" for suffix in RUN_SUFFIXES):
                if stale.is_symlink() or stale.is_file():
                    stale.unlink()  # an entry refused above is replaced, not left to shadow this one
            sidecar = Path(timings_path_for(cache_folder / f"{key}.run.gz"))
            if sidecar.is_symlink() or sidecar.is_file():
                sidecar.unlink()
            if os.path.isfile(timings_path_for(out_path)):  # before the run: a run never has another's timings
                with open(timings_path_for(out_path), "rb") as handle:
                    write_bytes_atomic(sidecar, handle.read())
            with open(out_path, "rb") as handle:
                write_bytes_atomic(cache_folder / f"{key}.run.gz", gzip.compress(handle.read(), mtime=0))
        except (OSError, InputError) as error:
            self.progress(f"{purpose}: the run is not cached ({str(error)[:200]})")

    def _cache_folder(self) -> Path | None:
        # One folder per gate version: a run cached by another version was produced from the
        # config and query files that version wrote, and is not assumed to equal this one's.
        return None if self.cache_dir is None else self.cache_dir / f"v{__version__}"

    def _cached(self, path: Path, purpose: str) -> Run | None:
        """The cached run, or None (with a progress line saying why) when it is not one the gate
        itself made and stored: a cache miss, never a verdict."""
        refused = untrusted_cache_entry(path)
        if refused is not None:
            self.progress(f"{purpose}: cache entry {path.name} not used ({refused}); running the runner")
            return None
        try:
            run = read_run(path)
        except InputError as error:
            self.progress(f"{purpose}: cache entry {path.name} is unreadable ({error}); running the runner")
            return None
        return run

    def _from_cache(self, cache_folder: Path | None, key: str, purpose: str, expected: Sequence[str],
                    given: Collection[str] | None) -> tuple[Path, Run, Timings | None] | None:
        """The cached run of ``key`` with its timings, or None (a miss)."""
        cached = find_in_runs_dir(cache_folder, key)
        run = None if cached is None else self._cached(cached, purpose)
        if cached is None or run is None:
            return None
        timings = self._cached_timings(cached, run, given, purpose, expected)
        if timings is False:
            return None
        kept = None if timings is True else timings
        # Covered as the runner's own run is: its empty answers are in the timings kept with it.
        if missing_queries(run, expected, answered_empty(kept)):
            return None
        return cached, run, kept

    def _cached_timings(self, path: Path, run: Run, given: Collection[str] | None, purpose: str,
                        expected: Sequence[str]) -> Timings | bool:
        """The timings kept beside a cached run (origin ``cache``); True when there are none and
        the runner writes none; False (a cache miss) when the runner writes timings and the entry
        has none or unusable ones: a cached run keeps its timings, never loses them."""
        sidecar = Path(timings_path_for(path))
        writes = bool(getattr(self.runner, "writes_timings", False))
        if not (sidecar.is_file() and untrusted_cache_entry(sidecar) is None):
            if writes:
                self.progress(f"{purpose}: cache entry {path.name} has no timings; running the runner")
            return not writes
        try:
            return sidecar_of(path, run, given, "cache", expected) or True
        except InputError as error:
            self.progress(f"{purpose}: the timings of cache entry {path.name} are unreadable ({error}); "
                          "running the runner")
            return False

    @staticmethod
    def _read(path: Path, purpose: str, how: str, log_path: Path | None = None) -> Run:
        try:
            return read_run(path)
        except InputError as error:
            raise RunnerFailed(purpose, f"the run {how} is not a valid TREC run: {error}", log_path) from error


def sidecar_of(run_path: Path, run: Run, given: Collection[str] | None, origin: str,
               expected: Sequence[str] = ()) -> Timings | None:
    """The timings sidecar beside ``run_path``, read strictly (a bad one: InputError, exit 2), or
    None when there is none (:func:`timings_of`)."""
    path = timings_path_for(run_path)
    if not os.path.lexists(path):  # a FIFO, device, folder or link there is refused by the reader, not skipped
        return None
    return timings_of(path, run, given, origin, expected)


def timings_of(path: str | os.PathLike, run: Run, given: Collection[str] | None, origin: str,
               expected: Sequence[str] = ()) -> Timings:
    """A run's timings, read strictly: every query the run answers timed, and each ``hits`` the
    number of documents the run holds (so ``"hits": 0`` is a query the run has no line for)."""
    # Where the queries the runner was given are not known here (a baseline's run, run files), the
    # run's own queries and the scored ones (``expected``: those it may have answered with nothing)
    # are the lines kept: memory stays bounded by them, not by the file. A line of another query
    # (an unjudged golden query the runner found nothing for) is checked and left out.
    if given is not None:
        timings = read_timings(path, given, origin=origin)
    else:
        timings = read_timings(path, origin=origin, kept={*run.query_ids, *expected})
    require_answered(timings, run.query_ids)
    require_hits_match(timings, run)
    return timings


def untrusted_cache_entry(path: Path) -> str | None:
    """Why a file in the cache folder is not a run the gate stored, or None.

    The cache folder usually sits inside the checkout, so a pull request can commit a file under
    the key its own code will have and be "served from the cache" a run it wrote by hand. The
    gate writes entries with ``write_bytes_atomic`` as plain files and never commits them: a
    symlink or a file git tracks is someone else's.
    """
    if path.is_symlink():
        return "it is a symlink"
    real = Path(os.path.realpath(path))
    if real.parent != Path(os.path.realpath(path.parent)) or real.name != path.name:
        return "it is reached through a symlink"
    if git.is_tracked(path) or (real != path and git.is_tracked(real)) or _through_symlinked_folder(path):
        return "it is committed in the repository: a cached run is one the gate made, not a file a change can edit"
    return None


def _through_symlinked_folder(path: Path) -> bool:
    """A folder on the way to ``path`` (below the repository's top) that is a symlink: a
    committed ``.retrieval-gate/cache -> ../fakecache`` makes every entry the PR's."""
    top = git.top_level(path.parent)
    lexical = Path(os.path.abspath(path))
    for folder in lexical.parents:
        if folder == top or top not in folder.parents:
            break
        if folder.is_symlink():
            return True
    return False


def copy_run(source: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return target
