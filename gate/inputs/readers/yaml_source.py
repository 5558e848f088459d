"""Strict YAML for the gate's own files: configs, shares, retrieval configs, manifests.

ruamel.yaml parses what YAML allows; a gate config needs far less, and each
extra is a way in:

* aliases and anchors (``&a`` / ``*a``, ``<<: *a``) are refused: a billion
  laughs expands nine lines into gigabytes, and a value that silently follows
  another key is not what a reviewer reads;
* nesting is bounded (:data:`~gate.common.limits.MAX_NESTING`): the composer
  recurses and 3,000 levels end in a RecursionError;
* keys are scalars: ``? [a, b]: x`` is refused;
* explicit tags are refused (``!!python/object``, ``!custom``, even ``!!str``:
  quoting says the same, and the round-trip loader would keep a tagged object);
* unquoted numbers beyond 64 bits are refused with their line.

The events are scanned first (the parser is a state machine, not recursive),
so the limits hold before anything is built. Errors are :class:`InputError`
with the line.
"""

from __future__ import annotations

import re
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    DocumentStartEvent,
    MappingStartEvent,
    NodeEvent,
    ScalarEvent,
)

from gate.common import limits
from gate.common.errors import InputError
from gate.inputs.readers.fields import check_unicode


def _line(event: Any) -> int | None:
    mark = getattr(event, "start_mark", None)
    return None if mark is None else mark.line + 1


def _yaml_error(display: str, error: Exception) -> InputError:
    if isinstance(error, MarkedYAMLError):
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = error.problem or error.context or "syntax error"
        return InputError(display, line, f"invalid YAML: {problem}")
    return InputError(display, None, f"invalid YAML: {limits.shorten(str(error), 120)}")


# What YAML resolves as an integer: decimal digits, 0x hex, 0o octal or 0b binary (a git sha is text).
_DIGITS = re.compile(r"[-+]?(?:(0x)[0-9a-fA-F_]+|(0o)[0-7_]+|(0b)[01_]+|[0-9][0-9_]*)\Z")
# Digits (leading zeros aside) beyond which a number cannot fit 64 bits, per base prefix.
_MAX_DIGITS = {"0x": 16, "0o": 22, "0b": 64, None: 19}


def _check_plain_scalar(display: str, line: int | None, value: str) -> None:
    # An unquoted 5,000-digit number would stop Python's int() (4,300 digits) with no line,
    # and a huge one in any base would stop str() later; no config value needs more than 64 bits.
    if len(value) < 18:  # 0x and 16 hex digits is the shortest that can overflow
        return
    match = _DIGITS.match(value)
    if match is None:
        return
    prefix = next((g for g in match.groups() if g), None)
    digits = value.lstrip("+-")[2 if prefix else 0:].replace("_", "").lstrip("0")
    too_long = len(digits) > _MAX_DIGITS[prefix]
    if not too_long and len(digits) == _MAX_DIGITS[prefix]:
        limit = 2 ** 63 + (1 if value.startswith("-") else 0)  # -2**63 is the smallest int64
        too_long = int(digits, {"0x": 16, "0o": 8, "0b": 2, None: 10}[prefix]) >= limit
    if too_long:
        raise InputError(display, line, f"number '{limits.shorten(value)}' is beyond the 64-bit range "
                         "(quote it if it is text)")


def _check_node(display: str, event: NodeEvent) -> None:
    """One node, on its own: no anchor, no tag but the plain one, a scalar that is a value."""
    if event.anchor is not None:
        raise InputError(display, _line(event), f"YAML anchor '&{event.anchor}' is not accepted: "
                         "write the value out")
    tag = getattr(event, "tag", None)
    if tag is not None and str(tag) != "!":
        raise InputError(display, _line(event), f"YAML tag '{limits.shorten(str(tag))}' is not "
                         "accepted (quote the value to make it text)")
    if isinstance(event, ScalarEvent):
        if not event.style:
            _check_plain_scalar(display, _line(event), event.value)
        # "\ud800" in a double-quoted string is a lone surrogate: no file, hash or
        # report can hold it as UTF-8.
        check_unicode(display, _line(event), event.value, "a YAML value")


def check_events(source: str, display: str) -> None:
    """Refuse aliases, anchors, odd tags, complex keys and deep nesting, by line."""
    depth = 0
    # For each open collection: is it a mapping, and is the next node a key?
    stack: list[list[bool]] = []
    documents = 0
    try:
        for event in YAML(typ="rt").parse(source):
            if isinstance(event, DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise InputError(display, _line(event), "a second YAML document (a '---' line): the file must "
                                     "hold one")
            if isinstance(event, AliasEvent):
                raise InputError(display, _line(event), f"YAML alias '*{event.anchor}' is not accepted: "
                                 "write the value out")
            if isinstance(event, NodeEvent):
                _check_node(display, event)
                is_key = bool(stack) and stack[-1][0] and stack[-1][1]
                if stack and stack[-1][0]:
                    stack[-1][1] = not stack[-1][1]
                if is_key and not isinstance(event, ScalarEvent):
                    raise InputError(display, _line(event), "a mapping key must be a plain value, "
                                     "not a list or a mapping")
                if isinstance(event, CollectionStartEvent):
                    depth += 1
                    if depth > limits.MAX_NESTING:
                        raise InputError(display, _line(event), f"YAML nested deeper than {limits.MAX_NESTING} levels")
                    stack.append([isinstance(event, MappingStartEvent), True])
            elif isinstance(event, CollectionEndEvent):
                depth -= 1
                stack.pop()
    except (MarkedYAMLError, YAMLError) as error:
        raise _yaml_error(display, error) from None
    except RecursionError:
        raise InputError(display, None, f"YAML nested deeper than {limits.MAX_NESTING} levels") from None


def load_yaml(source: str, display: str, *, typ: str = "rt") -> Any:
    """Parse ``source`` after :func:`check_events`; ``typ='rt'`` keeps line positions."""
    check_events(source, display)
    try:
        if typ == "rt":
            return YAML(typ="rt").load(source)
        return YAML(typ="safe", pure=True).load(source)
    except (MarkedYAMLError, YAMLError) as error:
        raise _yaml_error(display, error) from None
    except RecursionError:  # pragma: no cover - check_events bounds the depth first
        raise InputError(display, None, f"YAML nested deeper than {limits.MAX_NESTING} levels") from None
    except (ValueError, OverflowError) as error:  # e.g. a timestamp or an integer YAML cannot build
        raise InputError(display, None, f"invalid YAML: {limits.shorten(str(error), 120)}") from None
