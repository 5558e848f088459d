"""Attribution over a 2^k grid of cells (gate.statistics.attribution)."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from gate.common.errors import InputError, UsageError
from gate.evaluation.evaluate import evaluate
from gate.inputs.readers.qrels import read_qrels
from gate.inputs.readers.runs import read_run
from gate.inputs.universe import query_universe
from gate.rendering.sections import render_attribution
from gate.report.spine import Attribution
from gate.statistics.attribution import (
    CI_NOTE,
    CellProvenance,
    GridRefused,
    analyze_grid,
    bundle_result,
    factorial_from_runs,
    parse_cell_levels,
    parse_cells,
    parse_factors,
    verify_grid,
)
from gate.statistics.factorial import grid_cells
from tests.shared_data import REALDATA, need

DL19 = REALDATA / "runs" / "trec-dl-2019-passage"
ATTRIBUTION_KEYS = {
    "factors", "cells", "effects", "interaction_check", "concentration", "bundle", "headline",
    "sentences", "samples", "seed", "ci_note",
}
EFFECT_KEYS = {"term", "given", "estimate", "ci_low", "ci_high", "p", "p_holm", "label"}


# --------------------------------------------------------------------------- the chapter's 2x2


def chapter_cells(n: int = 140, seed: int = 2):
    """Per-query values whose cell means are the chapter's 0.598 / 0.622 / 0.664 / 0.652.

    Keys are (model, corpus) levels. The new model's gain on the old corpus
    sits in 19 queries; on the new corpus it is a redistribution.
    """
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.1, 0.75, n)
    old_old = base - base.mean() + 0.598
    model_old = np.zeros(n)
    model_old[rng.choice(n, 19, replace=False)] = 0.024 * n / 19  # about 0.177 each
    corpus = rng.uniform(-0.05, 0.2, n)
    corpus = corpus - corpus.mean() + 0.066
    swing = np.where(np.arange(n) % 2 == 0, 0.15, -0.15)
    model_new = swing - swing.mean() - 0.012
    old_new = old_old + corpus
    return {
        ("old", "old"): old_old,
        ("new", "old"): old_old + model_old,
        ("old", "new"): old_new,
        ("new", "new"): old_new + model_new,
    }


def test_chapter_two_by_two():
    values = chapter_cells()
    qids = [f"q{i:03d}" for i in range(140)]
    seconds = {"model=old,corpus=old": 660.0, "model=new,corpus=old": 1500.0,
               "model=old,corpus=new": 720.0, "model=new,corpus=new": 700.0}
    r = analyze_grid(["model", "corpus"], values, qids, samples=2000, seed=7, cell_seconds=seconds,
                     corpus_factor="corpus")
    means = {tuple(c["levels"].values()): c["mean"] for c in r.cells}
    assert means[("old", "old")] == pytest.approx(0.598, abs=1e-12)
    assert means[("new", "old")] == pytest.approx(0.622, abs=1e-12)
    assert means[("old", "new")] == pytest.approx(0.664, abs=1e-12)
    assert means[("new", "new")] == pytest.approx(0.652, abs=1e-12)

    e = {x.id: x for x in r.effects}
    assert e["model|corpus=old"].estimate == pytest.approx(0.024, abs=1e-12)
    assert e["corpus|model=old"].estimate == pytest.approx(0.066, abs=1e-12)
    assert e["model|corpus=new"].estimate == pytest.approx(-0.012, abs=1e-12)
    assert e["corpus|model=new"].estimate == pytest.approx(0.030, abs=1e-12)
    assert e["model×corpus"].estimate == pytest.approx(-0.036, abs=1e-12)
    assert e["model|corpus=new"].label == "in production"
    assert e["corpus|model=new"].label == "in production"
    assert e["model|corpus=old"].label == "at baseline"
    assert e["model×corpus"].label == "interaction"
    assert r.effect("model", corpus="new") is e["model|corpus=new"]

    check = r.interaction_check
    assert check["a_way"] == pytest.approx(-0.036, abs=1e-12)
    assert check["b_way"] == pytest.approx(-0.036, abs=1e-12)
    assert check["abs_diff"] == abs(check["a_way"] - check["b_way"])
    assert check["abs_diff"] < 1e-12 and check["agree"] is True
    # a_way is the model's effect when corpus is new minus when old, b_way the corpus's when model new minus old
    assert check["a_way"] == pytest.approx(e["model|corpus=new"].estimate - e["model|corpus=old"].estimate, abs=1e-15)
    assert check["b_way"] == pytest.approx(e["corpus|model=new"].estimate - e["corpus|model=old"].estimate, abs=1e-15)

    d = r.to_dict()
    json.dumps(d)  # report.json-ready
    assert ATTRIBUTION_KEYS <= set(d)
    assert d["ci_note"] == CI_NOTE == "unadjusted 95% CIs"
    assert d["bundle"] is None
    assert all(EFFECT_KEYS <= set(x) for x in d["effects"])
    assert [c["levels"] for c in d["cells"]][0] == {"model": "old", "corpus": "old"}
    assert {c["name"]: c["seconds"] for c in d["cells"]} == seconds
    assert d["cost"]["grid_seconds"] == pytest.approx(3580.0)
    assert d["headline"]["effects"] == ["model|corpus=new", "corpus|model=new"]
    assert d["headline"]["text"].startswith(
        "In production (every other change at its new level), switching model moves nDCG@10 by -0.012")
    assert "Switching model is worth 0.036 less when corpus is new than when it is old." in d["sentences"]
    assert "Switching corpus is worth 0.036 less when model is new than when it is old." in d["sentences"]
    assert ("If the two changes added up, switching both would score 0.688; it scores 0.652, "
            "an interaction of -0.036.") in d["sentences"]
    assert d["grid"]["means"][0][0] == pytest.approx(0.598) and d["grid"]["interaction"] == pytest.approx(-0.036)

    conc = {c["id"]: c for c in d["concentration"]}
    # the gain on the old corpus: 19 queries of about 0.177 carry all of the net +0.024 x 140
    assert conc["model|corpus=old"]["queries"] == 19
    assert conc["model|corpus=old"]["mean_movement"] == pytest.approx(0.024 * 140 / 19, abs=1e-12)
    assert conc["model|corpus=old"]["same_sign_queries"] == 19
    assert conc["model|corpus=old"]["opposite_sign_total"] == 0.0
    assert conc["model|corpus=old"]["sentence"] == (
        "Switching model with corpus old (+0.024): concentrated in 19 queries, each moving about +0.177, "
        "which carry the net +3.360 summed over 140 queries (no query moved the other way).")
    assert conc["model|corpus=new"]["redistribution"] is True
    assert conc["model|corpus=new"]["sentence"].startswith(
        "Switching model with corpus new, in production (-0.012): redistribution: 70 queries lost -11.340 "
        "in total, 70 gained +9.660, netting -1.680")


def test_holm_and_shared_resamples_api_level():
    values = chapter_cells()
    qids = [f"q{i:03d}" for i in range(140)]
    r = analyze_grid(["model", "corpus"], values, qids, samples=500, seed=3)
    # bootstrap with one index matrix for every effect
    idx = np.random.default_rng(3).integers(0, 140, size=(500, 140))
    for e in r.effects:
        d = r.contrasts[e.id]
        lo, hi = np.percentile(d[idx].mean(axis=1), [2.5, 97.5])
        assert (e.ci_low, e.ci_high) == pytest.approx((lo, hi), abs=1e-12)
    ps = [e.p for e in r.effects]
    assert [e.p_holm for e in r.effects] == pytest.approx(reference_holm(ps))


# --------------------------------------------------------------------------- real runs


def reference_holm(p):
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def reference_concentration(d, share=1.0, ratio=0.5, residue=1e-12):
    """The fewest same-sign queries, largest first, whose changes add up to the net; a change
    within ``residue`` of zero (a rounding residue of the contrast) is no movement."""
    d = [0.0 if abs(x) <= residue else x for x in d]
    net = float(sum(d))
    sign = 1 if net >= 0 else -1
    same = sorted((x for x in d if x * sign > 0), key=abs, reverse=True)
    total = sum(same)
    running, count = 0.0, 0
    for x in same:
        running += abs(x)
        count += 1
        if running >= share * abs(net) - 1e-12:
            break
    return {
        "queries": count,
        "mean_movement": sum(same[:count]) / count,
        "same_sign_total": total,
        "opposite_sign_total": sum(x for x in d if x * sign < 0),
        "same_sign_queries": len(same),
        "redistribution": abs(net) < ratio * abs(total),
    }


DL19_CELLS = {
    "expansion=old,reranker=old": "bm25base_p",
    "expansion=new,reranker=old": "bm25base_rm3_p",
    "expansion=old,reranker=new": "p_bert",
    "expansion=new,reranker=new": "p_exp_rm3_bert",
}


def nist_ndcg10():
    rows = csv.DictReader(open(DL19 / "nist_metadata" / "nist_summary_scores.tsv"), delimiter="\t")
    return {r["run_id"]: float(r["value"]) for r in rows
            if r["evaluator"] == "trec_eval" and r["measure"] == "ndcg_cut_10" and r["query"] == "all"}


def test_real_dl19_two_by_two():
    qrels_path = need(DL19 / "qrels" / "qrels.dl19-passage.txt")
    paths = {levels: need(DL19 / "official_nist" / f"input.{run}.gz") for levels, run in DL19_CELLS.items()}
    samples, seed = 2000, 7
    r = factorial_from_runs(["expansion", "reranker"], {k: str(v) for k, v in paths.items()}, str(qrels_path),
                            None, metric="nDCG@10", samples=samples, seed=seed,
                            cell_seconds={k: 1.0 for k in paths})
    d = r.to_dict()
    json.dumps(d)
    assert d["queries"] == 43

    # cell means: NIST's official trec_eval ndcg_cut_10 (4 decimals)
    nist = nist_ndcg10()
    for cell in d["cells"]:
        assert cell["mean"] == pytest.approx(nist[DL19_CELLS[cell["name"]]], abs=5e-5)

    # per-query values evaluated independently, one run at a time
    qrels = read_qrels(qrels_path)
    qids = query_universe(qrels).query_ids
    assert tuple(r.query_ids) == qids
    y = {levels: evaluate(read_run(p), qrels, ["nDCG@10"], qids).values["nDCG@10"] for levels, p in paths.items()}
    oo, no = y["expansion=old,reranker=old"], y["expansion=new,reranker=old"]
    on, nn = y["expansion=old,reranker=new"], y["expansion=new,reranker=new"]
    want = {
        "expansion|reranker=old": no - oo,
        "expansion|reranker=new": nn - on,
        "reranker|expansion=old": on - oo,
        "reranker|expansion=new": nn - no,
        "expansion×reranker": (nn - on) - (no - oo),
    }
    assert [e.id for e in r.effects] == list(want)
    means = {c["name"]: c["mean"] for c in d["cells"]}
    from_means = {
        "expansion|reranker=old": means["expansion=new,reranker=old"] - means["expansion=old,reranker=old"],
        "expansion|reranker=new": means["expansion=new,reranker=new"] - means["expansion=old,reranker=new"],
        "reranker|expansion=old": means["expansion=old,reranker=new"] - means["expansion=old,reranker=old"],
        "reranker|expansion=new": means["expansion=new,reranker=new"] - means["expansion=new,reranker=old"],
    }
    from_means["expansion×reranker"] = (from_means["expansion|reranker=new"]
                                        - from_means["expansion|reranker=old"])

    # reference bootstrap and sign-flip test, written out: one index matrix for every effect
    idx = np.random.default_rng(seed).integers(0, len(qids), size=(samples, len(qids)))
    keep = np.random.default_rng(seed).integers(0, 2, size=(samples, len(qids))).astype(bool)
    ps = []
    for e in r.effects:
        contrast = want[e.id]
        np.testing.assert_allclose(r.contrasts[e.id], contrast, atol=1e-15)
        assert e.estimate == pytest.approx(from_means[e.id], abs=1e-12)
        lo, hi = np.percentile(contrast[idx].mean(axis=1), [2.5, 97.5])
        assert e.ci_low == pytest.approx(lo, abs=1e-12)
        assert e.ci_high == pytest.approx(hi, abs=1e-12)
        flipped = np.where(keep, contrast, -contrast).mean(axis=1)
        count = np.count_nonzero(np.abs(flipped) >= abs(contrast.mean()) - 1e-12)
        assert e.p == pytest.approx((1 + count) / (samples + 1))
        ps.append(e.p)
    assert [e.p_holm for e in r.effects] == pytest.approx(reference_holm(ps))

    check = d["interaction_check"]
    assert check["agree"] and check["abs_diff"] < 1e-12
    assert check["a_way"] == pytest.approx(from_means["expansion×reranker"], abs=1e-12)
    assert check["b_way"] == pytest.approx(
        from_means["reranker|expansion=new"] - from_means["reranker|expansion=old"], abs=1e-12)

    # concentration, computed independently
    for c in d["concentration"]:
        ref = reference_concentration(want[c["id"]].tolist())
        for key, value in ref.items():
            assert c[key] == pytest.approx(value, abs=1e-12), (c["id"], key)
        order = sorted((i for i in range(len(qids)) if want[c["id"]][i] * c["sign"] > 0),
                       key=lambda i: -abs(want[c["id"]][i]))
        assert c["query_ids"] == [qids[i] for i in order[: c["queries"]]]

    # the reranker is the gain in production; the headline says so
    assert d["headline"]["estimates"]["reranker"] == pytest.approx(from_means["reranker|expansion=new"])
    text = render_attribution(Attribution.from_dict(d))
    assert "| expansion old | 0.506 | 0.738 | +0.232 |" in text


# --------------------------------------------------------------------------- verification


def small_values(n=6):
    rng = np.random.default_rng(0)
    return {cell: rng.uniform(0, 1, n) for cell in grid_cells(2)}


def prov(q="a" * 64, r="b" * 64, c=None):
    return CellProvenance(queries_sha256=q, qrels_sha256=r, corpus_sha256=c)


def test_mismatched_query_set_refused():
    provenance = {cell: prov() for cell in grid_cells(2)}
    provenance[("new", "new")] = prov(q="f" * 64)
    with pytest.raises(GridRefused, match="different query sets") as info:
        analyze_grid(["model", "corpus"], small_values(), list("abcdef"), samples=10, provenance=provenance)
    assert "model=new,corpus=new" in info.value.reason and "ffffffffffff" in info.value.reason


def test_mismatched_qrels_refused():
    provenance = {cell: prov() for cell in grid_cells(2)}
    provenance[("old", "new")] = prov(r="e" * 64)
    with pytest.raises(GridRefused, match="different qrelss|different qrels") as info:
        analyze_grid(["model", "corpus"], small_values(), list("abcdef"), samples=10, provenance=provenance)
    assert "model=old,corpus=new" in info.value.reason


def test_corpus_per_level():
    good = {cell: prov(c=("c" if cell[1] == "old" else "d") * 64) for cell in grid_cells(2)}
    v = verify_grid(["model", "corpus"], good, corpus_factor="corpus")
    assert v["corpus_sha256"] == {"old": "c" * 64, "new": "d" * 64}
    # two corpora at one level of the corpus factor
    bad = dict(good)
    bad[("new", "old")] = prov(c="9" * 64)
    with pytest.raises(GridRefused, match="different corpuss|different corpus") as info:
        verify_grid(["model", "corpus"], bad, corpus_factor="corpus")
    assert "corpus=old" in info.value.reason
    # no corpus factor: the corpus must not change at all
    with pytest.raises(GridRefused, match="corpus"):
        verify_grid(["model", "corpus"], good)
    # a cell without a corpus fingerprint while others have one cannot be verified
    partial = dict(good)
    partial[("new", "new")] = prov(c=None)
    with pytest.raises(GridRefused, match="carry no corpus fingerprint"):
        verify_grid(["model", "corpus"], partial, corpus_factor="corpus")
    with pytest.raises(GridRefused, match="not one of the factors"):
        verify_grid(["model", "corpus"], good, corpus_factor="index")


def test_verification_happens_before_computing():
    values = small_values()
    values[("new", "new")] = np.zeros(3)  # misaligned: computing would fail with ValueError
    provenance = {cell: prov() for cell in grid_cells(2)}
    provenance[("new", "old")] = {"queries_sha256": "0" * 64, "qrels_sha256": "b" * 64}
    with pytest.raises(GridRefused):
        analyze_grid(["model", "corpus"], values, list("abcdef"), samples=10, provenance=provenance)


def write_run(path, rankings):
    with open(path, "w") as fh:
        for qid, docs in rankings.items():
            for rank, doc in enumerate(docs, start=1):
                fh.write(f"{qid} Q0 {doc} {rank} {10 - rank} tag\n")
    return str(path)


@pytest.fixture
def tiny(tmp_path):
    """Five judged queries; relevant doc 'r'. One cell's run lacks q4 and q5."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"q{i} 0 r 1\nq{i} 0 x 0\n" for i in range(1, 6)))
    full_good = {f"q{i}": ["r", "x"] for i in range(1, 6)}
    full_bad = {f"q{i}": ["x", "r"] for i in range(1, 6)}
    partial = {f"q{i}": ["r", "x"] for i in range(1, 4)}
    cells = {
        "model=old,corpus=old": write_run(tmp_path / "oo.run", full_bad),
        "model=new,corpus=old": write_run(tmp_path / "no.run", full_good),
        "model=old,corpus=new": write_run(tmp_path / "on.run", full_bad),
        "model=new,corpus=new": write_run(tmp_path / "nn.run", partial),
    }
    return str(qrels), cells


