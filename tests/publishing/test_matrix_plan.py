"""``plan --format github-matrix``: every needed run as one matrix job, noise repeats included,
split under GitHub's 256 jobs a matrix; runs made one per process from the entries alone give
the gate what it computes on one machine."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from gate.cli import main
from gate.common.errors import UsageError
from gate.publishing.matrix import MAX_JOBS_PER_MATRIX, github_matrix
from tests.support.small_world import RUNNER, small_world


def _world(tmp: Path) -> Path:
    config = small_world(tmp, leak_in_new=False)
    # A stack whose identical runs differ (tie order follows the repeat's seed), as in production.
    (tmp / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 1.0\nshuffle_ties: true\n")
    text = config.read_text().replace("--output {run}", "--output {run} --seed {seed}")
    config.write_text(text + "noise: {base_seed: 500}\n")
    return config


def _matrix(capsys, *args: str) -> dict:
    assert main(["plan", *args, "--format", "github-matrix"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1  # one line: it goes to $GITHUB_OUTPUT as it is
    return json.loads(out)


def test_the_matrix_lists_the_candidate_and_each_noise_repeat_with_its_seed(tmp_path, capsys):
    config = _world(tmp_path)
    matrix = _matrix(capsys, "--config", str(config), "--runs-dir", str(tmp_path / "runs"), "--noise-repeats", "3")
    assert matrix["count"] == 4 and matrix["counts"] == [4] and len(matrix["parts"]) == 1
    jobs = matrix["parts"][0]["include"]
    assert [j["purpose"] for j in jobs] == ["candidate", "noise repeat 1/3", "noise repeat 2/3", "noise repeat 3/3"]
    assert [(j["repeat"], j["seed"]) for j in jobs] == [(0, "0"), (1, "501"), (2, "502"), (3, "503")]
    assert len({j["key"] for j in jobs}) == 4
    for job in jobs:
        assert job["output"] == str(tmp_path / "runs" / f"{job['key']}.run") and job["file"] == f"{job['key']}.run"
        assert job["artifact"] == f"retrieval-gate-run-{job['key']}"
        assert Path(job["config"]).is_file() and Path(job["queries"]).is_file() and job["corpus"].endswith(".jsonl")
        assert job["timings_file"] == f"{job['key']}.timings.jsonl"  # beside the run, as runs-dir reads it
        assert set(job) == {"key", "purpose", "config", "queries", "corpus", "repeat", "seed", "output", "file",
                            "timings_file", "artifact", "code_commit"}


def test_runs_made_one_per_process_from_the_entries_give_the_single_machine_band(tmp_path, capsys):
    repeats = 4
    single, matrix_world = tmp_path / "single", tmp_path / "matrix"
    for world in (single, matrix_world):
        world.mkdir()
        _world(world)
    # One machine: the archive runs the runner itself for every repeat.
    assert main(["archive", "--config", str(single / "gate.yml"), "--noise-repeats", str(repeats)]) == 0
    capsys.readouterr()
    # A matrix: each job sees only its entry, and its run reaches the gate as an artifact would.
    runs = matrix_world / "runs"
    matrix = _matrix(capsys, "--config", str(matrix_world / "gate.yml"), "--runs-dir", str(runs),
                     "--noise-repeats", str(repeats))
    artifacts = tmp_path / "artifacts"
    for job in matrix["parts"][0]["include"]:
        made = artifacts / job["artifact"] / job["file"]
        made.parent.mkdir(parents=True)
        subprocess.run([sys.executable, str(RUNNER), "--config", job["config"], "--queries", job["queries"],
                        "--corpus", job["corpus"], "--output", str(made), "--seed", job["seed"]], check=True,
                       env={"PATH": "/usr/bin:/bin", "RETRIEVAL_GATE_REPEAT": str(job["repeat"])})
    shutil.rmtree(runs)  # the gate job downloads every artifact into the runs folder
    runs.mkdir()
    for made in artifacts.glob("*/*.run"):
        shutil.copy(made, runs / made.name)
    assert main(["archive", "--config", str(matrix_world / "gate.yml"), "--noise-repeats", str(repeats),
                 "--runs-dir", str(runs)]) == 0
    capsys.readouterr()
    from gate.inputs.manifest import load_manifest

    a = load_manifest(single / ".retrieval-gate" / "baseline" / "manifest.yml")
    b = load_manifest(matrix_world / ".retrieval-gate" / "baseline" / "manifest.yml")
    band_a, band_b = a.extra["noise_band"], b.extra["noise_band"]
    assert band_a["runs"] == repeats and band_a["sd"] > 0  # the repeats differ: a real band
    # Number for number: means, spread, threshold, seeds, unstable queries, the calibration.
    clock = {"seconds"}
    assert {k: v for k, v in band_a.items() if k not in clock} == {k: v for k, v in band_b.items() if k not in clock}
    assert a.per_query_values() == b.per_query_values()


def _planned(n: int, needed: bool = True):
    return [SimpleNamespace(key=f"k{i}", purpose="grid cell", config_file="c.yml", queries="q.tsv", corpus=None,
                            repeat=0, seed=0, output=f"runs/k{i}.run", code_commit=None, needed=needed)
            for i in range(n)]


def test_a_plan_larger_than_one_matrix_is_split_or_refused_naming_the_parts():
    with pytest.raises(UsageError, match=r"600 runs do not fit 1 matrix of at most 256 jobs: pass --parts 3"):
        github_matrix(_planned(600))
    matrix = github_matrix(_planned(600), parts=3)
    assert matrix["counts"] == [200, 200, 200] and matrix["count"] == 600
    keys = [job["key"] for part in matrix["parts"] for job in part["include"]]
    assert keys == [f"k{i}" for i in range(600)]
    assert max(matrix["counts"]) <= MAX_JOBS_PER_MATRIX
    assert github_matrix(_planned(5), parts=3)["counts"] == [2, 2, 1]
    assert github_matrix(_planned(9), parts=4)["counts"] == [3, 2, 2, 2]  # no part left empty
    assert github_matrix(_planned(3, needed=False), parts=2) == {"count": 0, "counts": [0, 0],
                                                                  "parts": [{"include": []}, {"include": []}]}


def test_parts_without_the_matrix_format_is_a_usage_error(tmp_path, capsys):
    config = _world(tmp_path)
    assert main(["plan", "--config", str(config), "--parts", "2"]) == 2
    assert "--parts splits a github-matrix plan" in capsys.readouterr().err


def test_a_failed_entry_names_its_key_and_leaves_the_baseline_unwritten(tmp_path, capsys):
    config = _world(tmp_path)
    runs = tmp_path / "runs"
    matrix = _matrix(capsys, "--config", str(config), "--runs-dir", str(runs), "--noise-repeats", "3")
    jobs = matrix["parts"][0]["include"]
    for job in jobs[:-1]:  # the last repeat's job failed: its artifact never came
        subprocess.run([sys.executable, str(RUNNER), "--config", job["config"], "--queries", job["queries"],
                        "--corpus", job["corpus"], "--output", job["output"], "--seed", str(job["seed"])], check=True)
    code = main(["archive", "--config", str(config), "--noise-repeats", "3", "--runs-dir", str(runs)])
    err = capsys.readouterr().err
    assert code == 3 and f"no run named {jobs[-1]['key']}.run in the runs folder" in err
    assert "manifest unchanged" in err and not (tmp_path / ".retrieval-gate" / "baseline" / "manifest.yml").exists()
    # Rerunning the failed entry completes the set.
    job = jobs[-1]
    subprocess.run([sys.executable, str(RUNNER), "--config", job["config"], "--queries", job["queries"],
                    "--corpus", job["corpus"], "--output", job["output"], "--seed", str(job["seed"])], check=True)
    assert main(["archive", "--config", str(config), "--noise-repeats", "3", "--runs-dir", str(runs)]) == 0


def test_a_config_file_the_pr_committed_for_a_planned_key_is_rewritten(tmp_path, capsys):
    # A PR can commit .retrieval-gate/work/configs/<key>.yml for a key it predicts (the baseline
    # replay's): the plan, and the run, must hand the runner the config the gate means.
    config = _world(tmp_path)
    matrix = _matrix(capsys, "--config", str(config), "--runs-dir", str(tmp_path / "runs"))
    job = matrix["parts"][0]["include"][0]
    meant = Path(job["config"]).read_text()
    Path(job["config"]).write_text("boost: 99\n")
    again = _matrix(capsys, "--config", str(config), "--runs-dir", str(tmp_path / "runs"))
    assert again["parts"][0]["include"][0]["key"] == job["key"] and Path(job["config"]).read_text() == meant


def test_a_run_committed_to_the_repository_is_not_picked_up(tmp_path, capsys):
    config = _world(tmp_path)
    assert main(["archive", "--config", str(config)]) == 0
    capsys.readouterr()
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 2.0\nshuffle_ties: true\n")
    git = ["git", "-C", str(tmp_path), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "the PR"], check=True)
    runs = tmp_path / "runs"
    job = _matrix(capsys, "--config", str(config), "--runs-dir", str(runs))["parts"][0]["include"][0]
    assert job["purpose"] == "candidate"
    subprocess.run([sys.executable, str(RUNNER), "--config", job["config"], "--queries", job["queries"],
                    "--corpus", job["corpus"], "--output", job["output"]], check=True)
    # (report files inside the gate's own folder: outside the code the runs are keyed on)
    out = ["--config", str(config), "--runs-dir", str(runs), "--out", str(tmp_path / ".retrieval-gate" / "out")]
    assert main(["run", *out]) in (0, 1)  # produced by the step: picked up
    capsys.readouterr()
    subprocess.run([*git, "add", "-f", str(Path(job["output"]).relative_to(tmp_path))], check=True)
    subprocess.run([*git, "commit", "-qm", "a planted run"], check=True)
    code = main(["run", *out])
    report = json.loads((tmp_path / ".retrieval-gate" / "out" / "report.json").read_text())
    assert code == 3 and report["verdict"]["kind"] == "inconclusive"
    assert "is committed to the repository" in json.dumps(report["verdict"]["reasons"])


def test_paths_below_the_folder_plan_runs_in_are_relative_and_resolve_in_another_checkout(tmp_path, capsys,
                                                                                         monkeypatch):
    """Each matrix job is a runner of its own: a path into the plan job's workspace means
    nothing there. Paths below the working folder are given relative to it; a copy of the
    folder elsewhere (another job's checkout plus the downloaded plan) resolves them."""
    world = tmp_path / "plan-job"
    world.mkdir()
    _world(world)
    monkeypatch.chdir(world)
    matrix = _matrix(capsys, "--config", "gate.yml", "--runs-dir", str(world / "runs"), "--noise-repeats", "2")
    other = tmp_path / "produce-job"
    shutil.copytree(world, other)
    for job in matrix["parts"][0]["include"]:
        for name in ("config", "queries", "corpus", "output"):
            assert not Path(job[name]).is_absolute(), (name, job[name])
        assert job["output"] == f"runs/{job['file']}"
        for name in ("config", "queries", "corpus"):
            assert (other / job[name]).is_file(), (name, job[name])
    outside = tmp_path / "elsewhere-runs"  # a runs folder outside the workspace stays absolute
    matrix = _matrix(capsys, "--config", "gate.yml", "--runs-dir", str(outside))
    assert matrix["parts"][0]["include"][0]["output"] == str(outside / matrix["parts"][0]["include"][0]["file"])


TOKEN = "ghs_planT0kenValue1234567890"


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture()
def private_repository(tmp_path):
    """A private repository served over HTTP on 127.0.0.1 (a 401 without the token), whose
    baselines branch holds the base commit's archived baseline, and a checkout of a PR's merge
    commit that holds no baseline (a persist-credentials: false checkout: it cannot fetch alone)."""
    from tests.container.git_http import GitRemote, http_backend

    if http_backend() is None:
        pytest.skip("git-http-backend is not installed")
    work = tmp_path / "checkout"
    work.mkdir()
    config = _world(work)
    (work / ".gitignore").write_text(".retrieval-gate/\nruns/\n")
    _git(work, "init", "-q", "-b", "main")
    _git(work, "add", "-A")
    _git(work, "commit", "-qm", "base")
    base = _git(work, "rev-parse", "HEAD")
    assert main(["archive", "--config", str(config)]) == 0
    remote_root = tmp_path / "remote"
    bare = remote_root / "octo-org" / "private.git"
    bare.parent.mkdir(parents=True)
    _git(tmp_path, "init", "-q", "--bare", str(bare))
    branch = tmp_path / "baselines"  # what the archive workflow pushes: baselines/<sha>/
    shutil.copytree(work / ".retrieval-gate" / "baseline", branch / "baselines" / base)
    _git(branch, "init", "-q", "-b", "retrieval-gate-baselines")
    _git(branch, "add", "-A")
    _git(branch, "commit", "-qm", "baseline")
    _git(branch, "push", "-q", str(bare), "retrieval-gate-baselines")
    _git(work, "push", "-q", str(bare), "main")
    shutil.rmtree(work / ".retrieval-gate")
    _git(work, "checkout", "-q", "-b", "feature")
    (work / "retrieval.yml").write_text((work / "retrieval.yml").read_text().replace("boost: 1.0", "boost: 1.5"))
    _git(work, "commit", "-qam", "the PR")
    _git(work, "checkout", "-q", "--detach", base)
    _git(work, "merge", "-q", "--no-ff", "-m", "merge", "feature")
    with GitRemote(remote_root, private={"octo-org/private.git": TOKEN}) as remote:
        yield SimpleNamespace(work=work, config=config, base=base, remote=remote)


def _plan_in_a_workflow(repo, monkeypatch, capsys, token: str | None) -> tuple[dict, list[str]]:
    monkeypatch.chdir(repo.work)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_SERVER_URL", repo.remote.url().rstrip("/"))
    monkeypatch.setenv("GITHUB_REPOSITORY", "octo-org/private")
    monkeypatch.setenv("GIT_TERMINAL_PROMPT", "0")
    if token is None:
        monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    else:
        monkeypatch.setenv("GITHUB_TOKEN", token)
    capsys.readouterr()
    assert main(["plan", "--config", "gate.yml", "--base", repo.base, "--format", "github-matrix"]) == 0
    captured = capsys.readouterr()
    assert captured.out.count("\n") == 1
    return json.loads(captured.out), [line for line in captured.err.splitlines() if line.strip()]


def test_plan_on_a_private_repository_without_the_token_warns_what_it_planned_instead(private_repository,
                                                                                     monkeypatch, capsys):
    matrix, err = _plan_in_a_workflow(private_repository, monkeypatch, capsys, token=None)
    purposes = [job["purpose"] for job in matrix["parts"][0]["include"]]
    assert "baseline reconstruction" in purposes
    warnings = [line for line in err if line.startswith("::warning")]
    assert len(warnings) == 1, err
    warning = warnings[0]
    assert warning.startswith("::warning title=retrieval-gate plan::plan cannot read the retrieval-gate-baselines "
                              "branch (")
    assert f"it planned a baseline reconstruction from the base commit {private_repository.base[:12]} instead of " \
           "the archived baseline" in warning
    assert "GITHUB_TOKEN" in warning and "\n" not in warning
    # Nothing reached the server with credentials: it really was the "no token" case.
    # (Once, in a loaded xdist run, git's fetch never reached the server: the warning is what
    # this test is about, and it names why; no request with credentials is the "no token" case.)
    assert not any(ok for _, _, ok in private_repository.remote.requests), (warning, private_repository.remote.requests)


def test_plan_with_the_token_reads_the_archived_baseline_and_never_shows_the_token(private_repository, monkeypatch,
                                                                                  capsys):
    without, _ = _plan_in_a_workflow(private_repository, monkeypatch, capsys, token=None)
    matrix, err = _plan_in_a_workflow(private_repository, monkeypatch, capsys, token=TOKEN)
    purposes = [job["purpose"] for job in matrix["parts"][0]["include"]]
    # Under load in CI this once planned a reconstruction: what plan said and what reached the
    # server are the diagnosis, so the assertion carries them.
    assert "baseline reconstruction" not in purposes and "candidate" in purposes, (
        err, private_repository.remote.requests)
    assert matrix["count"] == without["count"] - 1
    assert not [line for line in err if "warning" in line], err
    assert TOKEN not in json.dumps(matrix) + "\n".join(err)
    assert any(ok for _, _, ok in private_repository.remote.requests)


def test_outside_a_workflow_the_warning_is_a_plain_line(private_repository, monkeypatch, capsys):
    monkeypatch.setenv("GITHUB_ACTIONS", "false")
    monkeypatch.chdir(private_repository.work)
    monkeypatch.setenv("GITHUB_SERVER_URL", private_repository.remote.url().rstrip("/"))
    monkeypatch.setenv("GITHUB_REPOSITORY", "octo-org/private")
    monkeypatch.setenv("GIT_TERMINAL_PROMPT", "0")
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    assert main(["plan", "--config", "gate.yml", "--base", private_repository.base, "--format", "json"]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(err) == 1 and err[0].startswith("retrieval-gate: warning: plan cannot read the retrieval-gate-"
                                               "baselines branch ("), err
