"""Loading a library ``hatch_build.py`` compiled from a C source of this package, when there is one.

Each compiled library speeds up one step that numpy code also does, with the same results; the
numpy code is used whenever the library is absent (no compiler at install: the container image,
a bare Python + pip machine), turned off (``RETRIEVAL_GATE_NATIVE=0/false/no/off``, read at
install and at run time) or stale: a library records the SHA-256 of the source it was built
from, and is used only while that matches the source beside it (an editable install after a pull
may hold an older build, whose functions may take other arguments).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
from pathlib import Path

__all__ = ["disabled", "load", "source_sha256"]


def disabled() -> bool:
    """``RETRIEVAL_GATE_NATIVE`` set to 0 / false / no / off (also read by hatch_build.py)."""
    return os.environ.get("RETRIEVAL_GATE_NATIVE", "").strip().lower() in ("0", "false", "no", "off")


def source_sha256(source: Path) -> str:
    """The SHA-256 of ``source`` ("" when it cannot be read)."""
    try:
        return hashlib.sha256(source.read_bytes()).hexdigest()
    except OSError:
        return ""


def load(source: Path, library_glob: str, want: str) -> ctypes.CDLL | None:
    """The first library matching ``library_glob`` beside ``source`` that was built from a source
    whose SHA-256 is ``want``; None when there is none or when compiled code is turned off.

    Only ``rg_source_sha256`` is called before the check: nothing else of a stale library."""
    if disabled() or not want:
        return None
    for path in sorted(source.parent.glob(library_glob)):
        try:
            lib = ctypes.CDLL(str(path))
            built_from = lib.rg_source_sha256
        except (OSError, AttributeError):
            continue
        built_from.restype = ctypes.c_char_p
        built_from.argtypes = []
        if built_from().decode("ascii", "replace") == want:
            return lib
    return None
