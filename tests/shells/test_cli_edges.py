"""The command's edges with the world: a closed pipe, a missing extra, a piped --help."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.shared_data import REPO

ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def _write_runs(tmp_path):
    base, cand, qrels = tmp_path / "base.run", tmp_path / "cand.run", tmp_path / "qrels.txt"
    base.write_text("".join(f"q{i} Q0 d{i} 1 1.0 b\nq{i} Q0 x{i} 2 0.5 b\n" for i in range(30)))
    cand.write_text("".join(f"q{i} Q0 x{i} 1 1.0 c\nq{i} Q0 d{i} 2 0.5 c\n" for i in range(30)))
    qrels.write_text("".join(f"q{i} 0 d{i} 1\n" for i in range(30)))
    return base, cand, qrels


class _ClosedPipe:
    """stdout after `| head -1` has read its line and gone: every write fails with EPIPE.

    (A real pipe is not used: on some kernels, this sandbox's among them, a write to a pipe
    whose reader has closed does not fail, so the test would pass whatever the gate does.)"""

    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self):
        raise BrokenPipeError(32, "Broken pipe")


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_output_into_a_closed_pipe_is_quiet_and_keeps_the_commands_code(tmp_path, monkeypatch, capsys, fmt):
    from gate.cli import main

    base, cand, qrels = _write_runs(tmp_path)
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    code = main(["compare", "--baseline", str(base), "--candidate", str(cand), "--qrels", str(qrels),
                 "--samples", "200", "--format", fmt, "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 0, err
    assert err == ""  # no BrokenPipeError, no "internal error"
    assert (tmp_path / "out" / "report.json").is_file()  # the command went on to its end


@pytest.mark.parametrize("module", ["bm25s", "faiss", "scipy"])
def test_demo_without_the_reference_extra_says_which_extra(tmp_path, module):
    code = (f"import sys; sys.modules[{module!r}] = None\n"
            "from gate.cli import main\n"
            "sys.exit(main(['demo', '--scale', '0.05', '--repeats', '2', '--out', 'demo']))\n")
    done = subprocess.run([sys.executable, "-c", code], env=ENV, cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "retrieval-gate: error: the demo needs the reference retriever: pip install 'retrieval-gate[reference]' "
        f"(or ./run demo; missing: {module})"]
    assert not (tmp_path / "demo").exists()  # refused before building anything


def test_inside_actions_no_line_the_cli_prints_is_a_workflow_command(tmp_path, monkeypatch, capsys):
    """A retrieval config key holding a newline and ``::warning::`` reaches the CLI's lines (the
    config diff `run` prints); inside GitHub Actions the runner would obey it. No line may start
    with ``::``."""
    import subprocess
    import sys

    from gate.cli import main

    root = tmp_path / "repo"
    (root / "eval").mkdir(parents=True)
    (root / "eval" / "q.tsv").write_text("".join(f"q{i}\tquery {i}\n" for i in range(6)))
    (root / "eval" / "qrels.txt").write_text("".join(f"q{i} 0 d{i} 1\n" for i in range(6)))
    (root / "runner.py").write_text("import sys\nopen(sys.argv[2], 'w').write(''.join("
                                    "f'q{i} Q0 d{i} 1 1.0 r\\n' for i in range(6)))\n")
    key = '"x\\n::warning title=forged::injected\\n"'
    (root / "retrieval.yml").write_text(f"{key}: 1\n")
    (root / ".retrieval-gate.yml").write_text(
        "golden: {queries: eval/q.tsv, qrels: eval/qrels.txt}\nretrieval: {config: retrieval.yml}\n"
        f"runner:\n  type: command\n  command: \"{sys.executable} runner.py {{config}} {{run}}\"\n"
        "leakage: {enabled: false}\nstatistics: {samples: 200}\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    config = str(root / ".retrieval-gate.yml")
    assert main(["archive", "--config", config]) == 0, capsys.readouterr()
    (root / "retrieval.yml").write_text(f"{key}: 2\n")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.delenv("GITHUB_EVENT_NAME", raising=False)
    monkeypatch.delenv("GITHUB_EVENT_PATH", raising=False)
    capsys.readouterr()
    main(["plan", "--config", config])
    main(["run", "--config", config, "--out", str(tmp_path / "out")])
    captured = capsys.readouterr()
    lines = (captured.out + captured.err).splitlines()
    assert any("warning title=forged" in line for line in lines), captured
    assert not [line for line in lines if line.lstrip().startswith("::")]
