"""The commensurable baseline: the archived run reused, replayed or reconstructed, and the
corpus it was run on."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gate.checks.commensurability import (
    Incommensurable,
    ResolvedBaseline,
    base_config_from_git,
    reconstruct,
    resolve_from_manifest,
)
from gate.common.errors import name_copies_by_origin
from gate.evaluation.measures import Measure
from gate.inputs import git
from gate.inputs.config import Config, is_spec
from gate.inputs.fingerprint import corpus_fingerprint
from gate.inputs.golden import CorpusSnapshot, Golden
from gate.inputs.held import Held, HeldFile, hold_files, hold_tree
from gate.inputs.manifest import Manifest, load_manifest
from gate.inputs.readers.beir import beir_corpus
from gate.inputs.readers.corpus import is_file_tree
from gate.inputs.retrieval_config import RetrievalConfig
from gate.pipeline.stack import commit_code, environment_files, runner_queries_path
from gate.runs.code import CodeIdentity
from gate.runs.produce import RunProducer


@dataclass(frozen=True)
class BaselineChoice:
    """Which baseline a run is measured against, decided from files alone before anything runs:
    the archived manifest (when there is one) and the base commit's retrieval config (with a
    base). The archived manifest is the baseline unless the base commit's config is not its."""

    manifest: Manifest | None
    base_config: RetrievalConfig | None

    @property
    def archived(self) -> Manifest | None:
        """The manifest when it is the baseline (reused, rescored or replayed), else None."""
        if self.manifest is not None and (self.base_config is None
                                          or self.base_config.sha256 == self.manifest.config_sha256):
            return self.manifest
        return None

    @property
    def config(self) -> RetrievalConfig | None:
        """The retrieval config the baseline is a run of; None when there is no baseline to be had."""
        return self.archived.config if self.archived is not None else self.base_config


def choose_baseline(config: Config, base: str | None) -> BaselineChoice:
    """The archived manifest and the base commit's retrieval config, read before any run."""
    manifest_path = config.resolve(config.manifest)
    retrieval_path = config.here(config.retrieval_config)
    assert manifest_path is not None and retrieval_path is not None  # here() and resolve() of a str are Paths
    manifest = load_manifest(manifest_path) if manifest_path.exists() else None
    base_config = None
    if base is not None:
        base_config = base_config_from_git(config.workspace_root, base, retrieval_path)
    return BaselineChoice(manifest, base_config)