def test_cell_missing_queries_refused(tiny):
    qrels, cells = tiny
    with pytest.raises(GridRefused) as info:
        factorial_from_runs(["model", "corpus"], cells, qrels, samples=50)
    reason = info.value.reason
    assert "model=new,corpus=new" in reason
    assert "misses 2 of 5 golden queries (e.g. q4, q5)" in reason
    assert "masquerade as an effect" in reason


def test_allow_missing_lets_it_through(tiny):
    qrels, cells = tiny
    r = factorial_from_runs(["model", "corpus"], cells, qrels, samples=50, allow_missing=True)
    d = r.to_dict()
    means = {c["name"]: c["mean"] for c in d["cells"]}
    bad = 1 / np.log2(3)  # relevant doc at rank 2
    assert means["model=old,corpus=old"] == pytest.approx(bad)
    assert means["model=new,corpus=new"] == pytest.approx(3 / 5)  # two queries scored 0
    assert {c["name"]: c["missing"] for c in d["cells"]}["model=new,corpus=new"] == 2
    assert any("scored 0 (missing queries allowed)" in s for s in d["sentences"])
    # scoring missing queries 0 shows up as a (spurious) effect: the reason it is refused by default
    assert r.effect("model", corpus="new").estimate == pytest.approx(3 / 5 - bad)


