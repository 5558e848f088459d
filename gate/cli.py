"""The ``retrieval-gate`` command: argument parsing and exit codes only.

Exit codes: 0 done (or pass), 1 fail, 2 bad input or usage (one line on
stderr), 3 inconclusive and blocking, 4 internal error (one line naming the
file where the traceback was saved) - so a crash is never read as a verdict.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from gate import __version__
from gate.common import limits
from gate.common.errors import InputError, UsageError
from gate.common.jsontext import json_text
from gate.common.numbers import counted
from gate.publishing.scaffold import ACTION_PLACEHOLDER

if TYPE_CHECKING:
    from gate.pipeline.result import GridReport

EXIT_OK, EXIT_FAIL, EXIT_INPUT, EXIT_INCONCLUSIVE, EXIT_INTERNAL = 0, 1, 2, 3, 4


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit 2 (no usage dump)."""

    def error(self, message: str):  # type: ignore[override]
        # "retrieval-gate: error: compare: ..." - the program's name is said once, by the error line
        command = self.prog.partition(" ")[2]
        raise UsageError(f"{command + ': ' if command else ''}{message} (see --help)")


def _csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _whole(text: str) -> int:
    if len(text) > 30:
        raise argparse.ArgumentTypeError(f"'{text[:30]}...' is not a whole number in range")
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None


def _int_range(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = _whole(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"'{text}' must be between {low:,} and {high:,}")
        return value

    parse.__name__ = "whole number"
    return parse


def _float_range(low: float, high: float, *, low_open: bool = False) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text[:30]}' is not a number") from None
        if not math.isfinite(value) or value < low or value > high or (low_open and value == low):
            raise argparse.ArgumentTypeError(f"'{text[:30]}' must be {'above' if low_open else 'at least'} {low:g} "
                                             f"and at most {high:g}")
        return value

    parse.__name__ = "number"
    return parse


_positive_int = _int_range(1, 1 << 31)
_seed = _int_range(0, limits.MAX_SEED)
_samples = _int_range(1, limits.MAX_SAMPLES)
_cutoff = _int_range(1, limits.MAX_CUTOFF)
_rel = _int_range(1, 1 << 31)


def _noise_repeats(text: str) -> int:
    value = _whole(text)
    if value != 0 and not 2 <= value <= limits.MAX_REPEATS:
        raise argparse.ArgumentTypeError(f"'{text}' must be 0 (no band) or between 2 and {limits.MAX_REPEATS:,}"
                                         " (a band needs two runs at least)")
    return value


class _Extend(argparse.Action):
    """A comma-separated option that may be repeated (``--also AP --also P@10``): the values
    accumulate, and replace the default rather than adding to it."""

    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[override]
        current = getattr(namespace, self.dest, None)
        if current is None or current is self.default:
            current = []
        setattr(namespace, self.dest, [*current, *values])


