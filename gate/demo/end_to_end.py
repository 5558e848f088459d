"""``retrieval-gate demo``: the whole gate, offline, on a generated docs-search world.

The story, in commits of a generated repository:

1. the baseline: the old embedding model on the old ingestion parser, archived
   on golden set v4 (80 queries, older qrels);
2. the golden set grows to v5 (140 queries in six strata) and the noise band
   is measured from identical runs of the baseline (a noisy ANN index);
3. a pull request changes two things at once: the embedding model and the
   ingestion parser (which fixes dropped tables - and brings in a freshly
   published FAQ page that quotes nine golden queries).

Between 1 and 2, two small PRs land on main on golden v4 (a fusion weight tried, then put
back); the archive workflow's job is done by the demo itself: every main commit is archived to
``baselines/<sha>/`` of the ``retrieval-gate-baselines`` branch, so ``retrieval-gate history``
has a series with one break (golden v4 -> v5), and the PR's comment a trend.

Then the gate runs exactly as the Action would on that PR (the merge commit
checked out, the yardstick read from the base commit), minus GitHub: no
comment is posted; the comment is printed and written beside the report.
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from io import StringIO
from pathlib import Path

from gate.action import main as action_main
from gate.common.environment import scrubbed_environment
from gate.common.errors import InputError
from gate.common.jsontext import json_text
from gate.demo.archive_branch import commit_baseline
from gate.demo.search_service import make_app, serve
from gate.demo.world import RETRIEVAL_NEW, RETRIEVAL_OLD, World, build_world, mapped_judgments
from gate.inputs.config import Config, NoiseConfig, load_config
from gate.inputs.golden import load_golden
from gate.inputs.manifest import run_to_trec_gz
from gate.inputs.readers.corpus import iter_corpus
from gate.inputs.readers.queries import read_queries
from gate.inputs.retrieval_config import load_retrieval_config
from gate.pipeline.archive import archive
from gate.pipeline.history import build_history
from gate.pipeline.stack import make_producer, measures_of, runner_queries_path
from gate.rendering.history import write_history
from gate.runs.reference import clear_caches, prefetch, retrieve, settings_from_config, snapshot_path
from gate.statistics.band import measure_noise
from gate.verdict.calibration import calibrate

Progress = Callable[[str], None]


@dataclass(frozen=True)
class DemoResult:
    out: Path
    repo: Path
    world: World
    report: dict
    comment: str
    exit_code: int
    seconds: float
    history: Path | None = None  # the history page (index.html)


#: Fixed dates: the same seed makes the same commits, so the same report.
DEMO_DATE = "2024-09-14T12:00:00Z"


def _git_env(date: str = DEMO_DATE) -> dict[str, str]:
    return scrubbed_environment(extra={"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date,
                                       "GIT_AUTHOR_NAME": "retrieval-gate demo",
                                       "GIT_AUTHOR_EMAIL": "demo@retrieval-gate.invalid",
                                       "GIT_COMMITTER_NAME": "retrieval-gate demo",
                                       "GIT_COMMITTER_EMAIL": "demo@retrieval-gate.invalid"})


def _git(repo: Path, *args: str, date: str = DEMO_DATE) -> str:
    env = _git_env(date)
    proc = subprocess.run(["git", "-c", "user.email=demo@retrieval-gate.invalid", "-c", "user.name=retrieval-gate demo",
                           "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args],
                          cwd=repo, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout.strip()


#: ``retrieval-gate demo --runner``: the reference retriever in process, or served over HTTP.
RUNNERS = ("reference", "http")

#: The in-process runner's block of the demo's gate config.
REFERENCE_RUNNER = """\
runner:
  type: reference
  timeout: 600
