"""Golden-query leakage: do the golden queries occur (nearly) verbatim in the corpus?

A golden query whose text sits in a corpus chunk tells nothing about retrieval
quality: any lexical retriever finds that chunk (often an FAQ page written from
the same tickets the queries came from). :func:`find_leaks` scans the corpus
once, streaming, and reports for each leaked query its best chunk.

Matching is on normalized text (:mod:`gate.checks.normalize`: NFKC, casefold,
punctuation and symbols replaced by a space, whitespace collapsed):

``exact``
    the normalized query occurs in the normalized chunk on token boundaries
    ("rate limit" is not found inside "accurate limits"). Score 1.0.
    Aho-Corasick over all queries at once (``pyahocorasick``); without that
    package, an index of the queries' first two tokens, checked token by token.

``trigram-jaccard``
    score = best Jaccard similarity between the character-trigram set of the
    normalized query (inner spaces included) and that of any window of the
    normalized chunk spanning as many tokens as the query (the whole chunk when
    the chunk is shorter); a match is ``score >= threshold``. It catches
    near-verbatim copies: changed case or punctuation, an inflected or changed
    word in a long enough query (a 3-word query tolerates a changed plural at
    its end, not in its middle). Trigram sets ignore word order except at word
    boundaries, so a reordering of the query's words usually scores >= 0.85 too.

How trigram mode avoids comparing every (query, chunk) pair: Jaccard(Q, W) >= t
implies |Q & W| >= ceil(t * |Q|), which gives three necessary conditions, each
cheaper than the next, checked with numpy over batches of chunks (see
:class:`_TrigramFilter`): enough of the query's rarest trigrams among the
chunk's positions (through an inverted index from trigram to queries, built over
the QUERIES), enough of all its trigrams in the chunk, enough in one window.
Only windows passing all three have their Jaccard computed exactly. Long chunks
are scanned as overlapping segments of SEGMENT_TOKENS tokens, so the work per
chunk stays proportional to its length.

A chunk that contains the query exactly is counted as an exact hit (score 1.0)
and skips the trigram verification (its window equals the query). When both
modes are on, a query matched exactly somewhere reports ``exact`` (score 1.0)
and that chunk; otherwise its best trigram chunk. ``chunks_matched`` counts the
chunks matched by any enabled mode. Ties keep the first chunk in corpus order.

Queries with fewer than ``min_tokens`` normalized tokens are too short to
attribute: they are listed in ``skipped_short`` and never matched or counted.
"""

from __future__ import annotations

import math
import os
from collections import Counter, deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from gate.checks.normalize import normalize, shingles, trigrams
from gate.common.errors import InputError
from gate.inputs.readers.records import Query

try:  # a fast C Aho-Corasick; optional at run time (see _TokenIndexMatcher)
    import ahocorasick as _ahocorasick
except ImportError:  # pragma: no cover - exercised by tests through the fallback class
    _ahocorasick = None

__all__ = [
    "MODES",
    "LeakMatch",
    "LeakageResult",
    "find_leaks",
    "render_text",
    "find_text_in_lines",
    "shingles",
]

MODES = ("exact", "trigram-jaccard")
DEFAULT_THRESHOLD = 0.85
DEFAULT_MIN_TOKENS = 3
SAMPLE_CHUNKS = 5000  # chunks whose trigram frequencies choose each query's index trigrams
SEGMENT_TOKENS = 128  # longer chunks are filtered in overlapping segments of this many tokens
BATCH_CHARS = 1 << 19  # characters of chunk text held at once by the trigram stage
PROGRESS_EVERY = 10_000


def _byte_key(s: str) -> bytes:
    return s.encode("utf-8", "surrogatepass")


@dataclass(frozen=True)
class LeakMatch:
    query_id: str
    text: str  # the query's text as given
    chunk_id: str  # its best chunk
    doc_id: str
    mode: str  # "exact" | "trigram-jaccard"
    score: float
    chunks_matched: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "query_id": self.query_id,
            "text": self.text,
            "chunk_id": self.chunk_id,
            "doc_id": self.doc_id,
            "mode": self.mode,
            "score": self.score,
            "chunks_matched": self.chunks_matched,
        }


