"""Runs: ranked lists for a retrieval config, from a command, precomputed files or the reference retriever.

Results are cached by fingerprint (:mod:`gate.runs.produce`)."""

import importlib

#: What ``pip install 'retrieval-gate[reference]'`` adds: the reference retriever's imports.
REFERENCE_EXTRA_MODULES = ("scipy", "bm25s", "faiss")


def missing_reference_modules() -> list[str]:
    """The reference extra's modules that do not import here (checked up front, so a missing
    extra is one line at the start, not a crash once the world is half built)."""
    missing = []
    for name in REFERENCE_EXTRA_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing
