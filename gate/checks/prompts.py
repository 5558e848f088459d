"""Prompt leak: few-shot examples and prompts that quote the golden set.

Files matched by the config's ``prompts:`` globs are read as what they are, then scanned for
golden query texts, for doc ids the golden qrels mark relevant, and for text copied from
relevant documents. Every (file, line, query) match is reported, not only the first.

Reading
    A ``.yaml``/``.yml``/``.json`` file is parsed, and each string value is scanned as its
    parser reads it: a query folded over lines (``>``) or a passage with ``\\n`` escapes reads
    as the text it is; a match names the line its value starts on. A ``.jsonl``/``.ndjson``
    file is a JSON document per line. A file that does not parse as its suffix says (a Jinja
    template in a ``.yaml``) is scanned as plain text and noted (``notes``). Other files are
    scanned as plain text, across line breaks: a query wrapped over two lines is found, at the
    line it starts on.

Query text
    The leakage engine's normalized exact and trigram-Jaccard matching
    (:mod:`gate.checks.leakage`), then each occurrence located: every window scoring at or
    above the threshold, overlapping windows counted once.

Relevant doc ids
    An id with a letter or a sign in it (``MED-10``, ``doc_12``) counts wherever it stands as a
    whole word, in a path or an anchor too. An id of digits only (MS MARCO's ``7067032``) counts
    only in an id context: the value of a key naming one document (``doc``, ``docid``,
    ``passage``, ``pid``, ``id``, ``chunk``, ... or a key ending in one, not ``query_id``; a
    plural for a list's items; never a key holding a count word, ``max_docs``), and, for ids of a
    length few numbers are judged ids (:func:`rare_ids`), text right after such a label
    (``doc 7067032``, ``passage_id=7067032``, ``[pid: 7067032]``), a list (a mapping's keys, lines
    holding only an id) of at least two distinct judged doc ids, or a path or URL segment
    (``/passages/7067032``, not a date).
    A ``seed: 6138`` or ``year: 1729`` is no doc id.

Relevant doc text
    Any :data:`SHINGLE` consecutive tokens shared with a document the qrels mark relevant.

Short queries
    Trigram Jaccard forgives a changed word only in a long enough query (about 14 words at
    0.85). A query is listed in ``short`` when even its cheapest one-word change (a word of the
    same length sharing no trigram with it) scores below the threshold: it is found copied
    exactly or with an inflected word, case and punctuation aside, never with a changed word
    (README, "Prompts and few-shot examples").
"""

from __future__ import annotations

import bisect
import io
import json
import os
import re
import sys
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]  # the json module's own, not in its stubs
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

from gate.checks.leakage import DEFAULT_MIN_TOKENS, find_leaks
from gate.checks.normalize import normalize, trigrams
from gate.common.errors import InputError
from gate.common.numbers import counted
from gate.inputs import git
from gate.inputs.globs import matched_inputs
from gate.inputs.readers.records import Qrels, Query

SHINGLE = 8
#: Matches kept per query in report.json and shown per query in the comment (counts cover all).
MATCHES_KEPT = 50
#: A prompt file is read whole (its tokens with their lines: about 30 bytes of memory a byte of
#: text); a larger one is named as not scanned rather than exhausting the runner's memory.
MAX_PROMPT_BYTES = 8 * 2**20
#: A YAML file over this is read as plain text (and noted): the YAML parser reads about 0.2 MiB a second.
MAX_YAML_BYTES = 2 * 2**20
STRUCTURED = {".yaml": "YAML", ".yml": "YAML", ".json": "JSON"}
JSON_LINES = {".jsonl", ".ndjson"}


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
    # how a file was read when not as its suffix says (a .yaml that is a template: plain text)
    notes: tuple[str, ...] = ()
    # golden queries too short for one changed word to reach the threshold: found when copied
    # exactly or with an inflected word (case and punctuation aside), not with a changed word
    short: tuple[str, ...] = ()
    threshold: float = 0.85
    # golden queries under min_tokens tokens: too short to attribute, never looked for
    too_short: tuple[str, ...] = ()
    min_tokens: int = DEFAULT_MIN_TOKENS

    def groups(self) -> list[tuple[str, str, list[PromptMatch]]]:
        """The matches grouped by what they quote: (kind, query or doc id, matches in file/line
        order), the group with the most matches first."""
        by: dict[tuple[str, str], list[PromptMatch]] = {}
        for m in self.matches:
            by.setdefault((m.kind, m.query_id or m.doc_id or ""), []).append(m)
        return [(kind, what, ms) for (kind, what), ms in
                sorted(by.items(), key=lambda item: (-len(item[1]), item[0][0], item[0][1].encode()))]

    def to_dict(self) -> dict[str, Any]:
        groups = self.groups()
        return {"files_scanned": len(self.files), "count": len(self.matches),
                "matches": [m.to_dict() for _, _, ms in groups for m in ms[:MATCHES_KEPT]],
                "by_query": [{"kind": kind, "id": what, "count": len(ms),
                              "files": len({m.file for m in ms}),
                              "first": f"{ms[0].file}:{ms[0].line}"} for kind, what, ms in groups],
                "problems": list(self.problems), "notes": list(self.notes),
                "short_query_count": len(self.short), "short_queries": list(self.short[:MATCHES_KEPT]),
                "threshold": self.threshold,
                "too_short_count": len(self.too_short), "too_short": list(self.too_short[:MATCHES_KEPT]),
                "min_tokens": self.min_tokens}