def test_corpus_mismatch_refused_before_reading_runs(tmp_path, tiny):
    qrels, _ = tiny
    cells = {k: str(tmp_path / "does-not-exist.run") for k in
             ("model=old,corpus=old", "model=new,corpus=old", "model=old,corpus=new", "model=new,corpus=new")}
    corpus = {"model=old,corpus=old": "1" * 64, "model=new,corpus=old": "2" * 64,
              "model=old,corpus=new": "3" * 64, "model=new,corpus=new": "3" * 64}
    with pytest.raises(GridRefused, match="corpus=old"):
        factorial_from_runs(["model", "corpus"], cells, qrels, corpus_factor="corpus", cell_corpus=corpus)


# --------------------------------------------------------------------------- strict --cell parsing


@pytest.mark.parametrize("text, message", [
    ("model=new,index=old", "--cell 'model=new,index=old': unknown factor 'index'"),
    ("model=newer,corpus=old",
     "--cell 'model=newer,corpus=old': level 'newer' of factor 'model' must be 'old' or 'new'"),
    ("model=new", "--cell 'model=new': no level for factor(s) corpus"),
    ("model=new,model=old", "--cell 'model=new,model=old': factor 'model' is given twice"),
    ("model=new,,corpus=old", "--cell 'model=new,,corpus=old': empty entry"),
    ("model,corpus=old", "--cell 'model,corpus=old': 'model' is not 'factor=level'"),
])
def test_bad_cell_levels(text, message):
    with pytest.raises(UsageError) as info:
        parse_cell_levels(text, ("model", "corpus"))
    assert str(info.value).startswith(message)
    assert isinstance(info.value, InputError)


