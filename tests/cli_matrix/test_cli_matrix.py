"""Every documented command, with and without each option, as a new user would run them.

Each case is one invocation: a base command line, or the base with one option
switched on (or off), or a meaningful combination. Every case asserts:

* the exit code is the documented one (0 done/pass, 1 fail verdict or leaks
  found, 2 bad input/usage, 3 inconclusive) and NEVER 4 (internal error);
* no traceback on stdout or stderr;
* every file the command promises exists and parses (JSON loads, CSV parses,
  JSONL lines load, Markdown is non-empty, report.json validates against
  gate/report/report.schema.json, the manifest's data files exist);
* ``--format json`` prints one valid JSON document on stdout;
* where the README documents what an option does, that it did it (a
  repeated ``--also`` accumulates, ``--seed``/``--samples``/``--ci-method``
  are recorded in the report, ...).

Two worlds: generated files (always; tests/cli_matrix/world.py), and the real
TREC DL 2019 / ir_datasets files from ../shared/realdata (skipped when absent).

Most cases run in-process through ``gate.cli.main``; those marked ``sub`` run
the installed ``retrieval-gate`` as a subprocess. On failure the message gives
the exact command line, the exit code and the last line of stderr - and, for
exit 4, the last line of the saved traceback.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gate.cli import main
from tests.cli_matrix.world import Files, Repo, build_files, build_repo, git
from tests.shared_data import REALDATA, need
from tests.shared_data import REPO as PROJECT
from tests.support import bounded
from tests.support.saved_report import as_the_action_saved

SCHEMA = json.loads((PROJECT / "gate" / "report" / "report.schema.json").read_text())
_EXE = Path(sys.executable).parent / "retrieval-gate"
CLI = [str(_EXE)] if _EXE.exists() else [sys.executable, "-m", "gate"]
TOKEN = "ghs_matrixToken0123456789abcdef"


# --------------------------------------------------------------------------- running


@dataclass
class Result:
    argv: list[str]
    code: int
    out: str
    err: str
    cwd: Path | None
    subprocess: bool

    @property
    def cmdline(self) -> str:
        prog = " ".join(CLI) if self.subprocess else "retrieval-gate"
        where = f"(cd {self.cwd} && " if self.cwd else ""
        return where + prog + " " + shlex.join(self.argv) + (")" if self.cwd else "")

    def last_err_line(self) -> str:
        lines = [line for line in self.err.splitlines() if line.strip()]
        return lines[-1] if lines else "<no stderr>"

    def traceback_tail(self) -> str | None:
        match = re.search(r"traceback saved to ([^)\s]+)", self.err)
        if not match:
            return None
        try:
            lines = [line for line in Path(match.group(1)).read_text().splitlines() if line.strip()]
        except OSError:
            return f"<traceback file {match.group(1)} unreadable>"
        return f"{match.group(1)}: {lines[-1] if lines else '<empty>'}"

    def describe(self) -> str:
        text = f"\n  command: {self.cmdline}\n  exit code: {self.code}\n  stderr last line: {self.last_err_line()}"
        tail = self.traceback_tail()
        if tail:
            text += f"\n  traceback: {tail}"
        return text


def invoke(argv: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None,
           sub: bool = False, timeout: float = 300) -> Result:
    argv = [str(a) for a in argv]
    if sub:
        full_env = dict(os.environ)
        full_env.update(env or {})
        full_env.setdefault("PYTHONPATH", str(PROJECT))
        proc = bounded.run([*CLI, *argv], cwd=cwd, env=full_env, cpu_timeout=timeout)
        return Result(argv, proc.returncode, proc.stdout, proc.stderr, cwd, True)
    out, err = io.StringIO(), io.StringIO()
    old_cwd = os.getcwd()
    saved_env = {k: os.environ.get(k) for k in (env or {})}
    try:
        os.environ.update(env or {})
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    finally:
        os.chdir(old_cwd)
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return Result(argv, code, out.getvalue(), err.getvalue(), cwd, False)


# --------------------------------------------------------------------------- file checks


def _validate_schema(data: Any, where: str) -> None:
    import jsonschema

    errors = sorted(jsonschema.Draft202012Validator(SCHEMA).iter_errors(data), key=lambda e: list(e.path))
    assert not errors, f"{where} does not validate against report.schema.json: " + "; ".join(
        f"{'/'.join(map(str, e.path)) or '<root>'}: {e.message[:200]}" for e in errors[:5])


def check_file(path: Path, kind: str) -> Any:
    assert path.is_file(), f"promised file {path} was not written"
    text = path.read_text(encoding="utf-8")
    if kind in ("json", "schema"):
        data = json.loads(text)
        if kind == "schema":
            _validate_schema(data, str(path))
        return data
    if kind == "md":
        assert text.strip(), f"{path} is empty"
        return text
    if kind == "csv":
        rows = list(csv.reader(io.StringIO(text)))
        assert len(rows) >= 2, f"{path}: no data rows"
        assert all(len(r) == len(rows[0]) for r in rows), f"{path}: ragged CSV"
        return [dict(zip(rows[0], r)) for r in rows[1:]]
    if kind == "jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    if kind == "tsv":
        rows = [line.split("\t") for line in text.splitlines() if line.strip()]
        assert rows, f"{path}: empty (no header)"
        assert all(len(r) == len(rows[0]) for r in rows), f"{path}: ragged TSV"
        return rows
    if kind == "manifest":
        from ruamel.yaml import YAML

        data = YAML(typ="safe").load(text)
        for key in ("run", "per_query", "retrieval_config"):
            name = data[key]["file"]
            assert (path.parent / name).is_file(), f"{path} names {name}, which is not in {path.parent}"
        return data
    raise AssertionError(kind)


LIFT_FILES = {"retrieval_lift.json": "json", "retrieval_lift_by_bucket.csv": "csv",
              "retrieval_lift_examples.jsonl": "jsonl", "retrieval_lift.md": "md"}
REPORT_FILES = {"report.json": "schema", "report.md": "md"}
RUN_FILES = {"report.json": "schema", "report.md": "md", "unjudged.tsv": "tsv"}


# --------------------------------------------------------------------------- cases


@dataclass
class Case:
    id: str
    args: str                       # a template: {name} is filled from the world's paths
    codes: tuple[int, ...] = (0,)   # documented exit codes for this invocation
    files: dict[str, str] = field(default_factory=dict)   # path (template, relative to {out}) -> kind
    json_stdout: bool = False
    sub: bool = False               # run the installed CLI as a subprocess
    cwd: str | None = None          # template: run from this folder (for default paths)
    check: Callable[[Result, dict[str, Any]], None] | None = None
    err_contains: str | None = None

    def param(self):
        return pytest.param(self, id=self.id + ("[sub]" if self.sub else ""))


def run_case(case: Case, ctx: dict[str, Any], env: dict[str, str] | None = None) -> Result:
    argv = shlex.split(case.args.format(**ctx))
    cwd = Path(case.cwd.format(**ctx)) if case.cwd else None
    result = invoke(argv, cwd=cwd, env=env, sub=case.sub)
    info = result.describe()
    assert result.code != 4, "internal error (exit 4)" + info
    for stream in (result.out, result.err):
        assert "Traceback (most recent call last)" not in stream, "traceback printed" + info
    assert result.code in case.codes, f"exit {result.code}, documented {case.codes}" + info
    if result.code == 2:  # one line with the reason (progress lines "[retrieval-gate] ..." may precede it)
        reasons = [line for line in result.err.splitlines() if line.strip() and not line.startswith("[retrieval-gate]")]
        assert len(reasons) == 1, "exit 2 must give one line on stderr" + info + "\n" + result.err
    if case.err_contains:
        assert case.err_contains in result.err, f"stderr lacks {case.err_contains!r}" + info
    ctx = {**ctx, "_result": result}
    if case.json_stdout:
        try:
            ctx["_stdout_json"] = json.loads(result.out)
        except json.JSONDecodeError as error:
            message = f"--format json stdout is not JSON ({error})" + info + "\n" + result.out[:500]
            raise AssertionError(message) from error
    for rel, kind in case.files.items():
        path = Path(rel.format(**ctx))
        if not path.is_absolute():
            path = Path(ctx["out"]) / path
        try:
            ctx[path.name] = check_file(path, kind)
        except (AssertionError, json.JSONDecodeError, UnicodeDecodeError, csv.Error) as error:
            raise AssertionError(f"{error}" + info) from None
    if case.check is not None:
        try:
            case.check(result, ctx)
        except AssertionError as error:
            raise AssertionError(f"{error}" + info) from None
    return result


# --------------------------------------------------------------------------- worlds


@pytest.fixture(scope="session")
def files_template(tmp_path_factory) -> Files:
    return build_files(tmp_path_factory.mktemp("matrix-files"))


@pytest.fixture(scope="session")
def repo_template(tmp_path_factory, files_template) -> Repo:
    return build_repo(tmp_path_factory.mktemp("matrix-repo") / "repo", files_template)


def _files_ctx(f: Files, out: Path) -> dict[str, Any]:
    ctx = {name: str(getattr(f, name)) for name in (
        "qrels", "qrels3", "queries_tsv", "queries_jsonl", "queries_judged", "qrels_wrong", "strata_yml",
        "strata_block_yml", "strata_tsv", "corpus", "corpus_leaky", "corpus_tsv", "baseline", "candidate",
        "candidate_plain", "cell_missing")}
    ctx.update({f"noise{k}": str(p) for k, p in enumerate(f.noise_runs)})
    ctx.update({f"cell_{m}_{c}": str(p) for (m, c), p in f.cells.items()})
    ctx["noise_runs"] = " ".join(str(p) for p in f.noise_runs)
    ctx["out"] = str(out)
    ctx["tmp"] = str(out.parent)
    ctx["world"] = f
    return ctx


@pytest.fixture()
def fctx(files_template, tmp_path) -> dict[str, Any]:
    return _files_ctx(files_template, tmp_path / "out")


@pytest.fixture()
def repo(repo_template, tmp_path) -> Repo:
    root = tmp_path / "repo"
    shutil.copytree(repo_template.root, root, symlinks=True)
    return Repo(root=root, config=root / ".retrieval-gate.yml", runfile_config=root / "gate-runfile.yml",
                base=repo_template.base, head=repo_template.head, baseline_run=root / "runs" / "baseline.run",
                candidate_run=root / "runs" / "candidate.run", files=repo_template.files)


@pytest.fixture()
def rctx(repo, tmp_path) -> dict[str, Any]:
    runs_dir = tmp_path / "runs-dir"
    runs_dir.mkdir()
    return {"config": str(repo.config), "runfile_config": str(repo.runfile_config), "root": str(repo.root),
            "base": repo.base, "head": repo.head, "baseline_run": str(repo.baseline_run),
            "candidate_run": str(repo.candidate_run), "runs_dir": str(runs_dir), "out": str(tmp_path / "out"),
            "tmp": str(tmp_path), "repo": repo}


# --------------------------------------------------------------------------- checks used by cases


def _report(ctx: dict[str, Any]) -> dict[str, Any]:
    return ctx.get("_stdout_json") or ctx["report.json"]


def measures_include(*names: str):
    """The report's measures include each name (with or without a '(rel=N)' that --rel added)."""
    def check(result: Result, ctx: dict[str, Any]) -> None:
        measures = _report(ctx)["measures"]
        plain = {re.sub(r"\(rel=\d+\)", "", m) for m in measures} | set(measures)
        missing = [n for n in names if n not in plain]
        assert not missing, f"measures {missing} missing from the report (has {sorted(measures)})"
    return check


