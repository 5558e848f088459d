"""Field checks shared by the readers: ids, texts, labels and JSON lines.

Everything a reader keeps is checked here once, so that what later stages
write (TREC runs for a runner, report.json, Markdown, workflow commands) can
never meet a value they cannot encode: ids are bounded, printable and valid
Unicode; JSON lines are parsed without NaN, duplicate keys, lone surrogates
or nesting deeper than the report could write back.
"""

from __future__ import annotations

import json
import re
from typing import Any

from gate.common import limits
from gate.common.errors import InputError

# C0 controls, DEL, and lone surrogates (from JSON "\ud800" escapes).
_BAD_ID_CHAR = re.compile("[\x00-\x1f\x7f\ud800-\udfff]")
# In texts, tab / LF / CR are fine (JSON texts hold paragraphs); other controls are not.
_BAD_TEXT_CHAR = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_INT = re.compile(r"[+-]?[0-9]+\Z")
_INT64 = (-(1 << 63), (1 << 63) - 1)


def _describe_char(char: str) -> str:
    code = ord(char)
    if 0xD800 <= code <= 0xDFFF:
        return f"a lone surrogate (\\u{code:04x}: not valid Unicode)"
    return f"control character 0x{code:02x}"


def check_id(src: str, line: int | None, value: str, what: str = "id") -> str:
    """A query / document / chunk id: non-empty, at most :data:`MAX_ID_BYTES`, no controls."""
    if not value or not value.strip():
        raise InputError(src, line, f"empty {what}")
    if len(value) > limits.MAX_ID_BYTES // 4 and len(value.encode("utf-8", "surrogatepass")) > limits.MAX_ID_BYTES:
        raise InputError(src, line, f"{what} '{limits.shorten(value)}' is longer than "
                         f"{limits.describe_bytes(limits.MAX_ID_BYTES)}")
    bad = _BAD_ID_CHAR.search(value)
    if bad is not None:
        raise InputError(src, line, f"{what} {limits.shorten(repr(value), 50)} holds {_describe_char(bad.group())}")
    return value


def check_text(src: str, line: int | None, value: str, what: str, *, max_chars: int | None = None) -> str:
    """A text kept for display or matching: no NUL / controls / lone surrogates, bounded."""
    if max_chars is not None and len(value) > max_chars:
        raise InputError(src, line, f"{what} is longer than {max_chars:,} characters ({len(value):,})")
    bad = _BAD_TEXT_CHAR.search(value)
    if bad is not None:
        raise InputError(src, line, f"{what} holds {_describe_char(bad.group())}")
    return value


def check_unicode(src: str, line: int | None, value: str, what: str) -> str:
    """A text only matched, never shown (a corpus chunk): valid Unicode is all it needs."""
    if not value.isascii() and _SURROGATE.search(value):
        raise InputError(src, line, f"{what} holds a lone surrogate (not valid Unicode)")
    return value


def parse_int_label(src: str, line: int | None, text: str, what: str = "relevance") -> int:
    """An integer label: ASCII digits with an optional sign, within 64 bits (no ``1.0``, no ``1_0``)."""
    if len(text) <= 20 and text.isascii() and (text.isdecimal() or _INT.match(text)):
        value = int(text)
        if _INT64[0] <= value <= _INT64[1]:
            return value
        raise InputError(src, line, f"{what} '{text}' is beyond the 64-bit integer range")
    if len(text) > 20 and _INT.match(text[:200] if len(text) > 200 else text) and text.isascii():
        raise InputError(src, line, f"{what} '{limits.shorten(text)}' is beyond the 64-bit integer range")
    raise InputError(src, line, f"{what} '{limits.shorten(text)}' is not an integer (integer labels only)")


class _Refused(ValueError):
    pass


def _no_constants(name: str) -> Any:
    raise _Refused(f"{name} is not a JSON number")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Refused(f"key '{limits.shorten(key)}' appears twice in one object")
            seen.add(key)
    return out


