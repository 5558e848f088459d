"""`compare --strata` and `lift` from the command line."""

from __future__ import annotations

import json

from gate.cli import main
from gate.demo.example_files import write_example_files
from tests.shared_data import REALDATA, need

SHARES = "navigational: 0.22\nerror_string: 0.18\nentity_attribute: 0.15\nmigration: 0.06\nhow_to: 0.31\ntail: 0.08\n"


def test_compare_with_strata_adds_the_table_traffic_and_buckets(tmp_path, capsys):
    files = write_example_files(tmp_path / "in", seed=7, queries=120, docs=300)
    shares = tmp_path / "shares.yml"
    shares.write_text(SHARES)
    code = main(["compare", "--baseline", str(files.baseline), "--candidate", str(files.candidate),
                 "--qrels", str(files.qrels), "--queries", str(files.queries), "--strata", str(shares),
                 "--samples", "1000", "--out", str(tmp_path / "out")])
    assert code == 0
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert len(report["strata"]) == 6
    traffic = report["traffic"]
    parts = ("improved", "damaged", "untouched", "unclear", "unmeasured")
    assert abs(sum(traffic[k] for k in parts) - 1) < 1e-9
    assert sum(b["count"] for b in report["lift"]["buckets"]) + report["lift"]["no_relevant"] == report["query_count"]
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "## Strata" in markdown and "**Traffic**" in markdown and "## Movement buckets" in markdown


def test_shares_summing_to_point_nine_are_rejected_in_one_line(tmp_path, capsys):
    files = write_example_files(tmp_path / "in", seed=7, queries=30, docs=100)
    shares = tmp_path / "shares.yml"
    shares.write_text(SHARES.replace("tail: 0.08", "tail: -0.02"))  # 0.90 in all
    code = main(["compare", "--baseline", str(files.baseline), "--candidate", str(files.candidate),
                 "--qrels", str(files.qrels), "--queries", str(files.queries), "--strata", str(shares)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert str(shares) in err
    shares.write_text(SHARES.replace("tail: 0.08", "tail: -0.02").replace("how_to: 0.31", "how_to: 0.21")
                      .replace("tail: -0.02", "tail: 0.08"))
    code = main(["compare", "--baseline", str(files.baseline), "--candidate", str(files.candidate),
                 "--qrels", str(files.qrels), "--queries", str(files.queries), "--strata", str(shares)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "shares sum to 0.9000, not 1" in err and f"{shares}:" in err


def test_lift_writes_four_files_on_dl19(tmp_path, capsys):
    dl19 = need(REALDATA / "runs" / "trec-dl-2019-passage")
    qrels = dl19 / "qrels" / "qrels.dl19-passage.txt"
    judged = sorted({line.split()[0] for line in qrels.read_text().splitlines() if line.strip()})
    topics = [line for line in (dl19 / "topics" / "topics.dl19-passage.txt").read_text().splitlines()
              if line.split("\t")[0] in judged]
    queries = tmp_path / "judged-topics.tsv"
    queries.write_text("\n".join(topics) + "\n")
    code = main(["lift", "--before-run", str(dl19 / "official_nist" / "input.bm25base_p.gz"),
                 "--after-run", str(dl19 / "official_nist" / "input.p_bert.gz"), "--qrels", str(qrels),
                 "--queries", str(queries), "--rel-threshold", "2", "--output-dir", str(tmp_path / "lift")])
    assert code == 0
    names = sorted(p.name for p in (tmp_path / "lift").iterdir())
    assert names == ["retrieval_lift.json", "retrieval_lift.md", "retrieval_lift_by_bucket.csv",
                     "retrieval_lift_examples.jsonl"]
    data = json.loads((tmp_path / "lift" / "retrieval_lift.json").read_text())
    assert sum(data["counts"].values()) + data["no_relevant"] == 43


def test_lift_with_qrels_that_share_no_query_stops_with_exit_2(tmp_path, capsys):
    run = tmp_path / "r.run"
    run.write_text("".join(f"{q} Q0 d{q} 1 1.0 t\n" for q in range(10)))
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("x 0 d0 1\n")
    assert main(["lift", "--before-run", str(run), "--after-run", str(run), "--qrels", str(qrels),
                 "--output-dir", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nothing to compare" in err[0] and str(run) in err[0]
    assert not (tmp_path / "o").exists()
