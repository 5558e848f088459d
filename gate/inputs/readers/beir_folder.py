"""BEIR dataset folders, their layout: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``.

Which path is a BEIR folder (a folder, or ``DIR#split=<name>``), the splits its ``qrels/`` holds
and the path of each file in it (each may be gzipped); what reads those files is in
:mod:`gate.inputs.readers.queries`, :mod:`gate.inputs.readers.qrels` and
:mod:`gate.inputs.readers.beir`. Held apart from the readers so that they can find a folder's
files without importing each other.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NamedTuple

from gate.common import limits
from gate.common.errors import InputError
from gate.common.numbers import listed

__all__ = ["BeirFolder", "beir_file", "is_beir_folder", "beir_folder_of", "beir_corpus", "beir_splits",
           "check_split_name", "DEFAULT_SPLIT", "SPLIT_SUFFIX"]

DEFAULT_SPLIT = "test"
SPLIT_SUFFIX = "#split="
# A split is a file name in qrels/: a plain name, never a path (no '/', no '..').
_SPLIT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


class BeirFolder(NamedTuple):
    path: str
    split: str | None  # named with DIR#split=<name>; None: not named


def check_split_name(split: str, where: str) -> str:
    """``split`` when it is a plain name (``dev``, ``test``, ``train``, ``validation``...)."""
    if not _SPLIT_NAME.fullmatch(split) or ".." in split:
        raise InputError(where, None, f"split {split[:60]!r} is not a plain name (letters, digits, '_', '-', '.'; "
                                      "e.g. dev, test, train)")
    return split


def beir_folder_of(spec: str | os.PathLike) -> BeirFolder | None:
    """The BEIR folder (and the split it names) ``spec`` is: a folder, or ``DIR#split=<name>``;
    None for anything else (a file, even one whose name holds a '#')."""
    text = os.fspath(spec)
    if os.path.isdir(text):
        return BeirFolder(text, None)
    if os.path.exists(text) or "#" not in text:
        return None
    head, _, suffix = text.rpartition("#")
    if not os.path.isdir(head):
        return None
    key, eq, split = suffix.partition("=")
    if key != "split" or not eq:
        raise InputError(text, None, f"unknown suffix '#{limits.shorten(suffix, 40)}' after a BEIR folder (expected "
                                     f"'{SPLIT_SUFFIX}<name>', e.g. '{SPLIT_SUFFIX}dev')")
    return BeirFolder(head, check_split_name(split, text))


def beir_splits(folder: str | os.PathLike) -> list[str]:
    """The splits whose qrels the folder holds (``qrels/<split>.tsv``, gzipped or not), sorted."""
    qrels = Path(folder) / "qrels"
    if not qrels.is_dir():
        return []
    return sorted({p.name.split(".")[0] for p in qrels.iterdir() if p.name.endswith((".tsv", ".tsv.gz"))})


def is_beir_folder(path: str | os.PathLike) -> bool:
    p = Path(path)
    return p.is_dir() and any((p / name).exists() for name in ("queries.jsonl", "queries.jsonl.gz", "qrels"))


def beir_file(folder: str | os.PathLike, name: str) -> Path:
    """``folder/name`` or ``folder/name.gz``; InputError naming the missing file otherwise."""
    base = Path(folder)
    if not base.is_dir():
        raise InputError(str(folder), None, "no such BEIR folder" if not base.exists() else "not a folder")
    for candidate in (base / name, base / (name + ".gz")):
        if candidate.is_file():
            return candidate
    hint = ""
    if name.startswith("qrels/"):
        splits = beir_splits(base)
        hint = f" (available splits: {', '.join(splits)})" if splits else " (no qrels/*.tsv in this folder)"
    elif name == "corpus.jsonl":
        marks = [mark for mark in ("queries.jsonl", "queries.jsonl.gz", "qrels/") if (base / mark).exists()]
        hint = (f" (the folder holds {' and '.join(marks)}, so it is read as a BEIR folder; if it is meant as a folder "
                f"of files, one document each, name a sub-folder that holds only the documents)")
    raise InputError(str(base / name), None, f"no such file in BEIR folder{hint}")


_BEIR_ENTRIES = {"corpus.jsonl", "corpus.jsonl.gz", "queries.jsonl", "queries.jsonl.gz", "qrels"}
# A download's own notes beside the corpus, by exact name (a README-faq.md is a document)
_DOWNLOAD_NOTES = re.compile(r"(README|LICENSE)(\.(md|txt|rst))?", re.I)


def beir_corpus(folder: str | os.PathLike) -> Path:
    """The ``corpus.jsonl`` of a BEIR folder. A folder that holds other documents beside it is
    refused: read as BEIR, only corpus.jsonl would be scanned and the rest skipped without a word
    (a leaked page among them never found)."""
    path = beir_file(folder, "corpus.jsonl")
    others = sorted(entry.name for entry in Path(folder).iterdir()
                    if entry.name not in _BEIR_ENTRIES and not entry.name.startswith(".")
                    and not _DOWNLOAD_NOTES.fullmatch(entry.name))
    if others:
        raise InputError(str(folder), None, f"holds corpus.jsonl and other files ({listed(others, 3)}): read as a "
                         "BEIR folder only corpus.jsonl would be read and the rest skipped; give corpus.jsonl itself, "
                         "or move it out to read the folder as a folder of files")
    return path
