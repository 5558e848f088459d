"""Files the gate writes get the process umask's mode (0644 under 022), not mkstemp's 0600.

Later workflow steps (upload the report, the fork-safe comment job, the next archive) may run
as another user than the step that wrote the files.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from gate.cli import main
from gate.common.atomic import write_text_atomic
from gate.common.errors import InputError


@pytest.fixture()
def umask():
    def set_mask(mask: int) -> None:
        os.umask(mask)

    saved = os.umask(0o022)
    os.umask(saved)
    yield set_mask
    os.umask(saved)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("mask, expected", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_an_atomic_write_has_the_mode_open_would_give(tmp_path, umask, mask, expected):
    umask(mask)
    target = write_text_atomic(tmp_path / "sub" / "report.json", "{}\n")
    assert _mode(target) == expected
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    assert _mode(plain) == expected  # the same as an ordinary open()
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".tmp")]


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def test_reports_and_lift_files_are_world_readable_under_umask_022(tmp_path, umask, capsys):
    umask(0o022)
    base, cand, qrels = tmp_path / "base.run", tmp_path / "cand.run", tmp_path / "qrels.txt"
    base.write_text("".join(f"q{i} Q0 d{i} 1 1.0 b\nq{i} Q0 x{i} 2 0.5 b\n" for i in range(6)))
    cand.write_text("".join(f"q{i} Q0 x{i} 1 1.0 c\nq{i} Q0 d{i} 2 0.5 c\n" for i in range(6)))
    qrels.write_text("".join(f"q{i} 0 d{i} 1\n" for i in range(6)))
    common = ["--qrels", str(qrels)]
    assert main(["compare", "--baseline", str(base), "--candidate", str(cand), *common, "--samples", "200",
                 "--out", str(tmp_path / "compare")]) == 0
    assert main(["lift", "--before-run", str(base), "--after-run", str(cand), *common,
                 "--output-dir", str(tmp_path / "lift")]) == 0
    assert main(["noise", "--from-runs", str(base), str(cand), *common, "--out", str(tmp_path / "noise.json")]) == 0
    capsys.readouterr()
    written = _files(tmp_path / "compare") + _files(tmp_path / "lift") + [tmp_path / "noise.json"]
    assert len(written) == 2 + 4 + 1
    assert {p.name: oct(_mode(p)) for p in written} == {p.name: oct(0o644) for p in written}


def test_an_atomic_write_refuses_to_rename_over_what_is_no_regular_file(tmp_path):
    """``--out /dev/stdout`` as root would replace the system's link with a file; over a FIFO the
    reader at its other end would never see a byte. Refused, and the FIFO stays a FIFO; a
    symlink to a regular file is still written over as before."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        write_text_atomic(fifo, "x")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    with pytest.raises(InputError, match="not a regular file"):
        write_text_atomic("/dev/stdout", "x")
    with pytest.raises(InputError, match="not a regular file"):
        write_text_atomic("/dev/shm/retrieval-gate-never-written", "x")
    (tmp_path / "real").write_text("old")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    write_text_atomic(tmp_path / "link", "new")
    assert (tmp_path / "link").read_text() == "new"


def test_noise_out_over_a_fifo_is_one_line_exit_2(tmp_path, capsys):
    runs = []
    for i in range(3):
        runs.append(tmp_path / f"r{i}.run")
        runs[-1].write_text(f"q1 Q0 d1 1 {1 + i} t\n")
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    os.mkfifo(tmp_path / "noise.json")
    code = main(["noise", "--from-runs", *map(str, runs), "--qrels", str(tmp_path / "qrels.txt"),
                 "--out", str(tmp_path / "noise.json")])
    err = capsys.readouterr().err
    assert code == 2 and "noise.json: cannot write: not a regular file" in err and len(err.strip().splitlines()) == 1
    assert stat.S_ISFIFO(os.lstat(tmp_path / "noise.json").st_mode)
