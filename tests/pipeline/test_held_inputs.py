"""What ``run`` holds before its first runner starts (gate.pipeline.held_inputs): the base's
corpus streamed out of git into the gate's own folder, and the digest of every file a check
reads after a run. No runner runs here: the held state is looked at directly."""

from __future__ import annotations

import hashlib
import zlib

import pytest

from gate.inputs.config import load_config
from gate.inputs.golden import load_golden
from gate.inputs.held import InputChanged
from gate.inputs.retrieval_config import load_retrieval_config
from gate.pipeline.archive import archive
from gate.pipeline.held_inputs import hold_verdict_inputs
from tests.support.action_world import _git
from tests.support.small_world import small_world


@pytest.fixture()
def held(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    path = small_world(root, leak_in_new=True, extra_config="noise: {file: noise.json}\nprompts: ['prompts/*']\n")
    (root / "prompts").mkdir()
    (root / "prompts" / "rewrite.txt").write_text("Rewrite the query.\n")
    _git(root, "init", "-q", "-b", "main")
    archive(load_config(path), progress=lambda message: None)
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    base = _git(root, "rev-parse", "HEAD")
    (root / "retrieval.yml").write_text("ingestion: {parser: v2}\nboost: 1.0\n")  # the PR
    config = load_config(path)
    inputs = hold_verdict_inputs(config, load_golden(config), load_retrieval_config(root / "retrieval.yml"), base,
                                 tmp_path / "held")
    return root, base, inputs


def test_the_base_corpus_is_copied_out_of_git_before_any_run_and_held_by_digest(held, tmp_path):
    root, base, inputs = held
    corpus = inputs.base_corpus
    assert corpus is not None and corpus.how == f"as of commit {base[:12]}"
    copy = tmp_path / "held" / base[:12] / "corpus-v1.jsonl"
    assert corpus.path == str(copy) and copy.read_bytes() == (root / "corpus-v1.jsonl").read_bytes()
    assert inputs.choice.archived is not None  # the archived manifest is the baseline
    by_path = {item.path: item for item in inputs.held.files}
    assert by_path[copy].sha256 == hashlib.sha256(copy.read_bytes()).hexdigest()
    # The PR's code rewriting git's object afterwards changes nothing the gate holds.
    blob = _git(root, "rev-parse", f"{base}:corpus-v1.jsonl")
    loose = root / ".git" / "objects" / blob[:2] / blob[2:]
    loose.chmod(0o644)
    data = (root / "corpus-v2.jsonl").read_bytes()
    loose.write_bytes(zlib.compress(b"blob %d\0" % len(data) + data))
    inputs.held.check()
    copy.write_bytes(data)  # but its rewriting the gate's copy is found, and named by the repository's path
    with pytest.raises(InputChanged) as raised:
        inputs.held.check()
    assert str(raised.value).startswith("corpus-v1.jsonl: changed while the pull request's code ran")
    assert f"(the gate's copy as of commit {base[:12]}, made before any run)" in str(raised.value)


def test_every_file_a_check_reads_after_a_run_is_held(held):
    root, _, inputs = held
    names = {item.name for item in inputs.held.files}
    archived = {f".retrieval-gate/baseline/{p.name}" for p in (root / ".retrieval-gate" / "baseline").iterdir()}
    assert {"gate.yml", "golden.jsonl", "qrels.txt", "noise.json", "corpus-v2.jsonl",
            "prompts/rewrite.txt"} | archived <= names
    noise = next(item for item in inputs.held.files if item.name == "noise.json")
    assert noise.sha256 is None  # not there: a band that appears after the runs is a change
    (root / "noise.json").write_text("{}")
    with pytest.raises(InputChanged, match="^noise.json: changed"):
        inputs.held.check()
