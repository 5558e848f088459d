"""Golden-query leakage detector: normalization, both modes, the result API.

The trigram engine (candidate filter, vectorized window bound) is checked
against a brute-force reference computed here from the definition, on many
small random corpora with small alphabets (where near-matches abound).
"""

from __future__ import annotations

import json
import random
import tracemalloc
from typing import NamedTuple

import pytest

import gate.checks.leakage as leakage
import gate.checks.leakage as leakage_module
from gate.checks.leakage import LeakageResult, LeakMatch, find_leaks, find_text_in_lines, render_text
from gate.checks.normalize import normalize, shingles, trigrams, window_score
from gate.common.errors import InputError
from gate.inputs.readers.records import Query, QuerySet


class Chunk(NamedTuple):
    chunk_id: str
    doc_id: str | None
    text: str


# --------------------------------------------------------------------------- reference


def brute_force(queries, chunks, threshold, min_tokens=3, modes=("exact", "trigram-jaccard")):
    """{query id: (chunk id, mode, score, chunks matched)} straight from the definition."""
    out = {}
    for q in queries:
        nq = normalize(q.text)
        if len(nq.split()) < min_tokens:
            continue
        best = None
        n = 0
        for c in chunks:
            nc = normalize(c.text)
            is_exact = bool(nc) and f" {nq} " in f" {nc} "
            score = 1.0 if is_exact else window_score(q.text, c.text)
            hit = ("exact" in modes and is_exact) or ("trigram-jaccard" in modes and score >= threshold)
            if not hit:
                continue
            n += 1
            key = ("exact" in modes and is_exact, score)
            if best is None or key > best[0]:
                best = (key, c.chunk_id)
        if best is not None:
            mode = "exact" if best[0][0] else "trigram-jaccard"
            out[q.query_id] = (best[1], mode, round(best[0][1], 12), n)
    return out


def as_table(result: LeakageResult):
    return {m.query_id: (m.chunk_id, m.mode, round(m.score, 12), m.chunks_matched) for m in result.matched}


def random_case(rng: random.Random):
    alphabet = rng.choice(["ab", "abc", "abcd", "abcdefgh", "aé", "日本語"])
    vocab = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(3, 12))]
    queries = []
    for i in range(rng.randint(1, 8)):
        text = " ".join(rng.choice(vocab) for _ in range(rng.randint(1, 6)))
        if rng.random() < 0.2:
            text = text.upper().replace(" ", "-", 1) + "?"
        queries.append(Query(f"q{i}", text))
    chunks = []
    for j in range(rng.randint(1, 15)):
        n = rng.randint(0, rng.choice([8, 40, 300]))
        chunks.append(Chunk(f"d{j % 3}#{j}", rng.choice([None, "", f"d{j % 3}"]),
                            " ".join(rng.choice(vocab) for _ in range(n))))
    threshold = rng.choice([0.5, 0.7, 0.85, 1.0])
    min_tokens = rng.choice([1, 2, 3])
    modes = rng.choice([("exact",), ("trigram-jaccard",), ("exact", "trigram-jaccard")])
    return queries, chunks, threshold, min_tokens, modes


CONFIGS = {
    "default": {},
    "no-pyahocorasick": {"_ahocorasick": None},
    "sorted-key-lookup": {"LUT_LIMIT": 0},
    "tiny-batches": {"BATCH_CHARS": 60, "SEGMENT_TOKENS": 4, "SAMPLE_CHUNKS": 3, "DENSE_LIMIT": 8},
    "no-group-table": {"GROUP_TABLE": 0, "PROBES": 0},
    "no-query-bitsets": {"QBITS_LIMIT": 0},
}


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_matches_brute_force_reference(config, monkeypatch):
    for name, value in CONFIGS[config].items():
        target = leakage._TrigramFilter if name in ("LUT_LIMIT", "DENSE_LIMIT", "GROUP_TABLE", "PROBES",
                                                    "QBITS_LIMIT") else leakage
        monkeypatch.setattr(target, name, value)
    rng = random.Random(f"leak-{config}")
    for _ in range(120):
        queries, chunks, threshold, min_tokens, modes = random_case(rng)
        got = find_leaks(queries, iter(chunks), modes=modes, threshold=threshold, min_tokens=min_tokens)
        expected = brute_force(queries, chunks, threshold, min_tokens, modes)
        assert as_table(got) == expected, (queries, chunks, threshold, min_tokens, modes)
        assert got.chunks_scanned == len(chunks)
        assert got.queries_checked + len(got.skipped_short) == len(queries)


