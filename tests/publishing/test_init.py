"""`retrieval-gate init`: the config, workflows and .gitignore lines it writes are the ones `plan`,
`run` and the comment job accept (gate.publishing.scaffold)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from gate.cli import main
from gate.inputs.config import load_config
from gate.publishing.scaffold import WORKFLOWS, render_workflow, workflow_templates
from tests.shared_data import REALDATA, need
from tests.support.saved_report import as_the_action_saved
from tests.support.small_world import RUNNER, small_world

REPO = Path(__file__).resolve().parents[2]
COMMAND = (f"{sys.executable} search/run.py --config {{config}} --queries {{queries}} --corpus {{corpus}} "
           "--output {run}")


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=dev@example.com", "-c", "user.name=dev", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout.strip()


def _team_repo(root: Path, folder: str = "") -> Path:
    """A repository holding only a golden set, qrels, a corpus, a retrieval config and a search command."""
    root.mkdir(parents=True)
    _git(root, "init", "-q", "-b", "main")
    where = root / folder if folder else root
    scratch = root.parent / f"{root.name}-scratch"
    scratch.mkdir()
    small_world(scratch, leak_in_new=False)
    for name, target in (("golden.jsonl", "eval/golden.jsonl"), ("qrels.txt", "eval/qrels.txt"),
                         ("corpus-v1.jsonl", "data/corpus.jsonl"), ("retrieval.yml", "search/retrieval.yml")):
        (where / target).parent.mkdir(parents=True, exist_ok=True)
        shutil.move(scratch / name, where / target)
    shutil.copyfile(RUNNER, where / "search" / "run.py")
    shutil.rmtree(scratch)
    return where


def _init(where: Path, capsys, *args: str) -> tuple[int, str, str]:
    cwd = os.getcwd()
    os.chdir(where)
    try:
        code = main(["init", *args])
    finally:
        os.chdir(cwd)
    out = capsys.readouterr()
    return code, out.out, out.err


def _archive_then_gate_a_pr(where: Path, plan_first: bool = False) -> None:
    """The quickstart after init: (plan,) archive, commit; then a PR changing the retrieval config, gated."""
    cwd = os.getcwd()
    os.chdir(where)
    try:
        if plan_first:
            assert main(["plan"]) == 0
        assert main(["archive"]) == 0
        _git(where, "add", "-A")
        _git(where, "commit", "-qm", "the gate")
        _git(where, "checkout", "-q", "-b", "pr")
        (where / "search" / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 2.0\nprefer_suffix: '#c0'\n")
        _git(where, "commit", "-qam", "a PR")
        assert main(["run", "--base", "main"]) == 0
    finally:
        os.chdir(cwd)


def test_init_finds_the_files_and_writes_a_config_plan_and_run_accept(tmp_path, capsys):
    where = _team_repo(tmp_path / "repo")
    code, out, _ = _init(where, capsys, "--command", COMMAND, "--suite", "docs-search")
    assert code == 0, out
    for line in ("golden queries   eval/golden.jsonl", "qrels            eval/qrels.txt",
                 "corpus           data/corpus.jsonl", "retrieval config search/retrieval.yml",
                 "wrote .retrieval-gate.yml", "wrote .github/workflows/retrieval-gate.yml",
                 "wrote .github/workflows/retrieval-gate-comment.yml",
                 "wrote .github/workflows/retrieval-gate-archive.yml", "wrote .gitignore", "Next steps:"):
        assert line in out, out
    config = load_config(where / ".retrieval-gate.yml")
    assert (config.suite, config.golden.queries, config.golden.qrels, config.corpus, config.retrieval_config) == \
        ("docs-search", "eval/golden.jsonl", "eval/qrels.txt", "data/corpus.jsonl", "search/retrieval.yml")
    assert config.runner.command == COMMAND and config.judged.qrels_style == "pooled"
    assert ".retrieval-gate/out/" in (where / ".gitignore").read_text()
    # plan, archive, then run on a PR: what init wrote is a working gate.
    assert _init(where, capsys, "--force", "--command", COMMAND)[0] == 0  # --force rewrites it (suite back to default)
    _archive_then_gate_a_pr(where, plan_first=True)
    report = json.loads((where / ".retrieval-gate" / "out" / "report.json").read_text())
    assert report["verdict"]["kind"] == "pass" and report["suite"] == "retrieval"
    assert _git(where, "status", "--porcelain") == ""  # .gitignore keeps the gate's scratch out of git


def test_the_workflows_are_the_examples_with_this_repositorys_values(tmp_path, capsys):
    where = _team_repo(tmp_path / "repo")
    assert _init(where, capsys, "--command", COMMAND)[0] == 0
    for name in WORKFLOWS:
        written = (where / ".github" / "workflows" / name).read_text()
        assert written == (REPO / "examples" / "workflows" / name).read_text(), name
        YAML(typ="safe").load(written)
    # Other values are filled in where the examples hold the defaults, and nowhere else.
    text = render_workflow("retrieval-gate-archive.yml", config_path="svc/.retrieval-gate.yml",
                           baseline_dir="svc/.retrieval-gate/baseline", branch="trunk", action="acme/gate@v2.1")
    assert "branches: [trunk]" in text and "BASELINE_DIR: svc/.retrieval-gate/baseline" in text
    assert "GATE_CONFIG: svc/.retrieval-gate.yml" in text and "your-org" not in text
    assert '--config="$GATE_CONFIG"' in text  # the shell reads the path from the environment, never pasted in
    assert "git+https://github.com/acme/gate@v2.1" in text
    comment = render_workflow("retrieval-gate-comment.yml", config_path="svc/.retrieval-gate.yml",
                              baseline_dir="svc/.retrieval-gate/baseline", branch="trunk",
                              action="acme/tools/retrieval-gate@v2")
    [checkout] = [s for s in YAML(typ="safe").load(comment)["jobs"]["comment"]["steps"]
                  if s.get("uses", "").startswith("actions/checkout@")]
    assert checkout["with"]["sparse-checkout"] == "/svc/.retrieval-gate.yml"  # anchored: that one file
    assert "GATE_CONFIG: svc/.retrieval-gate.yml" in comment and "--suite" not in \
        "\n".join(line for line in comment.splitlines() if not line.strip().startswith("#"))
    assert "git+https://github.com/acme/tools@v2" in comment  # the repository of OWNER/REPO/path@REF
    assert workflow_templates().is_dir()


@pytest.mark.parametrize("folder", ["svc #1", "a: b", "[x]*", "!neg", "#hash", "$(touch PWNED)", "it's \"q\"",
                                    "-lead", "null", "grö\u00dfe x"])
def test_a_subfolder_with_any_name_reaches_the_workflows_and_gitignore_as_itself(tmp_path, capsys, folder):
    # A review found these pasted unquoted: the wrong config for every PR, invalid YAML, a command
    # substitution in the comment job, a leading dash read as an option, ignore lines matching nothing.
    where = _team_repo(tmp_path / "repo", folder=folder)
    code, out, err = _init(where, capsys, "--command", COMMAND)
    assert code == 0, err
    top = tmp_path / "repo"
    config_rel = f"{folder}/.retrieval-gate.yml"
    loaded = {n: YAML(typ="safe").load((top / ".github" / "workflows" / n).read_text()) for n in WORKFLOWS}
    gate_step = next(s for s in loaded["retrieval-gate.yml"]["jobs"]["gate"]["steps"] if "with" in s
                     and "config-path" in s["with"])
    assert gate_step["with"]["config-path"] == config_rel
    comment_steps = loaded["retrieval-gate-comment.yml"]["jobs"]["comment"]["steps"]
    assert next(s for s in comment_steps if "GATE_CONFIG" in s.get("env", {}))["env"]["GATE_CONFIG"] == config_rel
    assert loaded["retrieval-gate-archive.yml"]["jobs"]["archive"]["env"] == {
        "BASELINE_DIR": f"{folder}/.retrieval-gate/baseline", "GATE_CONFIG": config_rel}
    assert not (top / "PWNED").exists()
    # git itself reads the ignore lines and the sparse pattern as naming exactly these paths.
    (top / folder / ".retrieval-gate" / "out").mkdir(parents=True)
    (top / folder / ".retrieval-gate" / "out" / "report.json").write_text("{}")
    (top / ".retrieval-gate" / "out").mkdir(parents=True)
    (top / ".retrieval-gate" / "out" / "report.json").write_text("{}")
    status = _git(top, "status", "--porcelain", "--untracked-files=all")
    assert ".retrieval-gate/out" not in status, status
    pattern = next(s for s in comment_steps if s.get("uses", "").startswith("actions/checkout@"))["with"]
    listed = subprocess.run(["git", "ls-files", "--others", "--exclude-standard", "-z"], cwd=top, capture_output=True,
                            text=True).stdout.split("\0")
    assert config_rel in listed
    match = subprocess.run(["git", "-c", "core.quotePath=false", "check-ignore", "--no-index", "--stdin", "-z"],
                           cwd=top, input=config_rel + "\0", capture_output=True, text=True,
                           env={**os.environ, "GIT_DIR": str(top / ".git")})
    del match, pattern
    # The next steps quote what a shell would split.
    assert "retrieval-gate archive" in out


def test_init_in_a_subfolder_writes_the_workflows_at_the_top(tmp_path, capsys):
    where = _team_repo(tmp_path / "repo", folder="services/search")
    code, out, _ = _init(where, capsys, "--command", COMMAND)
    assert code == 0, out
    top = tmp_path / "repo"
    assert (top / ".github" / "workflows" / "retrieval-gate.yml").is_file()
    workflow = (top / ".github/workflows/retrieval-gate.yml").read_text()
    assert "config-path: services/search/.retrieval-gate.yml" in workflow
    assert "services/search/.retrieval-gate/out/" in (top / ".gitignore").read_text()
    assert "retrieval-gate archive --config=services/search/.retrieval-gate.yml" in out
    cwd = os.getcwd()
    os.chdir(top)
    try:
        assert main(["plan", "--config", "services/search/.retrieval-gate.yml"]) == 0
    finally:
        os.chdir(cwd)


def test_init_refuses_in_one_line_what_it_cannot_do(tmp_path, capsys):
    plain = tmp_path / "plain"
    plain.mkdir()
    code, _, err = _init(plain, capsys)
    assert code == 2 and "is not in a git repository" in err and len(err.strip().splitlines()) == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    _git(empty, "init", "-q")
    code, _, err = _init(empty, capsys)
    assert code == 2 and "no golden query file" in err and "--queries" in err, err
    where = _team_repo(tmp_path / "repo")
    assert _init(where, capsys, "--suite", "bad name!")[0] == 2
    assert _init(where, capsys, "--action", "not a ref")[0] == 2
    assert _init(where, capsys, "--qrels", "missing.txt")[0] == 2
    assert _init(where, capsys, "--command", "run {nope}")[0] == 2  # an unknown placeholder, as plan refuses it
    assert _init(where, capsys, "--retrieval-config", ".")[0] == 2
    assert _init(where, capsys, "--queries", "")[0] == 2
    odd = where / "eval" / "gr\u0085x"
    odd.mkdir()
    code, _, err = _init(where, capsys, "--dir", str(odd))
    assert code == 2 and "control character" in err and len(err.strip().splitlines()) == 1
    assert _init(where, capsys)[0] == 0
    code, _, err = _init(where, capsys)
    assert code == 2 and "exists already" in err and "--force" in err
    assert "Traceback" not in err


def test_without_a_command_the_placeholder_is_marked_and_named_in_the_next_steps(tmp_path, capsys):
    where = _team_repo(tmp_path / "repo")
    code, out, _ = _init(where, capsys)
    assert code == 0
    assert "PLACEHOLDER" in (where / ".retrieval-gate.yml").read_text()
    assert "1. Set runner.command" in out and "your-org/retrieval-gate@v1" in out


def test_hostile_paths_and_commands_are_quoted_into_the_config(tmp_path, capsys):
    where = _team_repo(tmp_path / "repo")
    odd = where / "eval" / 'golden "x": #1.jsonl'
    (where / "eval" / "golden.jsonl").rename(odd)
    command = COMMAND + " --label 'a: b' # not a comment"
    code, out, _ = _init(where, capsys, "--queries", f"eval/{odd.name}", "--command", command)
    assert code == 0, out
    config = load_config(where / ".retrieval-gate.yml")
    assert config.golden.queries == f"eval/{odd.name}" and config.runner.command == command


def test_relevance_only_qrels_get_the_setting_that_keeps_the_judged_check_meaningful(tmp_path, capsys):
    # SciFact (BEIR): every judgment is a 1; no document is judged non-relevant.
    topics = need(REALDATA / "scifact" / "beir_test_qrels_topics" / "topics.beir-v1.0.0-scifact.test.tsv.gz")
    qrels = need(REALDATA / "scifact" / "beir_test_qrels_topics" / "qrels.beir-v1.0.0-scifact.test.txt")
    repo = tmp_path / "repo"
    (repo / "eval").mkdir(parents=True)
    _git(repo, "init", "-q")
    # Copies in a scratch repository (a symlink out of the repository is refused, as plan refuses it).
    shutil.copyfile(topics, repo / "eval" / topics.name)
    shutil.copyfile(qrels, repo / "eval" / qrels.name)
    (repo / "retrieval.yml").write_text("bm25: {k1: 0.9}\n")
    code, out, _ = _init(repo, capsys, "--command", COMMAND)
    assert code == 0, out
    assert "judges only relevant documents" in out
    config = load_config(repo / ".retrieval-gate.yml")
    assert config.judged.qrels_style == "relevance-only"
    assert config.golden.queries == f"eval/{topics.name}" and config.golden.qrels == f"eval/{qrels.name}"


def test_the_comment_job_reads_the_suite_from_the_config(tmp_path, capsys):
    from tests.publishing.github.fake_github import FakeGitHub

    where = _team_repo(tmp_path / "repo")
    assert _init(where, capsys, "--command", COMMAND, "--suite", "docs-search")[0] == 0
    _archive_then_gate_a_pr(where)
    report = where / ".retrieval-gate" / "out" / "report.json"
    other = tmp_path / "other.yml"
    other.write_text((where / ".retrieval-gate.yml").read_text().replace('suite: "docs-search"',
                                                                         'suite: "another-suite"'))
    head = _git(where, "rev-parse", "HEAD")
    as_the_action_saved(report, 5, head)  # the PR job's report, as the Action records its event
    with FakeGitHub(token="t0ken") as fake:
        fake.add_pull(5, head, files=["search/retrieval.yml"])
        env = {**os.environ, "GITHUB_TOKEN": "t0ken", "GITHUB_REPOSITORY": fake.repository, "GITHUB_API_URL": fake.url}
        argv = [sys.executable, "-m", "gate", "comment", "--report", str(report), "--pr", "5", "--head-sha", head]
        refused = subprocess.run(argv + ["--config", str(other)], env=env, capture_output=True, text=True, timeout=120)
        assert refused.returncode == 2, refused.stderr
        assert "'docs-search', not 'another-suite' (the suite of " in refused.stderr and str(other) in refused.stderr
        assert fake.comments(5) == []
        both = subprocess.run(argv + ["--config", str(other), "--suite", "docs-search"], env=env, capture_output=True,
                              text=True, timeout=120)
        assert both.returncode == 2 and "not allowed with" in both.stderr
        # The config as the comment workflow has it: a sparse checkout, the data files absent.
        sparse = tmp_path / "sparse"
        sparse.mkdir()
        shutil.copyfile(where / ".retrieval-gate.yml", sparse / ".retrieval-gate.yml")
        posted = subprocess.run(argv + ["--config", str(sparse / ".retrieval-gate.yml")], env=env,
                                capture_output=True, text=True, timeout=120)
        assert posted.returncode == 0, posted.stderr
        [comment] = fake.comments(5)
        assert "docs-search" in comment["body"]


def test_what_plan_would_refuse_is_refused_before_anything_is_written(tmp_path, capsys):
    # Findings of an outside review: each wrote a config that `plan` then refused, or half of the files.
    where = _team_repo(tmp_path / "repo")
    outside = tmp_path / "outside.jsonl"
    shutil.copyfile(where / "eval" / "golden.jsonl", outside)
    code, _, err = _init(where, capsys, "--queries", str(outside))
    assert code == 2 and "outside the repository" in err
    (where / ".github").mkdir()
    (where / ".github" / "workflows").write_text("not a folder")
    code, _, err = _init(where, capsys, "--command", COMMAND)
    assert code == 2 and "is not a folder" in err and "Traceback" not in err
    assert not (where / ".retrieval-gate.yml").exists()  # nothing half-written: a rerun is not "exists already"
    (where / ".github" / "workflows").unlink()
    # Qrels of another golden set, shallower than the right ones, and a corpus that does not read.
    (where / "eval" / "v2").mkdir()
    shutil.move(where / "eval" / "golden.jsonl", where / "eval" / "v2" / "golden.jsonl")
    shutil.move(where / "eval" / "qrels.txt", where / "eval" / "v2" / "qrels.txt")
    (where / "eval" / "qrels_legacy.txt").write_text("other-1 0 doc-1 1\n")
    (where / "data" / "chunks_old.jsonl").write_text("not json\n")
    code, out, err = _init(where, capsys, "--command", COMMAND)
    assert code == 0, err
    config = load_config(where / ".retrieval-gate.yml")
    assert (config.golden.queries, config.golden.qrels, config.corpus) == \
        ("eval/v2/golden.jsonl", "eval/v2/qrels.txt", "data/corpus.jsonl"), out
    code, _, err = _init(where, capsys, "--force", "--qrels", "eval/qrels_legacy.txt")
    assert code == 2 and "judges none of the 20 queries" in err


def test_the_default_branch_is_origins_and_a_guess_is_said(tmp_path, capsys):
    where = _team_repo(tmp_path / "repo")
    _git(where, "add", "-A")
    _git(where, "commit", "-qm", "data")
    _git(where, "branch", "-m", "main", "develop")  # no main, no master: nothing says which is the default
    _git(where, "checkout", "-q", "-b", "add-gate")
    remote = tmp_path / "remote.git"
    _git(tmp_path, "init", "-q", "--bare", str(remote))
    _git(where, "remote", "add", "origin", str(remote))
    _git(where, "push", "-q", "origin", "add-gate", "HEAD:refs/heads/trunk")
    code, out, _ = _init(where, capsys, "--command", COMMAND)
    assert code == 0
    archive = (where / ".github" / "workflows" / "retrieval-gate-archive.yml").read_text()
    assert "branches: [add-gate]" in archive and "the default branch is a guess: 'add-gate'" in out
    _git(where, "remote", "set-head", "origin", "trunk")
    assert _init(where, capsys, "--force", "--command", COMMAND)[0] == 0
    archive = (where / ".github" / "workflows" / "retrieval-gate-archive.yml").read_text()
    assert "branches: [trunk]" in archive
