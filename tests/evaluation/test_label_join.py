"""The vectorised qrels join (gate.evaluation.label_join) against a dict lookup per row.

Every case is checked against the plainest possible reference: ``judgments[qid].get(docno)``
for each kept row. The keyed path is forced on (MIN_TABLE_ROWS = 0) so small cases take it,
and collisions are forced by replacing the docno hash, so the fallback is walked too. The
compiled join (labeljoin.c), where the install built it, is held to the same reference on the
same cases, and on docnos that differ only where a hash or a width could hide it.
"""

from __future__ import annotations

import numpy as np
import pytest

from gate.evaluation import label_join
from gate.evaluation.label_join import join_labels
from gate.evaluation.measures.ranking import NONPOOL


def _reference(judgments, qids, doc_ids, kept, kept_starts):
    out = np.full(len(kept), NONPOOL, dtype=np.int64)
    for i, qid in enumerate(qids):
        judged = judgments.get(qid, {})
        for slot in range(int(kept_starts[i]), int(kept_starts[i + 1])):
            out[slot] = judged.get(str(doc_ids[kept[slot]]), NONPOOL)
    return out


def _case(seed: int, alphabet: str = "abcdé7\u4e2d", queries: int = 40, depth: int = 30, width: int = 6,
          keep_depth: int | None = None, object_docs: bool = False):
    """Random judgments and a run over the same docno space (so many rows are judged), shuffled
    into a permutation ``kept`` like trec_order's, cut at ``keep_depth`` per query."""
    rng = np.random.default_rng(seed)
    letters = list(alphabet)

    def docno() -> str:
        return "".join(rng.choice(letters, size=int(rng.integers(1, width + 1))))

    space = sorted({docno() for _ in range(300)})
    qids = [f"q{i}" for i in range(queries)]
    judgments = {}
    for qid in qids:
        if rng.random() < 0.15:
            continue  # a query without judgments
        chosen = rng.choice(space, size=min(len(space), int(rng.integers(1, 25))), replace=False)
        judgments[qid] = {str(d): int(rng.integers(-1, 4)) for d in chosen}
    judgments["not-in-run"] = {"x": 1}
    docs, lens = [], []
    for _qid in qids:
        n = int(rng.integers(0, depth + 1))
        picked = rng.choice(space, size=min(n, len(space)), replace=False)
        docs.extend(str(d) for d in picked)
        lens.append(len(picked))
    doc_ids = np.array(docs, dtype=object if object_docs else str) if docs else np.array([], dtype="U1")
    lens = np.array(lens, dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(lens)))
    perm = np.concatenate([starts[i] + rng.permutation(lens[i]) for i in range(queries)]).astype(np.int64) \
        if len(docs) else np.zeros(0, dtype=np.int64)
    kept_lens = lens if keep_depth is None else np.minimum(lens, keep_depth)
    kept = np.concatenate([perm[starts[i]:starts[i] + kept_lens[i]] for i in range(queries)]).astype(np.int64)
    kept_starts = np.concatenate(([0], np.cumsum(kept_lens))).astype(np.int64)
    return judgments, qids, doc_ids, kept, kept_lens, kept_starts


@pytest.fixture
def keyed(monkeypatch):
    """The keyed (numpy) join on every size of case; yields the list of blocks it joined by key."""
    monkeypatch.setattr(label_join, "MIN_TABLE_ROWS", 0)
    monkeypatch.setattr(label_join, "COMPILED_JOIN", None)
    return _spy(monkeypatch, "_join_block")


def _spy(monkeypatch, name: str) -> list:
    """Replace label_join's function ``name`` by one recording each of its results."""
    results = []
    real = getattr(label_join, name)

    def spy(*args, **kwargs):
        done = real(*args, **kwargs)
        results.append(done)
        return done

    monkeypatch.setattr(label_join, name, spy)
    return results


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("keep_depth", [None, 5])
def test_keyed_join_equals_dict_lookups(keyed, seed, keep_depth):
    judgments, qids, doc_ids, kept, kept_lens, kept_starts = _case(seed, keep_depth=keep_depth)
    got = join_labels(judgments, qids, doc_ids, kept, kept_lens, kept_starts)
    assert np.array_equal(got, _reference(judgments, qids, doc_ids, kept, kept_starts))
    assert keyed and all(keyed), "the keyed path was not taken"


