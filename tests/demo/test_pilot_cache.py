"""The demo's pilot calibration comes from the shipped cache only when a fresh pilot would read exactly
the same inputs, and then gives exactly what a fresh pilot computes (gate.demo.pilot_cache)."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("faiss")
pytest.importorskip("bm25s")

from gate.demo import pilot_cache as P  # noqa: E402
from gate.demo import world as W  # noqa: E402


@pytest.fixture(scope="module")
def default_world(tmp_path_factory):
    return W.build_world(tmp_path_factory.mktemp("world"), seed=7, scale=1.0)


def test_the_default_demo_world_finds_its_pilot_in_the_shipped_cache(default_world):
    # Fails when an edit to the retriever, the scoring or the world generator changed what the
    # pilot reads: refresh the entry with `python -m gate.demo.pilot_refresh` (the demo stays right
    # meanwhile, only slower).
    assert default_world.pilot_source == "cached"


def test_a_fresh_pilot_computes_exactly_the_cached_scores(tmp_path, default_world):
    fresh = W.build_world(tmp_path / "fresh", seed=7, scale=1.0, pilot_cache="off")
    assert fresh.pilot_source == "computed"
    assert fresh.pilot == default_world.pilot  # the same golden set reached the same targets
    for name in ("golden-v5.jsonl", "qrels-v5.txt", "golden-v4.jsonl", "qrels-v4.txt"):
        assert (fresh.root / name).read_bytes() == (default_world.root / name).read_bytes(), name


def test_other_inputs_miss_the_cache(tmp_path, demo_world):
    assert demo_world.scale == 0.1 and demo_world.pilot_source == "computed"  # seed 7 at a tenth of the scale
    assert W.build_world(tmp_path / "plain", seed=7, scale=0.1, calibrate=False).pilot_source == "none"


def test_the_key_covers_candidates_corpora_configs_seeds_and_code(tmp_path, monkeypatch):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "a", "text": "x"}\n')
    cands = [("p_1", "how to rotate keys", {"a": 1})]
    base = P.pilot_key(cands, {"v1": corpus}, {"old": {"k": 1}}, (0,))
    assert P.pilot_key(cands, {"v1": corpus}, {"old": {"k": 1}}, (0,)) == base
    assert P.pilot_key([("p_1", "how to rotate key", {"a": 1})], {"v1": corpus}, {"old": {"k": 1}}, (0,)) != base
    assert P.pilot_key([("p_1", "how to rotate keys", {"a": 2})], {"v1": corpus}, {"old": {"k": 1}}, (0,)) != base
    assert P.pilot_key(cands, {"v1": corpus}, {"old": {"k": 2}}, (0,)) != base
    assert P.pilot_key(cands, {"v1": corpus}, {"old": {"k": 1}}, (1,)) != base
    corpus.write_text('{"id": "a", "text": "y"}\n')
    assert P.pilot_key(cands, {"v1": corpus}, {"old": {"k": 1}}, (0,)) != base
    corpus.write_text('{"id": "a", "text": "x"}\n')
    code = tmp_path / "reference.py"
    code.write_text("# v1\n")
    monkeypatch.setattr(P, "_code_files", lambda: [code])
    monkeypatch.setattr(P, "_GATE", tmp_path)
    one = P.pilot_key(cands, {"v1": corpus}, {"old": {"k": 1}}, (0,))
    code.write_text("# v2\n")
    assert P.pilot_key(cands, {"v1": corpus}, {"old": {"k": 1}}, (0,)) != one


def test_store_and_lookup_round_trip_bit_for_bit_and_reject_bad_entries(tmp_path):
    path = tmp_path / "cache.json"
    cells = [("old", "v1"), ("new", "v1")]
    scores = {cells[0]: np.array([0.1, 1 / 3]), cells[1]: np.array([0.0, 0.7071067811865476])}
    P.store("k1", scores, path, label="x")
    found = P.lookup("k1", cells, 2, path)
    assert all(found[c].tobytes() == scores[c].tobytes() for c in cells)
    assert P.lookup("k2", cells, 2, path) is None
    assert P.lookup("k1", cells, 3, path) is None  # another pool size
    P.store("k2", scores, path, label="x")  # the same label replaces
    assert P.lookup("k1", cells, 2, path) is None and P.lookup("k2", cells, 2, path) is not None
    for text in ("not json", json.dumps({"format": "other", "entries": []}), json.dumps([1])):
        path.write_text(text)
        assert P.lookup("k2", cells, 2, path) is None


@pytest.mark.parametrize("text", [
    json.dumps({"format": P._FORMAT, "entries": {"key": "k1"}}),
    json.dumps({"format": P._FORMAT, "entries": ["x", None, 5]}),
    json.dumps({"format": P._FORMAT, "entries": 5}),
    "[" * 100_000 + "]" * 100_000,
    json.dumps({"format": P._FORMAT, "entries": [{"key": "k1", "scores": [1]}]}),
])
def test_a_damaged_cache_file_is_a_miss_not_a_crash(tmp_path, text):
    path = tmp_path / "cache.json"
    path.write_text(text)
    assert P.lookup("k1", [("old", "v1")], 2, path) is None
    P.store("k2", {("old", "v1"): np.array([0.5, 0.25])}, path)  # and store() starts it afresh
    assert P.lookup("k2", [("old", "v1")], 2, path) is not None


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "0.1", True, None])
def test_scores_that_are_not_finite_numbers_are_a_miss(tmp_path, bad):
    path = tmp_path / "cache.json"
    P.store("k1", {("old", "v1"): np.array([0.5, 0.25])}, path)
    data = json.loads(path.read_text())
    data["entries"][0]["scores"]["old/v1"][1] = bad
    path.write_text(json.dumps(data))
    assert P.lookup("k1", [("old", "v1")], 2, path) is None
