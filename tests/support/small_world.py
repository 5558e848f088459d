"""A small real retrieval world: 20 golden queries over a 160-chunk corpus, a gate config whose
command runner is tests/support/runners/overlap_runner.py, and an FAQ page that may leak 3 queries."""

from __future__ import annotations

import json
import sys
from pathlib import Path

RUNNER = Path(__file__).resolve().parent / "runners" / "overlap_runner.py"
TOPICS = ["webhooks", "rate limits", "pagination", "errors", "billing", "search", "auth", "sdk"]
WORDS = ["giraffe", "lantern", "meadow", "harbour", "quartz", "saffron", "tundra", "violin", "walnut", "zephyr",
         "almond", "basalt", "cobalt", "dolphin", "ember", "falcon", "granite", "hazel", "indigo", "juniper"]


def small_world(tmp: Path, *, leak_in_new: bool, extra_config: str = "", boost: float = 1.0) -> Path:
    """20 golden queries over a 160-chunk corpus; corpus-v2 may carry an FAQ page quoting 3 of them."""
    queries, qrels, docs = [], [], []
    for i in range(20):
        topic = TOPICS[i % len(TOPICS)]
        qid = f"q_{i:04d}"
        text = f"how do i configure {topic} with {WORDS[i]} settings"
        queries.append({"query_id": qid, "text": text, "stratum": "how_to" if i % 2 else "navigational"})
        for j in range(8):
            doc = f"guide/{topic.replace(' ', '-')}-{i}#c{j}"
            docs.append({"id": doc, "title": f"{topic} {WORDS[i]}",
                         "text": f"{topic} {WORDS[i]} part {j} configure the dashboard settings before deploying"})
            qrels.append(f"{qid} 0 {doc} {2 if j == 0 else (1 if j < 3 else 0)}")
    (tmp / "golden.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (tmp / "qrels.txt").write_text("\n".join(qrels) + "\n")
    v1 = "".join(json.dumps(d) + "\n" for d in docs)
    (tmp / "corpus-v1.jsonl").write_text(v1)
    faq = [{"id": f"faq/common-questions#q{i}", "text": f"Questions people ask: {queries[i]['text']}?"}
           for i in (1, 4, 7)]
    (tmp / "corpus-v2.jsonl").write_text(v1 + ("".join(json.dumps(d) + "\n" for d in faq) if leak_in_new else ""))
    (tmp / "retrieval.yml").write_text(f"ingestion: {{parser: v1}}\nboost: {boost}\n")
    (tmp / "gate.yml").write_text(
        "suite: small\ngolden: {queries: golden.jsonl, qrels: qrels.txt, rel: 1}\n"
        "corpus: corpus-{ingestion.parser}.jsonl\nretrieval: {config: retrieval.yml}\n"
        f"runner:\n  command: \"{sys.executable} {RUNNER} --config {{config}} --queries {{queries}} "
        "--corpus {corpus} --output {run}\"\n"
        "statistics: {samples: 500}\n" + extra_config)
    return tmp / "gate.yml"