def test_blocks_of_queries_cover_every_row(keyed, monkeypatch):
    monkeypatch.setattr(label_join, "JOIN_BLOCK", 7)  # many blocks, some queries longer than one
    judgments, qids, doc_ids, kept, kept_lens, kept_starts = _case(3, depth=40)
    got = join_labels(judgments, qids, doc_ids, kept, kept_lens, kept_starts)
    assert np.array_equal(got, _reference(judgments, qids, doc_ids, kept, kept_starts))


@pytest.mark.parametrize("weak_hash", [
    lambda texts: np.zeros(len(texts), dtype=np.uint64),  # every docno collides
    lambda texts: np.ascontiguousarray(texts).view(np.uint32).reshape(len(texts), -1)[:, 0].astype(np.uint64),
])
def test_colliding_keys_fall_back_to_dict_lookups(keyed, monkeypatch, weak_hash):
    monkeypatch.setattr(label_join, "_text_hash", weak_hash)
    for seed in range(4):
        judgments, qids, doc_ids, kept, kept_lens, kept_starts = _case(seed)
        got = join_labels(judgments, qids, doc_ids, kept, kept_lens, kept_starts)
        assert np.array_equal(got, _reference(judgments, qids, doc_ids, kept, kept_starts))
    assert False in keyed  # the collisions were seen and those blocks fell back


def test_collision_between_a_judged_and_an_unjudged_docno_is_caught(keyed, monkeypatch):
    """Two docnos that share a key, one judged and retrieved only as the other: the key matches,
    the docnos do not, and the row must stay unjudged."""
    real = label_join._text_hash

    def hash_ab_alike(texts):
        out = real(texts)
        out[np.asarray(texts) == "b"] = real(np.array(["a"]))[0]
        return out

    monkeypatch.setattr(label_join, "_text_hash", hash_ab_alike)
    judgments = {"q": {"a": 3}}
    doc_ids = np.array(["b", "c"])
    kept = np.array([0, 1])
    got = join_labels(judgments, ["q"], doc_ids, kept, np.array([2]), np.array([0, 2]))
    assert got.tolist() == [NONPOOL, NONPOOL]


def test_hash_does_not_depend_on_array_width():
    narrow = np.array(["ab", "é\u4e2d"], dtype="U2")
    wide = narrow.astype("U40")
    assert np.array_equal(label_join._text_hash(narrow), label_join._text_hash(wide))
    assert label_join._text_hash(np.array(["ab"]))[0] != label_join._text_hash(np.array(["ba"]))[0]


def test_object_docnos_and_long_judged_docnos_take_the_dict_path(keyed):
    judgments, qids, doc_ids, kept, kept_lens, kept_starts = _case(5, object_docs=True)
    got = join_labels(judgments, qids, doc_ids, kept, kept_lens, kept_starts)
    assert np.array_equal(got, _reference(judgments, qids, doc_ids, kept, kept_starts))
    assert not keyed  # object docnos: no keyed block

    long_doc = "L" * 500
    judgments = {"q": {long_doc: 2, "short": 1}}
    doc_ids = np.array(["short", long_doc])
    got = join_labels(judgments, ["q"], doc_ids, np.array([1, 0]), np.array([2]), np.array([0, 2]))
    assert got.tolist() == [2, 1]


def test_judgments_changed_in_place_are_seen_by_the_next_join(keyed):
    """No table outlives its join: a library user who edits the judgments between two
    evaluations gets the edited labels."""
    judgments = {"q": {"a": 1}}
    args = (["q"], np.array(["a", "b"]), np.array([0, 1]), np.array([2]), np.array([0, 2]))
    assert join_labels(judgments, *args).tolist() == [1, NONPOOL]
    judgments["q"]["b"] = 3
    judgments["q"]["a"] = 0
    assert join_labels(judgments, *args).tolist() == [0, 3]
    assert keyed == [True, True]


def test_small_joins_take_the_dict_lookups(monkeypatch):
    joined = []
    monkeypatch.setattr(label_join, "_join_block", lambda *args: joined.append(1))
    monkeypatch.setattr(label_join, "_compiled_join", lambda *args: joined.append(1))
    judgments, qids, doc_ids, kept, kept_lens, kept_starts = _case(1)
    assert len(kept) < label_join.MIN_TABLE_ROWS
    got = join_labels(judgments, qids, doc_ids, kept, kept_lens, kept_starts)
    assert np.array_equal(got, _reference(judgments, qids, doc_ids, kept, kept_starts))
    assert not joined