# --------------------------------------------------------------------------- normalization


@pytest.mark.parametrize(
    "raw, normalized",
    [
        ("Rate-Limit: 429 (retry-after)", "rate limit 429 retry after"),
        ("How many webhooks per project?", "how many webhooks per project"),
        ("  tabs\tand\nnew\u2028lines  ", "tabs and new lines"),
        ("don't", "don t"),
        ("snake_case a+b=c $5 50% ~x", "snake case a b c 5 50 x"),
        ("Straße ＡＢＣ ﬁle Ⅻ", "strasse abc file xii"),
        ("infor\u00admation zero\u200bwidth", "information zerowidth"),
        ("emoji 🚀 rocket «quoted» “curly” — dash…", "emoji rocket quoted curly dash"),
        ("ǅemal", "džemal"),
        ("", ""),
        ("?!...", ""),
    ],
)
def test_normalize(raw, normalized):
    assert normalize(raw) == normalized


def test_ascii_fast_path_agrees_with_the_unicode_path():
    # A trailing non-ASCII letter forces the general path; it must not change the rest.
    for cp in range(128):
        c = chr(cp)
        assert normalize(f"A{c}b\u00e9") == normalize(f"A{c}b") + "\u00e9", repr(c)


def test_ascii_fast_path_agrees_with_the_unicode_path_on_random_strings():
    # Runs of spaces, controls (0x1c-0x1f split str but not bytes) and punctuation between words.
    import random

    rng = random.Random(5)
    alphabet = [chr(cp) for cp in range(128)] + ["ab", "Zq", "  ", "\x1c\x1f"]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        assert (normalize(text) + " \u00e9").lstrip() == normalize(text + " \u00e9"), repr(text)


def test_unicode_path_follows_the_categories():
    """Per-character reference: P*, S*, Cc -> space; Cf deleted; the rest kept."""
    import sys
    import unicodedata

    def reference(text):
        text = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
        out = []
        for c in text:
            cat = unicodedata.category(c)
            out.append(" " if cat[0] in "PS" or cat == "Cc" else "" if cat == "Cf" else c)
        return " ".join("".join(out).split())

    points = list(range(0x10000)) + list(range(0x10000, sys.maxunicode + 1, 61)) + [0x1F680, 0xE0001, 0x1D400]
    for cp in points:
        if 0xD800 <= cp <= 0xDFFF:
            continue
        text = f"a{chr(cp)}b \u00e9"
        assert normalize(text) == reference(text), hex(cp)


def test_trigrams_and_shingles():
    assert trigrams("ab c") == {"ab ", "b c"}
    assert trigrams("ab") == {"ab"}
    assert trigrams("") == set()
    text = "One two, three four five six seven eight nine"
    assert shingles(text, n=8) == {
        "one two three four five six seven eight",
        "two three four five six seven eight nine",
    }
    assert shingles("Just three words", n=8) == {"just three words"}
    assert shingles("  ", n=8) == set()


# --------------------------------------------------------------------------- generated corpus

SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]


def make_corpus(seed: int = 3, n_chunks: int = 2000):
    rng = random.Random(seed)
    vocab = sorted({"".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 4))) for _ in range(6000)})
    rng.shuffle(vocab)
    weights = [1 / (r + 1) for r in range(len(vocab))]  # Zipf over a shuffled vocabulary

    def words(n):
        return rng.choices(vocab, weights, k=n)

    queries = [Query(f"q{i:03d}", " ".join(words(rng.randint(5, 12)))) for i in range(60)]
    chunks = []
    for j in range(n_chunks):
        toks = words(rng.randint(30, 60))
        toks[0] = toks[0].capitalize()
        chunks.append([f"doc{j // 4}#{j % 4}", f"doc{j // 4}", toks])
    return rng, queries, chunks


def plant(rng, chunks, index, text):
    toks = chunks[index][2]
    at = rng.randint(0, len(toks))
    toks[at:at] = [text]


def freeze(chunks):
    return [Chunk(cid, did, " ".join(toks) + ".") for cid, did, toks in chunks]


