"""The gate's git calls against a checkout the PR's code has tampered with.

In the own-stack workflow the PR's code runs in a step before the action, in the same
workspace, and with the command runner it runs inside the gate's container: either way it can
write the checkout's .git (config, hooks, replace refs, grafts) and the runner's home. None of
that may reach the token, run code in the gate's git processes, or change what git tells the
gate about a commit.
"""

from __future__ import annotations

import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from gate.inputs import git
from tests.container.git_http import GitRemote, http_backend
from tests.support.action_world import _git
from tests.support.loopback import LoopbackHTTPServer, loopback_address

TOKEN = "ghs_hardeningToken0123456789"


class _Trap:
    """An HTTP server that records every request (and its Authorization header) and answers 404."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []
        trap = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                trap.seen.append((self.path, self.headers.get("Authorization")))
                self.send_error(404)

            do_POST = do_CONNECT = do_GET

            def log_message(self, *args: object) -> None:
                pass

        self.server = LoopbackHTTPServer((loopback_address(), 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = "http://{}:{}".format(*self.server.server_address[:2])

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture()
def world(tmp_path, monkeypatch):
    if http_backend() is None:
        pytest.skip("git http-backend is not installed")
    src = tmp_path / "src"
    src.mkdir()
    _git(src, "init", "-q", "-b", "main")
    (src / "config.yml").write_text("boost: 1.0\n")
    _git(src, "add", "-A")
    _git(src, "commit", "-qm", "base")
    _git(src, "branch", "retrieval-gate-baselines")
    remote_root = tmp_path / "remote"
    (remote_root / "o").mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(src), str(remote_root / "o" / "r.git")], check=True)
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", "--single-branch", str(src), str(work)], check=True)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    trap = _Trap()
    with GitRemote(remote_root, private={"o/r.git": TOKEN}) as remote:
        yield src, work, home, remote, trap
    trap.close()


def test_a_poisoned_checkout_and_home_never_see_the_token_or_run_a_hook(world, tmp_path):
    src, work, home, remote, trap = world
    url = remote.url("o/r.git")
    leaked = tmp_path / "hook-saw.txt"
    hooks = work / ".git" / "evil-hooks"
    hooks.mkdir()
    for name in ("reference-transaction", "post-checkout", "fsmonitor-watchman", "post-merge"):
        hook = hooks / name
        hook.write_text(f"#!/bin/sh\nenv >> '{leaked}'\n")
        hook.chmod(0o755)
    fsmonitor = tmp_path / "fsmonitor.sh"
    fsmonitor.write_text(f"#!/bin/sh\nenv >> '{leaked}'\n")
    fsmonitor.chmod(0o755)
    for where in (["-C", str(work)], ["--global"]):
        subprocess.run(["git", *(["config", "--global"] if where == ["--global"] else [*where, "config"]),
                        f"url.{trap.url}/.insteadOf", url], check=True, env={**os.environ, "HOME": str(home)})
    for key, value in (("core.hooksPath", str(hooks)), ("core.fsmonitor", str(fsmonitor)),
                       ("http.proxy", trap.url)):
        _git(work, "config", key, value)
    done = git.fetch(work, "+refs/heads/retrieval-gate-baselines:refs/remotes/origin/retrieval-gate-baselines",
                     token=TOKEN, url=url)
    assert done.returncode == 0, done.stderr
    assert _git(work, "rev-parse", "refs/remotes/origin/retrieval-gate-baselines") == _git(src, "rev-parse", "HEAD")
    assert trap.seen == [], "a request went where the checkout's config pointed"
    assert any(authorized for _, _, authorized in remote.requests), remote.requests
    assert not leaked.exists(), leaked.read_text()[:500]
    # The gate's other git calls run no hook or fsmonitor either.
    git.run(work, "status", "--porcelain")
    git.run(work, "update-ref", "refs/heads/probe", "HEAD")
    assert not leaked.exists()


def test_replace_refs_and_grafts_do_not_change_what_a_commit_holds(world):
    src, work, home, remote, trap = world
    base = _git(work, "rev-parse", "HEAD")
    (work / "config.yml").write_text("boost: 2.0\n")
    _git(work, "commit", "-qam", "the PR")
    head = _git(work, "rev-parse", "HEAD")
    # The PR's code forges the base's config (a replace ref) and the PR's parent (a graft).
    forged = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=work, input="boost: 99.0\n",
                            capture_output=True, text=True, check=True).stdout.strip()
    original = _git(work, "rev-parse", f"{base}:config.yml")
    _git(work, "replace", original, forged)
    (work / ".git" / "info").mkdir(exist_ok=True)
    (work / ".git" / "info" / "grafts").write_text(f"{head}\n")  # HEAD would have no parent
    assert subprocess.run(["git", "show", f"{base}:config.yml"], cwd=work, capture_output=True,
                          text=True).stdout == "boost: 99.0\n"  # what plain git now says
    assert git.show_file(work, base, work / "config.yml") == b"boost: 1.0\n"
    assert git.rev_parse(work, "HEAD^1") == base


def test_a_baselines_branch_planted_in_the_checkout_is_not_read(world, tmp_path):
    """The PR's code makes refs/remotes/origin/retrieval-gate-baselines (and a local branch)
    with a forged manifest for the base. With the repository's own address the gate fetches the
    branch from there, into a ref of its own, and reads the genuine manifest."""
    from gate.inputs.yardstick import baseline_from_branch

    src, work, home, remote, trap = world
    base = _git(work, "rev-parse", "HEAD")

    def branch_with(repo: Path, text: str) -> str:
        _git(repo, "checkout", "-q", "--orphan", "baselines-tmp")
        _git(repo, "rm", "-rq", "--cached", ".")
        (repo / "baselines" / base).mkdir(parents=True)
        (repo / "baselines" / base / "manifest.yml").write_text(text)
        _git(repo, "add", f"baselines/{base}/manifest.yml")
        _git(repo, "commit", "-qm", text)
        sha = _git(repo, "rev-parse", "HEAD")
        _git(repo, "checkout", "-q", "-f", "main")
        return sha

    genuine = branch_with(src, "GENUINE\n")
    subprocess.run(["git", "push", "-q", "-f", str(remote.root / "o" / "r.git"),
                    f"{genuine}:refs/heads/retrieval-gate-baselines"], cwd=src, check=True)
    forged = branch_with(work, "FORGED\n")
    _git(work, "update-ref", "refs/remotes/origin/retrieval-gate-baselines", forged)
    _git(work, "update-ref", "refs/heads/retrieval-gate-baselines", forged)
    folder = tmp_path / "manifest"
    found = baseline_from_branch(work, base, folder, token=TOKEN, remote_url=remote.url("o/r.git"))
    assert found == f"retrieval-gate-baselines:baselines/{base}"
    assert (folder / "manifest.yml").read_text() == "GENUINE\n"