def _display(path: Path, root: Path) -> str:
    """A path as report.json and the comment show it: relative to the repository, and a name that
    is not UTF-8 with its bytes escaped (\\xe9), never a lone surrogate."""
    name = str(path.relative_to(root)) if path.is_relative_to(root) else os.path.relpath(path, root)  # ../prompts
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def prompt_files(root: Path, globs: Sequence[str], problems: list[str] | None = None,
                 exclude: Sequence[Path] = ()) -> list[Path]:
    """The files the globs match, in order; a glob that matches none is named in ``problems``
    (a misspelt folder would otherwise scan nothing and pass), and so is a file (or a symlinked
    folder) leading out of the repository, and a symlink to a missing file. Files in ``.git`` and
    the ``exclude`` folders (the gate's own) are left out, and a glob matching only those says so."""
    found: dict[Path, None] = {}
    skipped = [Path(os.path.realpath(folder)) for folder in exclude]
    top = git.repo_root(root) or Path(root)  # a glob's '..' may name files beside the config's folder
    real_root = Path(os.path.realpath(top))
    for pattern in globs:
        matched: list[Path | None] = []
        left_out = 0
        # The glob's one meaning (gate.inputs.globs), as the watch list reads it: the files a commit
        # of the working tree would hold (Path.glob("prompts/**") yields only folders on 3.11).
        try:
            named = matched_inputs(root, [pattern], "prompts")
        except InputError as problem:
            if problems is not None:
                problems.append(f"the prompts glob {pattern!r} names no file: {problem.message}")
            continue
        for path in sorted(named.values()):
            why = _not_scanned(path, top, real_root, skipped)
            if why == _LEFT_OUT:
                left_out += 1
                continue
            if why is not None:
                if problems is not None:
                    problems.append(f"the prompt file {_display(path, root)} {why}: not scanned")
                matched.append(None)
                continue
            if path.is_file():
                matched.append(path)
        if not matched and problems is not None:
            problems.append(_no_file_problem(pattern, left_out))
        for scanned in matched:
            if scanned is not None:
                found[scanned] = None
    return list(found)


#: What _not_scanned says of a path in .git or in an excluded folder (counted, never named).
_LEFT_OUT = "in .git or the gate's own folders"
#: What _not_scanned says of a folder outside the repository (skipped silently).
def _not_scanned(path: Path, root: Path, real_root: Path, skipped: Sequence[Path]) -> str | None:
    """Why a path a prompts glob matched is not scanned: _LEFT_OUT, or the problem to name; None
    when it is scanned (if it is a file). ``root``: the repository's top (the config's folder
    outside git)."""
    # realpath, not resolve(): a symlink loop is a file to name, not a RuntimeError
    target = Path(os.path.realpath(path))
    in_git = ".git" in path.relative_to(root).parts or (
        target.is_relative_to(real_root) and ".git" in target.relative_to(real_root).parts)
    if in_git or any(target.is_relative_to(f) for f in skipped):
        return _LEFT_OUT
    if path.is_symlink() and not os.path.exists(target):
        return "is a symlink to a missing file (or a loop)"
    if not target.is_relative_to(real_root):
        return "leads out of the repository (a symlink)"
    return None


def _no_file_problem(pattern: str, left_out: int) -> str:
    return (f"the prompts glob '{pattern}' matches no file"
            + (f" but {counted(left_out, 'file', 'files')} in .git or the gate's own folders, "
               "which are never prompts" if left_out else "") + ": nothing was scanned for it")


