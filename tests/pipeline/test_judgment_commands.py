"""Judgment formats through the commands: ``judgments convert`` (round trips, exit codes),
``compare --qrels FILE.json``, and ``run`` with golden.qrels a Quepid CSV and judged.export."""

from __future__ import annotations

import csv
import json
import os
import stat
from pathlib import Path

import pytest

from gate.cli import main
from gate.common.errors import InputError
from gate.demo.example_files import write_example_files
from gate.inputs.config import load_config
from gate.inputs.readers.judgment_formats.text_keys import text_id
from gate.inputs.readers.qrels import load_qrels
from gate.inputs.readers.queries import load_queries
from gate.pipeline.archive import archive
from tests.support.small_world import small_world

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "judgments"
GOLDEN = FIXTURES / "golden_queries.tsv"


def _convert(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["judgments", "convert", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("source", ["rank_eval_docs.json", "search_relevance_docs.json", "rre_docs.json",
                                    "quepid_docs.csv", "rre_real.json", "quepid_detailed_real.csv"])
@pytest.mark.parametrize("via", ["trec", "quepid", "rank-eval", "jsonl"])
def test_round_trip_gives_the_same_judgments(tmp_path, capsys, source, via):
    """A -> B -> back (TREC, and A's own format where the gate writes it) judges the same
    (query, document) pairs alike, queries keyed by the golden ids where their text is golden."""
    golden = load_queries(GOLDEN)
    original = load_qrels(FIXTURES / source, queries=golden).judgments
    there = tmp_path / f"there.{via}"
    code, _, err = _convert(capsys, str(FIXTURES / source), "--to", via, "--out", str(there), "--queries", str(GOLDEN))
    assert code == 0, err
    if via == "jsonl":  # an output for other tools: the same rows, one object each
        rows = [json.loads(line) for line in there.read_text().splitlines()]
        assert {(r["query_id"], r["doc_id"], r["relevance"]) for r in rows} == \
            {(q, d, r) for q, docs in original.items() for d, r in docs.items()}
        return
    # The queries file beside a TREC file names the texts of its t- ids (judged texts no golden query holds).
    texts = tmp_path / "there.queries.tsv"
    queries = texts if texts.exists() else GOLDEN
    own = {"rank_eval_docs.json": "rank-eval", "quepid_docs.csv": "quepid", "quepid_detailed_real.csv": "quepid"}
    for back_to in ("trec", own.get(source, "trec")):
        back = tmp_path / f"back.{back_to}"
        code, _, err = _convert(capsys, str(there), "--to", back_to, "--out", str(back), "--queries", str(queries))
        assert code == 0, err
        assert load_qrels(back, queries=golden).judgments == original, back_to


def test_convert_counts_and_writes_the_queries_file_beside(tmp_path, capsys):
    out = tmp_path / "rre.qrels"
    code, _, err = _convert(capsys, str(FIXTURES / "rre_real.json"), "--to", "trec", "--out", str(out))
    assert code == 0
    queries_out = tmp_path / "rre.queries.tsv"
    assert err.splitlines()[0] == f"judgments: 4 queries, 7 judgments; wrote {out}; wrote {queries_out}"
    assert (tmp_path / "rre.queries.tsv").read_text().splitlines()[0].endswith("\tfender")
    assert out.read_text().splitlines()[0].split()[2:] == ["1", "3"]


def test_convert_counts_judged_texts_that_are_no_golden_query(tmp_path, capsys):
    code, out, err = _convert(capsys, str(FIXTURES / "search_relevance_docs.json"), "--to", "trec",
                              "--queries", str(GOLDEN))
    assert code == 0
    assert err.strip() == ("judgments: 3 queries, 4 judgments (1 of the queries are no golden query: outside the "
                           "query universe)")
    assert out.splitlines()[-1] == f"{text_id('not a golden query')} 0 d4 2"


def test_convert_errors_are_one_line_exit_2(tmp_path, capsys):
    (tmp_path / "bad.json").write_text('{"requests": [{"id": "q", "request": {}, "ratings": [{"_id": 1}]}]}')
    code, out, err = _convert(capsys, str(tmp_path / "bad.json"), "--to", "trec")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "requests[0].ratings[0]: missing '_index'" in err
    code, _, err = _convert(capsys, str(FIXTURES / "rank_eval_real.json"), "--to", "quepid")
    assert code == 2 and "query 'amsterdam_query' has no text" in err and "Traceback" not in err


def test_quepid_and_rank_eval_output_escape_hostile_texts(tmp_path, capsys):
    (tmp_path / "golden.tsv").write_text('q1\t=HYPERLINK("http://x","y")\nq2\tsay "hi", then <b>go</b>\n')
    (tmp_path / "qrels.txt").write_text("q1 0 -d1 1\nq2 0 d2 0\n")
    code, out, _ = _convert(capsys, str(tmp_path / "qrels.txt"), "--to", "quepid", "--queries",
                            str(tmp_path / "golden.tsv"))
    assert code == 0
    rows = list(csv.reader(out.splitlines()))
    assert rows[0] == ["query", "docid", "rating"]
    assert rows[1] == [' =HYPERLINK("http://x","y")', " -d1", "1"]  # no cell starts a formula
    code, out, _ = _convert(capsys, str(tmp_path / "qrels.txt"), "--to", "rank-eval", "--queries",
                            str(tmp_path / "golden.tsv"))
    body = json.loads(out)
    assert body["requests"][1]["params"]["query_string"] == 'say "hi", then <b>go</b>'
    assert body["requests"][0]["ratings"] == [{"_index": "index", "_id": "-d1", "rating": 1}]


def test_compare_reads_a_rank_eval_body_as_its_qrels(tmp_path, capsys):
    files = write_example_files(tmp_path / "in", seed=7, queries=40, docs=120)
    body = tmp_path / "ratings.json"
    assert _convert(capsys, str(files.qrels), "--to", "rank-eval", "--out", str(body))[0] == 0
    codes = []
    for name, qrels in (("trec", files.qrels), ("json", body)):
        codes.append(main(["compare", "--baseline", str(files.baseline), "--candidate", str(files.candidate),
                           "--qrels", str(qrels), "--samples", "300", "--out", str(tmp_path / name)]))
        capsys.readouterr()
    reports = [json.loads((tmp_path / n / "report.json").read_text()) for n in ("trec", "json")]
    assert codes[0] == codes[1] and codes[0] in (0, 1)
    assert reports[0]["delta"] == reports[1]["delta"]


def _compare_with_qrels(tmp_path, capsys, qrels) -> tuple[int, str]:
    """``compare`` of the example runs judged by ``qrels``: its exit code and stderr."""
    files = write_example_files(tmp_path / "in", seed=7, queries=20, docs=60)
    code = main(["compare", "--baseline", str(files.baseline), "--candidate", str(files.candidate),
                 "--qrels", str(qrels), "--out", str(tmp_path / "o")])
    return code, capsys.readouterr().err


def test_compare_with_a_broken_json_qrels_exits_2(tmp_path, capsys):
    (tmp_path / "r.json").write_text('{"requests": [{"id": "q", "request": {}, "ratings": [{"_index": "i", '
                                     '"_id": "d", "rating": "x"}]}]}')
    code, err = _compare_with_qrels(tmp_path, capsys, tmp_path / "r.json")
    assert code == 2 and "r.json: requests[0].ratings[0].rating: rating 'x' is not a number" in err


def test_compare_with_text_keyed_judgments_and_no_queries_says_to_give_them(tmp_path, capsys):
    """A Quepid CSV names queries by text; without --queries its ids are digests no run names:
    the refusal says what to give, not only that nothing matched."""
    files = write_example_files(tmp_path / "in", seed=7, queries=20, docs=60)
    code, _, err = _convert(capsys, str(files.qrels), "--to", "quepid", "--queries", str(files.queries),
                            "--out", str(tmp_path / "j.csv"))
    assert code == 0, err
    code, err = _compare_with_qrels(tmp_path, capsys, tmp_path / "j.csv")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "j.csv names queries by their text: give the queries (--queries)" in err


def test_compare_with_anchored_judgments_says_they_need_a_corpus(tmp_path, capsys):
    """compare has runs and qrels, no corpus to map document and span judgments onto: one line
    saying what the file is and where it is read, not "not a judgment format"."""
    (tmp_path / "j.jsonl").write_text('{"query_id": "q1", "doc_id": "d1", "grade": 2}\n'
                                      '{"query_id": "q1", "doc_id": "d2", "start": 0, "end": 9, "grade": 1}\n')
    code, err = _compare_with_qrels(tmp_path, capsys, tmp_path / "j.jsonl")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "j.jsonl: holds judgments anchored to documents and spans" in err and "retrieval-gate run" in err


def test_run_with_quepid_csv_golden_qrels_and_the_unjudged_exports(tmp_path, capsys):
    path = small_world(tmp_path, leak_in_new=False, extra_config="judged: {export: [quepid, rank-eval]}\n")
    code, _, err = _convert(capsys, str(tmp_path / "qrels.txt"), "--to", "quepid", "--queries",
                            str(tmp_path / "golden.jsonl"), "--out", str(tmp_path / "judgments.csv"))
    assert code == 0, err
    # Keep only the relevant judgments: the candidate's top 10 then holds unjudged documents.
    rows = [r for r in csv.reader((tmp_path / "judgments.csv").read_text().splitlines()) if r[2] != "0"]
    with open(tmp_path / "judgments.csv", "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)
    config = path.read_text().replace("qrels: qrels.txt", "qrels: judgments.csv")
    path.write_text(config)
    archive(load_config(path), progress=lambda m: None)
    code = main(["run", "--config", str(path), "--out", str(tmp_path / "out")])
    capsys.readouterr()
    assert code in (0, 1)
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["inputs"]["qrels"]["count"] == len(rows) - 1
    unjudged = (tmp_path / "out" / "unjudged.tsv").read_text().splitlines()[1:]
    assert unjudged
    listed = list(csv.reader((tmp_path / "out" / "unjudged-quepid.csv").read_text().splitlines()))
    texts = {q.query_id: q.text for q in load_queries(tmp_path / "golden.jsonl").queries}
    pairs = list(dict.fromkeys(tuple(line.split("\t")[:2]) for line in unjudged))
    assert listed[0] == ["query", "docid", "rating"]
    assert listed[1:] == [[texts[q], d, ""] for q, d in pairs]
    body = json.loads((tmp_path / "out" / "unjudged-rank-eval.json").read_text())
    assert sum(len(r["ratings"]) for r in body["requests"]) == len(pairs)
    assert all(x["rating"] is None for r in body["requests"] for x in r["ratings"])


def test_judged_export_is_strict(tmp_path):
    path = small_world(tmp_path, leak_in_new=False, extra_config="judged: {export: [quepid, labelbox]}\n")
    with pytest.raises(InputError, match=r"judged\.export.*'labelbox' is not one of quepid, rank-eval"):
        load_config(path)
    path.write_text(path.read_text().replace("[quepid, labelbox]", "[]"))
    assert load_config(path).judged.export == ()


@pytest.mark.parametrize("body", [
    {"requests": [{"id": f"q{i}", "request": {"query": {"match_all": {}}},
                   "ratings": [{"_index": "i", "_id": f"d{j}", "rating": 1} for j in range(20)]} for i in range(100)]},
    {"judgmentRatings": [{"query": f"query {i}", "ratings": [{"docId": f"d{j}", "rating": "1.000"}
                                                             for j in range(20)]} for i in range(100)]},
])
def test_convert_reads_a_json_body_on_one_line_longer_than_a_qrels_line(tmp_path, capsys, body):
    """A minified body (curl, jq -c) is one line of tens of KiB: convert reads it, as run does."""
    source = tmp_path / "ratings.json"
    source.write_text(json.dumps(body))
    assert source.stat().st_size > 64 * 1024
    code, out, err = _convert(capsys, str(source), "--to", "trec", "--queries", str(GOLDEN))
    assert code == 0, err
    assert len(out.splitlines()) == 2000


def test_convert_refuses_to_write_over_a_device_or_a_pipe(tmp_path, capsys):
    """An atomic write renames over the name: ``--out /dev/stdout`` replaced the system's link with
    a file (and wrote /dev/stdout.queries.tsv). Probed with names no old code can damage."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for out in (str(fifo), "/proc/self/fd/1"):
        code, _, err = _convert(capsys, str(FIXTURES / "rre_docs.json"), "--to", "trec", "--out", out)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert "not a regular file" in err
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_convert_refuses_one_file_for_judgments_and_query_texts(tmp_path, capsys):
    out = tmp_path / "both.tsv"
    code, _, err = _convert(capsys, str(FIXTURES / "rre_docs.json"), "--to", "trec", "--out", str(out),
                            "--queries-out", str(out))
    assert code == 2 and "--out and --queries-out both name" in err
    assert not out.exists()


def test_convert_says_what_the_written_format_does_not_carry(tmp_path, capsys):
    """A _rank_eval body's own searches and metric are not written back, and a request with no
    query text would search for nothing: said on standard error, not dropped silently."""
    code, _, err = _convert(capsys, str(FIXTURES / "rank_eval_real.json"), "--to", "rank-eval")
    assert code == 0
    lost = [line for line in err.splitlines() if line.startswith("judgments: not carried over: ")]
    assert len(lost) == 1
    assert "each request's own search (request / template_id, params), the metric" in lost[0]
    assert "the query text of 2 of the requests" in lost[0]
    (tmp_path / "q.csv").write_text("query,docid,rating\nstar wars,1,3\nstar trek,,\n")
    code, _, err = _convert(capsys, str(tmp_path / "q.csv"), "--to", "trec")
    assert code == 0 and "not carried over: 1 query with no rating yet" in err
    code, _, err = _convert(capsys, str(FIXTURES / "rank_eval_real.json"), "--to", "trec")
    assert code == 0 and "the query text of" not in err  # TREC qrels carry no text anyway
