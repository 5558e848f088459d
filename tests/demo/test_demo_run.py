"""The demo is the end-to-end test: a small world, the whole gate, every section of the story."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("faiss")
pytest.importorskip("bm25s")

from gate.cli import main  # noqa: E402
from gate.demo.end_to_end import run_demo  # noqa: E402
from tests.regression import scenarios  # noqa: E402
from tests.regression.pinning import check_pinned  # noqa: E402

SCALE = scenarios.DEMO["scale"]


def _baseline_qrels(repo, folder) -> str:
    """The demo's anchored golden judgments mapped onto the v1 snapshot (the noise repeats are
    baseline runs), written as TREC qrels for the commands that take chunk-id qrels. A relevant
    judgment that lands on no v1 chunk (a table-only section) keeps its place in the ideal ranking
    under an id no run retrieves, as the gate's own mapping keeps it (its id is not a TREC id)."""
    from gate.demo.world import mapped_judgments
    from gate.inputs.anchoring import NOT_LANDED_PREFIX
    from gate.inputs.readers.corpus import iter_corpus

    rows = [json.loads(line) for line in (repo / "eval" / "judgments.jsonl").read_text().splitlines()]
    mapped = mapped_judgments(rows, list(iter_corpus(repo / "world" / "corpus-v1.jsonl")))
    lines = []
    for qid, graded in sorted(mapped.items()):
        unlanded = (f"not-landed-{k}" for k in range(len(graded)))
        lines += [f"{qid} 0 {next(unlanded) if chunk.startswith(NOT_LANDED_PREFIX) else chunk} {grade}\n"
                  for chunk, grade in sorted(graded.items())]
    path = folder / "qrels-v1.txt"
    path.write_text("".join(lines))
    return str(path)




def test_the_demo_fails_for_its_three_reasons(demo):
    # The story the demo tells, in three reasons: (1) a leaked FAQ page; (2) damaged traffic: both
    # guarded strata (navigational 22% and error_string 18% of traffic) shown to regress by the
    # strata's bounded-mean test after Holm, so 40% of traffic is damaged (over the 20% limit: a
    # damaged_traffic reason, then one guarded_stratum reason per stratum) to improve the 15% of
    # entity_attribute; (3) an overall mean near zero that is no regression shown (the default
    # policy mode, "regression", passes it): the mean hides the damage.
    verdict = demo.report["verdict"]
    assert (verdict["kind"], verdict["exit_code"], verdict["improvement_shown"]) == ("fail", 1, False)
    assert [r["code"] for r in verdict["reasons"]] == ["new_leaked_queries", "damaged_traffic", "guarded_stratum",
                                                       "guarded_stratum", "no_regression_shown"]
    assert verdict["reasons"][0]["message"].startswith("9 golden queries newly appear in the candidate's corpus")
    assert verdict["reasons"][1]["message"].startswith("40% of traffic damaged (navigational, error_string)")
    assert "guarded stratum navigational regressed" in verdict["reasons"][2]["message"]
    assert "guarded stratum error_string regressed" in verdict["reasons"][3]["message"]
    assert verdict["reasons"][4]["message"].startswith("no regression shown")
    assert verdict["reporting_set"]["query_count"] == 131
    directions = {s["stratum"]: (s["direction"], s["decided_by"]) for s in demo.report["strata"]}
    assert directions["navigational"] == directions["error_string"] == ("damaged", "bounded-mean test")
    assert directions["entity_attribute"] == ("improved", "bounded-mean test")
    assert abs(demo.report["delta"]["mean"]) < 0.05  # a mean near zero


def test_the_demo_reproduces_its_pinned_report_and_markdown(demo):
    # Every number, key and line of report.json, report.md and comment.md (timestamps, durations,
    # commit ids and paths masked): a structural change to the gate must not move one.
    moved = check_pinned("demo-seed7", scenarios.demo_report(demo))
    assert not moved, "\n".join(moved[:40])


