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
    whole word. An id of digits only (MS MARCO's ``7067032``) counts only in an id context:
    the value of a key naming an id (``doc``, ``docid``, ``passage``, ``pid``, ``id``,
    ``chunk``, ... or a key ending in one of them), a list (a mapping's keys, lines holding only
    an id) of at least two judged doc ids, a path or URL segment (``/passages/7067032``, ``7067032.txt`` after a ``/``), or in
    text right after such a label (``doc 7067032``, ``passage_id=7067032``, ``[pid: 7067032]``).
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
from array import array
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from gate.checks.leakage import DEFAULT_MIN_TOKENS, find_leaks
from gate.checks.normalize import normalize, trigrams
from gate.inputs.readers.records import Qrels, Query

SHINGLE = 8
#: Matches kept per query in report.json and shown per query in the comment (counts cover all).
MATCHES_KEPT = 50
#: A prompt file is read whole (its tokens with their lines: about 30 bytes of memory a byte of
#: text); a larger one is named as not scanned rather than exhausting the runner's memory.
MAX_PROMPT_BYTES = 16 * 2**20
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
                "threshold": self.threshold}


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
    in_id_list: bool = False  # an item of a list holding at least two judged doc ids


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


def _walk(node: Any, key: str | None, judged: frozenset[str], out: list[Scalar], seen: set[int],
          in_list: bool = False) -> None:
    from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

    if id(node) in seen:  # an alias: its node is scanned once
        return
    seen.add(id(node))
    if isinstance(node, ScalarNode):
        if node.tag.endswith((":null", ":bool")):
            return
        line = node.start_mark.line + 1
        if node.style in ("|", ">"):  # a block scalar's text starts below its indicator
            line += 1
        out.append(Scalar(line, str(node.value), key, in_list))
    elif isinstance(node, SequenceNode):
        items = node.value
        ids = sum(1 for item in items if isinstance(item, ScalarNode) and str(item.value).strip() in judged)
        for item in items:
            _walk(item, key, judged, out, seen, ids >= 2)
    elif isinstance(node, MappingNode):
        # A mapping keyed by doc ids ({7067032: "...", 7067034: "..."}) lists them as its keys.
        keyed = sum(1 for k, _ in node.value if isinstance(k, ScalarNode) and str(k.value).strip() in judged) >= 2
        for k, v in node.value:
            if keyed and isinstance(k, ScalarNode) and str(k.value).strip() in judged:
                out.append(Scalar(k.start_mark.line + 1, str(k.value), None, True))
            name = str(k.value) if isinstance(k, ScalarNode) else None
            if isinstance(k, ScalarNode) and len(name or "") > LONG_KEY:
                out.append(Scalar(k.start_mark.line + 1, str(k.value)))  # a long key is text too
            _walk(v, name, judged, out, seen)


_JSON_SPACE = re.compile(r"[ \t\n\r]*")
_JSON_LITERAL = re.compile(r"-?[0-9][0-9.eE+-]*|true|false|null|NaN|-?Infinity")
#: A key longer than this is scanned as text too (a prompt written as a mapping key).
LONG_KEY = 40


