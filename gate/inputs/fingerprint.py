"""Canonical fingerprints of inputs.

A fingerprint is a sha256 over a canonical form (records sorted, whitespace
normalised) with the record count beside it, so reordering lines or
re-spacing a file changes nothing while changing one label does, and a human
can read "140 queries" next to the hash.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from gate.inputs.readers.corpus import corpus_files, is_file_tree, iter_corpus
from gate.inputs.readers.records import Qrels, QuerySet

_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Fingerprint:
    kind: str  # "qrels" | "queries" | "file" | ...
    sha256: str
    count: int

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def short(self) -> str:
        return self.sha256[:12]


def _hash_sorted(lines: Iterable[str]) -> tuple[str, int]:
    # Python orders str by code point, which is UTF-8 byte order: sorting the
    # strings and encoding once gives the same bytes as sorting encoded lines.
    ordered = sorted(lines)
    if not ordered:
        return hashlib.sha256(b"").hexdigest(), 0
    return hashlib.sha256(("\n".join(ordered) + "\n").encode("utf-8")).hexdigest(), len(ordered)


def normalise_space(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def qrels_fingerprint(qrels: Qrels) -> Fingerprint:
    """sha256 of the judgments' lines ``qid TAB doc TAB label``, sorted."""
    judgments = qrels.judgments
    if all(qid.isprintable() and "".join(docs).isprintable() for qid, docs in judgments.items()):
        # Ids without a tab or a control character sort as their lines do (a tab is below every
        # other character left), so queries and each query's documents are sorted apart: the
        # same lines in the same order as one sort of them all, several times faster.
        lines = [f"{qid}\t{doc}\t{docs[doc]}" for qid in sorted(judgments)
                 for docs in (judgments[qid],) for doc in sorted(docs)]
        if not lines:
            return Fingerprint("qrels", hashlib.sha256(b"").hexdigest(), 0)
        return Fingerprint("qrels", hashlib.sha256(("\n".join(lines) + "\n").encode("utf-8")).hexdigest(), len(lines))
    sha, count = _hash_sorted(
        f"{qid}\t{doc}\t{rel}" for qid, docs in judgments.items() for doc, rel in docs.items()
    )
    return Fingerprint("qrels", sha, count)


def queries_fingerprint(queries: QuerySet) -> Fingerprint:
    sha, count = _hash_sorted(
        f"{q.query_id}\t{normalise_space(q.text)}\t{q.stratum or ''}" for q in queries.queries
    )
    return Fingerprint("queries", sha, count)


def query_ids_fingerprint(query_ids: Iterable[str]) -> Fingerprint:
    sha, count = _hash_sorted(query_ids)
    return Fingerprint("query_ids", sha, count)


def file_sha256(path: str | Path, block: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(block):
            digest.update(chunk)
    return digest.hexdigest()


def file_fingerprint(path: str | Path) -> Fingerprint:
    """Byte-level hash of a file (runs: their exact bytes are what was archived)."""
    size = Path(path).stat().st_size
    return Fingerprint("file", file_sha256(path), size)


def corpus_fingerprint(spec: str | Path) -> Fingerprint:
    """Canonical fingerprint of a corpus snapshot: one digest per chunk (id and
    normalised text; its document and offsets when the corpus gives offsets), sorted, so
    chunk order and re-spacing do not matter.

    A folder that is not a BEIR folder is fingerprinted as a tree of files
    (relative path + content hash each), for snapshots stored as many files.
    """
    path = Path(str(spec))
    if is_file_tree(path):
        digests = []
        for item in corpus_files(path):
            rel = item.relative_to(path).as_posix()
            # A name that is not UTF-8 is hashed by its bytes (the reader names it as an error).
            digests.append(hashlib.sha256(f"{rel}\t{file_sha256(item)}".encode("utf-8", "surrogateescape")).digest())
        return _combine("corpus-files", digests)
    digests = []
    for chunk in iter_corpus(str(spec)):
        line = f"{chunk.chunk_id}\t{normalise_space(chunk.text)}"
        if chunk.start is not None:
            # Offsets place span judgments (gate.inputs.anchoring): moved offsets are another corpus.
            # Only corpora that give them hash them, so every other corpus keeps its fingerprint.
            line += f"\t{chunk.doc_id}\t{chunk.start}\t{chunk.end}"
        digests.append(hashlib.sha256(line.encode("utf-8")).digest())
    return _combine("corpus", digests)


def _combine(kind: str, digests: list[bytes]) -> Fingerprint:
    digests.sort()
    total = hashlib.sha256()
    for item in digests:
        total.update(item)
    return Fingerprint(kind, total.hexdigest(), len(digests))
