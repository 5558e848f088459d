"""``irds:<dataset-id>[#field=<name>]``: queries, qrels and documents via ir_datasets.

``ir_datasets`` is imported on first use.  It downloads what is not in its
cache (``IR_DATASETS_HOME``); this module makes that fail fast when offline:
downloads get one try and a short timeout unless the user set
``IR_DATASETS_DL_TRIES`` / ``IR_DATASETS_DL_TIMEOUT``, and any failure becomes
a one-line :class:`InputError` naming the spec and the cache folder.

Note that ir_datasets reads ``IR_DATASETS_HOME`` when it is imported.

Duplicate qrels: an exact repeat of a judgment (same label) is accepted, since
a user cannot edit a packaged dataset; two different labels for the same
(query, document) are an error.
"""

from __future__ import annotations

import difflib
import logging
import os
import socket
import sys
import urllib.error
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from gate.common.errors import InputError
from gate.inputs.readers.records import Qrels, Query, QuerySet

__all__ = [
    "IRDS_PREFIX",
    "IrdsSpec",
    "is_irds_spec",
    "parse_irds_spec",
    "load_irds_queries",
    "load_irds_qrels",
    "iter_irds_docs",
]

IRDS_PREFIX = "irds:"
DEFAULT_TIMEOUT = "5"
DEFAULT_TRIES = "1"


@dataclass(frozen=True)
class IrdsSpec:
    spec: str  # as given, for messages
    dataset_id: str
    field: str | None = None


def is_irds_spec(spec: object) -> bool:
    return isinstance(spec, str) and spec.startswith(IRDS_PREFIX)


def parse_irds_spec(spec: str) -> IrdsSpec:
    if not is_irds_spec(spec):
        raise InputError(spec, None, f"not an ir_datasets spec (expected '{IRDS_PREFIX}<dataset-id>')")
    body, hash_, suffix = spec[len(IRDS_PREFIX) :].partition("#")
    dataset_id = body.strip()
    if not dataset_id:
        raise InputError(spec, None, f"empty dataset id (expected '{IRDS_PREFIX}<dataset-id>[#field=<name>]')")
    field = None
    if hash_:
        key, eq, value = suffix.partition("=")
        if key.strip() != "field" or not eq or not value.strip():
            raise InputError(spec, None, f"unknown suffix '#{suffix}' (expected '#field=<name>')")
        field = value.strip()
    return IrdsSpec(spec, dataset_id, field)


def _home() -> str:
    return os.environ.get("IR_DATASETS_HOME", os.path.join("~", ".ir_datasets"))


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def _is_network_error(exc: BaseException) -> bool:
    # A requests exception exists only once ir_datasets has imported requests: looked up there
    # rather than imported, which would cost every reader 0.1 s to test one exception's class.
    requests = sys.modules.get("requests")
    if requests is not None and isinstance(exc, requests.exceptions.RequestException):
        return True
    if isinstance(exc, (ConnectionError, TimeoutError, socket.timeout, socket.gaierror, urllib.error.URLError)):
        return True
    # ir_datasets wraps failed mirrors in RuntimeError('All download sources failed', [...]).
    return isinstance(exc, RuntimeError) and "download" in str(exc).lower()


def _offline(s: IrdsSpec) -> InputError:
    return InputError(s.spec, None, f"not available offline: not in the ir_datasets cache (IR_DATASETS_HOME="
                      f"{_home()}) and the download failed; pass a local file instead")


@contextmanager
def quiet_irds() -> Iterator[None]:
    """Silence ir_datasets' own log lines ([INFO] ..., [WARNING] Download failed ...).

    Its loggers set their level when first used and do not propagate, so
    only a process-wide ``logging.disable`` reaches them; the gate itself
    prints with ``print``, not logging.
    """
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        yield
    finally:
        logging.disable(previous)


@contextmanager
def _guard(s: IrdsSpec, what: str) -> Iterator[None]:
    """Bound downloads and turn any failure into a one-line InputError."""
    saved = {k: os.environ.get(k) for k in ("IR_DATASETS_DL_TRIES", "IR_DATASETS_DL_TIMEOUT")}
    os.environ.setdefault("IR_DATASETS_DL_TRIES", DEFAULT_TRIES)
    os.environ.setdefault("IR_DATASETS_DL_TIMEOUT", DEFAULT_TIMEOUT)
    old_timeout = socket.getdefaulttimeout()
    if old_timeout is None:
        socket.setdefaulttimeout(float(os.environ["IR_DATASETS_DL_TIMEOUT"]))
    try:
        with quiet_irds():
            yield
    except InputError:
        raise
    except KeyboardInterrupt:
        raise
    except Exception as exc:
        if _is_network_error(exc):
            raise _offline(s) from None
        raise InputError(s.spec, None, f"cannot read {what}: {type(exc).__name__}: {_short(exc)}") from None
    finally:
        socket.setdefaulttimeout(old_timeout)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _load(s: IrdsSpec) -> Any:
    # ir_datasets draws tqdm bars on stderr while it reads; tqdm reads TQDM_* settings when it
    # is first imported (a user's own TQDM_DISABLE=0 wins).
    os.environ.setdefault("TQDM_DISABLE", "1")
    try:
        import ir_datasets
    except ImportError:  # pragma: no cover - declared dependency
        raise InputError(s.spec, None, "the ir_datasets package is not installed") from None
    try:
        with quiet_irds():
            return ir_datasets.load(s.dataset_id)
    except KeyError:
        known = list(ir_datasets.registry)
        close = difflib.get_close_matches(s.dataset_id, known, n=3)
        hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
        raise InputError(s.spec, None, f"unknown ir_datasets id '{s.dataset_id}'{hint}") from None
    except Exception as exc:
        raise InputError(s.spec, None, f"cannot load the dataset: {type(exc).__name__}: {_short(exc)}") from None


