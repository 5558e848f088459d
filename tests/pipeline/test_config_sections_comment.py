"""Every combination of the documented config sections gives a report the comment job posts.

Issue 32: a tuning split (``tuning``) with ``strata``, where a stratum had no held-out query,
gave a stratum row whose ``label`` the schema did not allow: ``run`` printed "bug: ..." and
exited 0, and ``retrieval-gate comment`` then refused the gate's own report (exit 2), so the
fork-safe flow posted nothing.

The property, for each combination of the sections (gate/inputs/config_reference.py): on a
small repository whose PR changes the retrieval config (and, as the sections ask, the
corpus, the qrels, an environment file), ``run --base`` exits with a verdict (0, 1 or 3),
says no "bug", and ``comment`` posts its report.json as the PR comment (schema-valid, rendered,
the first line at most 300 characters). The combinations: a strength-2 covering array of the
sections (every pair of sections is seen on, off, and in both mixed states), plus the
combination of the issue; ``RETRIEVAL_GATE_ALL_SECTIONS=1`` runs all 2^k instead (minutes).
"""

from __future__ import annotations

import itertools
import json
import os
import random
import subprocess
from pathlib import Path

import pytest
import yaml

from gate.cli import main
from gate.rendering.comment import HEADLINE_LIMIT
from tests.publishing.github.fake_github import FakeGitHub
from tests.support.saved_report import as_the_action_saved
from tests.support.small_world import small_world

TOKEN = "ghs_sections0123456789abcdefghijklmnopqrstu"

#: The sections a combination switches on (each a documented part of .retrieval-gate.yml).
SECTIONS = (
    "strata",        # strata.shares (traffic shares) and strata.guarded
    "tuning",        # tuning.queries / params: every how_to query is a tuning query
    "noise",         # a noise band archived with the baseline (noise.repeats) and noise.candidate_runs: 2
    "goalposts",     # the PR edits the qrels (the yardstick)
    "attribution",   # attribution.factors over two changed groups (off: attribution.enabled false)
    "prompts",       # prompts: a prompt file quoting a golden query
    "leakage",       # the PR's corpus quotes three golden queries (leakage, policy.exclude_leaked)
    "sweep",         # sweep.params around the PR's boost
    "environment",   # environment: a lock file the PR changes
    "policy",        # policy.mode non-inferiority, judged.k 5, policy.max_unjudged 0.5
)

#: Issue 32's combination: a stratum (how_to) none of whose queries is held out.
ISSUE_32 = frozenset({"strata", "tuning"})


def _covering_array(k: int, seed: int = 32) -> list[frozenset[int]]:
    """Rows (the sections on) covering every pair of sections in all four on/off states."""
    uncovered = {(i, j, a, b) for i, j in itertools.combinations(range(k), 2) for a in (0, 1) for b in (0, 1)}
    rng = random.Random(seed)
    rows: list[tuple[int, ...]] = []
    while uncovered:
        best, gain = None, -1
        for _ in range(60):
            row = tuple(rng.randint(0, 1) for _ in range(k))
            covered = sum((i, j, row[i], row[j]) in uncovered for i, j in itertools.combinations(range(k), 2))
            if covered > gain:
                best, gain = row, covered
        rows.append(best)
        uncovered -= {(i, j, best[i], best[j]) for i, j in itertools.combinations(range(k), 2)}
    return [frozenset(i for i, on in enumerate(row) if on) for row in rows]


def _combinations() -> list[frozenset[str]]:
    if os.environ.get("RETRIEVAL_GATE_ALL_SECTIONS") == "1":
        picks = [frozenset(c) for n in range(len(SECTIONS) + 1) for c in itertools.combinations(SECTIONS, n)]
    else:
        picks = [frozenset(SECTIONS[i] for i in row) for row in _covering_array(len(SECTIONS))]
    return [ISSUE_32, *[p for p in picks if p != ISSUE_32]]


COMBINATIONS = _combinations()


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "commit.gpgsign=false",
                           *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def _gate_config(on: frozenset[str]) -> dict:
    config: dict = {}
    policy: dict = {}
    if "strata" in on:
        config["strata"] = {"shares": {"how_to": 0.6, "navigational": 0.4}, "guarded": ["navigational"]}
    if "tuning" in on:
        config["tuning"] = {"queries": [f"q_{i:04d}" for i in range(1, 20, 2)], "params": ["prefer_suffix"]}
    if "noise" in on:
        config["noise"] = {"repeats": 2, "candidate_runs": 2, "rerun": "always"}
    if "attribution" in on:
        config["attribution"] = {"factors": {"ranking": ["prefer_suffix", "boost"], "corpus": ["ingestion.parser"]}}
    else:
        config["attribution"] = {"enabled": False}
    if "prompts" in on:
        config["prompts"] = ["prompts/*.txt"]
    if "sweep" in on:
        config["sweep"] = {"params": {"boost": [1.0, 2.0]}, "folds": 2}
    if "environment" in on:
        config["environment"] = ["requirements.lock"]
    if "policy" in on:
        config["judged"] = {"k": 5}
        policy.update({"mode": "non-inferiority", "max_unjudged": 0.5})
    if policy:
        config["policy"] = policy
    return config


