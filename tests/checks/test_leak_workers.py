"""The trigram leak scan's worker processes (gate.checks.leak_filter_worker).

Their result is the one-process result to the byte, and the result of the scan before
they existed (digests pinned from it on a generated corpus). A worker that dies, reports
an error or stops answering costs speed, never the answer, and never a hang; an
interrupted scan leaves no worker running; the workers get no token and never run a gate
(or numpy) from the working directory.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import warnings
from pathlib import Path
from typing import NamedTuple

import pytest

import gate.checks.leak_filter_worker as W
import gate.checks.leakage as L
from gate.common.errors import InputError
from gate.inputs.readers.records import Query
from tests.checks.test_leakage import as_table, brute_force, random_case

REPO = Path(__file__).resolve().parents[2]
SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]


class Chunk(NamedTuple):
    chunk_id: str
    doc_id: str
    text: str


def pinned_corpus(seed: int = 11, n_chunks: int = 6000, n_queries: int = 300):
    """Zipf-distributed syllable words; verbatim, re-cased, one-word-changed and two-word-changed
    copies of queries planted (some twice), a few long chunks (read in overlapping segments),
    and every seventh chunk without a doc id."""
    rng = random.Random(seed)
    vocab = sorted({"".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 4))) for _ in range(3000)})
    rng.shuffle(vocab)
    weights = [1 / (r + 1) for r in range(len(vocab))]

    def words(n):
        return rng.choices(vocab, weights, k=n)

    queries = [(f"q{i:03d}", " ".join(words(rng.randint(3, 12)))) for i in range(n_queries)]
    toks = [words(rng.randint(20, 70)) for _ in range(n_chunks)]
    for j in range(0, n_chunks, 397):
        toks[j] = words(300)
    for k in range(60):
        _qid, text = queries[rng.randrange(n_queries)]
        q = text.split()
        kind = k % 4
        if kind == 1:  # one word changed
            j = rng.randrange(len(q))
            q[j] = q[j] + "s"
        elif kind == 2:  # cased and punctuated
            q = [w.upper() if i % 2 else w for i, w in enumerate(q)]
            q[-1] += "?"
        elif kind == 3:  # two words changed (mostly below the threshold)
            for j in rng.sample(range(len(q)), min(2, len(q))):
                q[j] = rng.choice(vocab)
        for _ in range(1 + (k % 5 == 0)):
            c = rng.randrange(n_chunks)
            at = rng.randint(0, len(toks[c]))
            toks[c][at:at] = q
    chunks = [Chunk(f"doc{j // 3}#{j % 3}", f"doc{j // 3}" if j % 7 else "", " ".join(t) + ".")
              for j, t in enumerate(toks)]
    return [Query(qid, text) for qid, text in queries], chunks


# sha256 of json.dumps(find_leaks(...).to_dict(), sort_keys=True) on pinned_corpus(), computed
# with the one-thread scan as it was before the worker processes (commit 45e3660).
PINNED = {
    ("exact",): "a7058e118c570a6b",
    ("trigram-jaccard",): "4dcbc040a1d0510c",
    ("exact", "trigram-jaccard"): "b7b71f52fb2b2fc9",
}
PINNED_COUNTS = {("exact",): (38, 197), ("trigram-jaccard",): (51, 260), ("exact", "trigram-jaccard"): (51, 260)}
# chunks_digest of the same results, pinned when the matched chunks were first listed (1.4): the
# worker processes must keep the very chunks the one-process scan keeps.
CHUNKS_PINNED = {
    ("exact",): "1b426850163fa4bd",
    ("trigram-jaccard",): "d3651824fb56b709",
    ("exact", "trigram-jaccard"): "d3651824fb56b709",
}


def digest(result) -> str:
    """The pinned digest: the result as it was pinned, before the matched chunks were listed (1.4)."""
    data = result.to_dict()
    for match in data["matched"]:
        match.pop("chunks")
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def chunks_digest(result) -> str:
    """The matched chunks listed per query (the first CHUNKS_KEPT in corpus order)."""
    listed = [[m.query_id, [list(c) for c in m.chunks]] for m in result.matched]
    return hashlib.sha256(json.dumps(listed).encode()).hexdigest()[:16]


@pytest.fixture(scope="module")
def corpus():
    return pinned_corpus()


@pytest.fixture()
def workers(monkeypatch):
    """Workers from the first batch past a short learning phase, every batch sent to them; the
    worker processes started and the answers they gave are recorded."""
    monkeypatch.setattr(L, "WORKERS_AFTER_CHUNKS", 0)
    monkeypatch.setattr(L, "SAMPLE_CHUNKS", 300)
    monkeypatch.setattr(L, "WAIT_FOR_WORKERS", True)
    monkeypatch.setattr(L, "BATCH_CHARS", 20_000)  # 70-80 batches in the pinned corpus
    seen = {"procs": [], "envs": [], "answers": 0}
    real_popen = subprocess.Popen

    def popen(args, *a, **kw):
        proc = real_popen(args, *a, **kw)
        if "leak_filter_worker" in " ".join(map(str, args)):
            seen["procs"].append(proc)
            seen["envs"].append(kw.get("env"))
        return proc

    real_result = W.WorkerPool.result

    def result(self, ticket):
        answer = real_result(self, ticket)
        seen["answers"] += 1
        return answer

    monkeypatch.setattr(subprocess, "Popen", popen)
    monkeypatch.setattr(W.WorkerPool, "result", result)
    return seen


def all_ended(procs) -> bool:
    return all(p.poll() is not None for p in procs)


def watchdog(fn, timeout: float = 120.0):
    """fn() in a thread: a scan that hangs fails the test instead of hanging the suite."""
    out: dict = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as error:  # noqa: BLE001 - re-raised below
            out["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), f"the scan did not finish in {timeout:g} s"
    if "error" in out:
        raise out["error"]
    return out["value"]


# --------------------------------------------------------------------------- the same result


@pytest.mark.parametrize("modes", list(PINNED))
def test_the_result_is_the_pinned_one_in_one_process(corpus, modes):
    queries, chunks = corpus
    result = L.find_leaks(queries, iter(chunks), modes=modes, workers=0)
    assert (result.count, sum(m.chunks_matched for m in result.matched)) == PINNED_COUNTS[modes]
    assert digest(result) == PINNED[modes]
    assert chunks_digest(result) == CHUNKS_PINNED[modes]


@pytest.mark.parametrize("modes", [("trigram-jaccard",), ("exact", "trigram-jaccard")])
def test_the_result_is_the_pinned_one_through_the_workers(corpus, modes, workers):
    queries, chunks = corpus
    result = watchdog(lambda: L.find_leaks(queries, iter(chunks), modes=modes, workers=2))
    assert digest(result) == PINNED[modes]
    assert chunks_digest(result) == CHUNKS_PINNED[modes]
    assert len(workers["procs"]) == 2 and workers["answers"] >= 60  # nearly every batch went to a worker
    assert all_ended(workers["procs"])


def test_random_cases_through_the_workers_match_the_definition(monkeypatch, workers):
    monkeypatch.setattr(L, "SAMPLE_CHUNKS", 1)
    monkeypatch.setattr(L, "BATCH_CHARS", 60)
    monkeypatch.setattr(L, "SEGMENT_TOKENS", 4)
    rng = random.Random("leak-workers")
    for _ in range(5):
        queries, chunks, threshold, min_tokens, modes = random_case(rng)
        while "trigram-jaccard" not in modes or len(chunks) < 4:
            queries, chunks, threshold, min_tokens, modes = random_case(rng)
        got = watchdog(functools.partial(L.find_leaks, queries, iter(chunks), modes=modes, threshold=threshold,
                                         min_tokens=min_tokens, workers=2))
        assert as_table(got) == brute_force(queries, chunks, threshold, min_tokens, modes)
    assert workers["answers"] > 0 and all_ended(workers["procs"])


def test_frames_carry_texts_and_scores_exactly():
    texts = ["plain ascii", "日本語 の テスト", "emoji 🚀 ok", "", "a" * 70_000, "x"]
    assert W.decode_batch(W.encode_batch(texts)) == texts
    assert W.decode_batch(W.encode_batch([])) == []
    result = ([0, 5], [3, 9], [1, 2, 2], [7, 8, 0], [1 / 3, 0.1 + 0.2, 0.8500000000000001])
    assert W.decode_result(W.encode_result(result)) == result
    with pytest.raises(ValueError):
        W.decode_result(W.encode_result(result)[:-1])


# --------------------------------------------------------------------------- failures: speed lost, never the answer


def test_a_worker_killed_mid_scan_costs_speed_not_the_answer(corpus, workers):
    queries, chunks = corpus

    def chunks_killing_a_worker():
        for i, chunk in enumerate(chunks):
            if i == 3000:
                assert workers["answers"] > 0
                workers["procs"][0].kill()
            yield chunk

    with pytest.warns(RuntimeWarning, match="worker processes failed"):
        result = watchdog(lambda: L.find_leaks(queries, chunks_killing_a_worker(), modes=("trigram-jaccard",),
                                               workers=2))
    assert digest(result) == PINNED[("trigram-jaccard",)]
    assert all_ended(workers["procs"])


def test_a_worker_that_stops_answering_is_given_up_on_not_waited_for(corpus, workers, monkeypatch):
    queries, chunks = corpus

    def chunks_stopping_a_worker():
        for i, chunk in enumerate(chunks):
            if i == 2000:
                for proc in workers["procs"]:
                    os.kill(proc.pid, signal.SIGSTOP)
                # Short only now: the workers are stopped, so no slowness of the machine (their
                # start, a batch they work on) can reach it; only the stop does.
                monkeypatch.setattr(W, "WORKER_TIMEOUT", 1.0)
            yield chunk

    with pytest.warns(RuntimeWarning, match="no answer in 1 s, and no CPU time used"):
        result = watchdog(lambda: L.find_leaks(queries, chunks_stopping_a_worker(), modes=("exact", "trigram-jaccard"),
                                               workers=2), timeout=600)
    assert digest(result) == PINNED[("exact", "trigram-jaccard")]
    assert all_ended(workers["procs"])  # the stopped workers were killed, not left behind


def test_a_worker_that_computes_is_waited_for_however_long_it_takes(corpus, workers, monkeypatch):
    # A loaded machine: no answer for several WORKER_TIMEOUTs, but the worker's CPU time goes on
    # (played here by a stopped worker and a CPU clock that moves): it is not given up on.
    queries, chunks = corpus
    stopped: list = []
    polls = {"n": 0}
    real_cpu = W._cpu_seconds

    def cpu_seconds(pid):
        if not stopped:
            return real_cpu(pid)
        polls["n"] += 1
        if polls["n"] == 8:  # the "long batch" ends: the workers answer
            for proc in stopped:
                os.kill(proc.pid, signal.SIGCONT)
        return float(polls["n"])

    def chunks_stopping_the_workers():
        for i, chunk in enumerate(chunks):
            if i == 2000:
                stopped.extend(workers["procs"])
                for proc in stopped:
                    os.kill(proc.pid, signal.SIGSTOP)
                monkeypatch.setattr(W, "WORKER_TIMEOUT", 0.05)
            yield chunk

    monkeypatch.setattr(W, "_cpu_seconds", cpu_seconds)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = watchdog(lambda: L.find_leaks(queries, chunks_stopping_the_workers(),
                                               modes=("exact", "trigram-jaccard"), workers=2), timeout=600)
    assert [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)] == []
    assert digest(result) == PINNED[("exact", "trigram-jaccard")]
    assert polls["n"] >= 8 and workers["answers"] >= 60  # it waited past several timeouts, for the workers
    assert all_ended(workers["procs"])


def test_a_process_cpu_time_is_read_while_it_runs():
    if not Path(f"/proc/{os.getpid()}/stat").exists():
        assert W._cpu_seconds(os.getpid()) is None  # no /proc: the wall clock alone decides
        return
    start = W._cpu_seconds(os.getpid())
    assert start is not None and start > 0
    while W._cpu_seconds(os.getpid()) == start:  # computing moves it (a clock tick: 10 ms at most)
        sum(range(10_000))
    assert W._cpu_seconds(os.getpid()) > start
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert W._cpu_seconds(gone.pid) is None


def test_workers_that_cannot_start_leave_the_scan_to_this_process(corpus, workers, monkeypatch):
    queries, chunks = corpus
    monkeypatch.setattr(W, "_CHILD", "import sys; sys.stderr.write('cannot start' + chr(10)); sys.exit(3)  # {root!r}")
    with pytest.warns(RuntimeWarning, match=r"exit code 3.*cannot start"):
        result = watchdog(lambda: L.find_leaks(queries, iter(chunks), modes=("trigram-jaccard",), workers=2))
    assert digest(result) == PINNED[("trigram-jaccard",)]
    assert workers["answers"] == 0 and all_ended(workers["procs"])


def test_a_worker_that_reports_an_error_leaves_the_scan_to_this_process(corpus, workers, monkeypatch):
    queries, chunks = corpus
    monkeypatch.setattr(W, "_init_payload", lambda *a: b"\x05\x00\x00\x00\x00\x00\x00\x00{bad}")
    with pytest.warns(RuntimeWarning, match="JSONDecodeError"):
        result = watchdog(lambda: L.find_leaks(queries, iter(chunks), modes=("trigram-jaccard",), workers=2))
    assert digest(result) == PINNED[("trigram-jaccard",)]
    assert all_ended(workers["procs"])


# --------------------------------------------------------------------------- stopping early


@pytest.mark.parametrize("stop", [KeyboardInterrupt, lambda: InputError("c.jsonl", 9, "invalid JSON")])
def test_a_scan_stopped_early_leaves_no_worker_running(corpus, workers, stop):
    queries, chunks = corpus

    def chunks_then_stop():
        for i, chunk in enumerate(chunks):
            if i == 2500:
                assert workers["answers"] > 0
                raise stop()
            yield chunk

    with pytest.raises((KeyboardInterrupt, InputError)):
        watchdog(lambda: L.find_leaks(queries, chunks_then_stop(), workers=2))
    assert len(workers["procs"]) == 2 and all_ended(workers["procs"])


DRIVER = textwrap.dedent("""
    import signal, subprocess, sys, time
    # Ctrl-C raises KeyboardInterrupt here even when this process was started with SIGINT ignored
    # (a job started with & by a shell without job control, as CI may start the suite).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.path.insert(0, {repo!r})
    import gate.checks.leakage as L
    sys.path.insert(0, {tests!r})
    from test_leak_workers import pinned_corpus
    L.WORKERS_AFTER_CHUNKS, L.SAMPLE_CHUNKS, L.WAIT_FOR_WORKERS, L.BATCH_CHARS = 0, 300, True, 20000
    pids = []
    real = subprocess.Popen
    def popen(args, *a, **kw):
        proc = real(args, *a, **kw)
        pids.append(proc.pid)
        return proc
    subprocess.Popen = popen
    queries, chunks = pinned_corpus()
    def slow():
        for i, chunk in enumerate(chunks):
            if i == 2000:
                print(" ".join(map(str, pids)), flush=True)
                time.sleep(3600)  # until the Ctrl-C
            yield chunk
    L.find_leaks(queries, slow(), workers=2)
