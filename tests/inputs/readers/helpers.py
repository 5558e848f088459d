"""Small helpers shared by the reader tests."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from gate.common.errors import InputError


def write(folder: Path, name: str, content: str | bytes, gz: bool = False) -> Path:
    """Write ``content`` (str as UTF-8) to ``folder/name``, gzipped when asked."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def error_of(fn, *args, **kwargs) -> InputError:
    """Call ``fn`` expecting an InputError; return it after checking it is one line."""
    with pytest.raises(InputError) as info:
        fn(*args, **kwargs)
    err = info.value
    assert "\n" not in str(err)
    return err


def expect_error(fn, path: Path | str, line: int | None, message: str, *args, **kwargs) -> None:
    """``fn(path, ...)`` raises exactly ``path:line: message``."""
    err = error_of(fn, path, *args, **kwargs)
    where = str(path) if line is None else f"{path}:{line}"
    assert str(err) == f"{where}: {message}"
    assert err.path == str(path) and err.line == line
