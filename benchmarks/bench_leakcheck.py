"""Benchmark: golden-query leakage scan (gate.checks.leakage) against `grep -F -w -f`.

Generates a corpus of short chunks (30-60 tokens drawn Zipf-wise from the
English words of the Python standard library's comments and prose, or with
``--vocab synthetic`` from made-up syllable words, a hard case whose few
distinct trigrams are all common; some capitals and punctuation) and a set of
queries (4-12 tokens, a third of them frequent words), plants leaks (verbatim
copies with changed case/punctuation, and one-word-inflected copies of long
queries), then runs, each in a fresh subprocess so peak memory is its own:

  - a read-only pass over the corpus file (the cost of iterating, for reference)
  - find_leaks(modes=("exact",))
  - find_leaks(modes=("trigram-jaccard",))
  - LC_ALL=C grep -c -F -w -f patterns corpus on the *normalized* texts
    (normalization done beforehand, not timed): the reference for exact mode
  - `retrieval-gate leakcheck --mode M --format json` on the same corpus as JSONL, as a user
    runs it (start-up, reading, JSON validation and normalization included)

and prints wall time, chunks per second and peak RSS, the ratio to grep, and
checks that every planted leak was found.

    python benchmarks/bench_leakcheck.py [--chunks 1000000] [--queries 10000] [--vocab stdlib|synthetic]
                                         [--modes exact,trigram-jaccard] [--keep DIR] [--only all|cli]
                                         [--baseline-root OTHER_CHECKOUT] [--rounds N]

With ``--baseline-root``, each CLI run of this checkout follows one of the other checkout
(a former version) on the same corpus, so that the two are timed under the same load, and
their JSON reports must be equal.

Peak memory is VmHWM of the scanning process (ru_maxrss would carry over the
generator's memory across fork+exec on Linux); grep's is /usr/bin/time's %M.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from gate.checks.normalize import normalize, window_score  # noqa: E402

CONSONANTS = list("bcdfghjklmnprstvwz") + ["ch", "sh", "th", "st", "tr", "pl"]
VOWELS = list("aeiou") + ["ai", "ea", "ou"]


def stdlib_vocabulary() -> list[str]:
    """English-like words: those of the Python standard library's comments and prose lines, by frequency.

    Real English words give realistic character-trigram statistics (what the
    trigram candidate filter depends on) without shipping a word list.
    """
    counts: Counter[str] = Counter()
    word = re.compile(r"[a-z]{2,}")
    root = os.path.dirname(os.__file__)
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in ("site-packages", "dist-packages", "__pycache__"))
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            with open(os.path.join(folder, name), encoding="utf-8", errors="ignore") as f:
                for line in f:
                    s = line.strip()
                    if s.startswith("#") or not any(c in s for c in "=()[]{}:"):
                        counts.update(word.findall(s.lower()))
    return [w for w, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if c >= 2]


def synthetic_vocabulary(size: int, rng: np.random.Generator) -> list[str]:
    """Distinct made-up words from a small syllable inventory: few distinct trigrams, all of
    them common (a hard case for the trigram filter)."""
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < size:
        rank = len(words)
        syllables = 1 + min(3, int(rng.integers(0, 2 + int(np.log10(rank + 1)))))
        w = "".join(CONSONANTS[rng.integers(len(CONSONANTS))] + VOWELS[rng.integers(len(VOWELS))]
                    for _ in range(syllables))
        if rng.random() < 0.4:
            w += CONSONANTS[rng.integers(len(CONSONANTS))]
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


def zipf_sampler(vocab_size: int, exponent: float, rng: np.random.Generator):
    cdf = np.cumsum(1.0 / np.arange(1, vocab_size + 1) ** exponent)
    cdf /= cdf[-1]
    return lambda n: np.minimum(np.searchsorted(cdf, rng.random(n)), vocab_size - 1)


def generate(folder: Path, n_chunks: int, n_queries: int, vocab: str = "stdlib", seed: int = 7) -> dict:
    rng = np.random.default_rng(seed)
    words = stdlib_vocabulary() if vocab == "stdlib" else synthetic_vocabulary(30_000, rng)
    sample = zipf_sampler(len(words), 1.05, rng)
    # Queries lean on content words, as real questions do: a third of their
    # tokens from the 200 most frequent words, the rest from the long tail.
    frequent = zipf_sampler(200, 1.0, rng)
    tail = zipf_sampler(len(words) - 200, 0.8, rng)

    queries = []
    for i in range(n_queries):
        n = int(rng.integers(4, 13))
        ids = np.where(rng.random(n) < 1 / 3, frequent(n), 200 + tail(n))
        queries.append((f"q{i:06d}", " ".join(words[j] for j in ids)))

    # Plants: verbatim (some re-cased / punctuated) and one-word-inflected copies.
    n_exact = max(1, n_queries // 200)
    n_near = max(1, n_queries // 500)
    order = rng.permutation(n_queries)
    exact_ids = [int(i) for i in order[:n_exact]]
    long_ids = [int(i) for i in order[n_exact:] if len(queries[i][1].split()) >= 9]
    plants: dict[int, list[tuple[str, str]]] = {}  # chunk index -> [(query id, planted text)]
    planted_exact, planted_near = [], []
    for k, qi in enumerate(exact_ids):
        qid, text = queries[qi]
        variant = [text, text.upper(), text.title(), text.replace(" ", "-", 1) + "?"][k % 4]
        plants.setdefault(int(rng.integers(n_chunks)), []).append((qid, variant))
        planted_exact.append(qid)
    for qi in long_ids:
        if len(planted_near) >= n_near:
            break
        qid, text = queries[qi]
        toks = text.split()
        longest = max(range(len(toks)), key=lambda j: len(toks[j]))
        toks[longest] += "s"
        changed = " ".join(toks)
        if window_score(text, changed) < 0.85:
            continue
        plants.setdefault(int(rng.integers(n_chunks)), []).append((qid, changed))
        planted_near.append(qid)

    corpus = folder / "corpus.tsv"
    norm_corpus = folder / "corpus.norm.txt"
    jsonl_corpus = folder / "corpus.jsonl"
    with open(corpus, "w") as raw, open(norm_corpus, "w") as norm, open(jsonl_corpus, "w") as jsonl:
        batch = 50_000
        for start in range(0, n_chunks, batch):
            stop = min(n_chunks, start + batch)
            lengths = rng.integers(30, 61, size=stop - start)
            ids = sample(int(lengths.sum()))
            commas = rng.random(len(ids)) < 0.08
            pos = 0
            out_raw, out_norm = [], []
            for c, n in enumerate(lengths):
                toks = [words[j] + ("," if commas[pos + t] else "") for t, j in enumerate(ids[pos : pos + n])]
                pos += n
                toks[0] = toks[0].capitalize()
                ci = start + c
                for _qid, text in plants.get(ci, ()):
                    at = int(rng.integers(0, len(toks) + 1))
                    toks[at:at] = [text]
                text = " ".join(toks) + "."
                out_raw.append(f"d{ci // 8}#{ci % 8}\td{ci // 8}\t{text}\n")
                out_norm.append(normalize(text) + "\n")
            raw.writelines(out_raw)
            norm.writelines(out_norm)
            jsonl.writelines(_jsonl_line(line) for line in out_raw)
    (folder / "queries.tsv").write_text("".join(f"{qid}\t{text}\n" for qid, text in queries))
    (folder / "patterns.txt").write_text("".join(normalize(text) + "\n" for _qid, text in queries))
    return {"exact": planted_exact, "near": planted_near}


def _jsonl_line(tsv_line: str) -> str:
    chunk_id, doc_id, text = tsv_line.rstrip("\n").split("\t", 2)
    return json.dumps({"_id": chunk_id, "doc_id": doc_id, "title": "", "text": text}) + "\n"


def timed_exit_0_or_1(name: str, cmd: list[str], **kw) -> tuple[str, float, float]:
    """stdout, wall seconds and peak RSS (MiB, /usr/bin/time's %M) of a command that exits 0 or 1."""
    timer = ["/usr/bin/time", "-f", "%M"] if os.path.exists("/usr/bin/time") else []
    t0 = time.perf_counter()
    done = subprocess.run([*timer, *cmd], capture_output=True, text=True, **kw)
    seconds = time.perf_counter() - t0
    if done.returncode not in (0, 1):
        raise SystemExit(f"{name} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    peak = int(done.stderr.strip().splitlines()[-1]) / 1024 if timer else float("nan")
    return done.stdout, seconds, peak


def cli(folder: Path, mode: str, root: Path = REPO) -> dict:
    """`retrieval-gate leakcheck` as a user runs it, on the JSONL corpus: reading, validation included.

    ``root``: the checkout whose gate runs (another one: a paired run against a former version)."""
    out, seconds, peak = timed_exit_0_or_1("leakcheck", [
        sys.executable, "-m", "gate", "leakcheck", "--queries", str(folder / "queries.tsv"),
        "--corpus", str(folder / "corpus.jsonl"), "--mode", mode, "--format", "json"], cwd=root)
    report = json.loads(out)
    return {"seconds": seconds, "peak_mib": peak, "matched": sorted(m["query_id"] for m in report["matched"]),
            "report": report}


SCAN_SCRIPT = r"""
import json, resource, sys, time
sys.path.insert(0, {repo!r})
from typing import NamedTuple
from gate.inputs.readers.records import Query
from gate.checks.leakage import find_leaks

class Chunk(NamedTuple):
    chunk_id: str
    doc_id: str
    text: str

def chunks(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            cid, did, text = line.rstrip("\n").split("\t", 2)
            yield Chunk(cid, did, text)

queries = []
with open({queries!r}, encoding="utf-8") as f:
    for line in f:
        qid, text = line.rstrip("\n").split("\t", 1)
        queries.append(Query(qid, text))
mode = {mode!r}
t0 = time.perf_counter()
if mode == "read":
    n = sum(1 for _ in chunks({corpus!r}))
    out = {{"chunks": n, "matched": []}}
else:
    result = find_leaks(queries, chunks({corpus!r}), modes=(mode,))
    out = {{"chunks": result.chunks_scanned, "matched": sorted(result.matched_ids()),
           "modes": [m.mode for m in result.matched]}}
out["seconds"] = time.perf_counter() - t0
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the (large) parent across fork+exec.
with open("/proc/self/status") as f:
    hwm = [line for line in f if line.startswith("VmHWM:")]
out["peak_mib"] = (int(hwm[0].split()[1]) if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) / 1024
json.dump(out, sys.stdout)
"""


def scan(folder: Path, mode: str) -> dict:
    script = SCAN_SCRIPT.format(repo=str(REPO), queries=str(folder / "queries.tsv"), corpus=str(folder / "corpus.tsv"),
                                mode=mode)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def grep(folder: Path) -> dict:
    """The exact-mode reference: fixed strings, whole words, on the normalized texts."""
    out, seconds, peak = timed_exit_0_or_1("grep", [
        "grep", "-c", "-F", "-w", "-f", str(folder / "patterns.txt"), str(folder / "corpus.norm.txt")],
        env=dict(os.environ, LC_ALL="C"))
    return {"seconds": seconds, "lines_matching": int(out.strip()), "peak_mib": peak}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chunks", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--vocab", choices=("stdlib", "synthetic"), default="stdlib",
                    help="English words from the stdlib's prose (default) or made-up syllable words (hard case)")
    ap.add_argument("--modes", default="exact,trigram-jaccard", help="which scans to time")
    ap.add_argument("--keep", type=Path, help="generate into (and keep) this folder (reused when it holds a corpus "
                                              "of the same --chunks, --queries and --vocab)")
    ap.add_argument("--only", choices=("all", "cli"), default="all",
                    help="cli: time only `retrieval-gate leakcheck` (no library scans, no grep)")
    ap.add_argument("--baseline-root", type=Path,
                    help="another checkout of the gate (a former version): each CLI run is paired with one of it, "
                         "back to back, and their reports must be equal")
    ap.add_argument("--rounds", type=int, default=1, help="CLI runs (pairs with --baseline-root) per mode")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="bench_leak_") as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        key = {"chunks": args.chunks, "queries": args.queries, "vocab": args.vocab}
        stamp = folder / "generated.json"
        if stamp.exists() and json.loads(stamp.read_text())["key"] == key:
            planted = json.loads(stamp.read_text())["planted"]
            how = "reused"
        else:
            planted = generate(folder, args.chunks, args.queries, args.vocab)
            stamp.write_text(json.dumps({"key": key, "planted": planted}))
            how = f"generated in {time.perf_counter() - t0:.1f}s"
        size = (folder / "corpus.tsv").stat().st_size / 2**20
        print(f"{args.chunks:,} chunks ({size:,.0f} MiB), {args.queries:,} queries, "
              f"{len(planted['exact'])} verbatim + {len(planted['near'])} one-word-changed leaks planted, "
              f"{how} ({args.vocab} vocabulary, Python {sys.version.split()[0]})")

        modes = [m for m in args.modes.split(",") if m]
        rows = []
        results = {}
        g = None
        if args.only == "all":
            for mode in ["read", *modes]:
                r = scan(folder, mode)
                results[mode] = r
                rows.append((f"leakcheck {mode}" if mode != "read" else "read corpus only", r["seconds"],
                             r["peak_mib"]))
            g = grep(folder)
            rows.append(("grep -c -F -w -f (normalized)", g["seconds"], g["peak_mib"]))
        cli_runs = {}
        same_reports = True
        for mode in modes:
            for k in range(args.rounds):
                if args.baseline_root is not None:
                    base = cli(folder, mode, args.baseline_root)
                    rows.append((f"  baseline leakcheck {mode} (JSONL)", base["seconds"], base["peak_mib"]))
                run = cli(folder, mode)
                rows.append((f"retrieval-gate leakcheck {mode} (JSONL)", run["seconds"], run["peak_mib"]))
                if args.baseline_root is not None and base["report"] != run["report"]:
                    same_reports = False
                    print(f"FAIL: the {mode} report differs from the baseline's (round {k + 1})")
                if mode in cli_runs and cli_runs[mode]["report"] != run["report"]:
                    same_reports = False
                    print(f"FAIL: the {mode} report differs between rounds")
                cli_runs[mode] = run

        print(f"\n{'':50} {'seconds':>9} {'chunks/s':>11} {'peak RSS MiB':>13}")
        for name, secs, mib in rows:
            print(f"{name:50} {secs:9.2f} {args.chunks / secs:11,.0f} {mib:13.0f}")
        if g is not None:
            print(f"grep: {g['lines_matching']:,} lines match")
        if "exact" in results and g is not None:
            print(f"leakcheck exact / grep time: {results['exact']['seconds'] / g['seconds']:.2f}x; "
                  f"exact matched {len(results['exact']['matched']):,} queries")
        if "exact" in cli_runs and g is not None:
            print(f"retrieval-gate leakcheck --mode exact on JSONL / grep time: "
                  f"{cli_runs['exact']['seconds'] / g['seconds']:.2f}x "
                  "(reading, JSON validation, normalization included)")
        if "exact" in results and "trigram-jaccard" in results:
            print(f"trigram / exact time: {results['trigram-jaccard']['seconds'] / results['exact']['seconds']:.2f}x; "
                  f"trigram matched {len(results['trigram-jaccard']['matched']):,} queries")

        ok = same_reports
        expected = {"exact": planted["exact"], "trigram-jaccard": planted["exact"] + planted["near"]}
        for mode in modes:
            if mode in results and cli_runs[mode]["matched"] != results[mode]["matched"]:
                ok = False
                print(f"FAIL: the {mode} CLI run on JSONL matched other queries than find_leaks on TSV")
            missing = sorted(set(expected[mode]) - set(cli_runs[mode]["matched"]))
            if missing:
                ok = False
                print(f"FAIL: {mode} missed planted leaks {missing[:10]}")
        print(f"planted leaks found: {'all' if ok else 'NOT all'}")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
