"""The reference runner: a valid run for every query, seeds that fully determine it, a real noise band
from the HNSW insertion order, and the demo's 2x2 (the new model helps on v1, not on v2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("faiss")
pytest.importorskip("bm25s")

from gate.common.errors import InputError  # noqa: E402
from gate.demo import world as W  # noqa: E402
from gate.evaluation.evaluate import evaluate  # noqa: E402
from gate.inputs.readers.corpus import iter_corpus  # noqa: E402
from gate.inputs.readers.queries import read_queries  # noqa: E402
from gate.inputs.readers.records import Qrels  # noqa: E402
from gate.inputs.readers.runs import read_run  # noqa: E402
from gate.inputs.retrieval_config import RetrievalConfig, load_retrieval_config  # noqa: E402
from gate.inputs.universe import query_universe  # noqa: E402
from gate.runs import reference as R  # noqa: E402
from gate.runs.request import RunnerFailed, RunRequest  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SCALE = 0.1


@pytest.fixture()
def world(demo_world) -> W.World:
    assert demo_world.scale == SCALE
    return demo_world  # tests/demo/conftest.py: built once for this module and the others that read it


def _config(world: W.World, which: str = "new", **changes) -> RetrievalConfig:
    path = world.retrieval_new if which == "new" else world.retrieval_old
    config = load_retrieval_config(path)
    return config.with_values(changes) if changes else config


def _request(world: W.World, config: RetrievalConfig, seed: int = 0, queries: Path | None = None,
             corpus: Path | None = None) -> RunRequest:
    return RunRequest(purpose=f"test seed {seed}", config=config, queries=str(queries or world.golden_v5),
                      queries_sha256="q", corpus=str(corpus or world.corpus_v2), corpus_sha256="c", seed=seed)


def _produce(world: W.World, tmp: Path, config: RetrievalConfig, seed: int = 0, name: str = "run",
             runner: R.ReferenceRunner | None = None, **kw) -> Path:
    out = tmp / f"{name}.run"
    (runner or R.ReferenceRunner({})).produce(_request(world, config, seed, **kw), tmp / "config.yml", out,
                                              tmp / f"{name}.log")
    return out


def _qrels(world: W.World, parser: str) -> Qrels:
    """The golden judgments (anchored) mapped onto the chunks of the snapshot ``parser`` makes."""
    rows = [json.loads(line) for line in world.judgments_v5.read_text(encoding="utf-8").splitlines()]
    return Qrels("golden", W.mapped_judgments(rows, list(iter_corpus(world.corpus(parser)))))


def _ndcg(world: W.World, run_path: Path, parser: str = "v2") -> np.ndarray:
    qrels = _qrels(world, parser)
    universe = query_universe(qrels, read_queries(world.golden_v5))
    return np.asarray(evaluate(read_run(run_path), qrels, ["nDCG@10"], universe.query_ids)["nDCG@10"])


def test_a_valid_run_covering_every_query(world, tmp_path):
    out = _produce(world, tmp_path, _config(world))
    run = read_run(out)
    queries = read_queries(world.golden_v5).ids()
    assert sorted(run.query_ids) == sorted(queries)
    corpus_ids = {json.loads(line)["id"] for line in world.corpus_v2.read_text().splitlines()}
    for qid in queries:
        docs, scores = run.ranking(qid)
        assert len(docs) == 100 and len(set(docs.tolist())) == 100
        assert set(docs.tolist()) <= corpus_ids
        assert np.all(np.diff(scores) <= 0)  # written in trec_eval order
    log = (tmp_path / "run.log").read_text()
    assert "corpus-v2.jsonl" in log and "lsa-char-256" in log and "hnsw" in log


def test_the_parser_picks_the_snapshot(world, tmp_path):
    out = _produce(world, tmp_path, _config(world, "old"), name="old")
    docs = {d for qid in read_run(out).query_ids for d in read_run(out).ranking(qid)[0].tolist()}
    v1_ids = {json.loads(line)["id"] for line in world.corpus_v1.read_text().splitlines()}
    assert docs <= v1_ids and "corpus-v1.jsonl" in (tmp_path / "old.log").read_text()
    assert R.snapshot_path(str(world.corpus_v2), "v1") == str(world.corpus_v1)
    assert R.snapshot_path(str(world.root), "v2") == str(world.corpus_v2)  # a folder of snapshots
    assert R.snapshot_path(str(world.corpus_v1), None) == str(world.corpus_v1)  # no parser: as given
    with pytest.raises(InputError, match="no corpus snapshot for ingestion.parser 'v9'"):
        R.snapshot_path(str(world.corpus_v2), "v9")
    with pytest.raises(InputError, match="needs a corpus"):
        R.snapshot_path(None, "v1")


def test_same_seed_same_run_byte_for_byte(world, tmp_path):
    first = _produce(world, tmp_path, _config(world), seed=3, name="a").read_bytes()
    R.clear_caches()  # rebuild everything: the seed alone must fix the result
    second = _produce(world, tmp_path, _config(world), seed=3, name="b").read_bytes()
    assert first == second


def test_different_seeds_differ_slightly_through_the_hnsw_order(world, tmp_path):
    runs = [read_run(_produce(world, tmp_path, _config(world), seed=s, name=f"s{s}")) for s in range(4)]
    changed = sum(
        1 for qid in runs[0].query_ids
        if any(r.ranking(qid)[0].tolist() != runs[0].ranking(qid)[0].tolist() for r in runs[1:]))
    assert 0 < changed  # a nonzero noise band...
    means = [float(_ndcg(world, tmp_path / f"s{s}.run").mean()) for s in range(4)]
    assert 0 < max(means) - min(means) < 0.05  # ...and a narrow one
    # Without the dense leg nothing depends on the seed: the noise is the ANN index's.
    bm25 = [_produce(world, tmp_path, _config(world, **{"fusion.weight": 0.0}), seed=s, name=f"b{s}").read_bytes()
            for s in (0, 1)]
    assert bm25[0] == bm25[1]


def test_exact_search_is_what_the_index_approximates(world):
    settings = R.settings_from_config(_config(world).data)
    queries = [(q.query_id, q.text) for q in read_queries(world.golden_v5).queries][:20]
    corpus = R.snapshot_path(str(world.corpus_v2), settings.parser)
    exact = R.retrieve(settings, queries, corpus, 0, exact=True)
    assert exact == R.retrieve(settings, queries, corpus, 5, exact=True)  # no seed in exact search
    approx = R.retrieve(settings, queries, corpus, 0)
    overlap = np.mean([len({d for d, _ in exact[q][:10]} & {d for d, _ in approx[q][:10]}) / 10 for q, _ in queries])
    assert overlap > 0.8


def test_the_two_by_two(world, tmp_path, capsys):
    """The new model hurts the guarded strata badly on both snapshots (enough for the bounded-mean
    stratum test to show it), helps entity-attribute queries, and does worse on the fixed snapshot
    than on the old one (a negative interaction: its semantic match no longer stands in for the
    missing tables); the strata move in opposite directions. (Before the strata directions needed
    a distribution-free test, the story could keep the seed's "helps on the old snapshot".)"""
    old, new = _config(world, "old"), _config(world, "new")
    cells = {}
    for model, config in (("old", old), ("new", new)):
        for parser in ("v1", "v2"):
            cell = config.with_values({"ingestion.parser": parser})
            cells[(model, parser)] = _ndcg(world, _produce(world, tmp_path, cell, name=f"{model}-{parser}"), parser)
    means = {k: float(v.mean()) for k, v in cells.items()}
    d_v1 = means[("new", "v1")] - means[("old", "v1")]
    d_v2 = means[("new", "v2")] - means[("old", "v2")]
    with capsys.disabled():
        print(f"\n2x2 nDCG@10 (scale {SCALE}): " + ", ".join(f"{m}/{p} {v:.4f}" for (m, p), v in means.items())
              + f"; new-old on v1 {d_v1:+.4f}, on v2 {d_v2:+.4f}, interaction {d_v2 - d_v1:+.4f}")
    assert -0.15 < d_v1 < 0.0
    assert -0.15 < d_v2 < 0.0
    assert d_v2 - d_v1 < -0.005
    assert means[("old", "v2")] > means[("old", "v1")]  # the parser fix helps the old model
    qrels = _qrels(world, "v2")
    strata = {q.query_id: q.stratum for q in read_queries(world.golden_v5).queries}
    ids = query_universe(qrels, read_queries(world.golden_v5)).query_ids
    delta = cells[("new", "v2")] - cells[("old", "v2")]
    per = {s: float(delta[[strata[q] == s for q in ids]].mean()) for s in W.STRATA}
    assert per["navigational"] < 0 and per["error_string"] < 0
    assert per["entity_attribute"] > 0 and per["migration"] > 0
    entity_v1 = (cells[("new", "v1")] - cells[("old", "v1")])[[strata[q] == "entity_attribute" for q in ids]]
    assert entity_v1.mean() > 0.1


def test_identity_names_version_and_options():
    runner = R.ReferenceRunner({"ef_construction": 40})
    identity = runner.identity()
    assert identity["type"] == "reference" and identity["version"] == R.VERSION
    assert identity["options"]["ef_construction"] == 40 and identity["options"]["hnsw_m"] == 16
    assert identity["faiss"] and identity["bm25s"]
    assert R.ReferenceRunner({}).identity() != identity
    with pytest.raises(InputError, match="unknown option"):
        R.ReferenceRunner({"ef_constrution": 40})
    with pytest.raises(InputError, match="'{parser}'"):
        R.ReferenceRunner({"snapshot": "corpus.jsonl"})


@pytest.mark.parametrize("change, message", [
    ({"embedding.model": "bert-base"}, "not a reference model"),
    ({"embedding.dim": 384}, "embedding.dim' is 384 but model lsa-char-256 has 256"),
    ({"fusion.weight": 1.5}, "'fusion.weight' must be in \\[0, 1\\]"),
    ({"retrieve.depth": 0}, "'retrieve.depth' must be >= 1"),
    ({"ann.ef_search": "many"}, "'ann.ef_search' must be an integer"),
    ({"ingestion.parser": "v7"}, "no corpus snapshot for ingestion.parser 'v7'"),
])
def test_bad_configs_fail_the_run_with_a_message(world, tmp_path, change, message):
    with pytest.raises(RunnerFailed, match=message) as failure:
        _produce(world, tmp_path, _config(world, **change), name="bad")
    assert failure.value.log_path == tmp_path / "bad.log" and (tmp_path / "bad.log").exists()


def test_defaults_without_config_keys(world, tmp_path):
    settings = R.settings_from_config({})
    assert (settings.model, settings.dim, settings.parser, settings.depth) == ("lsa-128", 128, None, 100)
    out = _produce(world, tmp_path, RetrievalConfig("empty", {"retrieve": {"depth": 5}}), name="plain",
                   corpus=world.corpus_v1)
    assert all(len(read_run(out).ranking(q)[0]) == 5 for q in read_run(out).query_ids)


def test_weights_zero_and_one_are_the_single_legs(world):
    queries = [(q.query_id, q.text) for q in read_queries(world.golden_v5).queries][:10]
    corpus = str(world.corpus_v2)
    lexical = R.retrieve(R.settings_from_config({"fusion": {"weight": 0.0}, "retrieve": {"depth": 10}}),
                         queries, corpus, 0)
    dense = R.retrieve(R.settings_from_config({"fusion": {"weight": 1.0}, "retrieve": {"depth": 10}}),
                       queries, corpus, 0)
    for qid, _ in queries:
        assert [round(s * 61, 9) for _, s in lexical[qid]] == [round(61 / (60 + r), 9) for r in range(1, 11)]
        assert {d for d, _ in lexical[qid]} != {d for d, _ in dense[qid]}


def test_the_command_line_entry_writes_the_same_run(world, tmp_path):
    in_process = _produce(world, tmp_path, _config(world, "old"), seed=2, name="inproc").read_bytes()
    out = tmp_path / "cli.run"
    proc = subprocess.run(
        [sys.executable, "-m", "gate.runs.reference_main", "--config", str(world.retrieval_old),
         "--queries", str(world.golden_v5), "--corpus", str(world.corpus_v2), "--output", str(out), "--seed", "2"],
        cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "wrote 14000 rows for 140 queries" in proc.stderr
    assert out.read_bytes() == in_process  # another process, the same bytes
    bad = subprocess.run(
        [sys.executable, "-m", "gate.runs.reference_main", "--config", str(world.retrieval_old),
         "--queries", str(world.golden_v5), "--corpus", str(tmp_path / "nowhere" / "c.jsonl"),
         "--output", str(out)], cwd=REPO, capture_output=True, text=True)
    assert bad.returncode == 2 and "no corpus snapshot for ingestion.parser 'v1'" in bad.stderr


def test_a_query_nothing_matches_still_gets_a_row(world, tmp_path):
    queries = tmp_path / "odd.tsv"
    queries.write_text("q_odd\tzzqx vvkw\nq_ok\thow do i create a webhook\n", encoding="utf-8")
    out = _produce(world, tmp_path, _config(world, "old"), queries=queries, name="odd")
    run = read_run(out)
    assert run.ranking("q_odd")[0].tolist() == [R.NO_MATCH] and run.ranking("q_odd")[1].tolist() == [0.0]
    assert len(run.ranking("q_ok")[0]) == 100


def test_the_cache_computes_a_value_once_while_other_threads_wait():
    import threading
    import time

    cache, calls, results = R.BuildOnceCache(2), [], []

    def make():
        # Returns only once the three other threads wait on this value (not after a sleep that
        # a loaded machine may outlast before they even ask).
        calls.append(threading.current_thread().name)
        waiting = cache._slots["k"]._condition._waiters  # threads blocked in the slot's result()
        deadline = time.monotonic() + 600  # a hang guard only
        while len(waiting) < 3:
            assert time.monotonic() < deadline, f"{len(waiting)} of 3 threads waited for the value"
            time.sleep(0.001)
        return object()

    threads = [threading.Thread(target=lambda: results.append(cache.get_or("k", make))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len({id(r) for r in results}) == 1 and len(results) == 4


def test_a_failed_value_is_not_kept_and_its_waiters_see_the_error():
    cache = R.BuildOnceCache(2)
    with pytest.raises(ValueError, match="boom"):
        cache.get_or("k", lambda: (_ for _ in ()).throw(ValueError("boom")))
    assert "k" not in cache and cache.get_or("k", lambda: 5) == 5


def test_indexes_built_by_prefetch_threads_are_the_sequential_ones_byte_for_byte(world, tmp_path):
    import faiss

    settings = R.settings_from_config(_config(world, "old").data, "test")
    corpus = R.snapshot_path(str(world.corpus_v1), settings.parser)
    R.clear_caches()
    sequential = {}
    for seed in (3, 4, 5):
        R._prepare(settings, corpus, seed, R.OPTION_DEFAULTS)
        (key,) = [k for k in R._HNSW._slots if k[-3] == seed]
        sequential[seed] = faiss.serialize_index(R._HNSW._slots[key].result()[0])
    before = {seed: _produce(world, tmp_path, _config(world, "old"), seed, f"seq{seed}").read_bytes()
              for seed in (3, 4, 5)}
    R.clear_caches()
    R.prefetch([(settings, corpus, seed) for seed in (3, 4, 5)], workers=2).result(timeout=120)
    for seed in (3, 4, 5):
        (key,) = [k for k in R._HNSW._slots if k[-3] == seed]
        assert (faiss.serialize_index(R._HNSW._slots[key].result()[0]) == sequential[seed]).all()
        assert _produce(world, tmp_path, _config(world, "old"), seed, f"pre{seed}").read_bytes() == before[seed]


def test_a_prefetch_that_fails_leaves_the_error_to_the_run(world, tmp_path):
    settings = R.settings_from_config(_config(world, "old").data, "test")
    missing = str(tmp_path / "no-such-corpus.jsonl")
    R.clear_caches()
    R.prefetch([(settings, missing, 1)], workers=1).result(timeout=60)
    assert len(R._CORPORA) == 0  # nothing half-made is kept
    with pytest.raises(OSError):
        R.retrieve(settings, [("q", "text")], missing, 1)
    assert R.prefetch([], workers=2).done()


def test_prefetch_is_done_however_its_workers_end(monkeypatch):
    def die(*args):
        raise SystemExit(3)  # not an Exception: it ends the worker thread

    import threading

    monkeypatch.setattr(R, "_prepare", die)
    monkeypatch.setattr(threading, "excepthook", lambda args: None)  # the dying workers are the point
    settings = R.settings_from_config({}, "test")
    done = R.prefetch([(settings, "a", 1), (settings, "b", 2), (settings, "c", 3)], workers=2)
    assert done.result(timeout=30) is None
    for thread in threading.enumerate():
        if thread.name == "reference-prefetch":
            thread.join(timeout=30)
