"""The reference retriever as a command, for ``runner.type: command`` or by hand::

    python -m gate.runs.reference_main --config C --queries Q --corpus CORPUS --output RUN --seed S

``--config`` is the retrieval config (YAML or JSON), ``--queries`` the golden
queries (TSV, JSONL, BEIR folder), ``--corpus`` what the gate passes as
``{corpus}`` (the snapshot is chosen from ``ingestion.parser`` exactly as the
in-process runner does, see :mod:`gate.runs.reference`), ``--output`` the
TREC run to write and ``--seed`` the repeat seed (HNSW insertion order).
``--options`` takes the runner options as JSON (``{"ef_construction": 80}``).

As a gate config::

    runner:
      type: command
      command: python -m gate.runs.reference_main --config {config} --queries {queries}
               --corpus {corpus} --output {run} --seed {seed} --timings {timings}

Exit codes: 0 written, 2 bad input (one line on stderr), 1 anything else.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence

from gate.common.errors import InputError
from gate.inputs.readers.queries import load_queries
from gate.inputs.retrieval_config import load_retrieval_config
from gate.runs.reference import ReferenceRunner, retrieve, settings_from_config, snapshot_path, write_trec
from gate.runs.reference_latency import QueryWork, write_timings


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m gate.runs.reference_main",
                                description="BM25 + dense (HNSW) retrieval fused by reciprocal-rank fusion; "
                                            "writes a TREC run.")
    p.add_argument("--config", required=True, help="retrieval config (YAML or JSON)")
    p.add_argument("--queries", required=True, help="golden queries (TSV, JSONL or BEIR folder)")
    p.add_argument("--corpus", required=True, help="the corpus (file, or a folder of corpus-<parser>.jsonl snapshots)")
    p.add_argument("--output", required=True, help="TREC run to write")
    p.add_argument("--timings", default=None,
                   help="write the run's timings sidecar here (JSONL: modelled latency per query, see docs/runners.md)")
    p.add_argument("--seed", type=int, default=0, help="repeat seed: the HNSW insertion order (default 0)")
    p.add_argument("--options", default="{}", help="runner options as a JSON object (default {})")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    say = (lambda message: None) if args.quiet else (
        lambda message: print(f"[reference] {message}", file=sys.stderr, flush=True))
    try:
        try:
            options = json.loads(args.options)
        except json.JSONDecodeError as error:
            raise InputError("--options", None, f"not JSON: {error.msg}") from None
        if not isinstance(options, dict):
            raise InputError("--options", None, "must be a JSON object")
        runner = ReferenceRunner(options)  # checks the options
        started = time.monotonic()
        config = load_retrieval_config(args.config)
        settings = settings_from_config(config.data, config.source)
        corpus = snapshot_path(args.corpus, settings.parser, runner.options["snapshot"])
        queries = [(q.query_id, q.text) for q in load_queries(args.queries).queries]
        work: dict[str, QueryWork] = {}
        results = retrieve(settings, queries, corpus, args.seed, runner.options, say, work=work)
        rows = write_trec(results, args.output)
        if args.timings:
            write_timings(args.timings, work, settings.price_per_million_tokens,
                          (time.monotonic() - started) * 1000.0)
        say(f"wrote {rows} rows for {len(results)} queries to {args.output} in {time.monotonic() - started:.2f}s")
        return 0
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
