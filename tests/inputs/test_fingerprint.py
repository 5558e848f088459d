"""Fingerprints are canonical: order and spacing do not change them; one label does."""

from gate.inputs.fingerprint import qrels_fingerprint, queries_fingerprint
from gate.inputs.readers.qrels import read_qrels
from gate.inputs.readers.queries import read_queries
from gate.inputs.retrieval_config import config_diff, parse_retrieval_config


def test_qrels_fingerprint_ignores_order_and_spacing_but_not_labels(tmp_path):
    a = tmp_path / "a.txt"
    b = tmp_path / "b.txt"
    c = tmp_path / "c.txt"
    a.write_text("1 0 d1 1\n1 0 d2 0\n2 0 d3 2\n")
    b.write_text("2  0 d3   2\n\n1 0 d2 0\n1 0 d1 1\n")
    c.write_text("1 0 d1 1\n1 0 d2 1\n2 0 d3 2\n")
    fa, fb, fc = (qrels_fingerprint(read_qrels(p)) for p in (a, b, c))
    assert fa == fb and fa.count == 3
    assert fa.sha256 != fc.sha256


def test_queries_fingerprint_ignores_order_and_whitespace(tmp_path):
    a = tmp_path / "a.tsv"
    b = tmp_path / "b.tsv"
    a.write_text("1\thow many  webhooks\n2\trate limit\n")
    b.write_text("2\trate limit\n1\thow many webhooks \n")
    assert queries_fingerprint(read_queries(a)) == queries_fingerprint(read_queries(b))


def test_config_diff_lists_dotted_paths_and_canonical_sha_ignores_key_order():
    old = parse_retrieval_config("embedding:\n  model: a\n  dim: 384\nfusion: {k: 60}\n", "old")
    same = parse_retrieval_config("fusion: {k: 60}\nembedding:\n  dim: 384\n  model: a\n", "same")
    new = parse_retrieval_config("embedding:\n  model: b\n  dim: 384\ningestion: {parser: v2}\nfusion: {k: 60}\n",
                                 "new")
    assert old.sha256 == same.sha256
    assert [(c.path, c.old, c.new) for c in config_diff(old, new)] == [
        ("embedding.model", "a", "b"),
        ("ingestion.parser", "<absent>", "v2"),
    ]


def test_the_qrels_fingerprint_sorts_lines_as_one_sort_of_them_all_would():
    import hashlib
    import random

    from gate.inputs.fingerprint import qrels_fingerprint
    from gate.inputs.readers.records import Qrels

    rng = random.Random(5)
    printable = ["a", "B", "A", "0", "9", " ", "é", "~", "z", "_", "#"]  # the fast path
    alphabet = printable + ["\u00a0", "\u2028", "\t", "\x01"]  # mostly the fallback
    for trial in range(400):
        chars = printable if trial % 2 else alphabet
        judgments: dict = {}
        for _ in range(rng.randrange(0, 6)):
            qid = "".join(rng.choice(chars) for _ in range(rng.randrange(0, 4)))
            docs = judgments.setdefault(qid, {})
            for _ in range(rng.randrange(0, 6)):
                doc = "".join(rng.choice(chars) for _ in range(rng.randrange(0, 4)))
                docs[doc] = rng.choice([-1, 0, 1, 2, 10])
        lines = sorted(f"{q}\t{d}\t{r}" for q, docs in judgments.items() for d, r in docs.items())
        expected = hashlib.sha256(("\n".join(lines) + "\n").encode() if lines else b"").hexdigest()
        got = qrels_fingerprint(Qrels("x", judgments))
        assert (got.sha256, got.count) == (expected, len(lines)), judgments
