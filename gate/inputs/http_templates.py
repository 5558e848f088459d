"""The HTTP runner's templates (``runner.http``): its URL, JSON body and headers, and the paths
into the service's answer. Parsed here once for the config's checks (:mod:`gate.inputs.config`)
and the runner (:mod:`gate.runs.http`), so both read the same grammar.

* A placeholder is ``{name}``: ``query``, ``query_id``, ``depth``, ``seed``, ``repeat``,
  ``corpus``, ``config`` (the whole retrieval config, body only) or ``config.a.b`` (a dotted key
  of the retrieval config; a part of digits indexes a list). Nothing more: no format spec,
  conversion, attribute or index; a literal brace is doubled (``{{``, ``}}``).
* In the URL, placeholders go in the path and the query string only, each value percent-encoded:
  the scheme, host and port are fixed text, so no value can send a request (and its secret
  headers) elsewhere.
* In the body (a YAML mapping or list: JSON), a string that is exactly one placeholder becomes
  the value with its JSON type (``{depth}`` a number, ``{config}`` an object); a placeholder
  inside a longer string (or a key) is replaced by its text. The body is JSON-escaped by
  construction: a query text never writes JSON.
* A header value may name environment variables, ``${NAME}``; only these are read.
* A path (``hits.hits``, ``_id``) is dotted; a part of digits indexes a list.
"""

from __future__ import annotations

import json
import re
import string
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gate.common import limits
from gate.common.environment import never_passed

__all__ = ["PLACEHOLDERS", "TemplateError", "Placeholder", "UrlTemplate", "BodyTemplate", "EnvRef",
           "parse_url", "parse_body", "parse_path", "parse_header", "lookup", "MISSING"]

#: The placeholders a template may name (``config.<dotted key>`` besides).
PLACEHOLDERS = ("query", "query_id", "depth", "seed", "repeat", "corpus", "config")
_KNOWN = ", ".join("{" + name + "}" for name in PLACEHOLDERS) + ", {config.<key>}"
_MAX_TEMPLATE = 64 * limits.KIB
_MAX_PATH = 500


class TemplateError(Exception):
    """A template the grammar refuses; ``where``: the dotted place inside a body (``()`` for a
    whole value), for the config's error to name its line."""

    def __init__(self, message: str, where: tuple[str | int, ...] = ()):
        self.message = message
        self.where = where
        super().__init__(message)


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


#: What :func:`lookup` returns for a path the data does not hold.
MISSING: Any = _Missing()


@dataclass(frozen=True)
class Placeholder:
    name: str  # "query", ..., "config" or "config.a.b"

    @property
    def config_key(self) -> str | None:
        """The dotted retrieval-config key of ``{config.a.b}``; None for the others."""
        return self.name[len("config."):] if self.name.startswith("config.") else None


def _parse_text(text: str, *, whole_config: bool) -> tuple[str | Placeholder, ...]:
    """``text`` as literal pieces and placeholders (module docstring); TemplateError otherwise."""
    if len(text) > _MAX_TEMPLATE:
        raise TemplateError(f"a template of {len(text):,} characters (at most {_MAX_TEMPLATE:,})")
    try:
        pieces = list(string.Formatter().parse(text))
    except ValueError as error:  # a single '{' or '}'
        raise TemplateError(f"{error} (write a literal brace doubled: {{{{ and }}}})") from None
    parts: list[str | Placeholder] = []
    for literal, name, spec, conversion in pieces:
        if literal:
            parts.append(literal)
        if name is None:
            continue
        written = limits.shorten("{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
                                 + "}", 60)
        if conversion or spec:
            raise TemplateError(f"placeholder {written} takes no format spec or conversion")
        if not _known(name):
            raise TemplateError(f"unknown placeholder {written} (known: {_KNOWN}; a literal brace is doubled)")
        if name == "config" and not whole_config:
            raise TemplateError("{config} (the whole retrieval config) goes in the body only; name a key: "
                                "{config.<key>}")
        parts.append(Placeholder(name))
    return tuple(parts)


def _known(name: str) -> bool:
    if name in PLACEHOLDERS:
        return True
    if not name.startswith("config."):
        return False
    keys = name[len("config."):].split(".")
    return all(key and key.strip() == key and not any(c in key for c in "[]{}") for key in keys)