def one_word_changed(text: str) -> str:
    """Inflect the longest word: the kind of edit trigram mode must catch."""
    toks = text.split()
    j = max(range(len(toks)), key=lambda k: len(toks[k]))
    toks[j] = toks[j] + "s"
    return " ".join(toks)


@pytest.fixture(scope="module")
def planted():
    rng, queries, chunks = make_corpus()
    by_id = {q.query_id: q for q in queries}
    verbatim = {}  # query id -> chunk index
    variants = [str, str.upper, str.title, lambda t: t.replace(" ", "-", 2) + "?", lambda t: f"«{t}»"]
    for k, qid in enumerate(["q000", "q003", "q007", "q011", "q016", "q020", "q025", "q031", "q040"]):
        index = 97 + 211 * k
        plant(rng, chunks, index, variants[k % len(variants)](by_id[qid].text))
        verbatim[qid] = index
    near = {}
    long_ids = [q.query_id for q in queries if len(q.text.split()) >= 9 and q.query_id not in verbatim]
    for k, qid in enumerate(long_ids[:3]):
        index = 150 + 503 * k
        plant(rng, chunks, index, one_word_changed(by_id[qid].text))
        near[qid] = index
    # Paraphrases: every other word replaced, or the first and last words dropped;
    # below threshold. (Merely reordering the words is NOT one: the trigram sets
    # differ only at word boundaries, and such copies score about 0.9.)
    para = {}
    others = [q.query_id for q in queries if len(q.text.split()) >= 6 and q.query_id not in verbatim
              and q.query_id not in near]
    for k, qid in enumerate(others[:4]):
        toks = by_id[qid].text.split()
        if k % 2 == 0:
            text = " ".join(t if i % 2 else "".join(rng.choice(SYLLABLES) for _ in range(3))
                            for i, t in enumerate(toks))
        else:
            text = " ".join(toks[1:-1])
        index = 400 + 333 * k
        plant(rng, chunks, index, text)
        para[qid] = (index, text)
    short = [Query("s1", "webhooks limit"), Query("s2", "?? hi !!")]
    plant(rng, chunks, 5, "webhooks limit")
    return {
        "queries": queries + short,
        "chunks": freeze(chunks),
        "verbatim": verbatim,
        "near": near,
        "para": para,
        "by_id": by_id,
    }


def test_planted_verbatim_leaks_found_in_exact_mode(planted):
    result = find_leaks(planted["queries"], iter(planted["chunks"]), modes=("exact",))
    assert result.matched_ids() == set(planted["verbatim"])
    for m in result.matched:
        assert m.mode == "exact" and m.score == 1.0
        assert m.chunk_id == planted["chunks"][planted["verbatim"][m.query_id]].chunk_id
        assert m.chunks_matched == 1
    assert result.chunks_scanned == 2000
    assert result.queries_checked == 60
    assert result.skipped_short == ("s1", "s2")


def test_one_word_changed_copies_found_by_trigram_mode(planted):
    chunks = planted["chunks"]
    for qid, index in planted["near"].items():
        score = window_score(planted["by_id"][qid].text, chunks[index].text)
        assert 0.85 <= score < 1.0
    result = find_leaks(planted["queries"], iter(chunks))
    assert result.matched_ids() == set(planted["verbatim"]) | set(planted["near"])
    by_id = {m.query_id: m for m in result.matched}
    for qid in planted["verbatim"]:
        assert by_id[qid].mode == "exact"
    for qid, index in planted["near"].items():
        m = by_id[qid]
        assert m.mode == "trigram-jaccard"
        assert m.chunk_id == chunks[index].chunk_id
        assert m.score == pytest.approx(window_score(planted["by_id"][qid].text, chunks[index].text))
    # trigram mode alone finds the verbatim ones too (Jaccard 1.0)
    alone = find_leaks(planted["queries"], iter(chunks), modes=("trigram-jaccard",))
    assert alone.matched_ids() == result.matched_ids()
    assert {m.mode for m in alone.matched} == {"trigram-jaccard"}


