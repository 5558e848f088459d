"""Small generated example files for ``compare``: TREC qrels, queries, two runs.

A fictional docs search: each query has a few graded relevant pages; the
baseline ranks them with seeded noise, the candidate with slightly less noise
on most queries and more on some, so the comparison has wins and losses.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gate.common.atomic import write_text_atomic

STRATA = ("navigational", "error_string", "entity_attribute", "migration", "how_to", "tail")


@dataclass(frozen=True)
class ExampleFiles:
    queries: Path
    qrels: Path
    baseline: Path
    candidate: Path


def write_example_files(out: str | Path, seed: int = 7, queries: int = 120, docs: int = 400) -> ExampleFiles:
    rng = np.random.default_rng(seed)
    out = Path(out)
    query_lines: list[str] = []
    qrels_lines: list[str] = []
    base_lines: list[str] = []
    cand_lines: list[str] = []
    for i in range(queries):
        qid = f"q_{i + 1:04d}"
        stratum = STRATA[i % len(STRATA)]
        query_lines.append(f'{{"query_id": "{qid}", "text": "example question {i + 1}", "stratum": "{stratum}"}}')
        relevant = rng.choice(docs, size=int(rng.integers(1, 5)), replace=False)
        grades = {int(d): int(rng.integers(1, 4)) for d in relevant}
        judged_nonrel = rng.choice(docs, size=8, replace=False)
        for d in judged_nonrel:
            if int(d) not in grades:
                qrels_lines.append(f"{qid} 0 doc{int(d):05d} 0")
        for d, g in grades.items():
            qrels_lines.append(f"{qid} 0 doc{d:05d} {g}")
        truth = np.zeros(docs)
        for d, g in grades.items():
            truth[d] = g
        # The candidate is sharper on most strata and blunter on navigational queries.
        sharper = 0.9 if stratum == "navigational" else 0.6
        for lines, noise, tag in ((base_lines, 0.8, "baseline"), (cand_lines, sharper, "candidate")):
            scores = truth + rng.normal(0.0, noise * 2.0, size=docs)
            top = np.argsort(-scores)[:100]
            for rank, d in enumerate(top, start=1):
                lines.append(f"{qid} Q0 doc{int(d):05d} {rank} {scores[d]:.6f} {tag}")
    files = ExampleFiles(out / "queries.jsonl", out / "qrels.txt", out / "baseline.run", out / "candidate.run")
    write_text_atomic(files.queries, "\n".join(query_lines) + "\n")
    write_text_atomic(files.qrels, "\n".join(qrels_lines) + "\n")
    write_text_atomic(files.baseline, "\n".join(base_lines) + "\n")
    write_text_atomic(files.candidate, "\n".join(cand_lines) + "\n")
    return files
