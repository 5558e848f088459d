"""The demo as `./run demo` runs it (seed 7, scale 1, 5 noise repeats, B = 10,000), pinned number for
number: the same on every machine (issue 32: an AMD EPYC without AVX-512 printed +0.068 for +0.069),
and the docs' example comment is its output (full tier: about a minute and a half on 2 cores)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("faiss")
pytest.importorskip("bm25s")

from tests.regression import scenarios  # noqa: E402
from tests.regression.pinning import check_pinned  # noqa: E402

pytestmark = pytest.mark.full

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.fixture(scope="module")
def full_demo(tmp_path_factory):
    from gate.demo.end_to_end import run_demo

    return run_demo(tmp_path_factory.mktemp("demo-full"), progress=lambda message: None, **scenarios.DEMO_FULL)


def test_the_full_demo_prints_the_numbers_of_its_story(full_demo):
    # The figures the README's screenshot and docs/comment-example.md show, to the digit printed.
    r = full_demo.report
    assert r["verdict"]["kind"] == "fail" and full_demo.exit_code == 1
    assert r["verdict"]["reporting_set"]["query_count"] == 131
    assert (round(r["measures"]["nDCG@10"]["baseline"], 3), round(r["measures"]["nDCG@10"]["candidate"], 3)) == \
        (0.543, 0.541)
    assert round(r["delta"]["mean"], 3) == -0.002
    assert [round(x, 3) for x in (r["delta"]["ci_low"], r["delta"]["ci_high"])] == [-0.056, 0.053]
    strata = {s["stratum"]: s for s in r["strata"]}
    assert round(strata["navigational"]["delta"], 3) == -0.223
    assert round(strata["error_string"]["delta"], 3) == -0.349
    assert len(r["leakage"]["new"]) == 9


def test_the_full_demo_reproduces_its_pinned_report(full_demo):
    moved = check_pinned("demo-seed7-scale1", scenarios.demo_report(full_demo))
    assert not moved, "\n".join(moved[:40])


def _comparable(markdown: str) -> str:
    """The comment without what differs from run to run: wall times, dates (the baseline is
    archived today), commit ids, the reproduce line."""
    text = re.sub(r"\b\d+(?:\.\d+)? s\b", "T s", markdown)
    text = re.sub(r"\b\d{4}-\d{2}-\d{2}\b", "DATE", text)
    text = re.sub(r"\b[0-9a-f]{40}\b", "SHA", text)
    return re.sub(r"(retrieval-gate run --config \S+ --base) \S+", r"\1 BASE", text)


def test_the_docs_example_comment_is_the_demos_output(full_demo):
    # Regenerate with: retrieval-gate demo, then
    #   python docs/render_comment_png.py retrieval-gate-demo/report.json docs/comment.png \
    #       --reproduce "retrieval-gate run --config .retrieval-gate.yml --base origin/main"
    shipped = (DOCS / "comment-example.md").read_text(encoding="utf-8")
    made = (full_demo.out / "comment.md").read_text(encoding="utf-8")
    assert _comparable(made) == _comparable(shipped)