def test_paraphrases_below_threshold_are_not_found(planted):
    chunks = planted["chunks"]
    for qid, (index, _text) in planted["para"].items():
        score = window_score(planted["by_id"][qid].text, chunks[index].text)
        assert score < 0.85, (qid, score)
    result = find_leaks(planted["queries"], iter(chunks))
    assert not set(planted["para"]) & result.matched_ids()
    # ... but a low enough threshold reaches them, at the computed score
    para_queries = [planted["by_id"][qid] for qid in planted["para"]]
    their_chunks = [chunks[index] for index, _text in planted["para"].values()]
    low = find_leaks(para_queries, their_chunks, modes=("trigram-jaccard",), threshold=0.3)
    assert low.matched_ids() == set(planted["para"])
    for m in low.matched:
        assert m.score == pytest.approx(max(window_score(m.text, c.text) for c in their_chunks))


def test_short_queries_are_skipped_not_matched(planted):
    result = find_leaks(planted["queries"], iter(planted["chunks"]))
    assert result.skipped_short == ("s1", "s2")
    assert "s1" not in result.matched_ids()  # "webhooks limit" is in chunk 5, but 2 tokens
    assert result.queries_checked == 60
    with_two = find_leaks(planted["queries"], iter(planted["chunks"]), min_tokens=2)
    assert "s1" in with_two.matched_ids() and with_two.skipped_short == ("s2",)


# --------------------------------------------------------------------------- rules


def test_reordered_words_still_score_high():
    query = "variable capacitance parametric amplifiers"
    assert window_score(query, "parametric amplifiers variable capacitance") >= 0.85


def test_exact_needs_token_boundaries():
    queries = [Query("q1", "rate limit exceeded")]
    inside = [Chunk("a#1", "a", "Accurate limit exceeded by far"), Chunk("a#2", "a", "the rate limited exceeded")]
    assert find_leaks(queries, inside, modes=("exact",)).count == 0
    # and the near-miss stays below the trigram threshold
    assert window_score("rate limit exceeded", "Accurate limit exceeded by far") < 0.85
    assert find_leaks(queries, inside).count == 0
    hit = [Chunk("b#1", "b", "When the RATE-LIMIT exceeded, retry")]
    assert find_leaks(queries, hit, modes=("exact",)).matched_ids() == {"q1"}
    two = [Query("q2", "rate limit")]
    assert find_leaks(two, [Chunk("c", "c", "accurate limits")], min_tokens=2).count == 0
    assert find_leaks(two, [Chunk("c", "c", "a rate limit!")], min_tokens=2, modes=("exact",)).count == 1


def test_chunks_matched_best_chunk_and_ties():
    q = Query("q1", "how many outgoing webhooks can a single project register")
    chunks = [
        Chunk("c0", "d0", "nothing to see here"),
        Chunk("c1", "d1", "how many outgoing webhook can a single project register today"),  # near (trigram)
        Chunk("c2", "d2", "FAQ: How many outgoing webhooks can a single project register? Ten."),  # exact, first
        Chunk("c3", "d3", "how many outgoing webhooks can a single project register; " * 2),  # exact twice
        Chunk("c4", "d4", "how many outgoing webhooks can a single project register"),  # exact
    ]
    both = find_leaks([q], chunks)
    (m,) = both.matched
    assert (m.chunk_id, m.doc_id, m.mode, m.score, m.chunks_matched) == ("c2", "d2", "exact", 1.0, 4)
    exact = find_leaks([q], chunks, modes=("exact",))
    assert exact.matched[0].chunks_matched == 3
    tri = find_leaks([q], chunks, modes=("trigram-jaccard",))
    (t,) = tri.matched
    assert (t.chunk_id, t.mode, t.score, t.chunks_matched) == ("c2", "trigram-jaccard", 1.0, 4)
    # best = highest score, not first: the near copy comes first, the verbatim one later
    later = find_leaks([q], [chunks[1], chunks[4]], modes=("trigram-jaccard",))
    assert later.matched[0].chunk_id == "c4"
    near_score = window_score(q.text, chunks[1].text)
    assert 0.85 <= near_score < 1.0
    only_near = find_leaks([q], [chunks[1]])
    assert only_near.matched[0].mode == "trigram-jaccard"
    assert only_near.matched[0].score == pytest.approx(near_score)