def _command(sub: Any, name: str, summary: str, more: str, **kwargs: Any) -> argparse.ArgumentParser:
    """A sub-command whose own --help opens with its one-line summary (what the command list
    shows), extended by ``more``: the two say the same thing, and neither can be left out."""
    return sub.add_parser(name, help=summary, description=f"{summary[:1].upper()}{summary[1:]}. {more}", **kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="retrieval-gate",
        description="Decide whether a retrieval change really moved retrieval quality.",
    )
    parser.add_argument("--version", action="version", version=f"retrieval-gate {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = _command(sub, "init", "set up the gate in a repository: its config, workflows and .gitignore lines",
                 "Finds the golden queries, qrels, corpus and retrieval config (reading each to be sure), writes "
                 ".retrieval-gate.yml, the check, comment and archive workflows under .github/workflows/ and the "
                 ".gitignore lines, and prints the next steps. It asks nothing: what it cannot find, pass as an "
                 "option.")
    p.add_argument("--dir", default=".", metavar="DIR",
                   help="the folder the config goes in: the repository's top level or a subfolder (default .)")
    p.add_argument("--suite", metavar="NAME",
                   help="the suite's name: the comment's and the status's (default retrieval)")
    p.add_argument("--queries", metavar="PATH", help="golden queries (TSV/JSONL, a BEIR folder or irds:<id>), "
                                                     "relative to --dir (default: found)")
    p.add_argument("--qrels", metavar="PATH", help="their qrels (default: found)")
    p.add_argument("--corpus", metavar="PATH", help="the corpus, for the leakage check and {corpus} (default: found)")
    p.add_argument("--retrieval-config", metavar="PATH", help="the retrieval config a PR changes (default: found)")
    p.add_argument("--command", metavar="CMD",
                   help="your search command with {config} {queries} {corpus} {run} (default: a marked placeholder)")
    p.add_argument("--action", default=ACTION_PLACEHOLDER, metavar="OWNER/REPO@REF",
                   help=f"the gate's Action in the workflows (default: the placeholder {ACTION_PLACEHOLDER})")
    p.add_argument("--branch", metavar="NAME", help="the default branch the archive job runs on (default: origin's "
                                                    "HEAD, else the current branch)")
    p.add_argument("--force", action="store_true", help="rewrite an existing config and workflows")
    p.set_defaults(handler=_cmd_init)

    p = _command(sub, "compare", "paired comparison of two run files against qrels",
                 "The primary measure's delta with its bootstrap interval, query by query, and the decision "
                 "(pass, fail or inconclusive) under the policy mode; needs no config, only the two runs and "
                 "their qrels.")
    p.add_argument("--baseline", required=True, metavar="RUN", help="baseline TREC run (.gz ok)")
    p.add_argument("--candidate", required=True, metavar="RUN", help="candidate TREC run (.gz ok)")
    p.add_argument("--qrels", required=True, help="qrels file (4- or 3-column), BEIR folder, or irds:<id>")
    p.add_argument("--queries",
                   help="golden queries (TSV/JSONL, BEIR folder or irds:<id>); default: the qrels' queries")
    p.add_argument("--metric", default="nDCG@10", help="primary measure, ir_measures syntax (default nDCG@10)")
    p.add_argument("--also", type=_csv, action=_Extend, default=["AP", "RR@10", "R@100", "Judged@10"],
                   help="more measures, comma separated or repeated (default AP,RR@10,R@100,Judged@10)")
    p.add_argument("--rel", type=_rel, default=1, help="relevance threshold for binary measures (default 1)")
    p.add_argument("--samples", type=_samples, default=10_000, help="bootstrap resamples (default 10000)")
    p.add_argument("--seed", type=_seed, default=7, help="random seed (default 7)")
    p.add_argument("--ci-method", choices=["percentile", "basic", "bca"], default="percentile",
                   help="bootstrap interval: percentile, basic or bca (default percentile)")
    p.add_argument("--strata", metavar="SHARES.yml", help="traffic share per stratum (strata from --queries): adds the "
                   "strata table, traffic accounting and movement buckets (default: none)")
    p.add_argument("--out", metavar="DIR", help="write report.json and report.md here (default: no files)")
    p.add_argument("--format", choices=["text", "json"], default="text",
                   help="what goes to stdout: text (a summary) or json (the whole report) (default text)")
    p.add_argument("--mode", choices=["regression", "non-inferiority"], default="regression",
                   help="the decision's policy mode, as policy.mode: regression (fail on a regression shown beyond "
                   "the noise, else pass) or non-inferiority (pass only when no worse than the margin is shown) "
                   "(default regression)")
    p.add_argument("--max-regression", type=_float_range(0.0, 1.0), default=0.02, metavar="MARGIN",
                   help="the margin: non-inferiority's tolerance, and what the setup check measures the set against "
                   "(default 0.02, as policy.max_regression)")
    p.add_argument("--require-improvement", action="store_true",
                   help="the decision fails unless an improvement is shown")
    p.add_argument("--fail-on-decision", action="store_true",
                   help="exit with the decision's code (0 pass, 1 fail, 3 inconclusive) instead of 0")
    p.set_defaults(handler=_cmd_compare)

    def config_arg(p: argparse.ArgumentParser) -> None:
        p.add_argument("--config", default=".retrieval-gate.yml", metavar="FILE",
                       help="gate config (default .retrieval-gate.yml)")

    p = _command(sub, "archive", "archive a baseline manifest for the current retrieval config",
                 "Its run, per-query scores and the fingerprints of the golden set, corpus and environment: the "
                 "baseline later pull requests are measured against.")
    config_arg(p)
    p.add_argument("--run", metavar="RUN", help="archive this precomputed run of the current config instead of running "
                   "it (default: the config's runner makes the run)")
    p.add_argument("--runs-dir", metavar="DIR", help="runs produced by an earlier step (see plan); a run missing "
                   "from it is named, never run by the gate (default: the gate runs the config's runner)")
    p.add_argument("--gc", action="store_true", help="only remove data files the manifest no longer names")
    p.add_argument("--noise-repeats", type=_noise_repeats, default=0, metavar="N",
                   help="also measure the noise band from N identical runs and store it with the baseline "
                        "(default 0: no band)")
    p.set_defaults(handler=_cmd_archive)

    p = _command(sub, "history", "write the history page of the metric over main's archived baselines",
                 "One self-contained HTML page (index.html, opens offline) and history.json from every "
                 "baselines/<sha>/manifest.yml on the baselines branch: the primary metric and each stratum with "
                 "95% intervals and the noise band, broken where the golden set, qrels or metric changed.")
    config_arg(p)
    p.add_argument("--branch", default="retrieval-gate-baselines", metavar="BRANCH",
                   help="the branch the archive workflow commits baselines to (default retrieval-gate-baselines)")
    p.add_argument("--out", default=".retrieval-gate/history", metavar="DIR",
                   help="where index.html and history.json are written (default .retrieval-gate/history)")
    p.add_argument("--last", type=_int_range(1, 100_000), default=200, metavar="N",
                   help="the newest N baselines (default 200)")
    p.set_defaults(handler=_cmd_history)

    p = _command(sub, "replay", "make the archived baseline commensurable with today's inputs",
                 "Reused when nothing it was measured on changed, rescored on today's queries and qrels, or re-run "
                 "at its commit when the corpus or the code changed; says which, and why.")
    config_arg(p)
    p.add_argument("--runs-dir", metavar="DIR", help="runs produced by an earlier step (see plan); a run missing "
                   "from it is named, never run by the gate (default: the gate runs the config's runner)")
    p.add_argument("--base", metavar="REF", help="base commit: reconstructs the baseline at it when no archived "
                   "manifest fits (default: none, only the archived manifest)")
    p.add_argument("--out", metavar="DIR", help="also write replay.json here (default: no file)")
    p.add_argument("--format", choices=["text", "json"], default="text",
                   help="what goes to stdout: text (what changed since the archive) or json (default text)")
    p.set_defaults(handler=_cmd_replay)

    def suites_config_arg(p: argparse.ArgumentParser) -> None:
        p.add_argument("--config", default=".retrieval-gate.yml", metavar="FILE",
                       help="gate config, or a suites file (suites: a list of configs) or a quoted glob of configs: "
                            "several suites, each judged by its own config (default .retrieval-gate.yml)")

    p = _command(sub, "plan", "list every run the gate needs, with the key each is picked up by",
                 "For a workflow whose own steps (or an Actions matrix) produce the runs before the gate judges "
                 "them with --runs-dir. With several suites (--config a suites file or a glob): which suites the "
                 "change touches, and with --format github-matrix one gate job per touched suite.")
    suites_config_arg(p)
    p.add_argument("--runs-dir", metavar="DIR", help="where the runs will be written (default .retrieval-gate/runs)")
    p.add_argument("--base", metavar="REF", help="base commit of the PR: plan as the gate will judge it, the "
                   "yardstick as of REF, the base's baseline fetched from the baselines branch when the checkout has "
                   "none (GITHUB_TOKEN, GITHUB_SERVER_URL, GITHUB_REPOSITORY) (default: in a pull_request or "
                   "merge_group job - GITHUB_ACTIONS, GITHUB_EVENT_NAME, GITHUB_EVENT_PATH - the event's base, as the "
                   "Action takes it; elsewhere none, the current checkout)")
    p.add_argument("--noise-repeats", type=_noise_repeats, default=0, metavar="N",
                   help="also the N identical runs archive --noise-repeats N measures the noise band from "
                        "(default 0: none)")
    p.add_argument("--sweep", action="store_true", help="also every cell of the config's sweep.params grid, for "
                   "retrieval-gate sweep --runs-dir (default: not)")
    p.add_argument("--format", choices=["text", "json", "github-matrix"], default="text",
                   help="text (a table), json, or github-matrix: one line of JSON, every needed run as a job of an "
                        "Actions matrix; with several suites, one gate job per touched suite ({count, suites, "
                        "skipped, removed, include}) (default text)")
    p.add_argument("--parts", type=_int_range(1, 1000), default=1, metavar="P",
                   help="github-matrix: split the jobs into P matrices (GitHub runs at most 256 per matrix); one "
                        "suite only (default 1)")
    p.set_defaults(handler=_cmd_plan)

    p = _command(sub, "run", "the gate: commensurable baseline, candidate, statistics, verdict",
                 "Measures the retrieval config under test against the archived baseline on the same queries and "
                 "qrels, runs the validity checks (leakage, tuning, prompts, judged share) and writes the report "
                 "and the PR comment; the exit code is the verdict. With several suites (--config a suites "
                 "file or a glob) each is judged into OUT/<suite>/, a table is printed, OUT/suites.json and the "
                 "combined comment are written and the exit code is the worst suite's.")
    suites_config_arg(p)
    p.add_argument("--candidate-run", metavar="FILE", help="precomputed run of the PR's retrieval config (default: "
                   "the config's runner makes it)")
    p.add_argument("--candidate-timings", metavar="FILE", help="the timings sidecar of --candidate-run (JSONL: "
                   "query_id, latency_ms, optional cost; docs: Runners) (default: none, no latency comparison)")
    p.add_argument("--runs-dir", metavar="DIR", help="runs produced by an earlier step (see plan); a run missing "
                   "from it makes the verdict inconclusive, naming its key (the gate runs nothing itself) "
                   "(default: the gate runs the config's runner)")
    p.add_argument("--base", metavar="REF", help="base commit of the PR: the yardstick (gate config, golden set, "
                   "baseline) is read as of REF and the config diff taken against it (default: none, the "
                   "current checkout judged against its archived baseline)")
    p.add_argument("--out", default=".retrieval-gate/out", metavar="DIR",
                   help="write report.json, report.md and comment.md (the PR comment) here "
                        "(default .retrieval-gate/out)")
    p.add_argument("--format", choices=["text", "json"], default="text",
                   help="what goes to stdout: text (the verdict, delta, interval and reasons; several suites: one "
                        "row each) or json (the whole report; several suites: suites.json) (default text)")
    p.set_defaults(handler=_cmd_run)

    p = _command(sub, "noise", "measure the run-to-run noise band from identical runs",
                 "The spread of the metric between runs of one unchanged configuration, stored so that a delta "
                 "inside it is not read as a change.")
    config_arg(p)
    p.add_argument("--repeats", type=_int_range(2, limits.MAX_REPEATS), default=None,
                   help="identical runs through the runner (default noise.repeats)")
    p.add_argument("--from-runs", nargs="+", metavar="RUN", help="compute the band from these existing runs of one "
                   "configuration (default: run the config's runner --repeats times)")
    p.add_argument("--qrels", help="with --from-runs: qrels file, BEIR folder or irds:<id> (default: none; "
                   "required with --from-runs)")
    p.add_argument("--queries", help="with --from-runs: golden queries, for the strata and the query set "
                   "(default: the qrels' queries)")
    p.add_argument("--metric", default=None, help="with --from-runs: the measure whose spread is the band "
                   "(default nDCG@10; without --from-runs the config's metric is used and this is refused)")
    p.add_argument("--rel", type=_rel, default=None, help="with --from-runs: relevance threshold of binary measures "
                   "(default 1; without --from-runs the config's golden.rel is used and this is refused)")
    p.add_argument("--runs-dir", metavar="DIR", help="without --from-runs: the repeats produced by an earlier step "
                   "(see plan --noise-repeats) (default: the gate runs the config's runner)")
    p.add_argument("--out", default="noise.json", metavar="FILE", help="where the band is written (default "
                   "noise.json)")
    p.set_defaults(handler=_cmd_noise)

    p = _command(sub, "calibrate", "the gate's false-alarm rate on this stack: every pair of identical runs "
                 "through the decision", "How often the decision would fail, or pass as an improvement, a pull "
                 "request that changes nothing.")
    config_arg(p)
    p.add_argument("--from-runs", nargs="+", metavar="RUN", help="identical runs of one configuration (default: "
                   "the noise repeats stored with the baseline manifest)")
    p.add_argument("--qrels", help="with --from-runs: qrels file, BEIR folder or irds:<id> (default: none; "
                   "required with --from-runs)")
    p.add_argument("--queries", help="with --from-runs: golden queries (default: the qrels' queries)")
    p.add_argument("--metric", default=None, help="primary measure (default: the config's metric; with --from-runs "
                   "nDCG@10)")
    p.add_argument("--rel", type=_rel, default=None,
                   help="relevance threshold of binary measures (default: the config's golden.rel; with --from-runs 1)")
    p.add_argument("--samples", type=_samples, default=None,
                   help="bootstrap resamples (default: the config's statistics.samples; with --from-runs 10000)")
    p.add_argument("--seed", type=_seed, default=None,
                   help="random seed (default: the config's statistics.seed; with --from-runs 7)")
    p.add_argument("--mode", choices=["regression", "non-inferiority"], default=None,
                   help="policy mode (default: the config's policy.mode; with --from-runs regression)")
    p.add_argument("--max-regression", type=_float_range(0.0, 1.0), default=None, metavar="MARGIN",
                   help="the margin (default: the config's policy.max_regression; with --from-runs 0.02)")
    p.add_argument("--format", choices=["text", "json"], default="text",
                   help="what goes to stdout: text (a summary) or json (default text)")
    p.add_argument("--out", metavar="FILE", help="also write the result as JSON here (default: no file)")
    p.set_defaults(handler=_cmd_calibrate)

    p = _command(sub, "comment", "post a saved report as the PR comment (the fork-safe workflow_run job)",
                 "The job that holds the token posts what the untrusted gate job saved, once the pull request's "
                 "head is the commit the report was made for.",
                 epilog="Environment: GITHUB_TOKEN (or INPUT_TOKEN), a token that may write pull-request "
                              "comments (required); GITHUB_REPOSITORY, owner/name (required); GITHUB_API_URL, the "
                              "API root (default https://api.github.com); GITHUB_EVENT_NAME and GITHUB_EVENT_PATH, "
                              "the workflow_run event (its run's conclusion, when --run-conclusion is not given). "
                              "The HTTP client also honours the usual proxy and CA-bundle variables (HTTPS_PROXY, "
                              "REQUESTS_CA_BUNDLE).")
    saved = p.add_mutually_exclusive_group(required=True)
    saved.add_argument("--report", action="append", metavar="REPORT.json",
                       help="the report.json the gate job saved as an artifact; given several times, the reports of "
                            "a set of suites, posted as one combined comment (with --config). One of --report and "
                            "--reports is required: there is no default")
    saved.add_argument("--reports", metavar="DIR",
                       help="a folder of a set of suites' reports, posted as one combined comment: suites.json and "
                            "the reports it names (the Action's output, or the status job's of a matrix workflow), "
                            "or the downloaded retrieval-gate-report-<suite>/report.json artifacts. Each report's "
                            "suite must be one --config lists, one report per suite; a suite with none is a row "
                            "'no report' (default: --report instead)")
    p.add_argument("--pr", required=True, type=_positive_int, metavar="N",
                   help="the pull request's number (from the artifact: believed only if the PR's head is --head-sha); "
                        "a report the Action made for another PR is refused")
    p.add_argument("--head-sha", required=True, metavar="SHA", type=_sha,
                   help="workflow_run.head_sha: the PR number is accepted only if the PR's head is this commit, and "
                        "the report only if it was made for it")
    p.add_argument("--comment-mode", choices=["update", "new"], default="update",
                   help="update: one current comment (a rerun of the head edits it, a new head replaces it); "
                        "new: a new one each time (default update)")
    trusted_suite = p.add_mutually_exclusive_group()
    trusted_suite.add_argument("--suite", metavar="NAME",
                               help="the suite whose comment this job keeps, from the workflow (trusted), not the "
                                    "artifact: a report of another suite is refused (default: the report's suite)")
    trusted_suite.add_argument("--config", metavar="FILE",
                               help="read that suite from this gate config instead: the default branch's "
                                    ".retrieval-gate.yml (trusted), so the suite is named in one place; for a set of "
                                    "reports, the default branch's suites file: the suites the reports may be of, "
                                    "and the combined comment's name")
    p.add_argument("--max-wait", type=_float_range(0.0, limits.MAX_GITHUB_WAIT), default=120.0, metavar="SECONDS",
                   help="cap on all the seconds spent on GitHub calls (default 120)")
    from gate.inputs.github_event import RUN_CONCLUSIONS

    p.add_argument("--run-conclusion", choices=RUN_CONCLUSIONS, default=None, metavar="CONCLUSION",
                   help="workflow_run.conclusion, the result of the PR job that saved the report "
                        f"({', '.join(RUN_CONCLUSIONS)}): the comment says so when the report's verdict would have "
                        "given that job the other result (default: the workflow_run event's, in a workflow_run job; "
                        "else not compared)")
    p.set_defaults(handler=_cmd_comment)

    p = _command(sub, "suites-status", "the required status of a per-suite matrix workflow: its worst suite's verdict",
                 "The final job of a matrix workflow (needs: [plan, gate], if: always()) reads every suite's saved "
                 "report, prints the verdict table, writes it to the job summary, sets the outputs verdict (the worst "
                 "suite's) and worst (that suite's name), and exits with the worst suite's code; a planned suite "
                 "without a report exits 3, naming it.",
                 epilog="Environment: GITHUB_STEP_SUMMARY and GITHUB_OUTPUT, where GitHub's runner reads the job "
                        "summary and the step's outputs (each optional).")
    p.add_argument("--reports", required=True, metavar="DIR",
                   help="the folder the gate jobs' artifacts were downloaded to: retrieval-gate-report-<suite>/"
                        "report.json (or <suite>/report.json) per suite")
    p.add_argument("--config", required=True, metavar="FILE",
                   help="the suites file (or a quoted glob of gate configs) the plan job read: the suites a report "
                        "may be of")
    p.add_argument("--plan", metavar="PLAN.json",
                   help="plan --format github-matrix's output: the touched suites are the reports due, the skipped "
                        "ones are rows 'skipped' (default: every suite of --config is due)")
    p.add_argument("--out", metavar="DIR",
                   help="also write the set here as the Action does: suites.json, <suite>/report.json and the "
                        "combined comment.md (upload it for the comment workflow: comment --reports DIR; default: "
                        "nothing written)")
    p.set_defaults(handler=_cmd_suites_status)

    p = _command(sub, "factorial", "effects and interactions of bundled changes from a 2^k grid of run files",
                 "When a change bundles several factors, each factor's main effect and their interactions, each "
                 "with its interval, instead of one delta.")
    p.add_argument("--factor", action="append", required=True, metavar="NAME", help="a changed factor (repeat)")
    p.add_argument("--cell", action="append", required=True, metavar="LEVELS=RUN",
                   help="a cell's run, e.g. model=new,corpus=old=runs/cell.run (repeat for all 2^k cells)")
    p.add_argument("--qrels", required=True, help="qrels file (4- or 3-column), BEIR folder, or irds:<id>")
    p.add_argument("--queries", help="golden queries (TSV/JSONL, BEIR folder or irds:<id>) (default: the qrels' "
                   "queries)")
    p.add_argument("--metric", default="nDCG@10", help="the measure whose effects are estimated, ir_measures syntax "
                   "(default nDCG@10)")
    p.add_argument("--rel", type=_rel, default=1, help="relevance threshold for binary measures (default 1)")
    p.add_argument("--samples", type=_samples, default=10_000, help="bootstrap resamples (default 10000)")
    p.add_argument("--seed", type=_seed, default=7, help="random seed (default 7)")
    p.add_argument("--allow-missing", action="store_true", help="let queries missing from a cell score 0")
    p.add_argument("--out", metavar="DIR", help="write report.json and report.md here (default: no files)")
    p.add_argument("--format", choices=["text", "json"], default="text",
                   help="what goes to stdout: text (a table of effects) or json (default text)")
    p.set_defaults(handler=_cmd_factorial)

    p = _command(sub, "sweep", "a grid of configs: the maximum (optimistic), the held-out and the "
                 "cross-validated estimate, and the optimism of reporting the best cell",
                 "How much of the best cell's score is the maximum finding the particular queries of the set "
                 "rather than a better config.")
    p.add_argument("--config", metavar="FILE", help="gate config whose sweep.params grid is run through the runner "
                   "(default .retrieval-gate.yml, unless --cell gives the runs)")
    p.add_argument("--runs-dir", metavar="DIR", help="with the config: cells produced by an earlier step (see plan "
                   "--sweep); a cell missing from it is refused, naming its key (default: the runner makes them)")
    p.add_argument("--cell", action="append", metavar="NAME=RUN", help="a cell's precomputed run instead of the "
                   "config's grid, e.g. rrf_k=60,w=0.5=runs/cell.run (repeat, at least 2) (default: none, the config's "
                   "sweep.params grid)")
    p.add_argument("--qrels", help="with --cell, required: qrels file (4- or 3-column), BEIR folder, or irds:<id> "
                   "(default: none; with the config, golden.qrels)")
    p.add_argument("--queries", help="with --cell: golden queries (TSV/JSONL, BEIR folder or irds:<id>); their "
                   "strata stratify the folds (default: every judged query of the qrels, unstratified)")
    p.add_argument("--metric", help="with --cell: the measure, ir_measures syntax (default nDCG@10; with the "
                   "config, its metric)")
    p.add_argument("--rel", type=_rel, help="with --cell: relevance threshold for binary measures (default 1; with "
                   "the config, golden.rel)")
    p.add_argument("--tuning", metavar="QUERIES", help="with --cell: the queries the grid was tuned on (a query "
                   "file); the held-out estimate chooses on them and scores the rest (default: none; with the "
                   "config, tuning.queries)")
    p.add_argument("--reference", metavar="NAME", help="with --cell: the cell that is the config as it stands "
                   "(default: none; with the config, the cell whose values are the retrieval config's)")
    p.add_argument("--allow-missing", action="store_true", help="with --cell: let queries missing from a cell "
                   "score 0 (default: refused)")
    p.add_argument("--folds", type=_int_range(2, 100), help="cross-validation folds (default: the config's "
                   "sweep.folds, 5)")
    p.add_argument("--samples", type=_samples, help="bootstrap resamples (default: the config's statistics.samples, "
                   "10000)")
    p.add_argument("--seed", type=_seed, help="random seed of the folds and the resamples (default: the config's "
                   "statistics.seed, 7)")
    p.add_argument("--out", metavar="DIR", help="write report.json and report.md here (default: no files)")
    p.add_argument("--format", choices=["text", "json"], default="text",
                   help="what goes to stdout: text (the estimates and every cell) or json (default text)")
    p.set_defaults(handler=_cmd_sweep)

    p = _command(sub, "leakcheck", "find golden queries that appear in a corpus (exit 1 when found)",
                 "Verbatim (exact) and near-verbatim (trigram Jaccard) copies of query texts inside corpus chunks: "
                 "they move a metric without any retrieval change.")
    p.add_argument("--queries", required=True, help="golden queries (TSV/JSONL, BEIR folder or irds:<id>)")
    p.add_argument("--corpus", required=True, help="corpus (JSONL, TSV, BEIR folder, a folder of files, or irds:<id>)")
    p.add_argument("--mode", type=_csv, action=_Extend, default=["exact", "trigram-jaccard"], metavar="MODES",
                   help="exact, trigram-jaccard or both, comma separated or repeated (default "
                        "exact,trigram-jaccard)")
    p.add_argument("--threshold", type=_float_range(0.0, 1.0, low_open=True), default=0.85,
                   help="trigram Jaccard threshold (default 0.85)")
    p.add_argument("--min-tokens", type=_int_range(1, 10_000), default=3,
                   help="shorter queries are not attributed (default 3)")
    p.add_argument("--format", choices=["text", "json"], default="text",
                   help="what goes to stdout: text (one line per leak) or json (default text)")
    p.set_defaults(handler=_cmd_leakcheck)

    p = _command(sub, "lift", "movement buckets of the first relevant document between two runs",
                 "Per query, whether the first relevant document was promoted, demoted, newly found, lost or "
                 "stayed, within a rank cutoff, and recall at a depth.")
    p.add_argument("--before-run", "--baseline", dest="before", required=True, metavar="RUN",
                   help="the run before the change (TREC, .gz ok)")
    p.add_argument("--after-run", "--candidate", dest="after", required=True, metavar="RUN",
                   help="the run after the change (TREC, .gz ok)")
    p.add_argument("--qrels", help="qrels (4- or 3-column) (default: MS MARCO passage dev/small via ir_datasets)")
    p.add_argument("--queries", help="query file, for the example texts and the strata (default: none)")
    p.add_argument("--rel-threshold", "--rel", dest="rel", type=_rel, default=1,
                   help="the label a document needs to count as relevant (default 1)")
    p.add_argument("--k-rank", type=_cutoff, default=10,
                   help="the first relevant document within this rank is 'found' (the buckets; default 10)")
    p.add_argument("--k-recall", type=_cutoff, default=100,
                   help="the depth at which recall of the relevant documents is counted (default 100)")
    p.add_argument("--output-dir", "--out", dest="out", required=True, metavar="DIR",
                   help="where the lift files are written")
    p.set_defaults(handler=_cmd_lift)

    p = _command(sub, "judgments", "convert judgments between TREC qrels and the formats search teams keep",
                 "Reads TREC/BEIR qrels, irds:, Elasticsearch/OpenSearch _rank_eval bodies, OpenSearch Search "
                 "Relevance judgment lists, RRE ratings.json and Quepid CSV (or a run's unjudged.tsv: documents "
                 "to rate) and writes TREC qrels, a Quepid CSV, a _rank_eval body or JSON Lines.")
    p.add_argument("action", choices=["convert"], help="what to do (convert)")
    p.add_argument("source", metavar="IN", help="the judgments (any format above; detected by content)")
    p.add_argument("--to", required=True, choices=["trec", "quepid", "rank-eval", "jsonl"], help="the format to write")
    p.add_argument("--out", metavar="FILE", help="where to write (atomically, so a file, not a device or /dev/stdout; "
                   "default: standard output)")
    p.add_argument("--queries", metavar="PATH", help="golden queries: judged texts take their ids, and formats "
                   "keyed by text (--to quepid) take their texts (default: none)")
    p.add_argument("--queries-out", metavar="FILE", help="where the query texts of a text-keyed source go "
                   "(qid<TAB>text; default with --out, unless --to quepid: OUT without its suffix + .queries.tsv)")
    p.add_argument("--index", default="index", help="the _index of --to rank-eval ratings (default index)")
    p.set_defaults(handler=_cmd_judgments)

    p = _command(sub, "demo", "the whole gate on a generated docs-search world, offline",
                 "A fictional API documentation site, its golden set and two parser versions, through archive, "
                 "noise and run; deterministic from --seed.")
    p.add_argument("--out", default="retrieval-gate-demo", metavar="DIR",
                   help="output folder (default retrieval-gate-demo)")
    p.add_argument("--seed", type=_seed, default=7, help="seed of the generated world (default 7)")
    p.add_argument("--scale", type=_float_range(0.0, 10.0, low_open=True), default=1.0,
                   help="size of the world (1.0: about 3,000 pages; at most 10) (default 1.0)")
    p.add_argument("--repeats", type=_int_range(2, 50), default=5,
                   help="identical runs for the noise band (default 5)")
    p.add_argument("--runner", choices=("reference", "http"), default="reference",
                   help="reference: the retriever runs in process; http: the same retriever served on 127.0.0.1 and "
                   "asked one query per request by runner.type http (the same numbers) (default reference)")
    p.set_defaults(handler=_cmd_demo)
    return parser