def test_parse_cells_duplicates_and_missing():
    assert parse_cell_levels(" corpus = old , model=new ", ("model", "corpus")) == ("new", "old")
    with pytest.raises(UsageError, match="duplicate cell"):
        parse_cells(("model", "corpus"), [("model=new,corpus=old", "a"), ("corpus=old,model=new", "b")])
    with pytest.raises(UsageError, match=r"2 of the 4 cells .* missing: model=old,corpus=new; model=new,corpus=new"):
        parse_cells(("model", "corpus"), {"model=old,corpus=old": "a", "model=new,corpus=old": "b"})
    with pytest.raises(UsageError, match="duplicate factor"):
        parse_factors(["model", "model"])
    with pytest.raises(UsageError, match="cannot contain"):
        parse_factors(["mo=del"])
    assert parse_factors("model, corpus") == ("model", "corpus")


def test_from_runs_rejects_bad_cells_before_loading(tmp_path):
    with pytest.raises(UsageError, match="unknown factor 'index'"):
        factorial_from_runs(["model", "corpus"], {"model=new,index=old": "x"}, str(tmp_path / "none"))


# --------------------------------------------------------------------------- bundles


def test_bundle_result():
    r = bundle_result(["model", "corpus", "chunker", "reranker", "prompt"])
    d = r.to_dict()
    assert d["bundle"]["text"] == "credit not apportioned: 5 changes would need 32 runs"
    assert d["bundle"]["changed"] == ["model", "corpus", "chunker", "reranker", "prompt"]
    assert d["bundle"]["runs_needed"] == 32
    assert d["effects"] == [] and d["cells"] == [] and d["interaction_check"] is None
    assert d["headline"]["text"] == d["bundle"]["text"]
    assert ATTRIBUTION_KEYS <= set(d)
    json.dumps(d)
    text = render_attribution(Attribution.from_dict(d))
    assert "credit not apportioned: 5 changes would need 32 runs" in text
    assert "| effect |" not in text
    disabled = bundle_result(["model", "corpus"], disabled=True).to_dict()
    assert disabled["bundle"]["text"] == "credit not apportioned: 2 changes would need 4 runs"
    assert disabled["bundle"]["reason"] == "attribution is disabled"


