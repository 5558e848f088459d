"""Anchored judgments mapped onto one corpus's chunks, by one stated rule.

Chunk-id qrels go stale when an ingestion change re-chunks the corpus: the new side's chunk
ids are unjudged. Judgments anchored to documents and spans (:mod:`gate.inputs.readers.anchored`)
are mapped onto each side's own chunks instead, the same rule for both sides (:data:`RULE`):

a chunk takes the highest grade among

(a) the doc-level grade of its document;
(b) every span of its document it overlaps by at least ``share`` of the shorter of the two
    (``overlap / min(span length, chunk length) >= share``: a chunk inside a long span and a
    span inside a long chunk both count; a span split evenly over two chunks lands on both at
    the default 0.5); a span that some chunk overlaps but none by the share (cut in two with a
    gap between the chunks, where a parser drops markup, or unevenly at a share above a half)
    lands on the chunk(s) that overlap it most, all tied ones: so a span lands nowhere only
    when no chunk meets it;
(c) every quote of its document it holds at least ``share`` of, as one contiguous piece (the
    whole quote, the whole chunk inside the quote, or a piece at the chunk's start or end when
    the quote crosses a boundary), measured as for spans against the shorter of quote and chunk,
    compared in Unicode NFC after collapsing whitespace and counted in characters other than whitespace
    (quotes have no fallback like spans': see :func:`_holds`);
(d) its own chunk judgment.

A chunk of a document that has span or quote judgments for the query but takes none of them is
judged 0: the labeller read the document and marked what answers. A chunk of a document with no
judgment for the query stays unjudged. A judgment that lands on no chunk (its document is not in
this corpus, no chunk overlaps its span at all, its quote is not found) is counted and named in
the summary, never dropped silently; a relevant one stays in the side's qrels as a relevant
document no run can retrieve (:data:`NOT_LANDED_PREFIX`), so both sides' ideal rankings hold it.
"""

from __future__ import annotations

import bisect
import math
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gate.common import limits
from gate.common.errors import InputError
from gate.inputs.readers.anchored import AnchoredJudgments, Judgment
from gate.inputs.readers.records import Chunk, Qrels

__all__ = ["RULE", "DEFAULT_SHARE", "NOT_LANDED_PREFIX", "NotLanded", "MappingSummary", "MappedJudgments",
           "MappedSides", "map_judgments", "judgments_from_qrels"]

DEFAULT_SHARE = 0.5
#: How many judgments that land nowhere the summary names (the count is always complete).
NAMED_NOT_LANDED = 5
#: The id a relevant judgment that lands on no chunk keeps in a side's qrels: no run can retrieve
#: it (ids never hold control characters: gate.inputs.readers.fields.check_id).
NOT_LANDED_PREFIX = "\x1fnot-landed:"
RULE = ("a chunk takes the highest grade among its document's doc-level grade, every span of its document it "
        "overlaps by at least the share of the shorter of the two (a span none takes so lands on the chunks that "
        "overlap it most), every quote of its document it holds at least "
        "the share of as one contiguous piece (whitespace collapsed), and its own chunk judgment; a chunk of a "
        "document with span or quote judgments for the query that takes none of them is judged 0; a relevant "
        "judgment that lands on no chunk stays in the ideal ranking as a relevant document no run retrieves")


@dataclass(frozen=True)
class NotLanded:
    """A judgment that no chunk of the corpus takes: its query, what it names, where it was read."""

    query_id: str
    anchor: str
    line: int | None


@dataclass(frozen=True)
class MappingSummary:
    """How a judgments file was mapped onto one corpus (the report's per-side record)."""

    rule: str
    share: float
    corpus: str
    judgments: Mapping[str, int]  # by kind: document, span, quote, chunk
    landed: int
    not_landed: int
    not_landed_first: tuple[NotLanded, ...]  # the first NAMED_NOT_LANDED, in file order
    chunk_judgments: int  # (query, chunk) judgments produced
    chunks_judged: int  # distinct chunks judged for some query


@dataclass(frozen=True)
class MappedJudgments:
    qrels: Qrels  # keyed by this corpus's chunk ids
    summary: MappingSummary


@dataclass(frozen=True)
class MappedSides:
    """The mapping onto each side of a comparison (the report's ``judgments`` section); ``baseline``
    is None when no baseline was resolved."""

    source: str  # the judgments file, as the config names it
    baseline: MappingSummary | None
    candidate: MappingSummary


@dataclass(frozen=True, slots=True)
class _Held:
    """A chunk of a judged document, as the mapping needs it (its text only for quotes)."""

    chunk_id: str
    start: int | None
    end: int | None
    text: str | None