_DECODER = json.JSONDecoder(parse_constant=_no_constants, object_pairs_hook=_no_duplicates)


# The decoder's scanner (set by JSONDecoder.__init__; typeshed does not declare it).
_SCAN = _DECODER.scan_once  # type: ignore[attr-defined]
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_BRACKET = re.compile(r"[\[\]{}]")


def _too_deep(text: str) -> bool:
    """Nested deeper than MAX_NESTING (strings skipped). Checked, not left to the recursion limit,
    which depends on the stack already in use: the same line must be refused in every process."""
    if text.count("[") + text.count("{") <= limits.MAX_NESTING:
        return False
    depth = 0
    for bracket in _BRACKET.findall(_JSON_STRING.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        if depth > limits.MAX_NESTING:
            return True
    return False


def parse_json_line(src: str, line: int, text: str) -> Any:
    """One JSON Lines value, strictly: an error names the line (and the column where JSON knows it)."""
    if _too_deep(text):
        raise InputError(src, line, f"invalid JSON: nested deeper than {limits.MAX_NESTING} levels")
    try:
        # The C scanner itself, the same the decoder calls, on a line that is one value with no
        # surrounding whitespace (nearly every line: 3 us less each, a third of a corpus read);
        # anything else goes through decode(), which gives the error and its column.
        try:
            value, end = _SCAN(text, 0)
        except StopIteration:
            end = -1
        if end == len(text):
            return value
        return _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise InputError(src, line, f"invalid JSON: {exc.msg} (column {exc.colno})") from None
    except _Refused as exc:
        raise InputError(src, line, f"invalid JSON: {exc}") from None
    except RecursionError:
        raise InputError(src, line, f"invalid JSON: nested deeper than {limits.MAX_NESTING} levels") from None
    except ValueError as exc:  # an integer of more digits than Python converts (4,300)
        raise InputError(src, line, f"invalid JSON: {limits.shorten(str(exc), 80)}") from None


def check_json_value(src: str, line: int | None, value: Any, what: str, text_keys: bool = False) -> Any:
    """A JSON value kept as is (query metadata): nesting at most :data:`MAX_NESTING`,
    strings valid Unicode (no lone surrogates), integers within 64 bits; with ``text_keys``
    (a YAML file that stands for JSON: a manifest) every mapping key is text too."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limits.MAX_NESTING:
            raise InputError(src, line, f"{what} is nested deeper than {limits.MAX_NESTING} levels")
        if isinstance(item, dict):
            for key, sub in item.items():
                if isinstance(key, str):  # YAML keys may be null, numbers or booleans
                    _check_string(src, line, key, what)
                elif text_keys:
                    raise InputError(src, line, f"{what} has a key that is not text ({limits.shorten(repr(key), 40)})")
                stack.append((sub, depth + 1))
        elif isinstance(item, list):
            stack.extend((sub, depth + 1) for sub in item)
        elif isinstance(item, str):
            _check_string(src, line, item, what)
        elif isinstance(item, int) and not isinstance(item, bool):
            if not _INT64[0] <= item <= _INT64[1]:
                raise InputError(src, line, f"{what} holds an integer beyond the 64-bit range")
    return value


def _check_string(src: str, line: int | None, value: str, what: str) -> None:
    check_unicode(src, line, value, what)


def parse_json_document(src: str, text: str) -> Any:
    """A whole JSON file (retrieval config, report, noise band), as strictly as a JSON line."""
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise InputError(src, exc.lineno, f"invalid JSON: {exc.msg} (column {exc.colno})") from None
    except _Refused as exc:
        raise InputError(src, None, f"invalid JSON: {exc}") from None
    except RecursionError:
        raise InputError(src, None, f"invalid JSON: nested deeper than {limits.MAX_NESTING} levels") from None
    except ValueError as exc:
        raise InputError(src, None, f"invalid JSON: {limits.shorten(str(exc), 80)}") from None
    return check_json_value(src, None, value, "the file")
