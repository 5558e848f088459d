"""Archive, commensurability (reuse / rescore / replay / reconstruct) and `run`, on real files.

The archived baseline is TREC DL 2019's official `bm25base_p` run. The golden
set grows in two steps, as in the seed: first the qrels grow from 30 judged
topics to all 43 (re-score: the archived lists cover them), then new queries
arrive that the archived lists never saw (replay: a command runner - a small
real script in tests/support/runners - runs the archived config against today's set).
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gate.cli import main
from gate.common.errors import InputError
from gate.inputs.config import load_config
from gate.pipeline.archive import archive
from gate.pipeline.replay import replay
from gate.pipeline.run import run_gate
from gate.pipeline.stack import RunOptions
from tests.shared_data import REALDATA

RUNNER = Path(__file__).resolve().parents[1] / "support" / "runners" / "overlap_runner.py"
NEW_QUERIES = {
    "q_new_1": "webhook signature verification failed",
    "q_new_2": "rate limit exceeded retry after header",
}
NEW_DOCS = [
    {"id": "doc_a", "title": "Webhook signatures",
     "text": "verify the webhook signature with your secret; a failed verification returns ERR_WEBHOOK_SIGNATURE"},
    {"id": "doc_b", "title": "Rate limits",
     "text": "when the rate limit is exceeded the API answers 429 with a retry after header"},
    {"id": "doc_c", "title": "Pagination", "text": "use the cursor parameter to page through results"},
    {"id": "doc_d", "title": "Errors", "text": "error responses carry a code and a message; retry after a delay"},
]


_REAL = REALDATA / "runs" / "trec-dl-2019-passage"
_STAND_IN: list[Path] = []


def _dl19() -> Path:
    """TREC DL 2019 (passage) when ../shared is beside the project; otherwise a generated folder
    of the same shape - 200 topics, 43 of them judged with graded labels, and two runs over all
    200 (a weaker "bm25base_p", a stronger "p_bert") - so the tests run on a fresh clone too.
    Only the NIST figure itself is checked on the real files alone."""
    if _REAL.is_dir():
        return _REAL
    if not _STAND_IN:
        import tempfile

        root = Path(tempfile.mkdtemp(prefix="retrieval-gate-dl19-stand-in-"))
        root.chmod(0o755)  # the runner command reads its run from here, from its box (another uid)
        for folder in ("qrels", "topics", "official_nist"):
            (root / folder).mkdir()
        topics = [str(100000 + 7 * i) for i in range(200)]
        judged = topics[-43:]  # the file's last topics are judged, as some of DL19's are
        (root / "topics" / "topics.dl19-passage.txt").write_text(
            "".join(f"{t}\twhat is topic {t} about\n" for t in topics))
        grades = [3, 2, 2, 1, 1, 1] + [0] * 34  # judged to depth 40, as NIST pools the top of each run
        (root / "qrels" / "qrels.dl19-passage.txt").write_text(
            "".join(f"{t} 0 d{t}_{k} {g}\n" for t in judged for k, g in enumerate(grades)))
        for name, ranks in (("bm25base_p", (2, 5, 9, 14, 30, 60)), ("p_bert", (0, 1, 3, 4, 8, 20))):
            lines = []
            for n, t in enumerate(topics):
                shift = n % 3  # queries differ, so a comparison has movers
                order = [f"d{t}_{k}" for k in range(6, 100)]
                for k, rank in enumerate(ranks):
                    order.insert(min(rank + shift, len(order)), f"d{t}_{k}")
                lines += [f"{t} Q0 {doc} {r + 1} {100.0 - r:.1f} {name}" for r, doc in enumerate(order[:100])]
            with gzip.open(root / "official_nist" / f"input.{name}.gz", "wt") as out:
                out.write("\n".join(lines) + "\n")
        _STAND_IN.append(root)
    return _STAND_IN[0]


def _write_world(tmp: Path, *, judged_topics: int | None, with_new_queries: bool, runner_config: dict) -> Path:
    """Write a repo-like folder: gate config, golden files, corpus, retrieval config."""
    dl19 = _dl19()
    qrels_lines = (dl19 / "qrels" / "qrels.dl19-passage.txt").read_text().splitlines()
    topics = sorted({line.split()[0] for line in qrels_lines if line.strip()})
    keep = set(topics[:judged_topics]) if judged_topics else set(topics)
    (tmp / "eval").mkdir(exist_ok=True)
    qrels = [line for line in qrels_lines if line.split() and line.split()[0] in keep]
    queries = (dl19 / "topics" / "topics.dl19-passage.txt").read_text().splitlines()
    if with_new_queries:
        qrels += ["q_new_1 0 doc_a 2", "q_new_1 0 doc_d 0", "q_new_2 0 doc_b 3", "q_new_2 0 doc_d 1"]
        queries += [f"{qid}\t{text}" for qid, text in NEW_QUERIES.items()]
    (tmp / "eval" / "qrels.txt").write_text("\n".join(qrels) + "\n")
    (tmp / "eval" / "queries.tsv").write_text("\n".join(queries) + "\n")
    (tmp / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in NEW_DOCS))
    (tmp / "retrieval").mkdir(exist_ok=True)
    config = {"copy_run": str(dl19 / "official_nist" / "input.bm25base_p.gz"), **runner_config}
    (tmp / "retrieval" / "config.yml").write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in config.items()))
    (tmp / ".retrieval-gate.yml").write_text(
        "suite: dl19\n"
        "golden:\n  queries: eval/queries.tsv\n  qrels: eval/qrels.txt\n  rel: 2\n"
        "corpus: corpus.jsonl\n"
        "metric: nDCG@10\n"
        "also: [RR@10, R@100, Judged@10]\n"
        "retrieval:\n  config: retrieval/config.yml\n"
        "runner:\n  type: command\n"
        f"  command: \"{sys.executable} {RUNNER} --config {{config}} --queries {{queries}} --corpus {{corpus}}"
        " --output {run} --seed {seed}\"\n"
        "  timeout: 600\n"  # never reached by a runner that works, however loaded the machine
        "statistics:\n  samples: 1000\n"
        "environment: [requirements.lock]\n"
    )
    (tmp / "requirements.lock").write_text("numpy==2.0\n")
    return tmp / ".retrieval-gate.yml"


def _silent(message: str) -> None:
    pass


@pytest.fixture()
def archived(tmp_path):
    """A baseline archived with qrels restricted to 30 of the 43 judged topics, on a commit (the
    code a replay is run from, and keyed on)."""
    config_path = _write_world(tmp_path, judged_topics=30, with_new_queries=False, runner_config={})
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "archived")
    result = archive(load_config(config_path), progress=_silent)
    assert result.query_count == 30
    return config_path, result


def test_identical_inputs_reuse_the_archived_values(archived):
    config_path, result = archived
    replayed = replay(load_config(config_path), progress=_silent)
    assert replayed.baseline.resolution == "reused"
    assert replayed.baseline.values.mean("nDCG@10") == pytest.approx(result.mean, abs=1e-12)


def test_grown_qrels_are_rescored_from_the_archived_lists(archived, tmp_path):
    config_path, result = archived
    _write_world(tmp_path, judged_topics=None, with_new_queries=False, runner_config={})
    replayed = replay(load_config(config_path), progress=_silent).baseline
    assert replayed.resolution == "rescored"
    assert [d.input for d in replayed.differences] == ["qrels"]
    assert len(replayed.values.query_ids) == 43
    assert replayed.archived["query_count"] == 30
    rescored = round(replayed.values.mean("nDCG@10"), 3)
    if _REAL.is_dir():  # NIST's official nDCG@10 for bm25base_p on all 43 topics: re-scoring reproduces it.
        assert round(replayed.values.mean("nDCG@10"), 4) == 0.5058
    assert "archived" in replayed.description and f"rescored {rescored:.3f}" in replayed.description
    assert replayed.produced is None  # no retrieval was run


def test_queries_absent_from_the_archived_lists_are_replayed_through_the_runner(archived, tmp_path):
    config_path, _ = archived
    _write_world(tmp_path, judged_topics=None, with_new_queries=True, runner_config={})
    replayed = replay(load_config(config_path), progress=_silent).baseline
    assert replayed.resolution == "replayed"
    assert {d.input for d in replayed.differences} == {"queries", "qrels"}
    assert len(replayed.values.query_ids) == 45
    assert replayed.produced.source == "runner"
    index = replayed.values.query_ids.index("q_new_1")
    assert replayed.values.values["nDCG@10"][index] > 0  # the runner really ranked doc_a
    # The same inputs again: a replay runs the archived commit's code, and is never read back
    # from the cache (the PR's own code could have rewritten that entry); same numbers.
    again = replay(load_config(config_path), progress=_silent).baseline
    assert again.produced.source == "runner"
    assert list(again.values.values["nDCG@10"]) == list(replayed.values.values["nDCG@10"])


def test_a_changed_environment_file_is_an_unattributed_change(archived, tmp_path):
    config_path, _ = archived
    # A same-size edit in the second git wrote its index can look unchanged to git's stat cache;
    # a real PR's files are never edited in the second of the checkout. Be a second later.
    time.sleep(max(0.0, 1.05 - (time.time() - (tmp_path / ".git" / "index").stat().st_mtime)))
    (tmp_path / "requirements.lock").write_text("numpy==2.1\n")
    replayed = replay(load_config(config_path), progress=_silent).baseline
    assert replayed.resolution == "reused"
    # The lock file is part of the code under test too: its tree differs from the archive commit's.
    assert [d.input for d in replayed.unattributed] == ["environment:requirements.lock", "code"]


def test_run_reports_resolution_config_diff_and_statistics(archived, tmp_path):
    config_path, _ = archived
    _write_world(tmp_path, judged_topics=None, with_new_queries=False, runner_config={"boost": 2.0})
    outcome = run_gate(load_config(config_path), progress=_silent)
    report = outcome.report
    assert report["baseline"]["resolution"] == "rescored"
    assert report["baseline"]["archived"]["query_count"] == 30
    assert report["config_diff"] == [{"path": "boost", "old": "<absent>", "new": 2.0}]
    assert report["query_count"] == 43
    # The candidate copies the same official run: it ranks every query exactly as the baseline.
    # That is "unchanged", a pass with nothing to judge - not the calibrated rule's
    # too_few_movers, which is for rankings that changed without moving the metric.
    assert report["delta"]["mean"] == 0.0 and report["delta"]["ci_low"] == 0.0
    assert report["verdict"]["kind"] == "pass"
    assert report["verdict"]["reasons"][0]["code"] == "unchanged"
    assert report["verdict"]["reasons"][0]["message"].startswith("no golden query's ranking changed (43 queries")
    assert report["decision"]["movers"] == 0 and report["delta"]["mde"] is None
    assert report["candidate"]["source"] == "runner"


@pytest.mark.parametrize(
    "runner_config, expected",
    [
        ({"fail": True}, "exited with code 3"),
        ({"sleep": 3600}, "timed out after"),
        ({"drop_queries": 5}, "misses 5 of 43 golden queries"),
    ],
)
def test_runner_failure_is_inconclusive_and_leaves_the_manifest_untouched(archived, tmp_path, capsys,
                                                                          runner_config, expected):
    config_path, result = archived
    manifest_before = result.manifest.manifest_path.read_bytes()
    files_before = sorted(p.name for p in result.manifest.folder.iterdir())
    _write_world(tmp_path, judged_topics=None, with_new_queries=False, runner_config=runner_config)
    if "sleep" in runner_config:  # only the runner that sleeps is to time out: 2 s against its hour
        text = (tmp_path / ".retrieval-gate.yml").read_text().replace("timeout: 600", "timeout: 2")
        (tmp_path / ".retrieval-gate.yml").write_text(text)
    code = main(["run", "--config", str(config_path), "--out", str(tmp_path / "out")])
    assert code == 3
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["verdict"]["kind"] == "inconclusive"
    assert report["verdict"]["reasons"][0]["code"] == "runner_failed"
    assert expected in report["verdict"]["reasons"][0]["message"]
    assert "delta" not in report
    assert "inconclusive" in capsys.readouterr().out
    # Archiving with the broken runner fails cleanly too, and changes nothing on disk.
    assert main(["archive", "--config", str(config_path)]) == 3
    assert result.manifest.manifest_path.read_bytes() == manifest_before
    assert sorted(p.name for p in result.manifest.folder.iterdir()) == files_before


def test_runner_subprocess_never_sees_the_github_token(tmp_path, monkeypatch):
    drop = tmp_path / "drop"
    drop.mkdir()
    drop.chmod(0o777)  # the runner writes its environment here from its box (another uid)
    dump = drop / "env.json"
    config_path = _write_world(tmp_path, judged_topics=30, with_new_queries=False,
                               runner_config={"env_dump": str(dump)})
    text = config_path.read_text().replace("  timeout: 600\n",
                                           "  timeout: 600\n  env_passthrough: [EMBEDDING_API_KEY]\n")
    config_path.write_text(text)
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_secret_value_1")
    monkeypatch.setenv("INPUT_TOKEN", "ghs_secret_value_2")
    monkeypatch.setenv("ACTIONS_RUNTIME_TOKEN", "secret3")
    monkeypatch.setenv("MY_DB_PASSWORD", "secret4")
    monkeypatch.setenv("EMBEDDING_API_KEY", "allowed-by-passthrough")
    monkeypatch.setenv("HARMLESS_SETTING", "visible")
    archive(load_config(config_path), progress=_silent)
    seen = json.loads(dump.read_text())
    for name in ("GITHUB_TOKEN", "INPUT_TOKEN", "ACTIONS_RUNTIME_TOKEN", "MY_DB_PASSWORD"):
        assert name not in seen
    assert not any("ghs_secret_value" in value for value in seen.values())
    assert seen["EMBEDDING_API_KEY"] == "allowed-by-passthrough"
    assert seen["HARMLESS_SETTING"] == "visible"
    assert seen["RETRIEVAL_GATE_REPEAT"] == "0"


def test_archive_is_atomic_when_writing_the_manifest_fails(archived, tmp_path, monkeypatch):
    config_path, result = archived
    before = result.manifest.manifest_path.read_bytes()
    _write_world(tmp_path, judged_topics=None, with_new_queries=False, runner_config={})
    import gate.inputs.manifest

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(gate.inputs.manifest, "write_text_atomic", crash)
    with pytest.raises(OSError):
        archive(load_config(config_path), progress=_silent)
    assert result.manifest.manifest_path.read_bytes() == before
    monkeypatch.undo()
    # The data files the crashed archive left are orphans; gc removes exactly those.
    assert main(["archive", "--config", str(config_path), "--gc"]) == 0
    names = {p.name for p in result.manifest.folder.iterdir()}
    from gate.inputs.manifest import load_manifest, referenced_files

    assert names == referenced_files(load_manifest(result.manifest.manifest_path)) | {"manifest.yml"}


def test_gc_removes_a_dead_writers_temp_file_and_keeps_a_live_ones(archived):
    """An archive still writing beside ``--gc`` keeps its temporary file; a killed one's goes,
    and so does an older gate's, whose name does not say its writer."""
    from gate.common import atomic

    _config_path, result = archived
    folder = result.manifest.folder
    live = folder / f".run.tsv.{atomic.owner_tag()}.abc123.tmp"
    dead = folder / ".run.tsv.rg-999999999-1-0.abc124.tmp"
    legacy = folder / ".run.tsv.k2j3h4.tmp"
    for path in (live, dead, legacy):
        path.write_text("x")
    assert main(["archive", "--config", str(_config_path), "--gc"]) == 0
    assert live.exists() and not dead.exists() and not legacy.exists()


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=cwd, check=True,
                   capture_output=True)