def test_a_judged_docno_ending_in_nul_keeps_the_dict_lookups(keyed):
    """A 'U' array drops trailing NULs: the table would match 'a' to a judgment of 'a\\0'."""
    judgments = {"q": {"a\x00": 2, "b": 1}}
    doc_ids = np.array(["a", "b"])
    got = join_labels(judgments, ["q"], doc_ids, np.array([0, 1]), np.array([2]), np.array([0, 2]))
    assert got.tolist() == [NONPOOL, 1]


def test_a_judgment_of_another_query_never_labels_a_row(keyed, monkeypatch):
    """Keys that forget the query (as the compared high bits of two queries' keys can meet):
    q2's row of a docno judged only for q1 must stay unjudged (found by the adversarial review)."""
    monkeypatch.setattr(label_join, "_keys", lambda hashes, positions: hashes.copy())
    judgments = {"q1": {"DOC-465": 3, "x": 1}, "q2": {"y": 1}}
    doc_ids = np.array(["a", "DOC-465"])
    got = join_labels(judgments, ["q1", "q2"], doc_ids, np.array([0, 1]), np.array([1, 1]), np.array([0, 1, 2]))
    assert got.tolist() == [NONPOOL, NONPOOL]
    assert keyed == [False]  # the block was caught and joined by dict lookups


needs_compiled = pytest.mark.skipif(label_join.COMPILED_JOIN is None,
                                    reason="labeljoin.c was not compiled at install (no C compiler)")


@pytest.fixture
def compiled(monkeypatch):
    """The compiled join on every size of case; yields its results (True: joined in C)."""
    monkeypatch.setattr(label_join, "MIN_TABLE_ROWS", 0)
    monkeypatch.setattr(label_join, "_join_block", lambda *args: pytest.fail("the numpy join ran"))
    return _spy(monkeypatch, "_compiled_join")


@needs_compiled
@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("keep_depth", [None, 5])
@pytest.mark.parametrize("alphabet", ["abcdé7\u4e2d", "ab", "\U0001f600\u00e9x"])
def test_compiled_join_equals_dict_lookups(compiled, seed, keep_depth, alphabet):
    judgments, qids, doc_ids, kept, kept_lens, kept_starts = _case(seed, alphabet=alphabet, keep_depth=keep_depth)
    got = join_labels(judgments, qids, doc_ids, kept, kept_lens, kept_starts)
    assert np.array_equal(got, _reference(judgments, qids, doc_ids, kept, kept_starts))
    assert compiled == [True]


@needs_compiled
def test_compiled_join_tells_apart_what_a_width_or_a_prefix_hides(compiled):
    """Docnos that are prefixes of each other, run and table of other widths, the same docno judged
    for one query and retrieved for another: each row gets its own query's label or none."""
    judgments = {"q1": {"ab": 1, "abc": 2, "DOC-465": 3}, "q2": {"a": 4, "abcd" * 5: 5}}
    run_docs = ["a", "ab", "abc", "abcd", "DOC-465", "abcd" * 5, "abcd" * 5 + "e"]
    doc_ids = np.array(run_docs, dtype="U40")  # wider than the table
    qids = ["q1", "q2"]
    kept = np.array([0, 1, 2, 3, 4, 5, 6, 0, 1, 4, 5, 6], dtype=np.int64)
    kept_lens = np.array([7, 5])
    kept_starts = np.array([0, 7, 12])
    got = join_labels(judgments, qids, doc_ids, kept, kept_lens, kept_starts)
    assert np.array_equal(got, _reference(judgments, qids, doc_ids, kept, kept_starts))
    assert got.tolist() == [NONPOOL, 1, 2, NONPOOL, 3, NONPOOL, NONPOOL, 4, NONPOOL, NONPOOL, 5, NONPOOL]
    narrow = np.array(run_docs[:5], dtype="U7")  # narrower than the table
    got = join_labels(judgments, qids, narrow, kept[kept < 5], np.array([5, 3]), np.array([0, 5, 8]))
    assert got.tolist() == [NONPOOL, 1, 2, NONPOOL, 3, 4, NONPOOL, NONPOOL]
    assert compiled == [True, True]


