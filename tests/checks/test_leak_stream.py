"""The leak scan's corpus reader process (gate.checks.leak_stream): the same chunks, the same
normalized text and the same one-line errors as reading in process, and no token in its environment."""

from __future__ import annotations

import gzip
import json
import subprocess

import pytest

from gate.checks import leak_stream as S
from gate.checks.leakage import find_leaks
from gate.checks.normalize import normalize
from gate.common.errors import InputError
from gate.inputs.readers.corpus import iter_corpus
from gate.inputs.readers.records import Query

ROWS = [{"_id": "d1#0", "title": "Rate limits", "text": "You get 429 Too Many Requests, after 50 calls."},
        {"_id": "d1#1", "doc_id": "d1", "text": "Rotate an API key: POST /keys/rotate — “quoted” Ünïcode"},
        {"_id": "d2", "text": ""},
        {"_id": 7, "text": "integer ids\tand tabs\nand newlines inside the text"}]


def _write(path, rows, extra: str = ""):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows) + extra, encoding="utf-8")
    return path


def test_the_child_gives_exactly_the_chunks_and_normalized_texts_read_here(tmp_path):
    corpus = _write(tmp_path / "c.jsonl", ROWS)
    here = list(S.iter_normalized(str(corpus), child=False))
    there = list(S.iter_normalized(str(corpus), child=True))
    assert here == there
    assert [(c.chunk_id, c.doc_id, c.text) for c in there] == [
        (c.chunk_id, c.doc_id, normalize(c.text) if c.text else "") for c in iter_corpus(corpus)]
    gz = tmp_path / "c.jsonl.gz"
    gz.write_bytes(gzip.compress(corpus.read_bytes()))
    assert list(S.iter_normalized(str(gz), child=True)) == here


@pytest.mark.parametrize("extra, message", [
    ('{"_id": "x", "text": NaN}\n', "c.jsonl:5: invalid JSON: NaN is not a JSON number"),
    ('{"_id": "d1#0", "text": "again"}\n', "duplicate chunk id 'd1#0'"),
    ('{"text": "no id"}\n', "c.jsonl:5: missing chunk id"),
    ("not json\n", "c.jsonl:5: invalid JSON: Expecting value (column 1)"),
])
def test_bad_input_in_the_child_is_the_same_one_line_error(tmp_path, extra, message):
    corpus = _write(tmp_path / "c.jsonl", ROWS, extra)
    errors = []
    for child in (False, True):
        with pytest.raises(InputError) as caught:
            list(S.iter_normalized(str(corpus), child=child))
        errors.append(str(caught.value))
    assert errors[0] == errors[1] and message in errors[1]


def test_a_scan_through_the_child_finds_the_same_leaks(tmp_path):
    corpus = _write(tmp_path / "c.jsonl", ROWS)
    queries = [Query("q1", "429 too many requests!"), Query("q2", "rotate an api key post"),
               Query("q3", "quoted unicode text")]
    here = find_leaks(queries, iter_corpus(corpus))
    there = find_leaks(queries, S.iter_normalized(str(corpus), child=True))
    assert here.to_dict() == there.to_dict() and here.count == 2


def test_the_child_never_sees_the_token(tmp_path, monkeypatch):
    corpus = _write(tmp_path / "c.jsonl", ROWS)
    seen = {}
    real = subprocess.Popen

    def spy(*args, **kw):
        seen.update(kw["env"])
        return real(*args, **kw)

    monkeypatch.setenv("GITHUB_TOKEN", "ghs_secret")
    monkeypatch.setenv("INPUT_TOKEN", "ghs_secret")
    monkeypatch.setattr(subprocess, "Popen", spy)
    assert len(list(S.iter_normalized(str(corpus), child=True))) == 4
    assert seen and "ghs_secret" not in seen.values()


def test_small_files_irds_and_missing_paths_are_read_here(tmp_path, monkeypatch):
    corpus = _write(tmp_path / "c.jsonl", ROWS)
    monkeypatch.setattr(S, "_from_child", lambda spec: (_ for _ in ()).throw(AssertionError("child started")))
    assert len(list(S.iter_normalized(str(corpus)))) == 4
    with pytest.raises(InputError):
        list(S.iter_normalized(str(tmp_path / "missing.jsonl")))
    monkeypatch.setattr(S, "CHILD_MIN_BYTES", 1)
    with pytest.raises(AssertionError, match="child started"):
        list(S.iter_normalized(str(corpus)))


def test_a_scan_that_stops_early_kills_the_child(tmp_path):
    corpus = _write(tmp_path / "c.jsonl", ROWS * 1)
    stream = S.iter_normalized(str(corpus), child=True)
    next(stream)
    stream.close()  # no hang, no zombie: the generator's finally kills and reaps the child


def test_a_gate_module_in_the_working_directory_is_not_what_the_child_runs(tmp_path, monkeypatch):
    # In CI the working directory is the checked-out repository: its gate.py must not stand in for
    # the gate (it could hand the scan chunks of its own and hide a leak).
    corpus = _write(tmp_path / "c.jsonl", ROWS)
    marker = tmp_path / "ran"
    work = tmp_path / "work"
    (work / "gate").mkdir(parents=True)
    (work / "gate.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    (work / "gate" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    for shadow in ("numpy.py", "json.py"):  # nor any module the child imports
        (work / shadow).write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    monkeypatch.chdir(work)
    assert list(S.iter_normalized(str(corpus), child=True)) == list(S.iter_normalized(str(corpus), child=False))
    assert not marker.exists()


def test_a_child_that_floods_stderr_does_not_hang_the_scan(tmp_path, monkeypatch):
    corpus = _write(tmp_path / "c.jsonl", ROWS)
    flood = ("import sys, json; sys.stderr.write('w' * 300000 + chr(10)); "
             "print(json.dumps({{'file': 'c.jsonl', 'line': 3, 'message': 'boom'}}), file=sys.stderr); "
             "sys.stdout.write('a' + chr(9) + 'b' + chr(9) + 'text' + chr(10)); sys.exit(2)  # {root!r}")
    monkeypatch.setattr(S, "_CHILD", flood)
    with pytest.raises(InputError, match=r"^c\.jsonl:3: boom$"):
        list(S.iter_normalized(str(corpus), child=True))
