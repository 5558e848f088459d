"""A stack whose every build ranks a little differently, for the repeats tests.

    python noisy_runner.py --config C --queries Q --output RUN [--seed S]

Each golden query ``q`` has one relevant document ``q/rel`` among ten. Where it lands depends
on the build: a draw from ``random.Random(f"{seed}|{config text}|{q}")`` (sha512 seeding, so the
same on every machine) pushes it down one rank per failed coin flip of probability
``noise`` (config key, default 0.5) up to rank 4, as an index rebuilt with another seed
would. ``worse: S`` (default 0) moves it one rank further down on the share ``S`` of queries
chosen by the query id alone: a real, per-query regression. ``fail_seed: S`` exits 3 when run
with seed ``S`` (a rerun that breaks). Any other config key changes the build (its draws), not
the quality: a no-op PR.
"""

from __future__ import annotations

import argparse
import json
import os
import random


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", required=True)
    parser.add_argument("--queries", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--corpus", default=None)
    parser.add_argument("--seed", type=int, default=int(os.environ.get("RETRIEVAL_GATE_SEED") or 0))
    args = parser.parse_args()
    with open(args.config, encoding="utf-8") as handle:
        text = handle.read()
    config = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip():
            config[key.strip()] = value.strip()
    if config.get("fail_seed") is not None and int(config["fail_seed"]) == args.seed:
        raise SystemExit(3)
    noise = float(config.get("noise", 0.5))
    worse = float(config.get("worse", 0.0))
    with open(args.queries, encoding="utf-8") as handle:
        if args.queries.endswith(".jsonl"):
            queries = [json.loads(line)["query_id"] for line in handle if line.strip()]
        else:
            queries = [line.split("\t", 1)[0] for line in handle if line.strip()]
    with open(args.output, "w", encoding="utf-8") as out:
        for qid in queries:
            draw = random.Random(f"{args.seed}|{text}|{qid}")
            rank = 1
            while rank < 4 and draw.random() < noise:
                rank += 1
            if random.Random(f"worse|{qid}").random() < worse:
                rank += 1
            docs = [f"{qid}/d{i}" for i in range(1, 10)]
            docs.insert(rank - 1, f"{qid}/rel")
            for position, doc in enumerate(docs, start=1):
                out.write(f"{qid} Q0 {doc} {position} {100 - position} noisy\n")


if __name__ == "__main__":
    main()