"""

#: The environment variable the HTTP runner's Authorization header names: the demo sets it (and
#: the service requires it), so the secret path of runner.http.headers is taken on every request.
DEMO_TOKEN_VARIABLE = "RETRIEVAL_GATE_DEMO_SEARCH_TOKEN"

#: The HTTP runner's block: one POST a query to the reference retriever served by
#: gate.demo.search_service, with the request's retrieval config, corpus and seed in the body.
HTTP_RUNNER = """\
runner:
  type: http
  http:
    # The reference retriever served on this machine (gate.demo.search_service).
    url: "SERVICE_URL"
    body:
      query: "{query}"
      query_id: "{query_id}"
      corpus: "{corpus}"
      config: "{config}"
      size: "{depth}"
      seed: "{seed}"
    hits: hits
    id: id
    score: score
    latency: took_ms
    headers:
      Authorization: "Bearer ${TOKEN_VARIABLE}"
    depth: 100
    concurrency: 4
    # generous: the first query of a new index waits for the index to be built
    timeout: 300
""".replace("TOKEN_VARIABLE", DEMO_TOKEN_VARIABLE)


@contextmanager
def demo_runner(runner: str, repo: Path, token: str | None = None) -> Iterator[str]:
    """The runner block of the demo's gate config. For ``http``, the reference retriever is served on
    127.0.0.1 (corpora under ``repo`` only) while the block is in use, and the token the block's
    header names is in the environment (``token``, else a random one; removed after)."""
    if runner not in RUNNERS:
        raise InputError(None, None, f"unknown demo runner {runner!r} (known: {', '.join(RUNNERS)})")
    if runner == "reference":
        yield REFERENCE_RUNNER
        return
    token = token or secrets.token_urlsafe(24)
    previous = os.environ.get(DEMO_TOKEN_VARIABLE)
    os.environ[DEMO_TOKEN_VARIABLE] = token
    try:
        with serve(make_app(repo, token=token)) as service:
            yield HTTP_RUNNER.replace("SERVICE_URL", service.url)
    finally:
        if previous is None:
            os.environ.pop(DEMO_TOKEN_VARIABLE, None)
        else:
            os.environ[DEMO_TOKEN_VARIABLE] = previous


def gate_config(world: World, samples: int, runner_block: str = REFERENCE_RUNNER) -> str:
    strata = world.strata.read_text(encoding="utf-8").rstrip()
    return f"""\
# The gate config of the demo repository (see README: the config reference).
suite: docs-search
golden:
  queries: eval/golden.jsonl
  # Anchored to pages and spans of the sources, mapped onto each side's own chunks.
  qrels: eval/judgments.jsonl
  rel: 1
# The snapshot a retrieval config indexes: its ingestion parser picks it.
corpus: world/corpus-{{ingestion.parser}}.jsonl
metric: nDCG@10
also: [RR@10, R@100, Judged@10]
retrieval:
  config: retrieval/config.yml
{runner_block.rstrip()}
baseline:
  manifest: .retrieval-gate/baseline/manifest.yml
noise:
  file: .retrieval-gate/noise.json
attribution:
  factors:
    model: [embedding]
    corpus: [ingestion]
