"""Runs are keyed on the code that produced them (gate.runs.code).

A PR that changes only the team's search code, its retrieval config untouched, must be re-run:
the baseline's cached run is not the PR's. A baseline that has to be run is run from a checkout
of its own commit (its code, not the PR's) and keyed on that commit's tree.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gate.inputs.config import load_config
from gate.pipeline.archive import archive
from gate.pipeline.run import run_gate
from gate.pipeline.stack import RunOptions
from gate.runs.code import commit_tree, declared_inputs, working_tree

SEARCH = """\
import argparse, json, os, sys
WEIGHT = {weight}
parser = argparse.ArgumentParser()
parser.add_argument("--queries"); parser.add_argument("--output"); parser.add_argument("--config")
args = parser.parse_args()
with open({calls!r}, "a") as log:
    log.write(os.getcwd() + "\\n")
docs = [f"d{{i}}" for i in range(12)]
with open(args.output, "w") as out:
    for line in open(args.queries):
        qid = line.split("\\t")[0]
        n = int(qid[1:])
        ranked = sorted(docs, key=lambda d: -((int(d[1:]) * WEIGHT + n) % 12))
        for rank, d in enumerate(ranked, 1):
            out.write(f"{{qid}} Q0 {{d}} {{rank}} {{100 - rank}} search\\n")
