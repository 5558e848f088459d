"""Per-stratum comparison (gate.statistics.strata) and the shares/assignments files (gate.inputs.traffic_shares)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from gate.common.errors import InputError
from gate.inputs.readers.records import Query, QuerySet
from gate.inputs.traffic_shares import assign_strata, load_strata_spec, read_assignments, validate_against
from gate.statistics.bootstrap import paired_bootstrap
from gate.statistics.holm import holm
from gate.statistics.randomization import sign_flip_p
from gate.statistics.strata import (
    DAMAGED,
    IMPROVED,
    NOT_MEASURED,
    UNCLEAR,
    UNTOUCHED,
    bounded_mean_test,
    stratum_table,
    threshold_for,
)
from gate.verdict.directions import STRATA_DIRECTIONS, decide_direction
from gate.verdict.levels import STRATA_ALPHA

# The seed's six strata and traffic shares (22/18/15/6/31/8). The strata are large enough for
# the bounded-mean test (valid whatever the shape of the per-query changes) to show a consistent
# change of 0.08-0.10, and to show the two strata without a change within the 0.02 margin.
SHARES = {"navigational": 0.22, "error_string": 0.18, "entity_attribute": 0.15,
          "migration": 0.06, "how_to": 0.31, "tail": 0.08}
SIZES = {"navigational": 150, "error_string": 120, "entity_attribute": 120, "migration": 100, "how_to": 300,
         "tail": 250}
SHIFT = {"navigational": -0.10, "error_string": -0.10, "entity_attribute": 0.08, "migration": 0.08,
         "how_to": 0.0, "tail": 0.0}


def seed_arrays(sizes=SIZES, shift=SHIFT):
    """Per-query baseline/candidate with clear shifts and small symmetric noise (+e, -e pairs)."""
    labels, base, d = [], [], []
    for stratum, n in sizes.items():
        half = np.linspace(0.002, 0.02, n // 2)
        noise = np.concatenate([half, -half])
        d.extend(noise if shift[stratum] == 0 else shift[stratum] + 0.5 * noise)
        base.extend(np.linspace(0.3, 0.7, n))
        labels.extend([stratum] * n)
    base = np.asarray(base)
    return base, base + np.asarray(d), labels


SAMPLES = 2000


# --------------------------------------------------------------------------- directions


def test_seed_strata_directions():
    base, cand, labels = seed_arrays()
    rows = {r.stratum: r for r in stratum_table(base, cand, labels, shares=SHARES, samples=SAMPLES, seed=7,
                                                rule=STRATA_DIRECTIONS)}
    assert list(rows) == list(SHARES)
    assert {s: r.direction for s, r in rows.items()} == {
        "navigational": DAMAGED, "error_string": DAMAGED,
        "entity_attribute": IMPROVED, "migration": IMPROVED,
        "how_to": UNTOUCHED, "tail": UNTOUCHED,
    }
    assert sum(r.n for r in rows.values()) == 1040
    assert sum(r.wins for r in rows.values()) == 495
    # The bounded-mean test decides every direction; untouched is an equivalence claim.
    assert {r.decided_by for s, r in rows.items() if s not in ("how_to", "tail")} == {"bounded-mean test"}
    assert rows["how_to"].decided_by == rows["tail"].decided_by == "equivalence"
    assert all(-0.02 <= rows[s].bound_low and rows[s].bound_high <= 0.02 for s in ("how_to", "tail"))
    assert all(r.margin == 0.02 for r in rows.values())
    # The sign-flip p is still reported, exact up to 16 queries: it no longer decides.
    assert rows["how_to"].randomization == "monte-carlo"
    assert not any(r.underpowered for r in rows.values())


def test_stratum_numbers_are_the_within_stratum_paired_bootstrap():
    base, cand, labels = seed_arrays()
    rows = stratum_table(base, cand, labels, shares=SHARES, samples=SAMPLES, seed=11, rule=STRATA_DIRECTIONS)
    lab = np.asarray(labels)
    for r in rows:
        d = (cand - base)[lab == r.stratum]
        boot = paired_bootstrap(d, SAMPLES, 11)
        assert (r.delta, r.ci_low, r.ci_high) == (boot.mean, boot.ci_low, boot.ci_high)
        assert r.p_randomization == sign_flip_p(d, SAMPLES, 11)[0]
        bounded = bounded_mean_test(d, SAMPLES, 11, alpha=STRATA_ALPHA)
        assert (r.p_bound, r.bound_low, r.bound_high) == (bounded.p_value, bounded.low, bounded.high)
        assert r.baseline == pytest.approx(base[lab == r.stratum].mean())
        assert r.wins + r.losses + r.ties == r.n
    # Seeded: the same call gives the same numbers.
    again = stratum_table(base, cand, labels, shares=SHARES, samples=SAMPLES, seed=11, rule=STRATA_DIRECTIONS)
    assert [r.to_dict() for r in again] == [r.to_dict() for r in rows]


def test_small_strata_are_not_decided_by_the_sign_flip_test():
    # Six losses out of six: the exact sign-flip p is 2/64 < 0.05, which used to say "damaged".
    # It tests symmetry, not the mean: a population where a sixth of the queries gain a lot has
    # mean 0 and yields six losses a third of the time. Six queries show no direction.
    six = stratum_table(np.zeros(6), np.full(6, -0.1), ["s"] * 6, samples=SAMPLES, rule=STRATA_DIRECTIONS)[0]
    assert six.p_randomization == pytest.approx(2 / 64) and six.randomization == "exact"
    assert six.direction == UNCLEAR and six.decided_by == "neither shown"
    assert six.bound_low < -0.1 < 0 < six.bound_high
    # 16 is still enumerated exactly, 17 is not (the reported sign-flip p).
    assert stratum_table(np.zeros(16), np.full(16, 0.1), ["s"] * 16, samples=SAMPLES,
                         rule=STRATA_DIRECTIONS)[0].randomization == "exact"
    assert stratum_table(np.zeros(17), np.full(17, 0.1), ["s"] * 17, samples=SAMPLES,
                         rule=STRATA_DIRECTIONS)[0].randomization \
        == "monte-carlo"


def test_direction_needs_evidence_not_just_a_sign():
    # Mean slightly positive, interval across 0: no direction, and not untouched either.
    rng = np.random.default_rng(3)
    d = rng.normal(0.0, 0.05, 60)
    d = d - d.mean() + 0.002
    row = stratum_table(np.zeros(60), d, ["s"] * 60, samples=SAMPLES, rule=STRATA_DIRECTIONS)[0]
    assert row.delta > 0 and row.bound_low < 0 < row.bound_high
    assert row.direction == UNCLEAR


def test_noise_threshold_per_stratum():
    # A consistent +0.1 on 200 queries: shown, so without a band it is an improvement.
    d = 0.1 + np.tile([0.001, -0.001], 100)
    base = np.full(200, 0.5)
    labels = ["a"] * 200
    plain = stratum_table(base, base + d, labels, samples=SAMPLES, rule=STRATA_DIRECTIONS)[0]
    assert plain.direction == IMPROVED and plain.bound_low > 0
    # Inside a 0.15 band it did not move beyond the stack's own noise, and its interval is
    # narrow enough to say so: untouched.
    banded = stratum_table(base, base + d, labels, noise_threshold=0.15, samples=SAMPLES, rule=STRATA_DIRECTIONS)[0]
    assert banded.bound_high < 0.15
    assert banded.direction == UNTOUCHED and banded.decided_by == "noise band"
    assert banded.noise_threshold == 0.15
    # Inside a 0.105 band but with an interval reaching beyond it: shown to move, not beyond the
    # band, not shown to stay within it: unclear.
    edge = stratum_table(base, base + d, labels, noise_threshold=0.105, samples=SAMPLES, rule=STRATA_DIRECTIONS)[0]
    assert edge.bound_high > 0.105
    assert edge.direction == UNCLEAR and edge.decided_by == "noise band"
    # The band is per stratum: another stratum's band does not apply.
    other = stratum_table(base, base + d, labels, noise_threshold={"b": 0.5}, samples=SAMPLES,
                          rule=STRATA_DIRECTIONS)[0]
    assert other.direction == IMPROVED and other.noise_threshold is None
    # Beyond the band and shown: improved.
    assert stratum_table(base, base + d, labels, noise_threshold={"a": 0.05},
                         samples=SAMPLES, rule=STRATA_DIRECTIONS)[0].direction == IMPROVED
    assert threshold_for("x", {"x": 1}) == 1.0 and threshold_for("x", None) is None


def test_decide_direction_rules():
    assert decide_direction(0, 0.0, 0.0, 0.0, None) == (NOT_MEASURED, "none")
    # Holm-adjusted p below alpha: a direction, on the side of the delta.
    assert decide_direction(30, 0.2, 0.05, 0.3, 0.01) == (IMPROVED, "bounded-mean test")
    assert decide_direction(30, -0.2, -0.3, -0.05, 0.01) == (DAMAGED, "bounded-mean test")
    # Not shown, interval across the margin: unclear, whatever the delta.
    assert decide_direction(30, -0.035, -0.08, 0.016, 0.4) == (UNCLEAR, "neither shown")
    assert decide_direction(30, -0.035, -0.08, 0.016, 0.4, p_alone=0.03) == (UNCLEAR,
                                                                               "Holm-adjusted bounded-mean test")
    # Interval within the margin: untouched (equivalence); the margin is a parameter.
    assert decide_direction(300, 0.001, -0.015, 0.018, 1.0) == (UNTOUCHED, "equivalence")
    assert decide_direction(300, 0.001, -0.015, 0.025, 1.0) == (UNCLEAR, "neither shown")
    assert decide_direction(300, 0.001, -0.015, 0.025, 1.0, margin=0.03) == (UNTOUCHED, "equivalence")
    # With a band, |delta| must exceed it for a direction; within it, untouched needs the
    # interval within the band (or the margin), else unclear.
    assert decide_direction(30, 0.05, 0.01, 0.09, 0.01, threshold=0.06) == (UNCLEAR, "noise band")
    assert decide_direction(30, 0.05, 0.01, 0.09, 0.01, threshold=0.1) == (UNTOUCHED, "noise band")
    assert decide_direction(30, 0.05, 0.01, 0.09, 0.01, threshold=0.01) == (IMPROVED, "bounded-mean test")
    assert decide_direction(30, 0.05, -0.01, 0.09, 0.2, threshold=0.01) == (UNCLEAR, "neither shown")
    # A shown change inside both the band and the margin: untouched.
    assert decide_direction(5000, 0.004, 0.002, 0.006, 0.001, threshold=0.01) == (UNTOUCHED, "equivalence")


def test_underpowered_flag():
    rng = np.random.default_rng(5)
    noisy = rng.normal(0.0, 0.2, 100)
    row = stratum_table(np.zeros(100), noisy, ["s"] * 100, samples=SAMPLES, rule=STRATA_DIRECTIONS)[0]
    assert not row.underpowered  # n >= 25 and no bar to compare the MDE with
    flagged = stratum_table(np.zeros(100), noisy, ["s"] * 100, min_effect=0.01, samples=SAMPLES,
                            rule=STRATA_DIRECTIONS)[0]
    assert row.mde > 0.01
    assert flagged.underpowered and flagged.underpowered_reasons[0].startswith("MDE ")
    # The larger of band and min_effect is the bar: an MDE below it is fine.
    fine = stratum_table(np.zeros(100), noisy, ["s"] * 100, min_effect=0.01, noise_threshold=1.0,
                         samples=SAMPLES, rule=STRATA_DIRECTIONS)[0]
    assert not fine.underpowered
    # The flag travels beside the direction: 24 queries of +0.1 are too few to show a change
    # of 0.1 whatever the shape (unclear), and flagged.
    small = stratum_table(np.zeros(24), np.full(24, 0.1), ["s"] * 24, samples=SAMPLES, rule=STRATA_DIRECTIONS)[0]
    assert small.underpowered and small.underpowered_reasons == ("n = 24 < 25",)
    assert small.direction == UNCLEAR
    bigger = stratum_table(np.zeros(60), np.full(60, 0.1), ["s"] * 60, samples=SAMPLES, rule=STRATA_DIRECTIONS)[0]
    assert bigger.direction == IMPROVED and not bigger.underpowered


def test_empty_stratum_on_a_subset_is_not_measured():
    base, cand, labels = seed_arrays()
    keep = [i for i, s in enumerate(labels) if s != "tail"]
    rows = stratum_table(base[keep], cand[keep], [labels[i] for i in keep], shares=SHARES, samples=SAMPLES,
                         rule=STRATA_DIRECTIONS)
    tail = rows[-1]
    assert tail.stratum == "tail" and tail.n == 0
    assert tail.direction == NOT_MEASURED and tail.label == "n = 0, not measured"
    assert tail.delta is None and tail.p_holm is None and tail.p_bound is None and tail.share == 0.08
    d = tail.to_dict()
    assert d["label"] == "n = 0, not measured" and d["delta"] is None and d["bound_low"] is None
    assert all(r.label is None for r in rows[:-1])


def test_holm_across_measured_strata():
    # a: +0.1 on 200 queries (p tiny); b: +0.1 on 42 queries, two-sided p about 2 * (1/1.1)^42 =
    # 0.037 alone; c: mixed (p = 1).
    base = np.zeros(200 + 42 + 6)
    d = np.concatenate([np.full(200, 0.1), np.full(42, 0.1), [0.1, -0.1, 0.2, -0.2, 0.05, -0.04]])
    labels = ["a"] * 200 + ["b"] * 42 + ["c"] * 6
    rows = stratum_table(base, d, labels, shares={"a": 0.3, "b": 0.3, "c": 0.2, "empty": 0.2}, samples=SAMPLES,
                         rule=STRATA_DIRECTIONS)
    by = {r.stratum: r for r in rows}
    measured = [by[s].p_bound for s in "abc"]
    assert [by[s].p_holm for s in "abc"] == pytest.approx(list(holm(measured)))
    assert by["a"].p_holm == pytest.approx(3 * by["a"].p_bound)  # smallest of three: times 3
    assert by["b"].p_holm == pytest.approx(2 * by["b"].p_bound)
    assert by["empty"].p_holm is None  # an empty stratum is not a hypothesis
    # A direction feeds the verdict: it needs the Holm-adjusted p (family-wise error).
    assert by["a"].direction == IMPROVED and by["a"].p_holm < 0.05
    assert by["b"].p_bound < 0.05 < by["b"].p_holm
    assert by["b"].direction == UNCLEAR and by["b"].decided_by == "Holm-adjusted bounded-mean test"
    assert by["c"].direction == UNCLEAR and by["c"].decided_by == "neither shown"


def test_no_stratum_queries_are_left_out_and_misalignment_is_an_error():
    rows = stratum_table([0.1, 0.2, 0.3], [0.2, 0.2, 0.1], ["a", None, "a"], samples=100, rule=STRATA_DIRECTIONS)
    assert [(r.stratum, r.n) for r in rows] == [("a", 2)]
    with pytest.raises(ValueError):
        stratum_table([0.1, 0.2], [0.1], ["a", "a"], rule=STRATA_DIRECTIONS)
    with pytest.raises(ValueError):
        stratum_table([0.1, 0.2], [0.1, 0.3], ["a"], rule=STRATA_DIRECTIONS)
    with pytest.raises(ValueError):
        stratum_table([0.1, math.nan], [0.1, 0.3], ["a", "a"], rule=STRATA_DIRECTIONS)
    with pytest.raises(ValueError, match="margin"):
        stratum_table([0.1, 0.2], [0.1, 0.3], ["a", "a"], margin=-0.01, rule=STRATA_DIRECTIONS)


# --------------------------------------------------------------------------- shares files


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


SEED_YAML = "".join(f"{s}: {v}\n" for s, v in SHARES.items())


def test_load_plain_mapping(tmp_path):
    spec = load_strata_spec(write(tmp_path, "SHARES.yml", "# traffic shares\n" + SEED_YAML))
    assert spec.shares == SHARES and list(spec.shares) == list(SHARES)
    assert spec.guarded == () and spec.assignments is None
    assert spec.lines["navigational"] == 2 and spec.lines["tail"] == 7


def test_load_block_and_config_forms(tmp_path):
    write(tmp_path, "strata.tsv", "qid\tstratum\nq1\tnavigational\n# comment\n\nq2\ttail\n")
    block = ("shares:\n" + "".join(f"  {s}: {v}\n" for s, v in SHARES.items())
             + "assignments: strata.tsv\nguarded: [navigational, error_string]\n")
    spec = load_strata_spec(write(tmp_path, "SHARES.yml", block))
    assert spec.shares == SHARES
    assert spec.guarded == ("navigational", "error_string")
    assert spec.assignments == {"q1": "navigational", "q2": "tail"}
    assert spec.assignment_lines == {"q1": 2, "q2": 5}
    # The config itself: other keys are ignored, the strata: block is read.
    config = "metric: nDCG@10\nstrata:\n" + "".join("  " + line + "\n" for line in block.splitlines())
    spec2 = load_strata_spec(write(tmp_path, "gate.yml", config))
    assert spec2.shares == SHARES and spec2.guarded == spec.guarded and spec2.assignments == spec.assignments
    assert spec2.lines["navigational"] == 4


def test_shares_summing_to_0_9_are_rejected_with_file_and_line(tmp_path):
    path = write(tmp_path, "SHARES.yml", "# shares\nnavigational: 0.5\nhow_to: 0.4\n")
    with pytest.raises(InputError) as caught:
        load_strata_spec(path)
    assert str(caught.value) == f"{path}:2: shares sum to 0.9000, not 1 (within 1e-6)"
    assert "\n" not in str(caught.value)
    # In the block form the line is the shares mapping's.
    path = write(tmp_path, "block.yml", "guarded: []\nshares:\n  a: 0.5\n  b: 0.4\n")
    with pytest.raises(InputError) as caught:
        load_strata_spec(path)
    assert str(caught.value) == f"{path}:3: shares sum to 0.9000, not 1 (within 1e-6)"
    # Within 1e-6 is fine.
    assert load_strata_spec(write(tmp_path, "ok.yml", "a: 0.3333333\nb: 0.6666667\n")).shares["a"] == 0.3333333


@pytest.mark.parametrize("text, line, message", [
    ("a: 0.5\nb: lots\n", 2, "share of stratum 'b' is not a number: got 'lots'"),
    ("a: 0.5\nb: true\n", 2, "share of stratum 'b' is not a number: got the boolean true"),
    ("a: 1.2\nb: -0.2\n", 1, "share of stratum 'a' is 1.2: shares are fractions of 1, not percent"),
    ("a: 0.5\nb: -0.5\n", 2, "share of stratum 'b' must be a fraction >= 0, got -0.5"),
    ("a: 0.5\n  b: [\n", 2, "invalid YAML"),
    ("shares: {a: 1}\nguard: [a]\n", 2, "unknown key 'guard' in the strata block (did you mean 'guarded'?)"),
    ("shares: {a: 1}\nguarded: [b]\n", 2, "guarded stratum 'b' has no share"),
    ("shares: 3\n", 1, "'shares' must be a mapping of stratum to share, got '3'"),
    ("- a\n- b\n", 1, "expected a mapping of stratum to share"),
    ("strata:\n  guarded: [a]\n", 1, "the 'strata' block has no 'shares' mapping"),
])
def test_bad_shares_files(tmp_path, text, line, message):
    path = write(tmp_path, "SHARES.yml", text)
    with pytest.raises(InputError) as caught:
        load_strata_spec(path)
    assert caught.value.path == str(path)
    assert caught.value.line == line
    assert caught.value.message.startswith(message)
    assert "\n" not in str(caught.value)


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(InputError, match="no such shares file"):
        load_strata_spec(tmp_path / "nope.yml")
    with pytest.raises(InputError, match="empty"):
        load_strata_spec(write(tmp_path, "empty.yml", "# nothing\n"))
    with pytest.raises(InputError, match="no such strata assignments file"):
        load_strata_spec(write(tmp_path, "s.yml", "shares: {a: 1}\nassignments: missing.tsv\n"))


def test_assignments_file_errors(tmp_path):
    with pytest.raises(InputError) as caught:
        read_assignments(write(tmp_path, "a.tsv", "q1\tnav\nq2 nav\n"))
    assert caught.value.line == 2 and "query_id<TAB>stratum" in caught.value.message
    with pytest.raises(InputError) as caught:
        read_assignments(write(tmp_path, "b.tsv", "q1\tnav\nq1\ttail\n"))
    assert caught.value.line == 2 and "line 1" in caught.value.message
    assert read_assignments(write(tmp_path, "c.tsv", "q1\tnav\nq1\tnav\n"))[0] == {"q1": "nav"}


def test_validate_against_the_full_golden_set(tmp_path):
    spec = load_strata_spec(write(tmp_path, "SHARES.yml", "nav: 0.5\nhow: 0.3\ntail: 0.2\n"))
    full = {"q1": "nav", "q2": "how", "q3": "tail"}
    validate_against(spec, full)  # fine
    # A share whose stratum has no query: the error names that share's line.
    with pytest.raises(InputError) as caught:
        validate_against(spec, {"q1": "nav", "q2": "how"})
    assert (caught.value.path, caught.value.line) == (str(spec.source), 3)
    assert caught.value.message == "stratum 'tail' has a share but no golden query"
    # Queries in a stratum without a share.
    with pytest.raises(InputError) as caught:
        validate_against(spec, {**full, "q4": "nav2"})
    assert caught.value.message == "stratum 'nav2' has 1 golden queries but no share (did you mean 'nav'?)"
    assert caught.value.path == str(spec.source)
    # Queries with no stratum at all.
    with pytest.raises(InputError, match="1 golden queries have no stratum"):
        validate_against(spec, {**full, "q5": None})


def test_assign_strata_from_field_and_file(tmp_path):
    write(tmp_path, "strata.tsv", "q1\tnav\nq2\thow\n")
    spec = load_strata_spec(write(tmp_path, "s.yml", "shares: {nav: 0.5, how: 0.5}\nassignments: strata.tsv\n"))
    queries = QuerySet("q.jsonl", (Query("q1", "a", "nav"), Query("q2", "b"), Query("q3", "c", "how")))
    assert assign_strata(queries, spec) == {"q1": "nav", "q2": "how", "q3": "how"}
    assert assign_strata(queries) == {"q1": "nav", "q2": None, "q3": "how"}
    clash = QuerySet("q.jsonl", (Query("q1", "a", "how"),))
    with pytest.raises(InputError) as caught:
        assign_strata(clash, spec)
    assert caught.value.path == str(tmp_path / "strata.tsv") and caught.value.line == 1


def test_the_config_block(tmp_path):
    from gate.inputs.config import load_config
    from gate.inputs.traffic_shares import strata_spec_from_config

    write(tmp_path, "strata.tsv", "q1\tnavigational\n")
    path = write(tmp_path, ".retrieval-gate.yml", (
        "golden:\n  queries: q.jsonl\n  qrels: qrels.txt\nretrieval:\n  config: r.yml\n"
        "strata:\n  shares:\n" + "".join(f"    {s}: {v}\n" for s, v in SHARES.items())
        + "  assignments: strata.tsv\n  guarded: [navigational, error_string]\n"))
    config = load_config(path)
    spec = strata_spec_from_config(config)
    assert spec.shares == SHARES and spec.guarded == ("navigational", "error_string")
    assert spec.assignments == {"q1": "navigational"} and spec.lines["navigational"] == 8
    assert spec.source == str(path)
    # A config without the block has no spec.
    bare = write(tmp_path, "bare.yml", "golden:\n  queries: q.jsonl\n  qrels: qrels.txt\nretrieval:\n  config: r.yml\n")
    assert strata_spec_from_config(load_config(bare)) is None


def test_no_stratum_changing_labels_some_stratum_rarely_family_wise():
    # Six strata of 20 queries, no true change anywhere (d symmetric around 0): the share of
    # replications where SOME stratum gets a direction is the family-wise error, at most 5%
    # (with Holm; unadjusted intervals give about 40% here). 1,000 seeded replications.
    rng = np.random.default_rng(99)
    labelled = 0
    reps = 1000
    labels = [f"s{i // 20}" for i in range(120)]
    for _ in range(reps):
        d = rng.choice([-1, 1], size=120) * rng.uniform(0.0, 0.3, size=120) * (rng.random(120) < 0.6)
        rows = stratum_table(np.zeros(120), d, labels, samples=400, seed=int(rng.integers(1 << 30)),
                             rule=STRATA_DIRECTIONS)
        labelled += any(r.direction in (IMPROVED, DAMAGED) for r in rows)
    rate = labelled / reps
    assert rate <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / reps), rate