def _check_measures(metric: str, also: Sequence[str] = ()) -> None:
    """Measure names are checked before any file is read, and the error names the option."""
    from gate.evaluation.measures import parse_measure

    for option, names in (("--metric", [metric]), ("--also", list(also))):
        for name in names:
            try:
                parse_measure(name)
            except InputError as error:
                raise UsageError(f"{option} {name[:40]!r}: {error.message}") from None


def _sha(text: str) -> str:
    if len(text) not in (40, 64) or any(c not in "0123456789abcdef" for c in text.lower()):
        raise argparse.ArgumentTypeError(f"'{text[:70]}' is not a commit sha (40 or 64 hex digits)")
    return text.lower()


def _progress(message: str) -> None:
    print(f"[retrieval-gate] {message}", file=sys.stderr, flush=True)


def _cmd_compare(args: argparse.Namespace) -> int:
    from gate.pipeline.compare import CompareSettings, compare_files
    from gate.rendering.terminal import summary_lines, terminal_safe

    started = time.monotonic()
    _check_measures(args.metric, args.also)
    settings = CompareSettings(metric=args.metric, also=tuple(args.also), rel=args.rel, samples=args.samples,
                               seed=args.seed, ci_method=args.ci_method)
    result = compare_files(args.baseline, args.candidate, args.qrels, args.queries, strata=args.strata,
                           settings=settings, max_regression=args.max_regression, mode=args.mode,
                           require_improvement=args.require_improvement)
    if args.out:
        result.write(args.out)
    if args.format == "json":
        sys.stdout.write(result.to_json())
    else:
        verdict = result.verdict
        print(f"decision: {verdict.kind} - {verdict.headline_reason}")
        # Right under the decision: a warning may say the numbers below are not what they seem.
        for warning in result.report.warnings or ():
            print(terminal_safe(f"warning: {warning}", lines=False))
        for line in summary_lines(result.report):
            print(line)
        traffic = result.report.traffic
        if traffic and traffic.sentence:  # the traffic rules decide too: say what they saw
            print(f"traffic: {traffic.sentence}")
        if args.out:
            print(f"wrote {Path(args.out) / 'report.json'} and {Path(args.out) / 'report.md'}"
                  f" in {time.monotonic() - started:.1f}s")
    return result.verdict.exit_code if args.fail_on_decision else EXIT_OK