@dataclass(frozen=True)
class LeakageResult:
    queries_checked: int  # queries long enough to attribute
    count: int  # == len(matched)
    matched: tuple[LeakMatch, ...]  # by query id, byte order
    skipped_short: tuple[str, ...]  # query ids, byte order
    modes: tuple[str, ...]
    threshold: float
    chunks_scanned: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "queries_checked": self.queries_checked,
            "count": self.count,
            "matched": [m.to_dict() for m in self.matched],
            "skipped_short": list(self.skipped_short),
            "modes": list(self.modes),
            "threshold": self.threshold,
            "chunks_scanned": self.chunks_scanned,
        }

    def matched_ids(self) -> set[str]:
        return {m.query_id for m in self.matched}

    def sources(self) -> list[tuple[str, int]]:
        """(source document, number of matched queries) by count, then byte order.

        The source is the match's ``doc_id``, or its chunk id before ``#`` when
        the chunk has no document id.
        """
        counts = Counter(_source(m) for m in self.matched)
        return sorted(counts.items(), key=lambda kv: (-kv[1], _byte_key(kv[0])))

    def recommendation(self) -> str | None:
        """What to do about the matches, naming the documents behind most of them."""
        groups = self.sources()
        if not groups:
            return None
        if len(groups) == 1:
            return f"exclude {groups[0][0]} from the snapshot or re-judge."
        named = groups[:3]
        parts = [f"{doc} ({n} {'match' if n == 1 else 'matches'})" for doc, n in named]
        listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
        text = f"exclude {listed} from the snapshot or re-judge."
        rest = groups[3:]
        if rest:
            n_docs, n_matches = len(rest), sum(n for _, n in rest)
            text += (
                f" {n_docs} more {'document holds' if n_docs == 1 else 'documents hold'}"
                f" {n_matches} {'match' if n_matches == 1 else 'matches'}."
            )
        return text


def _source(m: LeakMatch) -> str:
    return m.doc_id or m.chunk_id.partition("#")[0]


# --------------------------------------------------------------------------- exact matchers


class _AhoCorasickMatcher:
    """All normalized queries at once; a hit is ``" q "`` inside ``" chunk "``."""

    def __init__(self, patterns: dict[str, list[int]]):
        self._automaton = _ahocorasick.Automaton()
        for text, ids in patterns.items():
            self._automaton.add_word(f" {text} ", tuple(ids))
        self._empty = not patterns
        if not self._empty:
            self._automaton.make_automaton()

    def find(self, norm: str) -> set[int]:
        if self._empty:
            return set()
        found: set[int] = set()
        for _end, ids in self._automaton.iter(f" {norm} "):
            found.update(ids)
        return found


class _TokenIndexMatcher:
    """Fallback without pyahocorasick: queries indexed by their first two tokens."""

    def __init__(self, patterns: dict[str, list[int]]):
        self._single: dict[str, tuple[int, ...]] = {}
        self._index: dict[tuple[str, str], list[tuple[tuple[str, ...], tuple[int, ...]]]] = {}
        for text, ids in patterns.items():
            toks = tuple(text.split(" "))
            if len(toks) == 1:
                self._single[toks[0]] = tuple(ids)
            else:
                self._index.setdefault(toks[:2], []).append((toks, tuple(ids)))

    def find(self, norm: str) -> set[int]:
        found: set[int] = set()
        if not norm:
            return found
        toks = norm.split(" ")
        if self._single:
            for tok in toks:
                ids = self._single.get(tok)
                if ids is not None:
                    found.update(ids)
        index = self._index
        if index:
            m = len(toks)
            for i, pair in enumerate(zip(toks, toks[1:])):
                entries = index.get(pair)
                if entries is not None:
                    for qtoks, ids in entries:
                        if i + len(qtoks) <= m and tuple(toks[i : i + len(qtoks)]) == qtoks:
                            found.update(ids)
        return found


def _exact_matcher(patterns: dict[str, list[int]]):
    if _ahocorasick is not None:
        return _AhoCorasickMatcher(patterns)
    return _TokenIndexMatcher(patterns)


# --------------------------------------------------------------------------- trigram filter


