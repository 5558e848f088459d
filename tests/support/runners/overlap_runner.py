"""A small but real retrieval command for the runner tests.

    python overlap_runner.py --config C --queries Q --corpus CORPUS --output RUN

The retrieval config (YAML) may name ``copy_run`` (a TREC run whose rankings
are reused for the queries it has, as a stack that cached them would) and
``boost`` (a weight on title tokens). Every other query is ranked by BM25-like
token overlap over the corpus JSONL. Test switches in the config:
``fail: true`` exits 3, ``sleep: S`` sleeps first, ``drop_queries: N`` leaves the
last N queries out, ``env_dump: PATH`` writes the environment it sees,
``shuffle_ties: true`` perturbs scores by the repeat seed (a nondeterministic stack),
``depth: N`` lists N documents a query (default 100), ``--seed`` defaults to RETRIEVAL_GATE_SEED,
``prefer_suffix: S`` adds 0.25 to documents whose id ends with S (a change that moves queries),
``probe: {path: P, needles: [...]}`` looks for the needles (secrets) wherever a PR's code could
read them - every process's environ and cmdline, and the memory of every other process whose
/proc/<pid>/mem opens - and writes what it found to P (JSON).
"""

import argparse
import gzip
import json
import math
import os
import random
import re
import sys
import time
from collections import Counter

import yaml  # PyYAML ships with ir_datasets

TOKEN = re.compile(r"[a-z0-9]+")


def tokens(text):
    return TOKEN.findall(text.lower())


def read_queries(path):
    queries = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            if path.endswith(".jsonl"):
                row = json.loads(line)
                queries.append((str(row.get("query_id") or row.get("_id") or row.get("qid")), row["text"]))
            else:
                qid, text = line.rstrip("\n").split("\t", 1)
                queries.append((qid, text))
    return queries


def search_processes(needles, found):
    """Every other process's environ and cmdline, and the memory of those whose /proc/<pid>/mem
    opens: what it can read, and where a needle is (into ``found``)."""
    for pid in sorted((p for p in os.listdir("/proc") if p.isdigit()), key=int):
        if int(pid) == os.getpid():
            continue
        found["examined"].append(int(pid))
        for name in ("environ", "cmdline"):
            try:
                with open(f"/proc/{pid}/{name}", "rb") as handle:
                    data = handle.read()
            except OSError:
                continue
            if name == "environ":
                found["environ_readable"].append(int(pid))
            found["hits"] += [f"/proc/{pid}/{name}" for n in needles if n in data]
        try:
            maps = open(f"/proc/{pid}/maps").read().splitlines()
            mem = open(f"/proc/{pid}/mem", "rb")
        except OSError:
            continue
        with mem:
            readable = False
            for line in maps:
                fields = line.split()
                if len(fields) < 2 or "r" not in fields[1]:
                    continue
                start, end = (int(x, 16) for x in fields[0].split("-"))
                if end - start > 256 * 1024 * 1024:
                    continue
                try:
                    mem.seek(start)
                    data = mem.read(end - start)
                except (OSError, OverflowError, ValueError):
                    continue
                readable = True
                found["hits"] += [f"/proc/{pid}/mem" for n in needles if n in data]
            if readable:
                found["mem_readable"].append(int(pid))


def probe(path, needles):
    """What a hostile runner command can read of the secrets (see the module docstring)."""
    found = {"hits": [], "environ_readable": [], "mem_readable": [], "uid": os.getuid(), "self": os.getpid(),
             "examined": []}
    search_processes(needles, found)
    with open(path, "w") as handle:
        json.dump(found, handle)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", required=True)
    parser.add_argument("--queries", required=True)
    parser.add_argument("--corpus", default="")
    parser.add_argument("--output", required=True)
    # The seed as the gate's command runner also hands it over (a stack reading its environment).
    parser.add_argument("--seed", type=int, default=int(os.environ.get("RETRIEVAL_GATE_SEED") or 0))
    args = parser.parse_args()
    with open(args.config, encoding="utf-8") as handle:
        config = yaml.safe_load(handle) or {}
    if config.get("env_dump"):
        with open(config["env_dump"], "w") as handle:
            json.dump(dict(os.environ), handle)
    if config.get("probe"):
        probe(config["probe"]["path"], [n.encode() for n in config["probe"]["needles"]])
    if config.get("sleep"):
        time.sleep(float(config["sleep"]))
    if config.get("fail"):
        print("simulated failure: index not found", file=sys.stderr)
        sys.exit(3)
    copied = {}
    if config.get("copy_run"):
        opener = gzip.open if config["copy_run"].endswith(".gz") else open
        with opener(config["copy_run"], "rt") as handle:
            for line in handle:
                parts = line.split()
                if len(parts) >= 6:
                    copied.setdefault(parts[0], []).append((parts[2], float(parts[4])))
    docs = []
    if args.corpus and os.path.isdir(args.corpus):  # a folder of files: each file a document
        for folder, _, names in os.walk(args.corpus):
            for name in sorted(names):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as handle:
                    docs.append((os.path.relpath(path, args.corpus).replace(os.sep, "/"), Counter(),
                                 Counter(tokens(handle.read()))))
    elif args.corpus:
        with open(args.corpus, encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    row = json.loads(line)
                    docs.append((row["id"], Counter(tokens(row.get("title", ""))), Counter(tokens(row["text"]))))
    df = Counter()
    for _, title, body in docs:
        df.update(set(title) | set(body))
    boost = float(config.get("boost", 1.0))
    rng = random.Random(args.seed)
    queries = read_queries(args.queries)
    if config.get("drop_queries"):
        queries = queries[: -int(config["drop_queries"])]
    with open(args.output, "w", encoding="utf-8") as out:
        for qid, text in queries:
            if qid in copied:
                ranked = copied[qid]
            else:
                terms = tokens(text)
                ranked = []
                for doc_id, title, body in docs:
                    score = sum(math.log(1 + len(docs) / df[t]) * (body[t] + boost * title[t]) for t in terms
                                if t in df)
                    if score > 0:
                        ranked.append((doc_id, score))
            if config.get("shuffle_ties"):
                ranked = [(d, s + rng.uniform(-0.5, 0.5)) for d, s in ranked]
            if config.get("prefer_suffix"):  # a deterministic re-ranking: a real, per-query change
                suffix = str(config["prefer_suffix"])
                ranked = [(d, s + (0.25 if d.endswith(suffix) else 0.0)) for d, s in ranked]
            ranked.sort(key=lambda item: -item[1])
            for rank, (doc_id, score) in enumerate(ranked[: int(config.get("depth", 100))], start=1):
                out.write(f"{qid} Q0 {doc_id} {rank} {score:.6f} overlap\n")


if __name__ == "__main__":
    main()
