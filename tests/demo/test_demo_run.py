"""The demo is the end-to-end test: a small world, the whole gate, every section of the story."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("faiss")
pytest.importorskip("bm25s")

from gate.cli import main  # noqa: E402
from gate.demo.run import run_demo  # noqa: E402

SCALE = 0.25


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return run_demo(tmp_path_factory.mktemp("demo"), seed=7, scale=SCALE, repeats=5, samples=2000,
                    progress=lambda m: None)


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
        # Commit ids: the archived manifest records its creation time, so the commits differ.
        data.pop("event", None)
        data.pop("yardstick", None)
        import re

        text = json.dumps(data, sort_keys=True).replace(str(demo.out), "").replace(str(tmp_path), "")
        text = re.sub(r"as of commit [0-9a-f]{12}", "as of commit BASE", text)
        return re.sub(r"retrieval-gate-yardstick-[A-Za-z0-9_]+", "OVERLAY", text)

    assert stable(again.report) == stable(demo.report)
    assert again.report["delta"] == demo.report["delta"]
    assert again.report["per_query"] == demo.report["per_query"]
    assert again.report["noise_band"]["sd"] == demo.report["noise_band"]["sd"]


def test_the_demo_command_prints_the_comment(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path / "d"), "--scale", "0.15", "--repeats", "5"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("### ") and "verdict:" in out
