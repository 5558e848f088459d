"""A pull request's command that rewrites what the verdict is measured against while it runs.

Without a box of its own (a self-hosted runner without root) the PR's command runs as the gate's
uid and can write whatever the gate can: the checkout's .git, the base's yardstick the gate
copied out of git, the gate's own copy of the base's corpus. Found from outside (issue 34): the
leak check read the base's corpus with ``git cat-file`` after the candidate ran; the PR's command
had overwritten that loose object with its own corpus, so the leak it planted was tagged "both"
and the PR passed, while the same leak without the forging failed on new_leaked_queries.

Each PR here runs the gate through the CLI (``python -m gate run --base``), as the same uid.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gate.inputs.config import load_config
from gate.pipeline.archive import archive
from gate.pipeline.noise import noise_from_run_files
from tests.shared_data import REPO
from tests.support import bounded
from tests.support.action_world import _git
from tests.support.small_world import RUNNER
from tests.support.small_world import small_world as _world

#: The PR: a ranking that moves every query up (the grade-2 chunk #c0 first), on the ingestion
#: parser v2, whose corpus carries an FAQ page quoting 3 golden queries: its leaks alone fail it.
LEAKY = "ingestion: {parser: v2}\nboost: 2.0\nprefer_suffix: '#c0'\n"

#: The team's search command (the base's config runs it; the PR may change it): the small
#: world's ranking, run as the repository's own search.py.
SEARCH = f"""import runpy
import sys

RUNNER = {str(RUNNER)!r}
sys.argv[0] = RUNNER
runpy.run_path(RUNNER, run_name="__main__")
"""

#: What the hostile search.py does before it ranks: every target is rewritten wherever the gate
#: could read it - the working tree, every copy under the gate's temporary folder (the base's
#: yardstick, the gate's own copy of the base's corpus) and git's loose object of the base's blob
#: (0444, so chmod u+w first) - and what it wrote is listed in a file outside the repository.
TAMPER = """import glob
import json
import os
import zlib

ROOT, TMP, DONE = {root!r}, {tmp!r}, {done!r}
# [path in the working tree or None, blob id at the base or None, patterns under TMP, content]: content is
# the text to write, or [a file] whose bytes to write (relative to the repository, or absolute).
TARGETS = {targets!r}

written = []
for relative, blob, patterns, content in TARGETS:
    data = content.encode() if isinstance(content, str) else open(os.path.join(ROOT, content[0]), "rb").read()
    places = [] if relative is None else [os.path.join(ROOT, relative)]
    for pattern in patterns:
        places += glob.glob(os.path.join(TMP, pattern), recursive=True)
    for place in places:
        os.chmod(place, 0o644)
        with open(place, "wb") as handle:
            handle.write(data)
        written.append(place)
    if blob is not None:
        loose = os.path.join(ROOT, ".git", "objects", blob[:2], blob[2:])
        os.chmod(loose, 0o644)
        with open(loose, "wb") as handle:
            handle.write(zlib.compress(b"blob %d\\0" % len(data) + data))
        written.append(loose)
with open(DONE, "w") as handle:
    json.dump(written, handle)
"""


class TeamRepo:
    """The small world as a team's repository: the base commit holds the gate config (whose
    command runs the repository's search.py), the golden set, a noise band file and the
    archived baseline; a PR changes the ingestion parser (a corpus with 3 leaked queries)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True)
        config = _world(root, leak_in_new=True, extra_config="noise: {file: noise.json}\n")
        text = config.read_text().replace(f"{sys.executable} {RUNNER} ", f"{sys.executable} search.py ")
        assert "search.py --config" in text
        config.write_text(text)
        (root / "search.py").write_text(SEARCH)
        (root / ".gitignore").write_text(".retrieval-gate/cache/\n.retrieval-gate/work/\n.retrieval-gate/out/\n")
        _git(root, "init", "-q", "-b", "main")
        archive(load_config(config), progress=lambda message: None)
        archived = root / ".retrieval-gate" / "baseline"
        run = next(str(p) for p in archived.iterdir() if p.name.startswith("run-"))
        band = noise_from_run_files([run, _perturbed(Path(run), root / "repeat.run")], str(root / "qrels.txt"),
                                    str(root / "golden.jsonl"), "nDCG@10", 1)
        (root / "repeat.run").unlink()
        (root / "noise.json").write_text(json.dumps(band.to_dict()))
        _git(root, "add", "-A")
        _git(root, "commit", "-qm", "base")
        self.base = _git(root, "rev-parse", "HEAD")
        self.tmp = root.parent / f"{root.name}-tmp"  # the gate's TMPDIR: its copies are found there
        self.tmp.mkdir()
        self.done = root.parent / f"{root.name}-tampered.json"

    def blob(self, relative: str) -> str:
        return _git(self.root, "rev-parse", f"{self.base}:{relative}")

    def pr(self, tamper: list[tuple[str, str | None, list[str], str | list[str]]] | None = None) -> None:
        """The leaky PR, its search.py first rewriting ``tamper``'s targets when given."""
        (self.root / "retrieval.yml").write_text(LEAKY)
        if tamper is not None:
            script = TAMPER.format(root=str(self.root), tmp=str(self.tmp), done=str(self.done), targets=tamper)
            (self.root / "search.py").write_text(script + SEARCH)
        _git(self.root, "commit", "-qam", "pr")

    def gate(self) -> tuple[int, str, dict | None]:
        """``retrieval-gate run --base`` as a CI step runs it: exit code, stderr, report.json."""
        out = self.root.parent / f"{self.root.name}-out"
        env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(self.tmp)}
        as_user: list[str] = []
        if os.geteuid() == 0:
            # As root the command would run in the box, a uid that can write none of this: these
            # tests are of the defence that holds without one, so the gate runs as a plain user
            # (uid 1001, who owns the repository), as on a self-hosted runner without root.
            subprocess.run(["chown", "-R", "1001:1001", str(self.root.parent)], check=True)
            as_user = ["setpriv", "--reuid=1001", "--regid=1001", "--clear-groups", "--"]
            env["HOME"] = str(self.tmp)
        proc = bounded.run([*as_user, sys.executable, "-m", "gate", "run", "--config", "gate.yml", "--base",
                            self.base, "--out", str(out)], cwd=self.root, env=env, cpu_timeout=300)
        report = out / "report.json"
        return proc.returncode, proc.stderr, json.loads(report.read_text()) if report.exists() else None