statistics:
  samples: {samples}
  seed: 7
{strata}
"""


#: The seed of the judging rounds' systems (pool_judgments) and of the gate's own runs (the
#: archive, the replay, the candidate, the grid cells: the runner's default).
POOL_SEED, RUN_SEED = 1, 0


def pool_judgments(judgments_path: Path, queries_path: Path, corpus_dir: Path, configs: list[Path],
                   depth: int = 10, seed: int = POOL_SEED) -> int:
    """The judging round: every chunk in the top ``depth`` of the given systems that the judgments,
    mapped onto that system's own snapshot, do not grade yet is judged, as TREC pools are. The
    world's judgments already grade every passage that answers a query, so the labeller marks the
    pooled chunk's passage not relevant: a span graded 0 over the chunk's source range, appended to
    the anchored judgments file (``judgments_path``). Returns how many judgments were added."""
    rows = [json.loads(line) for line in judgments_path.read_text(encoding="utf-8").splitlines() if line]
    queries = [(q.query_id, q.text) for q in read_queries(queries_path).queries]
    added: list[dict] = []
    for config_path in configs:
        settings = settings_from_config(load_retrieval_config(config_path).data, str(config_path))
        corpus = snapshot_path(str(corpus_dir / "corpus-v1.jsonl"), settings.parser)
        chunks = {chunk.chunk_id: chunk for chunk in iter_corpus(corpus)}
        judged = mapped_judgments(rows + added, list(chunks.values()))
        results = retrieve(settings, queries, corpus, seed)
        for qid, ranked in results.items():
            graded = judged.get(qid, {})
            for chunk_id, _ in ranked[:depth]:
                chunk = chunks[chunk_id]
                if chunk_id not in graded and chunk.start is not None:
                    added.append({"query_id": qid, "doc_id": chunk.doc_id, "start": chunk.start, "end": chunk.end,
                                  "grade": 0})
                    graded = {**graded, chunk_id: 0}
    if added:
        with open(judgments_path, "a", encoding="utf-8") as handle:
            handle.write("".join(json.dumps(row) + "\n" for row in added))
    return len(added)


def prefetch_indexes(world: World, repeats: int):
    """Start building, on the machine's other core, the HNSW index of every run the demo makes,
    in the order it makes them (:func:`gate.runs.reference.prefetch`: the numbers do not change,
    each index is the same bytes whichever thread builds it). Returns the future of the builds."""


    def run(config: dict, parser: str, seed: int):
        settings = settings_from_config({**config, "ingestion": {"parser": parser}}, "demo")
        return settings, snapshot_path(str(world.corpus_v1), parser), seed

    base = NoiseConfig().base_seed  # the demo config keeps the default
    runs = [run(RETRIEVAL_OLD, "v1", POOL_SEED), run(RETRIEVAL_NEW, "v2", POOL_SEED),
            run(RETRIEVAL_OLD, "v1", RUN_SEED)]
    runs += [run(RETRIEVAL_OLD, "v1", base + repeat) for repeat in range(1, repeats + 1)]
    runs += [run(RETRIEVAL_NEW, "v2", RUN_SEED), run(RETRIEVAL_OLD, "v2", RUN_SEED), run(RETRIEVAL_NEW, "v1", RUN_SEED)]
    return prefetch(runs, workers=min(2, os.cpu_count() or 1))


def archive_to_branch(config: Config, repo: Path, date: str, progress: Progress, noise_repeats: int = 0) -> None:
    """What the archive workflow does after a push to main: archive HEAD (into a scratch folder:
    the baseline committed on main stays the one PRs are measured against; with its noise band
    when ``noise_repeats``, as RETRIEVAL_GATE_NOISE_REPEATS does) and commit the folder to
    ``baselines/<sha>/`` of the baselines branch."""
    scratch = ".retrieval-gate/work/archive-main/manifest.yml"
    archived = archive(dataclasses.replace(config, baseline=dataclasses.replace(config.baseline, manifest=scratch)),
                       progress=lambda _: None, noise_repeats=noise_repeats)
    sha = _git(repo, "rev-parse", "HEAD")
    commit_baseline(repo, sha, archived.manifest.folder, _git_env(date))
    shutil.rmtree(archived.manifest.folder)
    progress(f"archived {sha[:12]} to the baselines branch: {archived.manifest.metric} {archived.mean:.3f}")


def small_main_changes(world: World, repo: Path, progress: Progress) -> None:
    """Two PRs merged on golden v4 (no new ANN index: only the fusion weight), each archived; the
    second puts the baseline's retrieval config back byte for byte, so the PR below is measured
    against the same baseline as before."""
    config = load_config(repo / ".retrieval-gate.yml")
    old = world.retrieval_old.read_text(encoding="utf-8")
    tried = old.replace("  weight: 0.4\n", "  weight: 0.6\n")
    assert tried != old  # the fusion block of RETRIEVAL_OLD
    for subject, text, date in (("Fusion weight 0.6 for keyword-heavy queries (#2)", tried, "2024-09-14T12:10:00Z"),
                                ("Fusion weight back to 0.4: #2 hurt navigational queries (#3)", old,
                                 "2024-09-14T12:20:00Z")):
        (repo / "retrieval" / "config.yml").write_text(text, encoding="utf-8")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", subject, date=date)
        archive_to_branch(config, repo, date, progress)


def write_history_page(repo: Path, out: Path) -> Path:
    """``retrieval-gate history`` on the demo repository's baselines branch."""
    config = load_config(repo / ".retrieval-gate.yml")
    return write_history(build_history(config, env={}), out)


