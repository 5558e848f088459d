"""Anchored judgments mapped onto chunks: one rule, two chunkings, equal per-document relevance."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.common.errors import InputError
from gate.evaluation.evaluate import evaluate
from gate.inputs.anchoring import NOT_LANDED_PREFIX, RULE, map_judgments
from gate.inputs.readers.anchored import AnchoredJudgments, Judgment
from gate.inputs.readers.corpus import iter_corpus
from gate.inputs.readers.records import Chunk, Qrels, Run
from tests.inputs.readers.helpers import write

DOCS = {
    "setup": "Install the gate with pip. Then write a config file naming the golden set. "
             "Run the gate on a pull request and read the comment it posts.",
    "faq": "Why is my change not significant? Because the noise band is wide. Add more queries.",
    "other": "Nothing here is judged for any query at all, this document is only filler text.",
}


def chunked(docs: dict[str, str], cuts: dict[str, list[int]]) -> list[Chunk]:
    """Each document cut at ``cuts[doc]`` (offsets), its chunks tiling it, with offsets."""
    out = []
    for doc, text in docs.items():
        bounds = [0, *cuts.get(doc, []), len(text)]
        for i, (a, b) in enumerate(zip(bounds, bounds[1:], strict=False)):
            out.append(Chunk(f"{doc}#{i}", doc, text[a:b], a, b))
    return out


def judged(*items: Judgment) -> AnchoredJudgments:
    return AnchoredJudgments("judged.jsonl", tuple(items))


def per_document(qrels: Qrels, chunks: list[Chunk]) -> dict[tuple[str, str], int]:
    """Max grade per (query, document): what re-chunking must not change."""
    doc_of = {c.chunk_id: c.doc_id for c in chunks}
    out: dict[tuple[str, str], int] = {}
    for qid, chunk_id, grade in qrels:
        key = (qid, doc_of[chunk_id])
        out[key] = max(out.get(key, grade), grade)
    return out


JUDGMENTS = judged(
    Judgment("q1", 2, doc_id="faq"),
    Judgment("q2", 3, doc_id="setup", start=27, end=75),  # "Then write a config file naming the golden set."
    Judgment("q2", 1, doc_id="setup", start=76, end=120),
    Judgment("q3", 2, doc_id="setup", quote="read the   comment\nit posts"),
    Judgment("q3", 1, chunk_id="faq#0"),
)


def test_two_chunkings_give_equal_per_document_relevance():
    coarse = chunked(DOCS, {"setup": [75], "faq": [34]})
    fine = chunked(DOCS, {"setup": [20, 50, 90, 110], "faq": [10, 34, 60]})
    a, b = map_judgments(JUDGMENTS, coarse), map_judgments(JUDGMENTS, fine)
    assert per_document(a.qrels, coarse) == per_document(b.qrels, fine) == {
        ("q1", "faq"): 2, ("q2", "setup"): 3, ("q3", "setup"): 2, ("q3", "faq"): 1}
    assert a.summary.rule == RULE and a.summary.share == 0.5
    assert a.summary.judgments == {"document": 1, "span": 2, "quote": 1, "chunk": 1}
    assert (a.summary.landed, a.summary.not_landed) == (5, 0)
    # The coarse side: faq's two chunks from the doc-level grade; setup's two for q2 and q3 (each
    # marked: the chunk that takes no span or quote is 0); faq#0 for q3 by its chunk judgment.
    assert a.qrels.judgments == {"q1": {"faq#0": 2, "faq#1": 2}, "q2": {"setup#0": 3, "setup#1": 1},
                                 "q3": {"setup#0": 0, "setup#1": 2, "faq#0": 1}}
    assert (a.summary.chunk_judgments, a.summary.chunks_judged) == (7, 4)
    assert "other#0" not in {c for docs in b.qrels.judgments.values() for c in docs}  # unjudged stays unjudged


def span_only(start: int, end: int, grade: int = 2) -> AnchoredJudgments:
    return judged(Judgment("q", grade, doc_id="d", start=start, end=end))


def doc(text_len: int, cuts: list[int]) -> list[Chunk]:
    return chunked({"d": "x" * text_len}, {"d": cuts})


def test_a_span_split_evenly_lands_on_both_chunks():
    mapped = map_judgments(span_only(40, 60), doc(100, [50]))
    assert mapped.qrels.judgments == {"q": {"d#0": 2, "d#1": 2}}


def test_a_span_split_30_70_lands_on_the_larger_part_only():
    mapped = map_judgments(span_only(47, 57), doc(100, [50]))  # 3 characters before the cut, 7 after
    assert mapped.qrels.judgments == {"q": {"d#0": 0, "d#1": 2}}
    lower = map_judgments(span_only(47, 57), doc(100, [50]), share=0.3)
    assert lower.qrels.judgments == {"q": {"d#0": 2, "d#1": 2}}


def pieces(*bounds: tuple[int, int]) -> list[Chunk]:
    """Chunks of document ``d`` at the given offsets: gaps between them are text a parser dropped."""
    return [Chunk(f"d#{i}", "d", "x" * (b - a), a, b) for i, (a, b) in enumerate(bounds)]


def test_a_span_split_three_ways_lands_on_the_middle_chunk():
    # [40, 70): 8 characters on d#0, the whole of d#1, 5 on d#2; d#1 overlaps it most.
    mapped = map_judgments(span_only(40, 70), pieces((0, 48), (48, 65), (65, 100)), share=0.8)
    assert mapped.qrels.judgments == {"q": {"d#0": 0, "d#1": 2, "d#2": 0}}
    # With gaps between the chunks (markup dropped), the middle one is still the most overlapped.
    gapped = map_judgments(span_only(40, 70), pieces((0, 44), (47, 62), (66, 100)), share=0.5)
    assert gapped.qrels.judgments == {"q": {"d#0": 0, "d#1": 2, "d#2": 0}}
    assert gapped.summary.not_landed == 0


def test_a_span_split_in_two_with_a_gap_lands_on_the_larger_part():
    """No chunk holds half of [40, 60): 7 characters on d#0, 6 on d#1, 7 dropped between them.
    The old rule left it on no chunk: a relevant document no run of this side could retrieve."""
    mapped = map_judgments(span_only(40, 60), pieces((0, 47), (54, 100)))
    assert mapped.qrels.judgments == {"q": {"d#0": 2, "d#1": 0}}
    assert (mapped.summary.landed, mapped.summary.not_landed) == (1, 0)
    assert not any(chunk.startswith(NOT_LANDED_PREFIX) for chunk in mapped.qrels.judgments["q"])


def test_a_span_split_unevenly_at_a_high_share_lands_on_the_larger_part():
    mapped = map_judgments(span_only(40, 60), doc(100, [48]), share=0.7)  # 8 | 12: neither holds 70%
    assert mapped.qrels.judgments == {"q": {"d#0": 0, "d#1": 2}}


def test_a_span_the_fallback_places_on_tied_chunks_lands_on_both():
    mapped = map_judgments(span_only(40, 60), pieces((0, 46), (54, 100)))  # 6 and 6 of 20
    assert mapped.qrels.judgments == {"q": {"d#0": 2, "d#1": 2}}
    three = map_judgments(span_only(40, 70), pieces((0, 45), (50, 55), (60, 65), (65, 100)), share=0.9)
    # 5 characters on each of four chunks: d#1 and d#2 lie inside the span and take it by the share.
    assert three.qrels.judgments == {"q": {"d#0": 0, "d#1": 2, "d#2": 2, "d#3": 0}}


def test_the_fallback_keeps_the_highest_grade_and_the_takers_first():
    found = judged(Judgment("q", 3, doc_id="d", start=40, end=60),  # lands by the fallback on d#0
                   Judgment("q", 1, doc_id="d", start=0, end=30))  # taken by d#0 by the share
    mapped = map_judgments(found, pieces((0, 47), (54, 100)))
    assert mapped.qrels.judgments == {"q": {"d#0": 3, "d#1": 0}}


def test_a_span_overlapping_no_chunk_still_lands_nowhere():
    """In a gap between two chunks (a table the parser drops), or past the document's end."""
    found = judged(Judgment("q", 2, doc_id="d", start=48, end=52, line=1),
                   Judgment("q", 1, doc_id="d", start=100, end=120, line=2))
    mapped = map_judgments(found, pieces((0, 47), (54, 100)))
    assert (mapped.summary.landed, mapped.summary.not_landed) == (0, 2)
    assert mapped.qrels.judgments == {"q": {"d#0": 0, "d#1": 0, NOT_LANDED_PREFIX + "span:d[48,52)": 2,
                                            NOT_LANDED_PREFIX + "span:d[100,120)": 1}}
    touching = map_judgments(span_only(47, 54), pieces((0, 47), (54, 100)))  # ends meet, no character shared
    assert touching.summary.not_landed == 1


