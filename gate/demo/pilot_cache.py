"""The demo's pilot calibration, cached by a fingerprint of everything it reads.

The pilot (:func:`gate.demo.world._pilot`) runs the reference retriever over
every candidate query in four cells and three seeds, twelve HNSW builds: about
half the demo's time, spent to compute numbers that only choose which
candidates form the golden set. Its scores are a pure function of its inputs:
the candidates (ids, texts, judgments), the bytes of the two corpus snapshots,
the two retrieval configs, the pilot's seeds and the code that retrieves and
scores. This module keys the scores by a SHA-256 over all of them (the code by
the bytes of its source files), so a stored entry is used only where a fresh
pilot would read exactly the same things; anything else, another seed, scale,
an edited retriever, runs the pilot.

The package ships the entry of the default demo (seed 7, scale 1.0), written by
``python -m gate.demo.pilot_refresh``; ``tests/demo/test_pilot_cache.py`` checks
that it is current and that a fresh pilot reproduces it. The library versions
it was computed with are recorded beside it (the key does not include them: a
newer faiss on a user's machine keeps the demo's story rather than recalibrating
it).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path

import numpy as np

from gate.common.atomic import write_text_atomic

__all__ = ["pilot_key", "lookup", "store", "CACHE_FILE"]

CACHE_FILE = Path(__file__).with_name("pilot_scores.json")
_FORMAT = "retrieval-gate demo pilot 1"
_GATE = Path(__file__).resolve().parents[1]
# The code a pilot's numbers depend on beyond its data: retrieval, run records, scoring.
_CODE = ("runs/reference.py", "common/fixed_order.py", "inputs/readers/records.py", "evaluation/evaluate.py",
         "evaluation/label_join.py", "evaluation/labeljoin.c", "evaluation/measures")
_LIBRARIES = ("numpy", "scipy", "faiss-cpu", "bm25s")


def _code_files() -> list[Path]:
    files: list[Path] = []
    for name in _CODE:
        path = _GATE / name
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return files


def pilot_key(candidates: Sequence[tuple[str, str, Mapping[str, int]]], corpora: Mapping[str, Path],
              configs: Mapping[str, Mapping], seeds: Sequence[int]) -> str:
    """SHA-256 (hex) of everything the pilot reads: ``(query_id, text, judgments)`` per candidate in order,
    the corpus files' bytes, the configs, the seeds and the source of the code it runs."""
    digest = hashlib.sha256(_FORMAT.encode())

    def part(label: str, data: bytes) -> None:
        digest.update(f"\0{label}\0{len(data)}\0".encode())
        digest.update(data)

    part("candidates", json.dumps([[qid, text, sorted(judged.items())] for qid, text, judged in candidates],
                                  ensure_ascii=False).encode())
    for name in sorted(corpora):
        part(f"corpus {name}", hashlib.sha256(Path(corpora[name]).read_bytes()).digest())
    part("configs", json.dumps(configs, sort_keys=True).encode())
    part("seeds", json.dumps(list(seeds)).encode())
    for path in _code_files():
        part(f"code {path.relative_to(_GATE).as_posix()}", path.read_bytes())
    return digest.hexdigest()


_MAX_BYTES = 8 << 20  # the shipped file is 240 KB; anything far larger is not ours


def _entries(path: Path) -> list[dict]:
    """The file's entries; [] when it is missing, too large, not this format or malformed in any way
    (a damaged cache only makes the demo recompute, never read wrong scores)."""
    try:
        if path.stat().st_size > _MAX_BYTES:
            return []
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return []
    if not isinstance(data, dict) or data.get("format") != _FORMAT or not isinstance(data.get("entries"), list):
        return []
    return [e for e in data["entries"] if isinstance(e, dict) and isinstance(e.get("key"), str)]


def _finite_floats(values: object, size: int) -> np.ndarray | None:
    if not isinstance(values, list) or len(values) != size:
        return None
    if not all(type(x) in (int, float) and math.isfinite(x) for x in values):  # no bools, strings, NaN
        return None
    return np.array(values, dtype=np.float64)


def lookup(key: str, cells: Sequence[tuple[str, str]], size: int,
           path: Path = CACHE_FILE) -> dict[tuple[str, str], np.ndarray] | None:
    """The stored scores for ``key``: one array of ``size`` finite floats per cell, or None."""
    for entry in _entries(path):
        if entry["key"] != key:
            continue
        scores = entry.get("scores")
        if not isinstance(scores, dict):
            return None
        found = {cell: _finite_floats(scores.get("/".join(cell)), size) for cell in cells}
        return found if all(v is not None for v in found.values()) else None  # type: ignore[return-value]
    return None


def store(key: str, scores: Mapping[tuple[str, str], np.ndarray], path: Path = CACHE_FILE, *,
          label: str = "") -> None:
    """Record ``scores`` under ``key`` (replacing an entry of the same label or key), atomically."""
    versions: dict[str, str | None] = {}
    for name in _LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    entry = {"key": key, "label": label, "computed_with": versions,
             # repr round-trips: the stored floats are the computed ones, bit for bit.
             "scores": {"/".join(cell): [float(x) for x in values] for cell, values in sorted(scores.items())}}
    kept = [e for e in _entries(path) if e["key"] != key and (not label or e.get("label") != label)]
    text = json.dumps({"format": _FORMAT, "entries": kept + [entry]}, indent=1, sort_keys=True)
    write_text_atomic(path, text + "\n")


if __name__ == "__main__":
    # The refresh builds the demo world, and the world reads this cache: the command lives
    # beside it, in gate.demo.pilot_refresh, so that the two modules do not import each other.
    raise SystemExit("the pilot cache is refreshed by: python -m gate.demo.pilot_refresh")