def _load_config(args: argparse.Namespace):
    from gate.inputs.config import load_config

    config = load_config(args.config)
    _sweep_killed_writes(config, getattr(args, "out", None))
    return config


def _sweep_killed_writes(config, out: str | None) -> None:
    """A command killed mid-write (a cancelled job: SIGKILL) leaves its temporary file; the next
    command removes it as it starts, in the gate's folders and ``--out``, whether or not it
    writes there (gate.common.atomic; a live writer's is kept)."""
    from gate.common.atomic import sweep_stale_temp_files
    from gate.pipeline.stack import gate_folders, work_dir_of

    folders = [*gate_folders(config), *_subfolders(work_dir_of(config))]
    for folder in folders + ([Path(out)] if out else []):
        sweep_stale_temp_files(folder)


def _subfolders(folder: Path) -> list[Path]:
    try:
        return [Path(entry.path) for entry in os.scandir(folder) if entry.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _path(value: str | None) -> Path | None:
    return None if value is None else Path(value)


def _runs_dir(value: str | None) -> Path | None:
    """``--runs-dir``: a folder an earlier step filled; a typo must not read as "no runs there"."""
    if value is None:
        return None
    path = Path(value)
    if not path.is_dir():
        raise UsageError(f"--runs-dir {value}: {'not a folder' if path.exists() else 'no such folder'}")
    return path


def _cmd_archive(args: argparse.Namespace) -> int:
    from gate.inputs import manifest as manifest_module
    from gate.pipeline.archive import archive

    config = _load_config(args)
    folder = config.resolve(config.manifest).parent
    if args.gc:
        removed = manifest_module.gc(folder)
        print(f"removed {len(removed)} orphaned file(s) from {folder}" + "".join(f"\n  {n}" for n in removed))
        return EXIT_OK
    from gate.runs.request import RunnerFailed

    try:
        result = archive(config, _path(args.run), _runs_dir(args.runs_dir), progress=_progress,
                         noise_repeats=args.noise_repeats)
    except RunnerFailed as failure:
        print(f"retrieval-gate: error: archive failed, manifest unchanged: {failure}", file=sys.stderr)
        if failure.log_tail:
            print(failure.log_tail, file=sys.stderr)
        return EXIT_INCONCLUSIVE
    m = result.manifest
    print(f"archived {m.metric} {result.mean:.4f} on {counted(result.query_count, 'query', 'queries')} "
          f"({m.queries.id}, {m.qrels.id}) -> {m.manifest_path}")
    return EXIT_OK


def _cmd_history(args: argparse.Namespace) -> int:
    from gate.pipeline.history import build_history
    from gate.rendering.history import write_history

    history = build_history(_load_config(args), branch=args.branch, last=args.last)
    for warning in history.warnings:
        print(f"retrieval-gate: warning: {warning}", file=sys.stderr)
    page = write_history(history, Path(args.out))
    print(f"history of {history.metric}: {counted(len(history.baselines), 'baseline', 'baselines')}, "
          f"{counted(len(history.breaks), 'break', 'breaks')} -> {page}")
    return EXIT_OK


def _cmd_replay(args: argparse.Namespace) -> int:
    from gate.pipeline.replay import replay

    config = _load_config(args)
    result = replay(config, _runs_dir(args.runs_dir), args.base, progress=_progress)
    data = result.to_dict()
    if args.out:
        from gate.common.atomic import write_text_atomic

        write_text_atomic(Path(args.out) / "replay.json", json_text(data, ascii=True))
    if args.format == "json":
        sys.stdout.write(json_text(data, ascii=True))
    elif result.baseline is not None:
        print(result.baseline.description)
        for d in result.baseline.differences:
            print(f"  {d.input}: {d.archived} -> {d.current}")
        for d in result.baseline.unattributed:
            print(f"  unattributed change {d.input}: {d.archived} -> {d.current}")
    else:
        assert result.problem is not None  # a replay without a baseline says why
        print(f"inconclusive: {result.problem.message}")
    return EXIT_OK if result.baseline is not None else EXIT_INCONCLUSIVE


def _cmd_plan(args: argparse.Namespace) -> int:
    from gate.pipeline.plan import plan

    base = _plan_base(args)
    found = _suite_set(argparse.Namespace(config=args.config, base=base))
    if found.several:
        return _cmd_plan_suites(args, found, base)
    if base is not None:
        from gate.pipeline.plan import plan_pull_request

        warnings: list[str] = []
        planned = plan_pull_request(Path(args.config), _path(args.runs_dir), base, noise_repeats=args.noise_repeats,
                                    sweep=args.sweep, warnings=warnings)
        for warning in warnings:
            _warn(warning)
    else:
        planned = plan(_load_config(args), _path(args.runs_dir), base, noise_repeats=args.noise_repeats,
                       sweep=args.sweep)
    if args.format == "github-matrix":
        from gate.publishing.matrix import github_matrix

        sys.stdout.write(json_text(github_matrix(planned, args.parts), indent=None, ascii=True))
        return EXIT_OK
    if args.parts != 1:
        raise UsageError("--parts splits a github-matrix plan: pass --format github-matrix")
    if args.format == "json":
        sys.stdout.write(json_text([p.to_dict() for p in planned], ascii=True))
        return EXIT_OK
    _print_planned(planned)
    return EXIT_OK


def _print_planned(planned: Sequence[Any], indent: str = "") -> None:
    for item in planned:
        state = "needed" if item.needed else "skip"
        print(f"{indent}{item.purpose:<24} {state:<6} key {item.key}")
        print(f"{indent}    config  {item.config_file}\n{indent}    queries {item.queries}\n{indent}    corpus  "
              f"{item.corpus}\n{indent}    write   {item.output}   ({item.why})\n{indent}    timings {item.timings}   "
              "(optional: its latencies)")


def _cmd_plan_suites(args: argparse.Namespace, found: Any, base: str | None) -> int:
    """``plan`` with several suites: which suites the change touches (by each one's watch rules,
    as the gate skips them); github-matrix: one gate job per touched suite."""
    from gate.inputs import git
    from gate.inputs.suite_set import REMOVED
    from gate.pipeline.suite_verdicts import touched

    _refuse_per_run_matrix_options(args)
    changed = None
    if base is not None:
        listed = git.changed_since(Path.cwd(), base)
        changed = None if listed is None else tuple(listed)
    present = [suite for suite in found.suites if suite.state != REMOVED]
    removed = [suite.name for suite in found.suites if suite.state == REMOVED]
    judged = [suite for suite in present if touched(suite, base, changed)]
    skipped = [suite.name for suite in present if suite not in judged]
    if args.format == "github-matrix":
        from gate.publishing.matrix import suites_matrix

        sys.stdout.write(json_text(suites_matrix(judged, skipped, removed), indent=None, ascii=True))
        return EXIT_OK
    listing = [(suite, _suite_state(suite, judged), _suite_runs(args, suite, base) if suite in judged else [])
               for suite in found.suites]
    if args.format == "json":
        sys.stdout.write(json_text({"suites": [{"suite": suite.name, "config": suite.config_shown, "state": state,
                                                "runs": [run.to_dict() for run in runs]}
                                               for suite, state, runs in listing]}, ascii=True))
        return EXIT_OK
    for suite, state, runs in listing:
        why = {"touched": "the change touches a file it watches", "skipped": "the change touches none of its files",
               "removed": "the change deletes its config"}[state]
        print(f"suite {suite.name} ({suite.config_shown}): {state} ({why})")
        _print_planned(runs, "  ")
    return EXIT_OK


def _refuse_per_run_matrix_options(args: argparse.Namespace) -> None:
    """What only a one-suite plan has: parts of its per-run matrix, and its runs folder in one."""
    if args.parts != 1:
        raise UsageError("--parts splits one suite's runs: with several suites plan --format github-matrix gives one "
                         "gate job per touched suite")
    if args.format == "github-matrix" and args.runs_dir is not None:
        raise UsageError("--runs-dir with several suites: plan each suite's runs in its own gate job (plan --config "
                         "<that suite's config> --runs-dir DIR --format github-matrix)")


def _suite_state(suite: Any, judged: list[Any]) -> str:
    from gate.inputs.suite_set import REMOVED

    return "removed" if suite.state == REMOVED else "touched" if suite in judged else "skipped"


def _suite_runs(args: argparse.Namespace, suite: Any, base: str | None) -> list[Any]:
    """The runs ``plan`` lists for one touched suite (its warnings on stderr, named by the suite)."""
    from gate.pipeline.plan import plan, plan_pull_request

    if base is None:
        return plan(_load_config(argparse.Namespace(config=suite.config_path, out=None)), _path(args.runs_dir),
                    None, noise_repeats=args.noise_repeats, sweep=args.sweep)
    warnings: list[str] = []
    runs = plan_pull_request(suite.config_path, _path(args.runs_dir), base, noise_repeats=args.noise_repeats,
                             sweep=args.sweep, warnings=warnings)
    for warning in warnings:
        _warn(f"{suite.name}: {warning}")
    return runs


def _plan_base(args: argparse.Namespace) -> str | None:
    base = args.base
    # Only a pull request or a merge group is judged against a base; a push plans the commit
    # itself (what archive --noise-repeats measures after a merge).
    event = os.environ.get("GITHUB_EVENT_NAME", "")
    judged = event.startswith("pull_request") or event == "merge_group"
    if base is None and os.environ.get("GITHUB_ACTIONS") == "true" and judged:
        # As the Action: the base of this job's event (HEAD^1 of GitHub's merge commit,
        # merge_group.base_sha), so every planned key is the one the gate will look for.
        from gate.inputs.github_event import event_base
        from gate.inputs.suite_set import is_glob

        here = Path.cwd() if is_glob(args.config) else Path(args.config).resolve().parent
        base, how = event_base(os.environ, here)
        if base is not None:
            print(f"retrieval-gate: plan --base {base[:12]} ({how}, as the Action judges the change)",
                  file=sys.stderr)
        else:
            print(f"retrieval-gate: warning: plan without --base: {how}", file=sys.stderr)
    return base


def _warn(message: str) -> None:
    """One line on stderr: inside GitHub Actions a ``::warning::`` command (escaped: the message
    quotes git's answer), past :class:`_NoWorkflowCommands`, so the run's page shows it."""
    if os.environ.get("GITHUB_ACTIONS") == "true":
        from gate.publishing.workflow_commands import annotation

        stream = sys.stderr._stream if isinstance(sys.stderr, _NoWorkflowCommands) else sys.stderr
        print(annotation("warning", message, title="retrieval-gate plan"), file=stream)
    else:
        print(f"retrieval-gate: warning: {message}", file=sys.stderr)


def _suite_set(args: argparse.Namespace):
    """The suites ``--config`` names (gate.inputs.suite_set): one config, or a suites file or glob;
    with ``--base``, several suites are the base commit's set."""
    from gate.inputs.suite_set import discover, suites_at_base

    found = discover(args.config)
    if found.several and getattr(args, "base", None):
        return suites_at_base(args.config, Path.cwd(), args.base)
    return found


def _cmd_run_suites(args: argparse.Namespace, found: Any) -> int:
    """``run`` with several suites: each into ``<out>/<suite>/``, the table, the worst's exit code."""
    from gate.pipeline.suite_verdicts import run_suites
    from gate.rendering.terminal import suites_table_lines, terminal_safe

    for option, value in (("--candidate-run", args.candidate_run), ("--candidate-timings", args.candidate_timings)):
        if value is not None:
            raise UsageError(f"{option} is one suite's run: with several suites (--config {args.config}) run that "
                             "suite's config alone (--config <its .retrieval-gate.yml>)")
    out = Path(args.out)
    outcome = run_suites(found, base=args.base, runs_dir=_runs_dir(args.runs_dir), out=out, progress=_progress)
    if args.format == "json":
        sys.stdout.write(outcome.to_json())
        return outcome.exit_code
    for line in suites_table_lines(outcome.results):
        print(line)
    worst = outcome.worst
    print(terminal_safe(f"worst: {worst.verdict} ({worst.suite.name}), exit {outcome.exit_code}", lines=False))
    print(f"wrote {out / 'suites.json'}, {out / 'comment.md'} and a folder per suite ({out}/<suite>/)")
    return outcome.exit_code


def _cmd_run(args: argparse.Namespace) -> int:
    from gate.pipeline.pull_request import run
    from gate.rendering.terminal import config_value, run_summary_lines, terminal_safe

    found = _suite_set(args)
    if found.several:
        return _cmd_run_suites(args, found)
    result = run(args.config, base=args.base, runs_dir=_runs_dir(args.runs_dir),
                 candidate_run=_path(args.candidate_run), progress=_progress, out=Path(args.out),
                 candidate_timings=_path(args.candidate_timings))
    out = Path(args.out)
    written = result.write(out)
    if args.format == "json":
        sys.stdout.write(result.to_json())
    else:
        report = result.report
        for line in run_summary_lines(report):
            print(line)
        if report.baseline and report.baseline.description:
            print(terminal_safe(f"baseline: {report.baseline.description}", lines=False))
        for change in report.config_diff or ():
            print(f"  changed {config_value(change.path)}: {config_value(change.old)} -> {config_value(change.new)}")
        for goalpost in report.goalposts or ():
            print(terminal_safe(f"  goalposts: this change edits the yardstick file {goalpost.path}", lines=False))
        print(f"wrote {', '.join(str(path) for path in written)}")
        print(f"the PR comment, as the Action would post it: {out / 'comment.md'}")
    return result.verdict.exit_code


def _cmd_noise(args: argparse.Namespace) -> int:
    from gate.common.atomic import write_text_atomic
    from gate.pipeline.noise import noise_from_config, noise_from_run_files
    from gate.runs.request import RunnerFailed

    if args.from_runs:
        if not args.qrels:
            raise UsageError("noise --from-runs needs --qrels")
        if args.repeats is not None:
            raise UsageError("--repeats runs the config's runner; with --from-runs the runs are given")
        metric = "nDCG@10" if args.metric is None else args.metric
        _check_measures(metric)
        band = noise_from_run_files(args.from_runs, args.qrels, args.queries, metric,
                                    1 if args.rel is None else args.rel)
    else:
        for option in ("qrels", "queries"):
            if getattr(args, option):
                raise UsageError(f"--{option} goes with --from-runs; without it the config's golden files are used")
        for option, key in (("metric", "metric"), ("rel", "golden.rel")):
            if getattr(args, option) is not None:
                raise UsageError(f"--{option} goes with --from-runs; without it the config's {key} is used")
        try:
            band = noise_from_config(args.config, _runs_dir(args.runs_dir), args.repeats, _progress)
        except RunnerFailed as failure:
            print(f"retrieval-gate: inconclusive: no noise band, {args.out} not written: {failure}", file=sys.stderr)
            if failure.log_tail:
                print(failure.log_tail, file=sys.stderr)
            return EXIT_INCONCLUSIVE
    write_text_atomic(args.out, json_text(band.to_dict(), ascii=True))
    o = band.overall
    print(f"{band.metric} over {band.runs} identical runs: mean {o.mean:.5f}  sd {o.sd:.5f}  range {o.range:.4f}")
    print(f"noise band threshold max(3 x sd, range) = {o.threshold:.4f}  (sd of a difference of two runs "
          f"{o.delta_sd:.5f}); {len(band.unstable)} of {counted(band.query_count, 'query', 'queries')} "
          "move across runs")
    print(f"wrote {args.out}")
    return EXIT_OK


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from gate.pipeline.calibrate import CalibrationSettings, calibrate_config, calibrate_run_files

    settings = CalibrationSettings(metric=args.metric, rel=args.rel, samples=args.samples, seed=args.seed,
                                   max_regression=args.max_regression, mode=args.mode)
    if args.from_runs:
        if not args.qrels:
            raise UsageError("calibrate --from-runs needs --qrels")
        if len(args.from_runs) < 2:
            raise UsageError("calibrate --from-runs needs at least two runs of the same configuration")
        _check_measures(args.metric or "nDCG@10")
        result = calibrate_run_files(args.from_runs, args.qrels, args.queries, settings, _progress)
    else:
        # Measure names are checked before any file is read (the config's own is checked with it).
        if args.metric is not None:
            _check_measures(args.metric)
        result = calibrate_config(args.config, settings, _progress)
    data = result.to_dict()
    if args.out:
        from gate.common.atomic import write_text_atomic

        write_text_atomic(args.out, json_text(data, ascii=True))
    if args.format == "json":
        sys.stdout.write(json_text(data, ascii=True))
    else:
        print(result.sentence[0].upper() + result.sentence[1:])
        print(f"{result.pairs} ordered pairs of {result.runs} runs on "
              f"{counted(result.query_count, 'query', 'queries')} ({result.metric}, "
              f"margin {result.margin:g}): {result.fail} fail, {result.inconclusive} inconclusive, "
              f"{result.improvement_shown} claim an improvement; on "
              f"{counted(result.independent_pairs, 'independent pair', 'independent pairs')} "
              f"{result.independent_fail} fail (at most {result.fail_rate_upper95:.1%} at 95%), improvements at most "
              f"{result.improvement_rate_upper95:.1%}")
        if result.setup:
            print(f"setup ({result.mode} mode): {result.setup['sentence']}")
            if result.setup_repeats:
                print(f"setup ({result.mode} mode), {result.setup_repeats['sentence']}")
    return EXIT_OK


def _load_saved_report(path: str):
    from gate.publishing.report_trust import load_saved_report

    return load_saved_report(path)


def _comment_suite(args: argparse.Namespace, report: Any) -> str:
    """The suite whose comment is replaced. The artifact is the PR job's and names a suite; the
    workflow's --suite (or --config's suite) is trusted, and a report for another suite is not
    this job's to post."""
    reported_suite = report.suite if report.suite else "retrieval"
    trusted = args.suite
    source = "--suite"
    if args.config is not None:
        from gate.inputs.config import load_config

        trusted = load_config(args.config).suite  # only the suite: the data files need not be there
        source = f"the suite of {args.config}"
    if trusted is not None and reported_suite != trusted:
        raise InputError(args.report, None, f"is a report of suite {limits.shorten(str(reported_suite), 40)!r}, "
                         f"not {trusted!r} ({source}): not posted")
    return str(trusted if trusted is not None else reported_suite)


def _comment_body(path: str, report: Any, disagreement: Any = None) -> str:
    """The comment's Markdown (with the line saying the PR job's result disagrees with the
    report, if it does), or one line refusing a report that does not render."""
    import jinja2

    from gate.publishing.report_trust import with_disagreement
    from gate.rendering.comment import render_comment

    # Room for the hidden marker line, and for the disagreement's line beside the headline.
    limit = 65_536 - 200 - (len(disagreement.markdown()) + 2 if disagreement is not None else 0)
    try:
        return with_disagreement(render_comment(report, limit=limit), disagreement)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, ArithmeticError, RecursionError,
            jinja2.TemplateError) as error:
        # The report passed the schema and became a record, yet does not render: an artifact of
        # another version, or edited. Refused in one line, never a traceback from this job.
        raise InputError(path, None, f"cannot be rendered as a comment ({type(error).__name__}: "
                         f"{limits.shorten(str(error), 80)}): not a report this version wrote") from None