def _repository(root: Path, on: frozenset[str]) -> tuple[Path, str, str]:
    """A repository whose base commit holds the yardstick (and, with noise, an archived baseline
    with its band) and whose HEAD is the PR the sections ask for. Returns (config, base, head)."""
    root.mkdir(parents=True)
    extra = yaml.safe_dump(_gate_config(on), sort_keys=False) if _gate_config(on) else ""
    config = small_world(root, leak_in_new="leakage" in on, extra_config=extra)
    (root / ".gitignore").write_text(".retrieval-gate/cache/\n.retrieval-gate/work/\nout/\n")
    (root / "requirements.lock").write_text("numpy==2.0\n")
    if "prompts" in on:
        (root / "prompts").mkdir()
        (root / "prompts" / "rewrite.txt").write_text("Rewrite the query.\nExample: how do i configure pagination "
                                                      "with meadow settings\n")
    _git(root, "init", "-q", "-b", "main")
    if "noise" in on:  # the band is stored with the archived baseline (archive --noise-repeats)
        (root / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 1.0\nshuffle_ties: true\n")
        assert main(["archive", "--config", str(config), "--noise-repeats", "2"]) == 0
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base: the yardstick")
    base = _git(root, "rev-parse", "HEAD")
    parser = "v2" if {"attribution", "leakage"} & on else "v1"
    boost = "2.0" if "sweep" in on else "1.0"
    shuffle = "shuffle_ties: true\n" if "noise" in on else ""
    (root / "retrieval.yml").write_text(f"ingestion: {{parser: {parser}}}\nboost: {boost}\n{shuffle}"
                                        "prefer_suffix: '#c1'\n")
    if "goalposts" in on:
        qrels = (root / "qrels.txt").read_text().replace("q_0002 0 guide/pagination-2#c3 0",
                                                         "q_0002 0 guide/pagination-2#c3 1")
        (root / "qrels.txt").write_text(qrels)
    if "environment" in on:
        (root / "requirements.lock").write_text("numpy==2.1\n")
    _git(root, "commit", "-qam", "PR")
    return config, base, _git(root, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def github():
    with FakeGitHub(token=TOKEN) as fake:
        yield fake


@pytest.mark.parametrize("on", COMBINATIONS, ids=["+".join(sorted(c)) or "none" for c in COMBINATIONS])
def test_every_combination_of_sections_gives_a_report_the_comment_job_posts(on, github, tmp_path, monkeypatch,
                                                                             capsys):
    config, base, head = _repository(tmp_path / "repo", on)
    out = tmp_path / "out"
    monkeypatch.chdir(tmp_path / "repo")
    code = main(["run", "--config", str(config), "--base", base, "--out", str(out)])
    printed = capsys.readouterr()
    assert code in (0, 1, 3), printed.err[-2000:]
    assert "bug:" not in printed.err, printed.err
    report = json.loads((out / "report.json").read_text())
    if ISSUE_32 <= on:
        rows = {row["stratum"]: row for row in report["strata"]}
        assert rows["how_to"]["n"] == 0 and rows["how_to"]["label"] == "n = 0, not measured"

    number = COMBINATIONS.index(on) + 1
    github.add_pull(number, head, files=["retrieval.yml"])
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("GITHUB_REPOSITORY", github.repository)
    monkeypatch.setenv("GITHUB_API_URL", github.url)
    as_the_action_saved(out / "report.json", number, head, base)  # the event the Action would record
    posted = main(["comment", "--report", str(out / "report.json"), "--pr", str(number), "--head-sha", head])
    printed = capsys.readouterr()
    assert posted == 0, printed.err
    [comment] = github.comments(number)
    body = comment["body"]
    first = (out / "comment.md").read_text().split("\n", 1)[0]
    assert first.startswith("### ") and len(first) <= HEADLINE_LIMIT
    assert first in body.splitlines()  # the comment job renders the line `run` wrote
    if ISSUE_32 <= on:
        assert "n = 0, not measured" in body
    github.assert_valid()