def delta_recorded(**expected: Any):
    def check(result: Result, ctx: dict[str, Any]) -> None:
        delta = _report(ctx)["delta"]
        for key, value in expected.items():
            assert delta.get(key) == value, f"delta.{key} is {delta.get(key)!r}, expected {value!r}"
    return check


def metric_is(name: str):
    def check(result: Result, ctx: dict[str, Any]) -> None:
        assert _report(ctx)["metric"] == name, f"metric {_report(ctx)['metric']!r}, expected {name!r}"
    return check


def all_of(*checks):
    def check(result: Result, ctx: dict[str, Any]) -> None:
        for c in checks:
            c(result, ctx)
    return check


def strata_present(result: Result, ctx: dict[str, Any]) -> None:
    report = _report(ctx)
    assert report.get("strata") and report.get("traffic") and report.get("lift"), \
        "--strata report lacks strata/traffic/lift"


def query_count(n: int):
    def check(result: Result, ctx: dict[str, Any]) -> None:
        assert _report(ctx)["query_count"] == n, f"query_count {_report(ctx)['query_count']}, expected {n}"
    return check


def schema_stdout(result: Result, ctx: dict[str, Any]) -> None:
    _validate_schema(ctx["_stdout_json"], "stdout of --format json")


# --------------------------------------------------------------------------- compare

CMP = "compare --baseline {baseline} --candidate {candidate} --qrels {qrels} --samples 300"
COMPARE = [
    Case("base", CMP),
    Case("base", CMP, sub=True),
    Case("base-json-query-universe", CMP + " --format json", json_stdout=True, check=query_count(40)),
    Case("candidate-plain-text", CMP.replace("{candidate}", "{candidate_plain}")),
    Case("qrels-3col", CMP.replace("{qrels}", "{qrels3}"), check=None),
    Case("queries-jsonl", CMP + " --queries {queries_jsonl} --format json", json_stdout=True, check=query_count(40)),
    Case("queries-tsv", CMP + " --queries {queries_tsv} --format json", json_stdout=True, check=query_count(40)),
    Case("queries-judged-only", CMP + " --queries {queries_judged}"),
    Case("strata", CMP + " --queries {queries_jsonl} --strata {strata_yml} --format json", json_stdout=True,
         check=strata_present),
    Case("strata-block-assignments-tsv-queries", CMP + " --queries {queries_tsv} --strata {strata_block_yml}"
         " --format json", json_stdout=True, check=strata_present),
    Case("strata-without-queries", CMP + " --strata {strata_yml}", codes=(2,), err_contains="--queries"),
    Case("out", CMP + " --out {out}", files=REPORT_FILES),
    Case("format-json", CMP + " --format json", json_stdout=True, check=schema_stdout),
    Case("format-text", CMP + " --format text"),
    Case("also-csv", CMP + " --also AP,P@10 --format json", json_stdout=True, check=measures_include("AP", "P@10")),
    Case("also-single", CMP + " --also Success@10 --format json", json_stdout=True,
         check=measures_include("Success@10")),
    Case("also-repeated-accumulates", CMP + " --also AP --also P@10 --format json", json_stdout=True,
         check=measures_include("AP", "P@10")),
    Case("also-repeated-accumulates", CMP + " --also AP --also P@10 --out {out}", files=REPORT_FILES,
         check=measures_include("AP", "P@10"), sub=True),
    Case("rel-2", CMP + " --rel 2 --also AP,RR@10 --format json", json_stdout=True),
    Case("ci-percentile", CMP + " --ci-method percentile --format json", json_stdout=True,
         check=delta_recorded(method="percentile")),
    Case("ci-basic", CMP + " --ci-method basic --format json", json_stdout=True, check=delta_recorded(method="basic")),
    Case("ci-bca", CMP + " --ci-method bca --format json", json_stdout=True, check=delta_recorded(method="bca")),
    Case("samples", CMP + " --samples 1234 --format json", json_stdout=True, check=delta_recorded(samples=1234)),
    Case("seed", CMP + " --seed 13 --format json", json_stdout=True, check=delta_recorded(seed=13)),
    Case("metric-AP", CMP + " --metric AP --format json", json_stdout=True, check=metric_is("AP")),
    Case("metric-P@10", CMP + " --metric P@10 --format json", json_stdout=True, check=metric_is("P@10")),
    Case("metric-RR-rel2", CMP + " --metric RR(rel=2)@10 --format json", json_stdout=True,
         check=metric_is("RR(rel=2)@10")),
    Case("metric-nDCG", CMP + " --metric nDCG --format json", json_stdout=True, check=metric_is("nDCG")),
    Case("combo-queries-strata-out-json",
         CMP + " --queries {queries_jsonl} --strata {strata_yml} --out {out} --format json",
         files=REPORT_FILES, json_stdout=True, check=all_of(strata_present, schema_stdout)),
    Case("combo-queries-strata-out-json",
         CMP + " --queries {queries_jsonl} --strata {strata_yml} --out {out} --format json",
         files=REPORT_FILES, json_stdout=True, check=strata_present, sub=True),
    Case("combo-everything",
         CMP + " --queries {queries_tsv} --strata {strata_block_yml} --metric nDCG@20 --also AP --also P@10"
         " --rel 2 --ci-method bca --samples 500 --seed 3 --out {out} --format json",
         files=REPORT_FILES, json_stdout=True,
         check=all_of(strata_present, metric_is("nDCG@20"), measures_include("AP", "P@10"),
                      delta_recorded(method="bca", samples=500, seed=3))),
]


@pytest.mark.parametrize("case", [c.param() for c in COMPARE])
def test_compare(case, fctx):
    run_case(case, fctx)


# --------------------------------------------------------------------------- lift