def test_a_chunk_inside_a_long_span_and_a_span_inside_a_long_chunk_both_count():
    mapped = map_judgments(span_only(10, 90), doc(100, [40, 50]))  # d#1 = [40, 50) wholly inside
    assert mapped.qrels.judgments == {"q": {"d#0": 2, "d#1": 2, "d#2": 2}}
    inside = map_judgments(span_only(60, 62), doc(100, [50]))
    assert inside.qrels.judgments == {"q": {"d#0": 0, "d#1": 2}}


def test_overlapping_spans_with_other_grades_highest_wins():
    spans = judged(Judgment("q", 1, doc_id="d", start=0, end=60), Judgment("q", 3, doc_id="d", start=40, end=80))
    mapped = map_judgments(spans, doc(100, [50]))
    assert mapped.qrels.judgments == {"q": {"d#0": 1, "d#1": 3}}


def test_doc_level_plus_span_takes_the_max():
    both = judged(Judgment("q", 1, doc_id="d"), Judgment("q", 3, doc_id="d", start=60, end=70))
    assert map_judgments(both, doc(100, [50])).qrels.judgments == {"q": {"d#0": 1, "d#1": 3}}
    higher_doc = judged(Judgment("q", 2, doc_id="d"), Judgment("q", 1, doc_id="d", start=60, end=70))
    assert map_judgments(higher_doc, doc(100, [50])).qrels.judgments == {"q": {"d#0": 2, "d#1": 2}}