def judgments_from_qrels(qrels: Qrels) -> AnchoredJudgments:
    """A plain qrels file whose ids name documents (``golden.anchor: document``) as doc-level judgments."""
    return AnchoredJudgments(qrels.source, tuple(Judgment(qid, rel, doc_id=doc) for qid, doc, rel in qrels))


def map_judgments(judgments: AnchoredJudgments, chunks: Iterable[Chunk], *, share: float = DEFAULT_SHARE,
                  corpus: str = "the corpus") -> MappedJudgments:
    """Map ``judgments`` onto ``chunks`` (one corpus, streamed once) by :data:`RULE`.

    Only the chunks of judged documents are held (their texts only when a quote needs them).
    A span judgment on a document whose chunks carry no offsets, or only some of them, is an
    :class:`InputError` naming ``corpus``: it cannot be placed."""
    if not 0 < share <= 1:
        raise ValueError(f"share must be in (0, 1], got {share}")
    by_doc: dict[str, list[Judgment]] = {}
    by_chunk: dict[str, list[Judgment]] = {}
    for judgment in judgments.judgments:
        if judgment.chunk_id is not None:
            by_chunk.setdefault(judgment.chunk_id, []).append(judgment)
        else:
            by_doc.setdefault(judgment.doc_id or "", []).append(judgment)
    quoted = {doc for doc, found in by_doc.items() if any(j.quote is not None for j in found)}
    held, present = _hold(chunks, by_doc, quoted, set(by_chunk), corpus)
    grades: dict[str, dict[str, int]] = {qid: {} for qid in dict.fromkeys(j.query_id for j in judgments.judgments)}
    landed_ids: set[int] = set()
    made = 0
    for doc, found in by_doc.items():
        pieces = held.get(doc)
        if pieces:
            _check_offsets(judgments.source, corpus, doc, found, pieces)
            _check_size(made + len({j.query_id for j in found}) * len(pieces), corpus, doc, len(pieces))
            landed_ids.update(_map_document(found, pieces, share, grades))
            made = sum(map(len, grades.values()))
    for chunk_id, found in by_chunk.items():
        if chunk_id in present:
            for judgment in found:
                _raise(grades[judgment.query_id], chunk_id, judgment.grade)
                landed_ids.add(id(judgment))
    return _result(judgments, grades, landed_ids, share, corpus)


def _hold(chunks: Iterable[Chunk], by_doc: Mapping[str, object], quoted: set[str], judged_chunks: set[str],
          corpus: str) -> tuple[dict[str, list[_Held]], set[str]]:
    held: dict[str, list[_Held]] = {}
    doc_of: dict[str, str] = {}
    present: set[str] = set()
    for chunk in chunks:
        if chunk.chunk_id in judged_chunks:
            present.add(chunk.chunk_id)
        if chunk.doc_id not in by_doc:
            continue
        first = doc_of.setdefault(chunk.chunk_id, chunk.doc_id)
        if first != chunk.doc_id:
            raise InputError(corpus, None, f"chunk '{limits.shorten(chunk.chunk_id)}' is given two documents, "
                             f"'{limits.shorten(first)}' and '{limits.shorten(chunk.doc_id)}': a chunk belongs to "
                             "one document")
        text = _collapse(chunk.text) if chunk.doc_id in quoted else None
        held.setdefault(chunk.doc_id, []).append(_Held(chunk.chunk_id, chunk.start, chunk.end, text))
    return held, present


def _check_offsets(source: str, corpus: str, doc: str, found: list[Judgment], pieces: list[_Held]) -> None:
    span = next((j for j in found if j.start is not None), None)
    if span is None:
        return
    without = [p for p in pieces if p.start is None]
    if len(without) == len(pieces):
        raise InputError(source, span.line, f"span [{span.start}, {span.end}) of document '{limits.shorten(doc)}' "
                         f"needs character offsets, and its chunks in {corpus} have none (start_char_idx / "
                         "end_char_idx)")
    if without:
        raise InputError(corpus, None, f"chunk '{limits.shorten(without[0].chunk_id)}' of document "
                         f"'{limits.shorten(doc)}' has no character offsets (start_char_idx / end_char_idx) while "
                         "other chunks of it have: span judgments cannot be placed on it")


def _check_size(bound: int, corpus: str, doc: str, pieces: int) -> None:
    """Refuse a mapping that could exceed :data:`limits.MAX_MAPPED_JUDGMENTS` chunk judgments."""
    if bound > limits.MAX_MAPPED_JUDGMENTS:
        raise InputError(corpus, None, f"mapping the judgments onto this corpus would make more than "
                                       f"{limits.MAX_MAPPED_JUDGMENTS:,} chunk judgments (document "
                                       f"'{limits.shorten(doc)}' alone is cut into {pieces:,} chunks): chunk it into "
                                       "fewer, larger pieces, or judge chunk ids")


