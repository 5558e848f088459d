"""Spot checks on real public data in ../shared (skipped when it is absent).

Every expected number was computed independently with shell tools, e.g.
``zcat RUN | grep -cv '^\\s*$'`` (rows), ``awk 'NF{print $1}' | sort -u | wc -l``
(topics), ``awk 'NF{s+=$5} END{printf "%.6f", s}'`` (score sum).
"""

from __future__ import annotations

import re

import pytest

from gate.inputs.readers.corpus import iter_corpus
from gate.inputs.readers.qrels import read_qrels
from gate.inputs.readers.queries import read_queries
from gate.inputs.readers.runs import read_run
from tests.shared_data import REALDATA, need

DL19 = REALDATA / "runs" / "trec-dl-2019-passage"
DL20 = REALDATA / "runs" / "trec-dl-2020-passage"

# file: (rows, topics, score sum, first line qid / docno / score, tag)
RUNS = {
    "trec-dl-2019-passage/official_nist/input.ICT-BERT2.gz":
        (4000, 200, -5398.044995, ("11096", "8296001", 2.8280456), "ICT-BERT2"),
    "trec-dl-2019-passage/official_nist/input.TUA1-1.gz":
        (189877, 200, 447193.767608, ("11096", "8606623", 11.9913863055408), "TUA1-1"),
    "trec-dl-2019-passage/official_nist/input.bm25base_p.gz":
        (200000, 200, 1472280.835540, ("11096", "8296001", 20.091299), "bm25base_p"),
    "trec-dl-2019-passage/official_nist/input.bm25base_rm3_p.gz":
        (200000, 200, 351298.170412, ("11096", "8606620", 3.266), "bm25base_rm3_p"),
    "trec-dl-2019-passage/official_nist/input.bm25tuned_p.gz":
        (200000, 200, 1515069.092095, ("11096", "8296001", 20.9014), "bm25tuned_p"),
    "trec-dl-2019-passage/official_nist/input.bm25tuned_rm3_p.gz":
        (200000, 200, 360588.217293, ("11096", "8606620", 3.1513), "bm25tuned_rm3_p"),
    "trec-dl-2019-passage/official_nist/input.idst_bert_p1.gz":
        (200000, 200, 8746.442338, ("11096", "4394897", 0.9041545316576958), "idst_bert_p1"),
    "trec-dl-2019-passage/official_nist/input.ms_duet_passage.gz":
        (189877, 200, 1926375.504939, ("11096", "8296001", 108.61088562011719), "ms_duet_passage"),
    "trec-dl-2019-passage/official_nist/input.p_bert.gz":
        (200000, 200, -1922624.373577, ("11096", "8606623", -0.008667142), "p_bert"),
    "trec-dl-2019-passage/official_nist/input.p_exp_rm3_bert.gz":
        (200000, 200, -1888781.294647, ("11096", "8606623", -0.008667142), "p_exp_rm3_bert"),
    "trec-dl-2019-passage/official_nist/input.runid3.gz":
        (189877, 200, -2536902.110451, ("11096", "5228130", 13.691676139831543), "runid3"),
    "trec-dl-2019-passage/official_nist/input.srchvrs_ps_run2.gz":
        (95645, 200, 51530.382099, ("11096", "8296001", 0.93933), "srchvrs_ps_run2"),
    "trec-dl-2019-passage/unpooled_runs/colbert_rankzephyr_msmarco-passage-trec-dl-2019-judged.run.gz":
        (4300, 43, 217150.0, ("1037798", "8760866", 100.0), "rank"),
    "trec-dl-2019-passage/unpooled_runs/maik-froebe-colbert-run.txt.gz":
        (42005, 43, 591433.590495, ("19335", "2304005", 26.53536033630371), "colbert"),
    "trec-dl-2019-passage/unpooled_runs/maik-froebe-mono-t5-base-run.txt.gz":
        (42005, 43, -311476.067537, ("19335", "8412682", -0.012248889543116093), "castorini/monot5-base-msmarco-10k"),
    "trec-dl-2019-passage/unpooled_runs/maik-froebe-splade-run.txt.gz":
        (42005, 43, 425489.935526, ("19335", "8412682", 21.09049401187872), "my-system-name"),
    "trec-dl-2019-passage/unpooled_runs/tirex_monoelectra-base_msmarco-passage-trec-dl-2019-judged.run.gz":
        (4205, 43, -6464.722827, ("1037798", "8760871", 5.5585938), "mono-electra"),
    "trec-dl-2020-passage/official_nist/input.CoRT-electra.gz":
        (200000, 200, 8105.859030, ("3505", "4786599", 0.98357), "CoRT-electra"),
    "trec-dl-2020-passage/official_nist/input.bigIR-T5-R.gz":
        (190699, 200, 1466.750953, ("3505", "329745", 1.0), "bigIR-T5-R"),
    "trec-dl-2020-passage/official_nist/input.indri-sdm.gz":
        (192785, 200, -1788017.164990, ("3505", "8285658", -5.74947), "indri-sdm"),
    "trec-dl-2020-passage/official_nist/input.p_bm25.gz":
        (200000, 200, 1527020.140612, ("3505", "3859340", 14.4013), "p_bm25"),
    "trec-dl-2020-passage/official_nist/input.p_bm25rm3.gz":
        (200000, 200, 343289.006109, ("3505", "3859340", 2.895), "p_bm25rm3"),
    "trec-dl-2020-passage/official_nist/input.p_d2q_bm25.gz":
        (200000, 200, 1886668.032715, ("3505", "4711746", 13.1037), "p_d2q_bm25"),
    "trec-dl-2020-passage/official_nist/input.p_d2q_bm25_duo.gz":
        (200000, 200, 495093.215979, ("3505", "8285654", 80.9092320659888), "p_d2q_bm25_duo"),
    "trec-dl-2020-passage/official_nist/input.terrier-BM25.gz":
        (192786, 200, 3652343.592523, ("3505", "1030851", 31.292958826336076), "terrier-BM25"),
    "trec-dl-2020-passage/unpooled_runs/colbert_rankzephyr_msmarco-passage-trec-dl-2020-judged.run.gz":
        (5400, 54, 272700.0, ("1030303", "8726437", 100.0), "rank"),
    "trec-dl-2020-passage/unpooled_runs/maik-froebe-colbert-run.txt.gz":
        (51575, 54, 733607.395629, ("23849", "8010558", 24.228214263916016), "colbert"),
    "trec-dl-2020-passage/unpooled_runs/maik-froebe-mono-t5-base-run.txt.gz":
        (51575, 54, -395995.050577, ("23849", "2647769", -0.009369449689984322), "castorini/monot5-base-msmarco-10k"),
    "trec-dl-2020-passage/unpooled_runs/maik-froebe-splade-run.txt.gz":
        (51575, 54, 530496.712429, ("23849", "8010561", 22.246007644311558), "my-system-name"),
    "trec-dl-2020-passage/unpooled_runs/tirex_monoelectra-base_msmarco-passage-trec-dl-2020-judged.run.gz":
        (5329, 54, -9622.791892, ("1030303", "8726437", 8.0859375), "mono-electra"),
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_real_runs(name):
    rows, topics, score_sum, (qid, doc, score), tag = RUNS[name]
    run = read_run(need(REALDATA / "runs" / name))
    assert len(run) == rows and len(run.query_ids) == topics and run.tag == tag
    assert list(run.query_ids) == sorted(run.query_ids, key=lambda q: q.encode())
    assert float(run.scores.sum()) == pytest.approx(score_sum, rel=1e-9, abs=1e-4)
    docs, scores = run.ranking(qid)
    assert str(docs[0]) == doc and float(scores[0]) == score  # first line of the file, exactly


def test_dl19_qrels_and_topics():
    qrels = read_qrels(need(DL19 / "qrels" / "qrels.dl19-passage.txt"))
    assert len(qrels.judgments) == 43 and len(qrels) == 9260
    grades = [rel for docs in qrels.judgments.values() for rel in docs.values()]
    assert [grades.count(g) for g in range(4)] == [5158, 1601, 1804, 697]
    assert next(iter(qrels)) == ("19335", "1017759", 0)
    topics = read_queries(need(DL19 / "topics" / "topics.dl19-passage.txt"))
    assert len(topics) == 43 and topics.queries[0].query_id == "156493" and topics.queries[0].text == "do goldfish grow"
    assert set(topics.ids()) == set(qrels.judgments)


def test_dl20_qrels_and_topics():
    qrels = read_qrels(need(DL20 / "qrels" / "qrels.dl20-passage.txt"))
    assert len(qrels.judgments) == 54 and len(qrels) == 11386
    grades = [rel for docs in qrels.judgments.values() for rel in docs.values()]
    assert [grades.count(g) for g in range(4)] == [7780, 1940, 1020, 646]
    topics = read_queries(need(DL20 / "topics" / "topics.dl20.txt"))
    assert len(topics) == 200 and topics.queries[0].query_id == "1030303"
    assert set(qrels.judgments) <= set(topics.ids())


@pytest.mark.parametrize(
    "name, judgments, topics",
    [
        ("andrew-parry-qrels.txt", 1115, 13),
        ("ferdinand-schlatt-qrels.txt", 1128, 9),
        ("saber-zerhoudi-qrels.txt", 1124, 15),
    ],
)
def test_dl19_alternative_qrels(name, judgments, topics):
    qrels = read_qrels(need(DL19 / "alt_qrels_reannotation" / name))
    assert (len(qrels), len(qrels.judgments)) == (judgments, topics)


def test_cranfield_qrels_three_columns_with_negative_grades():
    qrels = read_qrels(need(REALDATA / "cranfield" / "cranqrel"))
    assert len(qrels.judgments) == 225 and len(qrels) == 1837
    grades = [rel for docs in qrels.judgments.values() for rel in docs.values()]
    assert [grades.count(g) for g in (-1, 1, 2, 3, 4)] == [225, 128, 387, 734, 363]
    assert qrels.negative_is_judged is False  # trec_eval's reading of a plain file
    assert qrels.judgments["1"]["184"] == 2


def test_vaswani_qrels():
    qrels = read_qrels(need(REALDATA / "vaswani" / "qrels"))
    assert len(qrels.judgments) == 93 and len(qrels) == 2083
    assert set(r for docs in qrels.judgments.values() for r in docs.values()) == {1}


def test_scifact_anserini_qrels_topics_and_corpus():
    base = REALDATA / "scifact"
    qrels = read_qrels(need(base / "beir_test_qrels_topics" / "qrels.beir-v1.0.0-scifact.test.txt"))
    assert len(qrels.judgments) == 300 and len(qrels) == 339
    topics = read_queries(need(base / "beir_test_qrels_topics" / "topics.beir-v1.0.0-scifact.test.tsv.gz"))
    assert len(topics) == 300 and topics.queries[0].text == "0-dimensional biomaterials show inductive properties."
    assert set(topics.ids()) == set(qrels.judgments)
    chunks = iter_corpus(need(base / "derived_beir_format" / "corpus.jsonl"))
    first = next(chunks)
    assert first.chunk_id == first.doc_id == "4983"
    assert first.text.startswith("Microstructural development of human newborn cerebral white matter")
    assert 1 + sum(1 for _ in chunks) == 5183
    # the documented real leak: test query 845 inside doc 17741440 (up to case and punctuation)
    def norm(text: str) -> str:
        return " ".join(re.sub(r"\W+", " ", text.lower()).split())

    q845 = topics.by_id()["845"].text
    doc = next(c for c in iter_corpus(base / "derived_beir_format" / "corpus.jsonl") if c.chunk_id == "17741440")
    assert norm(q845) in norm(doc.text)


TREC_EVAL = REALDATA / "trec_eval_tests" / "v10.0"


def test_trec_eval_suite_inputs_with_comments():
    """trec_eval 10's own comment tests: '#' lines skipped, '#' inside a docno kept."""
    plain = read_qrels(need(TREC_EVAL / "qrels.test"))
    commented = read_qrels(need(TREC_EVAL / "qrels.test.with-comments"))
    assert len(plain) == len(commented) == 3681
    assert "CR#93E-1860" in commented.judgments["301"] and "CR93E-1860" in plain.judgments["301"]
    rag = read_qrels(need(TREC_EVAL / "qrels.comment.test"))
    assert (len(rag), len(rag.judgments)) == (5890, 31)
    run = read_run(need(TREC_EVAL / "results.comment.test"))
    assert (len(run), len(run.query_ids)) == (30100, 301)
    assert "msmarco_v2.1_doc_50_2286987788#13_3087841662" in set(run.ranking("2024-224960")[0].tolist())
    results = read_run(need(TREC_EVAL / "results.test"))  # tab + padded blanks
    assert (len(results), len(results.query_ids), results.tag) == (1500, 3, "STANDARD")


def test_trec_eval_judgment_groups_are_refused():
    """qrels.123 repeats documents in other judgment groups (trec_eval -R qrels_jg)."""
    with pytest.raises(Exception) as info:
        read_qrels(need(TREC_EVAL / "qrels.123"))
    assert str(info.value) == (
        f"{TREC_EVAL / 'qrels.123'}:3682: duplicate judgment of document 'CR93E-10279' for query '301' "
        "(first at line 1); column 2 differs ('0', '1'): multiple judgment groups are not supported"
    )