def test_sliding_window_chunks_overlap_and_are_fine():
    text = "abcdefghij" * 10
    windows = [Chunk(f"d#{i}", "d", text[a:a + 40], a, a + 40) for i, a in enumerate(range(0, 61, 20))]
    mapped = map_judgments(span_only(45, 55), windows)
    assert mapped.qrels.judgments == {"q": {"d#0": 0, "d#1": 2, "d#2": 2, "d#3": 0}}


def test_a_quote_across_a_boundary_lands_where_most_of_it_is():
    text = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
    cut = text.index("delta")
    chunks = chunked({"d": text}, {"d": [cut]})
    quote = judged(Judgment("q", 2, doc_id="d", quote="beta  gamma\ndelta"))  # 'beta gamma ' | 'delta'
    assert map_judgments(quote, chunks).qrels.judgments == {"q": {"d#0": 2, "d#1": 0}}
    even = judged(Judgment("q", 2, doc_id="d", quote="gamma delta"))  # 'gamma' | 'delta': both hold half
    assert map_judgments(even, chunks).qrels.judgments == {"q": {"d#0": 2, "d#1": 2}}


def test_a_quote_longer_than_a_chunk_lands_on_the_chunk_inside_it():
    text = "one two three four five six seven"
    chunks = chunked({"d": text}, {"d": [8, 14, 19]})  # 'one two ' 'three ' 'four ' 'five six seven'
    quote = judged(Judgment("q", 2, doc_id="d", quote="two three four five"))
    # 'onetwo' holds 'two', half of itself; 'fivesixseven' holds 'five', a third of itself.
    assert map_judgments(quote, chunks).qrels.judgments == {"q": {"d#0": 2, "d#1": 2, "d#2": 2, "d#3": 0}}


