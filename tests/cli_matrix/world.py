"""Small but realistic input files for the CLI matrix, generated from a seed.

The shape follows TREC Deep Learning: the run files rank documents for MANY
more topics than the qrels judge (here 160 topics in the runs, 40 judged, as
DL 2019's runs cover 200 topics of which 43 are judged). Labels are graded
0-3, there are exact score ties inside the top 10, queries come as a TSV
topics file (no strata) and as JSONL with a ``stratum`` field and metadata,
and the strata have traffic shares in a YAML file.

Two builders:

* :func:`build_files` - bare files for ``compare``, ``lift``, ``leakcheck``,
  ``noise --from-runs`` and ``factorial``.
* :func:`build_repo` - a git repository with ``.retrieval-gate.yml``, a
  retrieval config, a corpus per ingestion parser, a ``command`` runner
  (tests/support/runners/overlap_runner.py), an archived baseline on the base commit
  and a PR commit changing the retrieval config - for ``archive``, ``replay``,
  ``plan``, ``run``, ``noise --repeats``. A second config in the same
  repository uses ``runner.type: run-file``.
"""

from __future__ import annotations

import gzip
import json
import random
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

RUNNER = Path(__file__).resolve().parents[1] / "support" / "runners" / "overlap_runner.py"

STRATA = ("navigational", "error_string", "entity_attribute", "migration", "how_to", "tail")
SHARES = {"navigational": 0.22, "error_string": 0.18, "entity_attribute": 0.15, "migration": 0.06,
          "how_to": 0.31, "tail": 0.08}
TOPICS = [
    ("webhooks", "signature"), ("rate", "limits"), ("pagination", "cursor"), ("billing", "invoice"),
    ("oauth", "scopes"), ("search", "filters"), ("sdk", "install"), ("errors", "codes"),
    ("exports", "csv"), ("teams", "roles"), ("audit", "log"), ("regions", "latency"),
]
WORDS = [
    "giraffe", "lantern", "meadow", "harbour", "quartz", "saffron", "tundra", "violin", "walnut", "zephyr",
    "almond", "basalt", "cobalt", "dolphin", "ember", "falcon", "granite", "hazel", "indigo", "juniper",
    "kestrel", "lilac", "marble", "nutmeg", "orchid", "pebble", "quill", "raven", "sorrel", "thistle",
    "umber", "velvet", "willow", "xenon", "yarrow", "zircon", "acorn", "birch", "cedar", "dune",
]
VERBS = ["how do i configure", "what is the limit for", "why does", "where can i find", "troubleshoot",
         "migrate from v1", "set up", "explain"]


@dataclass
class Files:
    root: Path
    qrels: Path                 # 4-column TREC, graded 0..3
    qrels3: Path                # the same judgments, compact 3-column
    queries_tsv: Path           # all run topics, qid<TAB>text (no strata)
    queries_jsonl: Path         # all run topics with stratum and metadata
    queries_judged: Path        # only the judged topics (JSONL with strata), like a golden set
    qrels_wrong: Path           # qrels of another collection: no topic in common with the runs
    strata_yml: Path            # flat shares mapping
    strata_block_yml: Path      # a `strata:` block with guarded strata and an assignments TSV
    strata_tsv: Path            # qid<TAB>stratum
    corpus: Path                # JSONL chunks, no golden query inside
    corpus_leaky: Path          # + an FAQ page quoting golden queries
    corpus_tsv: Path            # the clean corpus as id<TAB>text
    baseline: Path              # TREC run, plain text
    candidate: Path             # TREC run, gzip
    candidate_plain: Path       # the same candidate, plain text
    noise_runs: list[Path]      # identical-config repeats of the baseline (perturbed)
    cells: dict[tuple[str, str], Path]   # (model, corpus) -> run of the 2x2 grid
    cell_missing: Path          # the (new, new) cell missing two judged queries
    run_ids: list[str] = field(default_factory=list)
    judged_ids: list[str] = field(default_factory=list)
    leaked_ids: list[str] = field(default_factory=list)
    own: dict[str, list[str]] = field(default_factory=dict)  # qid -> its five graded chunks


def _qid(i: int) -> str:
    return f"{1000 + i * 37}"  # numeric-looking ids whose byte order differs from numeric order


def _query_text(i: int) -> str:
    a, b = TOPICS[i % len(TOPICS)]
    return f"{VERBS[i % len(VERBS)]} {a} {b} {WORDS[i % len(WORDS)]} {WORDS[(i * 7 + 3) % len(WORDS)]}"