def _run_conclusion(args: argparse.Namespace) -> str | None:
    """How the PR job that saved the report ended: --run-conclusion, else the conclusion of the
    run a workflow_run event is about (the comment job's trigger: a copy of the example workflow
    from before --run-conclusion still gets the comparison); None when neither says."""
    from gate.inputs.github_event import read_workflow_run

    if args.run_conclusion is not None:
        return str(args.run_conclusion)
    run = read_workflow_run(os.environ)
    if run is None:
        return None
    if run.head_sha is not None and run.head_sha.lower() != args.head_sha:
        # Then the event's run is not the one whose report this is: its conclusion says nothing of it.
        raise InputError(os.environ.get("GITHUB_EVENT_PATH"), None,
                         f"the workflow_run event is of head {run.head_sha}, not {args.head_sha} (--head-sha): its "
                         "conclusion is another run's (give --run-conclusion)")
    return run.conclusion


def _trusted_report(args: argparse.Namespace, report: Any) -> Any:
    """The checks of gate.publishing.report_trust against what this job knows (--pr, --head-sha,
    the PR job's conclusion): a report that fails one is refused in one line, nothing posted.
    Returns the disagreement of the PR job's result with the report, if any."""
    from gate.publishing.report_trust import Expected, Refused, check_report

    checked = check_report(report, Expected(args.pr, args.head_sha, _run_conclusion(args)))
    if isinstance(checked, Refused):
        raise InputError(args.report, None, f"{checked.problem}: not posted")
    return checked.disagreement