def test_a_quote_part_of_which_no_chunk_holds_lands_nowhere_not_on_a_guess():
    """Quotes have no fallback like spans' (docs/inputs-measures.md): 'gamma' was dropped by the
    parser, and the pieces left at the chunks' edges ('beta', 'delta') carry no position that
    would tell them from a chance match of a word, so the quote is reported, not placed."""
    chunks = [Chunk("d#0", "d", "alpha beta", 0, 10), Chunk("d#1", "d", "delta epsilon zeta", 17, 35)]
    mapped = map_judgments(judged(Judgment("q", 2, doc_id="d", quote="beta gamma delta")), chunks)
    assert mapped.summary.not_landed == 1
    assert mapped.qrels.judgments["q"]["d#0"] == mapped.qrels.judgments["q"]["d#1"] == 0


def test_a_quote_lands_whatever_the_unicode_normal_form_of_either_side():
    """A parser change that writes decomposed accents (e + U+0301) must not lose a quote typed in NFC."""
    composed, decomposed = "the caf\u00e9 au lait recipe", "the cafe\u0301 au\u00a0lait recipe"
    for quote, text in ((composed, decomposed), (decomposed, composed)):
        mapped = map_judgments(judged(Judgment("q", 2, doc_id="d", quote=quote)), [Chunk("d#0", "d", text, 0, 27)])
        assert mapped.qrels.judgments == {"q": {"d#0": 2}}
        assert mapped.summary.not_landed == 0


def test_judgments_landing_nowhere_are_counted_and_named():
    chunks = doc(100, [50])
    found = judged(Judgment("q", 2, doc_id="gone", line=1), Judgment("q", 1, doc_id="d", start=200, end=220, line=2),
                   Judgment("q", 1, doc_id="d", quote="not in the text", line=3),
                   Judgment("q", 1, chunk_id="d#9", line=4), Judgment("q", 3, doc_id="d", start=10, end=20, line=5))
    summary = map_judgments(found, chunks).summary
    assert (summary.landed, summary.not_landed) == (1, 4)
    assert [(n.anchor, n.line) for n in summary.not_landed_first] == [
        ("doc:gone", 1), ("span:d[200,220)", 2), ('quote:d "not in the text"', 3), ("chunk:d#9", 4)]


def test_a_relevant_judgment_landing_nowhere_stays_in_the_ideal_ranking():
    """A side without the passage (a dropped table, a page not ingested) is not judged on an easier
    yardstick: nDCG and recall count the relevant judgment it cannot retrieve, as trec_eval counts
    a relevant document missing from the collection; a grade-0 one adds nothing."""
    found = judged(Judgment("q", 3, doc_id="d", start=10, end=20), Judgment("q", 2, doc_id="gone"),
                   Judgment("q", 0, doc_id="gone0"))
    mapped = map_judgments(found, doc(100, [50]))
    assert mapped.summary.not_landed == 2 and mapped.summary.chunk_judgments == 2
    assert mapped.summary.chunks_judged == 2
    table = mapped.qrels.judgments["q"]
    assert table["d#0"] == 3 and table["d#1"] == 0
    assert table[NOT_LANDED_PREFIX + "doc:gone"] == 2 and NOT_LANDED_PREFIX + "doc:gone0" not in table
    run = Run.from_rankings("r", {"q": {"d#0": 2.0, "d#1": 1.0}})
    values = evaluate(run, mapped.qrels, ["nDCG@10", "R@10"], ["q"])
    ideal = 3 + 2 / math.log2(3)  # trec_eval's gains are the grades: 3 and 2 at ranks 1 and 2
    assert values["nDCG@10"][0] == pytest.approx(3 / ideal)
    assert values["R@10"][0] == pytest.approx(0.5)


def test_a_span_on_a_document_without_offsets_names_the_corpus():
    chunks = [Chunk("d#0", "d", "x" * 50), Chunk("d#1", "d", "y" * 50)]
    with pytest.raises(InputError) as info:
        map_judgments(judged(Judgment("q", 1, doc_id="d", start=0, end=5, line=3)), chunks, corpus="corpus-v2.jsonl")
    assert str(info.value) == ("judged.jsonl:3: span [0, 5) of document 'd' needs character offsets, and its chunks "
                               "in corpus-v2.jsonl have none (start_char_idx / end_char_idx)")
    # Doc-level and quote judgments need no offsets.
    plain = judged(Judgment("q", 1, doc_id="d"), Judgment("q", 2, doc_id="d", quote="yyy"))
    assert map_judgments(plain, chunks).qrels.judgments == {"q": {"d#0": 1, "d#1": 2}}