"""


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=cwd,
                          check=True, capture_output=True, text=True)
    return done.stdout.strip()


@pytest.fixture()
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / "eval").mkdir(parents=True)
    (root / "search").mkdir()
    (root / "retrieval").mkdir()
    calls = tmp_path / "calls.log"
    calls.touch(mode=0o666)
    calls.chmod(0o666)  # the search command appends to it from the runner's box (another uid)
    (root / "eval" / "queries.tsv").write_text("".join(f"q{i}\tquery number {i}\n" for i in range(30)))
    (root / "eval" / "qrels.txt").write_text("".join(f"q{i} 0 d{(i * 5) % 12} 1\nq{i} 0 d{(i * 5 + 1) % 12} 2\n"
                                                     for i in range(30)))
    (root / "retrieval" / "config.yml").write_text("bm25:\n  k1: 0.9\n")
    (root / "search" / "run.py").write_text(SEARCH.format(weight=1, calls=str(calls)))
    (root / ".gitignore").write_text(".retrieval-gate/\n")
    (root / ".retrieval-gate.yml").write_text(
        "golden:\n  queries: eval/queries.tsv\n  qrels: eval/qrels.txt\n"
        "retrieval:\n  config: retrieval/config.yml\n"
        "runner:\n  type: command\n"
        f"  command: \"{sys.executable} search/run.py --config {{config}} --queries {{queries}} --output {{run}}\"\n"
        "statistics:\n  samples: 300\n"
        "attribution:\n  enabled: false\n"
        "leakage:\n  enabled: false\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    return root, calls


def _silent(message: str) -> None:
    pass


def _calls(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_a_pr_that_changes_only_search_code_is_rerun_not_served_from_the_cache(repo):
    root, calls = repo
    config = root / ".retrieval-gate.yml"
    archive(load_config(config), progress=_silent)
    assert len(_calls(calls)) == 1
    # Same code, same config: the candidate is the archived baseline's run from the cache.
    same = run_gate(load_config(config), RunOptions(), progress=_silent)
    assert same.report["candidate"]["source"] == "cache" and len(_calls(calls)) == 1
    assert not [d for d in same.report["baseline"]["unattributed_changes"] if d["input"] == "code"]
    # The PR changes search/run.py only: the config diff is empty, the run is not the baseline's.
    (root / "search" / "run.py").write_text(SEARCH.format(weight=5, calls=str(calls)))
    _git(root, "commit", "-qam", "search code only")
    changed = run_gate(load_config(config), RunOptions(base="HEAD~1"), progress=_silent)
    assert changed.report["config_diff"] == []
    assert changed.report["candidate"]["source"] == "runner"
    assert len(_calls(calls)) == 2
    code = [d for d in changed.report["baseline"]["unattributed_changes"] if d["input"] == "code"]
    assert len(code) == 1 and "commit" in code[0]["archived"] and "working tree" in code[0]["current"]
    assert changed.report["delta"]["mean"] != 0.0  # the new code really ranks differently
    # Run again: now the PR's own run is in the cache, under the PR's code.
    again = run_gate(load_config(config), RunOptions(base="HEAD~1"), progress=_silent)
    assert again.report["candidate"]["source"] == "cache" and len(_calls(calls)) == 2


def test_a_baseline_that_must_be_run_is_run_from_a_checkout_of_its_commit(repo):
    root, calls = repo
    config = root / ".retrieval-gate.yml"
    archive(load_config(config), progress=_silent)
    base_dir = _calls(calls)[0]
    # The PR changes the code and grows the golden set: the baseline must be replayed on the new
    # queries - with the archived commit's code (WEIGHT = 1), not the PR's (WEIGHT = 5).
    (root / "search" / "run.py").write_text(SEARCH.format(weight=5, calls=str(calls)))
    with open(root / "eval" / "queries.tsv", "a") as handle:
        handle.write("q30\tquery number 30\n")
    with open(root / "eval" / "qrels.txt", "a") as handle:
        handle.write("q30 0 d6 1\n")
    _git(root, "commit", "-qam", "code and a new query")
    outcome = run_gate(load_config(config), RunOptions(base="HEAD~1"), progress=_silent)
    assert outcome.report["baseline"]["resolution"] == "replayed"
    where = _calls(calls)
    assert len(where) == 3  # archive, baseline replay, candidate
    replay_dir, candidate_dir = where[1], where[2]
    assert candidate_dir == base_dir == str(root)
    assert replay_dir != str(root) and "checkout-" in replay_dir and not Path(replay_dir).exists()
    # Its numbers are the old code's: identical to the archived ones on the 30 old queries.
    archived = json.loads(next((root / ".retrieval-gate" / "baseline").glob("per-query-*.json")).read_text())
    per_query = {row["query_id"]: row["baseline"] for row in outcome.report["per_query"]}
    for qid, value in archived["nDCG@10"].items():
        assert per_query[qid] == pytest.approx(value)


def test_code_identities(repo, tmp_path):
    root, _ = repo
    clean = working_tree(root, [root / ".retrieval-gate"])
    assert clean.known and clean.sha == commit_tree(root, "HEAD", [root / ".retrieval-gate"]).sha
    (root / ".retrieval-gate").mkdir(exist_ok=True)
    (root / ".retrieval-gate" / "cache.run").write_text("not code\n")
    assert working_tree(root, [root / ".retrieval-gate"]).sha == clean.sha  # the gate's own folder aside
    (root / "search" / "helper.py").write_text("X = 1\n")  # untracked code counts
    assert working_tree(root, [root / ".retrieval-gate"]).sha != clean.sha
    objects = subprocess.run(["git", "count-objects"], cwd=root, capture_output=True, text=True).stdout
    working_tree(root, [root / ".retrieval-gate"])
    assert subprocess.run(["git", "count-objects"], cwd=root, capture_output=True, text=True).stdout == objects
    inputs = declared_inputs(root, ["search/*.py"])
    assert inputs.kind == "inputs" and "2 files" in inputs.description
    outside = working_tree(tmp_path / "nowhere" if (tmp_path / "nowhere").mkdir() is None else tmp_path)
    assert not outside.known


def _perfect_run(root: Path) -> str:
    """A hand-written run that ranks every relevant document first: what a forger would commit."""
    lines = []
    for line in (root / "eval" / "qrels.txt").read_text().splitlines():
        qid, _, doc, rel = line.split()
        lines.append((qid, doc, int(rel)))
    out = []
    for qid in sorted({q for q, _, _ in lines}):
        ranked = sorted((d for q, d, _ in lines if q == qid), key=lambda d: -max(r for q, x, r in lines
                                                                                  if q == qid and x == d))
        out += [f"{qid} Q0 {d} {rank} {100 - rank} forged" for rank, d in enumerate(ranked, 1)]
    return "\n".join(out) + "\n"


def _cache_entries(root: Path) -> list[Path]:
    return sorted((root / ".retrieval-gate" / "cache").rglob("*.run*"))


@pytest.mark.parametrize("how", ["committed", "symlink", "symlinked-folder", "truncated"])
def test_a_cache_entry_the_gate_did_not_store_is_a_miss_not_a_run(repo, tmp_path, how):
    """A PR cannot plant its candidate's run in the cache (the folder is inside the checkout):
    a committed file or a symlink under the key is not used, and a truncated entry is re-made."""
    root, calls = repo
    config = root / ".retrieval-gate.yml"
    archive(load_config(config), progress=_silent)
    before = _cache_entries(root)
    (root / "search" / "run.py").write_text(SEARCH.format(weight=5, calls=str(calls)))
    _git(root, "commit", "-qam", "search code")
    honest = run_gate(load_config(config), RunOptions(base="HEAD~1"), progress=_silent)
    assert honest.report["candidate"]["source"] == "runner" and len(_calls(calls)) == 2
    [entry] = [p for p in _cache_entries(root) if p not in before]  # the candidate's
    assert entry.parent.name.startswith("v")  # one folder per gate version
    if how == "committed":
        entry.write_bytes(__import__("gzip").compress(_perfect_run(root).encode()))
        _git(root, "add", "-f", str(entry))
        _git(root, "commit", "-qm", "a cache entry")
    elif how == "symlink":
        forged = tmp_path / "forged.run"
        forged.write_text(_perfect_run(root))
        entry.unlink()
        entry.with_name(entry.name.replace(".gz", "")).symlink_to(forged)
    elif how == "symlinked-folder":
        # .retrieval-gate/cache -> a folder elsewhere, the forged entry inside: each file is a plain
        # file, untracked, but every one of them is reached through the PR's symlink.
        cache = root / ".retrieval-gate" / "cache"
        fake_cache = tmp_path / "fakecache"  # outside the tree: the code's key stays the same
        cache.rename(fake_cache)
        cache.symlink_to(fake_cache)
        forged = fake_cache / entry.parent.name / entry.name
        forged.write_bytes(__import__("gzip").compress(_perfect_run(root).encode()))
    else:
        entry.write_bytes(entry.read_bytes()[:40])
    lines: list[str] = []
    again = run_gate(load_config(config), RunOptions(base="HEAD~1"), progress=lines.append)
    assert again.report["candidate"]["source"] == "runner", lines
    assert len(_calls(calls)) == 3
    assert any("not used" in line or "unreadable" in line for line in lines), lines
    assert again.report["delta"]["mean"] == pytest.approx(honest.report["delta"]["mean"])
    if how not in ("committed", "symlinked-folder"):
        # The refused entry is replaced by the gate's own; the next run is served from it.
        third = run_gate(load_config(config), RunOptions(base="HEAD~1"), progress=_silent)
        assert third.report["candidate"]["source"] == "cache" and len(_calls(calls)) == 3


def test_a_cache_that_cannot_be_written_is_a_progress_line_not_an_error(repo):
    """A PR that commits a file where the cache folder should be gets its runs made, uncached."""
    root, calls = repo
    config = root / ".retrieval-gate.yml"
    archive(load_config(config), progress=_silent)
    (root / "search" / "run.py").write_text(SEARCH.format(weight=5, calls=str(calls)))
    _git(root, "commit", "-qam", "search code")
    import shutil

    shutil.rmtree(root / ".retrieval-gate" / "cache")
    (root / ".retrieval-gate" / "cache").write_text("not a folder\n")
    lines: list[str] = []
    outcome = run_gate(load_config(config), RunOptions(base="HEAD~1"), progress=lines.append)
    assert outcome.report["candidate"]["source"] == "runner"
    assert any("the run is not cached" in line for line in lines), lines


def test_plan_then_produce_then_gate_finds_every_run_by_its_key(repo, tmp_path, capsys):
    """plan --base REF lists the runs as the gate will ask for them - with the base's yardstick
    (here the PR also edits the gate config's runner command, which the gate ignores: the base's
    runner keys the runs) - a step of the team's own produces them, and run --base REF finds
    them all: the runner is never called by the gate."""
    from gate.cli import main

    root, calls = repo
    config = root / ".retrieval-gate.yml"
    archive(load_config(config), progress=_silent)
    _git(root, "add", "-f", ".retrieval-gate/baseline")  # the baseline committed with the base
    _git(root, "commit", "-qm", "archived baseline")
    base = _git(root, "rev-parse", "HEAD")
    (root / "search" / "run.py").write_text(SEARCH.format(weight=5, calls=str(calls)))
    (root / "retrieval" / "config.yml").write_text("bm25:\n  k1: 1.2\n")
    config.write_text(config.read_text().replace("--output {run}", "--output {run} --config {config}"))
    _git(root, "commit", "-qam", "the PR")
    runs = tmp_path / "runs"
    assert main(["plan", "--config", str(config), "--base", base, "--runs-dir", str(runs), "--format", "json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    needed = [p for p in planned if p["needed"]]
    assert [p["purpose"] for p in needed] == ["candidate"], planned
    for item in needed:  # the team's own step: its stack, the planned config and queries
        subprocess.run([sys.executable, str(root / "search" / "run.py"), "--config", item["config_file"], "--queries",
                        item["queries"], "--output", item["output"]], check=True, cwd=root)
    before = len(_calls(calls))
    out = tmp_path / "out"
    code = main(["run", "--config", str(config), "--base", base, "--runs-dir", str(runs), "--out", str(out)])
    report = json.loads((out / "report.json").read_text())
    assert report["candidate"]["source"] == "runs-dir", report["candidate"]
    assert len(_calls(calls)) == before, "the gate ran the runner: a planned key did not match"
    assert code in (0, 1, 3)


def _two_commits(root: Path) -> tuple[str, str, str]:
    """Two commits changing the retrieval config on top of HEAD: (base, first, second)."""
    base = _git(root, "rev-parse", "HEAD")
    shas = []
    for k1 in ("1.1", "1.3"):
        (root / "retrieval" / "config.yml").write_text(f"bm25:\n  k1: {k1}\n")
        _git(root, "commit", "-qam", f"k1 {k1}")
        shas.append(_git(root, "rev-parse", "HEAD"))
    return base, shas[0], shas[1]


def test_plan_in_a_workflow_takes_the_base_the_action_would(repo, tmp_path, capsys, monkeypatch):
    """Inside GitHub Actions `plan` without --base plans against the base the Action will judge
    against: merge_group.base_sha for a merge group of two commits (HEAD^1 would be the first of
    them), HEAD^1 of the merge commit for a pull request."""
    from gate.cli import main

    root, _ = repo
    config = root / ".retrieval-gate.yml"
    base, first, _ = _two_commits(root)
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"merge_group": {"head_sha": _git(root, "rev-parse", "HEAD"), "base_sha": base,
                                                 "head_ref": "refs/heads/gh-readonly-queue/main/pr-1"}}))
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_EVENT_NAME", "merge_group")
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    assert main(["plan", "--config", str(config), "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert f"plan --base {base[:12]} (merge_group.base_sha" in captured.err, captured.err
    assert first[:12] not in captured.err
    baseline = [p for p in json.loads(captured.out) if p["purpose"] != "candidate"]
    assert baseline, "the base's runs are planned"


def test_plan_on_a_push_plans_the_commit_itself_not_its_parent(repo, tmp_path, capsys, monkeypatch):
    """After a merge, the archive workflow plans the noise repeats archive --noise-repeats will
    ask for: with the pushed commit's gate config, not HEAD^1's (a push is judged against nothing)."""
    from gate.cli import main

    root, _ = repo
    config = root / ".retrieval-gate.yml"
    _two_commits(root)
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"after": _git(root, "rev-parse", "HEAD"), "ref": "refs/heads/main"}))
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_EVENT_NAME", "push")
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    assert main(["plan", "--config", str(config), "--noise-repeats", "2", "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert "plan --base" not in captured.err and "without --base" not in captured.err, captured.err
    assert [p["purpose"] for p in json.loads(captured.out)] == ["candidate", "noise repeat 1/2", "noise repeat 2/2"]


@pytest.mark.parametrize("left_out", ["candidate", "grid cell"])
def test_a_planned_run_the_producing_step_did_not_write_is_named_never_run_by_the_gate(repo, tmp_path, capsys,
                                                                                      left_out):
    """plan -> produce -> gate where the team's step skips one planned run. The gate does not
    run it itself (the team's stack may not exist where the gate runs): a missing candidate makes
    the verdict inconclusive naming its key; a missing grid cell leaves the verdict to baseline
    and candidate and says the attribution is missing, naming the key."""
    from gate.cli import main

    root, calls = repo
    config = root / ".retrieval-gate.yml"
    config.write_text(config.read_text().replace("attribution:\n  enabled: false\n", ""))
    archive(load_config(config), progress=_silent)
    _git(root, "add", "-f", ".retrieval-gate/baseline", ".retrieval-gate.yml")
    _git(root, "commit", "-qm", "attribution on, and the archived baseline")
    base = _git(root, "rev-parse", "HEAD")
    (root / "retrieval" / "config.yml").write_text("bm25:\n  k1: 1.2\nboost: 2.0\n")  # two changes: a 2x2 grid
    _git(root, "commit", "-qam", "the PR")
    runs = tmp_path / "runs"
    assert main(["plan", "--config", str(config), "--base", base, "--runs-dir", str(runs), "--format", "json"]) == 0
    needed = [p for p in json.loads(capsys.readouterr().out) if p["needed"]]
    assert {p["purpose"].split(" ")[0] for p in needed} >= {"candidate", "grid"}, needed
    skipped = next(p for p in needed if p["purpose"].startswith(left_out))
    for item in needed:
        if item is not skipped:
            subprocess.run([sys.executable, str(root / "search" / "run.py"), "--config", item["config_file"],
                            "--queries", item["queries"], "--output", item["output"]], check=True, cwd=root)
    before = len(_calls(calls))
    out = tmp_path / "out"
    code = main(["run", "--config", str(config), "--base", base, "--runs-dir", str(runs), "--out", str(out)])
    report = json.loads((out / "report.json").read_text())
    assert len(_calls(calls)) == before, "the gate ran the runner itself"
    if left_out == "candidate":
        assert code == 3 and report["verdict"]["kind"] == "inconclusive", report["verdict"]
        assert f"no run named {skipped['key']}.run in the runs folder" in report["verdict"]["reasons"][0]["message"]
    else:  # a planned grid cell that never came: the set is incomplete, nothing is decided
        assert code == 3 and report["verdict"]["kind"] == "inconclusive", report["verdict"]
        [reason] = report["verdict"]["reasons"]
        assert reason["code"] == "missing_run" and skipped["key"] in reason["message"], reason
        assert skipped["key"] in report["attribution"]["error"]
        assert any(w.startswith("no attribution: ") and skipped["key"] in w for w in report["warnings"])


def test_plan_in_a_workflow_refuses_to_guess_a_base(repo, tmp_path, capsys, monkeypatch):
    """No payload where GITHUB_EVENT_PATH points, or a pull request / merge group whose base is
    not there: exit 2 with one line, never a plan against HEAD^1 (for a PR checked out at its
    head, its own previous commit). A PR checked out at its head plans against base.sha."""
    from gate.cli import main

    root, _ = repo
    config = root / ".retrieval-gate.yml"
    base, first, head = _two_commits(root)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    event = tmp_path / "event.json"

    def plan(name: str, payload: dict | None) -> tuple[int, str]:
        monkeypatch.setenv("GITHUB_EVENT_NAME", name)
        monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
        if payload is None:
            event.unlink(missing_ok=True)
        else:
            event.write_text(json.dumps(payload))
        code = main(["plan", "--config", str(config), "--format", "json"])
        return code, capsys.readouterr().err

    code, err = plan("pull_request", None)
    assert code == 2 and "is not a file that exists" in err and first[:12] not in err, err
    pull = {"number": 1, "head": {"sha": head}, "base": {"sha": base}}
    code, err = plan("pull_request", {"pull_request": pull})
    assert code == 0 and f"plan --base {base[:12]} (pull_request.base.sha" in err, err
    code, err = plan("merge_group", {"merge_group": {"head_sha": head}})
    assert code == 2 and "no base to plan against: the merge_group event has no base_sha" in err, err
    assert len(err.strip().splitlines()) == 1


def test_a_change_to_the_retrieval_config_alone_is_not_a_change_of_code(repo):
    """The config diff names it; in the code's tree too, a config-only PR read as an unattributed
    code change. Git refuses to drop a file from a temporary index holding a third version of it
    (neither the file nor HEAD's) unless forced: the commit's tree must still leave it out."""
    from gate.pipeline.stack import code_under_test, commit_code

    root, _ = repo
    base = _git(root, "rev-parse", "HEAD")
    (root / "retrieval" / "config.yml").write_text("bm25:\n  k1: 1.4\n")
    _git(root, "commit", "-qam", "tune k1")
    (root / "retrieval" / "config.yml").write_text("bm25:\n  k1: 1.6\n")  # and again, not committed
    config = load_config(root / ".retrieval-gate.yml")
    assert code_under_test(config).sha == commit_code(config, base).sha == commit_code(config, "HEAD").sha
    (root / "search" / "run.py").write_text("# changed\n")
    assert code_under_test(config).sha != commit_code(config, base).sha
