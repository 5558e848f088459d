"""Benchmark: how far the trigram-Jaccard threshold reaches, by query length.

The prompts check and ``leakcheck`` call a copy "near-verbatim" when its character-trigram
Jaccard score against the golden query is at least the threshold (0.85). How much change that
forgives depends on the query's length: this measures it on real queries, the topics of TREC DL
2019 and 2020 (``../shared/realdata/runs/trec-dl-20*-passage/topics``: 43 + 200 web search
questions) and the 300 SciFact test claims (``../shared/realdata/scifact``, longer sentences), with the gate's
own scorer (``gate.checks.normalize.window_score``).

For each query, seeded (``SEED``):

  changed word   one word, chosen at random, replaced by a word of another topic (also at
                 random, different from it): a real "one changed word" copy;
  inflected word one word of 3+ letters, at random, with an "s" appended;
  cheapest       ``gate.checks.prompts.one_changed_word_score``: the score of the cheapest word
                 replaced by a new word of the same length sharing no trigram with the query; a
                 query under the threshold here is listed by the gate as short
                 (``prompts.short_queries``). (A replacement that shares trigrams with the query,
                 "today" -> "there" beside "the", can score higher.)

Printed: per token-length bucket, the queries, the share whose changed-word copy and whose
inflected copy score >= the threshold, the median changed-word score, and the share whose
cheapest changed word reaches the threshold. docs/validity.md quotes the table (a test checks it is this output).

    python -m benchmarks.trigram_reach [--threshold 0.85]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
from pathlib import Path

from gate.checks.normalize import normalize, window_score
from gate.checks.prompts import one_changed_word_score

SEED = 19
SHARED = Path(os.environ.get("RETRIEVAL_GATE_SHARED", Path(__file__).resolve().parents[1].parent / "shared"))
RUNS = SHARED / "realdata" / "runs"
TOPICS = (RUNS / "trec-dl-2019-passage" / "topics" / "topics.dl19-passage.txt",
          RUNS / "trec-dl-2020-passage" / "topics" / "topics.dl20.txt",
          RUNS.parent / "scifact" / "beir_test_qrels_topics" / "topics.beir-v1.0.0-scifact.test.tsv.gz")
BUCKETS = ((2, 3), (4, 4), (5, 5), (6, 6), (7, 7), (8, 8), (9, 10), (11, 13), (14, 17), (18, 99))


def queries() -> list[str]:
    out = []
    import gzip

    for path in TOPICS:
        data = path.read_bytes()
        data = gzip.decompress(data) if path.suffix == ".gz" else data
        for line in data.decode("utf-8").splitlines():
            text = normalize(line.split("\t", 1)[1])
            if len(text.split()) >= 2:
                out.append(text)
    return out


def reach_table(threshold: float = 0.85) -> str:
    texts = queries()
    rng = random.Random(SEED)
    vocabulary = sorted({w for t in texts for w in t.split()})
    rows = []
    for low, high in BUCKETS:
        bucket = [t for t in texts if low <= len(t.split()) <= high]
        changed, inflected, bound = [], [], []
        for text in bucket:
            words = text.split()
            i = rng.randrange(len(words))
            other = rng.choice([w for w in vocabulary if w != words[i]])
            changed.append(window_score(text, " ".join(words[:i] + [other] + words[i + 1:])))
            long_words = [j for j, w in enumerate(words) if len(w) >= 3] or [i]
            j = rng.choice(long_words)
            inflected.append(window_score(text, " ".join(words[:j] + [words[j] + "s"] + words[j + 1:])))
            bound.append(one_changed_word_score(text))
        n = len(bucket)
        share = lambda values, n=n: f"{sum(v >= threshold for v in values) / n:.0%}" if n else "-"  # noqa: E731
        label = f"{low}" if low == high else f"{low}+" if high == 99 else f"{low}-{high}"
        rows.append(f"| {label} | {n} | {share(changed)} | {statistics.median(changed):.2f} | {share(inflected)} "
                    f"| {share(bound)} |")
    header = ("| query tokens | queries | one changed word caught | its median score | one inflected word "
              "caught | cheapest changed word caught |\n|---|---:|---:|---:|---:|---:|")
    return header + "\n" + "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threshold", type=float, default=0.85, help="the trigram-Jaccard threshold (default: 0.85)")
    args = parser.parse_args(argv)
    missing = [str(p) for p in TOPICS if not p.exists()]
    if missing:
        print(f"trigram_reach: needs the TREC DL topics ({', '.join(missing)})", file=sys.stderr)
        return 2
    print(f"TREC DL 2019 + 2020 topics and SciFact test claims ({len(queries())} queries), threshold "
          f"{args.threshold}, seed {SEED}")
    print(reach_table(args.threshold))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