def _docs(n_queries: int, rng: random.Random) -> tuple[list[dict], dict[int, list[str]]]:
    """Five chunks per query (graded by how much of the query they share) plus filler chunks."""
    docs: list[dict] = []
    own: dict[int, list[str]] = {}
    for i in range(n_queries):
        a, b = TOPICS[i % len(TOPICS)]
        w1, w2 = WORDS[i % len(WORDS)], WORDS[(i * 7 + 3) % len(WORDS)]
        ids = []
        for j, text in enumerate([
            f"{a} {b} {w1} {w2}: the reference page with every {a} setting and its default",
            f"{a} {b} {w1} guide, step by step, with examples of {b}",
            f"{a} {w2} notes; see also the {b} page",
            f"{b} overview for {w1} users",
            f"{a} {b} changelog entry mentioning the dashboard",
        ]):
            doc = f"docs/{a}-{b}/{i:03d}#c{j}"
            docs.append({"id": doc, "title": f"{a} {b}", "text": text, "page": f"docs/{a}-{b}/{i:03d}"})
            ids.append(doc)
        own[i] = ids
    for k in range(200):
        a, b = TOPICS[k % len(TOPICS)]
        docs.append({"id": f"misc/page-{k:03d}#c0", "title": "misc", "text": f"general {a} notes {rng.choice(WORDS)}"})
    return docs, own