def test_offsets_on_some_chunks_only_are_refused_naming_corpus_and_chunk():
    chunks = [Chunk("d#0", "d", "x" * 50, 0, 50), Chunk("d#1", "d", "y" * 50)]
    with pytest.raises(InputError) as info:
        map_judgments(span_only(0, 5), chunks, corpus="corpus-v2.jsonl")
    assert str(info.value) == ("corpus-v2.jsonl: chunk 'd#1' of document 'd' has no character offsets "
                               "(start_char_idx / end_char_idx) while other chunks of it have: span judgments "
                               "cannot be placed on it")


def test_a_chunk_of_two_documents_is_refused():
    chunks = [Chunk("c1", "d", "text", 0, 4), Chunk("c1", "e", "text", 0, 4)]
    with pytest.raises(InputError, match="chunk 'c1' is given two documents, 'd' and 'e'"):
        map_judgments(judged(Judgment("q", 1, doc_id="d"), Judgment("q", 1, doc_id="e")), chunks)


def test_share_out_of_range_is_a_programming_error():
    with pytest.raises(ValueError):
        map_judgments(span_only(0, 5), doc(10, []), share=0.0)


# --------------------------------------------------------------- the corpus reader's offsets


def corpus_line(**fields) -> str:
    return json.dumps({"chunk_id": "d#0", "doc_id": "d", "text": "hello", **fields}) + "\n"


def test_corpus_reads_llamaindex_offsets(tmp_path):
    path = write(tmp_path, "c.jsonl", corpus_line(start_char_idx=0, end_char_idx=5)
                 + json.dumps({"id": "d#1", "text": "world", "start_char_idx": 3, "end_char_idx": 8}) + "\n"
                 + json.dumps({"id": "e", "text": "plain", "start_char_idx": None, "end_char_idx": None}) + "\n")
    assert list(iter_corpus(path)) == [Chunk("d#0", "d", "hello", 0, 5), Chunk("d#1", "d", "world", 3, 8),
                                       Chunk("e", "e", "plain")]


@pytest.mark.parametrize(("fields", "message"), [
    ({"start_char_idx": 0}, "chunk 'd#0' has 'start_char_idx' but no 'end_char_idx' (both or neither)"),
    ({"end_char_idx": 4}, "chunk 'd#0' has 'end_char_idx' but no 'start_char_idx' (both or neither)"),
    ({"start_char_idx": "0", "end_char_idx": 4}, "'start_char_idx' of chunk 'd#0' must be an integer, got str"),
    ({"start_char_idx": 0, "end_char_idx": 4.5}, "'end_char_idx' of chunk 'd#0' must be an integer, got float"),
    ({"start_char_idx": 4, "end_char_idx": 4}, "chunk 'd#0' has start_char_idx 4 and end_char_idx 4: offsets need "
                                               "0 <= start < end"),
    ({"start_char_idx": -2, "end_char_idx": 4}, "chunk 'd#0' has start_char_idx -2 and end_char_idx 4: offsets "
                                                "need 0 <= start < end"),
    ({"doc_id": ["d", "e"]}, "'doc_id' of chunk 'd#0' is a list: a chunk of several documents cannot carry their "
                             "judgments (one document a chunk)"),
])
def test_corpus_refuses_bad_offsets_and_chunks_of_two_documents(tmp_path, fields, message):
    path = write(tmp_path, "c.jsonl", corpus_line() + corpus_line(**fields).replace("d#0", "d#0", 1))
    with pytest.raises(InputError) as info:
        list(iter_corpus(path))
    assert str(info.value) in (f"{path}:2: {message}", f"{path}:2: duplicate chunk id 'd#0' (first at line 1)")
    assert "duplicate" not in str(info.value)


def test_corpus_refuses_one_chunk_id_given_two_documents(tmp_path):
    path = write(tmp_path, "c.jsonl", corpus_line() + corpus_line(doc_id="e"))
    with pytest.raises(InputError) as info:
        list(iter_corpus(path))
    assert str(info.value) == (f"{path}:2: chunk id 'd#0' is given two documents, 'd' (first at line 1) and 'e': "
                               "a chunk belongs to one document")


