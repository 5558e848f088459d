"""The few git calls the gate makes, each with ``-c safe.directory`` (in a Docker
action the workspace belongs to another uid, and git refuses it otherwise)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def _git(cwd: Path, *args: str, timeout: float = 30.0) -> subprocess.CompletedProcess:
    cwd = Path(cwd).resolve()
    return subprocess.run(
        ["git", "-c", f"safe.directory={cwd}", *args],
        cwd=cwd,
        capture_output=True,
        timeout=timeout,
        env=_clean_env(),
    )


def _clean_env() -> dict[str, str]:
    from gate.runners.environment import scrubbed_environment

    return scrubbed_environment()


def repo_root(cwd: Path) -> Path | None:
    try:
        proc = _git(cwd, "rev-parse", "--show-toplevel")
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    return Path(proc.stdout.decode().strip())


def head_commit(cwd: Path) -> str | None:
    return rev_parse(cwd, "HEAD")


def _is_revision(ref: str) -> bool:
    """A revision git cannot mistake for an option (``--output=...``) or split on whitespace."""
    return bool(ref) and not ref.startswith("-") and not any(c.isspace() or ord(c) < 32 for c in ref)


def rev_parse(cwd: Path, ref: str) -> str | None:
    if not _is_revision(ref):
        return None
    try:
        proc = _git(cwd, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.decode().strip() if proc.returncode == 0 else None


def repository_path(root: Path, path: Path) -> Path | None:
    """``path`` relative to the repository at ``root``, as named - the file itself, not where a
    symlink in the workspace points (the base's own retrieval/config.yml, not its target's).
    The folders above it may be symlinks (a workspace under /tmp -> /private/tmp)."""
    lexical = Path(os.path.normpath(os.path.abspath(path)))
    for base, candidate in ((Path(os.path.abspath(root)), lexical),
                            (Path(root).resolve(), lexical.parent.resolve() / lexical.name)):
        try:
            return candidate.relative_to(base)
        except ValueError:
            continue
    return None


def show_file(cwd: Path, ref: str, path: Path) -> bytes | None:
    """The content of ``path`` at ``ref``, or None when the commit or the file is not there."""
    if not _is_revision(ref):
        return None
    root = repo_root(cwd)
    if root is None:
        return None
    relative = repository_path(root, Path(path))
    if relative is None:
        return None
    try:
        proc = _git(root, "show", f"{ref}:{relative.as_posix()}")
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def changed_files(cwd: Path, base: str, head: str = "HEAD") -> list[str] | None:
    if not (_is_revision(base) and _is_revision(head)):
        return None
    try:
        proc = _git(cwd, "diff", "--name-only", base, head)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    return [line for line in proc.stdout.decode().splitlines() if line]


def changed_since(cwd: Path, base: str) -> list[str] | None:
    """Files the working tree changes against ``base``: committed or not, tracked or new
    (what a local ``run --base`` is judged on, as the Action's merge commit is against its base)."""
    if not _is_revision(base):
        return None
    try:
        diff = _git(cwd, "diff", "--name-only", "--no-renames", base)
        new = _git(cwd, "ls-files", "--others", "--exclude-standard", "--full-name")
    except (OSError, subprocess.TimeoutExpired):
        return None
    if diff.returncode != 0 or new.returncode != 0:
        return None
    names = [line for line in diff.stdout.decode().splitlines() if line]
    return names + [line for line in new.stdout.decode().splitlines() if line and line not in names]


def export_file(cwd: Path, ref: str, path: Path, target: Path) -> bool:
    """Write ``path`` as of ``ref`` to ``target``, streamed (a corpus may be hundreds of MB).
    False when the commit or the file is not there."""
    if not _is_revision(ref):
        return False
    root = repo_root(cwd)
    relative = repository_path(root, Path(path)) if root is not None else None
    if relative is None:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    try:
        with open(partial, "wb") as out:
            proc = subprocess.run(["git", "-c", f"safe.directory={root.resolve()}", "cat-file", "blob",
                                   f"{ref}:{relative.as_posix()}"], cwd=root, stdout=out, stderr=subprocess.PIPE,
                                  timeout=600, env=_clean_env())
    except (OSError, subprocess.TimeoutExpired):
        partial.unlink(missing_ok=True)
        return False
    if proc.returncode != 0:
        partial.unlink(missing_ok=True)
        return False
    os.replace(partial, target)
    return True