def _trec(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


def _rank(qid: str, scored: list[tuple[str, float]], tag: str, depth: int = 100) -> list[str]:
    scored = sorted(scored, key=lambda item: (-item[1], item[0]))[:depth]
    return [f"{qid} Q0 {doc} {rank} {score:.4f} {tag}" for rank, (doc, score) in enumerate(scored, start=1)]


def build_files(root: Path, seed: int = 11, n_run_queries: int = 160, judge_every: int = 4) -> Files:
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    docs, own = _docs(n_run_queries, rng)
    all_ids = [d["id"] for d in docs]
    run_ids = [_qid(i) for i in range(n_run_queries)]
    judged = [i for i in range(n_run_queries) if i % judge_every == 0]
    stratum = {i: STRATA[(i // judge_every) % len(STRATA)] for i in range(n_run_queries)}

    # qrels: graded 3/2/1/1/0 on the query's own chunks, plus judged non-relevant pool documents.
    qrels = []
    grades = {}
    for i in judged:
        g = dict(zip(own[i], (3, 2, 1, 1, 0)))
        for doc in rng.sample(all_ids, 6):
            g.setdefault(doc, 0)
        grades[i] = g
        for doc, label in g.items():
            qrels.append(f"{_qid(i)} 0 {doc} {label}")
    rng.shuffle(qrels)  # qrels files are not always sorted
    f = Files(
        root=root, qrels=root / "qrels.txt", qrels3=root / "qrels-3col.txt", queries_tsv=root / "topics.tsv",
        queries_jsonl=root / "golden.jsonl", strata_yml=root / "shares.yml", strata_block_yml=root / "strata.yml",
        strata_tsv=root / "strata.tsv", queries_judged=root / "golden-judged.jsonl",
        qrels_wrong=root / "qrels-other-collection.txt", corpus=root / "corpus.jsonl",
        corpus_leaky=root / "corpus-leaky.jsonl",
        corpus_tsv=root / "corpus.tsv", baseline=root / "baseline.run", candidate=root / "candidate.run.gz",
        candidate_plain=root / "candidate.run", noise_runs=[], cells={}, cell_missing=root / "cell-new-new-missing.run",
        run_ids=run_ids, judged_ids=[_qid(i) for i in judged], own={_qid(i): own[i] for i in own},
    )
    f.qrels.write_text("# graded qrels, TREC 4-column\n" + _trec(qrels))
    f.qrels3.write_text(_trec([" ".join((line.split()[0], line.split()[2], line.split()[3])) for line in qrels]))
    f.queries_tsv.write_text(_trec([f"{_qid(i)}\t{_query_text(i)}" for i in range(n_run_queries)]))
    f.queries_jsonl.write_text("".join(json.dumps({"query_id": _qid(i), "text": _query_text(i), "stratum": stratum[i],
                                                   "source": "support-tickets" if i % 3 else "search-logs"}) + "\n"
                                       for i in range(n_run_queries)))
    f.queries_judged.write_text("".join(
        json.dumps({"query_id": _qid(i), "text": _query_text(i), "stratum": stratum[i]}) + "\n" for i in judged))
    f.qrels_wrong.write_text(_trec([f"Q{n} 0 other-doc-{n} {n % 3}" for n in range(50)]))
    f.strata_yml.write_text("".join(f"{k}: {v}\n" for k, v in SHARES.items()))
    f.strata_tsv.write_text("qid\tstratum\n" + _trec([f"{_qid(i)}\t{stratum[i]}" for i in range(n_run_queries)]))
    f.strata_block_yml.write_text(
        "strata:\n  shares:\n" + "".join(f"    {k}: {v}\n" for k, v in SHARES.items())
        + "  guarded: [navigational, error_string]\n  assignments: strata.tsv\n")

    f.corpus.write_text("".join(json.dumps(d) + "\n" for d in docs))
    f.corpus_tsv.write_text(_trec([f"{d['id']}\t{d['title']} {d['text']}" for d in docs]))
    leaked = judged[1:4]
    f.leaked_ids = [_qid(i) for i in leaked]
    faq = [{"id": f"faq/common-questions#q{n}", "title": "FAQ", "text": f"People often ask: {_query_text(i)}? Yes."}
           for n, i in enumerate(leaked)]
    f.corpus_leaky.write_text(f.corpus.read_text() + "".join(json.dumps(d) + "\n" for d in faq))

    def run(noise: float, tag: str, r: random.Random, worse: tuple[str, ...] = (), skip: set[str] = frozenset(),
            tie_every: int = 0) -> list[str]:
        lines = []
        for i in range(n_run_queries):
            qid = _qid(i)
            if qid in skip:
                continue
            truth = dict(zip(own[i], (3.0, 2.0, 1.0, 1.0, 0.2)))
            sigma = noise * (1.8 if stratum[i] in worse else 1.0)
            pool = own[i] + r.sample(all_ids, 120)
            scored = {}
            for doc in pool:
                score = truth.get(doc, 0.0) + r.gauss(0.0, sigma)
                if tie_every and i % tie_every == 0:
                    score = round(score, 1)  # coarse scores: ties at the top
                scored[doc] = round(score + 20.0, 4)
            lines += _rank(qid, list(scored.items()), tag)
        return lines

    f.baseline.write_text(_trec(run(1.1, "bm25", random.Random(seed + 1), tie_every=5)))
    cand = _trec(run(0.8, "dense", random.Random(seed + 2), worse=("navigational",)))
    f.candidate_plain.write_text(cand)
    with gzip.open(f.candidate, "wt", encoding="utf-8") as handle:
        handle.write(cand)
    for k in range(3):
        path = root / f"noise-{k}.run"
        path.write_text(_trec(run(1.1, "bm25", random.Random(seed + 1 + 100 * k), tie_every=5)))
        f.noise_runs.append(path)
    for (model, corpus), (noise, worse, s) in {
        ("old", "old"): (1.1, (), 1), ("new", "old"): (0.9, ("navigational",), 3),
        ("old", "new"): (1.0, (), 4), ("new", "new"): (0.8, ("navigational",), 2),
    }.items():
        path = root / f"cell-{model}-{corpus}.run"
        path.write_text(_trec(run(noise, f"{model}-{corpus}", random.Random(seed + s), worse=worse)))
        f.cells[(model, corpus)] = path
    f.cell_missing.write_text(_trec(run(0.8, "new-new", random.Random(seed + 2), worse=("navigational",),
                                        skip={_qid(judged[0]), _qid(judged[5])})))
    return f


# --------------------------------------------------------------------------- the git repository


def git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-c", "user.email=matrix@example.com", "-c", "user.name=matrix",
                           "-c", "commit.gpgsign=false", *args],
                          cwd=cwd, check=True, capture_output=True, text=True)
    return proc.stdout.strip()


@dataclass
class Repo:
    root: Path
    config: Path          # .retrieval-gate.yml (command runner)
    runfile_config: Path  # gate-runfile.yml (runner.type: run-file)
    base: str             # base commit: config, golden set, archived baseline
    head: str             # PR commit: retrieval config changed
    baseline_run: Path    # a precomputed run of the base retrieval config (for --run, run-file)
    candidate_run: Path   # a precomputed run of the PR's retrieval config (for --candidate-run)
    files: Files


BASE_RETRIEVAL = "ingestion:\n  parser: v1\nbm25:\n  k1: 0.9\nboost: 1.0\n"
PR_RETRIEVAL = "ingestion:\n  parser: v2\nbm25:\n  k1: 0.9\nboost: 2.0\n"


def _runner_command() -> str:
    return (f"\"{sys.executable} {RUNNER} --config {{config}} --queries {{queries}} --corpus {{corpus}}"
            " --output {run} --seed {seed}\"")


def _produce(root: Path, retrieval_text: str, corpus: Path, queries: Path, out: Path, seed: int = 0) -> Path:
    config = root / ".matrix-tmp-config.yml"
    config.write_text(retrieval_text)
    subprocess.run([sys.executable, str(RUNNER), "--config", str(config), "--queries", str(queries),
                    "--corpus", str(corpus), "--output", str(out), "--seed", str(seed)], check=True)
    config.unlink()
    return out


def build_repo(root: Path, files: Files) -> Repo:
    """A repository whose base commit has an archived baseline and whose HEAD is a PR."""
    from gate.inputs.config import load_config
    from gate.pipeline.archive import archive

    root.mkdir(parents=True, exist_ok=True)
    (root / "eval").mkdir(exist_ok=True)
    # The golden set: the judged topics plus 8 that are not judged yet (left out and counted).
    judged = set(files.judged_ids)
    rows = [json.loads(line) for line in files.queries_jsonl.read_text().splitlines()]
    extra = [r["query_id"] for r in rows if r["query_id"] not in judged][:8]
    keep = judged | set(extra)
    (root / "eval" / "golden.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows if r["query_id"] in keep))
    (root / "eval" / "qrels.txt").write_text(files.qrels.read_text())
    corpus_rows = [json.loads(line) for line in files.corpus.read_text().splitlines()]
    wanted = {doc for qid in keep for doc in files.own[qid]}
    small = [d for d in corpus_rows if d["id"] in wanted] + \
        [d for d in corpus_rows if d["id"].startswith("misc/")][:40]
    v1 = "".join(json.dumps(d) + "\n" for d in small)
    (root / "corpus-v1.jsonl").write_text(v1)
    # v2 keeps the tables: one more chunk per page, no leaks.
    (root / "corpus-v2.jsonl").write_text(v1 + "".join(
        json.dumps({"id": d["id"] + "-table", "title": d["title"], "text": d["text"] + " | table row"}) + "\n"
        for d in small[:60]))
    (root / "retrieval").mkdir(exist_ok=True)
    (root / "retrieval" / "config.yml").write_text(BASE_RETRIEVAL)
    (root / "requirements.lock").write_text("numpy==2.0\n")
    common = (
        "golden:\n  queries: eval/golden.jsonl\n  qrels: eval/qrels.txt\n  rel: 1\n"
        "corpus: corpus-{ingestion.parser}.jsonl\n"
        "metric: nDCG@10\n"
        "also: [RR@10, R@100, Judged@10]\n"
        "retrieval:\n  config: retrieval/config.yml\n"
        "statistics:\n  samples: 500\n"
        "environment: [requirements.lock]\n"
        "strata:\n  shares: {" + ", ".join(f"{k}: {v}" for k, v in SHARES.items()) + "}\n"
        "  guarded: [navigational]\n"
        "noise:\n  repeats: 2\n"
    )
    (root / ".retrieval-gate.yml").write_text(
        "suite: matrix\n" + common + "runner:\n  type: command\n  command: " + _runner_command() + "\n  timeout: 60\n")
    (root / "runs").mkdir(exist_ok=True)
    baseline_run = _produce(root, BASE_RETRIEVAL, root / "corpus-v1.jsonl", root / "eval" / "golden.jsonl",
                            root / "runs" / "baseline.run")
    candidate_run = _produce(root, PR_RETRIEVAL, root / "corpus-v2.jsonl", root / "eval" / "golden.jsonl",
                             root / "runs" / "candidate.run")
    # Pool the top 20 of both runs into the qrels (unjudged documents judged 0), as TREC assessors would.
    qrels_lines = files.qrels.read_text().splitlines()
    judged_pairs = {(p[0], p[2]) for p in (line.split() for line in qrels_lines) if len(p) == 4}
    pooled = []
    for run_path in (baseline_run, candidate_run):
        depth: dict[str, int] = {}
        for line in run_path.read_text().splitlines():
            qid, _, doc = line.split()[:3]
            depth[qid] = depth.get(qid, 0) + 1
            if qid in judged and depth[qid] <= 20 and (qid, doc) not in judged_pairs:
                judged_pairs.add((qid, doc))
                pooled.append(f"{qid} 0 {doc} 0")
    (root / "eval" / "qrels.txt").write_text("\n".join(qrels_lines + pooled) + "\n")
    (root / "gate-runfile.yml").write_text(
        "suite: matrix-runfile\n" + common
        + "baseline:\n  manifest: .retrieval-gate/runfile-baseline/manifest.yml\n"
        + "runner:\n  type: run-file\n  baseline_run: runs/baseline.run\n  candidate_run: runs/candidate.run\n")
    (root / ".gitignore").write_text(".retrieval-gate/cache/\n.retrieval-gate/work/\n.retrieval-gate/out/\n")
    git(root, "init", "-q", "-b", "main")
    archive(load_config(root / ".retrieval-gate.yml"), progress=lambda m: None)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base: golden set, archived baseline")
    base = git(root, "rev-parse", "HEAD")
    (root / "retrieval" / "config.yml").write_text(PR_RETRIEVAL)
    git(root, "commit", "-qam", "PR: keep tables (parser v2), title boost 2.0")
    head = git(root, "rev-parse", "HEAD")
    return Repo(root=root, config=root / ".retrieval-gate.yml", runfile_config=root / "gate-runfile.yml", base=base,
                head=head, baseline_run=baseline_run, candidate_run=candidate_run, files=files)
