"""``retrieval-gate sweep`` end to end: the config's grid through the runner, the cache and
``plan --sweep`` (runs made one per process from the planned entries), and run files (``--cell``),
on a small real retrieval world and on TREC DL 2019's official runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gate.cli import main
from tests.shared_data import REALDATA, need
from tests.support.small_world import RUNNER, small_world

GRID = "sweep: {params: {boost: [0.5, 1.0, 2.0, 4.0], prefer_suffix: ['#c0', '#c1']}, folds: 4}\n"


def _world(tmp: Path) -> Path:
    config = small_world(tmp, leak_in_new=False, extra_config=GRID)
    # A repository: the runs' cache keys name the code under test (its git tree)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "world"]):
        subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=tmp, check=True,
                       capture_output=True)
    return config


def _sweep(capsys, *args: str) -> tuple[dict, str]:
    assert main(["sweep", *args, "--format", "json", "--samples", "300"]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def test_the_configs_grid_runs_through_the_runner_then_the_cache(tmp_path, capsys):
    config = _world(tmp_path)
    out = tmp_path / ".retrieval-gate" / "sweep"  # the gate's own folder: not code under test
    first, said = _sweep(capsys, "--config", str(config), "--out", str(out))
    assert said.count("running command runner") == 8 and "cache hit" not in said
    assert [c["name"] for c in first["cells"]][:3] == ['boost=0.5, prefer_suffix="#c0"',
                                                       'boost=0.5, prefer_suffix="#c1"',
                                                       'boost=1.0, prefer_suffix="#c0"']
    assert first["cells"][2]["params"] == {"boost": 1.0, "prefer_suffix": "#c0"}
    assert first["reference"] is None  # retrieval.yml sets no prefer_suffix: no cell is it as it stands
    assert first["cross_validated"]["folds"] == 4 and first["cross_validated"]["stratified"] is True
    assert sum(c["folds_chosen"] for c in first["cells"]) == 4
    assert first["maximum"]["mean"] == max(c["mean"] for c in first["cells"])
    report = json.loads((out / "report.json").read_text())
    assert report["command"] == "sweep" and report["sweep"] == first
    assert "maximum over the grid (**optimistic**)" in (out / "report.md").read_text()
    again, said = _sweep(capsys, "--config", str(config))
    assert said.count("cache hit") == 8 and "running command runner" not in said
    assert again == first


def test_plan_lists_the_grid_and_runs_made_from_its_entries_give_the_same_sweep(tmp_path, capsys):
    single, matrix_world = tmp_path / "single", tmp_path / "matrix"
    for world in (single, matrix_world):
        world.mkdir()
        _world(world)
        (world / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 1.0\nprefer_suffix: '#c1'\n")
    expected, _ = _sweep(capsys, "--config", str(single / "gate.yml"))
    assert expected["reference"] == 'boost=1.0, prefer_suffix="#c1"'
    runs = matrix_world / "runs"
    assert main(["plan", "--config", str(matrix_world / "gate.yml"), "--runs-dir", str(runs), "--sweep",
                 "--format", "json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    purposes = [entry["purpose"] for entry in planned]
    # the candidate is the cell boost=1.0, #c1: one run, listed once
    assert purposes[0] == "candidate" and len(purposes) == 8 and len({e["key"] for e in planned}) == 8
    assert all(p.startswith("sweep cell ") for p in purposes[1:])
    for entry in planned:
        subprocess.run([sys.executable, str(RUNNER), "--config", entry["config_file"], "--queries", entry["queries"],
                        "--corpus", entry["corpus"], "--output", entry["output"]], check=True,
                       env={"PATH": "/usr/bin:/bin"})
    got, said = _sweep(capsys, "--config", str(matrix_world / "gate.yml"), "--runs-dir", str(runs))
    assert "running command runner" not in said
    assert got == expected
    # a cell missing from the runs folder is named by its key, never run by the gate itself
    victim = next(e for e in planned if e["purpose"].startswith("sweep cell"))
    Path(victim["output"]).unlink()
    assert main(["sweep", "--config", str(matrix_world / "gate.yml"), "--runs-dir", str(runs)]) == 3
    err = capsys.readouterr().err
    assert victim["key"] in err and "inconclusive: no sweep" in err


def _dl19(name: str) -> str:
    return str(need(REALDATA / "runs" / "trec-dl-2019-passage" / "official_nist" / f"input.{name}.gz"))


def test_trec_dl_2019s_bm25_runs_as_cells_score_as_nist_did(capsys):
    folder = need(REALDATA / "runs" / "trec-dl-2019-passage")
    cells = [f"{name}={_dl19(name)}" for name in ("bm25base_p", "bm25base_rm3_p", "bm25tuned_p", "bm25tuned_rm3_p")]
    data, said = _sweep(capsys, *sum((["--cell", c] for c in cells), []),
                        "--qrels", str(folder / "qrels" / "qrels.dl19-passage.txt"),
                        "--queries", str(folder / "topics" / "topics.dl19-passage.txt"), "--reference", "bm25base_p")
    # 200 topics in the runs and the topic file, 43 judged: the sweep is on the 43
    assert {c["query_count"] for c in data["cells"]} == {43}
    means = {c["name"]: c["mean"] for c in data["cells"]}
    assert round(means["bm25base_p"], 4) == 0.5058  # NIST's official nDCG@10 for bm25base_p
    assert data["maximum"]["cell"] == max(means, key=means.get) and data["reference"] == "bm25base_p"
    assert said.count("sweep: reading cell") == 4


@pytest.mark.parametrize("args, message", [
    (["--cell", "a=x.run"], "at least 2 --cell"),
    (["--cell", "a=x.run", "--cell", "a=y.run"], "given twice"),
    (["--cell", "x.run", "--cell", "b=y.run"], "expected NAME=RUN"),
    (["--cell", "a=x.run", "--cell", "b=y.run", "--config", "g.yml"], "--config and --runs-dir go with"),
    (["--config", "g.yml", "--qrels", "q"], "--qrels goes with --cell"),
])
def test_sweep_refuses_what_it_cannot_do_in_one_line(tmp_path, capsys, args, message, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("x.run", "y.run"):
        (tmp_path / name).write_text("q1 Q0 d1 1 1.0 t\n")
    (tmp_path / "q").write_text("q1 0 d1 1\n")
    if "--qrels" not in args and "--config" not in args:
        args = [*args, "--qrels", "q"]
    assert main(["sweep", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_cell_that_misses_golden_queries_is_refused_by_name(tmp_path, capsys):
    (tmp_path / "q").write_text("".join(f"q{i} 0 d{i} 1\n" for i in range(10)))
    (tmp_path / "a.run").write_text("".join(f"q{i} Q0 d{i} 1 1.0 t\n" for i in range(10)))
    (tmp_path / "b.run").write_text("".join(f"q{i} Q0 d{i} 1 1.0 t\n" for i in range(9)))
    code = main(["sweep", "--cell", f"a={tmp_path / 'a.run'}", "--cell", f"b={tmp_path / 'b.run'}",
                 "--qrels", str(tmp_path / "q")])
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and "cell 'b' misses 1 golden query (e.g. 'q9')" in err[-1]
    assert [line for line in err if not line.startswith("[retrieval-gate]")] == err[-1:]  # progress, then one line


def test_a_pr_that_sets_the_grids_best_cell_on_the_reporting_queries_is_flagged_beside_the_honest_estimate(
        tmp_path, capsys):
    config = small_world(tmp_path, leak_in_new=False,
                         extra_config="sweep: {params: {prefer_suffix: ['#c0', '#c1', '#c3', '#c5']}, folds: 4}\n"
                                      "tuning: {params: [prefer_suffix]}\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "world"]):
        subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=tmp_path,
                       check=True, capture_output=True)
    assert main(["archive", "--config", str(config)]) == 0
    capsys.readouterr()
    for args in (["add", "-A"], ["commit", "-qm", "baseline"]):
        subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=tmp_path,
                       check=True, capture_output=True)
    base = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, check=True, capture_output=True,
                          text=True).stdout.strip()
    grid, _ = _sweep(capsys, "--config", str(config))
    best = grid["maximum"]["cell"]  # no tuning split: the reporting queries are every judged query
    means = sorted(c["mean"] for c in grid["cells"])
    assert means[-1] - means[-2] > 1e-6  # one best cell, not a tie
    value = grid["cells"][[c["name"] for c in grid["cells"]].index(best)]["params"]["prefer_suffix"]
    (tmp_path / "retrieval.yml").write_text(f"ingestion: {{parser: v1}}\nboost: 1.0\nprefer_suffix: '{value}'\n")
    # plan lists the grid: the PR changes a swept key, and the gate will score the grid around it
    assert main(["plan", "--config", str(config), "--base", base, "--format", "json"]) == 0
    planned = [entry["purpose"] for entry in json.loads(capsys.readouterr().out)]
    assert sum(p.startswith("sweep cell ") for p in planned) == 3  # the fourth is the candidate itself
    out = tmp_path / ".retrieval-gate" / "out"
    main(["run", "--config", str(config), "--base", base, "--out", str(out)])
    capsys.readouterr()
    report = json.loads((out / "report.json").read_text())
    sweep = report["sweep"]
    assert sweep["changed_params"] == ["prefer_suffix"] and sweep["reference"] == f'prefer_suffix="{value}"'
    assert sweep["reporting_maximum"] == best and sweep["candidate_is_reporting_maximum"] is True
    assert any(r["code"] == "warning" and "the optimistic number" in r["message"]
               for r in report["verdict"]["reasons"])
    comment = (out / "comment.md").read_text()
    assert "- **Sweep** (4 cells; this PR changes" in comment and "cross-validated estimate" in comment
    assert "This PR's values are the grid's best cell on the reporting queries" in comment
    assert "## Sweep" in (out / "report.md").read_text()


@pytest.mark.parametrize("grid, message", [
    ("{fusion.: [1, 2]}", "is not a dotted config key"),
    ("{boost: [1, 2], boost.x: [1, 2]}", "one is inside the other"),
    ("{boost: [1, 1.0]}", "is listed twice"),
    ("{ingestion.parser.x: [1, 2]}", "is below 'ingestion.parser', which the retrieval config sets to \"v1\""),
])
def test_a_sweep_grid_that_would_set_something_else_is_refused_at_its_line(tmp_path, capsys, grid, message):
    config = small_world(tmp_path, leak_in_new=False, extra_config=f"sweep: {{params: {grid}}}\n")
    assert main(["sweep", "--config", str(config)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert message in err[-1] and "sweep.params" in err[-1] and str(config) in err[-1]
    assert not [line for line in err if "running" in line]  # refused before any cell runs


def test_more_folds_than_judged_queries_is_refused_before_any_cell_runs_and_is_a_warning_in_run(tmp_path, capsys):
    config = _world(tmp_path)
    config.write_text(config.read_text().replace("folds: 4", "folds: 25"))
    assert main(["sweep", "--config", str(config)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert "key 'sweep.folds': 25 folds need at least 25 judged golden queries; there are 20" in err[-1]
    assert not [line for line in err if "running" in line]


def test_outside_git_the_sweep_says_the_cache_is_not_used(tmp_path, capsys):
    config = small_world(tmp_path, leak_in_new=False, extra_config="sweep: {params: {boost: [0.5, 1.0]}, folds: 2}\n")
    _sweep(capsys, "--config", str(config))  # (_sweep asserts exit 0)
    assert main(["sweep", "--config", str(config), "--samples", "50"]) == 0
    assert "the run cache is not used for the sweep's cells" in capsys.readouterr().err


def test_a_cell_path_may_hold_an_equals_sign_and_a_name_no_control_characters(tmp_path, capsys):
    folder = tmp_path / "runs" / "k=1"
    folder.mkdir(parents=True)
    (tmp_path / "q").write_text("".join(f"q{i} 0 d{i} 1\n" for i in range(6)))
    for name in ("a", "b"):
        (folder / f"{name}.run").write_text("".join(f"q{i} Q0 d{i} 1 1.0 t\nq{i} Q0 x{i} 2 0.5 t\n" for i in range(6)))
    data, _ = _sweep(capsys, "--cell", f"rrf=60,w=0.5={folder / 'a.run'}", "--cell", f"b={folder / 'b.run'}",
                     "--qrels", str(tmp_path / "q"), "--folds", "2")
    assert [c["name"] for c in data["cells"]] == ["rrf=60,w=0.5", "b"]
    assert main(["sweep", "--cell", f"x\x1b[31mRED={folder / 'a.run'}", "--cell", f"b={folder / 'b.run'}",
                 "--qrels", str(tmp_path / "q")]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "a cell name is plain text" in err and err.count("\n") == 1


def test_the_config_as_it_stands_is_found_whether_it_writes_1_or_1_0():
    from gate.inputs.retrieval_config import RetrievalConfig
    from gate.pipeline.sweep import reference_cell, sweep_cells

    cells = sweep_cells({"boost": (0.5, 1, 2)}, RetrievalConfig("r", {"boost": 1.0}, ".yml"))
    assert reference_cell(cells, RetrievalConfig("r", {"boost": 1.0}, ".yml")) == "boost=1"
    flags = sweep_cells({"exact": (True, 1)}, RetrievalConfig("r", {"exact": 1}, ".yml"))
    assert reference_cell(flags, RetrievalConfig("r", {"exact": 1}, ".yml")) == "exact=1"  # true is not 1