""")


def _identity(pid: int) -> tuple[int, str] | None:
    """(pid, start time) of a live process, None when it has ended (a zombie has ended): a pid the
    system has given to a new process since is not taken for the old one."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else (pid, fields[19])


def _read_line(stream, timeout: float) -> str:
    """A line from ``stream``, failing (not hanging) when none comes in ``timeout`` seconds."""
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    assert got, f"no line in {timeout:g} s"
    return got[0]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_on_a_scanning_process_leaves_no_worker_running(tmp_path):
    # Ctrl-C reaches the whole process group: the workers ignore it, the scan kills them.
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER.format(repo=str(REPO), tests=str(REPO / "tests" / "checks")))
    proc = subprocess.Popen([sys.executable, str(driver)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, cwd=tmp_path)
    try:
        line = _read_line(proc.stdout, 600)  # bounds a hang only: the driver prints at chunk 2,000
        pids = [int(p) for p in line.split()]
        assert len(pids) == 2, (line, proc.stderr.read() if proc.poll() is not None else "")
        workers = [_identity(p) for p in pids]
        assert None not in workers
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert "KeyboardInterrupt" in proc.stderr.read()
    # The scan killed its workers and waited for them before the driver ended: none is left (a
    # process that merely has one of their pids now is another process).
    assert [w for w in workers if _identity(w[0]) == w] == []


# --------------------------------------------------------------------------- what the workers run, and with what


def test_the_workers_never_see_the_token(corpus, workers, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_secret")
    monkeypatch.setenv("INPUT_TOKEN", "ghs_secret")
    monkeypatch.setenv("ACTIONS_RUNTIME_TOKEN", "ghs_secret")
    queries, chunks = corpus
    result = watchdog(lambda: L.find_leaks(queries, iter(chunks[:1500]), workers=2))
    assert workers["answers"] > 0 and len(workers["envs"]) == 2
    for env in workers["envs"]:
        assert env is not None and "ghs_secret" not in env.values() and "ACTIONS_RUNTIME_TOKEN" not in env
    assert result.count > 0


def test_a_gate_module_in_the_working_directory_is_not_what_the_workers_run(corpus, workers, tmp_path, monkeypatch):
    # In CI the working directory is the checked-out repository: its gate.py must not stand in for
    # the gate in a worker (it could answer that no chunk matches and hide a leak).
    marker = tmp_path / "ran"
    work = tmp_path / "work"
    (work / "gate" / "checks").mkdir(parents=True)
    for shadow in ("gate.py", "gate/__init__.py", "gate/checks/__init__.py", "gate/checks/leak_filter_worker.py",
                   "numpy.py", "json.py", "struct.py"):
        (work / shadow).write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    monkeypatch.chdir(work)
    queries, chunks = corpus
    result = watchdog(lambda: L.find_leaks(queries, iter(chunks), modes=("trigram-jaccard",), workers=2))
    assert digest(result) == PINNED[("trigram-jaccard",)]
    assert workers["answers"] > 0 and not marker.exists()