def test_matches_are_ordered_by_query_id_bytes_and_doc_id_falls_back_to_chunk_id():
    queries = [Query("b", "alpha beta gamma"), Query("B", "alpha beta gamma"), Query("a10", "delta epsilon zeta"),
               Query("a9", "delta epsilon zeta")]
    chunks = [Chunk("faq/x#q1", None, "alpha beta gamma"), Chunk("faq/y#q2", "", "delta epsilon zeta")]
    result = find_leaks(queries, chunks)
    assert [m.query_id for m in result.matched] == ["B", "a10", "a9", "b"]
    assert {m.doc_id for m in result.matched} == {"faq/x", "faq/y"}


def test_queryset_and_generator_input_and_progress():
    qs = QuerySet("golden.jsonl", (Query("q1", "alpha beta gamma delta"),))
    seen = []

    def gen():
        for i in range(25_000):
            yield Chunk(f"c{i}", "d", "alpha beta gamma delta" if i == 24_999 else f"filler text number {i}")

    result = find_leaks(qs, gen(), progress=seen.append)
    assert result.matched_ids() == {"q1"}
    assert result.chunks_scanned == 25_000
    assert seen == [10_000, 20_000, 25_000]


def test_memory_does_not_grow_with_the_corpus():
    queries = [Query(f"q{i}", f"alpha{i} beta{i} gamma{i} delta") for i in range(50)]

    def gen(n):
        for i in range(n):
            yield Chunk(f"c{i}", "d", f"some words {i} here and there " * 6)

    def peak(n):
        tracemalloc.start()
        find_leaks(queries, gen(n))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return peak

    small, large = peak(4_000), peak(24_000)
    assert large < small * 1.5 + (1 << 20), (small, large)


def test_option_errors():
    q = [Query("q1", "a b c")]
    with pytest.raises(InputError, match="unknown leakage mode 'fuzzy'"):
        find_leaks(q, [], modes=("fuzzy",))
    with pytest.raises(InputError, match="no leakage mode"):
        find_leaks(q, [], modes=())
    for bad in (0, -0.1, 1.5, "0.9", True):
        with pytest.raises(InputError, match="threshold"):
            find_leaks(q, [], threshold=bad)
    with pytest.raises(InputError, match="min_tokens"):
        find_leaks(q, [], min_tokens=0)
    with pytest.raises(InputError, match="appears twice"):
        find_leaks([Query("q1", "a b c"), Query("q1", "d e f")], [])
    assert find_leaks(q, [], modes="exact").modes == ("exact",)


def test_empty_inputs():
    r = find_leaks([], [Chunk("c", "d", "text")])
    assert (r.count, r.queries_checked, r.chunks_scanned, r.matched) == (0, 0, 1, ())
    assert r.recommendation() is None
    r = find_leaks([Query("q", "one two three")], [Chunk("c", "d", ""), Chunk("e", "d", None)])
    assert r.count == 0 and r.chunks_scanned == 2


def test_unicode_queries():
    queries = [Query("de", "Größe der Datei ändern"), Query("ja", "日本語 の 検索 テスト")]
    chunks = [Chunk("c1", "d", "Wie kann ich die GRÖSSE DER DATEI ÄNDERN?"),
              Chunk("c2", "d", "これは 日本語 の 検索 テスト です")]
    result = find_leaks(queries, chunks)
    assert {(m.query_id, m.chunk_id, m.mode) for m in result.matched} == {("de", "c1", "exact"), ("ja", "c2", "exact")}


# --------------------------------------------------------------------------- result API


def faq_result() -> LeakageResult:
    queries = [
        Query("q_0031", "how many webhooks per project"),
        Query("q_0087", "rate limit 429 retry after"),
        Query("q_0100", "unrelated question about billing"),
        Query("q_0001", "hi"),
    ]
    chunks = [
        Chunk("faq/common-questions#q14", "faq/common-questions", "Q: How many webhooks per project? A: 10."),
        Chunk("faq/common-questions#q31", "faq/common-questions", "Rate limit (429): retry-after header."),
        Chunk("guide/intro#1", "guide/intro", "Welcome."),
    ]
    return find_leaks(queries, chunks)


def test_render_text_shape():
    text = render_text(faq_result())
    assert text == (
        "2 of 3 queries matched a corpus chunk above threshold\n"
        '  q_0031 "how many webhooks per project"  -> faq/common-questions#q14 (exact)\n'
        '  q_0087 "rate limit 429 retry after"     -> faq/common-questions#q31 (exact)\n'
        "1 query too short to attribute (skipped)\n"
        "Recommendation: exclude faq/common-questions from the snapshot or re-judge.\n"
    )