def test_without_a_manifest_the_base_commit_config_is_reconstructed(tmp_path):
    config_path = _write_world(tmp_path, judged_topics=None, with_new_queries=False, runner_config={})
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "base")
    (tmp_path / "retrieval" / "config.yml").write_text(
        (tmp_path / "retrieval" / "config.yml").read_text() + "boost: 3.0\n")
    outcome = run_gate(load_config(config_path), RunOptions(base="HEAD"), progress=_silent)
    assert outcome.report["baseline"]["resolution"] == "reconstructed"
    assert "reconstructed, not archived" in outcome.report["baseline"]["description"]
    assert outcome.report["config_diff"] == [{"path": "boost", "old": "<absent>", "new": 3.0}]
    # An unreadable base is the user's typo (or a shallow checkout): one line, exit 2 - never a
    # comparison with whatever a fallback finds, and never with the PR's own config.
    with pytest.raises(InputError) as caught:
        run_gate(load_config(config_path), RunOptions(base="0" * 40), progress=_silent)
    assert caught.value.message.startswith(f"--base {'0' * 40}: no such commit in ")


def test_no_manifest_and_no_base_is_inconclusive(tmp_path):
    config_path = _write_world(tmp_path, judged_topics=None, with_new_queries=False, runner_config={})
    outcome = run_gate(load_config(config_path), progress=_silent)
    assert outcome.verdict.kind == "inconclusive" and outcome.verdict.exit_code == 3
    assert "no baseline" in outcome.verdict.reasons[0].message


