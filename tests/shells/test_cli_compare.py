"""`retrieval-gate compare` end to end: report contract, exit codes, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from gate.cli import main
from gate.demo.example_files import write_example_files
from tests.shared_data import REALDATA, REPO, need

SCHEMA = json.loads((REPO / "gate" / "report" / "report.schema.json").read_text())


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    return write_example_files(tmp_path_factory.mktemp("example"), seed=7, queries=60, docs=200)


def run_cli(*argv: str) -> int:
    return main(list(argv))


def test_compare_writes_a_report_that_follows_the_schema(example, tmp_path, capsys):
    code = run_cli(
        "compare", "--baseline", str(example.baseline), "--candidate", str(example.candidate),
        "--qrels", str(example.qrels), "--queries", str(example.queries), "--samples", "2000",
        "--out", str(tmp_path),
    )
    assert code == 0
    report = json.loads((tmp_path / "report.json").read_text())
    jsonschema.validate(report, SCHEMA)
    assert report["metric"] == "nDCG@10"
    assert report["query_count"] == 60
    assert report["delta"]["samples"] == 2000 and report["delta"]["seed"] == 7
    ids = [row["query_id"] for row in report["per_query"]]
    assert ids == sorted(ids, key=lambda q: q.encode())
    assert {row["stratum"] for row in report["per_query"]} >= {"navigational", "how_to"}
    assert set(report["measures"]) == {"nDCG@10", "AP", "RR@10", "R@100", "Judged@10"}
    assert abs(report["delta"]["mean"] - (report["candidate"]["mean"] - report["baseline"]["mean"])) < 1e-12
    assert set(report["inputs"]) == {"baseline", "candidate", "qrels", "queries"}
    markdown = (tmp_path / "report.md").read_text()
    assert "nDCG@10" in markdown and "| measure | baseline | candidate | delta |" in markdown
    out = capsys.readouterr().out
    assert "delta" in out and "95% CI" in out


def test_reordered_query_file_gives_identical_numbers(example, tmp_path):
    lines = example.queries.read_text().splitlines()
    shuffled = tmp_path / "shuffled.jsonl"
    shuffled.write_text("\n".join(reversed(lines)) + "\n")
    reports = []
    for name, queries in (("a", example.queries), ("b", shuffled)):
        assert run_cli("compare", "--baseline", str(example.baseline), "--candidate", str(example.candidate),
                       "--qrels", str(example.qrels), "--queries", str(queries), "--samples", "500",
                       "--out", str(tmp_path / name)) == 0
        reports.append(json.loads((tmp_path / name / "report.json").read_text()))
    assert reports[0]["delta"] == reports[1]["delta"]
    assert reports[0]["per_query"] == reports[1]["per_query"]
    assert reports[0]["inputs"]["queries"]["sha256"] == reports[1]["inputs"]["queries"]["sha256"]


def test_identical_runs_give_zero_interval_and_p_one(example, capsys):
    assert run_cli("compare", "--baseline", str(example.baseline), "--candidate", str(example.baseline),
                   "--qrels", str(example.qrels), "--format", "json", "--samples", "300") == 0
    delta = json.loads(capsys.readouterr().out)["delta"]
    assert delta["ci_low"] == 0.0 and delta["ci_high"] == 0.0
    assert delta["p_randomization"] == 1.0 and delta["mean"] == 0.0
    assert delta["ties"] == 60


def _bad(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


GOOD_QRELS = "1 0 d1 1\n1 0 d2 0\n2 0 d3 2\n"
GOOD_RUN = "1 Q0 d1 1 2.0 t\n1 Q0 d2 2 1.0 t\n2 Q0 d3 1 1.5 t\n"


@pytest.mark.parametrize(
    "which, text, expected",
    [
        ("run", "1 Q0 d1 1 2.0 t\n1 Q0 d2 2\n", "run.txt:2:"),
        ("run", "1 Q0 d1 1 2.0 t\n1 Q0 d1 2 1.0 t\n", "run.txt:2:"),
        ("run", "1 Q0 d1 1 abc t\n", "run.txt:1:"),
        ("run", "1 Q0 d1 1 2.0 t\n\n# comment\n2 Q0 d3 1 nan t\n", "run.txt:4:"),
        ("run", "1 Q0 d1 1 inf t\n", "run.txt:1:"),
        ("qrels", "1 0 d1 1\n1 0 d2 1.5\n", "qrels.txt:2:"),
        ("qrels", "1 0 d1 1\n1 0 d1 0\n", "qrels.txt:2:"),
        ("queries", '{"query_id": "1", "text": "a"}\n{"query_id": 2, "text":\n', "queries.jsonl:2:"),
    ],
)
def test_bad_input_is_one_line_with_file_and_line_and_exit_2(tmp_path, capsys, which, text, expected):
    files = {
        "run": _bad(tmp_path, "run.txt", GOOD_RUN),
        "qrels": _bad(tmp_path, "qrels.txt", GOOD_QRELS),
        "queries": _bad(tmp_path, "queries.jsonl", '{"query_id": "1", "text": "a"}\n'),
    }
    files[which].write_text(text)
    code = run_cli("compare", "--baseline", str(files["run"]), "--candidate", str(files["run"]),
                   "--qrels", str(files["qrels"]), "--queries", str(files["queries"]), "--samples", "100")
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("retrieval-gate: error: ")
    assert expected in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["--metric", "nDGC@10"], "nDGC@10"),
        (["--samples", "0"], "--samples"),
        (["--ci-method", "magic"], "--ci-method"),
        (["--baseline", "/nonexistent/run.txt"], "/nonexistent/run.txt"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(tmp_path, capsys, argv, expected):
    run = _bad(tmp_path, "run.txt", GOOD_RUN)
    qrels = _bad(tmp_path, "qrels.txt", GOOD_QRELS)
    base = ["compare", "--baseline", str(run), "--candidate", str(run), "--qrels", str(qrels)]
    code = run_cli(*base, *argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and expected in err


def test_internal_error_is_exit_4_with_saved_traceback(tmp_path, capsys, monkeypatch):
    import gate.pipeline.compare

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(gate.pipeline.compare, "compare_evaluated", broken)
    run = _bad(tmp_path, "run.txt", GOOD_RUN)
    qrels = _bad(tmp_path, "qrels.txt", GOOD_QRELS)
    code = run_cli("compare", "--baseline", str(run), "--candidate", str(run), "--qrels", str(qrels))
    err = capsys.readouterr().err
    assert code == 4 and err.count("\n") == 1
    saved = Path(err.split("traceback saved to ")[1].rstrip(")\n"))
    assert "RuntimeError: boom" in saved.read_text()
    saved.unlink()


def test_python_dash_m_gate_is_the_same_command(example):
    proc = subprocess.run(
        [sys.executable, "-m", "gate", "compare", "--baseline", str(example.baseline), "--candidate",
         str(example.candidate), "--qrels", str(example.qrels), "--format", "json", "--samples", "200"],
        capture_output=True, text=True, cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["query_count"] == 60


def test_dl2019_nist_official_ndcg10(capsys):
    dl19 = need(REALDATA / "runs" / "trec-dl-2019-passage")
    official = {}
    for line in (dl19 / "nist_metadata" / "nist_summary_scores.tsv").read_text().splitlines()[1:]:
        run_id, evaluator, measure, query, value = line.split("\t")
        if evaluator == "trec_eval" and measure == "ndcg_cut_10" and query == "all":
            official[run_id] = float(value)
    code = run_cli(
        "compare", "--baseline", str(dl19 / "official_nist" / "input.bm25base_p.gz"),
        "--candidate", str(dl19 / "official_nist" / "input.p_bert.gz"),
        "--qrels", str(dl19 / "qrels" / "qrels.dl19-passage.txt"), "--format", "json", "--samples", "1000",
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["query_count"] == 43
    assert round(report["baseline"]["mean"], 4) == official["bm25base_p"]
    assert round(report["candidate"]["mean"], 4) == official["p_bert"]


def _two_strata(tmp_path: Path) -> dict[str, Path]:
    """60 queries in strata A and B (half the traffic each): the candidate loses every A query
    its relevant document (rank 1 -> 11) and gains it on every B query (rank 11 -> 1)."""
    queries, qrels, base, cand = [], [], [], []
    for i in range(60):
        qid, stratum = f"q{i}", "A" if i < 30 else "B"
        queries.append(json.dumps({"query_id": qid, "text": f"query {i}", "stratum": stratum}))
        qrels.append(f"{qid} 0 rel{i} 1")
        docs = [f"d{i}_{k}" for k in range(10)]
        good, bad = [f"rel{i}", *docs], [*docs, f"rel{i}"]
        for run, ranked in ((base, good if stratum == "A" else bad), (cand, bad if stratum == "A" else good)):
            run += [f"{qid} Q0 {d} {r} {100 - r} x" for r, d in enumerate(ranked, 1)]
    files = {"queries": "queries.jsonl", "qrels": "qrels.txt", "baseline": "base.run", "candidate": "cand.run"}
    out = {k: tmp_path / v for k, v in files.items()}
    for key, lines in (("queries", queries), ("qrels", qrels), ("baseline", base), ("candidate", cand)):
        out[key].write_text("\n".join(lines) + "\n")
    out["strata"] = tmp_path / "strata.yml"
    out["strata"].write_text("shares: {A: 0.5, B: 0.5}\nguarded: [A]\n")
    return out


def test_compare_decides_on_damaged_traffic_as_run_does(tmp_path, capsys):
    """Every A query loses, every B query gains: the mean does not move, half the traffic is
    damaged and A is guarded. run fails this change, and so does compare's decision."""
    f = _two_strata(tmp_path)
    argv = ["compare", "--baseline", str(f["baseline"]), "--candidate", str(f["candidate"]), "--qrels",
            str(f["qrels"]), "--queries", str(f["queries"]), "--strata", str(f["strata"]), "--fail-on-decision",
            "--format", "json"]
    code = main(argv)
    report = json.loads(capsys.readouterr().out)
    codes = [r["code"] for r in report["decision"]["reasons"]]
    assert code == 1 and report["decision"]["kind"] == "fail"
    assert codes[:2] == ["damaged_traffic", "guarded_stratum"], codes
    # The text output says what the traffic rules saw, not only the decision they made.
    assert main([a for a in argv if a not in ("--format", "json")]) == 1
    text = capsys.readouterr().out
    assert "traffic: 50% of traffic damaged (A)" in text, text


def test_compare_require_improvement_passes_a_shown_improvement_without_a_band(capsys):
    """compare has no noise band: an improvement it shows is counted (run needs the band)."""
    runs = need(REALDATA / "runs" / "trec-dl-2019-passage")
    code = main(["compare", "--baseline", str(runs / "official_nist" / "input.bm25base_p.gz"), "--candidate",
                 str(runs / "official_nist" / "input.p_bert.gz"), "--qrels",
                 str(runs / "qrels" / "qrels.dl19-passage.txt"), "--require-improvement", "--fail-on-decision"])
    first = capsys.readouterr().out.splitlines()[0]
    assert code == 0 and first.startswith("decision: pass - improvement shown"), first
