"""gate.publishing.workflow_commands: environment files and :: commands as @actions/core writes them."""

from __future__ import annotations

import io
import re

import pytest

from gate.publishing.workflow_commands import (
    SUMMARY_LIMIT,
    annotation,
    append_summary,
    escape_data,
    escape_property,
    group,
    mask,
    stop_commands,
    write_outputs,
)
from gate.rendering.markdown_cut import truncate_markdown

_BLOCK = re.compile(r"^(?P<name>[^\n<]+)<<(?P<delim>ghadelimiter_[0-9a-f-]{36})\n(?P<value>.*?)\n(?P=delim)\n", re.S)


def parse_output_file(text: str) -> dict[str, str]:
    """Parse $GITHUB_OUTPUT the way the runner does (multi-line syntax only)."""
    out: dict[str, str] = {}
    while text:
        m = _BLOCK.match(text)
        assert m, f"unparsable output file at {text[:80]!r}"
        out[m["name"]] = m["value"]
        text = text[m.end():]
    return out


def test_outputs_use_the_delimiter_syntax(tmp_path):
    path = tmp_path / "output"
    path.write_text("earlier<<ghadelimiter_00000000-0000-0000-0000-000000000000\nx\nghadelimiter_00000000-0000-0000-0000-000000000000\n")
    assert write_outputs(path, {
        "verdict": "fail",
        "delta": -0.0213,
        "passed": False,
        "reasons": "line one\nline two\r\nEOF\nghadelimiter_fake",
        "empty": None,
    }) is True
    text = path.read_bytes().decode("utf-8")  # no newline translation: \r must survive
    parsed = parse_output_file(text)
    assert parsed == {
        "earlier": "x",
        "verdict": "fail",
        "delta": "-0.0213",
        "passed": "false",
        "reasons": "line one\nline two\r\nEOF\nghadelimiter_fake",
        "empty": "",
    }
    delimiters = re.findall(r"<<(ghadelimiter_\S+)", text)
    assert len(set(delimiters)) == len(delimiters)  # a fresh delimiter per value


def test_outputs_without_a_path_write_nothing():
    assert write_outputs(None, {"a": "b"}) is False
    assert write_outputs("", {"a": "b"}) is False


def test_output_name_validated(tmp_path):
    with pytest.raises(ValueError):
        write_outputs(tmp_path / "o", {"bad\nname": "x"})


@pytest.mark.parametrize(
    "text, data, prop",
    [
        ("plain", "plain", "plain"),
        ("100%", "100%25", "100%25"),
        ("a\r\nb", "a%0D%0Ab", "a%0D%0Ab"),
        ("x: y, z", "x: y, z", "x%3A y%2C z"),
        ("%0A", "%250A", "%250A"),  # an encoded newline stays literal
        ("::error::pwn", "::error::pwn", "%3A%3Aerror%3A%3Apwn"),
    ],
)
def test_escaping_matches_actions_core(text, data, prop):
    assert escape_data(text) == data
    assert escape_property(text) == prop


def test_annotation_format():
    assert annotation("error", "nDCG@10 fell\nby 2%", title="Gate: fail", file="configs/a,b.yml", line=3) == (
        "::error title=Gate%3A fail,file=configs/a%2Cb.yml,line=3::nDCG@10 fell%0Aby 2%25"
    )
    assert annotation("notice", "hi") == "::notice::hi"
    assert annotation("warning", "w", line=0) == "::warning::w"  # falsy properties are left out, as in @actions/core
    with pytest.raises(ValueError):
        annotation("fatal", "x")


def test_mask():
    assert mask("s3cr3t") == "::add-mask::s3cr3t"
    assert mask("a%b\nc") == "::add-mask::a%25b%0Ac"


def test_group_prints_group_and_endgroup_even_on_error():
    out = io.StringIO()
    with pytest.raises(RuntimeError):
        with group("Runs: bm25\nx", stream=out):
            out.write("inside\n")
            raise RuntimeError("boom")
    assert out.getvalue() == "::group::Runs: bm25%0Ax\ninside\n::endgroup::\n"


def test_stop_commands_random_token():
    out = io.StringIO()
    with stop_commands(stream=out) as token:
        out.write("::error::untrusted text trying to annotate\n")
    lines = out.getvalue().splitlines()
    assert lines[0] == f"::stop-commands::{token}"
    assert lines[-1] == f"::{token}::"
    assert re.fullmatch(r"[0-9a-f]{32}", token)
    with stop_commands(stream=io.StringIO()) as other:
        pass
    assert other != token


def test_summary_appends_and_reports_no_cut(tmp_path):
    path = tmp_path / "summary.md"
    assert append_summary(path, "# One") is False
    assert append_summary(path, "# Two\n") is False
    assert path.read_text() == "# One\n# Two\n"
    assert append_summary(None, "x") is False


def test_summary_capped_at_one_mib_with_note(tmp_path):
    path = tmp_path / "summary.md"
    path.write_text("x" * 1000 + "\n")
    rows = "\n".join(f"| q{i} | {'é' * 50} |" for i in range(20_000))  # multi-byte: bytes, not characters, count
    markdown = "## Per query\n\n| query | text |\n|---|---|\n" + rows + "\n\nafter the table\n"
    assert append_summary(path, markdown) is True
    data = path.read_bytes()
    assert len(data) <= SUMMARY_LIMIT
    text = data.decode("utf-8")
    assert "1 MiB" in text
    body = text.split("\n> **Note:**")[0]
    assert body.endswith("\n")  # cut at a line boundary
    # the only table is far beyond the cap: rows are cut whole, none in half
    for line in body.splitlines():
        if line.startswith("| q"):
            assert line.endswith("|")


def test_summary_small_limit_cuts_before_a_table(tmp_path):
    path = tmp_path / "summary.md"
    markdown = "intro line\n\n| a | b |\n|---|---|\n" + "\n".join(f"| {i} | {i} |" for i in range(200)) + "\n"
    assert append_summary(path, markdown, limit=800) is True
    text = path.read_text()
    assert len(text.encode()) <= 800
    assert "| a | b |" not in text and text.startswith("intro line\n")


def test_summary_full_file_writes_nothing(tmp_path):
    path = tmp_path / "summary.md"
    path.write_text("y" * 1000)
    assert append_summary(path, "more\n", limit=1000) is True
    assert path.read_text() == "y" * 1000


def test_truncate_markdown_details_closed_when_no_safe_cut():
    text = "<details><summary>s</summary>\n\n" + "\n".join(f"line {i}" for i in range(1000)) + "\n</details>\n"
    cut, truncated = truncate_markdown(text, 500, "note")
    assert truncated and len(cut) <= 500
    assert cut.count("<details") == cut.count("</details>")
    assert cut.rstrip().endswith("note")


def test_truncate_markdown_single_long_line():
    cut, truncated = truncate_markdown("y" * 10_000, 100, "note")
    assert truncated and len(cut) <= 100 and cut.startswith("y")