def test_too_many_factors_is_a_bundle(tmp_path):
    r = factorial_from_runs(["a", "b", "c", "d"], {}, str(tmp_path / "never-read"))
    assert r.is_bundle and r.bundle["text"] == "credit not apportioned: 4 changes would need 16 runs"
    r = factorial_from_runs(["a", "b"], {}, str(tmp_path / "never-read"), enabled=False)
    assert r.is_bundle and r.bundle["disabled"]
    values = {cell: np.zeros(3) for cell in grid_cells(2)}
    assert analyze_grid(["a", "b"], values, ["x", "y", "z"], max_factors=1).is_bundle


# --------------------------------------------------------------------------- three factors


def test_three_factor_grid():
    rng = np.random.default_rng(9)
    factors = ["model", "corpus", "reranker"]
    n = 30
    values = {cell: rng.uniform(0, 1, n) for cell in grid_cells(3)}
    # keys as frozensets of (factor, level), one accepted spelling
    keyed = {frozenset(zip(factors, cell)): v for cell, v in values.items()}
    r = analyze_grid(factors, keyed, [f"q{i}" for i in range(n)], samples=300, seed=1)
    d = r.to_dict()
    assert len(d["cells"]) == 8 and d["grid"] is None
    assert len(r.effects) == 12 + 6 + 1
    m = {cell: values[cell].mean() for cell in values}

    def cell(model, corpus, reranker):
        return m[(model, corpus, reranker)]

    e = {x.id: x for x in r.effects}
    assert e["model|corpus=new,reranker=new"].label == "in production"
    assert e["model|corpus=old,reranker=old"].label == "at baseline"
    assert e["model|corpus=new,reranker=old"].label == ""
    assert e["model|corpus=new,reranker=old"].estimate == pytest.approx(
        cell("new", "new", "old") - cell("old", "new", "old"), abs=1e-12)
    # two-way interaction of model and corpus with reranker old
    ab_old = ((cell("new", "new", "old") - cell("old", "new", "old"))
              - (cell("new", "old", "old") - cell("old", "old", "old")))
    ab_new = ((cell("new", "new", "new") - cell("old", "new", "new"))
              - (cell("new", "old", "new") - cell("old", "old", "new")))
    assert e["model×corpus|reranker=old"].estimate == pytest.approx(ab_old, abs=1e-12)
    assert e["model×corpus|reranker=new"].estimate == pytest.approx(ab_new, abs=1e-12)
    assert e["model×corpus|reranker=old"].label == "two-way interaction"
    three = e["model×corpus×reranker"]
    assert three.label == "three-way interaction"
    assert three.estimate == pytest.approx(ab_new - ab_old, abs=1e-12)
    check = d["interaction_check"]
    assert check["term"] == "model×corpus×reranker"
    for way in ("a_way", "b_way", "c_way"):
        assert check[way] == pytest.approx(ab_new - ab_old, abs=1e-12)
    assert check["agree"] and len(check["terms"]) == 7
    assert [x["p_holm"] for x in d["effects"]] == pytest.approx(reference_holm([x["p"] for x in d["effects"]]))
    assert len(d["headline"]["effects"]) == 3
    assert any(s.startswith("With reranker old, switching model is worth") for s in d["sentences"])
    text = render_attribution(Attribution.from_dict(d))
    assert "| cell | model | corpus | reranker | mean nDCG@10 | seconds |" in text
    assert "| baseline | old | old | old |" in text