def text_of(value: Any) -> str:
    """A value as it reads inside a longer text: text as it is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _render_text(parts: tuple[str | Placeholder, ...], values: Mapping[str, Any], encode: bool) -> str:
    out = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        else:
            text = text_of(values[part.name])
            out.append(urllib.parse.quote(text, safe="") if encode else text)
    return "".join(out)


def placeholders_in(parts: tuple[str | Placeholder, ...]) -> list[Placeholder]:
    return [part for part in parts if isinstance(part, Placeholder)]


# --------------------------------------------------------------------------- URL

_SCHEME_AUTHORITY = re.compile(r"(https?)://([^/?#]*)(.*)\Z", re.S)
_HOST_PORT = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~%!$&'()*+,;=-]+)(?::([0-9]{1,5}))?\Z")


@dataclass(frozen=True)
class UrlTemplate:
    origin: str  # scheme://host[:port], fixed text
    rest: tuple[str | Placeholder, ...]  # path and query string

    def render(self, values: Mapping[str, Any]) -> str:
        """The address; TemplateError when its path has a '.' or '..' segment (a value that is
        '..' in ``/{config.index}/_search``): the client drops such a segment with the one
        before it, so the value would choose another path on the host rather than be sent."""
        rest = _render_text(self.rest, values, encode=True)
        path = rest.split("?", 1)[0]
        if any(urllib.parse.unquote(segment) in (".", "..") for segment in path.split("/")):
            raise TemplateError(f"the path {limits.shorten(path, 80)!r} has a '.' or '..' segment, which the "
                                "client would drop with the segment before it, asking another path of the host")
        return self.origin + rest

    def placeholders(self) -> list[Placeholder]:
        return placeholders_in(self.rest)


def parse_url(text: str) -> UrlTemplate:
    """An ``http(s)://host[:port]/path?query`` template; placeholders in the path and query only."""
    found = _SCHEME_AUTHORITY.match(text.strip() if text.strip() == text else "\0")
    if found is None:
        raise TemplateError(f"'{limits.shorten(text, 80)}' is not an http:// or https:// address without spaces "
                            "around it")
    scheme, authority, rest = found.groups()
    if "@" in authority:
        raise TemplateError("the address holds a user or password (user@host): give credentials in a header "
                            "(runner.http.headers, from the environment), never in the URL")
    if any(c in authority for c in "{}"):
        raise TemplateError("placeholders go in the path and query string only: the scheme, host and port are "
                            "fixed text, so no value can send the request elsewhere")
    host = _HOST_PORT.match(authority)
    if host is None or (host.group(2) is not None and not 0 < int(host.group(2)) < 65536):
        raise TemplateError(f"'{limits.shorten(authority, 60)}' is not a host[:port]")
    if rest and rest[0] not in "/?":
        raise TemplateError("the host is followed by something other than a path or query string")
    if "#" in rest:
        raise TemplateError("a fragment (#...) is never sent to a server: remove it")
    bad = next((c for c in rest if c.isspace() or not c.isprintable()), None)
    if bad is not None:
        raise TemplateError(f"the address holds {bad!r}: write it percent-encoded (a placeholder's value is "
                            "encoded by the gate)")
    return UrlTemplate(f"{scheme}://{authority}", _parse_text(rest, whole_config=False))


# --------------------------------------------------------------------------- body


@dataclass(frozen=True)
class _Typed:
    """A string that is exactly one placeholder: the value with its JSON type."""
    placeholder: Placeholder


@dataclass(frozen=True)
class _Text:
    parts: tuple[str | Placeholder, ...]


@dataclass(frozen=True)
class _Object:
    items: tuple[tuple[_Text, Any], ...]


@dataclass(frozen=True)
class BodyTemplate:
    root: Any  # _Object | list | _Typed | _Text | a JSON scalar

    def render(self, values: Mapping[str, Any]) -> Any:
        return _render_node(self.root, values, ())

    def placeholders(self) -> list[Placeholder]:
        found: list[Placeholder] = []
        _collect(self.root, found)
        return found


def parse_body(data: Any) -> BodyTemplate:
    """A body template from plain data (a mapping or list); TemplateError with the place at fault."""
    if not isinstance(data, (dict, list)):
        raise TemplateError("expected a mapping or a list: the JSON body")
    return BodyTemplate(_parse_node(data, ()))