def _perturbed(run: Path, target: Path) -> str:
    """The archived run with every score nudged by its rank: a second run of the same stack."""
    lines = []
    for line in gzip.decompress(run.read_bytes()).decode().splitlines():
        qid, q0, doc, rank, score, tag = line.split()
        lines.append(f"{qid} {q0} {doc} {rank} {float(score) + 0.001 * int(rank):.6f} {tag}")
    target.write_text("\n".join(lines) + "\n")
    return str(target)


def _codes(report: dict) -> list[str]:
    return [reason["code"] for reason in report["verdict"]["reasons"]]


@pytest.fixture()
def control(tmp_path):
    """The same leaky PR without any forging: it fails on its new leaks."""
    repo = TeamRepo(tmp_path / "control")
    repo.pr()
    code, err, report = repo.gate()
    assert report is not None, err
    assert code == 1 and report["verdict"]["kind"] == "fail" and _codes(report)[0] == "new_leaked_queries", err
    assert report["leakage"]["new"] == ["q_0001", "q_0004", "q_0007"]
    return code, report


def test_the_git_object_forging_pr_fails_like_its_control(tmp_path, control):
    repo = TeamRepo(tmp_path / "forging")
    base_corpus = repo.blob("corpus-v1.jsonl")
    # The PR's search.py overwrites the base corpus's loose object with the PR's own (leaky) corpus.
    repo.pr([(None, base_corpus, [], ["corpus-v2.jsonl"])])
    code, err, report = repo.gate()
    forged = json.loads(repo.done.read_text())
    assert forged == [str(repo.root / ".git" / "objects" / base_corpus[:2] / base_corpus[2:])]
    # git itself now says the base's corpus is the PR's: the forging took.
    assert subprocess.run(["git", "-c", "safe.directory=*", "cat-file", "blob", base_corpus], cwd=repo.root,
                          capture_output=True,
                          check=True).stdout == (repo.root / "corpus-v2.jsonl").read_bytes()
    assert report is not None, err
    control_code, control_report = control
    assert code == control_code == 1
    assert _codes(report) == _codes(control_report)
    assert report["leakage"]["new"] == control_report["leakage"]["new"] == ["q_0001", "q_0004", "q_0007"]
    assert report["leakage"]["both"] == [] and report["leakage"]["same_snapshot"] is False
    assert report["verdict"] == control_report["verdict"]


#: The other inputs of the verdict, each rewritten by the PR's command after the gate read them,
#: in the working tree, in git's object of the base's blob and in the gate's copies under TMPDIR:
#: (relative path, its copies under TMPDIR, content: text, or [a file whose bytes to write]).
TAMPERED = {
    "qrels": ("qrels.txt", ["retrieval-gate-yardstick-*/qrels.txt"], "q_0001 0 faq/common-questions#q1 2\n"),
    "archived baseline": (".retrieval-gate/baseline/manifest.yml",
                          ["retrieval-gate-yardstick-*/.retrieval-gate/baseline/manifest.yml"],
                          "schema_version: '1'\n"),
    # A band ten times as wide, as a valid file: the one the gate read after the runs.
    "noise band": ("noise.json", ["retrieval-gate-yardstick-*/noise.json"], ["../wide-noise.json"]),
    "base config": ("gate.yml", ["retrieval-gate-yardstick-*/gate.yml"],
                    "suite: small\ngolden: {queries: golden.jsonl, qrels: qrels.txt, rel: 1}\n"),
}


@pytest.mark.parametrize("what", sorted(TAMPERED))
def test_a_command_that_rewrites_a_verdict_input_ends_the_run_naming_it(tmp_path, what):
    relative, patterns, content = TAMPERED[what]
    repo = TeamRepo(tmp_path / "tampering")
    band = json.loads((repo.root / "noise.json").read_text())
    band["means"] = [m * (1 + 10 * (i % 2)) for i, m in enumerate(band["means"])]
    (tmp_path / "wide-noise.json").write_text(json.dumps(band))
    repo.pr([(relative, repo.blob(relative), patterns, content)])
    _ended_naming(repo, relative)


def test_a_command_that_rewrites_the_gates_copy_of_the_base_corpus_ends_the_run_naming_it(tmp_path):
    repo = TeamRepo(tmp_path / "tampering")
    repo.pr([(None, None, ["retrieval-gate-held-*/**/corpus-v1.jsonl"], ["corpus-v2.jsonl"])])
    _ended_naming(repo, "corpus-v1.jsonl")


def _ended_naming(repo: TeamRepo, relative: str) -> None:
    """The run ended with exit 2, no report and one error line naming ``relative``."""
    code, err, report = repo.gate()
    written = json.loads(repo.done.read_text())
    assert any(place.startswith(str(repo.tmp)) for place in written), written  # a copy of the gate's was rewritten
    lines = [line for line in err.splitlines() if line.startswith("retrieval-gate: error:")]
    assert code == 2 and report is None, err
    assert len(lines) == 1 and f" {relative}: changed while the pull request's code ran" in lines[0], err
