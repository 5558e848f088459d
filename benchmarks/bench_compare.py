"""Benchmark: `retrieval-gate compare` against ir_measures on the same two runs.

Generates two TREC runs of 1,000 queries x 1,000 documents and a qrels file,
then runs, each in a fresh subprocess so peak memory is its own:
  - retrieval-gate compare (read both runs, evaluate, paired bootstrap B=10000)
  - ir_measures evaluating the same measures on the same two runs
and prints wall time and peak RSS of each with the ratios, after checking that
every per-query value agrees (to 1e-9).

    python benchmarks/bench_compare.py [--queries 1000] [--docs 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MEASURES = ["nDCG@10", "AP", "RR@10", "R@100", "P@10"]


def generate(folder: Path, queries: int, docs: int, seed: int = 1) -> tuple[Path, Path, Path]:
    import numpy as np

    rng = np.random.default_rng(seed)
    qrels_lines = []
    runs = {name: [] for name in ("a", "b")}
    for q in range(queries):
        qid = str(1000 + q)
        pool = rng.choice(docs * 5, size=60, replace=False)
        labels = rng.choice([0, 0, 0, 1, 2, 3], size=60)
        qrels_lines.extend(f"{qid} 0 D{d} {l}" for d, l in zip(pool, labels))
        for name in runs:
            ids = rng.choice(docs * 5, size=docs, replace=False)
            scores = np.round(rng.normal(size=docs), 4)  # rounding makes real ties
            order = np.argsort(-scores)
            runs[name].extend(
                f"{qid} Q0 D{ids[j]} {r} {scores[j]} {name}" for r, j in enumerate(order, start=1)
            )
    paths = (folder / "qrels.txt", folder / "a.run", folder / "b.run")
    paths[0].write_text("\n".join(qrels_lines) + "\n")
    paths[1].write_text("\n".join(runs["a"]) + "\n")
    paths[2].write_text("\n".join(runs["b"]) + "\n")
    return paths


GATE_SCRIPT = """
import json, sys
sys.path.insert(0, {repo!r})
from gate.cli import main
code = main(["compare", "--baseline", {a!r}, "--candidate", {b!r}, "--qrels", {qrels!r},
             "--metric", "nDCG@10", "--also", "AP,RR@10,R@100,P@10", "--out", {out!r}, "--format", "json"])
if code != 0:
    raise SystemExit(code)
"""

IRM_SCRIPT = """
import json, sys, ir_measures
from ir_measures import nDCG, AP, RR, R, P
measures = [nDCG@10, AP, RR@10, R@100, P@10]
qrels = list(ir_measures.read_trec_qrels({qrels!r}))
out = {{}}
for name, path in (("a", {a!r}), ("b", {b!r})):
    run = ir_measures.read_trec_run(path)
    values = {{}}
    for m in ir_measures.iter_calc(measures, qrels, run):
        values.setdefault(str(m.measure), {{}})[m.query_id] = m.value
    out[name] = values
json.dump(out, open({out!r}, "w"))
"""


def timed(script: str) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of a fresh Python running ``script``."""
    wrapper = (
        "import resource, time, runpy, sys\n"
        "t = time.perf_counter()\n"
        f"exec(compile({script!r}, 'bench', 'exec'), {{'__name__': '__main__'}})\n"
    )
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", wrapper + "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)"],
        capture_output=True, text=True,
    )
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0,):
        raise SystemExit(f"benchmark step failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    peak_kib = int(proc.stderr.strip().splitlines()[-1])
    return elapsed, peak_kib / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--generate-into", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.generate_into:
        generate(Path(args.generate_into), args.queries, args.docs)
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        # Generated in a child process: Linux keeps a process's peak RSS across
        # fork+exec, so a parent holding the generated data would inflate both
        # measured peaks.
        subprocess.run([sys.executable, __file__, "--queries", str(args.queries), "--docs", str(args.docs),
                        "--generate-into", tmp], check=True)
        qrels, a, b = folder / "qrels.txt", folder / "a.run", folder / "b.run"
        gate_out = folder / "gate"
        irm_out = folder / "irm.json"
        gate_time, gate_mem = timed(GATE_SCRIPT.format(repo=str(REPO), a=str(a), b=str(b), qrels=str(qrels), out=str(gate_out)))
        irm_time, irm_mem = timed(IRM_SCRIPT.format(a=str(a), b=str(b), qrels=str(qrels), out=str(irm_out)))

        # Same numbers, or the timing means nothing.
        sys.path.insert(0, str(REPO))
        from gate.evaluation.evaluate import evaluate
        from gate.inputs.universe import query_universe
        from gate.inputs.readers.qrels import read_qrels
        from gate.inputs.readers.runs import read_run

        q = read_qrels(qrels)
        universe = query_universe(q)
        reference = json.loads(irm_out.read_text())
        worst = 0.0
        for name, path in (("a", a), ("b", b)):
            ours = evaluate(read_run(path), q, MEASURES, universe.query_ids)
            for measure in MEASURES:
                theirs = reference[name][measure]
                for i, qid in enumerate(universe.query_ids):
                    worst = max(worst, abs(ours.values[measure][i] - theirs.get(qid, 0.0)))
        rows = 2 * args.queries * args.docs
        print(f"two runs of {args.queries} queries x {args.docs} docs ({rows:,} lines), measures {', '.join(MEASURES)}")
        print(f"max |per-query difference| vs ir_measures: {worst:.2e}")
        print(f"retrieval-gate compare (incl. bootstrap B=10000): {gate_time:6.2f} s  peak {gate_mem:7.1f} MiB")
        print(f"ir_measures iter_calc (evaluation only):          {irm_time:6.2f} s  peak {irm_mem:7.1f} MiB")
        print(f"speed-up {irm_time / gate_time:.1f}x   memory ratio {gate_mem / irm_mem:.2f} (gate / ir_measures)")
        if worst > 1e-9:
            raise SystemExit("per-query values differ from ir_measures")


if __name__ == "__main__":
    main()