def _cmd_comment(args: argparse.Namespace) -> int:
    """Token from GITHUB_TOKEN (or INPUT_TOKEN), repository from GITHUB_REPOSITORY, API root from
    GITHUB_API_URL. The PR number comes from an artifact an untrusted job wrote, so it is only
    believed when GET /pulls/{n} says that PR's head is the commit the gate ran on; the report
    itself must be of that PR and head, with a verdict the gate could have written
    (gate.publishing.report_trust), and a PR job whose result disagrees with it is said in the comment.
    Several reports (a set of suites) are each checked so, and their suites against --config's.

    Exit 0 when the comment is posted (or rightly not: another head, a read-only token);
    2 for what the user must fix (no token, a token GitHub refuses, a PR that is not there,
    a report that is not one, or not this PR's and head's, or whose verdict contradicts itself);
    3 when GitHub cannot be reached or keeps failing (rerun later)."""
    from gate.runs.isolation import held_secret

    # Held apart from os.environ once the command re-executed itself without it (gate.runs.isolation).
    token = held_secret("GITHUB_TOKEN") or held_secret("INPUT_TOKEN")
    repository = os.environ.get("GITHUB_REPOSITORY")
    if not token or not repository:
        raise UsageError("comment needs GITHUB_TOKEN and GITHUB_REPOSITORY in the environment")
    api = os.environ.get("GITHUB_API_URL", "https://api.github.com")
    if args.reports is not None or len(args.report) > 1:
        publish = _suites_comment(args)
    else:
        publish = _single_comment(args, args.report[0])
    return _post_comment(args, (api, token, repository), publish)


def _single_comment(args: argparse.Namespace, path: str) -> Callable[[Any], Any]:
    """One suite's report, checked and rendered: what posts it, once the PR's head is checked."""
    from gate.publishing.github.sticky_comment import publish_comment

    args.report = path
    report = _load_saved_report(path)
    verdict = report.verdict.kind
    suite = _comment_suite(args, report)
    disagreement = _trusted_report(args, report)
    body = _comment_body(path, report, disagreement)
    # As the Action: a skipped PR gets no comment, only an earlier one corrected in place.
    return lambda client: publish_comment(client, args.pr, suite, args.head_sha, verdict, body,
                                          mode=args.comment_mode, only_update=verdict == "skipped")


