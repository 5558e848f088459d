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