def lift_counts_sum(result: Result, ctx: dict[str, Any]) -> None:
    data = ctx["retrieval_lift.json"]
    assert set(data["counts"]) == {"promoted", "demoted", "new_hit", "lost_hit", "unchanged_hit", "unchanged_miss"}
    assert sum(data["counts"].values()) + data["no_relevant"] == 40, data["counts"]


LIFT = "lift --before-run {baseline} --after-run {candidate} --qrels {qrels} --output-dir {out}"
LIFT_CASES = [
    # Runs rank 160 topics, 40 are judged (the TREC DL shape): the lift must be computed on the judged ones.
    Case("base-runs-cover-more-topics-than-judged", LIFT, files=LIFT_FILES, check=lift_counts_sum),
    Case("base-runs-cover-more-topics-than-judged", LIFT, files=LIFT_FILES, sub=True),
    Case("queries-judged-only", LIFT + " --queries {queries_judged}", files=LIFT_FILES, check=lift_counts_sum),
    Case("queries-all-topics", LIFT + " --queries {queries_jsonl}", files=LIFT_FILES, check=lift_counts_sum),
    Case("qrels-3col", LIFT.replace("{qrels}", "{qrels3}"), files=LIFT_FILES),
    Case("rel-threshold-2", LIFT + " --rel-threshold 2", files=LIFT_FILES),
    Case("k-rank-5", LIFT + " --k-rank 5", files=LIFT_FILES),
    Case("k-recall-50", LIFT + " --k-recall 50", files=LIFT_FILES),
    Case("aliases-baseline-candidate-rel-out",
         "lift --baseline {baseline} --candidate {candidate} --qrels {qrels} --rel 2 --out {out}", files=LIFT_FILES),
    Case("combo-judged-queries-rel2-krank20-krecall100",
         LIFT + " --queries {queries_judged} --rel-threshold 2 --k-rank 20 --k-recall 100", files=LIFT_FILES),
    Case("wrong-qrels-is-exit-2", LIFT.replace("{qrels}", "{qrels_wrong}"), codes=(2,), err_contains="qrels"),
    # Without --qrels: MS MARCO dev/small through ir_datasets; not cached offline -> exit 2, one line, at once.
    Case("no-qrels-offline", "lift --before-run {baseline} --after-run {candidate} --output-dir {out}", codes=(2,),
         sub=True, err_contains="--qrels"),
]