_BOMS = ((b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"), (b"\xef\xbb\xbf", "utf-8-sig"),
         (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))


def prompt_text(path: Path) -> str:
    """A prompt file's text: UTF-8, or UTF-8/UTF-16/UTF-32 with a byte-order mark. Anything else (a gzip
    file, binary data, another encoding) is a ValueError naming what it looks like: scanned as
    replacement characters it would show no match and pass."""
    size = path.stat().st_size
    if size > MAX_PROMPT_BYTES:
        raise ValueError(f"is {size / 2**20:.1f} MiB, over the {MAX_PROMPT_BYTES // 2**20} MiB a prompt file may have")
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


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class Scalar:
    """One value of a parsed file, or one line of a plain text file."""
    line: int
    text: str
    key: str | None = None  # the mapping key it is the value of (the list's key for a list item)
    in_id_list: bool = False  # an item of a list holding at least two (rare) judged doc ids
    # a value over several lines: (line, source text) of each, when they read as the value does
    pieces: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True)
class Passage:
    """Text scanned as one: a plain text file as a whole, or one string value of a parsed file.
    ``lines[i]`` is the line of token ``i``."""
    file: str
    tokens: tuple[str, ...]
    lines: Sequence[int]  # an array('I'): four bytes a token


@dataclass(frozen=True)
class PromptFile:
    name: str
    scalars: tuple[Scalar, ...]  # values (parsed) or lines (plain text), for doc ids
    passages: tuple[Passage, ...]
    note: str | None = None


def _passage(name: str, pieces: Iterable[tuple[int, str]]) -> Passage:
    toks: list[str] = []
    lines: list[int] = []
    for line, text in pieces:
        words = normalize(text).split()
        toks.extend(map(sys.intern, words))  # a text repeats its words: one string each
        lines.extend([line] * len(words))
    return Passage(name, tuple(toks), array("I", lines))


def _source_pieces(node: Any, source: Sequence[str]) -> tuple[tuple[int, str], ...]:
    """The source lines of a value written over several lines, each with its line number, when
    their tokens are the value's (a literal or folded block, a plain or quoted scalar without
    escapes): a match inside it is then placed on its own line. Otherwise ()."""
    start, end = node.start_mark, node.end_mark
    if end.line <= start.line or end.line >= len(source) + 1:
        return ()
    if node.style in ("|", ">"):
        last = end.line - 1 if end.column == 0 else end.line
        pieces = [(n + 1, source[n]) for n in range(start.line + 1, min(last, len(source) - 1) + 1)]
    else:
        pieces = [(start.line + 1, source[start.line][start.column:])]
        pieces += [(n + 1, source[n]) for n in range(start.line + 1, end.line)]
        if end.line < len(source):
            pieces.append((end.line + 1, source[end.line][:end.column]))
    tokens = [t for _, text in pieces for t in normalize(text).split()]
    return tuple(pieces) if tokens == normalize(str(node.value)).split() else ()


def _walk(node: Any, key: str | None, judged: frozenset[str], out: list[Scalar], seen: set[int],
          in_list: bool = False, source: Sequence[str] = ()) -> None:
    if id(node) in seen:  # an alias: its node is scanned once
        return
    seen.add(id(node))
    if isinstance(node, ScalarNode):
        _walk_scalar(node, key, out, in_list, source)
    elif isinstance(node, SequenceNode):
        items = node.value
        ids = len({str(item.value).strip() for item in items
                   if isinstance(item, ScalarNode) and str(item.value).strip() in judged})
        for item in items:
            _walk(item, key, judged, out, seen, ids >= 2, source)
    elif isinstance(node, MappingNode):
        _walk_mapping(node, judged, out, seen, source)


def _walk_scalar(node: Any, key: str | None, out: list[Scalar], in_list: bool, source: Sequence[str]) -> None:
    if node.tag.endswith((":null", ":bool")):
        return
    line = node.start_mark.line + 1
    if node.style in ("|", ">"):  # a block scalar's text starts below its indicator
        line += 1
    pieces = _source_pieces(node, source) if source else ()
    if pieces:
        line = next((n for n, text in pieces if normalize(text).strip()), line)
    out.append(Scalar(line, str(node.value), key, in_list, pieces))


def _walk_mapping(node: Any, judged: frozenset[str], out: list[Scalar], seen: set[int],
                  source: Sequence[str]) -> None:
    # A mapping keyed by doc ids ({7067032: "...", 7067034: "..."}) lists them as its keys.
    keyed = len({str(k.value).strip() for k, _ in node.value
                 if isinstance(k, ScalarNode) and str(k.value).strip() in judged}) >= 2
    for k, v in node.value:
        name_id = str(k.value).strip() if isinstance(k, ScalarNode) else ""
        if name_id in judged and (keyed or not name_id.isdigit()):  # a letter id counts anywhere
            out.append(Scalar(k.start_mark.line + 1, str(k.value), None, keyed))
        name = str(k.value) if isinstance(k, ScalarNode) else None
        if isinstance(k, ScalarNode) and len(name or "") > LONG_KEY:
            out.append(Scalar(k.start_mark.line + 1, str(k.value)))  # a long key is text too
        _walk(v, name, judged, out, seen, False, source)


