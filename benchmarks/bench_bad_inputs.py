"""Benchmark: the bad-input battery (tests/badinputs/battery.py) through the installed CLI.

Every case is a fresh `retrieval-gate` subprocess in its own folder (the known-good
world with one thing broken), run 2 at a time, each with a wall timeout (a hang)
and an address-space cap of 4 GiB (RLIMIT_AS, so a blow-up is a recorded failure
rather than the machine's), its peak RSS read from wait4. Prints: inputs tried,
clean exit 2 (one line naming the file), other exits by code, tracebacks, hangs,
silent acceptances, the worst peak memory and the slowest case, then every
failure. Exits 1 when any case failed its expectation.

    python benchmarks/bench_bad_inputs.py [--list] [--only SUBSTRING] [--jobs 2] [--json FILE] [--keep DIR]
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.badinputs.battery import CLI_ARGV, REALDATA, build_cases, realdata_available, run_all  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--only", action="append", metavar="SUBSTRING",
                        help="run only cases whose name contains it (repeatable)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", metavar="FILE", help="write every outcome as JSON here")
    parser.add_argument("--keep", metavar="DIR", help="scratch folder to keep (failing cases stay in it)")
    args = parser.parse_args(argv)

    cases = build_cases()
    if args.only:
        cases = [c for c in cases if any(s in c.name for s in args.only)]
    if args.list:
        for c in cases:
            print(f"{c.name:70} {c.category:40} {c.command()[:120]}")
        print(f"{len(cases)} cases")
        return 0
    print(f"retrieval-gate: {' '.join(CLI_ARGV)}; "
          f"real data: {REALDATA if realdata_available() else 'absent (cases skipped)'}")
    print(f"{len(cases)} cases, {args.jobs} at a time", flush=True)

    done = [0]
    started = time.monotonic()

    def progress(outcome) -> None:
        done[0] += 1
        if not outcome.ok:
            print(f"  FAIL [{outcome.kind}] {outcome.case.name}: {outcome.problem[:160]}", flush=True)
        elif done[0] % 100 == 0:
            print(f"  ... {done[0]}/{len(cases)} ({time.monotonic() - started:.0f}s)", flush=True)

    scratch_ctx = tempfile.TemporaryDirectory(prefix="rg-bad-") if not args.keep else None
    scratch = Path(args.keep or scratch_ctx.name)
    try:
        outcomes = run_all(cases, scratch, jobs=args.jobs, progress=progress, keep=bool(args.keep))
    finally:
        if scratch_ctx is not None:
            scratch_ctx.cleanup()
    wall = time.monotonic() - started

    ran = [o for o in outcomes if o.kind != "skipped"]
    kinds = collections.Counter(o.kind for o in outcomes)
    exits = collections.Counter(o.exit_code for o in ran)
    clean2 = sum(1 for o in ran if o.exit_code == 2 and o.ok)
    worst = max(ran, key=lambda o: o.peak_rss_mb, default=None)
    slowest = max(ran, key=lambda o: o.seconds, default=None)
    print()
    print(f"inputs tried                      {len(ran)}  (skipped {kinds['skipped']}; wall {wall:.0f}s)")
    print(f"met expectation                   {sum(1 for o in ran if o.ok)}")
    print(f"clean exit 2 (one line, names it) {clean2}")
    print("exits by code                     " + ", ".join(f"{k if k is not None else 'killed'}: {v}"
                                                           for k, v in sorted(exits.items(),
                                                                              key=lambda kv: str(kv[0]))))
    print(f"tracebacks / internal errors      {kinds['traceback']}")
    print(f"hangs                             {kinds['hang']}")
    print(f"silent acceptances                {kinds['silent']}")
    print(f"wrong exit code                   {kinds['wrong-exit']}")
    print(f"bad error message                 {kinds['bad-message']}")
    print(f"memory over budget                {kinds['memory']}")
    print(f"setup failures (battery bugs)     {kinds['setup-failed']}")
    if worst is not None:
        print(f"peak memory, worst case           {worst.peak_rss_mb:.0f} MiB  {worst.case.name}")
    if slowest is not None:
        print(f"slowest case                      {slowest.seconds:.1f} s  {slowest.case.name}")

    failures = [o for o in outcomes if not o.ok]
    if failures:
        print(f"\n{len(failures)} case(s) failed:")
        for o in sorted(failures, key=lambda o: (o.kind, o.case.name)):
            print(f"- [{o.kind}] {o.case.name}  ({o.case.category})")
            print(f"    $ {o.case.command()[:300]}")
            print(f"    exit {o.exit_code}, {o.seconds:.1f}s, {o.peak_rss_mb:.0f} MiB: {o.problem[:400]}")
            if o.case.note:
                print(f"    note: {o.case.note}")
    if args.json:
        rows = [{"name": o.case.name, "category": o.case.category, "command": o.case.command(), "kind": o.kind,
                 "ok": o.ok, "exit": o.exit_code, "seconds": round(o.seconds, 3),
                 "peak_rss_mb": round(o.peak_rss_mb, 1),
                 "problem": o.problem, "stderr_tail": o.stderr_tail, "traceback_tail": o.traceback_tail,
                 "note": o.case.note, "expect": {"exits": list(o.case.expect.exits), "names": o.case.expect.names,
                                                 "line": o.case.expect.line}} for o in outcomes]
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
        print(f"\nwrote {args.json}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
