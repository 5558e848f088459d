"""The qrels label of every ranked row: a join on (query, docno), vectorised.

A run of 10,000 queries x 1,000 documents is ten million (query, docno) pairs to look up among
the qrels' judgments. A dict lookup per row costs a Python string object and a hash per row; here
both sides get a 64-bit key instead, computed with numpy from the docno's code points and the
query's position, and the join turns around: the run's keys are sorted (a few hundred thousand at
a time) and every *judgment* is searched among them, so the searching is done once per judgment
(60 per query) instead of once per row (1,000 per query).

Exact, not probabilistic: equal strings always get equal keys, so no judged row can be missed;
every key match is then confirmed by comparing the two docnos themselves, and a block where two
different docnos share a key (never seen; about one chance in 10^9 per block) is joined with the
dict lookups instead. The dict path also serves docnos kept as Python objects (a run with a few
very long docnos) and qrels whose docnos are too long for a fixed-width array.

Where the install compiled ``labeljoin.c`` (see ``hatch_build.py``), the same table is joined in
C instead: a hash table of the judgments, each kept row looked up in it and confirmed on query
and docno, several times faster than the sort. It gives the same labels (the tests compare the
three paths), and the numpy join stays for installs without a compiler.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path

import numpy as np

from gate.common import compiled
from gate.evaluation.measures.ordering import concatenated_ranges
from gate.evaluation.measures.ranking import NONPOOL

__all__ = ["join_labels", "JOIN_BLOCK", "MIN_TABLE_ROWS"]

# Kept rows joined at once: the sort and the temporaries of a block stay in the cache, and a
# whole-run evaluation (read_run, then evaluate) holds a few MB of them, not 24 bytes a row.
JOIN_BLOCK = 1 << 18
# Judged docnos longer than this (in code points) send the join down the dict path: the qrels
# table is a fixed-width array, and one very long docno would widen every row.
_MAX_TABLE_WIDTH = 128


def _constants(count: int, seed: int) -> np.ndarray:
    """``count`` odd 64-bit multipliers from a splitmix64 sequence (fixed: keys never persist)."""
    out = np.empty(count, dtype=np.uint64)
    state = seed
    for i in range(count):
        state = (state + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        out[i] = (z ^ (z >> 31)) | 1
    return out


_POSITION = _constants(_MAX_TABLE_WIDTH + 1, 0x5EED)
_QUERY = np.uint64(0xD6E8FEB86659FD93)
_MIX = np.uint64(0xFF51AFD7ED558CCD)


def _text_hash(texts: np.ndarray) -> np.ndarray:
    """A 64-bit value per string of a ``'U'`` array: the sum of code point x position constant.

    Trailing padding is zero and adds nothing, so a string hashes alike in arrays of any width.
    """
    out = np.zeros(len(texts), dtype=np.uint64)
    width = texts.dtype.itemsize // 4
    if width == 0 or not len(texts):
        return out
    step = 1 << 16  # rows at once: the product temporary stays small
    product = np.empty(min(step, len(texts)), dtype=np.uint64)
    for a in range(0, len(texts), step):
        part = np.ascontiguousarray(texts[a:a + step])
        chars = part.view(np.uint32).reshape(len(part), width)
        into, scratch = out[a:a + len(part)], product[:len(part)]
        for j in range(width):
            np.multiply(chars[:, j], _POSITION[j], out=scratch)
            into += scratch
    return out


def _keys(text_hashes: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The join key of (docno hash, query position): mixed so that neighbours spread out."""
    key = text_hashes + positions.astype(np.uint64) * _QUERY
    key ^= key >> np.uint64(33)
    key *= _MIX
    key ^= key >> np.uint64(29)
    return key


@dataclass(frozen=True)
class _JudgmentTable:
    """The judgments of one join's queries, grouped per query: docno, label and docno hash."""

    index: dict[str, int]  # query id -> its group
    starts: np.ndarray  # int64, group g is starts[g]:starts[g + 1]
    docs: np.ndarray  # 'U'
    labels: np.ndarray  # int64
    hashes: np.ndarray | None  # uint64, _text_hash of docs (None for the compiled join)


# Fewer kept rows than this take the dict lookups: the table costs a dict lookup per judgment.
MIN_TABLE_ROWS = 1 << 14


