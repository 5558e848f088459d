"""Query ids a config names: ``tuning.queries`` and ``tuning.holdout`` (a list, or a file of ids)."""

from __future__ import annotations

from typing import Any

from gate.common.errors import InputError
from gate.inputs.config import Config
from gate.inputs.readers.queries import load_query_ids


def configured_query_ids(value: Any, config: Config, key: str) -> list[str] | None:
    """Query ids from a config value: a list of ids, or a file of ids, one per line (a query
    file, TSV or JSONL, lists its ids too; see read_query_ids)."""
    if value is None:
        return None
    if isinstance(value, list):
        return [str(v) for v in value]
    if isinstance(value, str):
        return load_query_ids(config.spec(value))
    raise InputError(str(config.path), None, f"key '{key}': expected a query file or a list of query ids")


def tuning_split(config: Config) -> tuple[list[str] | None, list[str] | None]:
    """The config's tuning queries and held-out queries (None where it names none)."""
    return (configured_query_ids(config.tuning.queries, config, "tuning.queries"),
            configured_query_ids(config.tuning.holdout, config, "tuning.holdout"))