def test_the_report_tells_the_whole_story(demo):
    r = demo.report
    # Archived vs replayed baseline: v4 (80 q) archived, replayed on v5 (140 q).
    assert r["baseline"]["resolution"] == "replayed"
    assert r["baseline"]["archived"]["query_count"] == 80
    assert "archived" in r["baseline"]["description"] and "replayed" in r["baseline"]["description"]
    assert {d["input"] for d in r["baseline"]["differences"]} >= {"queries", "qrels"}
    # The PR changed two things: the 2x2 grid with a non-zero interaction, computed both ways.
    assert [c["path"] for c in r["config_diff"]] == ["embedding.dim", "embedding.model", "ingestion.parser"] or \
        {c["path"] for c in r["config_diff"]} >= {"embedding.model", "ingestion.parser"}
    a = r["attribution"]
    assert sorted(a["factors"]) == ["corpus", "model"] and len(a["cells"]) == 4
    assert a["interaction_check"]["agree"] is True
    interaction = [e for e in a["effects"] if e.get("kind") == "interaction"][0]
    assert interaction["estimate"] != 0
    # The leaked FAQ page: new leaks, and the delta without them.
    leak = r["leakage"]
    assert len(leak["new"]) >= 9 and "faq/common-questions" in leak["recommendation"]
    assert leak["delta_without_leaked"] is not None and leak["delta_with_leaked"] is not None
    # The noise band from at least 5 repeats of the baseline, measured on v5: current.
    assert r["noise_band"]["runs"] >= 5 and r["noise_band"]["state"] == "current"
    assert r["noise_band"]["threshold"] > 0
    # Strata with traffic shares, and a traffic sentence.
    assert len(r["strata"]) == 6 and abs(sum(s["share"] for s in r["strata"]) - 1) < 1e-9
    assert r["traffic"]["sentence"]
    # Movement buckets and a verdict.
    assert sum(b["count"] for b in r["lift"]["buckets"]) > 0
    assert r["verdict"]["kind"] in ("pass", "fail", "inconclusive")
    assert demo.exit_code == r["verdict"]["exit_code"]


def test_the_comment_shows_every_section(demo):
    c = demo.comment
    first = c.splitlines()[0]
    assert first.startswith("### ") and r_kind(demo) in first
    for needle in ("Commensurability", "replayed", "faq/common-questions", "noise", "Strata", "traffic",
                   "Movement", "model"):
        assert needle.lower() in c.lower(), needle
    for name in ("report.json", "report.md", "comment.md"):
        assert (demo.out / name).exists()


def r_kind(demo) -> str:
    return demo.report["verdict"]["kind"]


def test_the_same_seed_gives_the_same_report(demo, tmp_path):
    again = run_demo(tmp_path, seed=7, scale=SCALE, repeats=5, samples=2000, progress=lambda m: None)

    def stable(report):
        text = json.dumps(report, sort_keys=True)
        data = json.loads(text)
        for volatile in ("elapsed_seconds",):
            data.pop(volatile, None)
        if data.get("attribution"):
            data["attribution"].pop("cost", None)
            for cell in data["attribution"].get("cells", []):
                cell.pop("seconds", None)
        data.get("baseline", {}).get("archived", {}).pop("created", None)
        for side in ("baseline", "candidate"):  # a run's measured wall time (its modelled latencies are stable)
            (data.get("latency") or {}).get(side, {}).pop("run_wall_time_ms", None)
        # Commit ids: the archived manifest records its creation time, so the commits differ.
        data.pop("event", None)
        data.pop("yardstick", None)
        for point in (data.get("trend") or {}).get("points", []):
            point.pop("commit", None)  # an archived commit: its manifest records when it was archived
        import re

        text = json.dumps(data, sort_keys=True).replace(str(demo.out), "").replace(str(tmp_path), "")
        text = re.sub(r"as of commit [0-9a-f]{12}", "as of commit BASE", text)
        text = re.sub(r"--base [0-9a-f]{40}", "--base BASE", text)
        return re.sub(r"retrieval-gate-yardstick-[A-Za-z0-9_]+", "OVERLAY", text)

    assert stable(again.report) == stable(demo.report)
    assert again.report["delta"] == demo.report["delta"]
    assert again.report["per_query"] == demo.report["per_query"]
    assert again.report["noise_band"]["sd"] == demo.report["noise_band"]["sd"]


@pytest.mark.full  # slow: the full tier (tests/conftest.py)
def test_the_demo_command_prints_the_comment(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path / "d"), "--scale", "0.15", "--repeats", "5"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("### ") and "verdict:" in out
    # The terminal gets the comment as text: what comment.md escapes for GitHub reads as written.
    markdown = (tmp_path / "d" / "comment.md").read_text()
    assert "\\_" in markdown and "\\_" not in out and "&gt;" not in out and "&#124;" not in out