def _suites_comment(args: argparse.Namespace) -> Callable[[Any], Any]:
    """A set of suites' reports, each checked as one is and its suite against the trusted suites
    file (--config), rendered as the combined comment (gate.rendering.suites)."""
    from gate.inputs.suite_set import discover
    from gate.pipeline.suites_comment import SetComment, set_comment_publisher
    from gate.publishing import suite_reports
    from gate.publishing.report_trust import load_saved_report

    if args.config is None:
        raise UsageError("comment with several reports needs --config: the default branch's suites file, which "
                         "names the suites the reports may be of")
    found = discover(args.config)
    load = load_saved_report
    saved = suite_reports.read_report_folder(args.reports, load) if args.reports is not None \
        else suite_reports.read_report_files(args.report, load)
    if not found.several:  # one suite's config: its one report, posted as ever
        if len(saved.reports) != 1 or saved.listed:
            raise InputError(args.config, None, "is one suite's gate config, not a suites file: give that suite's one "
                             "report")
        return _single_comment(args, str(saved.reports[0].path))
    return set_comment_publisher(found, saved, args.config,
                                 SetComment(args.pr, args.head_sha, _run_conclusion(args), args.comment_mode))


def _post_comment(args: argparse.Namespace, github: tuple[str, str, str], publish: Callable[[Any], Any]) -> int:
    """``publish`` with a client of GitHub (``github``: the API root, the token, the repository),
    once the PR's head is --head-sha; GitHub's answers as exit codes (2: the user's to fix; 3:
    GitHub unavailable, rerun)."""
    from gate.publishing.github.client import (
        GitHubAnswerError,
        GitHubClient,
        GitHubError,
        GitHubNotFoundError,
        GitHubPermissionError,
        GitHubWaitCapError,
    )

    api, token, repository = github
    try:
        client = GitHubClient(api, token, repository, max_wait=args.max_wait)
    except ValueError as error:
        raise UsageError(f"comment: {error}") from None
    try:
        if client.get_pull(args.pr).head_sha != args.head_sha.lower():
            print(f"retrieval-gate: PR #{args.pr}'s head is not {args.head_sha[:12]}: not commenting "
                  "(the artifact names another PR, or a newer push superseded this run)", file=sys.stderr)
            return EXIT_OK
        result = publish(client)
    except GitHubNotFoundError as error:
        print(f"retrieval-gate: error: {error} (is #{args.pr} a pull request of {repository}?)", file=sys.stderr)
        return EXIT_INPUT
    except GitHubPermissionError as error:
        print(f"retrieval-gate: error: {error}", file=sys.stderr)
        return EXIT_INPUT
    except GitHubWaitCapError as error:
        print(f"retrieval-gate: GitHub unavailable, nothing posted: {error}", file=sys.stderr)
        return EXIT_INCONCLUSIVE
    except GitHubError as error:
        if error.status == 401:
            print(f"retrieval-gate: error: GitHub refused the token (401 Bad credentials): {error}", file=sys.stderr)
            return EXIT_INPUT
        what = ("answered what its API does not document" if isinstance(error, GitHubAnswerError)
                else "refused the request" if error.status is not None and error.status < 500 else "unavailable")
        print(f"retrieval-gate: GitHub {what}, nothing posted (rerun the job): {error}", file=sys.stderr)
        return EXIT_INCONCLUSIVE
    print(f"comment: {result.action} {result.url or ''}".rstrip())
    if result.action == "forbidden":
        print(result.message, file=sys.stderr)
    return EXIT_OK


def _cmd_suites_status(args: argparse.Namespace) -> int:
    """The matrix workflow's required check: the worst suite's exit code (3 for a due report that
    is missing), the table on stdout and in the job summary, verdict and worst as outputs."""
    from gate.inputs.suite_set import discover
    from gate.publishing import suite_reports
    from gate.publishing.report_trust import load_saved_report, verdict_problem
    from gate.publishing.workflow_commands import append_summary, write_outputs
    from gate.rendering.suites import render_suites_comment, render_suites_summary
    from gate.rendering.terminal import terminal_safe

    found = discover(args.config)
    planned = suite_reports.read_plan(args.plan) if args.plan else None
    # An empty folder: no gate job ran (no touched suite: every one skipped), or none saved a
    # report (each due one is a row "no report", exit 3).
    saved = suite_reports.read_report_folder(args.reports, load_saved_report, may_be_empty=True)
    standing = suite_reports.standing_of(saved, [suite.name for suite in found.suites], args.config, planned)
    for each in standing.reports:
        verdict = each.report.verdict
        problem = verdict_problem(verdict, each.report.accepted) if verdict else "has no verdict"
        if problem is not None:
            raise InputError(str(each.path), None, problem)
    document = suite_reports.suites_document(standing, found.source or args.config,
                                             {suite.name: suite.config_shown for suite in found.suites},
                                             lambda each: f"{suite_reports.folder_name(each.suite)}/report.json")
    for row in document["suites"]:
        print(f"{terminal_safe(row['suite'], lines=False):<24} {row['verdict'] or 'no report':<13} "
              f"{terminal_safe(row['headline'], lines=False)[:160]}".rstrip())
    suite, kind, exit_code = standing.worst
    print(f"worst: {terminal_safe(suite, lines=False) or '-'} ({kind or 'no report'}), exit {exit_code}")
    for name in standing.missing:
        print(f"retrieval-gate: suite {terminal_safe(name, lines=False)}: no report (its gate job failed or saved "
              "none): inconclusive", file=sys.stderr)
    reports = [each.report for each in standing.reports]
    title = found.source or args.config
    append_summary(os.environ.get("GITHUB_STEP_SUMMARY"),
                   render_suites_summary(reports, title=title, missing=standing.missing, skipped=standing.skipped))
    write_outputs(os.environ.get("GITHUB_OUTPUT"), {"verdict": kind or "inconclusive", "worst": suite,
                                                    "exit-code": exit_code})
    if args.out:
        _write_suites_folder(Path(args.out), standing, document,
                             render_suites_comment(reports, title=title, missing=standing.missing,
                                                   skipped=standing.skipped))
    return exit_code


def _write_suites_folder(out: Path, standing: Any, document: dict[str, Any], comment: str) -> None:
    """The set as the Action writes it: suites.json, <suite>/report.json (each as saved), comment.md."""
    from gate.common.atomic import write_text_atomic

    for each in standing.reports:
        folder = out / each.suite
        folder.mkdir(parents=True, exist_ok=True)
        write_text_atomic(folder / "report.json", each.path.read_text(encoding="utf-8"))
    write_text_atomic(out / "suites.json", json_text(document, ascii=True))
    write_text_atomic(out / "comment.md", comment)


def _cmd_factorial(args: argparse.Namespace) -> int:
    from gate.pipeline.factorial import cell_arguments, factorial
    from gate.statistics.attribution import GridRefused

    cells = cell_arguments(args.cell)
    _check_measures(args.metric)
    try:
        report = factorial(args.factor, cells, args.qrels, args.queries, metric=args.metric, rel=args.rel,
                           samples=args.samples, seed=args.seed, allow_missing=args.allow_missing,
                           record_inputs=bool(args.out))
    except GridRefused as refused:
        print(f"retrieval-gate: error: grid refused: {refused.reason}", file=sys.stderr)
        return EXIT_INPUT
    return _emit_grid_report(args, report)


def _cmd_sweep(args: argparse.Namespace) -> int:
    from gate.pipeline.sweep import sweep_config, sweep_run_files
    from gate.runs.request import RunnerFailed

    if args.cell:
        if args.config is not None or args.runs_dir is not None:
            raise UsageError("--cell gives the runs: --config and --runs-dir go with the config's sweep.params grid")
        if not args.qrels:
            raise UsageError("sweep --cell needs --qrels")
        if len(args.cell) > limits.MAX_SWEEP_CELLS:
            raise UsageError(f"--cell given {len(args.cell)} times: a sweep takes at most "
                             f"{limits.MAX_SWEEP_CELLS} cells")
        cells = [_sweep_cell(item) for item in args.cell]
        metric = args.metric or "nDCG@10"
        _check_measures(metric)
        report = sweep_run_files(cells, args.qrels, args.queries, metric, rel=1 if args.rel is None else args.rel,
                                 folds=args.folds, samples=10_000 if args.samples is None else args.samples,
                                 seed=7 if args.seed is None else args.seed, tuning=args.tuning,
                                 reference=args.reference, allow_missing=args.allow_missing, progress=_progress)
        return _emit_grid_report(args, report)
    for option in ("qrels", "queries", "metric", "rel", "tuning", "reference"):
        if getattr(args, option) is not None:
            raise UsageError(f"--{option} goes with --cell; the config's grid uses the config's own")
    if args.allow_missing:
        raise UsageError("--allow-missing goes with --cell; the config's runner must produce every query")
    try:
        report = sweep_config(args.config or ".retrieval-gate.yml", _path(args.runs_dir), folds=args.folds,
                              samples=args.samples, seed=args.seed, progress=_progress)
    except RunnerFailed as failure:
        print(f"retrieval-gate: inconclusive: no sweep, a cell could not be run: {failure}", file=sys.stderr)
        if failure.log_tail:
            print(failure.log_tail, file=sys.stderr)
        return EXIT_INCONCLUSIVE
    return _emit_grid_report(args, report)


def _sweep_cell(item: str) -> tuple[str, str]:
    """``NAME=RUN``: a name may hold '=' (rrf_k=60,w=0.5=runs/c.run) and so may a path
    (runs/k=1/c.run): the split is the rightmost whose right side is a file, else the rightmost."""
    from gate.rendering.terminal import terminal_safe

    shown = terminal_safe(limits.shorten(item, 80), lines=False)
    splits = [i for i, ch in enumerate(item) if ch == "="]
    if not splits:
        raise UsageError(f"--cell '{shown}': expected NAME=RUN, e.g. rrf_k=60=runs/cell.run")
    at = next((i for i in reversed(splits) if os.path.isfile(item[i + 1:])), splits[-1])
    name, path = item[:at], item[at + 1:]
    if not name or not path:
        raise UsageError(f"--cell '{shown}': expected NAME=RUN, e.g. rrf_k=60=runs/cell.run")
    if terminal_safe(name, lines=False) != name or len(name) > 200:
        raise UsageError(f"--cell '{shown}': a cell name is plain text of at most 200 characters (no control or "
                         "bidi characters)")
    return name, path