def _map_document(found: list[Judgment], pieces: list[_Held], share: float,
                  grades: dict[str, dict[str, int]]) -> set[int]:
    """Grade the chunks of one document for every judgment of it; the ids of those that landed."""
    landed: set[int] = set()
    marked = {j.query_id for j in found if j.start is not None or j.quote is not None}
    for qid in marked:  # the labeller marked what answers: the rest of the document is judged 0
        for piece in pieces:
            _raise(grades[qid], piece.chunk_id, 0)
    near = _Overlaps(pieces)
    for judgment in found:
        quote = _Quote.of(judgment.quote) if judgment.quote is not None else None
        reach = near.of(judgment)
        taking = [piece for piece in reach if _takes(judgment, quote, piece, share)]
        if not taking and judgment.start is not None:
            taking = _most_overlapped(judgment, reach)
        for piece in taking:
            _raise(grades[judgment.query_id], piece.chunk_id, judgment.grade)
        if taking:
            landed.add(id(judgment))
    return landed


def _span_overlap(judgment: Judgment, piece: _Held) -> int:
    """Characters a span and a chunk share (0 or less when they do not meet, or offsets are missing)."""
    if judgment.start is None or judgment.end is None or piece.start is None or piece.end is None:
        return 0
    return min(judgment.end, piece.end) - max(judgment.start, piece.start)


def _most_overlapped(judgment: Judgment, reach: list[_Held]) -> list[_Held]:
    """The fallback for a span no chunk takes by the share: the chunks that overlap it most (all
    tied ones). A chunking that cuts a span in two with a gap between the chunks (markup the
    parser drops), or unevenly at a share above a half, can leave no chunk holding the share (cut
    three ways, the middle chunk lies inside the span and takes it); without this the span would
    land nowhere on that side and stay in its ideal ranking as a relevant document no run can
    retrieve, while the other chunking holds it: per-document relevance would differ between two
    chunkings of the same documents. Chunks that do not meet the span never take it: a span
    outside every chunk still lands nowhere."""
    overlaps = [(_span_overlap(judgment, piece), piece) for piece in reach]
    most = max((overlap for overlap, _ in overlaps), default=0)
    return [piece for overlap, piece in overlaps if overlap == most] if most > 0 else []


class _Overlaps:
    """The chunks of a document a judgment may land on: for a span, only those whose offsets can
    reach it (bisected on their starts, so many spans over many chunks are not spans x chunks
    tests); for anything else, every chunk."""

    def __init__(self, pieces: list[_Held]):
        self.pieces = pieces
        placed = sorted((p for p in pieces if p.start is not None and p.end is not None), key=lambda p: p.start or 0)
        self.placed = placed
        self.starts = [p.start or 0 for p in placed]
        self.longest = max(((p.end or 0) - (p.start or 0) for p in placed), default=0)

    def of(self, judgment: Judgment) -> list[_Held]:
        if judgment.start is None or judgment.end is None:
            return self.pieces
        # A chunk overlapping [start, end) starts before end, and after start - its length.
        low = bisect.bisect_right(self.starts, judgment.start - self.longest)
        high = bisect.bisect_left(self.starts, judgment.end)
        return self.placed[low:high]


def _takes(judgment: Judgment, quote: _Quote | None, piece: _Held, share: float) -> bool:
    if judgment.start is not None and judgment.end is not None:
        if piece.start is None or piece.end is None:
            return False
        overlap = _span_overlap(judgment, piece)
        return overlap > 0 and overlap >= share * min(judgment.end - judgment.start, piece.end - piece.start)
    if quote is not None:
        return bool(piece.text) and bool(quote.text) and _holds(quote, piece.text or "", share)
    return True  # a doc-level judgment: every chunk of its document


@dataclass(frozen=True)
class _Quote:
    """A quote, whitespace collapsed, with what matching its pieces needs (computed once)."""

    text: str
    fail: list[int]
    backwards: str
    backwards_fail: list[int]

    @staticmethod
    def of(quote: str) -> _Quote:
        text = _collapse(quote)
        return _Quote(text, _failure(text), text[::-1], _failure(text[::-1]))


