"""What a run's verdict is measured against, read or digested before the first runner starts.

Every runner may run the PR's code (the candidate, its repeats, the grid and the sweep; a
baseline replay whose commit is unknown), and without a box of its own that code runs as the
gate's uid (see :mod:`gate.inputs.held`). So before the first one starts, ``run`` reads the
archived manifest and the base's retrieval config (:func:`choose_baseline`), streams the base's
corpus out of git into a folder of its own (:func:`baseline_corpus`), and digests every file a
check reads after a run: the gate config (the strata are re-read from it), the golden queries and
qrels, the strata and tuning files, the noise band, the archived baseline's files, the
candidate's corpus and the prompt files. :meth:`Held.check` then finds any of them changed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from gate.checks.prompts import prompt_files
from gate.inputs.config import Config, is_spec
from gate.inputs.golden import Golden
from gate.inputs.held import Held, hold_files
from gate.inputs.manifest import Manifest, referenced_files
from gate.inputs.query_ids import tuning_split
from gate.inputs.retrieval_config import RetrievalConfig
from gate.pipeline.baseline import BaseCorpus, BaselineChoice, baseline_corpus, choose_baseline, held_corpus


@dataclass(frozen=True)
class VerdictInputs:
    """Read before the first run: which baseline (the manifest and the base's config), the base's
    corpus as the leak check reads it (None: no leak check), and what to check after the runs."""

    choice: BaselineChoice
    base_corpus: BaseCorpus | None
    held: Held


def hold_verdict_inputs(config: Config, golden: Golden, retrieval: RetrievalConfig, base: str | None,
                        held_folder: Path, not_prompts: Sequence[Path] = ()) -> VerdictInputs:
    """Everything the verdict depends on, read (or digested) now, before any runner starts.
    ``held_folder``: the gate's own folder for the base's corpus; ``not_prompts``: the gate's
    folders, which no prompt glob scans."""
    choice = choose_baseline(config, base)
    # The tuning files are read (and a bad one refused at its first bad line) before any digest
    # reads them whole: a 20 GB file with a bad first line was digested for a minute first.
    tuning_split(config)
    candidate = golden.corpus(retrieval)
    base_corpus, held = None, Held()
    if config.leakage.enabled and candidate is not None and choice.config is not None:
        base_corpus, held = baseline_corpus(config, golden, choice, base, held_folder)
    if candidate is not None and (config.leakage.enabled or config.prompts):  # scanned after the runs
        held += held_corpus(candidate.path, candidate.record.id)
    held += hold_files((_name(config, path), path) for path in _yardstick_files(config, choice.manifest))
    if config.prompts:
        exclude = [config.workspace_root / ".retrieval-gate", *not_prompts]
        held += hold_files((_name(config, path), path)
                           for path in prompt_files(config.workspace_root, config.prompts, None, exclude))
    return VerdictInputs(choice, base_corpus, held)


def _yardstick_files(config: Config, manifest: Manifest | None) -> Iterator[Path]:
    """The yardstick's files (the base commit's copies on a PR): the config, golden files, strata,
    tuning split, noise band and archived baseline. Some are read into memory before the runs,
    some again after them (the strata from the config, the noise band): all are checked."""
    yield Path(config.path)
    for value in (config.golden.queries, config.golden.qrels, config.strata.assignments, config.tuning.queries,
                  config.tuning.holdout):
        if isinstance(value, str) and not is_spec(value):
            path = config.resolve(value)
            if path is not None and not path.is_dir():  # a BEIR folder is read once, into memory
                yield path
    noise = config.resolve(config.noise.file) if config.noise.file else None
    if noise is not None:
        yield noise  # absent or not: a band that appears after the runs is read as one
    if manifest is not None:
        yield manifest.manifest_path
        for name in sorted(referenced_files(manifest)):  # its run, values, config and noise band's runs
            if name and "/" not in name and name not in (".", ".."):  # others are refused where read
                yield manifest.folder / name


def _name(config: Config, path: Path) -> str:
    """A held file as an error line names it: relative to the workspace when it is there; a copy
    of the base commit's file by its own path, which the error names by the repository's path."""
    try:
        return Path(path).relative_to(config.workspace_root).as_posix()
    except ValueError:
        return str(path)
