"""The reference retriever's latency and cost: modelled from the work each query does.

A latency the reference retriever measured would depend on the machine and its load: the demo's
comment, its tests and a CI runner shared with other jobs would all show other numbers for the
same change. So the reference retriever counts the work of each query and converts the counts
with fixed unit costs (:data:`UNIT_COSTS_MS`, documented in docs/runners.md) into ``latency_ms``:

* characters of the query text tokenized;
* embedding: the query's features (words, or character n-grams) times the embedding dimension
  (each feature's row of the projection is added);
* ANN search: the vector distance evaluations faiss's HNSW search made (``hnsw_stats.ndis``,
  exact for the index and ``efSearch``; every chunk for an exact search) times the dimension;
* BM25: the postings of the query's terms (their document frequencies);
* fusion: the candidates the two legs brought.

The counts are the same on every machine, so the latencies are; a larger embedding dimension
or a finer feature model (``lsa-char-256``) is slower by the model as it would be in a service.
A team's own runner reports measured latencies. The real wall time of the run goes into the
sidecar's ``run_wall_time_ms``: reported, never judged.

Cost exists only when the retrieval config sets a price, ``embedding.price_per_million_tokens``:
the query's tokens embedded times the price per token.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gate.common.atomic import write_text_atomic

__all__ = ["QueryWork", "UNIT_COSTS_MS", "modelled_latency_ms", "query_cost", "write_timings"]

#: Milliseconds per unit of work (the model's constants: changing one changes every demo number).
UNIT_COSTS_MS: Mapping[str, float] = {
    "query": 1.0,  # fixed: the request, tokenizer and index lookups of one query
    "character": 0.002,  # per character of the query text tokenized
    "feature_dimension": 0.0002,  # per query feature x embedding dimension (projection)
    "distance_dimension": 0.00002,  # per ANN distance evaluation x embedding dimension
    "posting": 0.0005,  # per BM25 posting of the query's terms
    "candidate": 0.002,  # per candidate fused
}


@dataclass(frozen=True)
class QueryWork:
    """What one query cost the reference retriever, counted."""

    characters: int
    tokens: int
    features: int
    dimension: int
    distances: int
    postings: int
    candidates: int


def modelled_latency_ms(work: QueryWork) -> float:
    """The query's latency by the model (module docstring), rounded to a microsecond."""
    unit = UNIT_COSTS_MS
    total = (unit["query"] + unit["character"] * work.characters
             + unit["feature_dimension"] * work.features * work.dimension
             + unit["distance_dimension"] * work.distances * work.dimension
             + unit["posting"] * work.postings + unit["candidate"] * work.candidates)
    return round(total, 3)


def query_cost(work: QueryWork, price_per_million_tokens: float | None) -> float | None:
    """The query's embedding cost at the config's price; None when the config sets none."""
    if price_per_million_tokens is None:
        return None
    return work.tokens * price_per_million_tokens / 1_000_000


def write_timings(path: str | Path, work: Mapping[str, QueryWork], price_per_million_tokens: float | None,
                  wall_time_ms: float | None) -> None:
    """The run's timings sidecar (gate.inputs.readers.timings), queries in ``work``'s order."""
    lines = []
    for qid, counted in work.items():
        line: dict[str, object] = {"query_id": qid, "latency_ms": modelled_latency_ms(counted)}
        cost = query_cost(counted, price_per_million_tokens)
        if cost is not None:
            line["cost"] = cost
        lines.append(json.dumps(line, ensure_ascii=True) + "\n")
    if wall_time_ms is not None and math.isfinite(wall_time_ms):
        lines.append(json.dumps({"run_wall_time_ms": round(max(wall_time_ms, 0.0), 3)}) + "\n")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(Path(path), "".join(lines))