def _build_table(judgments: Mapping[str, Mapping[str, int]], qids: Sequence[str], *,
                 hashed: bool = True) -> _JudgmentTable | None:
    """The judgments of ``qids`` (those that have any), built for one join: nothing is kept
    between joins, so judgments changed in place between two evaluations are never stale."""
    docs: list[str] = []
    labels: list[int] = []
    sizes: list[int] = []
    index: dict[str, int] = {}
    for qid in qids:
        qid_docs = judgments.get(qid)
        if not qid_docs or qid in index:
            continue
        index[qid] = len(sizes)
        docs.extend(qid_docs)
        labels.extend(qid_docs.values())
        sizes.append(len(qid_docs))
    if max(map(len, docs), default=0) > _MAX_TABLE_WIDTH:
        return None  # before the array: one long docno would widen every row of it
    if "\x00" in "".join(docs):
        # A docno holding NUL (no reader of ours lets one through): a 'U' array drops a trailing
        # one, so the table's docno could differ from the dict's key. The dict lookups stay exact.
        return None
    starts = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(np.asarray(sizes, dtype=np.int64), out=starts[1:])
    texts = np.array(docs, dtype=str) if docs else np.array([], dtype="U1")
    return _JudgmentTable(
        index=index,
        starts=starts,
        docs=texts,
        labels=np.asarray(labels, dtype=np.int64),
        hashes=_text_hash(texts) if hashed else None,
    )


def _load_compiled_join():
    source = Path(__file__).with_name("labeljoin.c")
    lib = compiled.load(source, "_labeljoin*.so", compiled.source_sha256(source))
    if lib is None:
        return None
    join = lib.rg_join_labels
    join.restype = ctypes.c_int64
    pointer, count = ctypes.c_void_p, ctypes.c_int64
    join.argtypes = [pointer, count, pointer, pointer, count, pointer, count, pointer, count, pointer, pointer,
                     pointer, count, pointer]
    return join


#: ``rg_join_labels`` of the compiled ``labeljoin.c``, or None (the numpy join then joins).
COMPILED_JOIN = _load_compiled_join()


def _compiled_join(table: _JudgmentTable, qids: Sequence[str], doc_ids: np.ndarray, kept: np.ndarray,
                   kept_starts: np.ndarray, labels: np.ndarray) -> bool:
    """Join every kept row in C; False (nothing labelled) when the table has a docno twice for one
    query, or when the arrays do not fit together (the numpy join then raises what it raises)."""
    docs = np.ascontiguousarray(doc_ids)
    kept = np.ascontiguousarray(kept, dtype=np.int64)
    kept_starts = np.ascontiguousarray(kept_starts, dtype=np.int64)
    # The C code trusts every index it is given: they are checked here, once per join.
    if len(kept_starts) != len(qids) + 1 or len(labels) != len(kept) or (len(qids) and (
            kept_starts[0] < 0 or kept_starts[-1] > len(kept) or bool((np.diff(kept_starts) < 0).any()))):
        return False
    if len(kept) and (int(kept.min()) < 0 or int(kept.max()) >= len(docs)):
        return False
    group = np.fromiter((table.index.get(q, -1) for q in qids), dtype=np.int64, count=len(qids))
    judged = np.ascontiguousarray(table.docs)
    capacity = 1 << max(4, (2 * len(judged)).bit_length())  # at most half full
    slots = np.full(2 * capacity, -1, dtype=np.int64)
    done = COMPILED_JOIN(docs.ctypes.data, docs.dtype.itemsize // 4, kept.ctypes.data, kept_starts.ctypes.data,
                         len(qids), group.ctypes.data, len(table.starts) - 1, judged.ctypes.data,
                         judged.dtype.itemsize // 4, table.starts.ctypes.data, table.labels.ctypes.data,
                         slots.ctypes.data, capacity, labels.ctypes.data)
    return done == 0


def join_labels(judgments: Mapping[str, Mapping[str, int]], qids: Sequence[str], doc_ids: np.ndarray,
                kept: np.ndarray, kept_lens: np.ndarray, kept_starts: np.ndarray) -> np.ndarray:
    """The qrels label of every kept row (NONPOOL where unjudged).

    Query ``i`` of ``qids`` owns kept rows ``kept_starts[i]:kept_starts[i + 1]``, which are rows
    ``kept[...]`` of ``doc_ids``; the result is aligned with ``kept``.
    """
    labels = np.full(len(kept), NONPOOL, dtype=np.int64)
    nonempty = np.flatnonzero(kept_lens)
    if not len(nonempty):
        return labels
    fixed_width = doc_ids.dtype.kind == "U" and doc_ids.dtype.isnative \
        and doc_ids.dtype.itemsize // 4 <= _MAX_TABLE_WIDTH
    table = None
    if fixed_width and len(kept) >= MIN_TABLE_ROWS:
        native = COMPILED_JOIN is not None
        table = _build_table(judgments, [qids[q] for q in nonempty.tolist()], hashed=not native)
        if native and table is not None:
            if _compiled_join(table, qids, doc_ids, kept, kept_starts, labels):
                return labels
            labels.fill(NONPOOL)
            table = None  # a docno twice in one group, or arrays that do not fit: the dict path joins
    # Blocks of whole queries of about JOIN_BLOCK rows (a query longer than that is a block alone).
    ends = kept_starts[nonempty + 1]
    cuts = [0]
    while cuts[-1] < len(nonempty):
        first = int(kept_starts[nonempty[cuts[-1]]])
        cuts.append(max(cuts[-1] + 1, int(np.searchsorted(ends, first + JOIN_BLOCK, side="right"))))
    # Most rows kept (a measure without a cutoff): hash the docnos where they lie, without
    # gathering them first.
    hashes = _text_hash(doc_ids) if table is not None and 2 * len(kept) >= len(doc_ids) else None
    for a, b in zip(cuts[:-1], cuts[1:]):
        block = nonempty[a:b]
        first, last = int(kept_starts[block[0]]), int(kept_starts[block[-1] + 1])
        done = table is not None and _join_block(table, qids, block, doc_ids, hashes, kept, kept_lens,
                                                 labels, first, last)
        if not done:
            _lookup_block(judgments, qids, block, doc_ids, kept, kept_starts, labels, first, last)
    return labels