def test_single_factor():
    values = {("old",): np.array([0.1, 0.2, 0.3]), ("new",): np.array([0.2, 0.2, 0.5])}
    r = analyze_grid(["model"], values, ["a", "b", "c"], samples=100)
    assert [e.id for e in r.effects] == ["model"]
    assert r.effects[0].label == "in production"
    assert r.effects[0].p_kind == "exact"
    assert r.interaction_check is None
    assert r.headline["text"].startswith("Switching model moves nDCG@10 by +0.100")


# --------------------------------------------------------------------------- rendering


def test_render_two_by_two_escapes_data():
    values = chapter_cells()
    keyed = {((("<b>model</b>", a), ("corpus|x", b))): v for (a, b), v in values.items()}
    keyed = {frozenset(k): v for k, v in keyed.items()}
    r = analyze_grid(["<b>model</b>", "corpus|x"], keyed, [f"q{i}" for i in range(140)], samples=200,
                     cell_seconds={frozenset({("<b>model</b>", a), ("corpus|x", b)}): 10.0
                                   for a in ("old", "new") for b in ("old", "new")})
    text = render_attribution(r)
    assert "<b>" not in text and "&lt;b&gt;model&lt;/b&gt;" in text
    assert "corpus&#124;x" in text
    # every table row has the header's number of columns
    for block in text.split("\n\n"):
        rows = [line for line in block.splitlines() if line.startswith("|")]
        if rows:
            assert len({line.count("|") for line in rows}) == 1, block
    assert "| switching &lt;b&gt;model&lt;/b&gt; | +0.024 | -0.012 | -0.036 (interaction) |" in text
    assert "Grid of 4 runs: 40.0 s wall time." in text
    assert CI_NOTE in text
