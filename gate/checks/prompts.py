"""Prompt leak: few-shot examples and prompts that quote the golden set.

Files matched by the config's ``prompts:`` globs are scanned for golden query
texts (normalised exact and trigram matching, the leakage engine's), for doc
ids the golden qrels mark relevant, and for text copied from relevant
documents (any shared 8-token shingle). Each match names file:line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from gate.checks.leakage import find_text_in_lines
from gate.checks.normalize import normalize
from gate.inputs.readers.records import Qrels, Query

SHINGLE = 8


@dataclass(frozen=True)
class PromptMatch:
    file: str
    line: int
    kind: str  # query_text | relevant_doc_id | relevant_doc_text
    query_id: str | None
    doc_id: str | None
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class PromptsCheck:
    files: tuple[str, ...]
    matches: tuple[PromptMatch, ...]
    # what kept part of the check from running: a glob matching no file, a file that is not text
    problems: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"files_scanned": len(self.files), "count": len(self.matches),
                "matches": [m.to_dict() for m in self.matches], "problems": list(self.problems)}


def prompt_files(root: Path, globs: Sequence[str], problems: list[str] | None = None) -> list[Path]:
    """The files the globs match, in order; a glob that matches none is named in ``problems``
    (a misspelt folder would otherwise scan nothing and pass)."""
    found: dict[Path, None] = {}
    for pattern in globs:
        matched = [path for path in sorted(root.glob(pattern)) if path.is_file()]
        if not matched and problems is not None:
            problems.append(f"the prompts glob '{pattern}' matches no file: nothing was scanned for it")
        for path in matched:
            found[path] = None
    return list(found)


_BOMS = ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))


def prompt_text(path: Path) -> str:
    """A prompt file's text: UTF-8, or UTF-8/UTF-16 with a byte-order mark. Anything else (a gzip
    file, binary data, another encoding) is a ValueError naming what it looks like: scanned as
    replacement characters it would show no match and pass."""
    data = path.read_bytes()
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(encoding)
            except UnicodeDecodeError:
                raise ValueError(f"starts with a {encoding} byte-order mark but is not {encoding}") from None
    if data.startswith(b"\x1f\x8b"):
        raise ValueError("is gzip-compressed")
    if b"\x00" in data:
        raise ValueError("holds NUL bytes (binary, or UTF-16 without a byte-order mark)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"is not UTF-8 (byte {error.start})") from None


def _shingles(tokens: Sequence[str], n: int = SHINGLE) -> set[tuple[str, ...]]:
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


def scan_prompts(
    root: Path,
    globs: Sequence[str],
    queries: Iterable[Query],
    qrels: Qrels,
    relevant_texts: Mapping[str, str],
    rel: int = 1,
    threshold: float = 0.85,
) -> PromptsCheck:
    problems: list[str] = []
    files = prompt_files(root, globs, problems)
    matches: list[PromptMatch] = []
    located: list[tuple[tuple[str, int], str]] = []
    scanned = []
    for path in files:
        display = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
        try:
            text_of_file = prompt_text(path)
        except (OSError, ValueError) as error:
            reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
            problems.append(f"the prompt file {display} {reason}: not scanned")
            continue
        scanned.append(path)
        for number, text in enumerate(text_of_file.splitlines(), start=1):
            located.append(((display, number), text))
    if located:
        leaks = find_text_in_lines(queries, located, modes=("exact", "trigram-jaccard"), threshold=threshold)
        for m in leaks.matched:
            file, _, line = m.chunk_id.rpartition(":")
            matches.append(PromptMatch(file, int(line), "query_text", m.query_id, None,
                                       f"golden query quoted ({m.mode}, score {m.score:.2f})"))

    relevant = {doc for docs in qrels.judgments.values() for doc, label in docs.items() if label >= rel}
    if relevant and located:
        pattern = re.compile("|".join(re.escape(d) for d in sorted(relevant, key=len, reverse=True)))
        for (file, line), text in located:
            for hit in set(pattern.findall(text)):
                # Whole ids only: "doc_1" must not match inside "doc_12".
                if re.search(rf"(?<![\w#/.-]){re.escape(hit)}(?![\w#/-])", text):
                    matches.append(PromptMatch(file, line, "relevant_doc_id", None, hit,
                                               "a document the golden qrels mark relevant"))

    if relevant_texts and located:
        owner: dict[tuple[str, ...], str] = {}
        for doc_id, text in relevant_texts.items():
            for shingle in _shingles(normalize(text).split()):
                owner.setdefault(shingle, doc_id)
        # Shingles may cross line ends in a prompt file, so scan each file as a whole.
        by_file: dict[str, list[tuple[int, list[str]]]] = {}
        for (file, line), text in located:
            by_file.setdefault(file, []).append((line, normalize(text).split()))
        for file, lines in by_file.items():
            tokens: list[str] = []
            line_of: list[int] = []
            for line, toks in lines:
                tokens.extend(toks)
                line_of.extend([line] * len(toks))
            reported: set[tuple[int, str]] = set()
            for i in range(len(tokens) - SHINGLE + 1):
                doc = owner.get(tuple(tokens[i:i + SHINGLE]))
                if doc is not None and (line_of[i], doc) not in reported:
                    reported.add((line_of[i], doc))
                    matches.append(PromptMatch(file, line_of[i], "relevant_doc_text", None, doc,
                                               f"shares {SHINGLE} consecutive tokens with a relevant document"))
    matches.sort(key=lambda m: (m.file, m.line, m.kind))
    return PromptsCheck(tuple(str(p) for p in scanned), tuple(matches), tuple(problems))
