"""The machinery of the report's typed records: value kinds, the ABSENT marker, from_dict, to_dict.

A record is a frozen dataclass whose fields are the keys of one object of report.json, each
with the kind of value it holds (``STR``, ``NUM``, ``Nullable(NUM)``, ``ListOf(...)``,
``MapOf(...)``, ``RecordOf(...)``). A key the JSON may leave out defaults to ``ABSENT``, which
is falsy and is left out again by ``to_dict``: a report read and written back is the same
report, key for key (``null`` stays ``null``, a missing key stays missing).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Literal, TypeVar


class InvalidRecord(ValueError):
    """A value that does not have its key's kind (the message names the key's path)."""


class Absent:
    """The value of a key the report leaves out: falsy, and never written."""

    __slots__ = ()
    _instance: ClassVar[Absent | None] = None

    def __new__(cls) -> Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> Literal[False]:
        # Literal[False]: a type checker drops Absent from a value that tested true (`if report.delta:`).
        return False

    def __repr__(self) -> str:
        return "ABSENT"

    def __str__(self) -> str:
        # Whatever turns a value into text (a template filter, an f-string) prints nothing.
        return ""

    def __reduce__(self) -> str:
        return "ABSENT"


ABSENT = Absent()


# --------------------------------------------------------------------------- kinds


@dataclass(frozen=True)
class Scalar:
    name: str  # string | integer | number | boolean | any
    types: tuple[type, ...]

    def load(self, value: Any, where: str) -> Any:
        if self.name == "integer" and isinstance(value, float) and value.is_integer():
            # JSON does not tell 1 from 1.0, and the schema's "integer" takes both (a tool that
            # re-serialises the artifact may write either): the record holds the int.
            return int(value)
        if self.types and (not isinstance(value, self.types) or (bool not in self.types and isinstance(value, bool))):
            raise InvalidRecord(f"{where} must be {'an' if self.name[0] in 'aeiou' else 'a'} {self.name}")
        return value

    def dump(self, value: Any) -> Any:
        return value


STR = Scalar("string", (str,))
INT = Scalar("integer", (int,))
NUM = Scalar("number", (int, float))
BOOL = Scalar("boolean", (bool,))
ANY = Scalar("any JSON value", ())


@dataclass(frozen=True)
class Nullable:
    inner: Any

    def load(self, value: Any, where: str) -> Any:
        return None if value is None else self.inner.load(value, where)

    def dump(self, value: Any) -> Any:
        return None if value is None else self.inner.dump(value)


@dataclass(frozen=True)
class ListOf:
    inner: Any

    def load(self, value: Any, where: str) -> tuple[Any, ...]:
        if not isinstance(value, list):
            raise InvalidRecord(f"{where} must be an array")
        return tuple(self.inner.load(item, f"{where}[{i}]") for i, item in enumerate(value))

    def dump(self, value: Any) -> list[Any]:
        return [self.inner.dump(item) for item in value]


@dataclass(frozen=True)
class PairOf:
    """An array of exactly two items (an interval's ends)."""
    inner: Any

    def load(self, value: Any, where: str) -> tuple[Any, ...]:
        if not isinstance(value, list) or len(value) != 2:
            raise InvalidRecord(f"{where} must be an array of two items")
        return tuple(self.inner.load(item, f"{where}[{i}]") for i, item in enumerate(value))

    def dump(self, value: Any) -> list[Any]:
        return [self.inner.dump(item) for item in value]


@dataclass(frozen=True)
class MapOf:
    inner: Any

    def load(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise InvalidRecord(f"{where} must be an object")
        return {key: self.inner.load(item, f"{where}.{key}") for key, item in value.items()}

    def dump(self, value: Any) -> dict[str, Any]:
        return {key: self.inner.dump(item) for key, item in value.items()}


@dataclass(frozen=True)
class RecordOf:
    kind: type[Record]

    def load(self, value: Any, where: str) -> Record:
        if isinstance(value, self.kind):
            # A record the gate built itself (gate.report.build): already of its kind. JSON never
            # holds one, so a report read from a file is loaded key by key as before.
            return value
        return self.kind.from_dict(value, where)

    def dump(self, value: Record) -> dict[str, Any]:
        return value.to_dict()


def key(kind: Any, *, required: bool = False) -> Any:
    """A field of a record: one key of the JSON object, holding values of ``kind``."""
    if required:
        return field(metadata={"kind": kind, "required": True})
    return field(default=ABSENT, metadata={"kind": kind, "required": False})


# --------------------------------------------------------------------------- records


class Record:
    """Base of every typed record of the report."""

    @classmethod
    def keys(cls) -> tuple[Any, ...]:
        return tuple(f for f in fields(cls) if "kind" in f.metadata)  # type: ignore[arg-type]

    @classmethod
    def from_dict(cls: type[RecordT], data: Any, where: str = "report") -> RecordT:
        """The record of ``data``; an unknown key, a missing required key or a value of the
        wrong kind is :class:`InvalidRecord`, naming its path."""
        if not isinstance(data, Mapping):
            raise InvalidRecord(f"{where} must be an object")
        known = {f.name: f for f in cls.keys()}
        for name in data:
            if name not in known:
                raise InvalidRecord(f"{where} has an unknown key {name!r}")
        values: dict[str, Any] = {}
        for name, f in known.items():
            if name in data:
                values[name] = f.metadata["kind"].load(data[name], f"{where}.{name}")
            elif f.metadata["required"]:
                raise InvalidRecord(f"{where} lacks the key {name!r}")
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object: every key but the ABSENT ones, in declaration order."""
        out: dict[str, Any] = {}
        for f in self.keys():
            value = getattr(self, f.name)
            if value is not ABSENT:
                out[f.name] = f.metadata["kind"].dump(value)
        return out

    def has(self, name: str) -> bool:
        """Whether the report holds the key ``name`` (even as null)."""
        return getattr(self, name) is not ABSENT

    def __bool__(self) -> bool:
        # As an object of the JSON is: ``{}`` is falsy, an object with any key is not.
        return any(getattr(self, f.name) is not ABSENT for f in self.keys())


RecordT = TypeVar("RecordT", bound=Record)


def empty(kind: type[RecordT]) -> RecordT:
    """A record of ``kind`` with every key absent (falsy): what a missing or null section reads
    as where the code wants one shape for both."""
    record: RecordT = object.__new__(kind)
    for f in kind.keys():
        object.__setattr__(record, f.name, ABSENT)
    return record