@pytest.mark.parametrize("case", [c.param() for c in LIFT_CASES])
def test_lift(case, fctx, tmp_path):
    env = None
    if case.sub:
        home = tmp_path / "irds-empty"
        home.mkdir()
        env = {"IR_DATASETS_HOME": str(home), "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}
    run_case(case, fctx, env=env)


# --------------------------------------------------------------------------- leakcheck


def leaks_found(result: Result, ctx: dict[str, Any]) -> None:
    data = ctx["_stdout_json"]
    text = json.dumps(data)
    for qid in ctx["world"].leaked_ids:
        assert qid in text, f"planted leak {qid} not reported"


LEAK = "leakcheck --queries {queries_jsonl} --corpus {corpus}"
LEAK_CASES = [
    Case("base-clean-corpus", LEAK),
    Case("base-clean-corpus", LEAK, sub=True),
    Case("leaky-corpus", LEAK.replace("{corpus}", "{corpus_leaky}"), codes=(1,)),
    Case("leaky-corpus", LEAK.replace("{corpus}", "{corpus_leaky}"), codes=(1,), sub=True),
    Case("queries-tsv", LEAK.replace("{queries_jsonl}", "{queries_tsv}")),
    Case("corpus-tsv", LEAK.replace("{corpus}", "{corpus_tsv}")),
    Case("mode-exact", LEAK + " --mode exact"),
    Case("mode-trigram", LEAK + " --mode trigram-jaccard"),
    Case("mode-both", LEAK + " --mode exact,trigram-jaccard"),
    Case("threshold-0.7", LEAK + " --threshold 0.7", codes=(0, 1)),
    Case("min-tokens-5", LEAK + " --min-tokens 5"),
    Case("format-json", LEAK + " --format json", json_stdout=True),
    Case("format-text", LEAK + " --format text"),
    Case("combo-leaky-json-exact-min-tokens-2",
         LEAK.replace("{corpus}", "{corpus_leaky}") + " --mode exact --min-tokens 2 --format json", codes=(1,),
         json_stdout=True, check=leaks_found),
    Case("combo-leaky-json-trigram-threshold",
         LEAK.replace("{corpus}", "{corpus_leaky}") + " --mode trigram-jaccard --threshold 0.9 --format json",
         codes=(1,), json_stdout=True, check=leaks_found),
]


@pytest.mark.parametrize("case", [c.param() for c in LEAK_CASES])
def test_leakcheck(case, fctx):
    run_case(case, fctx)


# --------------------------------------------------------------------------- noise --from-runs


def noise_json(result: Result, ctx: dict[str, Any]) -> None:
    data = ctx["noise.json"]
    for key in ("mean", "sd", "range", "threshold", "delta_sd"):
        assert key in json.dumps(data), f"noise.json lacks {key}"


NOISE = "noise --from-runs {noise_runs} --qrels {qrels} --out {out}/noise.json"
NOISE_CASES = [
    Case("base", NOISE, files={"noise.json": "json"}, check=noise_json),
    Case("base", NOISE, files={"noise.json": "json"}, sub=True),
    Case("queries", NOISE + " --queries {queries_jsonl}", files={"noise.json": "json"}),
    Case("qrels-3col", NOISE.replace("{qrels}", "{qrels3}"), files={"noise.json": "json"}),
    Case("metric-AP", NOISE + " --metric AP", files={"noise.json": "json"}),
    Case("rel-2", NOISE + " --rel 2 --metric RR@10", files={"noise.json": "json"}),
    Case("no-out-writes-noise.json-in-cwd", "noise --from-runs {noise_runs} --qrels {qrels}", cwd="{tmp}",
         files={"{tmp}/noise.json": "json"}),
    Case("two-runs", "noise --from-runs {noise0} {noise1} --qrels {qrels} --out {out}/noise.json",
         files={"noise.json": "json"}),
    Case("without-qrels-is-usage-error", "noise --from-runs {noise_runs}", codes=(2,), cwd="{tmp}"),
    Case("combo-queries-metric-rel-out",
         NOISE + " --queries {queries_jsonl} --metric nDCG@20 --rel 2", files={"noise.json": "json"}),
]


@pytest.mark.parametrize("case", [c.param() for c in NOISE_CASES])
def test_noise_from_runs(case, fctx):
    Path(fctx["out"]).mkdir(parents=True, exist_ok=True)
    run_case(case, fctx)


# --------------------------------------------------------------------------- calibrate


def calibration_json(result: Result, ctx: dict[str, Any]) -> None:
    data = ctx.get("_stdout_json") or ctx["calibration.json"]
    runs = data["runs"]
    assert data["pairs"] == runs * (runs - 1) and 0 <= data["fail"] <= data["pairs"]
    assert 0 < data["fail_rate_upper95"] <= 1 and "A/A comparisons of" in data["sentence"]
    assert data["blocking"] == data["fail"] + data["inconclusive"] and data["pairs"] <= data["pairs_possible"]


CALIBRATE = "calibrate --from-runs {noise_runs} --qrels {qrels} --samples 300"
CALIBRATE_CASES = [
    Case("base", CALIBRATE),
    Case("base", CALIBRATE, sub=True),
    Case("json", CALIBRATE + " --format json", json_stdout=True, check=calibration_json),
    Case("out", CALIBRATE + " --out {out}/calibration.json", files={"calibration.json": "json"},
         check=calibration_json),
    Case("queries-metric-rel-margin", CALIBRATE + " --queries {queries_jsonl} --metric RR@10 --rel 2 "
         "--max-regression 0.05 --seed 3 --format json", json_stdout=True, check=calibration_json),
    Case("one-run-is-usage-error", "calibrate --from-runs {noise0} --qrels {qrels}", codes=(2,)),
    Case("without-qrels-is-usage-error", "calibrate --from-runs {noise_runs}", codes=(2,)),
    Case("config-without-stored-repeats", "calibrate --config {tmp}/none.yml", codes=(2,)),
]


@pytest.mark.parametrize("case", [c.param() for c in CALIBRATE_CASES])
def test_calibrate(case, fctx):
    Path(fctx["out"]).mkdir(parents=True, exist_ok=True)
    run_case(case, fctx)


def test_calibrate_from_the_stored_noise_repeats(rctx):
    # archive --noise-repeats stores the repeats and their calibration with the band; calibrate
    # with the config reads them back, and the run's comment states it in one line.
    run_case(Case("archive-with-repeats", "archive --config {config} --noise-repeats 3"), rctx)
    result = run_case(Case("calibrate-config", "calibrate --config {config} --samples 300 --format json",
                           json_stdout=True), rctx)
    data = json.loads(result.out)
    assert data["pairs"] == 6 and data["runs"] == 3


# --------------------------------------------------------------------------- factorial

FACT = ("factorial --factor model --factor corpus --cell model=old,corpus=old={cell_old_old}"
        " --cell model=new,corpus=old={cell_new_old} --cell model=old,corpus=new={cell_old_new}"
        " --cell model=new,corpus=new={cell_new_new} --qrels {qrels} --samples 300")
FACT_MISSING = FACT.replace("{cell_new_new}", "{cell_missing}")
FACT_CASES = [
    Case("base", FACT),
    Case("base", FACT, sub=True),
    Case("queries", FACT + " --queries {queries_jsonl}"),
    Case("metric-AP", FACT + " --metric AP"),
    Case("rel-2", FACT + " --rel 2"),
    Case("samples", FACT + " --samples 700"),
    Case("seed", FACT + " --seed 5"),
    # The schema says report.json is "written by every comparing command".
    Case("out-report-json-validates-schema", FACT + " --out {out}", files=REPORT_FILES),
    Case("out-report-json-parses", FACT + " --out {out}", files={"report.json": "json", "report.md": "md"}),
    Case("format-json", FACT + " --format json", json_stdout=True),
    Case("missing-queries-refused", FACT_MISSING, codes=(2,), err_contains="refused"),
    Case("allow-missing", FACT_MISSING + " --allow-missing"),
    Case("combo-queries-allow-missing-out-json-metric",
         FACT_MISSING + " --queries {queries_jsonl} --allow-missing --metric RR@10 --rel 2 --seed 9 --out {out}"
         " --format json", json_stdout=True, files={"report.json": "json", "report.md": "md"}),
]


@pytest.mark.parametrize("case", [c.param() for c in FACT_CASES])
def test_factorial(case, fctx):
    run_case(case, fctx)


# --------------------------------------------------------------------------- archive


def manifest_records_head_commit(result: Result, ctx: dict[str, Any]) -> None:
    manifest = ctx["manifest.yml"]
    head = git(Path(ctx["root"]), "rev-parse", "HEAD")
    assert manifest.get("git_commit") == head, f"manifest git_commit {manifest.get('git_commit')!r}, HEAD is {head}"


def manifest_has_noise_band(result: Result, ctx: dict[str, Any]) -> None:
    band = ctx["manifest.yml"].get("noise_band")
    assert band and band.get("runs") == 2, f"manifest noise_band {band!r}"
    for name in band.get("runs_files", []):
        assert (Path(ctx["root"]) / ".retrieval-gate" / "baseline" / name).is_file(), name


MANIFEST = {"{root}/.retrieval-gate/baseline/manifest.yml": "manifest"}
RUNFILE_MANIFEST = {"{root}/.retrieval-gate/runfile-baseline/manifest.yml": "manifest"}
ARCHIVE_CASES = [
    Case("base", "archive --config {config}", files=MANIFEST, check=manifest_records_head_commit),
    Case("base", "archive --config {config}", files=MANIFEST, sub=True),
    Case("no-config-flag-uses-cwd", "archive", cwd="{root}", files=MANIFEST),
    Case("run", "archive --config {config} --run {baseline_run}", files=MANIFEST),
    # An empty runs folder: the planned run is named, not run behind the producing step's back.
    Case("runs-dir-empty", "archive --config {config} --runs-dir {runs_dir}", codes=(3,),
         err_contains="in the runs folder"),
    Case("gc", "archive --config {config} --gc", files=MANIFEST),
    Case("noise-repeats", "archive --config {config} --noise-repeats 2", files=MANIFEST,
         check=manifest_has_noise_band),
    Case("run-file-runner-with-run", "archive --config {runfile_config} --run {baseline_run}", files=RUNFILE_MANIFEST),
    # runner.type: run-file with runner.baseline_run set: the precomputed baseline run is the one to archive.
    Case("run-file-runner-uses-baseline_run", "archive --config {runfile_config}", files=RUNFILE_MANIFEST),
    Case("combo-run-noise-repeats", "archive --config {config} --run {baseline_run} --noise-repeats 2",
         files=MANIFEST, check=manifest_has_noise_band),
]


@pytest.mark.parametrize("case", [c.param() for c in ARCHIVE_CASES])
def test_archive(case, rctx):
    run_case(case, rctx)


def test_archive_gc_removes_orphans_after_a_rearchive(rctx):
    """archive, change the config, archive again, --gc: the old data files go, the manifest's stay."""
    root = Path(rctx["root"])
    folder = root / ".retrieval-gate" / "baseline"
    before = {p.name for p in folder.iterdir()}
    (root / "retrieval" / "config.yml").write_text("ingestion:\n  parser: v1\nbm25:\n  k1: 1.2\nboost: 1.5\n")
    run_case(Case("rearchive", "archive --config {config}", files=MANIFEST), rctx)
    run_case(Case("gc", "archive --config {config} --gc", files=MANIFEST), rctx)
    after = {p.name for p in folder.iterdir()}
    assert after != before and len(after) == len(before)


# --------------------------------------------------------------------------- replay


def replay_resolved(result: Result, ctx: dict[str, Any]) -> None:
    data = ctx.get("_stdout_json") or ctx["replay.json"]
    assert data.get("resolved") is True, data


REPLAY_CASES = [
    Case("base", "replay --config {config}"),
    Case("base", "replay --config {config}", sub=True),
    Case("no-config-flag-uses-cwd", "replay", cwd="{root}"),
    Case("out", "replay --config {config} --out {out}", files={"replay.json": "json"}, check=replay_resolved),
    Case("format-json", "replay --config {config} --format json", json_stdout=True, check=replay_resolved),
    Case("base-ref", "replay --config {config} --base {base}"),
    Case("runs-dir-empty", "replay --config {config} --runs-dir {runs_dir}", codes=(0, 3)),
    Case("combo-base-out-json", "replay --config {config} --base {base} --out {out} --format json",
         files={"replay.json": "json"}, json_stdout=True, check=replay_resolved),
    Case("run-file-config-without-manifest", "replay --config {runfile_config} --out {out}", codes=(0, 3),
         files={"replay.json": "json"}),
]


@pytest.mark.parametrize("case", [c.param() for c in REPLAY_CASES])
def test_replay(case, rctx):
    run_case(case, rctx)


def test_replay_reconstructs_from_the_base_commit_without_a_manifest(rctx):
    """No manifest: --base REF reconstructs the baseline from the base commit's config (documented)."""
    shutil.rmtree(Path(rctx["root"]) / ".retrieval-gate" / "baseline")
    run_case(Case("no-manifest-no-base", "replay --config {config}", codes=(3,)), rctx)
    result = run_case(Case("no-manifest-base", "replay --config {config} --base {base} --format json",
                           json_stdout=True), rctx)
    data = json.loads(result.out)
    assert data["resolution"] == "reconstructed", data.get("resolution")


# --------------------------------------------------------------------------- plan


def plan_list(result: Result, ctx: dict[str, Any]) -> None:
    data = ctx["_stdout_json"]
    assert isinstance(data, list) and data, data
    for item in data:
        for key in ("purpose", "key", "config_file", "queries", "output", "needed"):
            assert key in item, f"plan item lacks {key}: {item}"
        assert Path(item["config_file"]).is_file(), f"plan names a config file that is not there: {item}"


def plan_matrix(result: Result, ctx: dict[str, Any]) -> None:
    data = ctx["_stdout_json"]
    assert set(data) == {"count", "counts", "parts"} and sum(data["counts"]) == data["count"] > 0, data
    assert len(data["parts"]) == len(data["counts"])
    for part, count in zip(data["parts"], data["counts"]):
        assert set(part) == {"include"} and len(part["include"]) == count
        for job in part["include"]:
            assert job["artifact"] == "retrieval-gate-run-" + job["key"] and job["file"] == job["key"] + ".run"
            assert Path(job["config"]).is_file(), f"the matrix names a config file that is not there: {job}"


PLAN_CASES = [
    Case("base", "plan --config {config}"),
    Case("base", "plan --config {config}", sub=True),
    Case("no-config-flag-uses-cwd", "plan", cwd="{root}"),
    Case("format-json", "plan --config {config} --format json", json_stdout=True, check=plan_list),
    Case("runs-dir", "plan --config {config} --runs-dir {runs_dir} --format json", json_stdout=True, check=plan_list),
    Case("base-ref", "plan --config {config} --base {base} --format json", json_stdout=True, check=plan_list),
    Case("run-file-config", "plan --config {runfile_config} --format json", json_stdout=True, check=plan_list),
    Case("combo-base-runs-dir-json", "plan --config {config} --base {base} --runs-dir {runs_dir} --format json",
         json_stdout=True, check=plan_list),
    Case("noise-repeats-json", "plan --config {config} --noise-repeats 3 --format json", json_stdout=True,
         check=plan_list),
    Case("github-matrix", "plan --config {config} --format github-matrix", json_stdout=True, check=plan_matrix),
    Case("github-matrix", "plan --config {config} --format github-matrix", json_stdout=True, check=plan_matrix,
         sub=True),
    Case("combo-matrix-repeats-parts-base", "plan --config {config} --base {base} --runs-dir {runs_dir} "
         "--noise-repeats 2 --parts 2 --format github-matrix", json_stdout=True, check=plan_matrix),
    Case("parts-without-matrix", "plan --config {config} --parts 2", codes=(2,),
         err_contains="--parts splits a github-matrix plan"),
    Case("parts-zero", "plan --config {config} --parts 0 --format github-matrix", codes=(2,)),
    Case("noise-repeats-one", "plan --config {config} --noise-repeats 1", codes=(2,)),
]


@pytest.mark.parametrize("case", [c.param() for c in PLAN_CASES])
def test_plan(case, rctx):
    run_case(case, rctx)


# --------------------------------------------------------------------------- run

RUN_CODES = (0, 1, 3)  # pass / fail / inconclusive: all documented verdicts; never 2 or 4 on good inputs


def verdict_present(result: Result, ctx: dict[str, Any]) -> None:
    report = _report(ctx)
    verdict = report["verdict"]
    assert verdict["kind"] in ("pass", "fail", "inconclusive", "skipped", "accepted"), verdict
    assert verdict["exit_code"] == result.code, f"report says exit {verdict['exit_code']}, CLI exited {result.code}"


def not_inconclusive(result: Result, ctx: dict[str, Any]) -> None:
    verdict_present(result, ctx)
    assert _report(ctx)["verdict"]["kind"] != "inconclusive", _report(ctx)["verdict"]


def _names_the_missing_run(ctx: dict[str, Any]) -> None:
    verdict = _report(ctx)["verdict"]
    assert verdict["kind"] == "inconclusive" and "in the runs folder" in verdict["reasons"][0]["message"], verdict


RUN_CASES = [
    Case("base", "run --config {config} --out {out}", codes=RUN_CODES, files=RUN_FILES, check=not_inconclusive),
    Case("base", "run --config {config} --out {out}", codes=RUN_CODES, files=RUN_FILES, sub=True),
    Case("no-out-uses-default", "run --config {config}", codes=RUN_CODES, cwd="{root}",
         files={"{root}/.retrieval-gate/out/report.json": "schema", "{root}/.retrieval-gate/out/report.md": "md"}),
    Case("no-config-flag-uses-cwd", "run --out {out}", codes=RUN_CODES, cwd="{root}", files=RUN_FILES),
    Case("candidate-run", "run --config {config} --candidate-run {candidate_run} --out {out}", codes=RUN_CODES,
         files=RUN_FILES, check=not_inconclusive),
    # Nothing was produced: inconclusive, naming the run (the gate does not run it itself).
    Case("runs-dir-empty", "run --config {config} --runs-dir {runs_dir} --out {out}", codes=(3,),
         files={"report.json": "schema"}, check=lambda result, ctx: _names_the_missing_run(ctx)),
    Case("base-ref", "run --config {config} --base {base} --out {out}", codes=RUN_CODES, files=RUN_FILES,
         check=not_inconclusive),
    Case("format-json", "run --config {config} --out {out} --format json", codes=RUN_CODES, files=RUN_FILES,
         json_stdout=True, check=all_of(schema_stdout, verdict_present)),
    Case("format-text", "run --config {config} --out {out} --format text", codes=RUN_CODES, files=RUN_FILES),
    Case("run-file-config-no-manifest", "run --config {runfile_config} --out {out}", codes=RUN_CODES,
         files=REPORT_FILES, check=verdict_present),
    Case("combo-base-candidate-run-json",
         "run --config {config} --base {base} --candidate-run {candidate_run} --out {out} --format json",
         codes=RUN_CODES, files=RUN_FILES, json_stdout=True, check=all_of(schema_stdout, not_inconclusive)),
    Case("combo-base-candidate-run-json",
         "run --config {config} --base {base} --candidate-run {candidate_run} --out {out} --format json",
         codes=RUN_CODES, files=RUN_FILES, json_stdout=True, sub=True),
]


@pytest.mark.parametrize("case", [c.param() for c in RUN_CASES])
def test_run(case, rctx):
    run_case(case, rctx)


def test_run_file_runner_archive_then_run(rctx):
    """runner.type: run-file: archive the precomputed baseline run, then gate the precomputed candidate."""
    run_case(Case("archive", "archive --config {runfile_config} --run {baseline_run}", files=RUNFILE_MANIFEST), rctx)
    run_case(Case("run", "run --config {runfile_config} --out {out}", codes=RUN_CODES, files=RUN_FILES,
                  check=not_inconclusive), rctx)


def test_plan_produce_then_run_with_runs_dir(rctx):
    """The Docker Action's flow (README "Two ways to run your retrieval"): the image has no runner
    (runner.type: run-file); `plan` lists every run the gate needs, an earlier step produces them
    with the team's own stack, `run --runs-dir` gates them."""
    from tests.cli_matrix.world import RUNNER

    root = Path(rctx["root"])
    text = Path(rctx["runfile_config"]).read_text()
    text = text.replace("runfile-baseline", "action-baseline")
    text = text[: text.index("runner:")] + "runner:\n  type: run-file\n"
    action = root / "gate-action.yml"
    action.write_text(text)
    ctx = {**rctx, "action": str(action)}
    # The baseline is archived on the base commit's retrieval config (the workspace is the PR head).
    from tests.cli_matrix.world import BASE_RETRIEVAL, PR_RETRIEVAL

    (root / "retrieval" / "config.yml").write_text(BASE_RETRIEVAL)
    run_case(Case("archive", "archive --config {action} --run {baseline_run}",
                  files={"{root}/.retrieval-gate/action-baseline/manifest.yml": "manifest"}), ctx)
    (root / "retrieval" / "config.yml").write_text(PR_RETRIEVAL)
    result = run_case(Case("plan", "plan --config {action} --runs-dir {runs_dir} --format json", json_stdout=True,
                           check=plan_list), ctx)
    for item in json.loads(result.out):
        if item["needed"]:
            subprocess.run([sys.executable, str(RUNNER), "--config", item["config_file"], "--queries", item["queries"],
                            "--corpus", item["corpus"] or "", "--output", item["output"]], check=True)

    def from_runs_dir(result: Result, c: dict[str, Any]) -> None:
        not_inconclusive(result, c)
        report = _report(c)
        assert "runs-dir" in json.dumps(report.get("candidate", {})), report.get("candidate")
        cells = (report.get("attribution") or {}).get("cells") or []
        assert len(cells) == 4, f"the PR changes two factors: a 2x2 grid is due, got {len(cells)} cells " \
                                f"({(report.get('attribution') or {}).get('note') or report.get('attribution')})"

    run_case(Case("run-runs-dir", "run --config {action} --runs-dir {runs_dir} --out {out} --format json",
                  codes=RUN_CODES, files=RUN_FILES, json_stdout=True, check=from_runs_dir), ctx)


# --------------------------------------------------------------------------- noise --repeats (the runner)

NOISE_REPEATS = [
    Case("repeats", "noise --config {config} --repeats 2 --out {out}/noise.json", files={"noise.json": "json"},
         check=noise_json),
    Case("repeats", "noise --config {config} --repeats 2 --out {out}/noise.json", files={"noise.json": "json"},
         sub=True),
    Case("repeats-from-config", "noise --config {config} --out {out}/noise.json", files={"noise.json": "json"}),
    Case("no-config-no-out-uses-cwd", "noise --repeats 2", cwd="{root}", files={"{root}/noise.json": "json"}),
    Case("runs-dir-empty", "noise --config {config} --repeats 2 --runs-dir {runs_dir} --out {out}/noise.json",
         codes=(3,), err_contains="in the runs folder"),
    Case("repeats-3", "noise --config {config} --repeats 3 --out {out}/noise.json", files={"noise.json": "json"}),
]


@pytest.mark.parametrize("case", [c.param() for c in NOISE_REPEATS])
def test_noise_repeats(case, rctx):
    Path(rctx["out"]).mkdir(parents=True, exist_ok=True)
    run_case(case, rctx)


def test_noise_repeats_with_a_failing_runner_is_inconclusive_and_writes_no_band(rctx):
    config = Path(rctx["config"])
    text = config.read_text()
    command = next(line for line in text.splitlines() if line.strip().startswith("command:"))
    failing = f"{config.parent}/failing.yml"
    Path(failing).write_text(text.replace(command, f"  command: \"{sys.executable} -c 'import sys; sys.exit(7)'\""))
    result = run_case(Case("failing-runner", f"noise --config {failing} --repeats 2 --out {{out}}/noise.json",
                           codes=(3,), err_contains="inconclusive: no noise band"), rctx)
    assert not (Path(rctx["out"]) / "noise.json").exists(), result.describe()


def test_files_the_gate_writes_are_readable_by_the_next_step_under_umask_022(rctx):
    # A later workflow step (upload the report, the comment job, the next archive) may run as
    # another user: every file archive and run leave behind must be 0644, not mkstemp's 0600.
    import stat

    saved = os.umask(0o022)
    try:
        run_case(Case("archive", "archive --config {config}"), rctx)
        run_case(Case("run", "run --config {config} --out {out}", codes=RUN_CODES, files=RUN_FILES), rctx)
    finally:
        os.umask(saved)
    written = [p for folder in (Path(rctx["root"]) / ".retrieval-gate", Path(rctx["out"]))
               for p in folder.rglob("*") if p.is_file()]
    assert len(written) >= 6  # manifest + data files, cache, work files, report files
    modes = {str(p): oct(stat.S_IMODE(p.stat().st_mode)) for p in written}
    assert {m for m in modes.values()} == {"0o644"}, modes


# --------------------------------------------------------------------------- comment


@pytest.fixture(scope="session")
def saved_reports(repo_template, files_template, tmp_path_factory) -> dict[str, Path]:
    """A `run` report (the comment job's input) and a `compare` report."""
    tmp = tmp_path_factory.mktemp("reports")
    root = tmp / "repo"
    shutil.copytree(repo_template.root, root, symlinks=True)
    result = invoke(["run", "--config", str(root / ".retrieval-gate.yml"), "--out", str(tmp / "run")])
    assert result.code in RUN_CODES, result.describe()
    f = files_template
    result = invoke(["compare", "--baseline", str(f.baseline), "--candidate", str(f.candidate), "--qrels",
                     str(f.qrels), "--queries", str(f.queries_jsonl), "--strata", str(f.strata_yml), "--samples",
                     "300", "--out", str(tmp / "compare")])
    assert result.code == 0, result.describe()
    # The comment job posts a report of the PR and head it is started for: each carries the event
    # the Action records (`run` on a machine judges no event).
    run = tmp / "run" / "report.json"
    older, pr_6 = tmp / "run" / "report-of-an-older-head.json", tmp / "run" / "report-of-pr-6.json"
    shutil.copyfile(run, older)
    shutil.copyfile(run, pr_6)
    return {"run": as_the_action_saved(run, 5, HEAD_SHA), "compare": tmp / "compare" / "report.json",
            "older_head": as_the_action_saved(older, 5, OLDER_HEAD_SHA), "pr_6": as_the_action_saved(pr_6, 6, HEAD_SHA)}


HEAD_SHA = "a1" * 20
OLDER_HEAD_SHA = "b2" * 20
COMMENT = "comment --report {report} --pr 5 --head-sha {sha}"
COMMENT_CASES = [
    Case("base", COMMENT),
    Case("base", COMMENT, sub=True),
    Case("mode-update", COMMENT + " --comment-mode update"),
    Case("mode-new", COMMENT + " --comment-mode new"),
    # A stale run: its report is of the head the run was for, and the PR has moved on since.
    Case("head-sha-mismatch-does-not-comment", COMMENT.replace("{sha}", OLDER_HEAD_SHA).replace("{report}",
                                                                                                "{older_head}")),
    Case("report-of-another-head-is-refused", COMMENT.replace("{sha}", OLDER_HEAD_SHA), codes=(2,),
         err_contains=f"was made for head '{HEAD_SHA}', not {OLDER_HEAD_SHA} (--head-sha): not posted"),
    Case("report-of-another-pr-is-refused", COMMENT.replace("--pr 5", "--pr 6"), codes=(2,),
         err_contains="is the report of PR #5, not of #6 (--pr): not posted"),
    Case("compare-report-is-refused", COMMENT.replace("{report}", "{compare_report}"), codes=(2,),
         err_contains="not a gate run report"),
    Case("missing-report-file", COMMENT.replace("{report}", "{tmp}/nope.json"), codes=(2,)),
    Case("suite-from-the-workflow", COMMENT + " --suite {suite}"),
    Case("report-of-another-suite-is-refused", COMMENT + " --suite another-suite", codes=(2,),
         err_contains="not 'another-suite' (--suite): not posted"),
]


@pytest.mark.parametrize("case", [c.param() for c in COMMENT_CASES])
def test_comment(case, saved_reports, tmp_path):
    from tests.publishing.github.fake_github import FakeGitHub

    with FakeGitHub(token=TOKEN) as fake:
        fake.add_pull(5, HEAD_SHA, files=["retrieval/config.yml"])
        env = {"GITHUB_TOKEN": TOKEN, "GITHUB_REPOSITORY": fake.repository, "GITHUB_API_URL": fake.url}
        suite = json.loads(saved_reports["run"].read_text()).get("suite", "retrieval")
        ctx = {"report": str(saved_reports["run"]), "compare_report": str(saved_reports["compare"]),
               "older_head": str(saved_reports["older_head"]),
               "sha": HEAD_SHA, "tmp": str(tmp_path), "out": str(tmp_path / "out"), "suite": suite}
        result = run_case(case, ctx, env=env)
        if result.code == 0:
            expected = 0 if "mismatch" in case.id else 1
            assert len(fake.comments(5)) == expected, f"{len(fake.comments(5))} comments" + result.describe()
            assert TOKEN not in result.out + result.err
        fake.assert_valid()


def test_comment_update_twice_keeps_one_comment_and_new_adds_one(saved_reports, tmp_path):
    from tests.publishing.github.fake_github import FakeGitHub

    with FakeGitHub(token=TOKEN) as fake:
        fake.add_pull(5, HEAD_SHA, files=["retrieval/config.yml"])
        env = {"GITHUB_TOKEN": TOKEN, "GITHUB_REPOSITORY": fake.repository, "GITHUB_API_URL": fake.url}
        ctx = {"report": str(saved_reports["run"]), "sha": HEAD_SHA, "tmp": str(tmp_path), "out": str(tmp_path)}
        run_case(Case("update-1", COMMENT), ctx, env=env)
        run_case(Case("update-2", COMMENT + " --comment-mode update"), ctx, env=env)
        assert len(fake.comments(5)) == 1
        run_case(Case("new", COMMENT + " --comment-mode new"), ctx, env=env)
        assert len(fake.comments(5)) == 2
        fake.assert_valid()


@pytest.mark.parametrize("problem, code, said", [
    ("bad-token", 2, "GitHub refused the token (401 Bad credentials)"),
    ("wrong-pr", 2, "is #6 a pull request of"),
    ("server-502", 3, "GitHub unavailable, nothing posted"),
    ("unreachable", 3, "GitHub unavailable, nothing posted"),
    ("not-a-report", 2, "not a retrieval-gate report"),
    ("truncated-report", 2, "invalid JSON"),
])
def test_comment_failures_of_the_world_are_one_line_and_a_documented_code(problem, code, said, saved_reports,
                                                                          tmp_path):
    from tests.publishing.github.fake_github import FakeGitHub

    with FakeGitHub(token=TOKEN) as fake:
        fake.add_pull(5, HEAD_SHA, files=["retrieval/config.yml"])
        env = {"GITHUB_TOKEN": "ghs_wrong" if problem == "bad-token" else TOKEN,
               "GITHUB_REPOSITORY": fake.repository,
               "GITHUB_API_URL": "http://127.0.0.1:9" if problem == "unreachable" else fake.url}
        if problem == "server-502":
            fake.script_error("*", 502, times=100)
        report = saved_reports["run"]
        if problem == "not-a-report":
            report = tmp_path / "r.json"
            report.write_text('{"hello": "world"}\n')
        if problem == "truncated-report":
            report = tmp_path / "r.json"
            report.write_text(saved_reports["run"].read_text()[:500])
        if problem == "wrong-pr":  # a report of PR 6, which GitHub does not know
            report = saved_reports["pr_6"]
        args = COMMENT.replace("--pr 5", "--pr 6") if problem == "wrong-pr" else COMMENT
        ctx = {"report": str(report), "sha": HEAD_SHA, "tmp": str(tmp_path), "out": str(tmp_path)}
        result = run_case(Case(problem, args + " --max-wait 3", codes=(code,), err_contains=said), ctx, env=env)
        assert len(result.err.strip().splitlines()) == 1, result.err
        assert not fake.comments(5)
        assert TOKEN not in result.out + result.err


def test_comment_without_token_is_exit_2(saved_reports, tmp_path, monkeypatch):
    for name in ("GITHUB_TOKEN", "INPUT_TOKEN", "GITHUB_REPOSITORY"):
        monkeypatch.delenv(name, raising=False)
    run_case(Case("no-token", COMMENT, codes=(2,), err_contains="GITHUB_TOKEN"),
             {"report": str(saved_reports["run"]), "sha": HEAD_SHA, "tmp": str(tmp_path), "out": str(tmp_path)})


# --------------------------------------------------------------------------- demo

DEMO_FILES = {"report.json": "schema", "report.md": "md", "comment.md": "md"}


@pytest.mark.full  # slow: the full tier (tests/conftest.py)
def test_demo_subprocess_with_out(tmp_path):
    pytest.importorskip("faiss")
    pytest.importorskip("bm25s")
    run_case(Case("demo", "demo --out {out} --scale 0.1 --repeats 2", sub=True, files=DEMO_FILES),
             {"out": str(tmp_path / "demo"), "tmp": str(tmp_path)})


@pytest.mark.full  # slow: the full tier (tests/conftest.py)
def test_demo_in_process_default_out_and_seed(tmp_path):
    pytest.importorskip("faiss")
    pytest.importorskip("bm25s")
    run_case(Case("demo", "demo --scale 0.1 --repeats 2 --seed 3", cwd="{tmp}",
                  files={"{tmp}/retrieval-gate-demo/" + name: kind for name, kind in DEMO_FILES.items()}),
             {"out": str(tmp_path / "unused"), "tmp": str(tmp_path)})


# =========================================================================== real data: TREC DL 2019


def _dl19() -> Path:
    return need(REALDATA / "runs" / "trec-dl-2019-passage")


@pytest.fixture(scope="session")
def dl19_ctx(tmp_path_factory) -> dict[str, Any]:
    dl19 = _dl19()
    tmp = tmp_path_factory.mktemp("dl19")
    runs = dl19 / "official_nist"
    qrels = dl19 / "qrels" / "qrels.dl19-passage.txt"
    judged = {line.split()[0] for line in qrels.read_text().splitlines() if line.strip()}
    topics = dl19 / "topics" / "topics.dl19-passage.txt"
    judged_topics = tmp / "judged-topics.tsv"
    judged_topics.write_text("".join(line + "\n" for line in topics.read_text().splitlines()
                                     if line.split("\t")[0] in judged))
    ctx = {name.split(".")[1]: str(runs / name) for name in os.listdir(runs) if name.startswith("input.")}
    ctx.update(qrels=str(qrels), topics=str(topics), judged_topics=str(judged_topics), tmp_root=str(tmp))
    return ctx


@pytest.fixture()
def dctx(dl19_ctx, tmp_path) -> dict[str, Any]:
    return {**dl19_ctx, "out": str(tmp_path / "out"), "tmp": str(tmp_path)}


def nist_numbers(result: Result, ctx: dict[str, Any]) -> None:
    report = _report(ctx)
    assert report["query_count"] == 43
    assert round(report["baseline"]["mean"], 4) == 0.5058 and round(report["candidate"]["mean"], 4) == 0.7380


DL_CMP = "compare --baseline {bm25base_p} --candidate {p_bert} --qrels {qrels} --samples 1000"
DL_COMPARE = [
    Case("base", DL_CMP + " --format json", json_stdout=True, check=nist_numbers),
    Case("base-readme-example", DL_CMP.replace("1000", "10000"), sub=True),
    Case("queries-200-topics", DL_CMP + " --queries {topics} --format json", json_stdout=True, check=nist_numbers),
    Case("rel-2", DL_CMP + " --rel 2 --also AP,RR@10,R@1000 --format json", json_stdout=True),
    Case("also-repeated-accumulates", DL_CMP + " --also AP --also P@10 --format json", json_stdout=True,
         check=measures_include("AP", "P@10")),
    Case("ci-bca", DL_CMP + " --ci-method bca --format json", json_stdout=True, check=delta_recorded(method="bca")),
    Case("ci-basic", DL_CMP + " --ci-method basic --format json", json_stdout=True,
         check=delta_recorded(method="basic")),
    Case("out", DL_CMP + " --out {out}", files=REPORT_FILES),
    Case("depth-20-run", "compare --baseline {bm25base_p} --candidate {ICT-BERT2} --qrels {qrels} --samples 500"
         " --out {out}", files=REPORT_FILES),
    Case("combo-topics-out-json-bca-seed",
         DL_CMP + " --queries {topics} --out {out} --format json --ci-method bca --seed 11 --metric nDCG@10"
         " --also AP --also RR(rel=2)@10", json_stdout=True, files=REPORT_FILES,
         check=all_of(nist_numbers, measures_include("AP", "RR(rel=2)@10"))),
]


@pytest.mark.parametrize("case", [c.param() for c in DL_COMPARE])
def test_dl19_compare(case, dctx):
    run_case(case, dctx)


# ---- the lift command of the source note, and an independent computation of its buckets

EXPECTED_DL19_BUCKETS = {"promoted": 15, "demoted": 3, "new_hit": 1, "lost_hit": 0, "unchanged_hit": 23,
                         "unchanged_miss": 1}


def _read_trec_run(path: Path) -> dict[str, list[tuple[str, float]]]:
    rows: dict[str, list[tuple[str, float]]] = {}
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            parts = line.split()
            if len(parts) >= 6:
                rows.setdefault(parts[0], []).append((parts[2], float(parts[4])))
    return rows


def _first_relevant_rank(ranked: list[tuple[str, float]], relevant: set[str], k: int) -> int | None:
    # trec_eval order: score descending (compared as float32), then docno descending.
    by_docno = sorted(ranked, key=lambda r: r[0].encode(), reverse=True)
    ordered = sorted(by_docno, key=lambda r: -np.float32(r[1]))
    for rank, (doc, _) in enumerate(ordered[:k], start=1):
        if doc in relevant:
            return rank
    return None


def independent_dl19_buckets(before: Path, after: Path, qrels: Path, rel: int = 2, k: int = 10) -> dict[str, int]:
    judgments: dict[str, dict[str, int]] = {}
    for line in qrels.read_text().splitlines():
        parts = line.split()
        if len(parts) == 4:
            judgments.setdefault(parts[0], {})[parts[2]] = int(parts[3])
    b_run, a_run = _read_trec_run(before), _read_trec_run(after)
    counts = dict.fromkeys(EXPECTED_DL19_BUCKETS, 0)
    for qid, labels in judgments.items():
        relevant = {d for d, g in labels.items() if g >= rel}
        if not relevant:
            continue
        b = _first_relevant_rank(b_run.get(qid, []), relevant, k)
        a = _first_relevant_rank(a_run.get(qid, []), relevant, k)
        if b is None and a is None:
            bucket = "unchanged_miss"
        elif b is None:
            bucket = "new_hit"
        elif a is None:
            bucket = "lost_hit"
        elif a < b:
            bucket = "promoted"
        elif a > b:
            bucket = "demoted"
        else:
            bucket = "unchanged_hit"
        counts[bucket] += 1
    return counts


def test_dl19_independent_bucket_computation_matches_the_expected_numbers(dl19_ctx):
    counts = independent_dl19_buckets(Path(dl19_ctx["bm25base_p"]), Path(dl19_ctx["p_bert"]),
                                      Path(dl19_ctx["qrels"]))
    assert counts == EXPECTED_DL19_BUCKETS


def dl19_buckets(result: Result, ctx: dict[str, Any]) -> None:
    data = ctx["retrieval_lift.json"]
    expected = independent_dl19_buckets(Path(ctx["bm25base_p"]), Path(ctx["p_bert"]), Path(ctx["qrels"]))
    assert expected == EXPECTED_DL19_BUCKETS
    assert data["counts"] == expected, f"lift buckets {data['counts']}, independent computation {expected}"
    rows = {row["bucket"]: int(row["count"]) for row in ctx["retrieval_lift_by_bucket.csv"] if "bucket" in row}
    if rows:
        assert {k: rows.get(k, 0) for k in expected} == expected, f"CSV buckets {rows}"


DL_LIFT = "lift --before-run {bm25base_p} --after-run {p_bert} --qrels {qrels} --rel-threshold 2 --output-dir {out}"
DL_LIFT_CASES = [
    # The documented command of the source note (runs cover 200 topics, 43 judged).
    Case("source-note-command", DL_LIFT, files=LIFT_FILES, check=dl19_buckets),
    Case("source-note-command", DL_LIFT, files=LIFT_FILES, check=dl19_buckets, sub=True),
    Case("judged-topics-queries", DL_LIFT + " --queries {judged_topics}", files=LIFT_FILES, check=dl19_buckets),
    Case("all-200-topics-queries", DL_LIFT + " --queries {topics}", files=LIFT_FILES, check=dl19_buckets),
    Case("rel-threshold-default", DL_LIFT.replace(" --rel-threshold 2", ""), files=LIFT_FILES),
    Case("k-rank-5", DL_LIFT + " --k-rank 5", files=LIFT_FILES),
    Case("k-recall-1000", DL_LIFT + " --k-recall 1000", files=LIFT_FILES),
    Case("aliases", "lift --baseline {bm25base_p} --candidate {p_bert} --qrels {qrels} --rel 2 --out {out}",
         files=LIFT_FILES, check=dl19_buckets),
    Case("depth-20-run", DL_LIFT.replace("{p_bert}", "{ICT-BERT2}"), files=LIFT_FILES),
    Case("rm3-runs", DL_LIFT.replace("{bm25base_p}", "{bm25tuned_p}").replace("{p_bert}", "{bm25base_rm3_p}"),
         files=LIFT_FILES),
]


@pytest.mark.parametrize("case", [c.param() for c in DL_LIFT_CASES])
def test_dl19_lift(case, dctx):
    run_case(case, dctx)


DL_NOISE = "noise --from-runs {bm25base_p} {bm25tuned_p} {bm25base_rm3_p} --qrels {qrels} --out {out}/noise.json"
DL_FACT = ("factorial --factor tuned --factor rm3 --cell tuned=old,rm3=old={bm25base_p}"
           " --cell tuned=new,rm3=old={bm25tuned_p} --cell tuned=old,rm3=new={bm25base_rm3_p}"
           " --cell tuned=new,rm3=new={bm25tuned_rm3_p} --qrels {qrels} --samples 500")
DL_OTHER = [
    Case("noise-from-runs", DL_NOISE, files={"noise.json": "json"}),
    Case("noise-from-runs-topics-rel2", DL_NOISE + " --queries {topics} --rel 2 --metric RR@10",
         files={"noise.json": "json"}),
    Case("factorial", DL_FACT),
    Case("factorial-out-json", DL_FACT + " --out {out} --format json --queries {topics}", json_stdout=True,
         files={"report.json": "json", "report.md": "md"}),
    Case("factorial-out-json", DL_FACT + " --rel 2 --metric AP --out {out} --format json", json_stdout=True,
         files={"report.json": "json", "report.md": "md"}, sub=True),
]


@pytest.mark.parametrize("case", [c.param() for c in DL_OTHER])
def test_dl19_noise_and_factorial(case, dctx):
    Path(dctx["out"]).mkdir(parents=True, exist_ok=True)
    run_case(case, dctx)


# ---- ir_datasets (offline, from a copy of the seed cache), always as subprocesses


@pytest.fixture(scope="session")
def irds_env(tmp_path_factory) -> dict[str, str]:
    seed = need(REALDATA / "ir_datasets_seed")
    home = tmp_path_factory.mktemp("irds") / "home"
    shutil.copytree(seed, home)
    return {"IR_DATASETS_HOME": str(home), "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
            "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9"}


def cranfield_leak(result: Result, ctx: dict[str, Any]) -> None:
    text = json.dumps(ctx["_stdout_json"])
    assert '"172"' in text, "Cranfield query 172 (inside docs 320-322) not reported"


def vaswani_leak(result: Result, ctx: dict[str, Any]) -> None:
    assert '"72"' in json.dumps(ctx["_stdout_json"]), "Vaswani query 72 (inside doc 2213) not reported"


IRDS_CASES = [
    Case("leakcheck-cranfield", "leakcheck --queries irds:cranfield --corpus irds:cranfield --format json",
         codes=(1,), json_stdout=True, sub=True, check=cranfield_leak),
    Case("leakcheck-cranfield-exact-text", "leakcheck --queries irds:cranfield --corpus irds:cranfield --mode exact",
         codes=(1,), sub=True),
    Case("leakcheck-vaswani", "leakcheck --queries irds:vaswani --corpus irds:vaswani --mode exact --format json",
         codes=(1,), json_stdout=True, sub=True, check=vaswani_leak),
    Case("lift-default-qrels-offline", "lift --before-run {bm25base_p} --after-run {p_bert} --output-dir {out}",
         codes=(2,), sub=True, err_contains="--qrels"),
]


@pytest.mark.parametrize("case", [c.param() for c in IRDS_CASES])
def test_irds(case, dctx, irds_env):
    run_case(case, dctx, env=irds_env)


def test_irds_compare_cranfield_with_runs_built_from_its_qrels(dctx, irds_env, tmp_path):
    """compare --qrels irds:cranfield --queries irds:cranfield on two runs over Cranfield documents."""
    rng = np.random.default_rng(3)
    qrels_file = Path(irds_env["IR_DATASETS_HOME"]) / "cranfield" / "qrels.txt"
    pairs: dict[str, list[str]] = {}
    for line in qrels_file.read_text().splitlines():
        parts = line.split()
        if len(parts) >= 3:
            pairs.setdefault(parts[0], []).append(parts[1])
    docs = sorted({d for ds in pairs.values() for d in ds})
    for name, noise in (("a.run", 2.0), ("b.run", 1.0)):
        lines = []
        for qid, rel_docs in pairs.items():
            pool = set(rel_docs) | set(rng.choice(docs, 40).tolist())
            scored = sorted(((d, (d in rel_docs) * 2.0 + rng.normal(0, noise)) for d in pool), key=lambda x: -x[1])
            lines += [f"{qid} Q0 {d} {r} {s:.5f} t" for r, (d, s) in enumerate(scored, start=1)]
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    ctx = {**dctx, "a": str(tmp_path / "a.run"), "b": str(tmp_path / "b.run")}
    run_case(Case("compare-irds", "compare --baseline {a} --candidate {b} --qrels irds:cranfield --queries"
                  " irds:cranfield --samples 300 --out {out} --format json", sub=True, json_stdout=True,
                  files=REPORT_FILES), ctx, env=irds_env)


# =========================================================================== bad option values: exit 2, never 4

BAD_VALUES = [
    Case("compare-seed-negative", CMP + " --seed -3", codes=(2,)),
    Case("compare-samples-0", CMP.replace("--samples 300", "--samples 0"), codes=(2,)),
    Case("compare-metric-unknown", CMP + " --metric Bogus@10", codes=(2,)),
    Case("compare-rel-0", CMP + " --rel 0", codes=(2,)),
    Case("compare-ci-method-unknown", CMP + " --ci-method jackknife", codes=(2,)),
    Case("factorial-seed-negative", FACT + " --seed -1", codes=(2,)),
    Case("lift-k-rank-0", LIFT + " --k-rank 0", codes=(2,)),
    Case("leakcheck-threshold-above-1", LEAK + " --threshold 1.5", codes=(2,)),
    Case("leakcheck-mode-unknown", LEAK + " --mode fuzzy", codes=(2,)),
    Case("noise-from-one-run", "noise --from-runs {noise0} --qrels {qrels} --out {out}/n.json", codes=(2,)),
    Case("demo-scale-0", "demo --scale 0 --repeats 2 --out {out}", codes=(2,)),
    Case("demo-scale-negative", "demo --scale -1 --repeats 2 --out {out}", codes=(2,)),
]


@pytest.mark.parametrize("case", [c.param() for c in BAD_VALUES])
def test_bad_option_values(case, fctx):
    run_case(case, fctx)


BAD_REPO_VALUES = [
    Case("noise-repeats-1", "noise --config {config} --repeats 1 --out {out}/n.json", codes=(2,)),
    Case("archive-noise-repeats-1", "archive --config {config} --noise-repeats 1", codes=(2,)),
    Case("config-missing", "run --config {tmp}/nope.yml --out {out}", codes=(2,)),
]


@pytest.mark.parametrize("case", [c.param() for c in BAD_REPO_VALUES])
def test_bad_repo_option_values(case, rctx):
    run_case(case, rctx)


@pytest.mark.parametrize("command", ["run", "replay", "plan"])
def test_an_unreadable_base_ref_is_a_one_line_error(command, rctx):
    """`--base REF` whose REF does not exist: the gate must not silently proceed as if no --base
    had been given (it would compare the PR with whatever the fallback finds)."""
    run_case(Case(f"{command}-base-unreadable", f"{command} --config {{config}} --base no-such-ref",
                  codes=(2,), err_contains="--base no-such-ref: no such commit"), rctx)
    run_case(Case(f"{command}-base-option-like", f"{command} --config {{config}} --base=--output=x",
                  codes=(2,), err_contains="not a git revision"), rctx)