def _stderr_progress(message: str) -> None:
    print(f"[demo] {message}", file=sys.stderr, flush=True)


def _story(out: Path, repo: Path, world: World, samples: int, repeats: int, runner_block: str,
           progress: Progress) -> int:
    """The demo repository's history, then the gate on its pull request (module docstring), with
    ``runner_block`` as the gate config's runner. Returns the Action's exit code."""
    (repo / "eval").mkdir()
    (repo / "retrieval").mkdir()
    (repo / ".gitignore").write_text(".retrieval-gate/cache/\n.retrieval-gate/work/\n.retrieval-gate/out/\n")
    (repo / ".retrieval-gate.yml").write_text(gate_config(world, samples, runner_block))
    shutil.copyfile(world.golden_v4, repo / "eval" / "golden.jsonl")
    shutil.copyfile(world.judgments_v4, repo / "eval" / "judgments.jsonl")
    shutil.copyfile(world.retrieval_old, repo / "retrieval" / "config.yml")
    _git(repo, "init", "-q")

    progress("archiving the baseline on golden v4 (old model, parser v1)")
    config = load_config(repo / ".retrieval-gate.yml")
    archived = archive(config, progress=progress)
    progress(f"archived {archived.manifest.metric} {archived.mean:.3f} on {archived.query_count} queries")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "Archive the baseline on golden v4")
    commit_baseline(repo, _git(repo, "rev-parse", "HEAD"), archived.manifest.folder, _git_env())
    small_main_changes(world, repo, progress)

    progress("the golden set grows to v5; measuring the noise band of the baseline")
    shutil.copyfile(world.golden_v5, repo / "eval" / "golden.jsonl")
    shutil.copyfile(world.judgments_v5, repo / "eval" / "judgments.jsonl")
    config = load_config(repo / ".retrieval-gate.yml")
    golden = load_golden(config)
    primary, _ = measures_of(config)
    producer = make_producer(config, None, progress)
    retrieval_path = config.here(config.retrieval_config)
    assert retrieval_path is not None  # here() of a str is a Path
    baseline_retrieval = load_retrieval_config(retrieval_path)
    measured = measure_noise(baseline_retrieval, golden, primary, producer,
                             runner_queries_path(golden, producer.work_dir), repeats, config.golden.rel,
                             config.noise.invalidate_on, config.noise.base_seed, progress)
    band = measured.band
    # The gate's false-alarm rate on this stack: every pair of the identical runs through the
    # decision (retrieval-gate calibrate --from-runs on the repeats kept beside the band). The
    # repeats are baseline runs: they are scored with the judgments mapped onto the baseline's chunks.
    calibration = calibrate(measured.runs, golden.qrels_for(baseline_retrieval), golden.universe.query_ids,
                            str(primary), config.golden.rel, policy=config.policy, samples=config.statistics.samples,
                            seed=config.statistics.seed, noise_threshold=band.overall.threshold)
    progress(f"calibration: {calibration.sentence}")
    assert calibration.setup is not None  # calibrate() always runs the setup check
    progress(f"setup ({config.policy.mode} mode): {calibration.setup['sentence']}")
    for k, repeat_run in enumerate(measured.runs, start=1):
        target = repo / ".retrieval-gate" / "noise-runs" / f"repeat-{k}.run.gz"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(run_to_trec_gz(repeat_run))
    (repo / ".retrieval-gate" / "noise.json").write_text(
        json_text({**band.to_dict(), "calibration": calibration.to_dict()}, ascii=True))
    progress(f"noise band: sd {band.overall.sd:.4f}, range {band.overall.range:.4f}, "
             f"threshold {band.threshold:.4f} from {band.runs} runs")
    _git(repo, "add", "-A")
    v5_date = "2024-09-14T12:30:00Z"
    _git(repo, "commit", "-qm", "Golden set v5 (140 queries) and the noise band", date=v5_date)
    base = _git(repo, "rev-parse", "HEAD")
    archive_to_branch(config, repo, v5_date, progress, noise_repeats=repeats)

    progress("opening the pull request: new embedding model + ingestion parser v2")
    _git(repo, "checkout", "-q", "-b", "pr")
    shutil.copyfile(world.retrieval_new, repo / "retrieval" / "config.yml")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "New embedding model; ingestion keeps tables")
    head = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "--detach", base)
    _git(repo, "merge", "-q", "--no-ff", "-m", f"Merge {head[:12]} into {base[:12]}", head)

    event = out / "event.json"
    event.write_text(json.dumps({
        "action": "synchronize", "number": 1,
        "pull_request": {"number": 1, "head": {"sha": head, "repo": {"full_name": "demo/docs-search"}},
                         "base": {"sha": base, "repo": {"full_name": "demo/docs-search"}},
                         "labels": [], "body": "New embedding model and the ingestion fix, together."},
        "repository": {"full_name": "demo/docs-search"},
    }))
    progress("running the gate as the Action would (minus GitHub)")
    log = StringIO()

    class Echo(StringIO):
        def write(self, text: str) -> int:
            for line in text.splitlines():
                if line.startswith("[retrieval-gate]"):
                    progress(line[len("[retrieval-gate] "):])
            return log.write(text)

    env = {
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_WORKSPACE": str(repo),
        "INPUT_TOKEN": "demo-no-github",
        "INPUT_CONFIG-PATH": ".retrieval-gate.yml",
        "INPUT_COMMENT-MODE": "off",
    }
    code = action_main(env, stdout=Echo())
    (out / "action.log").write_text(log.getvalue(), encoding="utf-8")
    produced = repo / ".retrieval-gate" / "out"
    if not (produced / "report.json").exists():
        raise RuntimeError(f"the gate did not write a report (exit {code}); see {out / 'action.log'}")
    for name in ("report.json", "report.md", "comment.md"):
        shutil.copyfile(produced / name, out / name)
    return code


