"""The Action's world for end-to-end tests: a git checkout (a base commit with the gate config,
golden set and archived baseline; a PR head merged on top, as actions/checkout makes it), the
event payload, and entrypoint.py run as the runner starts it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.publishing.github.fake_github import FakeGitHub
from tests.publishing.github.payloads import pull_request_event
from tests.shared_data import REPO
from tests.support import bounded
from tests.support.small_world import small_world as _world

TOKEN = "ghs_s3cr3tT0kenValue1234567890"
NASTY = "pipes | </details> @octocat <img src=x> `tick` ``` end"


def _git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=cwd,
                          check=True, capture_output=True, text=True)
    return proc.stdout.strip()


class Checkout:
    """A repository with a base commit (gate config, golden set, archived baseline) and a PR head."""

    def __init__(self, root: Path, runner_inputs: str | None = None):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        config = _world(root, leak_in_new=True, extra_config="strata:\n  shares: {how_to: 0.6, navigational: 0.4}\n")
        if runner_inputs is not None:  # the code its runs depend on (else: the whole tree)
            text = config.read_text().replace("--output {run}\"\n", "--output {run}\"\n" f"  inputs: {runner_inputs}\n")
            assert "inputs:" in text
            config.write_text(text)
        # One golden query whose text is hostile Markdown: it must render harmlessly.
        golden = root / "golden.jsonl"
        rows = [json.loads(line) for line in golden.read_text().splitlines()]
        rows[1]["text"] = NASTY + " " + rows[1]["text"]
        golden.write_text("".join(json.dumps(r) + "\n" for r in rows))
        config.rename(root / ".retrieval-gate.yml")
        (root / ".gitignore").write_text(".retrieval-gate/cache/\n.retrieval-gate/work/\n.retrieval-gate/out/\n")
        self.base = archived_base(root, root / ".retrieval-gate.yml")

    def pr(self, retrieval: str, extra: dict[str, str] | None = None) -> tuple[str, str]:
        """Commit a PR head on a branch, then make the merge commit actions/checkout would check out."""
        _git(self.root, "checkout", "-q", "-B", "feature", self.base)
        (self.root / "retrieval.yml").write_text(retrieval)
        for name, text in (extra or {}).items():
            (self.root / name).write_text(text)
        return merged_pr(self.root, self.base)


def archived_base(root: Path, config: Path) -> str:
    """``root`` made a repository whose first commit holds everything and the baseline of
    ``config``, archived: that commit's sha."""
    _git(root, "init", "-q", "-b", "main")
    from gate.inputs.config import load_config
    from gate.pipeline.archive import archive

    archive(load_config(config), progress=lambda m: None)
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    return _git(root, "rev-parse", "HEAD")


def merged_pr(root: Path, base: str) -> tuple[str, str]:
    """The working tree committed as a PR's head, then the merge commit actions/checkout makes of
    it on ``base`` checked out: (head, merge commit)."""
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "pr")
    head = _git(root, "rev-parse", "HEAD")
    _git(root, "checkout", "-q", "--detach", base)
    _git(root, "merge", "-q", "--no-ff", "-m", "merge", head)
    return head, _git(root, "rev-parse", "HEAD")


def _payload(tmp: Path, name: str, number: int, head: str, base: str, labels=(), body=None) -> Path:
    """The event file: GitHub's example payload ``name`` (or a minimal one without ../shared)."""
    payload = pull_request_event(number, head, base, labels=labels, body=body, name=name)
    path = tmp / f"event-{head[:7]}.json"
    path.write_text(json.dumps(payload))
    return path


def run_entrypoint(checkout: Checkout, fake: FakeGitHub, event: Path, tmp: Path, pythonpath: str | None = None,
                   **inputs: str):
    output = tmp / "github_output"
    summary = tmp / "step_summary"
    output.write_text("")
    summary.write_text("")
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp),
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_API_URL": fake.url,
        "GITHUB_REPOSITORY": fake.repository,
        "GITHUB_WORKSPACE": str(checkout.root),
        "GITHUB_SERVER_URL": "http://127.0.0.1:9",  # no github.com from tests: refused at once
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_TOKEN": TOKEN,
        "INPUT_TOKEN": TOKEN,
        "INPUT_CONFIG-PATH": ".retrieval-gate.yml",
        "INPUT_COMMENT-MODE": "update",
        # The budget runs from the client's creation, before the gate runs: far above a loaded run.
        "INPUT_GITHUB-MAX-WAIT": "600",
        "INPUT_WORKING-DIRECTORY": ".",
    }
    env.update({f"INPUT_{k.upper().replace('_', '-')}": v for k, v in inputs.items()})
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    proc = bounded.run([sys.executable, str(REPO / "entrypoint.py")], env=env, cpu_timeout=300, cwd=checkout.root)
    return proc, output.read_text(), summary.read_text()


def _outputs(text: str) -> dict[str, str]:
    values, lines, i = {}, text.splitlines(), 0
    while i < len(lines):
        name, _, delimiter = lines[i].partition("<<")
        j = lines.index(delimiter, i + 1)
        values[name] = "\n".join(lines[i + 1:j])
        i = j + 1
    return values


# Moves every query (the grade-2 chunk #c0 comes first): a change the calibrated rule can judge.
GOOD = "ingestion: {parser: v1}\nboost: 2.0\nprefer_suffix: '#c0'\n"
LEAKY = "ingestion: {parser: v2}\nboost: 1.0\n"
