"""Benchmark: the decision rule's operating characteristics, the gate's contract.

For every population of the battery (``benchmarks/populations.py``), every golden-set size n
and every true mean, it draws simulated PRs (n per-query differences each), puts them through a
decision rule in each policy mode and counts pass, fail, inconclusive and *blocking* (what
stops the merge: fail, plus inconclusive in ``non-inferiority`` mode), each with a 95% Wilson
interval.  True means: -0.05 (power to fail), -0.02 = -margin (a regression on the margin: the
false pass), 0 (no true change: the false block), +0.02 and +0.05 (power to show an
improvement).

The goals, checked in every row:

* a no-op PR (A/A noise families) is blocked at most 5% of the time at every n >= 20;
* a PR on the margin passes at most 2.5% in ``non-inferiority`` mode;
* a null of any shape (true mean 0) fails at most 2.5% in either mode, and claims an
  improvement at most 2.5%.

Each goal is met up to one point of Monte Carlo error (2.5% -> 3.5%, 5% -> 6%); every rate is
printed with its 95% Wilson interval.

A row the sample cannot reach is labelled, not hidden: ``reach`` is the chance that a sample of
n holds none of the queries that carry half the population's losses (at the margin) or half its
gains (under the null); above 2.5%, a sample without them looks like a milder population, and no
rule can keep the promise there without blocking PRs whose true change is half of it.  The
gate's setup check (``gate.statistics.power.reach``) states the same bound in advance.

    python benchmarks/bench_decision.py [--quick] [--rules gate,old] [--families a,b] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import decision_methods as dm  # noqa: E402
import populations as pops  # noqa: E402
from rates import wilson  # noqa: E402

from gate.statistics.power import detectable_regression, setup_check  # noqa: E402
from gate.verdict.levels import ALPHA, MIN_MOVERS, MOVERS_TO_SHOW  # noqa: E402

MARGIN = 0.02
TRUE_MEANS = (-0.05, -MARGIN, 0.0, 0.02, 0.05)
MODES = ("non-inferiority", "regression")
#: Rules in decision_methods notation; "gate" is what gate.verdict.rules decides (sign-flip tests
#: and the Hall-transformed bootstrap-t agree, at least 5 movers, the worst-case escape), "seed"
#: the seed's percentile-interval rule.
RULES = {"gate": "gate", "previous": "signflip|boot-hall+m5+wc", "simple": "signflip|boot-t+m5+wc",
         "seed": "percentile", "hall": "boot-hall",
         "t": "t", "boot-t": "boot-t"}
DEFAULT_RULES = ("seed", "previous", "gate")
REACH = 0.025


def verdicts(X: np.ndarray, dec: dm.Decision, mode: str) -> np.ndarray:
    """0 pass, 1 fail, 3 inconclusive."""
    mean = X.mean(axis=1)
    out = np.zeros(X.shape[0], dtype=np.int8) if mode == "regression" else np.full(X.shape[0], 3, dtype=np.int8)
    if mode != "regression":
        out[dec.pass_ok] = 0
    out[dec.fail_ok & (mean != 0.0)] = 1
    return out


def tally(X, dec, mode) -> dict[str, int]:
    v = verdicts(X, dec, mode)
    return {"pass": int(np.count_nonzero(v == 0)), "fail": int(np.count_nonzero(v == 1)),
            "inconclusive": int(np.count_nonzero(v == 3)),
            "blocking": int(np.count_nonzero(v == 1) + (np.count_nonzero(v == 3) if mode != "regression" else 0)),
            "improvement": int(np.count_nonzero(dec.improve & (v == 0)))}


def setup_supports(null: pops.Population, n: int, sd0: float) -> bool:
    """What the product's setup check (calibrate, archive --noise-repeats) says of a set of n
    queries on this noise in non-inferiority mode: the formula, then the rule itself on
    simulated no-op PRs drawn from the A/A differences (here a large draw of the population)."""
    from gate.verdict.calibration import simulated_no_op_blocking
    from gate.verdict.rules import Policy

    check = setup_check(n, MARGIN, "non-inferiority", sd0, None, float(null.weights[null.values != 0].sum()),
                        alpha=ALPHA, level=ALPHA, min_movers=MIN_MOVERS, movers_to_show=MOVERS_TO_SHOW)
    if not check.supports:
        return False
    pool = null.draw(np.random.default_rng(2026), 1, 20_000)[0]
    return simulated_no_op_blocking(pool, n, Policy(mode="non-inferiority", max_regression=MARGIN)) <= 0.05


def _setup_word(row: dict) -> str:
    if row["setup_supports"] is None:
        return "not a no-op family"
    return "supports" if row["setup_supports"] else "names it too small"


def pop_sd(pop: pops.Population) -> float:
    return math.sqrt(float(pop.weights @ (pop.values - pop.mean) ** 2))


def judge(row: dict, rule: str, mode: str, R: int) -> tuple[str, str, str]:
    """The marks of one row under one rule and mode: false pass at the margin, false fail at 0,
    no-op blocking: ' ' met, '!' missed, '~' beyond the sample's reach, 's' named by the setup
    check (non-inferiority on a set too small for its noise)."""
    c = {mu: row["cells"][f"{rule}|{mode}|{mu:+.2f}"] for mu in TRUE_MEANS}
    fp_mark = ff_mark = bl_mark = " "
    if mode == "non-inferiority" and not accepted(c[-MARGIN]["pass"], R, 0.025):
        fp_mark = "~" if row["reach_loss"] > REACH else "!"
    if not accepted(c[0.0]["fail"], R, 0.025):
        # run-to-run noise is symmetric: a sign-flip test holds its level whatever the sample misses
        ff_mark = "~" if row["reach_gain"] > REACH and not row["no_op"] else "!"
    if not accepted(c[0.0]["improvement"], R, 0.025):
        # a false improvement is the mirror: the losses that offset the gains may be missed
        ff_mark = ff_mark if ff_mark == "!" else ("~" if row.get("reach_loss_null", 0.0) > REACH
                                                  and not row["no_op"] else "!")
    if row["no_op"] and row["n"] >= 20 and not accepted(c[0.0]["blocking"], R, 0.05):
        bl_mark = "s" if mode == "non-inferiority" and not row["setup_supports"] else "!"
    return fp_mark, ff_mark, bl_mark


# The summary goes between the markers of the benchmarks page; every row into a page of its own.
SUMMARY_PAGE = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
FULL_TABLE = Path(__file__).resolve().parents[1] / "docs" / "decision-battery.md"
SUMMARY_START = ("<!-- decision battery: generated by `python benchmarks/bench_decision.py --write-docs`; "
                 "do not edit -->")
SUMMARY_END = "<!-- end of the decision battery -->"
COMMAND = "python benchmarks/bench_decision.py --write-docs"


def _pct(k: int, total: int, ci: bool = True) -> str:
    lo, hi = wilson(k, total)
    return f"{100 * k / total:.1f}%" + (f" [{100 * lo:.1f}, {100 * hi:.1f}]" if ci else "")


def render_markdown(results: dict, rule: str = "gate") -> tuple[str, str]:
    """(the summary in docs/benchmarks.md, docs/decision-battery.md): every figure from ``results``."""
    R = results["replications"]
    rows = results["rows"]
    by_family: dict[str, list[dict]] = {}
    for row in rows:
        by_family.setdefault(row["family"], []).append(row)
    head = (f"{R:,} simulated PRs a row ({results['source']}; {results['samples']:,} resamples, population seed "
            f"{results['seed']}, resampling seed {results['boot_seed']}); rates with 95% Wilson intervals. "
            "'beyond reach': a sample of n misses the queries carrying half the loss (or gain) more than 2.5% "
            "of the time, and the setup check says so in advance; 'setup check': non-inferiority on a set "
            "the setup check names too small for its noise.")
    summary = [head, "",
               "| population | n | at 0: false fail, regression mode (goal 2.5%) | at 0: false improvement (goal 2.5%) "
               "| non-inferiority: false pass at -0.02 (goal 2.5%) | no-op blocked, regression / non-inferiority "
               "(goal 5%) | fail at the power line's regression | rows labelled |",
               "|---|---|---|---|---|---|---|---|"]
    for family, frows in by_family.items():
        ns = ", ".join(str(r["n"]) for r in frows)

        def worst(key: str, mode: str, want: str, skip, frows=frows) -> str:
            kept = [r for r in frows if not skip(r)]
            if not kept:
                return "all beyond reach"
            top = max(kept, key=lambda r: r["cells"][f"{rule}|{mode}|{key}"][want])
            return f"{_pct(top['cells'][f'{rule}|{mode}|{key}'][want], R)} (n = {top['n']})"

        ff = worst("+0.00", "regression", "fail", lambda r: judge(r, rule, "regression", R)[1] == "~")
        fi = worst("+0.00", "regression", "improvement", lambda r: judge(r, rule, "regression", R)[1] == "~")
        fp = worst("-0.02", "non-inferiority", "pass", lambda r: judge(r, rule, "non-inferiority", R)[0] == "~")
        if frows[0]["no_op"]:
            scored = [r for r in frows if r["n"] >= 20]
            reg = max(r["cells"][f"{rule}|regression|+0.00"]["blocking"] for r in scored)
            ni_ok = [r for r in scored if r["setup_supports"]]
            ni = (_pct(max(r["cells"][f"{rule}|non-inferiority|+0.00"]["blocking"] for r in ni_ok), R, False)
                  if ni_ok else "setup check: too small at every n")
            blocked = f"{_pct(reg, R, False)} / {ni}"
        else:
            blocked = "-"
        stated = [r["cells"][f"{rule}|regression|stated"]["fail"] for r in frows
                  if f"{rule}|regression|stated" in r["cells"] and r["n"] >= 20]
        power = f"{_pct(min(stated), R, False)} - {_pct(max(stated), R, False)}" if stated else "-"
        labels = []
        for r in frows:
            marks = set(judge(r, rule, "regression", R)) | set(judge(r, rule, "non-inferiority", R))
            tag = "".join(sorted(m for m in marks if m != " "))
            if tag:
                labels.append(f"{r['n']}{tag}")
        summary.append(f"| {family} | {ns} | {ff} | {fi} | {fp} | {blocked} | {power} | {' '.join(labels) or 'none'} |")
    summary += ["", "Labels: `~` beyond reach, `s` named by the setup check, `!` a goal missed."]
    misses = [f"{r['family']} n={r['n']}" for r in rows for mode in MODES if "!" in judge(r, rule, mode, R)]
    summary.append(f"Rows missing a goal: {len(misses)}" + (f" ({', '.join(misses)})." if misses else "."))

    full = ["# The decision battery, every row", "",
            f"Generated by `{COMMAND}` (`benchmarks/bench_decision.py`; the populations are in "
            "`benchmarks/populations.py`). " + head, ""]
    rules = results.get("rules") or sorted({k.rsplit("|", 2)[0] for k in rows[0]["cells"]})
    for family, frows in by_family.items():
        full += [f"## {family}", "", frows[0].get("description", ""), "",
                 "| n | rule | mode | pass at -0.02 | fail at 0 | blocked at 0 | improvement at 0 | fail at -0.05 | "
                 "improvement at +0.02 | improvement at +0.05 | fail at the stated regression | marks |",
                 "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in frows:
            for rr in rules:
                for mode in MODES:
                    c = {key: r["cells"][f"{rr}|{mode}|{key}"] for key in ("-0.05", "-0.02", "+0.00", "+0.02", "+0.05")}
                    st = r["cells"].get(f"{rr}|{mode}|stated")
                    marks = "".join(m for m in judge(r, rr, mode, R) if m != " ")
                    full.append(f"| {r['n']} | {rr} | {mode} | {_pct(c['-0.02']['pass'], R)} | "
                                f"{_pct(c['+0.00']['fail'], R)} | {_pct(c['+0.00']['blocking'], R)} | "
                                f"{_pct(c['+0.00']['improvement'], R)} | "
                                f"{_pct(c['-0.05']['fail'], R)} | {_pct(c['+0.02']['improvement'], R)} | "
                                f"{_pct(c['+0.05']['improvement'], R)} | "
                                f"{_pct(st['fail'], R) if st else '-'} | {marks or ' '} |")
            stated = f"-{r['stated_80']:.3f}" if r.get("stated_80") is not None else "none"
            full.append(f"| {r['n']} | | reach | losses missed {100 * r['reach_loss']:.1f}%, gains missed "
                        f"{100 * r['reach_gain']:.1f}%; stated regression {stated}; setup check "
                        f"{_setup_word(r)} | | | | | | | | |")
        full.append("")
    return "\n".join(summary) + "\n", "\n".join(full) + "\n"


def write_docs(results: dict) -> None:
    summary, full = render_markdown(results)
    text = SUMMARY_PAGE.read_text()
    if SUMMARY_START not in text or SUMMARY_END not in text:
        raise SystemExit(f"{SUMMARY_PAGE} has no decision battery markers")
    before, rest = text.split(SUMMARY_START, 1)
    _, after = rest.split(SUMMARY_END, 1)
    SUMMARY_PAGE.write_text(before + SUMMARY_START + "\n" + summary + SUMMARY_END + after)
    FULL_TABLE.write_text(full)
    print(f"wrote the battery into {SUMMARY_PAGE} and {FULL_TABLE}", file=sys.stderr)


def verify(X: np.ndarray, dec: dm.Decision, samples: int, seed: int) -> int:
    """Disagreements between this module's vectorised rule and the gate's own decision
    (gate.verdict.rules.decide_delta on gate.statistics.evidence), both modes."""
    from gate.statistics.bootstrap import paired_bootstrap
    from gate.statistics.evidence import evidence
    from gate.verdict.rules import Policy, decide_delta

    wrong = 0
    for mode in MODES:
        ours = verdicts(X, dec, mode)
        for i, d in enumerate(X):
            b = paired_bootstrap(d, samples, seed, "percentile")
            v = decide_delta(b.mean, b.ci_low, b.ci_high, None, "m", d.size,
                             Policy(max_regression=MARGIN, mode=mode),
                             evidence=evidence(d, MARGIN, samples, seed, alpha=ALPHA))
            wrong += {"pass": 0, "fail": 1, "inconclusive": 3}[v.kind] != int(ours[i])
    return wrong


def accepted(k: int, total: int, goal: float) -> bool:
    """A rate meets a goal up to one point of Monte Carlo error (the issue's 2.5% -> 3.5%)."""
    return k / total <= goal + 0.01 + 1e-12


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=4000)
    parser.add_argument("--samples", type=int, default=1000, help="bootstrap / sign-flip resamples")
    parser.add_argument("--seed", type=int, default=1, help="seed of the population draws")
    parser.add_argument("--boot-seed", type=int, default=7, help="resampling seed (the gate's is 7)")
    parser.add_argument("--rules", default=",".join(DEFAULT_RULES))
    parser.add_argument("--families", default="", help="comma-separated family names (default: all)")
    parser.add_argument("--ns", default="", help="restrict to these n")
    parser.add_argument("--quick", action="store_true", help="400 replications, 500 resamples")
    parser.add_argument("--generated", action="store_true", help="the generated stand-in even if real data exist")
    parser.add_argument("--verify", type=int, default=0,
                        help="re-decide the first K PRs of every cell with the gate's own code (rule 'gate')")
    parser.add_argument("--json", help="write every count to this file")
    parser.add_argument("--write-docs", action="store_true",
                        help="write the summary into docs/benchmarks.md and every row into docs/decision-battery.md")
    parser.add_argument("--from-json", metavar="FILE", help="render the tables from a --json file, no simulation")
    args = parser.parse_args()
    if args.from_json:
        results = json.loads(Path(args.from_json).read_text())
        if args.write_docs:
            write_docs(results)
        else:
            print(render_markdown(results)[0])
        return
    if args.quick:
        args.replications, args.samples = 400, 500
    rules = [r for r in args.rules.split(",") if r]
    for r in rules:
        dm.parse(RULES.get(r, r))
    real = None if args.generated else pops.real_deltas()
    pools = real or pops.generated_deltas()
    source = "TREC DL 2019 passage, 12 official runs, 66 pairs" if real else "generated stand-in (no ../shared)"
    fams = pops.families(pools)
    if args.families:
        wanted = set(args.families.split(","))
        fams = [f for f in fams if f.name in wanted]
    only_n = {int(x) for x in args.ns.split(",") if x}
    print(f"pools: {source}; {args.replications} PRs per row, {args.samples} resamples, margin {MARGIN}, "
          f"population seed {args.seed}, resampling seed {args.boot_seed}")
    started = time.perf_counter()
    contexts: dict[int, dm.Context] = {}
    rows = []
    for fam in fams:
        built = {mu: fam.build(mu) for mu in TRUE_MEANS}
        for n in fam.ns:
            if only_n and n not in only_n:
                continue
            ctx = contexts.setdefault(n, dm.Context(n, args.samples, args.boot_seed, MARGIN))
            # a row's draws depend on the seed, its family and n only (not on which rows run)
            rng_seed = np.random.SeedSequence([args.seed, zlib.crc32(fam.name.encode()), n])
            null = built[0.0]
            sd0 = pop_sd(null)
            # The power line's claim, checked: at the regression it states from a PR's own spread
            # (here the population's at that regression: a fixed point, two steps), regression
            # mode should fail about 80% of the time.
            stated = detectable_regression(sd0, n, alpha=ALPHA)
            for _ in range(50):  # to a fixed point: the spread may grow with the regression
                try:
                    settled = (detectable_regression(pop_sd(fam.build(-stated)), n, alpha=ALPHA)
                               if stated is not None else None)
                except (ValueError, RuntimeError):  # the family cannot reach that mean
                    settled = None
                done = settled is None or abs(settled - stated) <= 1e-5 * stated
                stated = settled
                if done:
                    break
            row = {"family": fam.name, "description": fam.description, "n": n, "no_op": fam.no_op,
                   "reach_loss": built[-MARGIN].miss_probability(n, "loss"),
                   "reach_gain": null.miss_probability(n, "gain"),
                   "reach_loss_null": null.miss_probability(n, "loss"), "sd": sd0,
                   "setup_supports": setup_supports(null, n, sd0) if fam.no_op else None,
                   "cells": {}}
            means = list(TRUE_MEANS)
            if stated is not None:
                try:
                    built[-stated] = fam.build(-stated)
                    means.append(-stated)
                except (ValueError, RuntimeError):
                    stated = None
            row["stated_80"] = stated
            for mu in means:
                # common random numbers: the same uniforms for every mean and rule
                X = built[mu].draw(np.random.default_rng(rng_seed), args.replications, n)
                cache: dict = {}
                for r in rules:
                    dec = dm.run(RULES.get(r, r), X, ctx, cache)
                    for mode in MODES:
                        key = "stated" if mu not in TRUE_MEANS else f"{mu:+.2f}"
                        row["cells"][f"{r}|{mode}|{key}"] = tally(X, dec, mode)
                if args.verify and mu in TRUE_MEANS:
                    for r in rules:
                        if r == "gate":
                            row.setdefault("verify_mismatches", 0)
                            row["verify_mismatches"] += verify(X[:args.verify],
                                                               dm.run(RULES[r], X[:args.verify], ctx, {}),
                                                               args.samples, args.boot_seed)
            rows.append(row)
            print(f"  {fam.name} n={n}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    R = args.replications

    def pct(k: int) -> str:
        lo, hi = wilson(k, R)
        return f"{100 * k / R:5.1f} [{100 * lo:4.1f},{100 * hi:5.1f}]"

    print()
    print("rates in % [95% Wilson]; '!' a goal missed, '~' beyond the sample's reach, 's' named by the setup check "
          "(see --help); 'fail @stated': at the regression the power line states, regression mode should fail ~80%")
    head = (f"{'family':<18}{'n':>4} {'rule':<6}{'mode':<16}{'pass @-0.02':>19}{'fail @0':>19}{'block @0':>19}"
            f"{'impr @0':>19}"
            f"{'fail @-0.05':>19}{'impr @+0.02':>19}{'impr @+0.05':>19}{'fail @stated':>20}")
    print(head)
    print("-" * len(head))
    misses = []
    for row in rows:
        n = row["n"]
        for r in rules:
            for mode in MODES:
                c = {mu: row["cells"][f"{r}|{mode}|{mu:+.2f}"] for mu in TRUE_MEANS}
                marks = judge(row, r, mode, R)
                fp_mark, ff_mark, bl_mark = marks
                if "!" in marks and r == rules[-1]:
                    misses.append(f"{row['family']} n={n} {mode}")
                st = row["cells"].get(f"{r}|{mode}|stated")
                print(f"{row['family']:<18}{n:>4} {r:<6}{mode:<16}{pct(c[-MARGIN]['pass'])}{fp_mark}"
                      f"{pct(c[0.0]['fail'])}{ff_mark}{pct(c[0.0]['blocking'])}{bl_mark}{pct(c[0.0]['improvement'])}"
                      f"{pct(c[-0.05]['fail'])} {pct(c[0.02]['improvement'])} {pct(c[0.05]['improvement'])} "
                      f"{pct(st['fail']) if st else '   -':>19}")
        stated = f"-{row['stated_80']:.3f}" if row["stated_80"] is not None else "none"
        print(f"{'':<22}reach: losses missed {100 * row['reach_loss']:.1f}%, gains missed "
              f"{100 * row['reach_gain']:.1f}%; stated 80% regression {stated}; NI setup check: "
              f"{_setup_word(row)}"
              + (f"; gate re-check mismatches {row['verify_mismatches']}" if "verify_mismatches" in row else ""))
    print(f"\nrows missing a goal with rule {rules[-1]!r}: {len(misses)}")
    for m in misses:
        print(f"  {m}")
    print(f"wall time {time.perf_counter() - started:.0f} s")
    results = {"source": source, "replications": R, "samples": args.samples, "seed": args.seed,
               "boot_seed": args.boot_seed, "rules": rules, "rows": rows}
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    if args.write_docs:
        write_docs(results)


if __name__ == "__main__":
    main()
