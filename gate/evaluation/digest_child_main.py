"""The program of :mod:`gate.evaluation.digest_child`'s child process: it digests one run.

The request comes on stdin as JSON (the run's path, the qrels and queries specs, the query list
and the settings :func:`gate.evaluation.digest_child.start` wrote); the :class:`RunDigest` goes
back pickled on stdout. Bad input is one JSON line on stderr and exit 2, which the parent raises
as the same :class:`InputError`. It is a module of its own because it runs
:func:`gate.evaluation.streaming.digest_run`, and streaming starts the child through
:mod:`gate.evaluation.digest_child`.
"""

from __future__ import annotations

import json
import pickle
import sys
from dataclasses import replace

from gate.common.errors import InputError
from gate.evaluation.streaming import digest_run
from gate.inputs.named import load_qrels_spec, load_queries_spec
from gate.inputs.universe import query_universe

__all__ = ["main"]


def main() -> int:
    """The child: the request on stdin, the digest pickled on stdout; bad input one JSON line, exit 2."""
    request = json.loads(sys.stdin.buffer.read())
    try:
        qrels = load_qrels_spec(request["qrels"], request["queries"])
        query_ids = request["query_ids"]
        if query_ids is None:
            queries = load_queries_spec(request["queries"]) if request["queries"] is not None else None
            query_ids = query_universe(qrels, queries).query_ids
        digest = digest_run(request["path"], qrels, request["measures"], query_ids, rel=request["rel"],
                            k_rank=request["k_rank"], k_recall=request["k_recall"], sha256=request["sha256"])
    except InputError as error:
        print(json.dumps({"file": error.path, "line": error.line, "message": error.message}), file=sys.stderr)
        return 2
    # A run read whole (not grouped) is not sent back: the parent re-reads the file if it needs it.
    digest = replace(digest, loaded=None)
    sys.stdout.buffer.write(pickle.dumps(digest, protocol=pickle.HIGHEST_PROTOCOL))
    sys.stdout.buffer.flush()
    return 0