def resolve_baseline(
    config: Config,
    golden: Golden,
    measures: Sequence[Measure],
    primary: str,
    producer: RunProducer,
    base: str | None,
    candidate_code: CodeIdentity | None = None,
    choice: BaselineChoice | None = None,
) -> ResolvedBaseline:
    """The commensurable baseline, or :class:`Incommensurable`. A baseline that must be run
    (replayed, reconstructed) runs from a checkout of its own commit: its code, not the PR's.
    ``choice``: :func:`choose_baseline`'s, when the caller read it before (before any run)."""
    queries_path = runner_queries_path(golden, producer.work_dir)
    if choice is None:
        choice = choose_baseline(config, base)
    manifest, base_config = choice.manifest, choice.base_config
    if choice.archived is not None:
        return resolve_from_manifest(choice.archived, golden, measures, primary, config.golden.rel, producer,
                                     queries_path, environment_files(config),
                                     code=commit_code(config, choice.archived.git_commit, producer.runs_dir),
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


@dataclass(frozen=True)
class BaseCorpus:
    """The corpus the baseline indexed, as the leak check reads it (None: unknown, every leak
    counts as new), its fingerprint, how it was read, and what the leak check's progress line
    says of it (when it cannot be read)."""

    path: str | None
    sha256: str | None
    how: str
    note: str | None = None


def baseline_corpus(config: Config, golden: Golden, choice: BaselineChoice, base: str | None,
                    held_folder: Path) -> tuple[BaseCorpus, Held]:
    """The corpus the baseline indexed, as of the baseline's commit, and what to check of it
    after the runs. Read before any run: the PR's code, running as the gate's uid, can rewrite
    git's objects (a forged loose object, and ``git cat-file`` hands out the PR's corpus as the
    base's).

    Read from the workspace, a chunk the PR adds to the same file would count as already in the
    baseline's corpus (a planted leak tagged "both"). So the file is streamed out of git at the
    base commit (or the archive's commit) into ``held_folder``, the gate's own temporary folder,
    its bytes checked against git's id and digested as they are written; a snapshot outside git
    is the workspace's file only when its fingerprint is still the one the manifest recorded.
    Otherwise the baseline's corpus is unknown and every leak counts as new.
    """
    snapshot = golden.corpus(choice.config)
    if snapshot is None:
        return BaseCorpus(None, None, "the baseline indexes no corpus"), Held()
    if is_spec(snapshot.path):
        return BaseCorpus(snapshot.path, snapshot.record.sha256, "an ir_datasets corpus (fixed)"), Held()
    manifest = choice.archived
    commit = base or (manifest.git_commit if manifest is not None else None)
    path = Path(snapshot.path)
    root = git.repo_root(config.workspace_root)
    inside = None if root is None else git.repository_path(root, path)
    if commit is not None and root is not None and inside is not None:
        copy = held_folder / commit[:12]
        # An error about the copy names the file as the repository does, and says whose copy it is.
        name_copies_by_origin(copy, f"the gate's copy as of commit {commit[:12]}, made before any run")
        if is_file_tree(path):  # a folder of files: the folder as of that commit
            target = copy / inside
            tree = git.export_tree(config.workspace_root, commit, path, target)
            held = _held_export(tree, target)
        else:
            file = path / "corpus.jsonl" if path.is_dir() else path
            target = copy / inside / "corpus.jsonl" if path.is_dir() else copy / inside
            one = git.export_file(config.workspace_root, commit, file, target)
            held = _held_export(None if one is None else (one,), None)
        if held is not None:
            return BaseCorpus(str(target), corpus_fingerprint(target).sha256, f"as of commit {commit[:12]}"), held
    return _not_from_git(snapshot, manifest, outside=root is None or inside is None)


def _not_from_git(snapshot: CorpusSnapshot, manifest: Manifest | None, *, outside: bool) -> tuple[BaseCorpus, Held]:
    """The baseline's corpus when git cannot give it as of the baseline's commit."""
    recorded = manifest.corpus.sha256 if manifest is not None and manifest.corpus else None
    if recorded is not None and recorded == snapshot.record.sha256:
        return (BaseCorpus(snapshot.path, snapshot.record.sha256,
                           "outside git, unchanged since the archive (same fingerprint)"),
                held_corpus(snapshot.path, snapshot.record.id))
    if recorded is None and outside:
        # Outside the repository and never archived: a pull request cannot change this file (its
        # diff holds no byte of it), so it is the baseline's corpus too; counting its old leaks
        # as new would fail a PR that never touched it. The held digest still catches a run
        # that writes to it.
        return (BaseCorpus(snapshot.path, snapshot.record.sha256,
                           "outside the repository and not archived: the same file both sides read"),
                held_corpus(snapshot.path, snapshot.record.id))
    why = ("differs from the archived fingerprint" if recorded is not None
           else "has no archived fingerprint to compare with")
    note = (f"leakage: the baseline's corpus {snapshot.record.id} cannot be read as of its commit and {why}: "
            "every leak counts as new")
    return BaseCorpus(None, None, "not readable as of the baseline's commit: every leak counts as new", note), Held()


def _held_export(exported: tuple[git.ExportedBlob, ...] | None, tree: Path | None) -> Held | None:
    """The files written out of git, with the digests taken as they were written (a folder of
    files with its listing); None when nothing was."""
    if exported is None:
        return None
    if tree is None:
        return Held(tuple(HeldFile(str(blob.path), blob.path, blob.sha256) for blob in exported))
    return hold_tree(str(tree), tree, {blob.path.relative_to(tree).as_posix(): blob.sha256 for blob in exported})


def held_corpus(spec: str, name: str) -> Held:
    """A corpus in the workspace, as the leak check reads it after the runs: its file, the corpus
    file of a BEIR folder, or every file of a folder of files (nothing for an irds: id)."""
    if is_spec(spec):
        return Held()
    path = Path(spec)
    if is_file_tree(path):
        return hold_tree(name, path)
    if path.is_dir():
        return hold_files([(f"{name.rstrip('/')}/{beir_corpus(path).name}", beir_corpus(path))])
    return hold_files([(name, path)])
