"""The reference retriever's timings: modelled from counted work, the same on every machine, slower
for the demo's PR (embedding dim 128 -> 256, character n-grams), a cost only with a price."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("faiss")
pytest.importorskip("bm25s")

from gate.demo import world as W  # noqa: E402
from gate.inputs.readers.queries import read_queries  # noqa: E402
from gate.inputs.readers.timings import read_timings, timings_path_for  # noqa: E402
from gate.inputs.retrieval_config import load_retrieval_config  # noqa: E402
from gate.runs import reference as R  # noqa: E402
from gate.runs.reference_latency import QueryWork, modelled_latency_ms, query_cost  # noqa: E402
from gate.runs.request import RunRequest  # noqa: E402


def _produce(world: W.World, tmp: Path, path: Path, seed: int = 0, corpus: Path | None = None,
             changes: dict | None = None, name: str = "run"):
    config = load_retrieval_config(path)
    config = config.with_values(changes) if changes else config
    request = RunRequest(purpose="test", config=config, queries=str(world.golden_v5), queries_sha256="q",
                         corpus=str(corpus or world.corpus_v2), corpus_sha256="c", seed=seed)
    out = tmp / f"{name}.run"
    R.ReferenceRunner({}).produce(request, tmp / "config.yml", out, tmp / f"{name}.log")
    return read_timings(timings_path_for(out), read_queries(world.golden_v5).ids())


def test_every_query_gets_a_modelled_latency_and_the_run_its_wall_time(demo_world, tmp_path):
    timings = _produce(demo_world, tmp_path, demo_world.retrieval_old)
    assert timings.query_ids == tuple(read_queries(demo_world.golden_v5).ids())
    assert np.all(timings.latency_ms > 0)
    assert timings.cost is None  # the config sets no price
    assert timings.run_wall_time_ms is not None and timings.run_wall_time_ms > 0


def test_the_same_seed_gives_the_same_latencies(demo_world, tmp_path):
    first = _produce(demo_world, tmp_path, demo_world.retrieval_old, name="a")
    R.clear_caches()  # rebuilt from scratch: the counts, not the machine, make the numbers
    again = _produce(demo_world, tmp_path, demo_world.retrieval_old, name="b")
    assert first.latency_ms.tolist() == again.latency_ms.tolist()


def test_the_demo_pr_is_slower_by_the_model(demo_world, tmp_path):
    old = _produce(demo_world, tmp_path, demo_world.retrieval_old, name="old")
    new = _produce(demo_world, tmp_path, demo_world.retrieval_new, name="new")
    assert np.percentile(new.latency_ms, 95) > 1.2 * np.percentile(old.latency_ms, 95)
    assert np.percentile(new.latency_ms, 50) > np.percentile(old.latency_ms, 50)


def test_a_price_gives_a_cost_per_query(demo_world, tmp_path):
    timings = _produce(demo_world, tmp_path, demo_world.retrieval_old,
                       changes={"embedding.price_per_million_tokens": 0.02})
    assert timings.cost is not None and np.all(timings.cost > 0)


def test_the_model_converts_counted_work_with_fixed_unit_costs():
    work = QueryWork(characters=100, tokens=5, features=10, dimension=128, distances=500, postings=200,
                     candidates=50)
    # 1 + 0.2 + 0.256 + 1.28 + 0.1 + 0.1
    assert modelled_latency_ms(work) == pytest.approx(2.936)
    wider = QueryWork(**{**work.__dict__, "dimension": 256})
    assert modelled_latency_ms(wider) > modelled_latency_ms(work)
    assert query_cost(work, None) is None
    assert query_cost(work, 2.0) == pytest.approx(1e-5)


def test_the_command_line_entry_writes_the_sidecar(demo_world, tmp_path):
    from gate.runs.reference_main import main

    timings_path = tmp_path / "t.jsonl"
    code = main(["--config", str(demo_world.retrieval_old), "--queries", str(demo_world.golden_v5),
                 "--corpus", str(demo_world.corpus_v2), "--output", str(tmp_path / "r.run"),
                 "--timings", str(timings_path), "--quiet"])
    assert code == 0
    lines = [json.loads(line) for line in timings_path.read_text().splitlines()]
    assert "run_wall_time_ms" in lines[-1]
    assert all(set(line) == {"query_id", "latency_ms"} for line in lines[:-1])