_JSON_SPACE = re.compile(r"[ \t\n\r]*")
_JSON_LITERAL = re.compile(r"-?[0-9][0-9.eE+-]*|true|false|null|NaN|-?Infinity")
#: A key longer than this is scanned as text too (a prompt written as a mapping key).
LONG_KEY = 40


def _json_scalars(text: str, judged: frozenset[str], first_line: int = 1) -> list[Scalar]:
    """The scalars of a JSON document with the line each starts on; ValueError naming the line it
    fails on. Validated by the json module, then walked by one pass over the text with the json
    module's own string scanner (the YAML parser would take seconds a megabyte)."""
    try:
        json.loads(text, parse_int=str, parse_float=str, parse_constant=str)  # any size of number is JSON
    except json.JSONDecodeError as error:
        raise ValueError(f"line {error.lineno + first_line - 1}: {error.msg}") from None
    except RecursionError:
        raise ValueError("nested too deep") from None
    breaks = [m.start() for m in _YAML_BREAK.finditer(text)]  # \r\n, \n, or an old Mac's \r
    out: list[Scalar] = []
    # a frame: [kind ("{" or "["), the key its values sit under, buffered (line, text) items, judged count]
    stack: list[list[Any]] = []
    expecting_key = False
    i, n = 0, len(text)
    while True:
        space = _JSON_SPACE.match(text, i)
        assert space is not None  # it matches the empty string
        i = space.end()
        if i >= n:
            break
        c = text[i]
        if c in "{[":
            under = stack[-1][1] if stack else None
            stack.append([c, under, [], set()])
            expecting_key = c == "{"
            i += 1
        elif c in "}]":
            _close_json_frame(stack.pop(), out)
            expecting_key = False
            i += 1
        elif c == ",":
            expecting_key = bool(stack) and stack[-1][0] == "{"
            i += 1
        elif c == ":":
            i += 1
        else:
            line = bisect.bisect_left(breaks, i) + first_line
            if c == '"':
                value, i = scanstring(text, i + 1)
            else:
                literal = _JSON_LITERAL.match(text, i)
                assert literal is not None  # the text is valid JSON: a literal stands here
                value, i = literal.group(), literal.end()
                if value in ("true", "false", "null"):
                    continue
            if _json_value(stack[-1] if stack else None, expecting_key, line, value, judged, out):
                expecting_key = False
    return out


def _close_json_frame(frame: list[Any], out: list[Scalar]) -> None:
    """A list's or a mapping's buffered items, once it ends (when it is known whether it lists ids)."""
    kind, key, items, ids = frame
    keyed = len(ids) >= 2
    if kind == "[":
        out.extend(Scalar(line, value, key, keyed) for line, value in items)
    else:  # a mapping's keys that are judged ids: all when it is keyed by them, else letter ids
        out.extend(Scalar(line, value, None, keyed) for line, value in items
                   if keyed or not value.strip().isdigit())


def _json_value(frame: list[Any] | None, expecting_key: bool, line: int, value: str, judged: frozenset[str],
                out: list[Scalar]) -> bool:
    """A string or a number of a JSON document, in its frame (None: the document's top); whether it
    was a mapping's key."""
    if frame is not None and frame[0] == "{" and expecting_key:
        frame[1] = value
        if len(value) > LONG_KEY:
            out.append(Scalar(line, value))
        if value.strip() in judged:  # a mapping keyed by doc ids lists them as its keys
            frame[3].add(value.strip())
            frame[2].append((line, value))
        return True
    if frame is not None and frame[0] == "[":
        if value.strip() in judged:
            frame[3].add(value.strip())
        frame[2].append((line, value))
    else:
        out.append(Scalar(line, value, frame[1] if frame is not None else None))
    return False


_YAML_BREAK = re.compile("\r\n|[\n\r]")  # where the YAML parser counts a new line (not at U+2028, NEL)


def _parsed(text: str, kind: str, judged: frozenset[str]) -> list[Scalar]:
    """The scalars of a YAML or JSON document; ValueError naming the line it fails on."""
    if kind == "JSON":
        return _json_scalars(text, judged)
    out: list[Scalar] = []
    try:
        source = _YAML_BREAK.split(text)
        for document in YAML(typ="rt").compose_all(io.StringIO(text)):
            if document is not None:
                _walk(document, None, judged, out, set(), False, source)
    except MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise ValueError(f"{where}{(error.problem or error.context or 'not valid').strip()}") from None
    except (YAMLError, RecursionError) as error:
        raise ValueError(str(error).splitlines()[0] if str(error) else "not valid") from None
    return out