# --------------------------------------------------------------- the property


@st.composite
def documents_and_judgments(draw):
    lengths = draw(st.lists(st.integers(1, 120), min_size=1, max_size=4))
    docs = {f"doc{i}": "w" * n for i, n in enumerate(lengths)}

    def cuts(n: int):
        return sorted(set(draw(st.lists(st.integers(1, max(1, n - 1)), max_size=6)) if n > 1 else []))

    one = {d: cuts(len(t)) for d, t in docs.items()}
    two = {d: cuts(len(t)) for d, t in docs.items()}
    found: dict[tuple[str, str], Judgment] = {}
    for _ in range(draw(st.integers(1, 12))):
        qid = draw(st.sampled_from(["q1", "q2", "q3"]))
        doc_id = draw(st.sampled_from(sorted(docs)))
        grade = draw(st.integers(0, 3))
        if draw(st.booleans()):
            found[(qid, f"doc:{doc_id}")] = Judgment(qid, grade, doc_id=doc_id)
        else:
            start = draw(st.integers(0, len(docs[doc_id]) - 1))
            end = draw(st.integers(start + 1, len(docs[doc_id])))
            found[(qid, f"{doc_id}[{start},{end})")] = Judgment(qid, grade, doc_id=doc_id, start=start, end=end)
    return docs, one, two, judged(*found.values())


@settings(max_examples=200, deadline=None)
@given(documents_and_judgments())
def test_property_any_two_chunkings_give_equal_per_document_relevance(case):
    docs, one, two, found = case
    first, second = chunked(docs, one), chunked(docs, two)
    assert_equal_relevance(found, first, second, share=0.5)


def assert_equal_relevance(found: AnchoredJudgments, first: list[Chunk], second: list[Chunk], *,
                           share: float) -> None:
    """Both chunkings give each (query, document) the judgments' own highest grade, all landed."""
    a, b = map_judgments(found, first, share=share), map_judgments(found, second, share=share)
    expected: dict[tuple[str, str], int] = {}
    for j in found.judgments:
        key = (j.query_id, j.doc_id or "")
        expected[key] = max(expected.get(key, j.grade), j.grade)
    assert per_document(a.qrels, first) == per_document(b.qrels, second) == expected
    assert a.summary.not_landed == b.summary.not_landed == 0


