"""What ``retrieval-gate run`` prints (issue 32): a reconstructed baseline described once, and a
failed runner named by its exit code in the headline, its log relative to the workspace in the
body, and the log's last lines in the terminal (bounded, escaped)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from gate.cli import main
from tests.support.small_world import RUNNER, small_world

FAILING = '''import os, subprocess, sys
import yaml
args = sys.argv[1:]
config = yaml.safe_load(open(args[args.index("--config") + 1])) or {}
if config.get("fail_loudly"):
    for i in range(30):
        print(f"loading shard {i} of 30")
    print("\\x1b[31mERROR\\x1b[0m index not found at " + os.path.join(os.getcwd(), "index", "shard-7"))
    print("y" * 1000)
    sys.exit(7)
sys.exit(subprocess.call([sys.executable, RUNNER, *args]))
'''


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "commit.gpgsign=false",
                           *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def _repository(root: Path) -> tuple[Path, str]:
    """small_world in a git repository, its base commit without an archived baseline; its
    runner a wrapper that fails loudly when the config says ``fail_loudly``."""
    path = small_world(root, leak_in_new=False)
    (root / "runner.py").write_text(f"RUNNER = {str(RUNNER)!r}\n" + FAILING)
    path.write_text(path.read_text().replace(str(RUNNER), str(root / "runner.py")))
    (root / ".gitignore").write_text(".retrieval-gate/\nout/\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    return path, _git(root, "rev-parse", "HEAD")


def test_a_reconstructed_baseline_is_described_once(tmp_path, capsys):
    path, base = _repository(tmp_path)
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 1.0\nprefer_suffix: '#c1'\n")
    assert main(["run", "--config", str(path), "--base", base, "--out", str(tmp_path / "out")]) in (0, 1)
    printed = capsys.readouterr()
    terminal = printed.out + printed.err
    assert terminal.count("reconstructed, not archived") == 1, terminal
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["baseline"]["resolution"] == "reconstructed"
    assert f"baseline: {report['baseline']['description']}" in printed.out.splitlines()
    assert "baseline (reconstructed): nDCG@10 " in printed.err  # the progress line says what was made
    comment = (tmp_path / "out" / "comment.md").read_text()
    assert comment.count("not archived") == 1  # "Baseline **reconstructed**, not archived: ..." once


def test_a_failed_runner_is_named_by_its_exit_code_and_its_log_is_shown_relative_and_bounded(tmp_path, capsys):
    path, base = _repository(tmp_path)
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 1.0\nfail_loudly: true\n")
    code = main(["run", "--config", str(path), "--base", base, "--out", str(tmp_path / "out")])
    printed = capsys.readouterr()
    assert code == 3
    lines = printed.out.splitlines()
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    headline = report["verdict"]["headline"]
    assert lines[0] == headline == "⚠️ inconclusive — the candidate run failed: runner command exited with code 7"
    # no absolute path anywhere in the verdict; the log's path relative to the workspace, in the body
    assert str(tmp_path) not in json.dumps(report["verdict"]) and str(tmp_path) not in json.dumps(report["candidate"])
    log = report["candidate"]["log"]
    assert log.startswith(".retrieval-gate/work/logs/") and log.endswith(".log") and (tmp_path / log).is_file()
    assert "index not found at index/shard-7" in report["candidate"]["log_tail"]
    comment = (tmp_path / "out" / "comment.md").read_text()
    assert str(tmp_path) not in comment.split("\n", 1)[0]
    assert f"runner command exited with code 7 (log: {log.replace('_', chr(92) + '_')}, in the workspace" in comment
    # the terminal: the log's last 20 lines, each at most 300 characters, control characters gone
    at = lines.index(f"runner log, last 20 lines ({log}):")
    tail = lines[at + 1:at + 21]
    assert all(line.startswith("  | ") for line in tail) and not lines[at + 21].startswith("  | ")
    assert tail[-1] == "  | " + "y" * 299 + "…"
    assert "\x1b" not in printed.out and "\ufffd[31mERROR\ufffd[0m index not found at index/shard-7" in tail[-2]
    assert tail[0] == "  | loading shard 12 of 30"
