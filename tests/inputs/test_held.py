"""The verdict's inputs held from before the PR's code runs: digests taken before the runs and
checked after them (tests/inputs/test_forged_objects.py: what is streamed out of git;
tests/pipeline/test_hostile_command.py: a hostile command against the whole gate)."""

from __future__ import annotations

import hashlib
import os

import pytest

from gate.common.errors import InputError
from gate.inputs import held
from gate.inputs.held import Held, HeldFile, InputChanged, file_digest, hold_files, hold_tree


def test_a_digest_is_the_sha256_of_the_bytes_streamed_a_block_at_a_time(tmp_path, monkeypatch):
    monkeypatch.setattr(held, "BLOCK", 7)  # many blocks on a small file
    data = os.urandom(1000)
    (tmp_path / "f").write_bytes(data)
    assert file_digest(tmp_path / "f") == hashlib.sha256(data).hexdigest()
    assert file_digest(tmp_path / "missing") is None


def test_what_is_not_a_regular_file_never_equals_a_digest_and_a_fifo_does_not_hang(tmp_path):
    os.mkfifo(tmp_path / "fifo")  # no writer: a blocking open would wait for ever
    assert file_digest(tmp_path / "fifo") == "not a regular file"
    assert file_digest(tmp_path) == "not a regular file"


def test_an_unchanged_file_passes_and_a_changed_one_is_named_on_one_line(tmp_path):
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    (tmp_path / "band.json").write_text("{}")
    kept = hold_files([("qrels.txt", tmp_path / "qrels.txt"), ("noise.json", tmp_path / "band.json")])
    kept.check()
    (tmp_path / "band.json").write_text('{"means": [0, 1]}')
    with pytest.raises(InputChanged) as raised:
        kept.check()
    assert isinstance(raised.value, InputError)  # exit 2 at the CLI's and the Action's edge
    line = str(raised.value)
    assert line.startswith("noise.json: changed while the pull request's code ran (sha256 ")
    assert "\n" not in line


def test_a_file_that_appears_or_disappears_is_a_change(tmp_path):
    absent = hold_files([("noise.json", tmp_path / "noise.json")])
    assert absent.files[0].sha256 is None
    absent.check()
    (tmp_path / "noise.json").write_text("{}")
    with pytest.raises(InputChanged, match="noise.json: .*sha256 absent before its runs"):
        absent.check()
    present = hold_files([("noise.json", tmp_path / "noise.json")])
    (tmp_path / "noise.json").unlink()
    with pytest.raises(InputChanged, match=", absent after"):
        present.check()


def test_a_folder_of_files_is_held_by_its_listing_and_each_file(tmp_path):
    docs = tmp_path / "docs"
    (docs / "guides").mkdir(parents=True)
    (docs / "a.txt").write_text("alpha\n")
    (docs / "guides" / "b.txt").write_text("beta\n")
    kept = hold_tree("docs", docs)
    (tree,) = kept.trees
    assert tree.files == ("a.txt", "guides/b.txt")
    assert tree.digests == hashlib.sha256(b"alpha\n").digest() + hashlib.sha256(b"beta\n").digest()  # 32 bytes each
    kept.check()
    (docs / "faq.txt").write_text("a planted page\n")
    with pytest.raises(InputChanged, match="docs: changed .*added faq.txt"):
        kept.check()
    (docs / "faq.txt").unlink()
    (docs / "guides" / "b.txt").write_text("gamma\n")
    with pytest.raises(InputChanged, match="docs/guides/b.txt: changed"):
        kept.check()
    (docs / "guides" / "b.txt").unlink()
    with pytest.raises(InputChanged, match="removed guides/b.txt"):
        kept.check()


def test_held_inputs_add_up_each_file_once(tmp_path):
    (tmp_path / "corpus.jsonl").write_text("{}\n")
    one = hold_files([("corpus.jsonl", tmp_path / "corpus.jsonl")])
    both = one + hold_files([("the same file", tmp_path / "corpus.jsonl")]) + Held()
    assert both.files == one.files and isinstance(both.files[0], HeldFile)


def test_a_folder_is_held_with_the_digests_taken_as_its_files_were_written(tmp_path):
    """The base's corpus folder streamed out of git: each file's sha256 is taken as it is written,
    so a file rewritten between the writing and the holding is a change, not the held state."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("alpha\n")
    (docs / "b.txt").write_text("beta\n")
    written = {"a.txt": hashlib.sha256(b"alpha\n").hexdigest(), "b.txt": hashlib.sha256(b"beta\n").hexdigest()}
    hold_tree("docs", docs, written).check()
    (docs / "b.txt").write_text("planted\n")  # before the hold, after the write
    with pytest.raises(InputChanged, match="^docs/b.txt: changed .*sha256 " + written["b.txt"][:12]):
        hold_tree("docs", docs, written).check()
