"""GitHub Actions workflow commands and environment files, as @actions/core writes them.

* :func:`write_outputs` appends to ``$GITHUB_OUTPUT`` with the multi-line
  syntax ``name<<ghadelimiter_<uuid>`` / value / delimiter;
* :func:`append_summary` appends Markdown to ``$GITHUB_STEP_SUMMARY``,
  keeping the file under GitHub's 1 MiB per step;
* :func:`escape_data` / :func:`escape_property` are @actions/core's
  ``escapeData`` / ``escapeProperty``;
* :func:`annotation`, :func:`mask` return command lines;
  :func:`group`, :func:`stop_commands` print around a block.

Untrusted text (PR-controlled file names, query texts, runner logs) printed
to the log can contain ``::`` commands of its own; print it inside
:func:`stop_commands`.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TextIO

from gate.rendering.markdown_cut import truncate_markdown

__all__ = [
    "SUMMARY_LIMIT",
    "to_command_value",
    "escape_data",
    "escape_property",
    "write_outputs",
    "append_summary",
    "annotation",
    "group",
    "stop_commands",
    "mask",
]

SUMMARY_LIMIT = 1024 * 1024  # bytes per step
ANNOTATION_KINDS = ("error", "warning", "notice")


def to_command_value(value: Any) -> str:
    """@actions/core ``toCommandValue``: None -> '', str as is, anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value)


def escape_data(text: Any) -> str:
    """``%`` -> ``%25``, ``\\r`` -> ``%0D``, ``\\n`` -> ``%0A`` (a command's message)."""
    return to_command_value(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: Any) -> str:
    """:func:`escape_data` plus ``:`` -> ``%3A`` and ``,`` -> ``%2C`` (a command's property value)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _command(name: str, properties: Mapping[str, Any], message: Any) -> str:
    line = f"::{name}"
    # Like Command.toString in @actions/core: falsy property values are left out.
    props = [f"{key}={escape_property(value)}" for key, value in properties.items() if value]
    if props:
        line += " " + ",".join(props)
    return f"{line}::{escape_data(message)}"


def write_outputs(path: str | os.PathLike[str] | None, mapping: Mapping[str, Any]) -> bool:
    """Append step outputs to ``path`` (``$GITHUB_OUTPUT``); False (nothing written) when ``path`` is empty.

    Each value is written as ``name<<ghadelimiter_<uuid>``, the value, the
    delimiter; the delimiter is checked not to occur in the name or value.
    """
    if not path:
        return False
    chunks = []
    for name, raw in mapping.items():
        name = str(name)
        if not name or "\n" in name or "\r" in name or "<<" in name:
            raise ValueError(f"invalid output name {name!r}")
        value = to_command_value(raw)
        for _ in range(3):  # a uuid4 collision is astronomically unlikely; bounded anyway
            delimiter = f"ghadelimiter_{uuid.uuid4()}"
            if delimiter not in value and delimiter not in name:
                break
        else:
            raise ValueError(f"could not find a delimiter absent from output {name!r}")
        chunks.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
    with open(path, "a", encoding="utf-8", newline="\n") as handle:
        handle.write("".join(chunks))
    return True


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def append_summary(path: str | os.PathLike[str] | None, markdown: str, limit: int = SUMMARY_LIMIT) -> bool:
    """Append Markdown to ``path`` (``$GITHUB_STEP_SUMMARY``) keeping the file within ``limit`` bytes.

    What is already in the file counts against the limit. When the text does
    not fit it is cut at a line boundary (outside tables, code fences and
    ``<details>``) and a note says so. Returns True when it was cut; writes
    nothing and returns False when ``path`` is empty.
    """
    if not path:
        return False
    try:
        used = os.path.getsize(path)
    except OSError:
        used = 0
    text = markdown if markdown.endswith("\n") else markdown + "\n"
    room = limit - used
    note = (
        "> **Note:** the job summary was cut to stay under GitHub's 1 MiB per-step limit; "
        "the full report is in the report artifact."
    )
    truncated = False
    if _utf8_len(text) > room:
        truncated = True
        if room < _utf8_len("\n" + note + "\n"):
            return True  # no room even for the note: write nothing rather than break the upload
        text, _ = truncate_markdown(text, room, note, measure=_utf8_len)
    with open(path, "a", encoding="utf-8", newline="\n") as handle:
        handle.write(text)
    return truncated


def annotation(
    kind: str,
    message: Any,
    title: str | None = None,
    file: str | None = None,
    line: int | None = None,
    *,
    end_line: int | None = None,
    col: int | None = None,
    end_column: int | None = None,
) -> str:
    """``::error title=...,file=...,line=...::message`` (kind: error | warning | notice)."""
    if kind not in ANNOTATION_KINDS:
        raise ValueError(f"annotation kind must be one of {', '.join(ANNOTATION_KINDS)}, got {kind!r}")
    properties = {
        "title": title,
        "file": file,
        "line": line,
        "endLine": end_line,
        "col": col,
        "endColumn": end_column,
    }
    return _command(kind, properties, message)


def mask(value: Any) -> str:
    """``::add-mask::value``: the runner hides the value in later log output."""
    return _command("add-mask", {}, value)


def _emit(line: str, stream: TextIO | None) -> None:
    out = stream if stream is not None else sys.stdout
    out.write(line + "\n")
    out.flush()


@contextmanager
def group(name: str, *, stream: TextIO | None = None) -> Iterator[None]:
    """Fold the output printed inside into a collapsible ``::group::name`` in the log."""
    _emit(_command("group", {}, name), stream)
    try:
        yield
    finally:
        _emit("::endgroup::", stream)


@contextmanager
def stop_commands(*, stream: TextIO | None = None) -> Iterator[str]:
    """Stop command processing while untrusted text is printed; yields the random resume token.

    Prints ``::stop-commands::<token>`` before and ``::<token>::`` after. The
    token is 128 random bits, so the text cannot guess it to resume commands
    early. Text printed inside should end with a newline so the resume line
    starts a line of its own.
    """
    token = secrets.token_hex(16)
    _emit(f"::stop-commands::{token}", stream)
    try:
        yield token
    finally:
        _emit(f"::{token}::", stream)
