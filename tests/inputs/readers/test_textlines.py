"""Shared line reading: gzip, numbering, skipping, encoding errors, blocks."""

from __future__ import annotations

import pytest

from gate.inputs.readers.textlines import iter_all_lines, iter_blocks, iter_lines, strip_gz
from tests.inputs.readers.helpers import expect_error, write


def lines(path):
    return list(iter_lines(path))


def test_skips_blank_and_comment_lines_but_keeps_numbers(tmp_path):
    path = write(tmp_path, "f.txt", "# head\na b\n\n   \n\t# indented comment\nc#d e\n")
    assert lines(path) == [(2, "a b"), (6, "c#d e")]


def test_crlf_bom_and_missing_final_newline(tmp_path):
    path = write(tmp_path, "f.txt", "\ufeffx\r\ny\r\nz")
    assert lines(path) == [(1, "x"), (2, "y"), (3, "z")]


@pytest.mark.parametrize("name", ["f.txt.gz", "f.txt"])
def test_gzip_detected_by_content(tmp_path, name):
    path = write(tmp_path, name, "a\n# c\nb\n", gz=True)
    assert lines(path) == [(1, "a"), (3, "b")]


def test_all_lines_keeps_blanks(tmp_path):
    path = write(tmp_path, "f.txt", "a\n\n# c\n")
    assert list(iter_all_lines(path)) == [(1, "a"), (2, ""), (3, "# c")]


def test_invalid_utf8_is_an_error_at_its_line(tmp_path):
    path = write(tmp_path, "f.txt", b"ok\nstill ok\nbad \xc3\x28 here\n")
    expect_error(lines, path, 3, "not valid UTF-8 (byte 0xc3 at column 5)")


def test_missing_file_and_directory(tmp_path):
    expect_error(lines, tmp_path / "missing.tsv", None, "no such file")
    expect_error(lines, tmp_path, None, "is a directory, expected a file")


def test_blocks_are_whole_lines_with_line_numbers(tmp_path):
    text = "".join(f"line {i}\n" for i in range(1, 200)) + "last without newline"
    path = write(tmp_path, "f.txt", text)
    got = list(iter_blocks(path, size=37))
    assert b"".join(b for _, b in got) == text.encode() + b"\n"
    for first, block in got:
        assert block.endswith(b"\n")
        assert block.startswith(b"line %d\n" % first) or block.startswith(b"last")


def test_blocks_handle_lines_longer_than_a_block(tmp_path):
    text = "x" * 1000 + "\nshort\n"
    got = list(iter_blocks(write(tmp_path, "f.txt", text), size=10))
    assert got[0][1].startswith(b"x" * 1000 + b"\n")
    assert b"".join(b for _, b in got) == text.encode()
    assert all(first == 1 + b"".join(b for _, b in got[:i]).count(b"\n") for i, (first, _) in enumerate(got))


def test_strip_gz():
    assert strip_gz("a/queries.jsonl.gz") == "a/queries.jsonl"
    assert strip_gz("a/queries.tsv") == "a/queries.tsv"