def _json_scalars(text: str, judged: frozenset[str], first_line: int = 1) -> list[Scalar]:
    """The scalars of a JSON document with the line each starts on; ValueError naming the line it
    fails on. Validated by the json module, then walked by one pass over the text with the json
    module's own string scanner (the YAML parser would take seconds a megabyte)."""
    from json.decoder import scanstring

    try:
        json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"line {error.lineno + first_line - 1}: {error.msg}") from None
    except RecursionError:
        raise ValueError("nested too deep") from None
    breaks = [m.start() for m in re.finditer("\n", text)]
    out: list[Scalar] = []
    # a frame: [kind ("{" or "["), the key its values sit under, buffered (line, text) items, judged count]
    stack: list[list[Any]] = []
    expecting_key = False
    i, n = 0, len(text)
    while True:
        i = _JSON_SPACE.match(text, i).end()
        if i >= n:
            break
        c = text[i]
        if c in "{[":
            under = stack[-1][1] if stack else None
            stack.append([c, under, [], 0])
            expecting_key = c == "{"
            i += 1
        elif c in "}]":
            kind, key, items, ids = stack.pop()
            if kind == "[" or ids >= 2:  # a list's items; a mapping's keys when it is keyed by doc ids
                out.extend(Scalar(line, value, key if kind == "[" else None, ids >= 2) for line, value in items)
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
                value, i = literal.group(), literal.end()
                if value in ("true", "false", "null"):
                    continue
            frame = stack[-1] if stack else None
            if frame is not None and frame[0] == "{" and expecting_key:
                frame[1] = value
                expecting_key = False
                if len(value) > LONG_KEY:
                    out.append(Scalar(line, value))
                if value.strip() in judged:  # a mapping keyed by doc ids lists them as its keys
                    frame[3] += 1
                    frame[2].append((line, value))
            elif frame is not None and frame[0] == "[":
                frame[3] += value.strip() in judged
                frame[2].append((line, value))
            else:
                out.append(Scalar(line, value, frame[1] if frame is not None else None))
    return out


def _parsed(text: str, kind: str, judged: frozenset[str]) -> list[Scalar]:
    """The scalars of a YAML or JSON document; ValueError naming the line it fails on."""
    import io

    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    if kind == "JSON":
        return _json_scalars(text, judged)
    out: list[Scalar] = []
    try:
        for document in YAML(typ="rt").compose_all(io.StringIO(text)):
            if document is not None:
                _walk(document, None, judged, out, set())
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
    if kind is not None:
        try:
            scalars = _parsed(text, kind, judged)
        except ValueError as error:
            note = f"{name} is not valid {kind} ({error}): scanned as plain text"
        else:
            return PromptFile(name, tuple(scalars), tuple(_passage(name, [(s.line, s.text)]) for s in scalars))
    elif suffix in JSON_LINES:
        scalars = []
        for number, line in enumerate(_lines(text), start=1):
            if not line.strip():
                continue
            try:
                scalars.extend(_json_scalars(line, judged, number))
            except ValueError as error:
                note = f"{name} line {number} is not JSON ({str(error).partition(': ')[2]}): scanned as plain text"
                break
        else:
            return PromptFile(name, tuple(scalars), tuple(_passage(name, [(s.line, s.text)]) for s in scalars))
    raw = _lines(text)
    # Lines that are each a judged doc id alone, two or more in a row, are a list of ids.
    alone = [line.strip() in judged for line in raw]
    listed = [a and ((i > 0 and alone[i - 1]) or (i + 1 < len(alone) and alone[i + 1])) for i, a in enumerate(alone)]
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

#: Words that make a key, or the text before a number, name a document id.
ID_WORDS = ("docid", "docids", "docno", "docnos", "doc", "docs", "document", "documents", "passage", "passages",
            "pid", "pids", "did", "dids", "id", "ids", "chunk", "chunks", "chunkid")
_KEY_WORD = re.compile(r"[a-z]+|[0-9]+")
_LABEL_BEFORE = re.compile(
    r"(?i)(?<![a-z])(?:(?:doc(?:ument)?s?|docid|docno|passages?|pids?|chunks?)(?:[ _-]?(?:ids?|nos?|numbers?))?"
    r"\s*(?:[:=#]|=>|is)?|ids?\s*[:=#]?)\s*[\"'(\[]?\s*#?$")
_PATH_BEFORE = re.compile(r"/$")
_PATH_AFTER = re.compile(r"(?:$|[/?#&\"')\]\s,;]|\.[A-Za-z]{1,5}(?!\w)|\.(?:\s|$))")


def _id_key(key: str | None) -> bool:
    if not key:
        return False
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", key).lower()
    words = _KEY_WORD.findall(spaced)
    return bool(words) and (words[-1] in ID_WORDS or "".join(words[-2:]) in ID_WORDS)