def _holds(quote: _Quote, text: str, share: float) -> bool:
    """Whether ``text`` holds at least ``share`` of the shorter of it and the quote as one
    contiguous piece: all of the quote, all of the text (the chunk inside the quote), or a piece
    at the text's end (the quote's beginning) or start (the quote's end). Lengths count
    characters other than spaces: a boundary at a space drops that space from both pieces, and
    an even split must still be even.

    Quotes get no fallback like spans' (:func:`_most_overlapped`). At a share of a half or less
    (the default) a quote the chunks' texts hold always lands: cut three ways or more, a middle
    chunk lies wholly inside it; cut in two, the larger piece holds at least half. What lands
    nowhere is a quote part of which no chunk's text holds (a parser dropped it, or it was
    mistyped), and there "the chunk holding its longest piece" has no position to check: a
    chunk that happens to end with the quote's first word would hold a piece, so a fallback
    would land a quote that is not in the document on a chance match instead of reporting it.
    Where a parser drops text, spans (offsets in the source) are the anchor that still lands."""
    q = quote.text
    needed = share * min(_letters(q), _letters(text))
    if q in text or (len(text) < len(q) and text in q):
        return True  # the whole of the shorter one
    # A piece of ``needed`` letters spans at least as many characters: the quote's first (last)
    # ones must appear in the text's tail (head) - a C-speed test before the linear scan.
    head = max(1, math.ceil(needed))
    tail = text[-len(q):]
    if q[:head] in tail and _letters(q[:_prefix_at_end(q, quote.fail, tail)]) >= needed:
        return True
    front = text[:len(q)]
    if q[-head:] in front:
        taken = _prefix_at_end(quote.backwards, quote.backwards_fail, front[::-1])
        return _letters(q[len(q) - taken:]) >= needed
    return False


def _letters(collapsed: str) -> int:
    """Characters other than the single spaces a collapsed text keeps."""
    return len(collapsed) - collapsed.count(" ")


def _failure(pattern: str) -> list[int]:
    """Knuth-Morris-Pratt failure function: linear, so a long quote against a long chunk stays cheap."""
    fail = [0] * len(pattern)
    k = 0
    for i in range(1, len(pattern)):
        while k and pattern[i] != pattern[k]:
            k = fail[k - 1]
        if pattern[i] == pattern[k]:
            k += 1
        fail[i] = k
    return fail


def _prefix_at_end(pattern: str, fail: list[int], text: str) -> int:
    """The length of the longest prefix of ``pattern`` that ``text`` ends with."""
    k = 0
    for char in text:
        while k and (k == len(pattern) or pattern[k] != char):
            k = fail[k - 1]
        if k < len(pattern) and pattern[k] == char:
            k += 1
    return k


def _collapse(text: str) -> str:
    # NFC first: a parser change may write "é" as e + U+0301 on one side only, and the
    # labeller's quote must land on both sides alike (query texts are matched in NFC too).
    return " ".join(unicodedata.normalize("NFC", text).split())


def _raise(table: dict[str, int], chunk_id: str, grade: int) -> None:
    if chunk_id not in table or table[chunk_id] < grade:
        table[chunk_id] = grade


def _anchor_label(judgment: Judgment) -> str:
    if judgment.quote is not None:
        return f"quote:{judgment.doc_id} \"{limits.shorten(_collapse(judgment.quote), 40)}\""
    return judgment.anchor()


def _result(judgments: AnchoredJudgments, grades: dict[str, dict[str, int]], landed_ids: set[int], share: float,
            corpus: str) -> MappedJudgments:
    missed = [j for j in judgments.judgments if id(j) not in landed_ids]
    table = {qid: chunks for qid, chunks in grades.items() if chunks}
    chunk_judgments = sum(map(len, table.values()))
    chunks_judged = len({chunk for chunks in table.values() for chunk in chunks})
    for judgment in missed:
        if judgment.grade > 0:
            # Relevant, and this side has no chunk for it: it stays in the side's ideal ranking
            # (and recall's denominator) as a relevant document no run can retrieve, as trec_eval
            # counts a relevant document missing from the collection. Left out, a side that lost a
            # passage (a dropped table, a page not ingested) would be judged on an easier yardstick.
            table.setdefault(judgment.query_id, {})[NOT_LANDED_PREFIX + judgment.anchor()] = judgment.grade
    qrels = Qrels(judgments.source, table)
    summary = MappingSummary(
        rule=RULE,
        share=share,
        corpus=corpus,
        judgments=judgments.counts(),
        landed=len(judgments.judgments) - len(missed),
        not_landed=len(missed),
        not_landed_first=tuple(NotLanded(j.query_id, _anchor_label(j), j.line) for j in missed[:NAMED_NOT_LANDED]),
        chunk_judgments=chunk_judgments,
        chunks_judged=chunks_judged,
    )
    return MappedJudgments(qrels, summary)