@st.composite
def gapped_chunkings(draw):
    """Documents, two chunkings whose chunks may leave gaps (text a parser drops) and cut spans
    three ways or more, and span and doc-level judgments."""
    docs, _, _, found = draw(documents_and_judgments())

    def chunking() -> list[Chunk]:
        out = []
        for doc_id, text in docs.items():
            cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=8))))
            bounds = [0, *(c for c in cuts if c < len(text)), len(text)]
            for i, (a, b) in enumerate(zip(bounds, bounds[1:], strict=False)):
                # Drop up to a third of the piece at either end: the gaps between chunks.
                cut_a = draw(st.integers(0, (b - a - 1) // 3))
                cut_b = draw(st.integers(0, (b - a - 1) // 3))
                out.append(Chunk(f"{doc_id}#{i}", doc_id, text[a + cut_a:b - cut_b], a + cut_a, b - cut_b))
        return out

    return docs, chunking(), chunking(), found


def meets(judgment: Judgment, chunks: list[Chunk]) -> bool:
    if judgment.start is None or judgment.end is None:
        return True
    return any(c.doc_id == judgment.doc_id and c.start is not None and c.end is not None
               and min(judgment.end, c.end) > max(judgment.start, c.start) for c in chunks)


@settings(max_examples=300, deadline=None)
@given(gapped_chunkings(), st.sampled_from([0.3, 0.5, 0.8, 1.0]))
def test_property_chunkings_with_gaps_and_three_way_splits_give_equal_per_document_relevance(case, share):
    """A span lands nowhere only when no chunk of its side meets it; wherever every span meets
    some chunk on both sides, the two sides' per-document relevance is the judgments' own."""
    _, first, second, found = case
    for chunks in (first, second):
        mapped = map_judgments(found, chunks, share=share)
        assert mapped.summary.not_landed == sum(not meets(j, chunks) for j in found.judgments)
    if all(meets(j, first) and meets(j, second) for j in found.judgments):
        assert_equal_relevance(found, first, second, share=share)


def test_the_worked_example_of_the_docs():
    """docs/inputs-measures.md: a span [120, 380) grade 3 and the document grade 1, two chunkings."""
    found = judged(Judgment("q1", 3, doc_id="guides/setup", start=120, end=380),
                   Judgment("q1", 1, doc_id="guides/setup"))
    setup = {"guides/setup": "x" * 1000}
    v1 = map_judgments(found, chunked(setup, {"guides/setup": [250, 500]}))
    v2 = map_judgments(found, chunked(setup, {"guides/setup": [350]}))
    assert v1.qrels.judgments == {"q1": {"guides/setup#0": 3, "guides/setup#1": 3, "guides/setup#2": 1}}
    assert v2.qrels.judgments == {"q1": {"guides/setup#0": 3, "guides/setup#1": 1}}


def test_offsets_are_part_of_the_corpus_fingerprint_only_where_given(tmp_path):
    from gate.inputs.fingerprint import corpus_fingerprint

    plain = write(tmp_path, "plain.jsonl", corpus_line())
    same = write(tmp_path, "same.jsonl", json.dumps({"chunk_id": "d#0", "doc_id": "d", "text": "hello"}) + "\n")
    assert corpus_fingerprint(plain).sha256 == corpus_fingerprint(same).sha256
    placed = write(tmp_path, "placed.jsonl", corpus_line(start_char_idx=0, end_char_idx=5))
    moved = write(tmp_path, "moved.jsonl", corpus_line(start_char_idx=10, end_char_idx=15))
    shas = {corpus_fingerprint(p).sha256 for p in (plain, placed, moved)}
    assert len(shas) == 3  # span judgments map differently onto moved offsets: another corpus


def test_a_corpus_cutting_judged_documents_into_too_many_chunks_is_one_line(monkeypatch):
    """A PR's corpus that cuts a judged document into one-character chunks would make queries x
    chunks judgments (200 x 100,000: 800 MiB): refused once the bound would be passed, naming it."""
    from gate.common import limits

    monkeypatch.setattr(limits, "MAX_MAPPED_JUDGMENTS", 50)
    found = judged(*(Judgment(f"q{i}", 2, doc_id="d", start=i * 10, end=i * 10 + 5) for i in range(6)))
    assert map_judgments(found, doc(100, [50]), corpus="c.jsonl").summary.landed == 6
    with pytest.raises(InputError, match=r"c.jsonl: .*more than 50 chunk judgments \(document 'd' alone is cut into "
                                         r"100 chunks\)"):
        map_judgments(found, doc(100, list(range(1, 100))), corpus="c.jsonl")


def test_spans_find_their_chunks_among_sliding_windows_of_any_length():
    """Spans are looked up among the chunks that can reach them (bisected on the starts, by the
    longest chunk): windows of mixed lengths, overlapping, in any order, give what testing every
    chunk gives."""
    chunks = [Chunk(f"d#w{a}-{b}", "d", "x" * (b - a), a, b)
              for a, b in [(250, 300), (0, 120), (100, 110), (60, 200), (190, 260), (5, 9), (0, 300)]]
    spans = [Judgment("q", g, doc_id="d", start=s, end=e) for g, (s, e) in
             enumerate([(0, 4), (101, 108), (150, 199), (255, 299), (0, 300), (119, 121)], start=1)]
    mapped = map_judgments(judged(*spans), chunks, share=0.5)
    expected: dict[str, int] = {c.chunk_id: 0 for c in chunks}
    for span in spans:
        for c in chunks:
            overlap = min(span.end, c.end) - max(span.start, c.start)
            if overlap > 0 and overlap >= 0.5 * min(span.end - span.start, c.end - c.start):
                expected[c.chunk_id] = max(expected[c.chunk_id], span.grade)
    assert mapped.qrels.judgments["q"] == expected