def test_render_text_trigram_and_counts():
    q = Query("q1", 'how many outgoing "webhooks"\ncan a single project register')
    chunks = [
        Chunk("c1", "d", "how many outgoing webhook can a single project register"),
        Chunk("c2", "d", "How many outgoing webhook can a single project register?"),
    ]
    text = render_text(find_leaks([q], chunks))
    score = window_score(q.text, chunks[0].text)
    assert f"-> c1, c2 (trigram-jaccard {score:.2f}, 2 chunks)" in text
    assert "\"how many outgoing 'webhooks' can a single project register\"" in text  # one line
    assert render_text(find_leaks([q], [])) == "0 of 1 query matched a corpus chunk above threshold\n"


def test_to_dict_shape():
    d = faq_result().to_dict()
    assert list(d) == ["queries_checked", "count", "matched", "skipped_short", "modes", "threshold", "chunks_scanned"]
    assert d["queries_checked"] == 3 and d["count"] == 2 and d["chunks_scanned"] == 3
    assert d["skipped_short"] == ["q_0001"]
    assert d["modes"] == ["exact", "trigram-jaccard"] and d["threshold"] == 0.85
    assert d["matched"][0] == {
        "query_id": "q_0031",
        "text": "how many webhooks per project",
        "chunk_id": "faq/common-questions#q14",
        "doc_id": "faq/common-questions",
        "mode": "exact",
        "score": 1.0,
        "chunks_matched": 1,
        "chunks": [{"chunk_id": "faq/common-questions#q14", "doc_id": "faq/common-questions"}],
    }
    assert json.loads(json.dumps(d)) == d


def _result(docs: list[str]) -> LeakageResult:
    matched = tuple(
        LeakMatch(f"q{i:02d}", "t", f"{doc}#{i}", doc if i % 2 else "", "exact", 1.0, 1) for i, doc in enumerate(docs)
    )
    return LeakageResult(len(docs), len(docs), matched, (), ("exact",), 0.85, 100)


def test_recommendation_names_the_documents_behind_most_matches():
    assert _result(["faq/a"] * 3).recommendation() == "exclude faq/a from the snapshot or re-judge."
    two = _result(["faq/a", "faq/b", "faq/a"])
    assert two.recommendation() == "exclude faq/a (2 matches) and faq/b (1 match) from the snapshot or re-judge."
    many = _result(["d"] * 4 + ["c"] * 2 + ["b"] * 2 + ["a", "e", "f"])
    assert many.recommendation() == (
        "exclude d (4 matches), b (2 matches), c (2 matches), a (1 match), e (1 match) and f (1 match) from the "
        "snapshot or re-judge."
    )
    # Every source is named up to SOURCES_NAMED (100); beyond, the rest are counted.
    named = leakage_module.SOURCES_NAMED
    beyond = _result(["d"] * 2 + [f"s{i:03d}" for i in range(named + 1)])
    assert beyond.recommendation().endswith(" 2 more documents hold 2 matches.")
    assert beyond.recommendation().count("match") == named + 1
    assert "s040 (1 match) from" in _result([f"s{i:03d}" for i in range(41)]).recommendation()  # 41: all named
    assert many.sources()[:2] == [("d", 4), ("b", 2)]
    assert _result([]).recommendation() is None
    assert faq_result().matched_ids() == {"q_0031", "q_0087"}


def test_find_text_in_lines():
    queries = [Query("q1", "how many webhooks per project"), Query("q2", "rate limit 429 retry after")]
    lines = [
        ("prompts/system.txt:3", "Example: How many webhooks per project?"),
        (("prompts/fewshot.md", 12), "user: rate limit 429, retry after what?"),
        ("prompts/system.txt:4", "nothing"),
    ]
    result = find_text_in_lines(queries, lines)
    got = {(m.query_id, m.chunk_id, m.doc_id) for m in result.matched}
    assert got == {("q1", "prompts/system.txt:3", "prompts/system.txt"),
                   ("q2", "prompts/fewshot.md:12", "prompts/fewshot.md")}
    assert result.modes == ("exact",)
