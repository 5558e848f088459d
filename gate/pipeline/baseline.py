"""The commensurable baseline: the archived run reused, replayed or reconstructed, and the
corpus it was run on."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gate.checks.commensurability import (
    Incommensurable,
    ResolvedBaseline,
    base_config_from_git,
    reconstruct,
    resolve_from_manifest,
)
from gate.evaluation.measures import Measure
from gate.inputs import git
from gate.inputs.config import Config, is_spec
from gate.inputs.fingerprint import corpus_fingerprint
from gate.inputs.golden import Golden
from gate.inputs.manifest import load_manifest
from gate.inputs.readers.corpus import is_file_tree
from gate.pipeline.stack import Progress, commit_code, environment_files, runner_queries_path, work_dir_of
from gate.runs.code import CodeIdentity
from gate.runs.produce import RunProducer


def resolve_baseline(
    config: Config,
    golden: Golden,
    measures: Sequence[Measure],
    primary: str,
    producer: RunProducer,
    base: str | None,
    candidate_code: CodeIdentity | None = None,
) -> ResolvedBaseline:
    """The commensurable baseline, or :class:`Incommensurable`. A baseline that must be run
    (replayed, reconstructed) runs from a checkout of its own commit: its code, not the PR's."""
    queries_path = runner_queries_path(golden, producer.work_dir)
    manifest_path = config.resolve(config.manifest)
    retrieval_path = config.here(config.retrieval_config)
    assert manifest_path is not None and retrieval_path is not None  # here() and resolve() of a str are Paths
    manifest = load_manifest(manifest_path) if manifest_path.exists() else None
    base_config = None
    if base is not None:
        base_config = base_config_from_git(config.workspace_root, base, retrieval_path)
    if manifest is not None and (base_config is None or base_config.sha256 == manifest.config_sha256):
        return resolve_from_manifest(manifest, golden, measures, primary, config.golden.rel, producer,
                                     queries_path, environment_files(config),
                                     code=commit_code(config, manifest.git_commit, producer.runs_dir),
                                     candidate_code=candidate_code)
    if manifest is None:
        reason = f"no archived manifest at {config.manifest}"
    else:
        assert base_config is not None  # the manifest went unused: the base commit's config is not its config
        reason = (f"the archived manifest's retrieval config ({manifest.config_sha256[:12]}) is not the base "
                  f"commit's ({base_config.sha256[:12]})")
    if base is None:
        raise Incommensurable("no_baseline", f"no baseline: {reason}, and no base commit was given to "
                                             "reconstruct one from (run --base REF)")
    if base_config is None:  # the base commit, or its retrieval config, cannot be read
        raise Incommensurable("no_baseline", f"no baseline: {reason}, and the base commit {base} (or its "
                                             f"{config.retrieval_config}) cannot be read")
    return reconstruct(base_config, base, golden, measures, primary, config.golden.rel, producer, queries_path,
                       reason, code=commit_code(config, base, producer.runs_dir), candidate_code=candidate_code)


def baseline_corpus(config: Config, golden: Golden, baseline: ResolvedBaseline, base: str | None,
                    progress: Progress) -> tuple[str | None, str | None, str]:
    """The corpus the baseline indexed, as of the baseline's commit: (path, sha256, how).

    Read from the workspace, a chunk the PR adds to the same file would count as already in the
    baseline's corpus (a planted leak tagged "both"). So the file comes from git at the base
    commit (or the archive's commit); a snapshot outside git is the workspace's file only when
    its fingerprint is still the one the manifest recorded. Otherwise (None, None, why): the
    baseline's corpus is unknown and every leak counts as new.
    """
    snapshot = golden.corpus(baseline.config)
    if snapshot is None:
        return None, None, "the baseline indexes no corpus"
    if is_spec(snapshot.path):
        return snapshot.path, snapshot.record.sha256, "an ir_datasets corpus (fixed)"
    commit = base or (baseline.manifest.git_commit if baseline.manifest is not None else None)
    path = Path(snapshot.path)
    if commit is not None and git.repo_root(config.workspace_root) is not None:

        if is_file_tree(path):  # a folder of files: the folder as of that commit
            target = work_dir_of(config) / "base-corpus" / commit[:12] / (path.name or "corpus")
            exported = git.export_tree(config.workspace_root, commit, path, target) is not None
        else:
            file = path / "corpus.jsonl" if path.is_dir() else path
            target = work_dir_of(config) / "base-corpus" / commit[:12] / file.name
            exported = git.export_file(config.workspace_root, commit, file, target) is not None
        if exported:

            return str(target), corpus_fingerprint(target).sha256, f"as of commit {commit[:12]}"
    recorded = baseline.manifest.corpus.sha256 if baseline.manifest is not None and baseline.manifest.corpus else None
    if recorded is not None and recorded == snapshot.record.sha256:
        return snapshot.path, snapshot.record.sha256, "outside git, unchanged since the archive (same fingerprint)"
    progress(f"leakage: the baseline's corpus {snapshot.record.id} cannot be read as of its commit and differs from "
             "the archived fingerprint: every leak counts as new")
    return None, None, "not readable as of the baseline's commit: every leak counts as new"
