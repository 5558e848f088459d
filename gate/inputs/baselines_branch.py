"""The archived baselines on the baselines branch, read as a series (``retrieval-gate history``).

The archive workflow commits each baseline folder to ``baselines/<sha>/`` on the branch
``retrieval-gate-baselines`` (:data:`gate.inputs.yardstick.BASELINES_BRANCH`). This module lists
those folders and reads, for each, only what a history needs: ``manifest.yml`` (strictly, as
:func:`gate.inputs.manifest.load_manifest` reads it), the archived retrieval config it checks
against its sha256, and the per-query values; never the run files, which are the bulk of a
baseline. Blobs are streamed through one ``git cat-file --batch`` process, one at a time.

A broken archive is not the end of a history: it is skipped, and the reason (one line naming
``<branch>:baselines/<sha>/manifest.yml`` and the problem) is kept for the page and stderr.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from gate.common import limits
from gate.common.errors import InputError
from gate.inputs import git
from gate.inputs.manifest import Manifest, load_manifest
from gate.inputs.yardstick import BASELINES_BRANCH, baselines_ref

_SHA = re.compile(r"^[0-9a-f]{7,64}$")
#: The per-query values file of one baseline may be this large (as Manifest.per_query_values reads it).
MAX_PER_QUERY_BYTES = 256 << 20


@dataclass(frozen=True)
class ArchivedBaseline:
    """One archived baseline: its folder's name (the commit it was archived on), the manifest,
    and the primary metric's value of every query."""

    folder: str
    manifest: Manifest
    values: Mapping[str, float]

    @property
    def commit(self) -> str:
        return self.manifest.git_commit or self.folder


@dataclass(frozen=True)
class BranchListing:
    """Where the baselines were read from: the ref, and the folder names below ``baselines/``."""

    branch: str
    ref: str
    folders: tuple[str, ...]


class BlobReader:
    """``git cat-file --batch`` of one ref: each blob asked for is read when it is asked for, and
    one larger than its limit is drained unread (memory stays bounded)."""

    def __init__(self, root: Path, ref: str):
        self.ref = ref
        self._proc = subprocess.Popen(["git", "cat-file", "--batch"], cwd=root, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                      env=git.environment(root))

    def __enter__(self) -> BlobReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                stream.close()
        self._proc.wait(timeout=30)

    def read(self, path: str, limit: int) -> bytes | None:
        """The blob at ``ref:path``; None when there is none. ValueError when it exceeds ``limit``."""
        stdin, stdout = self._proc.stdin, self._proc.stdout
        assert stdin is not None and stdout is not None  # both are pipes
        if "\n" in path:
            return None
        stdin.write(f"{self.ref}:{path}\n".encode("utf-8", "surrogateescape"))
        stdin.flush()
        header = stdout.readline().decode("utf-8", "replace").split()
        if len(header) != 3 or header[1] != "blob":
            return None  # "<name> missing", or a tree
        size = int(header[2])
        if size > limit:
            _drain(stdout, size + 1)
            raise ValueError(f"is {size} bytes, more than the {limit} a history reads")
        data = stdout.read(size)
        stdout.read(1)  # the newline after each blob
        return data


def _drain(stream: IO[bytes], count: int) -> None:
    while count > 0:
        chunk = stream.read(min(count, 1 << 20))
        if not chunk:
            return
        count -= len(chunk)


def list_baselines(workspace: Path, branch: str = BASELINES_BRANCH, *, token: str | None = None,
                   remote_url: str | None = None, warnings: list[str] | None = None) -> BranchListing | None:
    """The folders ``baselines/<sha>/`` on ``branch`` (the local branch, or origin's, fetched like
    the PR run fetches it when the checkout has neither). None when there is no such branch."""
    root = git.repo_root(workspace)
    if root is None:
        return None
    ref = baselines_ref(root, branch, token, remote_url, warnings if warnings is not None else [])
    if ref is None:
        return None
    proc = git.run(root, "ls-tree", "-z", "--name-only", f"{ref}:baselines")
    names = proc.stdout.decode("utf-8", "replace").split("\0") if proc.returncode == 0 else []
    return BranchListing(branch, ref, tuple(sorted(n for n in names if _SHA.match(n))))


