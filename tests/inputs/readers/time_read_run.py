"""Local timing check for the run reader (not a unit test: timings vary by machine).

    python tests/inputs/readers/time_read_run.py [--queries 1000] [--docs 1000] [--gzip]

Writes a TREC run of queries x docs lines in the style of
benchmarks/bench_compare.py, then reads it in a fresh subprocess (so the peak
memory is the reader's own) a few times and prints wall time, CPU time and
peak RSS.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

MAKE = """
import gzip, sys
import numpy as np
queries, docs, path = {queries}, {docs}, {path!r}
rng = np.random.default_rng(1)
lines = []
for q in range(queries):
    ids = rng.choice(docs * 5, size=docs, replace=False)
    scores = np.round(rng.normal(size=docs), 4)
    order = np.argsort(-scores)
    lines.extend(f"{{1000 + q}} Q0 D{{ids[j]}} {{r}} {{scores[j]}} tag" for r, j in enumerate(order, start=1))
data = ("\\n".join(lines) + "\\n").encode()
open(path, "wb").write(gzip.compress(data) if path.endswith(".gz") else data)
print(f"{{path}}: {{len(lines):,}} lines, {{len(data) / 2**20:.1f}} MiB uncompressed")
"""

CHILD = """
import resource, sys, time
sys.path.insert(0, {repo!r})
from gate.inputs.readers.runs import read_run
for i in range(3):
    c, t = time.process_time(), time.perf_counter()
    run = read_run({path!r})
    print(f"read {{len(run):,}} rows / {{len(run.query_ids)}} queries: "
          f"wall {{time.perf_counter() - t:.3f}} s, cpu {{time.process_time() - c:.3f}} s")
    if i == 0:
        print(f"peak RSS after the first read: {{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}} MiB "
              f"(result arrays {{(run.doc_ids.nbytes + run.scores.nbytes) / 2**20:.0f}} MiB)")
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--gzip", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / ("run.txt.gz" if args.gzip else "run.txt"))
        # Both steps in fresh children: a child's peak RSS starts from its parent's.
        make = MAKE.format(queries=args.queries, docs=args.docs, path=path)
        subprocess.run([sys.executable, "-c", make], check=True)
        subprocess.run([sys.executable, "-c", CHILD.format(repo=str(REPO), path=path)], check=True)


if __name__ == "__main__":
    main()
