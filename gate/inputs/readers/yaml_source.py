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
* unquoted numbers beyond 64 bits are refused with their line;
* the merge key ``<<`` is refused in any form (``<<: {a: 1}`` merges without an alias too);
* what YAML readers read differently is refused unless quoted, so that the gate, PyYAML (YAML
  1.1) and a YAML 1.2 reader all read one value: ``_`` in a number (``0_5`` is 5, not 0.5;
  ``1_000`` is text to YAML 1.2), a decimal with a leading zero (``017`` is 17 here and 15 to
  YAML 1.1), octal and binary numbers (``0o17``, ``0b11``: text to one version, a number to the
  other), dates (``2024-01-31``: a date to YAML 1.1, text to YAML 1.2's core schema), YAML
  1.1's value key ``=``, and a ``%YAML 1.1`` directive (it turns ``yes``/``on`` into booleans
  and ``1:20`` into 80). Without the directive ``yes``, ``no``, ``on``, ``off`` and ``1:20``
  are text, as YAML 1.2 reads them; a config key that wants true/false or a number refuses
  them (:mod:`gate.inputs.config`).

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
from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.resolver import VersionedResolver

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


# How the gate reads a plain scalar (YAML 1.2, a %YAML 1.1 directive being refused).
_RESOLVER = VersionedResolver(version=(1, 2))
_TAG = "tag:yaml.org,2002:"
# A decimal integer with a leading zero: octal to YAML 1.1 readers.
_LEADING_ZERO = re.compile(r"[-+]?0[0-9_]")
_QUOTE_IF_TEXT = "(quote it if it is text)"


def _number(value: str, tag: str) -> str:
    """The number a plain int or float scalar reads as (within 64 bits: checked before), or the
    words "a number" when it holds no digit (``+_``: the resolver calls it an int, int() does not)."""
    plain = value.replace("_", "")
    try:
        if tag == _TAG + "float":
            return f"the number {limits.shorten(repr(float(plain)))}"
        prefixed = plain.lstrip("+-")[:2].lower() in ("0x", "0o", "0b")
        return f"the number {int(plain, 0) if prefixed else int(plain, 10)}"
    except ValueError:
        return "a number"


def _ambiguous_scalar(value: str) -> str | None:
    """Why YAML readers disagree on the plain scalar ``value`` (the gate's reading and the
    other), or None when they agree."""
    if not value or value[0] not in "0123456789+-.=<":
        return None  # no number, date, value key or merge key starts otherwise
    tag = _RESOLVER.resolve(ScalarNode, value, (True, False))
    if tag in (_TAG + "int", _TAG + "float"):
        digits = value.lstrip("+-").lower()
        if "_" in value:
            return (f"'{limits.shorten(value)}' reads as {_number(value, tag)} (YAML drops '_' in a "
                    f"number): write the number without '_' {_QUOTE_IF_TEXT}")
        if digits.startswith(("0o", "0b")):
            return (f"'{limits.shorten(value)}' is a number to this reader and text to others (octal and binary "
                    f"differ across YAML versions): write it in decimal {_QUOTE_IF_TEXT}")
        if tag == _TAG + "int" and _LEADING_ZERO.match(value):
            return (f"'{limits.shorten(value)}' is {int(value)} here but octal to YAML 1.1 readers: write it "
                    f"without the leading zero {_QUOTE_IF_TEXT}")
    elif tag == _TAG + "timestamp":
        return f"'{limits.shorten(value)}' is a date to YAML 1.1 readers and text to YAML 1.2: quote it"
    elif tag == _TAG + "value":
        return "'=' is YAML 1.1's value key, not text: quote it"
    elif tag == _TAG + "merge":
        return "the YAML merge key '<<' is not accepted: write the keys out (quote it if it is text)"
    return None


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
            ambiguous = _ambiguous_scalar(event.value)
            if ambiguous is not None:
                raise InputError(display, _line(event), ambiguous)
        # "\ud800" in a double-quoted string is a lone surrogate: no file, hash or
        # report can hold it as UTF-8.
        check_unicode(display, _line(event), event.value, "a YAML value")


def _check_document_start(source: str, display: str, event: DocumentStartEvent, documents: int) -> None:
    """One YAML 1.2 document: no other version's directive, no second document."""
    version = getattr(event, "version", None)
    if version is not None and tuple(version) != (1, 2):
        line = next((n for n, text in enumerate(source.split("\n"), 1) if text.startswith("%YAML")), _line(event))
        raise InputError(display, line, f"a %YAML {'.'.join(map(str, version))} directive: "
                         "the gate reads YAML 1.2 (remove the directive)")
    if documents > 1:
        raise InputError(display, _line(event), "a second YAML document (a '---' line): the file must hold one")


def check_events(source: str, display: str) -> None:
    """Refuse aliases, anchors, merge keys, odd tags, complex keys, deep nesting, values YAML
    readers read differently and a YAML version other than 1.2, by line."""
    depth = 0
    # For each open collection: is it a mapping, and is the next node a key?
    stack: list[list[bool]] = []
    documents = 0
    try:
        for event in YAML(typ="rt").parse(source):
            if isinstance(event, DocumentStartEvent):
                documents += 1
                _check_document_start(source, display, event, documents)
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
    except AssertionError:
        # ruamel's scanner asserts on a %YAML directive of another minor version (1.0, 1.3).
        line = next((n for n, text in enumerate(source.split("\n"), 1) if text.startswith("%YAML")), None)
        raise InputError(display, line, "a %YAML directive of a version the gate does not read: it reads YAML 1.2 "
                         "(remove the directive)") from None


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