def load_irds_queries(spec: str) -> QuerySet:
    """Queries of ``irds:<id>``: ``default_text()``, or the ``#field=<name>`` attribute."""
    s = parse_irds_spec(spec)
    ds = _load(s)
    if not ds.has_queries():
        raise InputError(spec, None, f"{s.dataset_id} has no queries")
    fields = tuple(getattr(ds.queries_cls(), "_fields", ()))
    if s.field is not None and fields and s.field not in fields:
        raise InputError(spec, None, f"queries of {s.dataset_id} have no field '{s.field}' "
                                     f"(fields: {', '.join(fields)})")
    what = "the text" if s.field is None else f"field '{s.field}'"
    out: list[Query] = []
    seen: set[str] = set()
    with _guard(s, "queries"):
        for q in ds.queries_iter():
            qid = str(q.query_id)
            text = q.default_text() if s.field is None else getattr(q, s.field)
            if not isinstance(text, str):
                raise InputError(spec, None, f"{what} of query '{qid}' is not text ({type(text).__name__})")
            text = text.strip()
            if not text:
                raise InputError(spec, None, f"{what} of query '{qid}' is empty")
            if qid in seen:
                raise InputError(spec, None, f"duplicate query id '{qid}'")
            seen.add(qid)
            meta = {
                k: v
                for k, v in zip(fields, q)
                if k not in ("query_id", s.field or "text") and isinstance(v, (str, int, float))
            }
            out.append(Query(qid, text, None, meta))
    return QuerySet(source=spec, queries=tuple(out))


def load_irds_qrels(spec: str) -> Qrels:
    """Qrels of ``irds:<id>`` (a ``#field=`` suffix names a text field: refused here).

    ``negative_is_judged`` is set when the dataset defines a negative grade
    (Cranfield's -1 "references of no interest").
    """
    s = parse_irds_spec(spec)
    if s.field is not None:
        raise InputError(spec, None, "'#field=' picks a text field of queries or documents; qrels have none")
    ds = _load(s)
    if not ds.has_qrels():
        raise InputError(spec, None, f"{s.dataset_id} has no qrels")
    defs = ds.qrels_defs() or {}
    negative_is_judged = any(isinstance(k, int) and k < 0 for k in defs)
    judgments: dict[str, dict[str, int]] = {}
    with _guard(s, "qrels"):
        for n, qrel in enumerate(ds.qrels_iter(), start=1):
            qid, doc, rel = str(qrel.query_id), str(qrel.doc_id), qrel.relevance
            if isinstance(rel, bool) or not isinstance(rel, int):
                if isinstance(rel, float) and rel.is_integer():
                    rel = int(rel)
                else:
                    raise InputError(spec, None, f"qrels record {n}: relevance {rel!r} is not an integer")
            docs = judgments.setdefault(qid, {})
            old = docs.get(doc)
            if old is not None and old != rel:
                raise InputError(
                    spec, None, f"qrels record {n}: document '{doc}' for query '{qid}' judged both {old} and {rel}"
                )
            docs[doc] = rel
    return Qrels(source=spec, judgments=judgments, negative_is_judged=negative_is_judged)


def iter_irds_docs(spec: str) -> Iterator[tuple[str, str]]:
    """Stream ``(doc_id, text)`` of ``irds:<id>``: ``default_text()``, or the ``#field=<name>`` attribute."""
    s = parse_irds_spec(spec)
    ds = _load(s)
    if not ds.has_docs():
        raise InputError(spec, None, f"{s.dataset_id} has no documents")
    fields = tuple(getattr(ds.docs_cls(), "_fields", ()))
    if s.field is not None and fields and s.field not in fields:
        raise InputError(spec, None, f"documents of {s.dataset_id} have no field '{s.field}' "
                                     f"(fields: {', '.join(fields)})")

    def text_of(doc: Any) -> str:
        if s.field is None:
            return doc.default_text()
        value = getattr(doc, s.field)
        if not isinstance(value, str):
            raise InputError(spec, None, f"field '{s.field}' of document '{doc.doc_id}' is not text "
                             f"({type(value).__name__})")
        return value

    with _guard(s, "documents"):  # a download, if any, happens here
        it = iter(ds.docs_iter())
        first = next(it, None)
    if first is None:
        return
    yield str(first.doc_id), text_of(first)
    while True:
        try:
            with quiet_irds():
                doc = next(it, None)
        except Exception as exc:
            if _is_network_error(exc):
                raise _offline(s) from None
            raise InputError(spec, None, f"cannot read documents: {type(exc).__name__}: {_short(exc)}") from None
        if doc is None:
            return
        yield str(doc.doc_id), text_of(doc)