class _TrigramFilter:
    """Candidate filter and window bound for trigram-Jaccard, vectorized over a batch of segments.

    For a query with trigram set Q, Jaccard(Q, W) >= t needs |Q & W| >= alpha =
    ceil(t * |Q|): W misses at most ``slack = |Q| - alpha`` trigrams of Q. Three
    necessary conditions, each cheaper than the next, narrow a batch down to the
    few windows whose Jaccard is computed exactly (in Python, on strings):

    1. *prefix count*: for any subset S of Q, |S & W| >= |S| - slack. Each query is
       indexed under S = its ``slack + EXTRA_TRIGRAMS`` rarest trigrams (rarity =
       frequency in the corpus read so far; the index is rebuilt after the first
       batch and after SAMPLE_CHUNKS chunks; any S is correct, rare ones are
       fast). A (segment, query) pair goes on when the segment holds at least
       ``|S| - slack`` trigram positions whose trigram is in S (an over-count of
       the distinct ones, so still a necessary condition), counted from the
       postings of the segment's trigrams: an inverted index over the QUERIES,
       never a loop over all pairs;
    2. *segment count*: the segment holds at least alpha distinct trigrams of Q
       (W lies inside one segment);
    3. *window bound*: for each window of the query's token count, the number
       of its trigram positions whose trigram is in Q (an over-count of
       |Q & W|) reaches alpha.

    Segments are normalized chunk texts (or overlapping pieces of long ones)
    joined with "\n" and scanned as one numpy array: characters map to a small
    alphabet (those of the queries, 0 for any other), trigrams to integer keys,
    keys to trigram ids through a lookup table (or a sorted search when the
    queries' alphabet is large).
    """

    EXTRA_TRIGRAMS = 6
    LUT_LIMIT = 1 << 22  # direct key -> id table up to this many entries (alphabet <= 161)
    DENSE_LIMIT = 1 << 23  # cells of a rows x trigrams membership matrix built at once

    def __init__(self, qnorms: Sequence[str], threshold: float):
        self.n_queries = len(qnorms)
        self.qsets = [frozenset(trigrams(n)) if len(n) >= 3 else frozenset() for n in qnorms]
        self.ntok = np.array([n.count(" ") + 1 for n in qnorms], dtype=np.int64)
        sizes = np.array([len(q) for q in self.qsets], dtype=np.int64)
        # |Q & W| must reach alpha; the epsilon keeps t * size = 17.000000000000004 at 17.
        self.alpha = np.array([max(1, math.ceil(threshold * len(q) - 1e-9)) for q in self.qsets], dtype=np.int64)
        self.sizes = sizes
        self.slack = sizes - self.alpha

        chars = sorted({c for n in qnorms for c in n})
        self.A = len(chars) + 1  # 0 = a character no query has (or the "\n" separator)
        top = max((ord(c) for c in chars), default=0) + 1
        self.cmap = np.zeros(top + 1, dtype=np.int32 if self.A**3 < 2**31 else np.int64)
        for k, c in enumerate(chars, start=1):
            self.cmap[ord(c)] = k
        self.ctop = top  # code points >= top map to 0 through cmap[top]
        universe = sorted({t for q in self.qsets for t in q})
        self.U = len(universe)
        pos = {c: k for k, c in enumerate(chars, start=1)}
        A = self.A
        keys = np.array([(pos[t[0]] * A + pos[t[1]]) * A + pos[t[2]] for t in universe], dtype=np.int64)
        order = np.argsort(keys)
        self.ukeys = keys[order]
        self.utids = order.astype(np.int32)  # tid = index into `universe`
        self.lut: np.ndarray | None = None
        if A**3 <= self.LUT_LIMIT:
            self.lut = np.full(A**3, -1, dtype=np.int32)
            self.lut[keys] = np.arange(self.U, dtype=np.int32)
        tid_of = {t: k for k, t in enumerate(universe)}
        self.qptr = np.zeros(self.n_queries + 1, dtype=np.int64)
        self.qptr[1:] = np.cumsum(sizes)
        total = int(sizes.sum())
        self.qtid = np.fromiter((tid_of[t] for q in self.qsets for t in sorted(q)), dtype=np.int64, count=total)
        self.qof = np.repeat(np.arange(self.n_queries, dtype=np.int64), sizes)
        self.query_df = np.bincount(self.qtid, minlength=self.U)
        self.corpus_cf = np.zeros(self.U, dtype=np.int64)
        self.learning = True
        self.build()

    def build(self) -> None:
        """Index each query under its rarest trigrams (rarity: corpus, then queries, then id)."""
        order = np.lexsort((self.qtid, self.query_df[self.qtid], self.corpus_cf[self.qtid], self.qof))
        q_sorted = self.qof[order]
        rank = np.arange(len(order), dtype=np.int64) - self.qptr[q_sorted]
        keep_n = np.minimum(self.sizes, self.slack + self.EXTRA_TRIGRAMS)
        kept = rank < keep_n[q_sorted]
        tids = self.qtid[order][kept]
        by_tid = np.argsort(tids, kind="stable")
        self.pidx = q_sorted[kept][by_tid].astype(np.int32)
        plen = np.bincount(tids, minlength=self.U)
        self.plen = plen.astype(np.int32)
        self.pstart = (np.cumsum(plen) - plen).astype(np.int32)
        need = keep_n - self.slack
        need[self.sizes == 0] = np.iinfo(np.int64).max  # no trigrams: the exact matcher's job
        self.need = need
        self.min_need = max(1, int(need.min())) if len(need) else 1
        self.indexed = np.append(plen > 0, False)  # [U] = "no trigram"

    def _tids(self, codes: np.ndarray) -> np.ndarray:
        """Trigram id at each position (``U``: not a query trigram)."""
        a = self.cmap[np.minimum(codes, self.ctop)]
        A = self.A
        keys = (a[:-2] * A + a[1:-1]) * A + a[2:]
        if self.lut is not None:
            tids = self.lut[keys]
        else:
            at = np.minimum(np.searchsorted(self.ukeys, keys), max(len(self.ukeys) - 1, 0))
            tids = np.where(self.ukeys[at] == keys, self.utids[at], -1)
        tids[tids < 0] = self.U
        return tids

    def _membership(
        self, rows: np.ndarray, row_tids: np.ndarray, n_rows: int, probe_rows: np.ndarray, probe_tids: np.ndarray
    ) -> np.ndarray:
        """For each probe, whether row ``probe_rows[i]`` has trigram ``probe_tids[i]``.

        Rows are marked by (rows, row_tids); a dense rows x trigrams boolean matrix
        is built a slice of rows at a time to bound memory.
        """
        width = self.U + 1
        per = max(1, self.DENSE_LIMIT // width)
        out = np.zeros(len(probe_rows), dtype=bool)
        if n_rows <= per:
            dense = np.zeros((n_rows, width), dtype=bool)
            dense[rows, row_tids] = True
            dense[:, self.U] = False
            return dense[probe_rows, probe_tids]
        for lo in range(0, n_rows, per):
            hi = min(n_rows, lo + per)
            dense = np.zeros((hi - lo, width), dtype=bool)
            m = (rows >= lo) & (rows < hi)
            dense[rows[m] - lo, row_tids[m]] = True
            dense[:, self.U] = False
            p = (probe_rows >= lo) & (probe_rows < hi)
            out[p] = dense[probe_rows[p] - lo, probe_tids[p]]
        return out

    def windows(self, segments: Sequence[str]) -> tuple[list[int], list[int], list[int], list[int]]:
        """(segment, query, window start, window end) of every window that passes the three filters.

        Window starts and ends are character offsets in the segment.
        """
        nothing: tuple[list[int], list[int], list[int], list[int]] = ([], [], [], [])
        if not self.U or not segments:
            return nothing
        text = "\n".join(segments)
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        if len(codes) < 3:
            return nothing
        n_seg = len(segments)
        lens = np.fromiter(map(len, segments), dtype=np.int64, count=n_seg)
        offs = np.zeros(n_seg, dtype=np.int64)
        offs[1:] = np.cumsum(lens + 1)[:-1]
        T = self._tids(codes)
        valid = np.flatnonzero(T < self.U)
        if self.learning:
            first = not self.corpus_cf.any()
            self.corpus_cf += np.bincount(T[valid], minlength=self.U + 1)[: self.U]
            if first:
                self.build()
        if not len(valid):
            return nothing
        n_q = self.n_queries
        seg_of_valid = np.repeat(np.arange(n_seg, dtype=np.int32), lens + 1)[valid]

        # 1. prefix count: indexed trigram positions per segment, expanded through the postings
        hit = self.indexed[T[valid]]
        tid1 = T[valid[hit]]
        if not len(tid1):
            return nothing
        seg1 = seg_of_valid[hit]
        counts = self.plen[tid1]
        ends = np.cumsum(counts, dtype=np.int64)
        total = int(ends[-1])
        flat = np.repeat(self.pstart[tid1] - (ends - counts).astype(np.int32), counts)
        flat += np.arange(total, dtype=np.int32)
        pair_type = np.int32 if n_seg * n_q < 2**31 else np.int64
        pair = self.pidx[flat].astype(pair_type, copy=False)
        pair += np.repeat(seg1.astype(pair_type) * pair_type(n_q), counts)
        # The pairs seen at least `need` times: sorted, a pair's run is long enough when the
        # element need - 1 after its first is still that pair. Sorting releases the GIL (a
        # bincount into n_seg x n_q bins is as fast alone but holds it, so batches in two
        # threads ran no faster); the pairs come out in the same (segment, query) order.
        pair.sort()
        n = len(pair)
        m = min(self.min_need, n)
        head = np.empty(n - m + 1, dtype=bool)
        head[0] = True
        np.not_equal(pair[1 : n - m + 1], pair[: n - m], out=head[1:])
        head &= pair[m - 1 :] == pair[: n - m + 1]
        at = np.flatnonzero(head)
        value = pair[at].astype(np.int64)
        last = at + np.minimum(self.need[value % n_q], n + 1) - 1
        ok = last < n
        ok[ok] = pair[last[ok]] == value[ok]
        s_pair, q_pair = np.divmod(value[ok], n_q)
        if not len(s_pair):
            return nothing

        # 2. segment count: distinct trigrams of Q in the segment >= alpha
        sizes = self.sizes[q_pair]
        offsets = np.cumsum(sizes) - sizes
        total = int(sizes.sum())
        flat = np.repeat(self.qptr[q_pair] - offsets, sizes) + np.arange(total, dtype=np.int64)
        pair_of = np.repeat(np.arange(len(q_pair), dtype=np.int64), sizes)
        member = self._membership(seg_of_valid, T[valid], n_seg, s_pair[pair_of], self.qtid[flat])
        have = np.bincount(pair_of[member], minlength=len(q_pair))
        ok = have >= self.alpha[q_pair]
        s_pair, q_pair = s_pair[ok], q_pair[ok]
        if not len(s_pair):
            return nothing

        # 3. window bound: positions of each window whose trigram is in Q
        k = len(s_pair)
        npos = np.maximum(lens[s_pair] - 2, 0)
        pos_off = np.cumsum(npos) - npos
        total = int(npos.sum())
        pos = np.repeat(offs[s_pair] - pos_off, npos) + np.arange(total, dtype=np.int64)
        pos_pair = np.repeat(np.arange(k, dtype=np.int64), npos)
        sizes = self.sizes[q_pair]
        q_off = np.cumsum(sizes) - sizes
        qflat = np.repeat(self.qptr[q_pair] - q_off, sizes) + np.arange(int(sizes.sum()), dtype=np.int64)
        inq = self._membership(np.repeat(np.arange(k, dtype=np.int64), sizes), self.qtid[qflat], k, pos_pair, T[pos])
        cum = np.zeros(total + 1, dtype=np.int64)
        np.cumsum(inq, out=cum[1:])

        # token spans of the segments holding a pair
        gap = (codes == 32) | (codes == 10)  # the space between tokens, the "\n" between segments
        inside = ~gap
        tstart_all = np.flatnonzero(inside & np.concatenate(([True], gap[:-1])))
        tend_all = np.flatnonzero(inside & np.concatenate((gap[1:], [True]))) + 1
        tokptr = np.searchsorted(tstart_all, offs)
        ntok_seg = np.diff(np.append(tokptr, len(tstart_all)))
        m = ntok_seg[s_pair]
        w = np.minimum(self.ntok[q_pair], m)
        nwin = np.maximum(m - w + 1, 0)
        win_off = np.cumsum(nwin) - nwin
        total = int(nwin.sum())
        win_pair = np.repeat(np.arange(k, dtype=np.int64), nwin)
        j = np.arange(total, dtype=np.int64) - win_off[win_pair]
        first_tok = tokptr[s_pair][win_pair] + j
        a = tstart_all[first_tok]
        b = tend_all[first_tok + w[win_pair] - 1]
        base = pos_off[win_pair] - offs[s_pair][win_pair]
        long_enough = (b - a) >= 3
        hi = np.where(long_enough, base + b - 2, 0)
        lo = np.where(long_enough, base + a, 0)
        bound = cum[hi] - cum[lo]
        keep = long_enough & (bound >= self.alpha[q_pair][win_pair])
        win_pair = win_pair[keep]
        seg_start = offs[s_pair][win_pair]
        return (
            s_pair[win_pair].tolist(),
            q_pair[win_pair].tolist(),
            (a[keep] - seg_start).tolist(),
            (b[keep] - seg_start).tolist(),
        )


def _segments(norm: str, longest_query: int) -> list[str]:
    """The chunk itself, or overlapping token ranges that hold every window of a long chunk.

    Segments of SEGMENT_TOKENS tokens (at least twice the longest query) overlap
    by ``longest_query - 1`` tokens, so every window of up to ``longest_query``
    tokens lies inside one segment, and every segment has at least that many
    tokens (the last one is aligned to the chunk's end).
    """
    size = max(SEGMENT_TOKENS, 2 * longest_query)
    if norm.count(" ") < size:
        return [norm]
    toks = norm.split(" ")
    m = len(toks)
    step = size - (longest_query - 1)
    starts = list(range(0, m - size, step)) + [m - size]
    return [" ".join(toks[s : s + size]) for s in starts]


# --------------------------------------------------------------------------- the scan


def _check_options(modes: Iterable[str], threshold: float, min_tokens: int) -> tuple[str, ...]:
    if isinstance(modes, str):
        modes = (modes,)
    chosen = set(modes)
    unknown = sorted(chosen - set(MODES))
    if unknown:
        raise InputError(None, None, f"unknown leakage mode {unknown[0]!r} (known: {', '.join(MODES)})")
    if not chosen:
        raise InputError(None, None, "no leakage mode chosen (known: " + ", ".join(MODES) + ")")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0.0 < float(threshold) <= 1.0:
        raise InputError(None, None, f"leakage threshold must be in (0, 1], got {threshold!r}")
    if isinstance(min_tokens, bool) or not isinstance(min_tokens, int) or min_tokens < 1:
        raise InputError(None, None, f"min_tokens must be an integer >= 1, got {min_tokens!r}")
    return tuple(m for m in MODES if m in chosen)


def find_leaks(
    queries: Iterable[Query],
    chunks: Iterable[Any],
    modes: Iterable[str] = MODES,
    threshold: float = DEFAULT_THRESHOLD,
    min_tokens: int = DEFAULT_MIN_TOKENS,
    progress: Callable[[int], None] | None = None,
) -> LeakageResult:
    """Scan ``chunks`` once for the text of ``queries``.

    ``queries``: :class:`Query` objects (or a ``QuerySet``); anything with
    ``query_id`` and ``text``. ``chunks``: any iterable of objects with
    ``chunk_id``, ``doc_id`` and ``text`` (e.g. ``gate.inputs.readers.corpus.Chunk``); it
    is consumed once, and only a bounded batch of chunk texts is held at a time.
    A missing ``doc_id`` (None or "") falls back to the chunk id before ``#``.
    ``progress(chunks_scanned)`` is called every 10,000 chunks and at the end.
    """
    modes = _check_options(modes, threshold, min_tokens)
    threshold = float(threshold)
    exact_on = "exact" in modes
    trigram_on = "trigram-jaccard" in modes

    if hasattr(queries, "queries") and not hasattr(queries, "__iter__"):
        queries = queries.queries  # a QuerySet
    qids: list[str] = []
    qtexts: list[str] = []
    qnorms: list[str] = []
    skipped: list[str] = []
    seen: set[str] = set()
    for q in queries:
        qid = str(q.query_id)
        if qid in seen:
            raise InputError(None, None, f"query id {qid!r} appears twice")
        seen.add(qid)
        text = q.text or ""
        norm = normalize(text)
        if len(norm.split()) < min_tokens:
            skipped.append(qid)
            continue
        qids.append(qid)
        qtexts.append(text)
        qnorms.append(norm)
    n_q = len(qids)

    patterns: dict[str, list[int]] = {}
    for qi, norm in enumerate(qnorms):
        patterns.setdefault(norm, []).append(qi)
    # Exact hits are searched in both modes: an exact occurrence is a window of
    # Jaccard 1.0, found faster by the automaton than through the trigram filter
    # (and the only way a query under 3 characters can reach 1.0).
    exact = _exact_matcher(patterns)
    filt = _TrigramFilter(qnorms, threshold) if trigram_on and n_q else None
    ntok = [n.count(" ") + 1 for n in qnorms]
    longest = max(ntok, default=1)

    best_exact = [False] * n_q
    best_score = [0.0] * n_q
    best_seq = [0] * n_q
    best_chunk: list[tuple[str, str] | None] = [None] * n_q
    n_matched = [0] * n_q

    def record(qi: int, seq: int, chunk_id: str, doc_id: str, is_exact: bool, score: float, count: bool = True) -> None:
        if count:
            n_matched[qi] += 1
        current = best_chunk[qi]
        if current is not None:
            if (is_exact, score) < (best_exact[qi], best_score[qi]):
                return
            if (is_exact, score) == (best_exact[qi], best_score[qi]) and seq > best_seq[qi]:
                return
        best_exact[qi], best_score[qi], best_seq[qi] = is_exact, score, seq
        best_chunk[qi] = (chunk_id, doc_id)

    # The trigram stage works on batches: segment texts, and for each the chunk it came from.
    batch_segments: list[str] = []
    batch_owner: list[int] = []
    batch_chunks: list[tuple[int, str, str, set[int]]] = []  # (seq, chunk id, doc id, exact hits)
    batch_chars = 0
    max_segments = 32
    if filt is not None:
        max_segments = max(32, min(1024, (1 << 21) // max(n_q, 1), filt.DENSE_LIMIT // (filt.U + 1)))

    # A long chunk whose segments straddle a flush: its sequence number and the
    # queries already counted for it (a chunk counts once per query).
    carry: tuple[int, set[int]] = (-1, set())

    # Batches past the learning phase have their windows found in worker threads (numpy
    # releases the GIL for most of a batch: 1.2-1.5x on 2 cores) while this thread reads the next
    # chunks; their results are taken in submission order, so every count, every best chunk
    # and every tie is exactly what one thread finds. At most `workers` batches are in flight.
    workers = min(2, os.cpu_count() or 1)
    pool = ThreadPoolExecutor(workers, thread_name_prefix="leak-trigram") if filt is not None and workers > 1 else None
    in_flight: deque = deque()

    def finish(windows: tuple, segments: list[str], owners: list[int],
               chunks_of: list[tuple[int, str, str, set[int]]], mid_chunk: bool) -> None:
        nonlocal carry
        assert filt is not None
        found: dict[tuple[int, int], float] = {}  # (chunk in batch, query) -> best score
        qsets = filt.qsets
        for s, qi, a, b in zip(*windows):
            owner = owners[s]
            if qi in chunks_of[owner][3]:
                continue  # an exact hit in this chunk: already recorded, at 1.0
            q = qsets[qi]
            window = segments[s][a:b]
            w = {window[p : p + 3] for p in range(len(window) - 2)}
            inter = len(q & w)
            score = inter / (len(q) + len(w) - inter)
            if score >= threshold and score > found.get((owner, qi), 0.0):
                found[(owner, qi)] = score
        carry_seq, counted = carry
        for (owner, qi), score in found.items():
            seq, chunk_id, doc_id, _hits = chunks_of[owner]
            again = seq == carry_seq and qi in counted
            record(qi, seq, chunk_id, doc_id, False, score, count=not again)
        if mid_chunk:
            last = chunks_of[-1][0]
            now = {qi for (owner, qi) in found if owner == len(chunks_of) - 1}
            carry = (last, (counted | now) if last == carry_seq else now)
        else:
            carry = (-1, set())

    def drain(keep: int = 0) -> None:
        while len(in_flight) > keep:
            future, *rest = in_flight.popleft()
            finish(future.result(), *rest)

    def flush(mid_chunk: bool = False) -> None:
        nonlocal batch_chars, batch_segments, batch_owner, batch_chunks
        assert filt is not None
        batch = (batch_segments, batch_owner, batch_chunks, mid_chunk)
        if filt.learning or pool is None:  # the learning batches change the index: one at a time
            drain()
            finish(filt.windows(batch_segments), *batch)
            if filt.learning and batch_chunks[-1][0] + 1 >= SAMPLE_CHUNKS:
                filt.learning = False
                filt.build()
        else:
            in_flight.append((pool.submit(filt.windows, batch_segments), *batch))
            drain(keep=workers)
        batch_segments, batch_owner, batch_chunks = [], [], []
        batch_chars = 0

    scanned = 0
    try:
        for chunk in chunks:
            seq = scanned
            scanned += 1
            if progress is not None and scanned % PROGRESS_EVERY == 0:
                progress(scanned)
            if not n_q:
                continue
            text = chunk.text
            # (gate.checks.leak_stream hands over chunks normalized in its reader process)
            norm = text if getattr(chunk, "normalized", False) else normalize(text) if text else ""
            if not norm:
                continue
            hits = exact.find(norm)
            if hits or filt is not None:
                chunk_id = str(chunk.chunk_id)
                doc_id = chunk.doc_id
                doc_id = chunk_id.partition("#")[0] if doc_id is None or doc_id == "" else str(doc_id)
                for qi in hits:
                    record(qi, seq, chunk_id, doc_id, exact_on, 1.0)
                if filt is not None:
                    entry = (seq, chunk_id, doc_id, hits)
                    owner = -1
                    segments = _segments(norm, longest)
                    for k, segment in enumerate(segments, start=1):
                        if owner < 0:  # (again, when a long chunk's segments straddle a flush)
                            owner = len(batch_chunks)
                            batch_chunks.append(entry)
                        batch_segments.append(segment)
                        batch_owner.append(owner)
                        batch_chars += len(segment) + 1
                        if len(batch_segments) >= max_segments or batch_chars >= BATCH_CHARS:
                            flush(mid_chunk=k < len(segments))
                            owner = -1
        if filt is not None and batch_segments:
            flush()
        drain()
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    if progress is not None:
        progress(scanned)

    matched = []
    for qi in range(n_q):
        where = best_chunk[qi]
        if where is None:
            continue
        matched.append(
            LeakMatch(
                query_id=qids[qi],
                text=qtexts[qi],
                chunk_id=where[0],
                doc_id=where[1],
                mode="exact" if best_exact[qi] else "trigram-jaccard",
                score=1.0 if best_exact[qi] else best_score[qi],
                chunks_matched=n_matched[qi],
            )
        )
    matched.sort(key=lambda m: _byte_key(m.query_id))
    return LeakageResult(
        queries_checked=n_q,
        count=len(matched),
        matched=tuple(matched),
        skipped_short=tuple(sorted(skipped, key=_byte_key)),
        modes=modes,
        threshold=threshold,
        chunks_scanned=scanned,
    )


# --------------------------------------------------------------------------- text output


def _one_line(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text.replace('"', "'")


def render_text(result: LeakageResult) -> str:
    """The human summary: a headline, one line per matched query, a recommendation."""
    lines = [f"{result.count}/{result.queries_checked} queries matched a corpus chunk above threshold"]
    if result.matched:
        ids = [m.query_id for m in result.matched]
        quoted = [f'"{_one_line(m.text)}"' for m in result.matched]
        id_w = max(len(i) for i in ids)
        q_w = max(len(q) for q in quoted)
        for m, qid, q in zip(result.matched, ids, quoted):
            how = m.mode if m.mode == "exact" else f"{m.mode} {m.score:.2f}"
            if m.chunks_matched > 1:
                how += f", {m.chunks_matched} chunks"
            lines.append(f"  {qid:<{id_w}} {q:<{q_w}}  -> {m.chunk_id} ({how})")
    if result.skipped_short:
        n = len(result.skipped_short)
        lines.append(f"{n} {'query' if n == 1 else 'queries'} too short to attribute (skipped)")
    rec = result.recommendation()
    if rec:
        lines.append(f"Recommendation: {rec}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- lines (prompt scanning)


@dataclass(frozen=True)
class _Line:
    chunk_id: str
    doc_id: str
    text: str


def find_text_in_lines(
    queries: Iterable[Query],
    lines_with_locations: Iterable[tuple[Any, str]],
    modes: Iterable[str] = ("exact",),
    threshold: float = DEFAULT_THRESHOLD,
    min_tokens: int = DEFAULT_MIN_TOKENS,
) -> LeakageResult:
    """Golden queries quoted in text lines (prompts, few-shot examples, configs).

    ``lines_with_locations`` yields ``(location, text)``; a location is a string
    (``"prompts/system.txt:12"``) or a ``(path, line)`` pair. The result is a
    :class:`LeakageResult` whose chunk ids are the locations and whose doc ids
    are the paths (the location before ``:`` for string locations).
    """

    def as_chunks():
        for location, text in lines_with_locations:
            if isinstance(location, tuple):
                path, line = location
                yield _Line(f"{path}:{line}", str(path), text)
            else:
                loc = str(location)
                yield _Line(loc, loc.rpartition(":")[0] if ":" in loc else loc, text)

    return find_leaks(queries, as_chunks(), modes=modes, threshold=threshold, min_tokens=min_tokens)