def _lines(text: str) -> list[str]:
    """Lines as an editor numbers them: split at \\n (a \\r before it dropped), not at the other
    characters str.splitlines() also breaks at (form feed, U+2028 ...)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def read_prompt_file(path: Path, name: str, judged: frozenset[str] = frozenset()) -> PromptFile:
    """A prompt file as scalars and passages. Raises ValueError (not text) or OSError."""
    text = prompt_text(path)
    suffix = path.suffix.lower()
    kind = STRUCTURED.get(suffix)
    note = None
    if kind == "YAML" and len(text) > MAX_YAML_BYTES:
        note = f"{name} is over {MAX_YAML_BYTES // 2**20} MiB: scanned as plain text, not parsed as YAML"
    elif kind is not None or suffix in JSON_LINES:
        parsed = (_structured_file(text, kind, name, judged) if kind is not None
                  else _json_lines_file(text, name, judged))
        if isinstance(parsed, PromptFile):
            return parsed
        note = parsed
    return _plain_text_file(text, name, judged, note)


def _structured_file(text: str, kind: str, name: str, judged: frozenset[str]) -> PromptFile | str:
    """A YAML or JSON file as its parser reads it, or the note saying why it is read as plain text."""
    try:
        scalars = _parsed(text, kind, judged)
    except ValueError as error:
        return f"{name} is not valid {kind} ({error}): scanned as plain text"
    return PromptFile(name, tuple(scalars), tuple(_passage(name, s.pieces or [(s.line, s.text)]) for s in scalars))


def _json_lines_file(text: str, name: str, judged: frozenset[str]) -> PromptFile | str:
    """A JSON document per line, or the note saying why the file is read as plain text."""
    scalars = []
    for number, line in enumerate(_lines(text), start=1):
        if not line.strip():
            continue
        try:
            scalars.extend(_json_scalars(line, judged, number))
        except ValueError as error:
            return f"{name} line {number} is not JSON ({str(error).partition(': ')[2]}): scanned as plain text"
    return PromptFile(name, tuple(scalars), tuple(_passage(name, [(s.line, s.text)]) for s in scalars))


def _plain_text_file(text: str, name: str, judged: frozenset[str], note: str | None) -> PromptFile:
    raw = _lines(text)
    # Lines that are each a judged doc id alone, two or more in a row, are a list of ids.
    alone = [line.strip() if line.strip() in judged else None for line in raw]
    listed = [a is not None and any(0 <= j < len(alone) and alone[j] not in (None, a) for j in (i - 1, i + 1))
              for i, a in enumerate(alone)]
    lines = [Scalar(number, line, None, listed[number - 1]) for number, line in enumerate(raw, start=1)]
    return PromptFile(name, tuple(lines), (_passage(name, [(s.line, s.text) for s in lines]),), note)


# --------------------------------------------------------------------------- query text


@dataclass(frozen=True)
class _Chunk:
    chunk_id: str
    doc_id: str
    text: str
    normalized: bool = True


#: Tokens of text the engine sees as one chunk: a long passage is scanned as overlapping segments
#: (each window of a query's length lies whole in one), so locating a match reads one segment.
SEGMENT = 256


def _windows(query: Sequence[str], toks: Sequence[str], threshold: float) -> list[tuple[int, float, bool]]:
    """Every window of ``toks`` (as many tokens as the query, all of ``toks`` when shorter) whose
    trigram Jaccard with the query reaches the threshold: (start, score, exact)."""
    n = min(len(query), len(toks))
    if n == 0:
        return []
    q = " ".join(query)
    qset = trigrams(q)
    hits = []
    for s in range(len(toks) - n + 1):
        window = " ".join(toks[s:s + n])
        if window == q:
            hits.append((s, 1.0, True))
            continue
        w = trigrams(window)
        score = len(qset & w) / len(qset | w) if w else 0.0
        if score >= threshold:
            hits.append((s, score, False))
    return hits


def _distinct(hits: Iterable[tuple[int, float, bool]], n: int) -> list[tuple[int, float, bool]]:
    """One hit per run of overlapping windows of ``n`` tokens: exact first, then the best score."""
    chosen: list[tuple[int, float, bool]] = []
    taken: list[tuple[int, int]] = []
    for s, score, exact in sorted(set(hits), key=lambda h: (-h[2], -h[1], h[0])):
        if any(s < end and start < s + n for start, end in taken):
            continue
        taken.append((s, s + n))
        chosen.append((s, score, exact))
    return sorted(chosen)


def _segments(passage: Passage, longest: int) -> list[tuple[int, int]]:
    """(start, end) token ranges covering the passage, overlapping so that every window of up to
    ``longest`` tokens lies whole in one of them."""
    size = max(SEGMENT, 2 * longest)
    step = size - longest
    total = len(passage.tokens)
    if total <= size:
        return [(0, total)]
    return [(start, min(start + size, total)) for start in range(0, total - longest + 1, step)]


def _query_matches(queries: Sequence[Query], passages: Sequence[Passage], threshold: float,
                   min_tokens: int) -> list[PromptMatch]:
    norm = {q.query_id: normalize(q.text or "").split() for q in queries}
    longest = max((len(t) for t in norm.values()), default=1) or 1
    pieces = [(index, start, end) for index, p in enumerate(passages) for start, end in _segments(p, longest)]
    pairs: set[tuple[str, int]] = set()

    def on_match(query_id: str, chunk_id: str, _doc: str, _exact: bool, _score: float) -> None:
        pairs.add((query_id, int(chunk_id)))

    chunks = (_Chunk(str(k), passages[index].file, " ".join(passages[index].tokens[start:end]))
              for k, (index, start, end) in enumerate(pieces))
    find_leaks(queries, chunks, modes=("exact", "trigram-jaccard"), threshold=threshold, min_tokens=min_tokens,
               workers=0, on_match=on_match)
    # Each matched segment located, its windows taken back to the passage, then one per occurrence.
    found: dict[tuple[str, int], list[tuple[int, float, bool]]] = {}
    for query_id, k in pairs:
        index, start, end = pieces[k]
        hits = _windows(norm[query_id], passages[index].tokens[start:end], threshold)
        found.setdefault((query_id, index), []).extend((start + s, score, exact) for s, score, exact in hits)
    out: dict[tuple[str, int, str], PromptMatch] = {}
    for (query_id, index), hits in sorted(found.items()):
        passage = passages[index]
        for start, score, exact in _distinct(hits, min(len(norm[query_id]), len(passage.tokens))):
            key = (passage.file, passage.lines[start], query_id)
            how = "exact" if exact else f"trigram-jaccard, score {score:.2f}"
            if key not in out or exact:
                out[key] = PromptMatch(passage.file, passage.lines[start], "query_text", query_id, None,
                                       f"golden query quoted ({how})")
    return list(out.values())


def one_changed_word_score(normalized_query: str) -> float:
    """The best score a copy of the query with one word changed can reach: the cheapest word to
    change, replaced by a word of the same length sharing no trigram with the query."""
    words = normalized_query.split()
    qset = trigrams(normalized_query)
    if len(words) < 2 or not qset:
        return 0.0
    best = 0.0
    for i, word in enumerate(words):
        fresh = "".join(chr(0xE000 + j) for j in range(len(word)))  # letters no query has
        w = trigrams(" ".join(words[:i] + [fresh] + words[i + 1:]))
        best = max(best, len(qset & w) / len(qset | w))
    return best


def short_queries(queries: Iterable[Query], threshold: float, min_tokens: int) -> tuple[str, ...]:
    out = []
    for q in queries:
        norm = normalize(q.text or "")
        if len(norm.split()) >= min_tokens and one_changed_word_score(norm) < threshold:
            out.append(q.query_id)
    return tuple(out)


# --------------------------------------------------------------------------- doc ids

#: Words that make a key name a document id: singular for a value or a list's items, plural
#: (``docs``, ``passage_ids``) for a list's items only; a key holding a count word (``max_docs``,
#: ``num_passages``, ``top_k``) names a number of documents, not one.
ID_WORDS = frozenset({"docid", "docno", "doc", "document", "passage", "pid", "did", "id", "chunk", "chunkid"})
ID_LIST_WORDS = ID_WORDS | frozenset({"docids", "docnos", "docs", "documents", "passages", "pids", "dids", "ids",
                                      "chunks", "chunkids"})
COUNT_WORDS = frozenset({"max", "min", "num", "n", "count", "total", "top", "size", "limit", "k", "len", "length"})
#: A number is evidence of a doc id in a list or a path only when numbers of its size are rarely
#: judged doc ids (TREC DL 2019: 9,139 of 8.8 million); Cranfield's 1..1400 are every small number.
RARE_SHARE = 1 / 30
_KEY_WORD = re.compile(r"[a-z]+|[0-9]+")
#: A label naming one document right before a number: ``doc 1729``, ``passage_id=1729``,
#: ``[pid: 1729]``, ``docid:1729``, ``id #1729``; not a count (``max_docs: 5``, ``top passages 3``).
_LABEL_BEFORE = re.compile(
    r"(?i)(?<![a-z])(?<!(?:max|min|num|top)[ _-])(?<!(?:count|total|limit)[ _-])(?<![a-z]_)"
    r"(?:(?:doc(?:ument)?|docid|docno|passage|pid|chunk)(?:[ _-]?(?:id|no|number))?\s*(?:[:=#]|=>)?|id\s*[:=#]?)"
    r"\s*[\"'(\[]?\s*#?$")
_PATH_AFTER = re.compile(r"(?:$|[/?#&\"')\]\s,;]|\.[A-Za-z]{1,5}(?!\w)|\.(?:\s|$))")
#: A whole number: not part of a word, a decimal, a negative, a price or a version.
_NUMBER = re.compile(r"(?<![\w.$€£-])\d+(?![\w-]|\.\d)")
_LIST_GAP = re.compile(r"\s*[\"']?\s*[,;]\s*[\"']?\s*")
_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+")


def rare_ids(judged: Iterable[str]) -> frozenset[str]:
    """The judged doc ids a number in a list, a path or after a label may stand for: every id with a
    letter in it, and numeric ids of a length at which fewer than RARE_SHARE of the numbers between
    the smallest and the largest judged id of that length are judged ids (a length with one judged
    id says nothing either way: not rare)."""
    judged = set(judged)
    by_length: dict[int, list[int]] = {}
    for doc in judged:
        if doc.isdigit():
            by_length.setdefault(len(doc), []).append(int(doc))

    def share(length: int) -> float:
        # judged ids among the numbers their span covers: Cranfield's 4-digit ids fill 1000..1400
        ids = by_length[length]
        return len(ids) / (max(ids) - min(ids) + 1)

    rare_lengths = {length for length in by_length if len(by_length[length]) > 1 and share(length) < RARE_SHARE}
    return frozenset(d for d in judged if not d.isdigit() or len(d) in rare_lengths)


def _key_words(key: str) -> list[str]:
    return _KEY_WORD.findall(re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", key).lower())


def _id_key(key: str | None, in_list: bool = False) -> bool:
    if not key:
        return False
    words = _key_words(key)
    if not words or COUNT_WORDS & set(words):
        return False
    names = ID_LIST_WORDS if in_list else ID_WORDS
    if words[-1] in ("id", "ids") and len(words) > 1:  # query_id, user_id: ids of other things
        return "".join(words[-2:]) in names or words[-2] in ID_LIST_WORDS
    return words[-1] in names or "".join(words[-2:]) in names


def _listed_numbers(text: str, rare: frozenset[str]) -> set[str]:
    """Numbers in a run like ``1729, 6138`` (or ``"1729";"6138"``) holding two or more distinct rare
    judged ids: those ids."""
    out: set[str] = set()
    run: list[re.Match[str]] = []

    def close() -> None:
        if len(run) > 1 and not _THOUSANDS.fullmatch(text[run[0].start():run[-1].end()]):
            ids = {m.group() for m in run if m.group() in rare}
            if len(ids) >= 2:
                out.update(ids)

    for number in _NUMBER.finditer(text):
        if run and not _LIST_GAP.fullmatch(text, run[-1].end(), number.start()):
            close()
            run = []
        run.append(number)
    close()
    return out


def _numeric_in_context(text: str, start: int, end: int, rare: bool) -> str | None:
    """How the number at text[start:end] stands for a doc id: after an id label, or (a rare id) as
    a path or URL segment; None when it does not."""
    if rare and _LABEL_BEFORE.search(text[max(0, start - 40):start]):  # not "Document 2:" in a template
        return "after an id label"
    if rare and start > 0 and text[start - 1] == "/" and _PATH_AFTER.match(text[end:end + 8]):
        segment = re.split(r"[/\s]", text[max(0, start - 41):start - 1])[-1]
        if not segment.isdigit():  # 12/1729/2020 and 2019/6138 are dates, not paths
            return "a path segment"
    return None


def _id_matches(file: PromptFile, relevant: frozenset[str], rare: frozenset[str],
                pattern: re.Pattern[str] | None) -> list[PromptMatch]:
    out: dict[tuple[int, str], PromptMatch] = {}
    numeric = {d for d in relevant if d.isdigit()}

    def found(line: int, doc: str, how: str) -> None:
        out.setdefault((line, doc), PromptMatch(file.name, line, "relevant_doc_id", None, doc,
                                                f"a document the golden qrels mark relevant ({how})"))

    for s in file.scalars:
        whole = s.text.strip()
        if whole in relevant and (not whole.isdigit() or _id_key(s.key, s.in_id_list) or s.in_id_list):
            found(s.line, whole, "as a whole word" if not whole.isdigit() else
                  f"the value of {s.key!r}" if _id_key(s.key, s.in_id_list) else "in a list of doc ids")
            continue
        for line, text in s.pieces or ((s.line, s.text),):
            if pattern is not None:
                for hit in set(pattern.findall(text)):
                    # Whole ids only: "doc_1" must not match inside "doc_12" (a path or an anchor may hold it).
                    if re.search(rf"(?<![\w.-]){re.escape(hit)}(?![\w-])", text):
                        found(line, hit, "as a whole word")
            if numeric:
                listed_ids = _listed_numbers(text, rare)
                for number in _NUMBER.finditer(text):
                    doc = number.group()
                    if doc not in numeric:
                        continue
                    how = "in a list of doc ids" if doc in listed_ids else \
                        _numeric_in_context(text, number.start(), number.end(), doc in rare)
                    if how is not None:
                        found(line, doc, how)
    return list(out.values())


# --------------------------------------------------------------------------- doc text


def _shingles(tokens: Sequence[str], n: int = SHINGLE) -> set[tuple[str, ...]]:
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


def _text_matches(passages: Sequence[Passage], relevant_texts: Mapping[str, str]) -> list[PromptMatch]:
    owner: dict[tuple[str, ...], str] = {}
    for doc_id, text in relevant_texts.items():
        for shingle in _shingles(normalize(text).split()):
            owner.setdefault(shingle, doc_id)
    out: dict[tuple[str, int, str], PromptMatch] = {}
    for p in passages:
        for i in range(len(p.tokens) - SHINGLE + 1):
            doc = owner.get(p.tokens[i:i + SHINGLE])
            if doc is not None:
                out.setdefault((p.file, p.lines[i], doc), PromptMatch(
                    p.file, p.lines[i], "relevant_doc_text", None, doc,
                    f"shares {SHINGLE} consecutive tokens with a relevant document"))
    return list(out.values())


# --------------------------------------------------------------------------- the check


def scan_prompts(
    root: Path,
    globs: Sequence[str],
    queries: Iterable[Query],
    qrels: Qrels,
    relevant_texts: Mapping[str, str],
    rel: int = 1,
    threshold: float = 0.85,
    min_tokens: int = DEFAULT_MIN_TOKENS,
    exclude: Sequence[Path] = (),
) -> PromptsCheck:
    """``exclude``: folders whose files are never prompts (the gate's own work and output folders:
    a report quoting the golden set would be found by the next run)."""
    queries = list(queries)
    problems: list[str] = []
    notes: list[str] = []
    ids = _JudgedIds.of(qrels, rel)
    read = _read_prompt_files(root, globs, ids.rare, exclude, problems, notes)
    passages = [p for f in read for p in f.passages if p.tokens]
    matches: list[PromptMatch] = []
    if passages and queries:
        matches += _query_matches(queries, passages, threshold, min_tokens)
    if ids.relevant:
        for f in read:
            matches += _id_matches(f, ids.relevant, ids.rare, ids.pattern)
    if relevant_texts and passages:
        matches += _text_matches(passages, relevant_texts)
    matches.sort(key=lambda m: (m.file, m.line, m.kind, m.query_id or m.doc_id or ""))
    unchecked = tuple(q.query_id for q in queries if len(normalize(q.text or "").split()) < min_tokens)
    return PromptsCheck(tuple(f.name for f in read), tuple(matches), tuple(problems), tuple(notes),
                        short_queries(queries, threshold, min_tokens), threshold, unchecked, min_tokens)


@dataclass(frozen=True)
class _JudgedIds:
    """The doc ids of the golden qrels a prompt must not name."""

    rare: frozenset[str]  # judged ids a number may stand for (rare_ids)
    relevant: frozenset[str]  # judged relevant (label >= rel)
    pattern: re.Pattern[str] | None  # the relevant ids that are not numbers, longest first

    @classmethod
    def of(cls, qrels: Qrels, rel: int) -> _JudgedIds:
        rare = rare_ids(doc for docs in qrels.judgments.values() for doc in docs)
        relevant = frozenset(doc for docs in qrels.judgments.values() for doc, label in docs.items() if label >= rel)
        words = sorted((d for d in relevant if not d.isdigit()), key=len, reverse=True)
        pattern = re.compile("|".join(re.escape(d) for d in words)) if words else None
        return cls(rare, relevant, pattern)


def _read_prompt_files(root: Path, globs: Sequence[str], rare: frozenset[str], exclude: Sequence[Path],
                       problems: list[str], notes: list[str]) -> list[PromptFile]:
    """The prompt files the globs match, read; those that cannot be named in ``problems``, how a
    file was read when not as its suffix says in ``notes``."""
    read: list[PromptFile] = []
    for path in prompt_files(root, globs, problems, exclude):
        display = _display(path, root)
        try:
            prompt_file = read_prompt_file(path, display, rare)
        except OSError as error:
            problems.append(f"the prompt file {display} cannot be read ({error.strerror or error}): not scanned")
            continue
        except ValueError as error:
            problems.append(f"the prompt file {display} {error}: not scanned")
            continue
        read.append(prompt_file)
        if prompt_file.note:
            notes.append(prompt_file.note)
    return read
