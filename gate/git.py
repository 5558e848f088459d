"""The few git calls the gate makes, each with ``-c safe.directory`` (in a Docker
action the workspace belongs to another uid, and git refuses it otherwise)."""

from __future__ import annotations

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


def show_file(cwd: Path, ref: str, path: Path) -> bytes | None:
    """The content of ``path`` at ``ref``, or None when the commit or the file is not there."""
    if not _is_revision(ref):
        return None
    root = repo_root(cwd)
    if root is None:
        return None
    try:
        relative = Path(path).resolve().relative_to(root.resolve())
    except ValueError:
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