def run_demo(out: str | Path, seed: int = 7, scale: float = 1.0, repeats: int = 5, samples: int = 10_000,
             progress: Progress = _stderr_progress, runner: str = "reference",
             http_token: str | None = None) -> DemoResult:
    """The demo (module docstring) in ``out``. ``runner``: ``reference`` ranks in process, ``http``
    asks the same retriever served over HTTP (:func:`demo_runner`; ``http_token``: its bearer
    token, random when None): the same numbers either way."""
    started = time.monotonic()
    try:
        out = Path(out).resolve()
        repo = out / "repo"
        if repo.exists():
            shutil.rmtree(repo)
        repo.mkdir(parents=True)
    except OSError as error:  # a read-only place, or a working folder that was deleted
        raise InputError(str(out), None, f"cannot create the demo folder: {error.strerror or error}") from None
    clear_caches()

    progress(f"building the world (seed {seed}, scale {scale})")
    world = build_world(repo / "world", seed=seed, scale=scale)
    progress(f"world: {world.pages} pages, {world.chunks_v1} chunks with parser v1, {world.chunks_v2} with v2; "
             f"golden v4 {world.queries_v4} queries, v5 {world.queries_v5}")
    built = prefetch_indexes(world, repeats)
    added_v4 = pool_judgments(world.judgments_v4, world.golden_v4, world.corpus_v1.parent, [world.retrieval_old])
    added_v5 = pool_judgments(world.judgments_v5, world.golden_v5, world.corpus_v1.parent,
                              [world.retrieval_old, world.retrieval_new])
    progress(f"judging rounds: {added_v4} pooled chunks judged for v4, {added_v5} for v5 (top 10 of each system)")
    with demo_runner(runner, repo, http_token) as runner_block:
        code = _story(out, repo, world, samples, repeats, runner_block, progress)
    built.result()  # every index it started was asked for by now; nothing is left running
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    comment = (out / "comment.md").read_text(encoding="utf-8")
    page = write_history_page(repo, out / "history")
    return DemoResult(out, repo, world, report, comment, code, time.monotonic() - started, page)