def _numeric_in_context(text: str, start: int, end: int) -> bool:
    before, after = text[:start], text[end:]
    if _LABEL_BEFORE.search(before[-40:]):
        return True
    return bool(_PATH_BEFORE.search(before)) and bool(_PATH_AFTER.match(after))


_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+")
_LIST_OF_NUMBERS = re.compile(r"\d+(?:\s*[,;]\s*[\"']?\s*\d+)+")


def _id_matches(file: PromptFile, relevant: frozenset[str], judged: frozenset[str],
                pattern: re.Pattern[str] | None) -> list[PromptMatch]:
    out: dict[tuple[int, str], PromptMatch] = {}
    numeric = {d for d in relevant if d.isdigit()}

    def found(line: int, doc: str, how: str) -> None:
        out.setdefault((line, doc), PromptMatch(file.name, line, "relevant_doc_id", None, doc,
                                                f"a document the golden qrels mark relevant ({how})"))

    for s in file.scalars:
        whole = s.text.strip()
        if whole in relevant and (not whole.isdigit() or _id_key(s.key) or s.in_id_list):
            found(s.line, whole, "as a whole word" if not whole.isdigit() else
                  f"the value of {s.key!r}" if _id_key(s.key) else "in a list of doc ids")
            continue
        if pattern is not None:
            for hit in set(pattern.findall(s.text)):
                # Whole ids only: "doc_1" must not match inside "doc_12".
                if re.search(rf"(?<![\w#/.-]){re.escape(hit)}(?![\w#/-])", s.text):
                    found(s.line, hit, "as a whole word")
        if numeric:
            listed_ids: set[str] = set()
            for run in _LIST_OF_NUMBERS.finditer(s.text):
                if _THOUSANDS.fullmatch(run.group()):  # 1,729,000 is one number
                    continue
                items = re.findall(r"\d+", run.group())
                if sum(1 for i in items if i in judged) >= 2:
                    listed_ids.update(i for i in items if i in numeric)
            for number in re.finditer(r"(?<![\w.-])\d+(?![\w-]|\.\d)", s.text):
                doc = number.group()
                if doc not in numeric:
                    continue
                if doc in listed_ids:
                    found(s.line, doc, "in a list of doc ids")
                elif _numeric_in_context(s.text, number.start(), number.end()):
                    found(s.line, doc, "after an id label or in a path")
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
) -> PromptsCheck:
    queries = list(queries)
    problems: list[str] = []
    notes: list[str] = []
    judged = frozenset(doc for docs in qrels.judgments.values() for doc in docs)
    relevant = frozenset(doc for docs in qrels.judgments.values() for doc, label in docs.items() if label >= rel)
    words = sorted((d for d in relevant if not d.isdigit()), key=len, reverse=True)
    pattern = re.compile("|".join(re.escape(d) for d in words)) if words else None
    read: list[PromptFile] = []
    for path in prompt_files(root, globs, problems):
        display = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
        try:
            prompt_file = read_prompt_file(path, display, judged)
        except (OSError, ValueError) as error:
            reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
            problems.append(f"the prompt file {display} {reason}: not scanned")
            continue
        read.append(prompt_file)
        if prompt_file.note:
            notes.append(prompt_file.note)
    passages = [p for f in read for p in f.passages if p.tokens]
    matches: list[PromptMatch] = []
    if passages and queries:
        matches += _query_matches(queries, passages, threshold, min_tokens)
    if relevant:
        for f in read:
            matches += _id_matches(f, relevant, judged, pattern)
    if relevant_texts and passages:
        matches += _text_matches(passages, relevant_texts)
    matches.sort(key=lambda m: (m.file, m.line, m.kind, m.query_id or m.doc_id or ""))
    return PromptsCheck(tuple(f.name for f in read), tuple(matches), tuple(problems), tuple(notes),
                        short_queries(queries, threshold, min_tokens), threshold)


