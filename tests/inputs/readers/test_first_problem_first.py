"""A file with two problems names the first: invalid UTF-8 on one line and a control character
(or a stray CR, or a byte-order mark) on a later line of the same block is reported at the
first line, as the bad-input rule asks (found by the readers' fuzzing: it reported the later)."""

from __future__ import annotations

import pytest

from gate.common.errors import InputError
from gate.inputs.readers.qrels import load_qrels
from gate.inputs.readers.queries import load_queries
from gate.inputs.readers.runs import read_run

LATER = [b"\x7f", b"\x00", b"\r", b"\xef\xbb\xbf"]

FILES = {
    "queries.jsonl": (load_queries,
                      [b'{"_id":"a","text":"x"}', b'{"_id":"b","text":"x%sy"}', b'{"_id":"c","text":"x%sy"}']),
    "qrels.txt": (load_qrels, [b"q1 0 d1 1", b"q2 0 d%s 1", b"q3 0 d%s 1"]),
    "run.txt": (read_run, [b"q1 Q0 d1 1 1.0 t", b"q2 Q0 d%s 1 1.0 t", b"q3 Q0 d%s 1 1.0 t"]),
}


@pytest.mark.parametrize("name", sorted(FILES))
@pytest.mark.parametrize("later", LATER, ids=["DEL", "NUL", "CR", "BOM"])
def test_invalid_utf8_before_another_problem_is_the_one_named(tmp_path, name, later):
    read, lines = FILES[name]
    body = [lines[0], lines[1] % b"\xff", lines[2] % later]
    path = tmp_path / name
    path.write_bytes(b"\n".join(body) + b"\n")
    with pytest.raises(InputError) as refused:
        read(path)
    assert refused.value.line == 2 and "not valid UTF-8" in str(refused.value), str(refused.value)


@pytest.mark.parametrize("name", sorted(FILES))
def test_a_control_character_alone_is_still_named_at_its_line(tmp_path, name):
    read, lines = FILES[name]
    path = tmp_path / name
    path.write_bytes(b"\n".join([lines[0], lines[1] % b"b", lines[2] % b"\x01"]) + b"\n")
    with pytest.raises(InputError) as refused:
        read(path)
    assert refused.value.line == 3 and "control character 0x01" in str(refused.value)