_CREATED = re.compile(rb"^created:[ \t]*['\"]?([^'\"\r\n]*)", re.MULTILINE)


def newest_created(workspace: Path, listing: BranchListing, folders: list[str], last: int) -> list[str]:
    """The ``last`` of ``folders`` whose manifests were created last, oldest first, found from each
    manifest's ``created:`` line alone: parsing thousands of manifests to keep 200 took seconds per
    hundred. A manifest without a readable ``created:`` line sorts first (as an empty date)."""
    root = git.repo_root(workspace) or workspace
    keyed = []
    with BlobReader(root, listing.ref) as blobs:
        for folder in folders:
            try:
                text = blobs.read(f"baselines/{folder}/manifest.yml", limits.MAX_RECORD_FILE_BYTES)
            except ValueError:
                text = None
            found = _CREATED.search(text) if text else None
            keyed.append((found.group(1).decode("utf-8", "replace").strip() if found else "", folder))
    return [folder for _, folder in sorted(keyed)[-last:]]


def read_baselines(workspace: Path, listing: BranchListing, folders: list[str],
                   warnings: list[str]) -> Iterator[ArchivedBaseline]:
    """Each of ``folders`` (in that order) as an :class:`ArchivedBaseline`; a broken one is skipped
    and said in ``warnings``."""
    root = git.repo_root(workspace) or workspace
    with BlobReader(root, listing.ref) as blobs, tempfile.TemporaryDirectory(prefix="rg-history-") as scratch:
        for folder in folders:
            display = f"{listing.branch}:baselines/{folder}/manifest.yml"
            try:
                yield _read_one(blobs, folder, Path(scratch) / folder, display)
            except InputError as problem:
                warnings.append(f"{display}: {problem.message} (skipped)")
            except ValueError as problem:
                warnings.append(f"{display}: {problem} (skipped)")


def _read_one(blobs: BlobReader, folder: str, local: Path, display: str) -> ArchivedBaseline:
    local.mkdir(parents=True, exist_ok=True)
    text = blobs.read(f"baselines/{folder}/manifest.yml", limits.MAX_RECORD_FILE_BYTES)
    if text is None:
        raise InputError(display, None, "no manifest.yml in this folder")
    (local / "manifest.yml").write_bytes(text)
    config_name = _config_file_name(text)
    config = blobs.read(f"baselines/{folder}/{config_name}", limits.MAX_RECORD_FILE_BYTES) if config_name else None
    if config_name and config is not None:
        (local / config_name).write_bytes(config)
    try:
        manifest = load_manifest(local / "manifest.yml")
    except InputError as error:
        raise InputError(display, None, error.message) from None
    data = blobs.read(f"baselines/{folder}/{manifest.per_query_file}", MAX_PER_QUERY_BYTES)
    if data is None:
        raise InputError(display, None, f"its per-query values file {manifest.per_query_file} is missing")
    (local / manifest.per_query_file).write_bytes(data)
    try:
        values = manifest.per_query_values()
    except InputError as error:
        raise InputError(display, None, error.message) from None
    finally:
        for item in local.iterdir():
            item.unlink()
    return ArchivedBaseline(folder, manifest, _metric_values(values, manifest.metric, display))


def _config_file_name(manifest_text: bytes) -> str | None:
    """The archived config's data file name, found before the manifest is parsed (load_manifest
    reads it from the folder); the manifest's own check refuses any name that is not a data file."""
    found = re.search(rb"^\s+file:\s*(config-[0-9a-f]{16,64}\.json)\s*$", manifest_text, re.MULTILINE)
    return found.group(1).decode() if found else None


def _metric_values(values: object, metric: str, display: str) -> dict[str, float]:
    """The primary metric's per-query values, each a finite number in [0, 1]."""
    if not isinstance(values, Mapping) or not isinstance(values.get(metric), Mapping):
        raise InputError(display, None, f"its per-query values have no '{metric}' (the manifest's metric)")
    out: dict[str, float] = {}
    for query_id, value in values[metric].items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
            raise InputError(display, None, f"per-query value of {metric} for query '{str(query_id)[:60]}' is not "
                                            f"a number in [0, 1]: {str(value)[:30]}")
        out[str(query_id)] = float(value)
    if not out:
        raise InputError(display, None, f"its per-query values of {metric} are empty")
    return out