def _join_block(table: _JudgmentTable, qids: Sequence[str], block: np.ndarray, doc_ids: np.ndarray,
                hashes: np.ndarray | None, kept: np.ndarray, kept_lens: np.ndarray, labels: np.ndarray,
                first: int, last: int) -> bool:
    """Join the rows ``first:last`` (queries ``block``) by key; False when two docnos share a key."""
    groups = np.fromiter((table.index.get(qids[q], -1) for q in block.tolist()), dtype=np.int64, count=len(block))
    judged = groups >= 0
    if not judged.any():
        return True
    # Judgments of the block's queries, keyed with the query's position in the block.
    g = groups[judged]
    assert table.hashes is not None  # the Python join's table (the compiled join's has none)
    sizes = table.starts[g + 1] - table.starts[g]
    rows_j = concatenated_ranges(table.starts[g], sizes)
    local = np.repeat(np.flatnonzero(judged), sizes)
    judgment_keys = _keys(table.hashes[rows_j], local)
    # The block's rows, keyed alike, sorted.
    rows = kept[first:last]
    row_hashes = hashes[rows] if hashes is not None else _text_hash(doc_ids[rows])
    row_queries = np.repeat(np.arange(len(block)), kept_lens[block])
    row_keys = _keys(row_hashes, row_queries)
    # The row's index rides in the key's low bits, so a plain sort (several times faster than an
    # argsort) gives the order too; the keys compared are the remaining high bits.
    bits = np.uint64(max(1, (len(rows) - 1).bit_length()))
    packed = (row_keys >> bits << bits) | np.arange(len(rows), dtype=np.uint64)
    packed.sort()
    order = (packed & ((np.uint64(1) << bits) - np.uint64(1))).astype(np.int64)
    sorted_keys = packed >> bits
    judgment_keys = judgment_keys >> bits
    if len(sorted_keys) > 1 and bool((sorted_keys[1:] == sorted_keys[:-1]).any()):
        return False  # two rows share a key (a docno appears once per query): a collision
    at = np.searchsorted(sorted_keys, judgment_keys)
    inside = at < len(sorted_keys)
    hit = np.zeros(len(judgment_keys), dtype=bool)
    hit[inside] = sorted_keys[at[inside]] == judgment_keys[inside]
    slots = order[at[hit]]
    # Confirmed on what the key stands for: the same query (the compared high bits of two
    # queries' keys can meet) and the same docno.
    if not bool((row_queries[slots] == local[hit]).all()
                and (doc_ids[rows[slots]] == table.docs[rows_j[hit]]).all()):
        return False  # a judgment shares its key with another query's row or another docno
    labels[first + slots] = table.labels[rows_j[hit]]
    return True


def _lookup_block(judgments: Mapping[str, Mapping[str, int]], qids: Sequence[str], block: np.ndarray,
                  doc_ids: np.ndarray, kept: np.ndarray, kept_starts: np.ndarray, labels: np.ndarray,
                  first: int, last: int) -> None:
    """The rows ``first:last`` by dict lookups (docnos as Python strings, a block at a time)."""
    docs = doc_ids[kept[first:last]].tolist()
    for q in block.tolist():
        judged = judgments.get(qids[q])
        if not judged:
            continue
        a, b = int(kept_starts[q]) - first, int(kept_starts[q + 1]) - first
        labels[first + a:first + b] = np.fromiter(map(judged.get, docs[a:b], repeat(NONPOOL)),
                                                  dtype=np.int64, count=b - a)