@needs_compiled
def test_compiled_join_refuses_a_table_that_holds_a_docno_twice():
    """Two judgments of one query that the table cannot tell apart: the compiled join says so
    (join_labels then joins by dict), and labels nothing."""
    table = label_join._JudgmentTable(index={"q": 0}, starts=np.array([0, 2]), docs=np.array(["a", "a"]),
                                      labels=np.array([1, 2]), hashes=None)
    labels = np.full(1, NONPOOL, dtype=np.int64)
    assert not label_join._compiled_join(table, ["q"], np.array(["a"]), np.array([0]), np.array([0, 1]), labels)


@needs_compiled
def test_compiled_join_on_a_large_run_with_many_collisions_of_its_slots(compiled):
    """Many queries judging the same docnos (every probe chain is long and mixes queries)."""
    rng = np.random.default_rng(7)
    space = [f"D{i}" for i in range(50)]
    qids = [f"q{i}" for i in range(400)]
    judgments = {q: {d: int(rng.integers(0, 4)) for d in rng.choice(space, 30, replace=False)} for q in qids}
    docs = np.array([d for _ in qids for d in rng.choice(space, 40, replace=False)])
    kept = np.arange(len(docs), dtype=np.int64)
    kept_lens = np.full(len(qids), 40)
    kept_starts = np.arange(len(qids) + 1, dtype=np.int64) * 40
    got = join_labels(judgments, qids, docs, kept, kept_lens, kept_starts)
    assert np.array_equal(got, _reference(judgments, qids, docs, kept, kept_starts))


@needs_compiled
def test_compiled_join_with_a_query_listed_many_times(compiled):
    """Two positions of one query id share its judgments: each judgment is in the C table once
    (keyed by the group), so the table never fills up (it once looped forever)."""
    judgments = {"q": {"a": 1}}
    for copies in (1, 16, 17, 40):
        qids = ["q"] * copies
        doc_ids = np.array(["a", "b"])
        kept = np.tile(np.array([0, 1]), copies)
        kept_lens = np.full(copies, 2)
        kept_starts = np.arange(copies + 1) * 2
        got = join_labels(judgments, qids, doc_ids, kept, kept_lens, kept_starts)
        assert got.tolist() == [1, NONPOOL] * copies
    assert all(compiled)


@needs_compiled
def test_compiled_join_compares_a_docno_past_a_nul(compiled):
    """A run docno holding NUL ('a\\x00b') is not the judged 'a' (the hash stops at the NUL; the
    comparison does not)."""
    judgments = {"q": {"a": 3}}
    got = join_labels(judgments, ["q"], np.array(["a\x00b", "a"]), np.array([0, 1]), np.array([2]),
                      np.array([0, 2]))
    assert got.tolist() == [NONPOOL, 3]
    assert compiled == [True]


@needs_compiled
@pytest.mark.parametrize("bad", ["kept past doc_ids", "negative kept", "starts past kept", "starts too short",
                                 "starts going back"])
def test_compiled_join_never_gets_arrays_that_do_not_fit(monkeypatch, bad):
    """The C code trusts its indexes: arrays that do not fit are refused before the call, and the
    numpy path answers as it does without compiled code (an error, or numpy's own indexing)."""
    monkeypatch.setattr(label_join, "MIN_TABLE_ROWS", 0)
    called = []
    monkeypatch.setattr(label_join, "COMPILED_JOIN", lambda *args: called.append(1) or 0)
    judgments = {"q": {"a": 1}, "r": {"b": 2}}
    args = {"qids": ["q", "r"], "doc_ids": np.array(["a", "b"]), "kept": np.array([0, 1]),
            "kept_lens": np.array([1, 1]), "kept_starts": np.array([0, 1, 2])}
    if bad == "kept past doc_ids":
        args["kept"] = np.array([0, 10**9])
    elif bad == "negative kept":
        args["kept"] = np.array([0, -1])
    elif bad == "starts past kept":
        args["kept_starts"] = np.array([0, 1, 5])
    elif bad == "starts too short":
        args["kept_starts"] = np.array([0, 1])
    else:
        args["kept_starts"] = np.array([0, 2, 1])
    try:
        join_labels(judgments, **args)
    except (IndexError, ValueError):
        pass
    assert not called


def test_big_endian_docnos_take_the_dict_lookups(keyed):
    judgments = {"q": {"a": 1, "bb": 2}}
    doc_ids = np.array(["bb", "a"]).astype(">U2")
    got = join_labels(judgments, ["q"], doc_ids, np.array([0, 1]), np.array([2]), np.array([0, 2]))
    assert got.tolist() == [2, 1]
    assert not keyed