def _emit_grid_report(args: argparse.Namespace, report: GridReport) -> int:
    """factorial and sweep: report.json and report.md into --out, then the text or the JSON of the
    section to stdout."""
    from gate.rendering.terminal import terminal_text

    if args.out:
        report.write(args.out)
    if args.format == "json":
        sys.stdout.write(json_text(report.data, ascii=True))
    else:
        print(terminal_text(report.markdown))
    return EXIT_OK


def _cmd_leakcheck(args: argparse.Namespace) -> int:
    from gate.checks.leakage import render_text
    from gate.pipeline.leakcheck import leakcheck
    from gate.rendering.terminal import terminal_safe

    result = leakcheck(args.queries, args.corpus, args.mode, threshold=args.threshold, min_tokens=args.min_tokens,
                       progress=_progress)
    if args.format == "json":
        sys.stdout.write(json_text({**result.to_dict(), "recommendation": result.recommendation()}))
    else:
        print(terminal_safe(render_text(result)))
    return EXIT_FAIL if result.count else EXIT_OK


def _cmd_lift(args: argparse.Namespace) -> int:
    from gate.pipeline.lift import lift

    result = lift(args.before, args.after, args.qrels, args.out, rel=args.rel, k_rank=args.k_rank,
                  k_recall=args.k_recall, queries=args.queries)
    counts = ", ".join(f"{n} {bucket}" for bucket, n in result.counts().items())
    print(f"lift on {len(result.movements) + len(result.no_relevant)} judged queries "
          f"(label >= {result.rel_threshold}, top {result.k_rank}): {counts}")
    notes = []
    if result.no_relevant:
        notes.append(f"{len(result.no_relevant)} judged without a relevant document (not bucketed)")
    if result.unjudged_run_queries:
        notes.append(f"{len(result.unjudged_run_queries)} run queries without judgments (not evaluated)")
    for name, missing in (("before", result.missing_in_before), ("after", result.missing_in_after)):
        if missing:
            notes.append(f"{len(missing)} judged queries missing from the {name} run (misses there)")
    if notes:
        print("queries: " + "; ".join(notes))
    for path in result.files.values():
        print(f"wrote {path}")
    return EXIT_OK


def _cmd_judgments(args: argparse.Namespace) -> int:
    from gate.pipeline.judgments import convert_judgments

    done = convert_judgments(args.source, args.to, out=args.out, queries=args.queries,
                             queries_out=args.queries_out, index=args.index)
    if args.out is None:
        sys.stdout.write(done.text)
    to_rate = f", {done.to_rate} documents to rate" if done.to_rate else ""
    if done.not_golden:
        to_rate += f" ({done.not_golden} of the queries are no golden query: outside the query universe)"
    print(f"judgments: {done.queries} queries, {done.judgments} judgments{to_rate}"
          + (f"; wrote {done.out}" if done.out else "") + (f"; wrote {done.queries_out}" if done.queries_out else ""),
          file=sys.stderr)
    if done.lost:
        print("judgments: not carried over: " + "; ".join(done.lost), file=sys.stderr)
    return EXIT_OK


def _cmd_init(args: argparse.Namespace) -> int:
    from gate.inputs.config import load_config
    from gate.pipeline.stack import check_config
    from gate.publishing.scaffold import InitOptions, init_repository

    def as_plan_reads_it(path: Path, text: str) -> None:
        check_config(load_config(path, text_override=text))

    result = init_repository(InitOptions(
        root=Path(args.dir), suite=args.suite, queries=args.queries, qrels=args.qrels, corpus=args.corpus,
        retrieval_config=args.retrieval_config, command=args.command, action=args.action, branch=args.branch,
        force=args.force), check=as_plan_reads_it)
    found = result.found
    print(f"retrieval-gate init: suite {result.suite}")
    for label, value in (("golden queries", found.queries), ("qrels", found.qrels), ("corpus", found.corpus),
                         ("retrieval config", found.retrieval_config)):
        print(f"  {label:<17}{value if value else '(none: the leakage check is off until you set corpus)'}")
    for note in found.notes:
        print(f"  note: {note}")
    for path in result.written:
        print(f"  wrote {path}")
    for path in result.kept:
        print(f"  kept  {path} (exists; --force rewrites it)")
    for warning in result.warnings:
        print(f"  warning: {warning}")
    print("Next steps:")
    for n, step in enumerate(result.next_steps, start=1):
        print(f"  {n}. {step}")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from gate.runs import missing_reference_modules

    missing = missing_reference_modules()
    if missing:
        raise UsageError("the demo needs the reference retriever: pip install 'retrieval-gate[reference]' "
                         f"(or ./run demo; missing: {', '.join(missing)})")
    from gate.demo.end_to_end import run_demo
    from gate.rendering.terminal import terminal_text

    result = run_demo(args.out, seed=args.seed, scale=args.scale, repeats=args.repeats,
                      progress=lambda message: _progress(message), runner=args.runner)
    print(terminal_text(result.comment))  # comment.md holds it as Markdown, escapes and all
    print(f"\nwrote {result.out / 'report.json'}, {result.out / 'report.md'} and {result.out / 'comment.md'}"
          f" (the PR comment as Markdown) in {result.seconds:.0f}s; the generated repository is {result.repo}")
    print(f"[demo] history page: {result.history}")
    kind = result.report["verdict"]["kind"]
    print(f"verdict: {kind} (the Action would exit {result.exit_code})")
    return EXIT_OK


def _save_traceback() -> str:
    fd, path = tempfile.mkstemp(prefix="retrieval-gate-crash-", suffix=".txt")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        traceback.print_exc(file=handle)
    return path


class _PipeSafe:
    """stdout that a closed pipe (``retrieval-gate ... | head``) cannot stop.

    The command goes on to its end - its files written, its exit code the verdict's - and
    what it still prints goes nowhere, as ``cat`` would. Python's own SIGPIPE handling
    stays as it is (ignored), so a GitHub socket that closes is still an error, not death.
    """

    def __init__(self, stream: TextIO | None) -> None:
        self._stream = stream
        self.broken = stream is None  # started with stdout closed (`>&-`)
        self.failed: OSError | None = None  # a write that failed otherwise (`> /dev/full`)

    def write(self, text: str) -> int:
        if not self.broken:
            assert self._stream is not None  # no stream: broken from the start
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._silence()
            except OSError as error:
                self.failed = self.failed or error
                self._silence()
        return len(text)

    def flush(self) -> None:
        if not self.broken:
            assert self._stream is not None  # no stream: broken from the start
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._silence()
            except OSError as error:
                self.failed = self.failed or error
                self._silence()

    def _silence(self) -> None:
        assert self._stream is not None  # silenced on a failed write or flush: there was a stream
        self.broken = True
        try:  # later flushes of the real stdout (at exit) must not raise either
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass

    def __getattr__(self, name: str):
        if self._stream is None:
            raise AttributeError(name)
        return getattr(self._stream, name)


class _NoWorkflowCommands:
    """A stream on which no line can be a GitHub workflow command (``::warning::``, ``::set-env``,
    ``::add-mask::``...). Inside Actions every line of a step's output is parsed for them, and the
    CLI's lines quote data - a config key holding a newline and ``::error::`` would be obeyed.
    The CLI issues none of its own but plan's warning (:func:`_warn`, escaped; the Action's, escaped,
    in gate.rendering.markdown_cut), so a line that starts with ``::`` gets ``: :`` instead."""

    def __init__(self, stream):
        self._stream = stream
        self._line_start = True

    def write(self, text: str) -> int:
        out = []
        for piece in text.splitlines(keepends=True):
            if self._line_start and piece.lstrip().startswith("::"):
                piece = piece.replace("::", ": :", 1)
            out.append(piece)
            self._line_start = piece.endswith(("\n", "\r"))
        self._stream.write("".join(out))
        return len(text)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def entry() -> None:
    """The ``retrieval-gate`` command (and ``python -m gate``): the process is first re-executed
    without the tokens in its environment and made non-dumpable (gate.runs.isolation), so that no
    runner command it starts can read them; :func:`main` is the same command in-process."""
    from gate.runs.isolation import isolate_cli

    isolate_cli()
    sys.exit(main())


def main(argv: Sequence[str] | None = None) -> int:
    saved_stdout, saved_stderr = sys.stdout, sys.stderr
    sys.stdout = safe = _PipeSafe(saved_stdout)
    if os.environ.get("GITHUB_ACTIONS") == "true":
        sys.stdout, sys.stderr = _NoWorkflowCommands(safe), _NoWorkflowCommands(saved_stderr)
    try:
        code = _main(argv)
        safe.flush()
    finally:
        sys.stdout, sys.stderr = saved_stdout, saved_stderr
    if safe.failed is not None:
        # Not a closed pipe (the reader chose to stop) but output that was lost: say so, and do
        # not let a lost report pass for a done command.
        print(f"retrieval-gate: error: cannot write to standard output: {safe.failed.strerror or safe.failed}",
              file=sys.stderr)
        return EXIT_INPUT if code == EXIT_OK else code
    return code


def _main(argv: Sequence[str] | None) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
        if handler is None:
            commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
            raise UsageError(f"no command given; choose one of {', '.join(commands)} (see --help)")
        return handler(args)
    except InputError as error:
        print(f"retrieval-gate: error: {error}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("retrieval-gate: interrupted", file=sys.stderr)
        return 130
    except SystemExit:
        raise
    except BaseException:  # noqa: BLE001 - the edge: everything else is a bug
        path = _save_traceback()
        print(f"retrieval-gate: internal error (traceback saved to {path})", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
