"""Commit an archived baseline folder to ``baselines/<sha>/`` of the baselines branch, as the
archive workflow does, without touching the working tree or the checked-out branch (git's
plumbing, through a private index file): the demo builds its baselines branch this way."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from gate.inputs.yardstick import BASELINES_BRANCH


def _git(repo: Path, env: Mapping[str, str], *args: str, stdin: bytes | None = None) -> str:
    proc = subprocess.run(["git", *args], cwd=repo, input=stdin, capture_output=True, env=dict(env))
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout.decode().strip()


def commit_baseline(repo: Path, sha: str, folder: Path, env: Mapping[str, str], *,
                    branch: str = BASELINES_BRANCH) -> str:
    """Add every file of ``folder`` (an archived baseline; dot files left out) as
    ``baselines/<sha>/`` on ``branch`` (created when missing) in a new commit; returns its sha.
    ``env`` carries git's identity and dates."""
    ref = f"refs/heads/{branch}"
    parent = subprocess.run(["git", "rev-parse", "--verify", "-q", ref], cwd=repo, capture_output=True,
                            env=dict(env)).stdout.decode().strip()
    with tempfile.TemporaryDirectory(prefix="rg-index-") as scratch:
        index = {**env, "GIT_INDEX_FILE": os.path.join(scratch, "index")}
        if parent:
            _git(repo, index, "read-tree", parent)
        for item in sorted(folder.iterdir()):
            if item.name.startswith(".") or not item.is_file():
                continue
            blob = _git(repo, index, "hash-object", "-w", "--", str(item))
            _git(repo, index, "update-index", "--add", "--cacheinfo", f"100644,{blob},baselines/{sha}/{item.name}")
        tree = _git(repo, index, "write-tree")
    commit = _git(repo, env, "commit-tree", tree, *(["-p", parent] if parent else []),
                  "-m", f"retrieval-gate baseline for {sha[:12]}")
    _git(repo, env, "update-ref", ref, commit, *([parent] if parent else []))
    return commit
