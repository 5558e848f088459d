"""``retrieval-gate plan``: every run the gate will ask for, for a stack that produces its own runs."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate.checks.commensurability import (
    archived_missing,
    base_config_from_git,
    input_differences,
    run_request,
)
from gate.common.errors import InputError
from gate.inputs import git
from gate.inputs.config import Config, load_config
from gate.inputs.golden import load_golden
from gate.inputs.manifest import Manifest, load_manifest
from gate.inputs.readers.timings import timings_path_for
from gate.inputs.retrieval_config import RetrievalConfig, config_diff, load_retrieval_config
from gate.inputs.yardstick import BASELINES_BRANCH, baseline_from_branch, fetch_archived_commit, load_yardstick
from gate.pipeline.attribute import attribution_applies, grid_cells, grid_factors
from gate.pipeline.repeat_runs import planned_candidate_runs
from gate.pipeline.stack import (
    check_base,
    check_config,
    code_under_test,
    commit_code,
    make_producer,
    runner_queries_path,
    work_dir_of,
)
from gate.pipeline.sweep import sweep_cells, swept_changes
from gate.runs.code import CodeIdentity
from gate.runs.isolation import held_secret


def plan_pull_request(config_path: Path, runs_dir: Path | None, base: str,
                      env: Mapping[str, str] | None = None, noise_repeats: int = 0,
                      sweep: bool = False, warnings: list[str] | None = None) -> list[PlannedRun]:
    """``plan`` as the gate will judge the PR: the yardstick (gate config, runner, golden set,
    manifest) as of ``base``, and the base's archived baseline looked up on the baselines branch
    when the checkout has none - so every key is the one the gate step will ask for. The base's
    golden files go to the work folder (the step that produces the runs reads them there).

    A baselines branch that cannot be read (a private repository and no ``GITHUB_TOKEN``) is
    a line in ``warnings`` saying what was planned instead: the Action, with its token, will
    find the archived baseline and ask for other runs than the ones planned."""
    # The token of a `retrieval-gate plan` is held apart from os.environ (gate.runs.isolation).
    token = held_secret("GITHUB_TOKEN") if env is None else env.get("GITHUB_TOKEN")
    env = os.environ if env is None else env
    workspace = load_config(config_path)
    check_base(workspace, base)
    changed = git.changed_since(workspace.workspace_root, base)
    overlay = work_dir_of(workspace) / "yardstick"
    if overlay.exists():

        shutil.rmtree(overlay)
    overlay.mkdir(parents=True)
    yard = load_yardstick(Path(config_path), base, overlay, changed)
    config = yard.config
    manifest = config.resolve(config.manifest)
    assert manifest is not None  # resolve() of a str is a Path
    unread: list[str] = []
    if not manifest.exists():
        baseline_from_branch(config.workspace_root, git.rev_parse(config.workspace_root, base) or base, manifest.parent,
                             token=token, remote_url=git.repository_url(env), warnings=unread)
    notes: list[str] = []
    fetch_archived_commit(config.workspace_root, manifest, token=token,
                          remote_url=git.repository_url(env), warnings=notes)
    planned = plan(config, runs_dir, base, noise_repeats, sweep)
    if warnings is not None:
        warnings.extend(unread_branch_warning(note, planned, base) for note in unread)
        warnings.extend(notes)
    return planned


def unread_branch_warning(note: str, planned: list[PlannedRun], base: str) -> str:
    """The warning for a baselines branch that could not be read (``note``: why, as
    gate.inputs.yardstick says it), naming what the plan holds instead of the archived baseline."""
    found = re.search(r"could not be fetched \((.*)\): the baseline", note)
    why = found.group(1) if found else note
    instead = ("a baseline reconstruction from the base commit " + base[:12]
               if any(run.purpose == "baseline reconstruction" for run in planned) else "no baseline run")
    return (f"plan cannot read the {BASELINES_BRANCH} branch ({why}): it planned {instead} instead of the archived "
            "baseline. A private repository needs the token in plan's environment "
            "(env: GITHUB_TOKEN: ${{ github.token }} on the step that runs it)")


@dataclass(frozen=True)
class PlannedRun:
    purpose: str
    key: str
    config_file: str
    queries: str
    corpus: str | None
    output: str
    needed: bool
    why: str
    # The commit whose code must produce the run (a baseline replayed or reconstructed is
    # measured with the baseline's code); None: the workspace, the PR's code.
    code_commit: str | None = None
    repeat: int = 0  # a noise repeat's number (1..N), 0 for every other run
    seed: int = 0  # the seed the runner is given for it ({seed}, RETRIEVAL_GATE_SEED)

    @property
    def timings(self) -> str:
        """Where the step that produces the run may write its timings sidecar (docs: Runners)."""
        return timings_path_for(self.output)

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "timings": self.timings}


def plan(config: Config, runs_dir: Path | None = None, base: str | None = None,
         noise_repeats: int = 0, sweep: bool = False) -> list[PlannedRun]:
    """Every run the gate needs for this PR, with the key an earlier step must name it by; with
    ``noise_repeats`` N, also the N identical runs of the config that ``archive --noise-repeats N``
    (or ``noise --repeats N``) measures the noise band from; with ``sweep``, every cell of the
    config's ``sweep.params`` grid (``retrieval-gate sweep`` then finds them in the runs folder).
    A run two purposes share (a sweep cell that is the candidate's config) is listed once."""
    check_config(config)
    check_base(config, base)
    planner = _Planner(config, runs_dir)
    retrieval_path = config.here(config.retrieval_config)
    assert retrieval_path is not None  # here() of a str is a Path
    baseline_config, baseline_manifest = planner.baseline(base, retrieval_path)
    candidate = load_retrieval_config(retrieval_path)
    planner.add("candidate", candidate, True, "the PR's config", planner.code)
    planner.candidate_repeats(candidate, planned_candidate_runs(config, baseline_manifest))
    if baseline_config is not None:
        planner.grid(baseline_config, candidate)
    planner.sweep(baseline_config, candidate, sweep)
    for repeat in range(1, noise_repeats + 1):  # the seeds measure_noise gives each repeat
        planner.add(f"noise repeat {repeat}/{noise_repeats}", candidate, True, "an identical run for the noise band",
                    planner.code, repeat=repeat, seed=config.noise.base_seed + repeat)
    return planner.planned


class _Planner:
    """The runs planned so far, each key once, and how each purpose adds its runs."""

    def __init__(self, config: Config, runs_dir: Path | None) -> None:
        self.config = config
        self.runs_dir = runs_dir
        self.golden = load_golden(config)
        self.producer = make_producer(config, runs_dir, lambda message: None)
        self.queries_path = runner_queries_path(self.golden, self.producer.work_dir)
        self.runs_folder = runs_dir or Path(".retrieval-gate/runs")
        try:
            self.runs_folder.mkdir(parents=True, exist_ok=True)  # ready for the step that produces them
        except OSError as error:
            raise InputError(str(self.runs_folder), None,
                             f"cannot create the runs folder: {error.strerror or error}") from None
        self.planned: list[PlannedRun] = []
        self.code = code_under_test(config, runs_dir)

    def add(self, purpose: str, retrieval: RetrievalConfig, needed: bool, why: str, code: CodeIdentity | None,
            repeat: int = 0, seed: int = 0) -> None:
        request = run_request(purpose, retrieval, self.golden, self.queries_path, code=code, repeat=repeat,
                              seed=seed)
        key = self.producer.key(request)
        if any(entry.key == key for entry in self.planned):
            return
        if code is not None and code.commit is not None and code.known:
            why += f"; from the code of commit {code.commit[:12]}"
        commit = code.commit if code is not None and code.root is None else None
        self.planned.append(PlannedRun(purpose, key, str(self.producer.config_file(request, key)),
                                       self.queries_path, request.corpus, str(self.runs_folder / f"{key}.run"),
                                       needed, why, commit, repeat, seed))

    def baseline(self, base: str | None, retrieval_path: Path) -> tuple[RetrievalConfig | None, Manifest | None]:
        """The baseline's run: the archived one replayed (needed only when the corpus changed or
        queries are missing), or the base's config reconstructed. Returns the baseline's config
        and the manifest whose stored repeats are the baseline's."""
        config = self.config
        manifest_path = config.resolve(config.manifest)
        assert manifest_path is not None  # resolve() of a str is a Path
        manifest = load_manifest(manifest_path) if manifest_path.exists() else None
        base_config = base_config_from_git(config.workspace_root, base, retrieval_path) if base else None
        if manifest is not None and (base_config is None or base_config.sha256 == manifest.config_sha256):
            differences = {d.input for d in input_differences(manifest, self.golden, config.golden.rel)}
            covered = not archived_missing(manifest, manifest.load_run(), self.golden.universe.query_ids)
            needed = "corpus" in differences or not covered
            why = ("the corpus changed" if "corpus" in differences else
                   "current queries are missing from the archived lists" if not covered else
                   "not needed: the archived lists are reused or re-scored")
            self.add("baseline replay", manifest.config, needed, why,
                     commit_code(config, manifest.git_commit, self.runs_dir))
            return manifest.config, manifest
        if base_config is not None:
            self.add("baseline reconstruction", base_config, True, "no usable archived manifest",
                     commit_code(config, base, self.runs_dir))
            return base_config, None
        return None, None

    def candidate_repeats(self, candidate: RetrievalConfig, total: int) -> None:
        """The requests run_gate's reruns make (same purpose, repeat and seed)."""
        adaptive = self.config.noise.rerun == "adaptive"
        why = ("a rerun of the candidate, read when run-to-run noise leaves the first look undecided "
               "(noise.candidate_runs)" if adaptive else "a run of the candidate, averaged "
               "per query (noise.candidate_runs, noise.rerun always)")
        for number in range(2, total + 1):
            self.add(f"candidate repeat {number}/{total}", candidate, True, why, self.code, repeat=number,
                     seed=self.config.noise.base_seed + number)

    def grid(self, baseline_config: RetrievalConfig, candidate: RetrievalConfig) -> None:
        """The inner cells of the attribution grid (its corners are the baseline and the candidate)."""
        factors = grid_factors(self.config, config_diff(baseline_config, candidate))
        if attribution_applies(self.config, factors):
            for levels, label, cell_config in grid_cells(self.config, baseline_config, candidate, factors):
                if len(set(levels)) > 1:
                    self.add(f"grid cell {label}", cell_config, True, "attribution of the bundled change", self.code)

    def sweep(self, baseline_config: RetrievalConfig | None, candidate: RetrievalConfig, asked: bool) -> None:
        """Every cell of the sweep grid, when asked for or when the PR changes a swept parameter."""
        config = self.config
        if asked and not config.sweep.params:
            raise config.key_error("sweep.params", "plan --sweep: no sweep grid configured")
        changed_swept = swept_changes(config, [c.path for c in config_diff(baseline_config, candidate)]) \
            if baseline_config is not None else ()
        if asked or changed_swept:
            why = ("a cell of the sweep grid" if not changed_swept
                   else f"a cell of the sweep grid (this PR changes {', '.join(changed_swept)})")
            for cell in sweep_cells(config.sweep.params, candidate, config):
                self.add(f"sweep cell {cell.label}", cell.config, True, why, self.code)
