"""Streaming corpus reader: ``iter_corpus(spec)`` yields :class:`Chunk` records.

Sources:

* JSON Lines (``.jsonl`` / ``.json``, ``.gz`` transparent): the chunk id is the
  first of ``chunk_id``, ``id``, ``_id``, ``doc_id``; ``text`` (a string) is
  required; a non-empty ``title`` is prepended (``title + " " + text``, the
  BEIR convention); ``doc_id`` is optional (one document: a list is refused);
  ``start_char_idx`` / ``end_char_idx`` (LlamaIndex's TextNode keys, both or
  neither, ``null`` for unknown) are the chunk's character offsets in its
  document, which span judgments are mapped through.
* TSV (any other extension): ``id<TAB>text`` or ``chunk_id<TAB>doc_id<TAB>text``,
  the column count decided by the first data line (the text is the rest of the
  line, so it may hold tabs in the 3-column form).  A first line that is a
  header (``id<TAB>text``, ``chunk_id<TAB>doc_id<TAB>text`` and the like) is skipped.
* A BEIR folder: its ``corpus.jsonl``.
* A folder of files (any other folder, see :func:`is_file_tree`): each file a document, its id
  the file's path below the folder (``guides/setup.md``), its text the file's UTF-8 content.
* ``irds:<dataset-id>``: the dataset's documents (``default_text()``).

``doc_id`` defaults to the part of the chunk id before ``#`` (``doc7#3`` is
chunk 3 of ``doc7``).  Errors are :class:`InputError` at the line; a repeated
chunk id is an error (ids are kept in a set; ``check_duplicates="at-end"``
keeps 8 bytes a chunk instead, for corpora too large for that, and refuses
the repeat once the stream is read).
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from gate.common import limits
from gate.common.errors import InputError
from gate.common.limits import shorten
from gate.inputs.readers.beir_folder import beir_corpus
from gate.inputs.readers.fields import check_id, check_unicode, parse_json_line
from gate.inputs.readers.format_hints import corpus_file_hint
from gate.inputs.readers.irds import iter_irds_docs
from gate.inputs.readers.records import Chunk
from gate.inputs.readers.textlines import iter_lines, strip_gz

__all__ = ["Chunk", "iter_corpus", "CHUNK_ID_KEYS"]

CHUNK_ID_KEYS = ("chunk_id", "id", "_id", "doc_id")
_HEADERS = {
    ("id", "text"),
    ("_id", "text"),
    ("doc_id", "text"),
    ("docid", "text"),
    ("chunk_id", "text"),
    ("pid", "text"),
    ("chunk_id", "doc_id", "text"),
    ("id", "doc_id", "text"),
}


def _doc_of(chunk_id: str) -> str:
    return chunk_id.partition("#")[0] or chunk_id


def iter_corpus(spec: str | os.PathLike, check_duplicates: bool | str = True) -> Iterator[Chunk]:
    """Stream the chunks of a corpus file, BEIR folder or ``irds:`` spec.

    ``check_duplicates``: ``True`` refuses a repeated chunk id at its line (the ids are held
    in a set); ``"at-end"`` holds 8 bytes per chunk instead and refuses it once the stream is
    read (for corpora of tens of millions of chunks); ``False`` does not look.
    """
    text = os.fspath(spec)
    if text.startswith("irds:"):
        yield from _iter_irds(text, check_duplicates)
        return
    path = Path(text)
    if is_file_tree(path):
        yield from _dedup(str(path), _iter_files(path), check_duplicates, lambda: _iter_files(path))
        return
    if path.is_dir():
        path = beir_corpus(path)
    reader = _iter_jsonl if path.is_dir() or strip_gz(path).lower().endswith((".jsonl", ".json")) else _iter_tsv
    yield from _dedup(str(path), reader(path), check_duplicates, lambda: reader(path))


def is_file_tree(path: str | os.PathLike) -> bool:
    """A folder read as a tree of files, one document each: a folder that is not a BEIR folder
    (no ``corpus.jsonl``, ``queries.jsonl`` or ``qrels/``; a BEIR folder without its corpus is
    refused as one, not read as files)."""
    path = Path(path)
    if str(path).startswith("irds:") or not path.is_dir():
        return False
    return not any((path / name).exists() for name in ("corpus.jsonl", "corpus.jsonl.gz", "queries.jsonl", "qrels"))


def corpus_files(folder: Path) -> list[Path]:
    """Every file of a folder-of-files corpus, in byte order of its path below the folder.

    Symlinks are followed while they stay inside the folder (a linked sub-folder's files are part
    of the snapshot); one that leads out of it, or nowhere, or to a folder above it (a loop) is
    refused by name: a file the scan silently skipped would be a leak it never looked for."""
    root = folder.resolve()
    found: list[tuple[bytes, Path]] = []
    seen = {root}
    for here, dirs, names in os.walk(folder, followlinks=True):
        here_real = Path(here).resolve()
        for name in sorted(dirs):
            sub = Path(here) / name
            target = sub.resolve()
            if sub.is_symlink():
                if target != root and root not in target.parents:
                    raise InputError(str(sub), None, "is a symlink leading out of the corpus folder: refused")
                if target == here_real or target in here_real.parents:
                    raise InputError(str(sub), None, "is a symlink to a folder above it (a loop): refused")
            if target in seen:
                dirs.remove(name)  # a folder linked twice: its files are listed once, under the first path
            seen.add(target)
        for name in names:
            item = Path(here) / name
            if item.is_symlink():
                if not item.exists():
                    raise InputError(str(item), None, "is a symlink to nothing: refused")
                target = item.resolve()
                if target != root and root not in target.parents:
                    raise InputError(str(item), None, "is a symlink leading out of the corpus folder: refused")
            if item.is_file():
                found.append((item.relative_to(folder).as_posix().encode("utf-8", "surrogateescape"), item))
    return [item for _, item in sorted(found, key=lambda pair: pair[0])]


def _iter_files(folder: Path) -> Iterator[tuple[int | None, Chunk]]:
    """Every file below ``folder`` (:func:`corpus_files`) as one chunk. A file that is not UTF-8
    text or is larger than a corpus chunk may be is refused, naming it: skipping it would leave
    part of the snapshot unscanned."""
    for item in corpus_files(folder):
        name = item.relative_to(folder).as_posix()
        size = item.stat().st_size
        if size > limits.MAX_CORPUS_LINE_BYTES:
            raise InputError(str(item), None, f"is {limits.describe_bytes(size)}, more than a corpus chunk may be "
                             f"({limits.describe_bytes(limits.MAX_CORPUS_LINE_BYTES)})")
        data = item.read_bytes()
        try:
            body = data.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise InputError(str(item), None, f"is not UTF-8 text (byte {error.start}): a corpus folder holds text "
                             "files, one document each") from None
        if "\x00" in body:
            raise InputError(str(item), None, "holds NUL bytes: not a text file (a corpus folder holds text files, "
                             "one document each)")
        check_id(str(item), None, name, "file path (the chunk id)")
        check_unicode(str(item), None, body, "its text")
        yield None, Chunk(name, name, body)


def _dedup(src: str, items: Iterator[tuple[int | None, Chunk]], check: bool | str,
           again: Callable[[], Iterator[tuple[int | None, Chunk]]] | None = None) -> Iterator[Chunk]:
    if not check:
        for _, chunk in items:
            yield chunk
        return
    if check == "at-end":
        hashes = array("q")
        for _, chunk in items:
            hashes.append(hash(chunk.chunk_id))
            yield chunk
        ordered = np.sort(np.frombuffer(hashes, dtype=np.int64))
        if len(ordered) > 1 and bool((ordered[1:] == ordered[:-1]).any()) and again is not None:
            # Equal hashes: read once more and compare the ids themselves (a collision is not a repeat).
            suspects = set(ordered[1:][ordered[1:] == ordered[:-1]].tolist())
            suspects_seen: dict[str, int | None] = {}
            for lineno, chunk in again():
                if hash(chunk.chunk_id) in suspects:
                    if chunk.chunk_id in suspects_seen:
                        first = suspects_seen[chunk.chunk_id]
                        where = f" (first at line {first})" if first is not None else ""
                        raise InputError(src, lineno, f"duplicate chunk id '{shorten(chunk.chunk_id)}'{where}")
                    suspects_seen[chunk.chunk_id] = lineno
        return
    seen: dict[str, tuple[int | None, str]] = {}
    for lineno, chunk in items:
        if chunk.chunk_id in seen:
            first, first_doc = seen[chunk.chunk_id]
            where = f" (first at line {first})" if first is not None else ""
            if first_doc != chunk.doc_id:
                # One chunk id, two documents: its judgments could not be mapped to one document.
                raise InputError(src, lineno, f"chunk id '{shorten(chunk.chunk_id)}' is given two documents, "
                                 f"'{shorten(first_doc)}'{where} and '{shorten(chunk.doc_id)}': a chunk belongs to "
                                 "one document")
            raise InputError(src, lineno, f"duplicate chunk id '{shorten(chunk.chunk_id)}'{where}")
        seen[chunk.chunk_id] = (lineno, chunk.doc_id)
        yield chunk


def _iter_irds(spec: str, check: bool | str) -> Iterator[Chunk]:
    def items() -> Iterator[tuple[int | None, Chunk]]:
        for doc_id, body in iter_irds_docs(spec):
            yield None, Chunk(doc_id, doc_id, body)

    yield from _dedup(spec, items(), check, items)


def _iter_jsonl(path: Path) -> Iterator[tuple[int, Chunk]]:
    src = str(path)
    for lineno, line in iter_lines(path, max_line=limits.MAX_CORPUS_LINE_BYTES, what="a corpus line"):
        obj = parse_json_line(src, lineno, line)
        if not isinstance(obj, dict):
            raise InputError(src, lineno, f"expected a JSON object, got {type(obj).__name__}")
        key = next((k for k in CHUNK_ID_KEYS if k in obj), None)
        if key is None:
            raise InputError(src, lineno, "missing chunk id (one of 'chunk_id', 'id', '_id', 'doc_id')")
        cid = obj[key]
        if isinstance(cid, bool) or not isinstance(cid, (str, int)):
            raise InputError(src, lineno, f"chunk id '{key}' must be a string or an integer, got {type(cid).__name__}")
        cid = check_id(src, lineno, str(cid), "chunk id")
        body = obj.get("text")
        if not isinstance(body, str):
            got = "missing" if "text" not in obj else f"a {type(body).__name__}"
            raise InputError(src, lineno, f"'text' of chunk '{limits.shorten(cid)}' must be a string, got {got}")
        title = obj.get("title")
        if title is not None and not isinstance(title, str):
            raise InputError(src, lineno, f"'title' of chunk '{limits.shorten(cid)}' must be a string, "
                             f"got {type(title).__name__}")
        if title and title.strip():
            body = f"{title} {body}" if body else title
        check_unicode(src, lineno, body, f"the text of chunk '{limits.shorten(cid)}'")
        doc = obj.get("doc_id") if key != "doc_id" else cid
        if doc is None:
            doc = _doc_of(cid)
        elif isinstance(doc, list):
            raise InputError(src, lineno, f"'doc_id' of chunk '{limits.shorten(cid)}' is a list: a chunk of several "
                             "documents cannot carry their judgments (one document a chunk)")
        elif isinstance(doc, bool) or not isinstance(doc, (str, int)):
            raise InputError(src, lineno, f"'doc_id' of chunk '{limits.shorten(cid)}' must be a string, "
                             f"got {type(doc).__name__}")
        else:
            doc = check_id(src, lineno, str(doc), "doc_id")
        start, end = _offsets(src, lineno, cid, obj)
        yield lineno, Chunk(cid, str(doc), body, start, end)


def _offsets(src: str, lineno: int, cid: str, obj: dict) -> tuple[int | None, int | None]:
    """The chunk's ``[start_char_idx, end_char_idx)`` in its document: both or neither."""
    start, end = obj.get("start_char_idx"), obj.get("end_char_idx")
    if start is None and end is None:
        return None, None
    name = limits.shorten(cid)
    if start is None or end is None:
        given, missing = ("start_char_idx", "end_char_idx") if end is None else ("end_char_idx", "start_char_idx")
        raise InputError(src, lineno, f"chunk '{name}' has '{given}' but no '{missing}' (both or neither)")
    for key, value in (("start_char_idx", start), ("end_char_idx", end)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputError(src, lineno, f"'{key}' of chunk '{name}' must be an integer, got {type(value).__name__}")
    if start < 0 or start >= end:
        raise InputError(src, lineno, f"chunk '{name}' has start_char_idx {start} and end_char_idx {end}: "
                         "offsets need 0 <= start < end")
    return start, end


def _iter_tsv(path: Path) -> Iterator[tuple[int, Chunk]]:
    src = str(path)
    width = 0
    for lineno, line in iter_lines(path, max_line=limits.MAX_CORPUS_LINE_BYTES, what="a corpus line"):
        if width == 0:
            fields = tuple(f.strip().lower() for f in line.split("\t"))
            if fields in _HEADERS:
                width = len(fields)
                continue
            width = 3 if len(fields) >= 3 else 2
        parts = line.split("\t", width - 1)
        if len(parts) < width:
            shape = "'id<TAB>text'" if width == 2 else "'chunk_id<TAB>doc_id<TAB>text'"
            raise InputError(src, lineno, f"expected {shape}, found {len(parts) - 1} tab(s)"
                             + corpus_file_hint(line, src))
        cid = parts[0].strip()
        if not cid:
            raise InputError(src, lineno, "empty chunk id")
        check_id(src, lineno, cid, "chunk id")
        if width == 2:
            yield lineno, Chunk(cid, _doc_of(cid), parts[1])
        else:
            doc = parts[1].strip()
            doc = check_id(src, lineno, doc, "doc_id") if doc else _doc_of(cid)
            yield lineno, Chunk(cid, doc, parts[2])