def _parse_node(node: Any, where: tuple[str | int, ...]) -> Any:
    try:
        if isinstance(node, dict):
            return _Object(tuple((_Text(_parse_text(str(key), whole_config=False)),
                                  _parse_node(value, (*where, str(key)))) for key, value in node.items()))
        if isinstance(node, list):
            return [_parse_node(value, (*where, index)) for index, value in enumerate(node)]
        if isinstance(node, str):
            parts = _parse_text(node, whole_config=True)
            if len(parts) == 1 and isinstance(parts[0], Placeholder):
                return _Typed(parts[0])
            return _Text(parts)
    except TemplateError as error:
        if error.where:
            raise
        raise TemplateError(error.message, where) from None
    return node  # a number, true/false or null: itself


def _render_node(node: Any, values: Mapping[str, Any], where: tuple[str | int, ...]) -> Any:
    if isinstance(node, _Object):
        out: dict[str, Any] = {}
        for key, value in node.items:
            name = _render_text(key.parts, values, encode=False)
            if name in out:
                raise TemplateError(f"two keys of the body become '{limits.shorten(name)}'", where)
            out[name] = _render_node(value, values, (*where, name))
        return out
    if isinstance(node, list):
        return [_render_node(value, values, (*where, index)) for index, value in enumerate(node)]
    if isinstance(node, _Typed):
        return values[node.placeholder.name]
    if isinstance(node, _Text):
        return _render_text(node.parts, values, encode=False)
    return node


def _collect(node: Any, found: list[Placeholder]) -> None:
    if isinstance(node, _Object):
        for key, value in node.items:
            found.extend(placeholders_in(key.parts))
            _collect(value, found)
    elif isinstance(node, list):
        for value in node:
            _collect(value, found)
    elif isinstance(node, _Typed):
        found.append(node.placeholder)
    elif isinstance(node, _Text):
        found.extend(placeholders_in(node.parts))


# --------------------------------------------------------------------------- paths


def parse_path(text: str) -> tuple[str, ...]:
    """A dotted path into JSON (``hits.hits``, ``_source.doc_id``); a part of digits indexes a list."""
    if not text or len(text) > _MAX_PATH:
        raise TemplateError("expected a dotted path (hits.hits, _id), not empty and at most "
                            f"{_MAX_PATH} characters")
    parts = tuple(text.split("."))
    if any(not part for part in parts):
        raise TemplateError(f"'{limits.shorten(text, 60)}' has an empty part (two dots, or a dot at an end)")
    if any(not part.isprintable() for part in parts):
        raise TemplateError(f"{limits.shorten(repr(text), 60)} holds an unprintable character")
    return parts


def lookup(data: Any, parts: tuple[str, ...]) -> Any:
    """The value at ``parts`` in ``data``, or :data:`MISSING`."""
    node = data
    for part in parts:
        if isinstance(node, dict):
            if part not in node:
                return MISSING
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and part.isascii():
            index = int(part)
            if index >= len(node):
                return MISSING
            node = node[index]
        else:
            return MISSING
    return node


# --------------------------------------------------------------------------- headers

_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}\Z")
_ENV_REF = re.compile(r"\$\{([^}]*)\}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,200}\Z")
#: Headers the gate sets from the request itself: a config value would break its framing.
_FRAMING_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})


@dataclass(frozen=True)
class EnvRef:
    name: str  # an environment variable's name


def parse_header(name: str, value: str) -> tuple[str | EnvRef, ...]:
    """A header's value as literal pieces and ``${NAME}`` references; its name checked too."""
    if not _HEADER_NAME.match(name):
        raise TemplateError(f"header name {limits.shorten(repr(name), 60)} is not an HTTP header name")
    if name.lower() in _FRAMING_HEADERS:
        raise TemplateError(f"header '{name}' is set by the gate from the request itself")
    bad = next((c for c in value if c in "\r\n\0" or (not c.isprintable() and c != "\t")), None)
    if bad is not None:
        raise TemplateError(f"header '{name}' holds the character {bad!r}")
    parts: list[str | EnvRef] = []
    at = 0
    for found in _ENV_REF.finditer(value):
        if found.start() > at:
            parts.append(value[at:found.start()])
        variable = found.group(1)
        if not _ENV_NAME.match(variable):
            raise TemplateError(f"header '{name}': '${{{limits.shorten(variable)}}}' is not an environment "
                                "variable's name")
        if never_passed(variable):
            raise TemplateError(f"header '{name}': ${{{variable}}} is a GitHub or Actions credential: it never goes "
                                "to a search service")
        parts.append(EnvRef(variable))
        at = found.end()
    if "${" in value[at:]:
        raise TemplateError(f"header '{name}': '${{' without its closing '}}'")
    if at < len(value):
        parts.append(value[at:])
    return tuple(parts)
