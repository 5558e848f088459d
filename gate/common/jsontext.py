"""The gate's one JSON writer: what report.json, noise.json, replay.json and every --format json print.

Strict JSON (a NaN or an infinity is a bug, never ``NaN`` in a file), and every character the
gate's own JSON reader refuses in a file (DEL, C1 controls) written as a ``\\u`` escape: a file
the gate wrote is always one it, and its comment job, can read back. Reports keep UTF-8 as it
is; the files a team commits or pipes on (noise.json, replay.json, plan, calibrate, factorial)
stay ASCII (``ascii=True``), as they always were, whatever the terminal's encoding.
"""

from __future__ import annotations

import json
import re
from typing import Any

_REFUSED_BY_READER = re.compile("[\x7f-\x9f]")


def json_text(data: Any, *, indent: int | None = 2, ascii: bool = False) -> str:
    """``data`` as the text of a JSON file, newline-terminated (``ascii``: non-ASCII as ``\\u``)."""
    text = json.dumps(data, indent=indent, ensure_ascii=ascii, allow_nan=False)
    return _REFUSED_BY_READER.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


def json_line(data: Any) -> str:
    """``data`` as one line of a JSON Lines file."""
    return json_text(data, indent=None)
