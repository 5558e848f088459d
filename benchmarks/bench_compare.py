"""Benchmark: `retrieval-gate compare` against the tools a user would otherwise run on two runs.

Generates two TREC runs of Q queries x D documents and a qrels file, then runs, each in a fresh
subprocess so peak memory is its own, in paired rounds (every tool once a round, in turn):
  - retrieval-gate compare (read both runs, evaluate, paired bootstrap B=10000, sign-flip test,
    movement buckets, the report): everything the gate does
  - pytrec_eval (trec_eval's C core) evaluating the same measures on both runs
  - ir_measures evaluating the same measures on both runs
  - trec_eval itself, once per run, when a binary is given (--trec-eval PATH) or on PATH
and prints the median wall time and peak RSS of each with the ratios, after checking that every
per-query value agrees with ir_measures (to 1e-9).

    python benchmarks/bench_compare.py [--queries 1000] [--docs 1000] [--rounds 3] [--trec-eval PATH]
    python benchmarks/bench_compare.py --queries 10000 --docs 1000 --only gate,trec_eval
    python benchmarks/bench_compare.py --queries 100000 --docs 100 --rounds 1 --only gate,trec_eval
"""

from __future__ import annotations

import argparse
import json
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
        qrels_lines.extend(f"{qid} 0 D{d} {label}" for d, label in zip(pool, labels))
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


PYTREC_SCRIPT = """
import pytrec_eval
def read(path, run):
    out = {{}}
    with open(path) as handle:
        for line in handle:
            parts = line.split()
            if run:
                out.setdefault(parts[0], {{}})[parts[2]] = float(parts[4])
            else:
                out.setdefault(parts[0], {{}})[parts[2]] = int(parts[3])
    return out
evaluator = pytrec_eval.RelevanceEvaluator(read({qrels!r}, False),
                                           {{"ndcg_cut.10", "map", "recip_rank", "recall.100", "P.10"}})
for path in ({a!r}, {b!r}):
    evaluator.evaluate(read(path, True))
"""

TREC_EVAL_MEASURES = ["-m", "ndcg_cut.10", "-m", "map", "-m", "recip_rank", "-m", "recall.100", "-m", "P.10"]


def timed_command(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of a command, measured by a fresh Python around it."""
    wrapper = (
        "import resource, subprocess, sys\n"
        f"subprocess.run({argv!r}, check=True, stdout=subprocess.DEVNULL)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
    )
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", wrapper], capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"benchmark step failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return elapsed, int(proc.stderr.strip().splitlines()[-1]) / 1024


def timed(script: str) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of a fresh Python running ``script``: its own peak plus the
    largest of its children's (compare reads a large candidate run in a child process), an upper
    bound of what the two held at once."""
    wrapper = (
        "import resource, time, runpy, sys\n"
        "t = time.perf_counter()\n"
        f"exec(compile({script!r}, 'bench', 'exec'), {{'__name__': '__main__'}})\n"
    )
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", wrapper + "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss"
                                         " + resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)"],
        capture_output=True, text=True,
    )
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0,):
        raise SystemExit(f"benchmark step failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    peak_kib = int(proc.stderr.strip().splitlines()[-1])
    return elapsed, peak_kib / 1024


def main() -> None:
    import shutil
    import statistics

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3, help="paired rounds; medians are printed")
    parser.add_argument("--trec-eval", default=shutil.which("trec_eval"), help="a trec_eval binary (optional)")
    parser.add_argument("--only", default="", help="comma-separated subset of gate,pytrec_eval,ir_measures,trec_eval")
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
        paths = dict(a=str(a), b=str(b), qrels=str(qrels))
        tools = {
            "gate": lambda: timed(GATE_SCRIPT.format(repo=str(REPO), out=str(gate_out), **paths)),
            "pytrec_eval": lambda: timed(PYTREC_SCRIPT.format(**paths)),
            "ir_measures": lambda: timed(IRM_SCRIPT.format(out=str(irm_out), **paths)),
        }
        if args.trec_eval:
            def trec_eval() -> tuple[float, float]:  # one process per run, as trec_eval takes one run
                times, peaks = zip(*(timed_command([args.trec_eval, "-c", "-q", *TREC_EVAL_MEASURES, str(qrels),
                                                    str(run)]) for run in (a, b)))
                return sum(times), max(peaks)
            tools["trec_eval"] = trec_eval
        chosen = [name for name in tools if not args.only or name in args.only.split(",")]
        if "gate" not in chosen:
            raise SystemExit("--only must include gate: every ratio is against it")
        measured: dict[str, list[tuple[float, float]]] = {name: [] for name in chosen}
        for _ in range(args.rounds):
            for name in chosen:
                measured[name].append(tools[name]())

        rows = 2 * args.queries * args.docs
        print(f"two runs of {args.queries} queries x {args.docs} docs ({rows:,} lines), measures "
              f"{', '.join(MEASURES)}; median of {args.rounds} paired rounds")
        if "ir_measures" in chosen:
            worst = agreement(qrels, a, b, irm_out)
            print(f"max |per-query difference| vs ir_measures: {worst:.2e}")
            if worst > 1e-9:
                raise SystemExit("per-query values differ from ir_measures")
        gate_time = statistics.median(t for t, _ in measured["gate"])
        gate_mem = statistics.median(m for _, m in measured["gate"])
        labels = {"gate": "retrieval-gate compare (everything, B=10000)",
                  "pytrec_eval": "pytrec_eval (evaluation only)",
                  "ir_measures": "ir_measures iter_calc (evaluation only)", "trec_eval": "trec_eval -c -q, one per run"}
        for name in chosen:
            took = statistics.median(t for t, _ in measured[name])
            peak = statistics.median(m for _, m in measured[name])
            ratio = "" if name == "gate" else (f"   their time / gate's {took / gate_time:5.2f}, "
                                               f"gate's memory / theirs {gate_mem / peak:4.2f}")
            print(f"{labels[name]:<46} {took:7.2f} s  peak {peak:8.1f} MiB{ratio}")


def agreement(qrels: Path, a: Path, b: Path, irm_out: Path) -> float:
    """The largest per-query difference between the gate's values and ir_measures'."""
    sys.path.insert(0, str(REPO))
    from gate.evaluation.evaluate import evaluate
    from gate.inputs.readers.qrels import read_qrels
    from gate.inputs.readers.runs import read_run
    from gate.inputs.universe import query_universe

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
    return worst


if __name__ == "__main__":
    main()