def test_plan_then_runs_dir_works_without_a_runner(archived, tmp_path, capsys):
    config_path, _ = archived
    _write_world(tmp_path, judged_topics=None, with_new_queries=True, runner_config={"boost": 2.0})
    text = config_path.read_text()
    command_line = next(line for line in text.splitlines() if line.strip().startswith("command:"))
    config_path.write_text(text.replace("type: command", "type: run-file").replace(command_line + "\n", ""))
    assert main(["plan", "--config", str(config_path), "--runs-dir", str(tmp_path / "runs"), "--format", "json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    assert [p["purpose"] for p in planned] == ["baseline replay", "candidate"]
    assert all(p["needed"] for p in planned)
    # An earlier workflow step produces each planned run with the team's own stack.
    for item in planned:
        subprocess.run([sys.executable, str(RUNNER), "--config", item["config_file"], "--queries", item["queries"],
                        "--corpus", item["corpus"], "--output", item["output"]], check=True)
    code = main(["run", "--config", str(config_path), "--runs-dir", str(tmp_path / "runs"),
                 "--out", str(tmp_path / "out"), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert report["baseline"]["resolution"] == "replayed"
    assert report["baseline"]["run_source"] == "runs-dir"
    assert report["candidate"]["source"] == "runs-dir"
    assert code == report["verdict"]["exit_code"]


def test_run_and_replay_commands_write_schema_valid_reports(archived, tmp_path, capsys):
    import jsonschema

    from tests.shared_data import REPO

    config_path, _ = archived
    # The candidate is another official run (p_bert): queries really move, and it passes.
    better = str(_dl19() / "official_nist" / "input.p_bert.gz")
    _write_world(tmp_path, judged_topics=None, with_new_queries=False, runner_config={"boost": 2.0, "copy_run": better})
    assert main(["replay", "--config", str(config_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("archived 0.") and "on eval/queries.tsv (43 q, eval/qrels.txt)" in out
    assert "-> rescored 0.506" in out if _REAL.is_dir() else "-> rescored 0." in out
    assert "qrels:" in out
    code = main(["run", "--config", str(config_path), "--out", str(tmp_path / "out")])
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    schema = json.loads((REPO / "gate" / "report" / "report.schema.json").read_text())
    jsonschema.validate(report, schema)
    assert code == report["verdict"]["exit_code"] == 0
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert markdown.startswith("# retrieval-gate: pass")
    assert "Baseline **rescored**" in markdown and "| boost |" in markdown


def test_gc_waits_for_an_archive_writing_beside_it(archived, monkeypatch):
    """`archive --gc` beside a running `archive` removed its data files before the manifest named
    them, and every later run exited 2 (found by the breaker). Both take the folder's lock: gc,
    started while an archive holds it, runs after the manifest is written."""
    import threading

    from gate.common import atomic
    from gate.inputs import manifest as manifest_module

    _config_path, result = archived
    folder = result.manifest.folder
    waiting = threading.Event()
    real_flock = atomic.fcntl.flock

    def flock(fd, operation):
        if threading.current_thread().name == "gc":
            waiting.set()  # gc is at the lock (blocked while the archive holds it)
        return real_flock(fd, operation)

    monkeypatch.setattr(atomic.fcntl, "flock", flock)
    fresh = folder / "run-0123456789abcdef.trec.gz"  # an archive's data file, not yet in the manifest
    removed: list[str] = []
    with atomic.folder_lock(folder):
        fresh.write_bytes(b"")
        gc = threading.Thread(target=lambda: removed.extend(manifest_module.gc(folder)), name="gc")
        gc.start()
        assert waiting.wait(60), "gc did not take the folder's lock"
        text = result.manifest.manifest_path.read_text()
        name = result.manifest.run_file
        result.manifest.manifest_path.write_text(text.replace(name, fresh.name))  # the archive's manifest lands
    gc.join()
    assert fresh.exists() and fresh.name not in removed, removed
    result.manifest.manifest_path.write_text(text)
