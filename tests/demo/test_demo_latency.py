"""The demo's reference retriever reports latencies: the comment shows p50/p95 and their change, and a
latency limit the demo's PR breaks fails it with latency_increase (exit 1), a generous one does not.

The latencies are modelled from counted work (gate.runs.reference_latency), so these numbers are the
same on every machine: the test asserts on them, not on the machine's speed."""

from __future__ import annotations

import re
import shutil

import pytest

pytest.importorskip("faiss")
pytest.importorskip("bm25s")


def test_the_demo_comment_shows_p50_and_p95_and_their_change(demo):
    latency = demo.report["latency"]
    # The baseline is replayed from the run the v5 archive made (the cache keeps its timings with it);
    # the candidate is run in the Action's job.
    assert latency["baseline"]["source"] == "cache" and latency["candidate"]["source"] == "run"
    assert latency["p95"]["ci_low"] > 0  # dim 128 -> 256 and character n-grams: slower by the model
    assert latency["band_threshold_ms"] is not None  # the band's repeats had timings too
    assert demo.report["cost"] is None  # the demo's configs set no price
    first_screen = demo.comment.split("#### ")[0]
    assert re.search(r"^\| p50 latency \| [0-9.]+ ms \| [0-9.]+ ms \| \+[0-9.]+ ms \(\+[0-9]+%\) \| "
                     r"\[\+[0-9.]+, \+[0-9.]+\] ms \|$", first_screen, re.M), first_screen
    assert re.search(r"^\| p95 latency \| ", first_screen, re.M)


def _judged_with(demo, tmp_path, limit: str) -> dict:
    """The demo's PR judged again (its merge commit, in a copy of the demo's repository) with
    ``policy.latency.p95_max_increase: limit``, and the rules it breaks besides let through: the
    leaked FAQ, the damaged traffic and the guarded strata, so that latency alone can fail it."""
    from gate.pipeline.pull_request import run

    repo = tmp_path / "repo"
    shutil.copytree(demo.repo, repo, symlinks=True)
    text = (repo / ".retrieval-gate.yml").read_text()
    text = re.sub(r"^  guarded: .*\n", "", text, flags=re.M)
    text = text.replace("statistics:", "policy:\n  max_leaked: 9\n  max_damaged_traffic: 1.0\n"
                                       f"  latency:\n    p95_max_increase: \"{limit}\"\nstatistics:")
    config = repo / "latency-gate.yml"
    config.write_text(text)
    return run(config, progress=lambda message: None).report.to_dict()


def test_a_latency_limit_the_demo_pr_breaks_fails_it(demo, tmp_path):
    report = _judged_with(demo, tmp_path, "50%")
    codes = [r["code"] for r in report["verdict"]["reasons"]]
    assert codes == ["latency_increase", "no_regression_shown"]
    assert report["verdict"]["kind"] == "fail" and report["verdict"]["exit_code"] == 1
    (reason,) = [r for r in report["verdict"]["reasons"] if r["code"] == "latency_increase"]
    assert reason["limit"] == "+50% (policy.latency.p95_max_increase)"
    assert report["latency"]["limit"] == "+50%" and report["latency"]["breached"] is True


def test_a_generous_latency_limit_is_not_breached(demo, tmp_path):
    report = _judged_with(demo, tmp_path, "500%")
    assert [r["code"] for r in report["verdict"]["reasons"]] == ["no_regression_shown"]
    assert report["verdict"]["exit_code"] == 0
    assert report["latency"]["limit"] == "+500%" and report["latency"]["breached"] is False
