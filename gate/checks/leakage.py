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
:class:`_TrigramFilter`): one whole group of the query's trigrams in the chunk
(pigeonhole over slack + 1 groups; found through an inverted index from trigram
to groups, built over the QUERIES), enough of all its trigrams in the chunk,
enough in one window. Only windows passing all three have their Jaccard
computed exactly. Long chunks are scanned as overlapping segments of
SEGMENT_TOKENS tokens, so the work per chunk stays proportional to its length.
Past the first chunks, batches are scanned by worker processes
(:mod:`gate.checks.leak_filter_worker`) while this process reads the corpus.

A chunk that contains the query exactly is counted as an exact hit (score 1.0):
in trigram mode, a window that passes the filter and equals the query (the
automaton is only needed for exact mode, and for queries under 3 characters).
When both modes are on, a query matched exactly somewhere reports ``exact``
(score 1.0) and that chunk; otherwise its best trigram chunk. ``chunks_matched``
counts the chunks matched by any enabled mode. Ties keep the first chunk in
corpus order.

Queries with fewer than ``min_tokens`` normalized tokens are too short to
attribute: they are listed in ``skipped_short`` and never matched or counted.
"""

from __future__ import annotations

import heapq
import math
import os
import warnings
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gate.checks import leak_filter_worker
from gate.checks.normalize import normalize, shingles, trigrams
from gate.common.errors import InputError
from gate.common.numbers import counted
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
BATCH_CHARS = 1 << 17  # characters of chunk text in a batch of the trigram stage (a few are in flight)
PROGRESS_EVERY = 10_000
WORKERS = 4  # worker processes for the trigram scan: one per core, at most this many
WORKERS_AFTER_CHUNKS = 5000  # a corpus of fewer chunks is scanned in this process alone
WAIT_FOR_WORKERS = False  # tests: wait for the workers to start instead of scanning here meanwhile


def _byte_key(s: str) -> bytes:
    return s.encode("utf-8", "surrogatepass")


#: Matched chunks kept per query (the first in corpus order); the count covers every one.
CHUNKS_KEPT = 50
#: Source documents the recommendation names before "N more documents hold M matches".
SOURCES_NAMED = 100
#: Chunk ids a text line shows per query before "and N more".
CHUNKS_SHOWN = 5


@dataclass(frozen=True)
class LeakMatch:
    query_id: str
    text: str  # the query's text as given
    chunk_id: str  # its best chunk
    doc_id: str
    mode: str  # "exact" | "trigram-jaccard"
    score: float
    chunks_matched: int
    # (chunk id, doc id) of every chunk the query matched, in corpus order: the first CHUNKS_KEPT
    chunks: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "query_id": self.query_id,
            "text": self.text,
            "chunk_id": self.chunk_id,
            "doc_id": self.doc_id,
            "mode": self.mode,
            "score": self.score,
            "chunks_matched": self.chunks_matched,
            "chunks": [{"chunk_id": c, "doc_id": d} for c, d in self.chunks],
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
        """(source document, number of matched queries) by count, then byte order: every document
        holding a chunk a query matched (each query counted once per document), not only its best.

        The source is the chunk's ``doc_id``, or its chunk id before ``#`` when
        the chunk has no document id.
        """
        counts: Counter[str] = Counter()
        for m in self.matched:
            counts.update(set(_sources(m)))
        return sorted(counts.items(), key=lambda kv: (-kv[1], _byte_key(kv[0])))

    def recommendation(self) -> str | None:
        """What to do about the matches, naming the documents behind most of them."""
        groups = self.sources()
        if not groups:
            return None
        if len(groups) == 1:
            return f"exclude {groups[0][0]} from the snapshot or re-judge."
        named = groups[:SOURCES_NAMED]
        parts = [f"{doc} ({n} {'match' if n == 1 else 'matches'})" for doc, n in named]
        listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
        text = f"exclude {listed} from the snapshot or re-judge."
        rest = groups[SOURCES_NAMED:]
        # A query's chunks past the first CHUNKS_KEPT are counted, not listed: their documents
        # are not known here, so the documents named and counted are the least there are.
        partial = any(m.chunks and m.chunks_matched > len(m.chunks) for m in self.matched)
        if rest:
            n_docs, n_matches = len(rest), sum(n for _, n in rest)
            text += (
                f" {'At least ' if partial else ''}{n_docs} more "
                f"{'document holds' if n_docs == 1 else 'documents hold'}"
                f" {n_matches} {'match' if n_matches == 1 else 'matches'}."
            )
        if partial:
            text += f" (Documents are known for the first {CHUNKS_KEPT} matched chunks of each query.)"
        return text


def _source(m: LeakMatch) -> str:
    return m.doc_id or m.chunk_id.partition("#")[0]


def _sources(m: LeakMatch) -> list[str]:
    """The documents of every chunk ``m`` matched that it kept (its best chunk's at least)."""
    return [_source(m)] + [doc or chunk.partition("#")[0] for chunk, doc in m.chunks]


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
                self._index.setdefault((toks[0], toks[1]), []).append((toks, tuple(ids)))

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


# (segment, query, window start, window end, Jaccard) of windows, as lists
Windows = tuple[list[int], list[int], list[int], list[int], list[float]]


class _TrigramFilter:
    """Candidate filter and window bound for trigram-Jaccard, vectorized over a batch of segments.

    For a query with trigram set Q, Jaccard(Q, W) >= t needs |Q & W| >= alpha =
    ceil(t * |Q|): W misses at most ``slack = |Q| - alpha`` trigrams of Q. Three
    necessary conditions, each cheaper than the next, narrow a batch down to the
    few windows whose Jaccard is computed exactly (in Python, on strings):

    1. *a whole group*: Q's trigrams, by rarity (frequency in the corpus read so
       far; the groups are rebuilt after the first batch and after SAMPLE_CHUNKS
       chunks), are dealt into ``slack + 1`` groups: group g holds the trigrams of
       rank g, g + slack + 1, g + 2 (slack + 1), ... A window missing at most slack
       of them leaves one group whole (pigeonhole), so a (segment, query) pair goes
       on only when the segment holds every trigram of one of its groups. Each
       group is indexed under its rarest trigram (an inverted index over the
       QUERIES, never a loop over all pairs), and followed member by member, its
       next GROUP_TABLE + 1 members tabled with its posting, while the segment
       holds them: most groups stop at their second member;
    2. *segment count*: the segment holds at least alpha distinct trigrams of Q
       (W lies inside one segment): at most slack missing, counted among the
       ``slack + PROBES`` rarest first (most pairs fail there), the rest after;
    3. *window bound*: for each window of the query's token count, the number
       of its trigram positions whose trigram is in Q (an over-count of
       |Q & W|) reaches alpha.

    Any grouping and any order is correct (each condition is necessary whatever
    the rarities): the windows that pass, and so the result, do not depend on
    the corpus' frequencies or on how segments are batched.

    Segments are normalized chunk texts (or overlapping pieces of long ones)
    joined with "\n" and scanned as one numpy array: characters map to a small
    alphabet (those of the queries, 0 for any other), trigrams to integer keys,
    keys to trigram ids through a lookup table (or a sorted search when the
    queries' alphabet is large); which segment holds which trigram is a
    segments x trigrams boolean matrix.
    """

    PROBES = 4  # trigrams past the slack rarest looked up for every pair that holds a whole group
    GROUP_TABLE = 4  # members of each group tabled with its posting, beyond its anchor and second
    LUT_LIMIT = 1 << 22  # direct key -> id table up to this many entries (alphabet <= 161)
    DENSE_LIMIT = 1 << 23  # cells of a rows x trigrams membership matrix built at once
    QBITS_LIMIT = 1 << 26  # bytes of the queries' trigram bitsets (beyond: a membership matrix per batch)

    def __init__(self, qnorms: Sequence[str], threshold: float):
        self.n_queries = len(qnorms)
        self.qsets = [frozenset(trigrams(n)) if len(n) >= 3 else frozenset() for n in qnorms]
        self.ntok = np.array([n.count(" ") + 1 for n in qnorms], dtype=np.int64)
        sizes = np.array([len(q) for q in self.qsets], dtype=np.int64)
        # |Q & W| must reach alpha; the epsilon keeps t * size = 17.000000000000004 at 17.
        self.threshold = threshold
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
        # Each query's trigrams as a bitset (the window bound's membership test), unless too large.
        self.qbytes = (self.U + 8) // 8
        self.qbits: np.ndarray | None = None
        if self.n_queries * self.qbytes <= self.QBITS_LIMIT:
            self.qbits = np.zeros(self.n_queries * self.qbytes, dtype=np.uint8)
            bit = self.qof * (8 * self.qbytes) + self.qtid
            np.bitwise_or.at(self.qbits, bit >> 3, np.left_shift(1, bit & 7).astype(np.uint8))
        self.corpus_cf = np.zeros(self.U, dtype=np.int64)
        self.learning = True
        self.build()

    def build(self) -> None:
        """Deal each query's trigrams, rarest first (rarity: corpus, then queries, then id), into
        slack + 1 groups, and index each group under its rarest trigram."""
        order = np.lexsort((self.qtid, self.query_df[self.qtid], self.corpus_cf[self.qtid], self.qof))
        self.rtid = self.qtid[order]  # each query's trigrams, rarest first (the qof/qptr ranges stay)
        qof = self.qof
        n_flat = len(order)
        stride = (self.slack + 1)[qof]
        at = np.arange(n_flat, dtype=np.int64)
        rank = at - self.qptr[qof]
        # group g: ranks g, g + stride, g + 2 stride, ...; next_member: the next rank's position, or -1
        self.next_member = np.where(rank + stride < self.sizes[qof], at + stride, -1)
        anchors = np.flatnonzero(rank < stride)
        tids = self.rtid[anchors]
        by_tid = np.argsort(tids, kind="stable")
        self.pentry = anchors[by_tid]
        # for each posting (a group, under its anchor): the trigrams of its next GROUP_TABLE + 1
        # members (U + 1, a column that every segment "holds", past its last), then where the
        # members past those begin (-1: none)
        none = self.U + 1
        members = np.empty((len(self.pentry), self.GROUP_TABLE + 1), dtype=np.int64)
        at = self.pentry
        for j in range(self.GROUP_TABLE + 1):
            at = np.where(at >= 0, self.next_member[np.maximum(at, 0)], -1)
            members[:, j] = np.where(at >= 0, self.rtid[np.maximum(at, 0)], none)
        self.psecond_tid = np.ascontiguousarray(members[:, 0])
        self.pmembers = [np.ascontiguousarray(members[:, j]) for j in range(1, self.GROUP_TABLE + 1)]
        self.prest = np.where(at >= 0, self.next_member[np.maximum(at, 0)], -1)
        plen = np.bincount(tids, minlength=self.U)
        self.plen = plen
        self.pstart = np.cumsum(plen) - plen
        self.indexed = np.append(plen > 0, False)  # [U] = "no trigram"

    def _tids(self, codes: np.ndarray) -> np.ndarray:
        """Trigram id at each position (``U``: not a query trigram)."""
        a = self.cmap[np.minimum(codes, self.ctop)]
        A = self.A
        return self._key_tids((a[:-2] * A + a[1:-1]) * A + a[2:])

    def _tids_of(self, first: np.ndarray, second: np.ndarray, third: np.ndarray) -> np.ndarray:
        """Trigram id of each (first, second, third) code point (``U``: not a query trigram)."""
        cmap, top, A = self.cmap, self.ctop, self.A
        return self._key_tids((cmap[np.minimum(first, top)] * A + cmap[np.minimum(second, top)]) * A
                              + cmap[np.minimum(third, top)])

    def _key_tids(self, keys: np.ndarray) -> np.ndarray:
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

    def windows(self, segments: Sequence[str]) -> Windows:
        """(segment, query, window start, window end, Jaccard) of every window of Jaccard >= threshold.

        Window starts and ends are character offsets in the segment. The segments are
        taken a slice at a time so that a segments x trigrams matrix stays within DENSE_LIMIT.
        """
        if not self.U or not segments:
            return [], [], [], [], []
        per = max(1, self.DENSE_LIMIT // (self.U + 2))
        if len(segments) <= per:
            return self._windows(segments)
        out: Windows = ([], [], [], [], [])
        for lo in range(0, len(segments), per):
            s, q, a, b, score = self._windows(segments[lo : lo + per])
            out[0].extend(x + lo for x in s)
            out[1].extend(q)
            out[2].extend(a)
            out[3].extend(b)
            out[4].extend(score)
        return out

    def _windows(self, segments: Sequence[str]) -> Windows:
        nothing: Windows = ([], [], [], [], [])
        text = "\n".join(segments)
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        if len(codes) < 3:
            return nothing
        U = self.U
        W = U + 2  # the columns of the segments x trigrams matrix: U = no trigram, U + 1 = see below
        n_seg = len(segments)
        lens = np.fromiter(map(len, segments), dtype=np.int64, count=n_seg)
        offs = np.zeros(n_seg, dtype=np.int64)
        offs[1:] = np.cumsum(lens + 1)[:-1]
        T = self._tids(codes)
        valid = np.flatnonzero(T < U)
        if self.learning:
            untrained = not self.corpus_cf.any()
            self.corpus_cf += np.bincount(T[valid], minlength=U + 1)[:U]
            if untrained:
                self.build()
        if not len(valid):
            return nothing
        n_q = self.n_queries
        # dense[s * W + t]: segment s holds query trigram t (n_seg * W <= DENSE_LIMIT, see windows)
        dense = np.zeros(n_seg * W, dtype=bool)
        dense[U + 1 :: W] = True  # column U + 1: "no further member", held by every segment
        seg_of_valid = np.repeat(np.arange(n_seg, dtype=np.int64), lens + 1)[valid]
        T_valid = T[valid]
        keys = seg_of_valid * W + T_valid
        dense[keys] = True

        # 1. whole groups: the distinct anchors of each segment, expanded through the postings, and
        # each group followed member by member while the segment holds them
        keys = keys[self.indexed[T_valid]]
        if not len(keys):
            return nothing
        keys.sort()
        first = np.empty(len(keys), dtype=bool)
        first[0] = True
        np.not_equal(keys[1:], keys[:-1], out=first[1:])
        keys = keys[first]
        tid1 = keys % W
        counts = self.plen[tid1]
        ends = np.cumsum(counts)
        total = int(ends[-1])
        flat = np.repeat(self.pstart[tid1] - (ends - counts), counts)
        flat += np.arange(total, dtype=np.int64)
        rows = np.repeat(keys - tid1, counts)  # segment * W
        # the group's second member (those of one trigram: "held" through column U + 1)
        at = np.flatnonzero(dense[rows + self.psecond_tid[flat]])
        rows, flat = rows[at], flat[at]
        # its next members (column U + 1 past a group's last)
        for member_tid in self.pmembers:
            at = np.flatnonzero(dense[rows + member_tid[flat]])
            rows, flat = rows[at], flat[at]
        cur = self.prest[flat]
        whole_rows = [rows[cur < 0]]
        whole_at = [self.pentry[flat[cur < 0]]]
        at = np.flatnonzero(cur >= 0)
        rows, cur = rows[at], cur[at]
        while len(cur):  # the members of long groups past the table, while the segment holds them
            present = dense[rows + self.rtid[cur]]
            rows, cur = rows[present], cur[present]
            nxt = self.next_member[cur]
            whole_rows.append(rows[nxt < 0])
            whole_at.append(cur[nxt < 0])
            rows, cur = rows[nxt >= 0], nxt[nxt >= 0]
        pair = np.concatenate(whole_rows) // W * n_q + self.qof[np.concatenate(whole_at)]
        if not len(pair):
            return nothing
        pair.sort()
        keep = np.empty(len(pair), dtype=bool)
        keep[0] = True
        np.not_equal(pair[1:], pair[:-1], out=keep[1:])
        s_pair, q_pair = np.divmod(pair[keep], n_q)

        # 2. segment count: at most slack of Q's trigrams missing from the segment; the rarest
        # PROBES are looked up for every pair (most pairs miss too many of them), the rest after
        rows = s_pair * W
        start = self.qptr[q_pair]
        stop = self.qptr[q_pair + 1]
        slack = self.slack[q_pair]
        width = int(slack.max()) + self.PROBES
        probe = start[:, None] + np.arange(width, dtype=np.int64)
        real = probe < np.minimum(stop, start + slack + self.PROBES)[:, None]
        probe = self.rtid[np.minimum(probe, len(self.rtid) - 1)]
        probe += rows[:, None]
        budget = slack - (real & ~dense[probe]).sum(axis=1)
        at = np.flatnonzero(budget >= 0)
        s_pair, q_pair, budget, rows, stop = s_pair[at], q_pair[at], budget[at], rows[at], stop[at]
        nxt = start[at] + slack[at] + self.PROBES
        rest = np.maximum(stop - nxt, 0)
        total = int(rest.sum())
        if total:
            k0 = len(s_pair)
            pair_of = np.repeat(np.arange(k0, dtype=np.int64), rest)
            flat = np.repeat(nxt - (np.cumsum(rest) - rest), rest) + np.arange(total, dtype=np.int64)
            missing = ~dense[rows[pair_of] + self.rtid[flat]]
            ok = np.bincount(pair_of[missing], minlength=k0) <= budget
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
        if self.qbits is not None:  # a bit per (query, trigram)
            t = T[pos]
            inq = self.qbits[q_pair[pos_pair] * self.qbytes + (t >> 3)] >> (t & 7).astype(np.uint8)
            inq &= 1
        else:
            sizes = self.sizes[q_pair]
            q_off = np.cumsum(sizes) - sizes
            qflat = np.repeat(self.qptr[q_pair] - q_off, sizes) + np.arange(int(sizes.sum()), dtype=np.int64)
            inq = self._membership(np.repeat(np.arange(k, dtype=np.int64), sizes), self.qtid[qflat], k, pos_pair,
                                   T[pos])
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
        keep = np.flatnonzero(long_enough & (bound >= self.alpha[q_pair][win_pair]))
        if not len(keep):
            return nothing
        win_pair, a, b = win_pair[keep], a[keep], b[keep]

        # 4. the exact Jaccard of each window left: its distinct trigrams (all of them, by code
        # points), and those in Q; the same float as inter / (|Q| + |W| - inter) in Python
        nw = len(win_pair)
        cnt = b - a - 2
        wid = np.repeat(np.arange(nw, dtype=np.int64), cnt)
        pos = np.repeat(a - (np.cumsum(cnt) - cnt), cnt) + np.arange(int(cnt.sum()), dtype=np.int64)
        c = codes.astype(np.int64)
        key = (c[pos] << 42) | (c[pos + 1] << 21) | c[pos + 2]
        uniq, rank = np.unique(key, return_inverse=True)
        entry = wid * len(uniq) + rank.reshape(-1)
        entry.sort()
        first = np.empty(len(entry), dtype=bool)
        first[0] = True
        np.not_equal(entry[1:], entry[:-1], out=first[1:])
        wid, rank = np.divmod(entry[first], len(uniq))  # each distinct (window, trigram)
        wsize = np.bincount(wid, minlength=nw)
        q_win = q_pair[win_pair]
        t = self._tids_of(uniq >> 42, (uniq >> 21) & 0x1FFFFF, uniq & 0x1FFFFF)[rank]
        if self.qbits is not None:
            inq = (self.qbits[q_win[wid] * self.qbytes + (t >> 3)] >> (t & 7).astype(np.uint8)) & 1
            inq = inq.astype(bool)
        else:
            sizes = self.sizes[q_win]
            q_off = np.cumsum(sizes) - sizes
            qflat = np.repeat(self.qptr[q_win] - q_off, sizes) + np.arange(int(sizes.sum()), dtype=np.int64)
            inq = self._membership(np.repeat(np.arange(nw, dtype=np.int64), sizes), self.qtid[qflat], nw, wid, t)
        inter = np.bincount(wid[inq], minlength=nw)
        score = inter / (self.sizes[q_win] + wsize - inter)
        keep = np.flatnonzero(score >= self.threshold)
        win_pair, a, b, score = win_pair[keep], a[keep], b[keep], score[keep]
        seg_start = offs[s_pair][win_pair]
        return (
            s_pair[win_pair].tolist(),
            q_pair[win_pair].tolist(),
            (a - seg_start).tolist(),
            (b - seg_start).tolist(),
            score.tolist(),
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


def _patterns(qnorms: Sequence[str]) -> dict[str, list[int]]:
    patterns: dict[str, list[int]] = {}
    for qi, norm in enumerate(qnorms):
        patterns.setdefault(norm, []).append(qi)
    return patterns


# What a batch of chunks yields: the (chunk, query) pairs of its exact hits, then those of its
# trigram matches with their scores (a chunk's exact hits are not among its trigram matches).
# Chunks are numbered from 0 within the batch.
BatchResult = tuple[list[int], list[int], list[int], list[int], list[float]]


class _Scanner:
    """The trigram scan of a batch of normalized chunk texts: each chunk's exact hits and trigram matches.

    find_leaks runs it in this process for the first chunks (the learning phase, which
    tunes the filter's index), for small corpora and as the fallback; past the learning
    phase the worker processes (gate.checks.leak_filter_worker) run the same class,
    built from the same queries. What it returns depends on the texts only, never on
    the filter's index or on how chunks are batched: the filter only prunes windows
    whose Jaccard cannot reach the threshold, and every window left is scored exactly.

    Exact hits need no automaton here: a query found in a chunk on token boundaries is a
    window of the chunk equal to the query, of Jaccard 1.0, so the filter passes it; a
    window passed is an exact hit when its text is the query's. Only queries of fewer than
    3 characters (no trigram) are looked for by the automaton.
    """

    def __init__(self, qnorms: Sequence[str], threshold: float):
        self.qnorms = list(qnorms)
        short = [norm if len(norm) < 3 else "" for norm in qnorms]
        self.exact = _exact_matcher({k: v for k, v in _patterns(short).items() if k}) if any(short) else None
        self.filt = _TrigramFilter(qnorms, threshold)
        self.threshold = threshold
        self.longest = max((n.count(" ") + 1 for n in qnorms), default=1)
        filt = self.filt
        # segments per filter call: a segments x trigrams matrix of about 2 MiB (larger ones run slower)
        self.max_segments = max(32, min(1024, (1 << 21) // (filt.U + 2)))

    def scan(self, texts: Sequence[str]) -> BatchResult:
        exact: set[tuple[int, int]] = set()  # (chunk, query)
        found: dict[tuple[int, int], float] = {}  # (chunk, query) -> best window score
        segments: list[str] = []
        owners: list[int] = []
        chars = 0
        for owner, norm in enumerate(texts):
            if self.exact is not None:
                exact.update((owner, qi) for qi in self.exact.find(norm))
            for segment in _segments(norm, self.longest):
                segments.append(segment)
                owners.append(owner)
                chars += len(segment) + 1
                if len(segments) >= self.max_segments or chars >= BATCH_CHARS:
                    self._score(segments, owners, exact, found)
                    segments, owners, chars = [], [], 0
        if segments:
            self._score(segments, owners, exact, found)
        hits = sorted(exact)
        matches = [(key, score) for key, score in found.items() if key not in exact]
        return ([owner for owner, _qi in hits], [qi for _owner, qi in hits],
                [owner for (owner, _qi), _score in matches], [qi for (_owner, qi), _score in matches],
                [score for _key, score in matches])

    def _score(self, segments: list[str], owners: list[int], exact: set[tuple[int, int]],
               found: dict[tuple[int, int], float]) -> None:
        """The windows of Jaccard >= threshold, by chunk; one equal to the query is an exact hit."""
        qnorms = self.qnorms
        for s, qi, a, b, score in zip(*self.filt.windows(segments)):
            key = (owners[s], qi)
            if key in exact:
                continue
            if score == 1.0 and segments[s][a:b] == qnorms[qi]:
                exact.add(key)
            elif score > found.get(key, 0.0):
                found[key] = score


#: The filter's settings a worker process takes from this one, with SEGMENT_TOKENS and BATCH_CHARS (tests
#: change them).
_FILTER_SETTINGS = ("PROBES", "GROUP_TABLE", "LUT_LIMIT", "DENSE_LIMIT", "QBITS_LIMIT")


def _worker_settings() -> dict[str, Any]:
    """This process's scan settings, for the workers (:func:`worker_scanner` applies them)."""
    settings: dict[str, Any] = {"SEGMENT_TOKENS": SEGMENT_TOKENS, "BATCH_CHARS": BATCH_CHARS}
    settings.update({name: getattr(_TrigramFilter, name) for name in _FILTER_SETTINGS})
    settings["ahocorasick"] = _ahocorasick is not None
    return settings


def worker_scanner(qnorms: list[str], threshold: float, settings: dict[str, Any], corpus_cf: np.ndarray) -> _Scanner:
    """In a worker process (gate.checks.leak_filter_worker): the parent's settings applied here,
    then its scanner, past the learning phase with the parent's learned frequencies."""
    global SEGMENT_TOKENS, BATCH_CHARS, _ahocorasick
    SEGMENT_TOKENS, BATCH_CHARS = settings["SEGMENT_TOKENS"], settings["BATCH_CHARS"]
    for name in _FILTER_SETTINGS:
        setattr(_TrigramFilter, name, settings[name])
    if not settings["ahocorasick"]:
        _ahocorasick = None
    scanner = _Scanner(qnorms, threshold)
    filt = scanner.filt
    if len(corpus_cf) != len(filt.corpus_cf):
        raise ValueError("corpus frequencies of another length than the queries' trigrams")
    filt.corpus_cf[:] = corpus_cf
    filt.learning = False
    filt.build()
    return scanner


def _worker_count() -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return min(WORKERS, cores)


def find_leaks(
    queries: Iterable[Query],
    chunks: Iterable[Any],
    modes: Iterable[str] = MODES,
    threshold: float = DEFAULT_THRESHOLD,
    min_tokens: int = DEFAULT_MIN_TOKENS,
    progress: Callable[[int], None] | None = None,
    workers: int | None = None,
    on_match: Callable[[str, str, str, bool, float], None] | None = None,
) -> LeakageResult:
    """Scan ``chunks`` once for the text of ``queries``.

    ``queries``: :class:`Query` objects (or a ``QuerySet``); anything with
    ``query_id`` and ``text``. ``chunks``: any iterable of objects with
    ``chunk_id``, ``doc_id`` and ``text`` (e.g. ``gate.inputs.readers.corpus.Chunk``); it
    is consumed once, and only a bounded batch of chunk texts is held at a time.
    A missing ``doc_id`` (None or "") falls back to the chunk id before ``#``.
    ``progress(chunks_scanned)`` is called every 10,000 chunks and at the end.
    ``workers``: worker processes for the trigram mode past its first WORKERS_AFTER_CHUNKS
    chunks (None: one per core, at most WORKERS; 0 or 1: none). The result is the same
    with any number. ``on_match(query_id, chunk_id, doc_id, exact, score)``, when given, is
    called once for every (query, chunk) match, those past the CHUNKS_KEPT the result keeps too.
    """
    modes = _check_options(modes, threshold, min_tokens)
    threshold = float(threshold)
    exact_on = "exact" in modes
    trigram_on = "trigram-jaccard" in modes
    golden = _golden_queries(queries, min_tokens)
    n_q = len(golden.ids)
    best = _BestChunks.empty(golden.ids, on_match)

    if not (trigram_on and n_q):
        # Exact hits are searched in both modes: an exact occurrence is a window of Jaccard 1.0,
        # found faster by the automaton than through the trigram filter (and the only way a
        # query under 3 characters can reach 1.0).
        scanned = _scan_exact(golden.norms, chunks, progress, best.record, exact_on)
    else:
        scanned = _scan_batches(_Scanner(golden.norms, threshold), golden.norms, threshold, chunks, progress,
                                best.record, exact_on, _worker_count() if workers is None else workers)
    if progress is not None:
        progress(scanned)

    matched = best.matches(golden.texts)
    matched.sort(key=lambda m: _byte_key(m.query_id))
    return LeakageResult(
        queries_checked=n_q,
        count=len(matched),
        matched=tuple(matched),
        skipped_short=tuple(sorted(golden.skipped, key=_byte_key)),
        modes=modes,
        threshold=threshold,
        chunks_scanned=scanned,
    )


@dataclass(frozen=True)
class _GoldenQueries:
    """The queries long enough to attribute, in the order given (ids, texts as given, normalized
    texts), and the ids of those too short."""

    ids: list[str]
    texts: list[str]
    norms: list[str]
    skipped: list[str]


def _golden_queries(queries: Iterable[Query], min_tokens: int) -> _GoldenQueries:
    if hasattr(queries, "queries") and not hasattr(queries, "__iter__"):
        queries = queries.queries  # a QuerySet
    golden = _GoldenQueries([], [], [], [])
    seen: set[str] = set()
    for q in queries:
        qid = str(q.query_id)
        if qid in seen:
            raise InputError(None, None, f"query id {qid!r} appears twice")
        seen.add(qid)
        text = q.text or ""
        norm = normalize(text)
        if len(norm.split()) < min_tokens:
            golden.skipped.append(qid)
            continue
        golden.ids.append(qid)
        golden.texts.append(text)
        golden.norms.append(norm)
    return golden


@dataclass(frozen=True)
class _BestChunks:
    """Per query (by number): the chunks it matched (counted), the first CHUNKS_KEPT of them in
    corpus order, and its best one; filled by :meth:`record` in any order of calls."""

    qids: list[str]
    on_match: Callable[[str, str, str, bool, float], None] | None
    exact: list[bool]
    score: list[float]
    seq: list[int]
    chunk: list[tuple[str, str] | None]
    n_matched: list[int]
    # The first CHUNKS_KEPT matched chunks in corpus order, as a heap of (-seq, chunk, doc): the
    # latest kept is dropped first, so any order of calls (worker batches) keeps the same ones.
    kept: list[list[tuple[int, str, str]]]

    @classmethod
    def empty(cls, qids: list[str], on_match: Callable[[str, str, str, bool, float], None] | None) -> _BestChunks:
        n_q = len(qids)
        return cls(qids, on_match, [False] * n_q, [0.0] * n_q, [0] * n_q, [None] * n_q, [0] * n_q,
                   [[] for _ in range(n_q)])

    def record(self, qi: int, seq: int, chunk_id: str, doc_id: str, is_exact: bool, score: float) -> None:
        # The best chunk is the greatest (exact, score, -seq): any order of calls gives the same.
        self.n_matched[qi] += 1
        if self.on_match is not None:
            self.on_match(self.qids[qi], chunk_id, doc_id, is_exact, score)
        kept = self.kept[qi]
        entry = (-seq, chunk_id, doc_id)
        if len(kept) < CHUNKS_KEPT:
            heapq.heappush(kept, entry)
        elif entry > kept[0]:
            heapq.heapreplace(kept, entry)
        if self.chunk[qi] is not None:
            if (is_exact, score) < (self.exact[qi], self.score[qi]):
                return
            if (is_exact, score) == (self.exact[qi], self.score[qi]) and seq > self.seq[qi]:
                return
        self.exact[qi], self.score[qi], self.seq[qi] = is_exact, score, seq
        self.chunk[qi] = (chunk_id, doc_id)

    def matches(self, qtexts: Sequence[str]) -> list[LeakMatch]:
        """A LeakMatch per query that matched a chunk, in query order (``qtexts``: their texts as given)."""
        matched = []
        for qi, where in enumerate(self.chunk):
            if where is None:
                continue
            matched.append(
                LeakMatch(
                    query_id=self.qids[qi],
                    text=qtexts[qi],
                    chunk_id=where[0],
                    doc_id=where[1],
                    mode="exact" if self.exact[qi] else "trigram-jaccard",
                    score=1.0 if self.exact[qi] else self.score[qi],
                    chunks_matched=self.n_matched[qi],
                    chunks=tuple((chunk, doc) for _, chunk, doc in sorted(self.kept[qi], reverse=True)),
                )
            )
        return matched


def _scan_exact(qnorms: Sequence[str], chunks: Iterable[Any], progress: Callable[[int], None] | None,
                record: Callable[..., None], exact_on: bool) -> int:
    """The scan by the exact matcher alone (no trigram mode, or no query to look for); the number of chunks."""
    n_q = len(qnorms)
    exact = _exact_matcher(_patterns(qnorms))
    scanned = 0
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
        if hits:
            chunk_id, doc_id = _ids(chunk.chunk_id, chunk.doc_id)
            for qi in hits:
                record(qi, seq, chunk_id, doc_id, exact_on, 1.0)
    return scanned


def _ids(chunk_id: Any, doc_id: Any) -> tuple[str, str]:
    chunk_id = str(chunk_id)
    return chunk_id, chunk_id.partition("#")[0] if doc_id is None or doc_id == "" else str(doc_id)


def _scan_batches(scanner: _Scanner, qnorms: Sequence[str], threshold: float, chunks: Iterable[Any],
                  progress: Callable[[int], None] | None, record: Callable[..., None], exact_on: bool,
                  workers: int) -> int:
    """The trigram scan, in batches of about BATCH_CHARS characters of chunk text; the number of chunks.

    The first SAMPLE_CHUNKS chunks are scanned here while the filter learns the corpus'
    trigram frequencies. Past the first WORKERS_AFTER_CHUNKS chunks, `workers` worker
    processes (two or more) scan the batches while this process reads the next ones, at
    most PER_WORKER batches each in flight; until a worker is ready, and if any fails
    (dies, errs or stops answering), batches are scanned here, those in flight included.
    Results are taken in corpus order, and `record` gives the same answer in any order.
    """
    filt = scanner.filt
    texts: list[str] = []
    metas: list[tuple[int, Any, Any]] = []  # (seq, chunk id, doc id) of each text, as given
    chars = 0
    pending: deque = deque()  # (ticket, texts, metas) of the batches in the workers, in corpus order
    pool: leak_filter_worker.WorkerPool | None = None
    pool_failed = workers < 2

    def take(result: BatchResult, metas: list[tuple[int, Any, Any]]) -> None:
        ex_owner, ex_query, tri_owner, tri_query, tri_score = result
        for owner, qi in zip(ex_owner, ex_query):
            seq, cid, did = metas[owner]
            record(qi, seq, *_ids(cid, did), exact_on, 1.0)
        for owner, qi, score in zip(tri_owner, tri_query, tri_score):
            seq, cid, did = metas[owner]
            record(qi, seq, *_ids(cid, did), False, score)

    def fail(error: Exception) -> None:
        nonlocal pool, pool_failed
        if pool is not None:
            pool.close(kill=True)
        pool, pool_failed = None, True
        warnings.warn(f"leak scan: the worker processes failed, scanning in this process instead ({error})",
                      RuntimeWarning, stacklevel=4)
        while pending:
            _ticket, batch_texts, batch_metas = pending.popleft()
            take(scanner.scan(batch_texts), batch_metas)

    def drain(keep: int) -> None:
        while len(pending) > keep:
            assert pool is not None
            ticket, _texts, batch_metas = pending[0]
            try:
                result = pool.result(ticket)
            except leak_filter_worker.WorkerError as error:
                fail(error)
                return
            pending.popleft()
            take(result, batch_metas)

    def flush() -> None:
        nonlocal texts, metas, chars, pool, pool_failed
        batch_texts, batch_metas = texts, metas
        texts, metas, chars = [], [], 0
        if filt.learning:
            take(scanner.scan(batch_texts), batch_metas)
            if batch_metas[-1][0] + 1 >= SAMPLE_CHUNKS:
                filt.learning = False
                filt.build()
            return
        if pool is None and not pool_failed and scanned >= WORKERS_AFTER_CHUNKS:
            try:
                pool = leak_filter_worker.WorkerPool(workers, qnorms, threshold, filt.corpus_cf, _worker_settings())
            except (OSError, leak_filter_worker.WorkerError) as error:
                fail(error)
        if pool is not None and WAIT_FOR_WORKERS:
            try:
                pool.wait_ready(leak_filter_worker.WORKER_TIMEOUT)
            except leak_filter_worker.WorkerError as error:
                fail(error)
        if pool is not None and pool.error is not None:
            fail(pool.error)
        if pool is not None and pool.ready():
            try:
                pending.append((pool.submit(batch_texts), batch_texts, batch_metas))
            except leak_filter_worker.WorkerError as error:
                fail(error)
            else:
                drain(keep=pool.capacity())
                return
        take(scanner.scan(batch_texts), batch_metas)

    scanned = 0
    try:
        for chunk in chunks:
            seq = scanned
            scanned += 1
            if progress is not None and scanned % PROGRESS_EVERY == 0:
                progress(scanned)
            text = chunk.text
            # (gate.checks.leak_stream hands over chunks normalized in its reader process)
            norm = text if getattr(chunk, "normalized", False) else normalize(text) if text else ""
            if not norm:
                continue
            texts.append(norm)
            metas.append((seq, chunk.chunk_id, chunk.doc_id))
            chars += len(norm) + 1
            if chars >= BATCH_CHARS or (filt.learning and scanned == SAMPLE_CHUNKS):
                flush()
        if texts:
            flush()
        drain(keep=0)
        if pool is not None:
            pool.close()
            pool = None
    finally:
        if pool is not None:  # an error, an interrupt, or a caller that stopped early
            pool.close(kill=True)
    return scanned


# --------------------------------------------------------------------------- text output


def _one_line(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text.replace('"', "'")


def chunk_listing(best: str, chunk_ids: Iterable[str], total: int, shown: int = CHUNKS_SHOWN) -> str:
    """A leak's chunks as one line: its best chunk, then the others it matched (``chunk_ids``, in
    corpus order), ``shown`` in all, then "and N more" up to ``total`` (every chunk it matched)."""
    listed = [best, *(chunk for chunk in chunk_ids if chunk != best)][:shown]
    more = max(0, total - len(listed))
    return ", ".join(listed) + (f" and {more} more" if more else "")


def render_text(result: LeakageResult) -> str:
    """The human summary: a headline, one line per matched query, a recommendation."""
    lines = [f"{result.count} of {counted(result.queries_checked, 'query', 'queries')} matched a corpus chunk above "
             "threshold"]
    if result.matched:
        ids = [m.query_id for m in result.matched]
        quoted = [f'"{_one_line(m.text)}"' for m in result.matched]
        id_w = max(len(i) for i in ids)
        q_w = max(len(q) for q in quoted)
        for m, qid, q in zip(result.matched, ids, quoted):
            how = m.mode if m.mode == "exact" else f"{m.mode} {m.score:.2f}"
            where = m.chunk_id
            if m.chunks_matched > 1:
                how += f", {m.chunks_matched} chunks"
                where = chunk_listing(m.chunk_id, (chunk for chunk, _ in m.chunks), m.chunks_matched)
            lines.append(f"  {qid:<{id_w}} {q:<{q_w}}  -> {where} ({how})")
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