def test_calibrate_on_the_demos_noisy_repeats_is_reproduced_by_pairwise_compare(demo, capsys, tmp_path):
    # The demo's five repeats differ only by HNSW insertion order: every ordered pair is an A/A
    # comparison. calibrate's counts must be exactly what 20 independent `compare` calls decide,
    # each fail kept only where |delta| exceeds the noise band of the other three runs (the band
    # a PR meets is measured on repeats that are neither its baseline nor its candidate).
    import json

    from gate.cli import main
    from gate.statistics.noise import spread

    repo = demo.repo
    runs = sorted(str(p) for p in (repo / ".retrieval-gate" / "noise-runs").glob("repeat-*.run.gz"))
    assert len(runs) == 5
    common = ["--qrels", _baseline_qrels(repo, tmp_path), "--queries", str(repo / "eval" / "golden.jsonl"),
              "--samples", "2000", "--seed", "7"]
    assert main(["calibrate", "--from-runs", *runs, *common, "--format", "json"]) == 0
    calibrated = json.loads(capsys.readouterr().out)
    assert calibrated["pairs"] == 20 and calibrated["pair_band"] == "others"
    decided, means = {}, {}
    for i, base in enumerate(runs):
        for j, cand in enumerate(runs):
            if i != j:
                code = main(["compare", "--baseline", base, "--candidate", cand, *common, "--fail-on-decision",
                             "--format", "json"])
                report = json.loads(capsys.readouterr().out)
                assert code == report["decision"]["exit_code"]
                decided[i, j] = (report["decision"]["kind"], report["delta"]["mean"])
                means[i], means[j] = report["baseline"]["mean"], report["candidate"]["mean"]
    fails = 0
    for (i, j), (kind, delta) in decided.items():
        band = spread([means[k] for k in range(5) if k not in (i, j)]).threshold
        fails += kind == "fail" and abs(delta) > band
    statistical = sum(kind == "fail" for kind, _ in decided.values())
    assert calibrated["fail"] == fails <= statistical
    # The band the demo stored carries the same calibration: the demo scored its repeats (baseline
    # runs) with the judgments mapped onto the baseline's chunks, as these qrels are.
    band = json.loads((repo / ".retrieval-gate" / "noise.json").read_text())
    assert band["calibration"]["pairs"] == 20 and band["calibration"]["pair_band"] == "others"
    assert band["calibration"]["fail"] <= statistical
    decisions = ("fail", "improvement_shown", "inconclusive", "failed_pairs", "identical_runs")
    assert {k: band["calibration"][k] for k in decisions} == {k: calibrated[k] for k in decisions}


@pytest.mark.full  # slow: the full tier (tests/conftest.py)
def test_calibrate_on_the_full_demos_noisy_repeats_blocks_at_most_5_percent(tmp_path, capsys):
    """Issue 31: `calibrate` on the demo's noisy repeats (the default demo: 140 queries, five
    HNSW builds) blocks at most 5% of the A/A pairs in the default mode, each pair against the
    band of the other three builds. (The quarter-scale demo of the fixture has one build worse
    than the rest on its 35 queries: every pair with it as candidate fails there, 4 of 20.)"""
    pytest.importorskip("faiss")
    pytest.importorskip("bm25s")
    import json

    from gate.cli import main
    from gate.demo.end_to_end import run_demo

    result = run_demo(tmp_path / "demo", seed=7, repeats=5, progress=lambda m: None)
    repo = result.repo
    runs = sorted(str(p) for p in (repo / ".retrieval-gate" / "noise-runs").glob("repeat-*.run.gz"))
    common = ["--qrels", _baseline_qrels(repo, tmp_path), "--queries", str(repo / "eval" / "golden.jsonl")]
    assert main(["calibrate", "--from-runs", *runs, *common, "--format", "json"]) == 0
    calibrated = json.loads(capsys.readouterr().out)
    assert calibrated["pairs"] == 20 and calibrated["mode"] == "regression" and calibrated["query_count"] == 140
    assert calibrated["blocking"] <= 0.05 * calibrated["pairs"], calibrated


def test_calibrate_on_identical_runs_reports_no_fail(tmp_path, capsys):
    import json

    from gate.cli import main

    run = tmp_path / "r.run"
    run.write_text("".join(f"q{i} Q0 d{i}_{k} {k} {10 - k} t\n" for i in range(30) for k in range(1, 6)))
    qrels = tmp_path / "q.txt"
    qrels.write_text("".join(f"q{i} 0 d{i}_{1 + i % 5} 1\n" for i in range(30)))
    copies = []
    for k in range(4):
        copy = tmp_path / f"copy{k}.run"
        copy.write_text(run.read_text())
        copies.append(str(copy))
    assert main(["calibrate", "--from-runs", *copies, "--qrels", str(qrels), "--samples", "500",
                 "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["pairs"], data["fail"], data["improvement_shown"]) == (12, 0, 0)
    # Identical runs rank every query alike: each pair is unchanged, a pass, and none would block.
    assert (data["inconclusive"], data["blocking"], data["identical_runs"]) == (0, 0, True)
    assert data["independent_pairs"] == 2 and data["independent_blocking"] == 0
    assert data["sentence"].startswith("of 12 A/A comparisons of 4 identical runs, each against the noise band of "
                                       "the other 2, 0 failed")
    # The same file twice is not two repeats.
    assert main(["calibrate", "--from-runs", copies[0], copies[0], "--qrels", str(qrels)]) == 2
    assert "names" in capsys.readouterr().err
