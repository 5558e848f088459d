"""The baseline manifest: what was measured, on what, and how to measure it again.

A baseline is a folder::

    manifest.yml                  names every data file by its content hash
    run-<sha>.trec.gz             the archived ranked lists
    per-query-<sha>.json          per-query values of every measure
    config-<sha>.json             the retrieval config itself

Data files are written under content-hash names and fsynced first; only then
is ``manifest.yml`` replaced with ``os.replace``. A crash at any point leaves
either the old manifest (whose data files are untouched) or the new one, never
half of either. ``gc`` removes data files no manifest names.
"""

from __future__ import annotations

import datetime as _dt
import gzip
import hashlib
import io
import json
import os
import platform
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from gate import __version__
from gate.common import limits
from gate.common.atomic import (
    folder_lock,
    is_owned_temp,
    sweep_stale_temp_files,
    write_bytes_atomic,
    write_text_atomic,
)
from gate.common.errors import InputError
from gate.inputs.readers.fields import check_json_value, parse_json_document
from gate.inputs.readers.records import Run
from gate.inputs.readers.runs import read_run
from gate.inputs.readers.textlines import open_regular, read_text_file
from gate.inputs.readers.timings import Timings, read_timings
from gate.inputs.readers.yaml_source import load_yaml
from gate.inputs.retrieval_config import RetrievalConfig, canonical_json

MANIFEST_SCHEMA_VERSION = "1.0"
_DATA_FILE = re.compile(r"^(run|per-query|config|noise-run|noise|timings)-[0-9a-f]{16,64}\.(trec\.gz|json|jsonl\.gz)$")


@dataclass(frozen=True)
class InputRecord:
    """An input as recorded: its id (path or spec as configured), canonical sha256, count."""

    id: str
    sha256: str
    count: int

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "sha256": self.sha256, "count": self.count}

    def describe(self, unit: str) -> str:
        return f"{self.id} ({self.count} {unit}, sha256 {self.sha256[:12]})"


@dataclass(frozen=True)
class CorpusRecord:
    id: str
    sha256: str
    count: int
    location: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "sha256": self.sha256, "count": self.count, "location": self.location}


@dataclass(frozen=True)
class Manifest:
    folder: Path
    created: str
    git_commit: str | None
    suite: str
    config_path: str
    config: RetrievalConfig
    config_sha256: str
    corpus: CorpusRecord | None
    queries: InputRecord
    qrels: InputRecord
    metric: str
    measures: tuple[str, ...]
    rel: int
    runner: Mapping[str, Any]
    run_file: str
    run_sha256: str
    run_query_count: int
    per_query_file: str
    per_query_sha256: str
    environment: Mapping[str, Any]
    extra: Mapping[str, Any] = field(default_factory=dict)  # sections added by later stages (noise)
    schema_version: str = MANIFEST_SCHEMA_VERSION

    @property
    def manifest_path(self) -> Path:
        return self.folder / "manifest.yml"

    def run_path(self) -> Path:
        return self.folder / self.run_file

    def per_query_values(self) -> dict[str, dict[str, float]]:
        """``{measure: {query_id: value}}`` as archived."""
        path = self.folder / self.per_query_file
        text = read_text_file(path, "archived per-query values", limit=256 << 20)
        if hashlib.sha256(text.encode("utf-8")).hexdigest() != self.per_query_sha256:
            raise InputError(str(path), None, "archived per-query values do not match their sha256 in manifest.yml")
        return parse_json_document(str(path), text)

    def load_run(self) -> Run:
        path = self.run_path()
        if _file_sha256(path) != self.run_sha256:
            raise InputError(str(path), None, "archived run does not match its sha256 in manifest.yml")
        return read_run(path)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "created": self.created,
            "git_commit": self.git_commit,
            "suite": self.suite,
            "retrieval_config": {
                "path": self.config_path,
                "sha256": self.config_sha256,
                "file": f"config-{self.config_sha256[:16]}.json",
            },
            "corpus": None if self.corpus is None else self.corpus.to_dict(),
            "queries": self.queries.to_dict(),
            "qrels": self.qrels.to_dict(),
            "metric": self.metric,
            "measures": list(self.measures),
            "rel": self.rel,
            "runner": dict(self.runner),
            "run": {"file": self.run_file, "sha256": self.run_sha256, "queries": self.run_query_count},
            "per_query": {"file": self.per_query_file, "sha256": self.per_query_sha256},
            "environment": dict(self.environment),
            **dict(self.extra),
        }


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open_regular(path) as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def environment_record(files: Mapping[str, str | None] | None = None) -> dict[str, Any]:
    """Python and package versions, plus the sha256 of each file listed under ``environment:``."""
    packages: dict[str, str | None] = {}
    for name in ("retrieval-gate", "numpy", "ruamel.yaml", "jinja2", "requests", "ir_datasets"):
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            packages[name] = __version__ if name == "retrieval-gate" else None
    return {
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "packages": packages,
        "files": dict(files or {}),
    }


def run_to_trec_gz(run: Run) -> bytes:
    """A run as gzipped TREC text, deterministic bytes (mtime 0) so equal runs hash equal."""
    text = io.StringIO()
    tag = run.tag or "retrieval-gate"
    for row in run.rows():
        text.write(f"{row.query_id} Q0 {row.doc_id} {row.rank} {row.score!r} {tag}\n")
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as handle:
        handle.write(text.getvalue().encode("utf-8"))
    return buffer.getvalue()


def _write_data(folder: Path, prefix: str, suffix: str, data: bytes) -> tuple[str, str]:
    sha = hashlib.sha256(data).hexdigest()
    name = f"{prefix}-{sha[:16]}.{suffix}"
    target = folder / name
    if not target.exists() or _file_sha256(target) != sha:
        write_bytes_atomic(target, data)
    return name, sha


def write_manifest(
    folder: str | Path,
    *,
    suite: str,
    config_path: str,
    config: RetrievalConfig,
    corpus: CorpusRecord | None,
    queries: InputRecord,
    qrels: InputRecord,
    metric: str,
    measures: tuple[str, ...],
    rel: int,
    runner: Mapping[str, Any],
    run: Run,
    per_query: Mapping[str, Mapping[str, float]],
    environment: Mapping[str, Any],
    git_commit: str | None,
    extra: Mapping[str, Any] | None = None,
    extra_files: Mapping[str, bytes] | None = None,
) -> Manifest:
    """Archive a baseline. Data first (content-hash names, fsynced), manifest.yml last, under the
    folder's lock (a concurrent ``archive --gc`` waits)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with folder_lock(folder):
        run_file, run_sha = _write_data(folder, "run", "trec.gz", run_to_trec_gz(run))
        per_query_bytes = json.dumps(per_query, sort_keys=True, indent=0).encode("utf-8")
        per_query_file, per_query_sha = _write_data(folder, "per-query", "json", per_query_bytes)
        # The canonical serialisation, so the file's hash is the config's sha256.
        config_bytes = canonical_json(config.data).encode("utf-8")
        _write_data(folder, "config", "json", config_bytes)
        for name, data in (extra_files or {}).items():
            # Callers name extra data files by their own content hash.
            target = folder / name
            if not target.exists():
                write_bytes_atomic(target, data)
        manifest = Manifest(
            folder=folder,
            created=_dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
            git_commit=git_commit,
            suite=suite,
            config_path=config_path,
            config=config,
            config_sha256=config.sha256,
            corpus=corpus,
            queries=queries,
            qrels=qrels,
            metric=metric,
            measures=tuple(measures),
            rel=rel,
            runner=dict(runner),
            run_file=run_file,
            run_sha256=run_sha,
            run_query_count=len(run.query_ids),
            per_query_file=per_query_file,
            per_query_sha256=per_query_sha,
            environment=dict(environment),
            extra=dict(extra or {}),
        )
        buffer = io.StringIO()
        yaml = YAML(typ="safe", pure=True)
        yaml.default_flow_style = False
        buffer.write("# retrieval-gate baseline manifest; data files are named by content hash.\n")
        yaml.dump(manifest.to_dict(), buffer)
        write_text_atomic(folder / "manifest.yml", buffer.getvalue())
        return manifest

def _need(data: Mapping[str, Any], key: str, path: str, kind: type | tuple[type, ...]) -> Any:
    if key not in data:
        raise InputError(path, None, f"manifest has no '{key}'")
    value = data[key]
    if not isinstance(value, kind) or isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple)
                                                                                else (kind,)):
        raise InputError(path, None, f"manifest key '{key}' has the wrong type ({type(value).__name__})")
    return value


def _text(data: Mapping[str, Any], key: str, path: str, *, required: bool = True, where: str = "") -> str:
    value = data.get(key)
    if value is None and not required:
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise InputError(path, None, f"manifest key '{where}{key}' must be text, got "
                         f"{'nothing' if value is None else type(value).__name__}")
    return str(value)


def _count(data: Mapping[str, Any], key: str, path: str, where: str = "", default: int = 0) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 63:
        raise InputError(path, None, f"manifest key '{where}{key}' must be a non-negative integer, got {value!r}")
    return value


def _data_file(data: Mapping[str, Any], key: str, path: str, where: str) -> str:
    """A data file name as the archiver writes it: no folder, no '..' - a manifest edited to
    point elsewhere is refused, not followed."""
    name = _text(data, key, path, where=where)
    if not _DATA_FILE.match(name):
        raise InputError(path, None, f"manifest key '{where}{key}' is not a data file name of this folder: "
                         f"'{name[:60]}'")
    return name


def _manifest_data(path: Path, display: str) -> tuple[dict[str, Any], str]:
    """The manifest's mapping, checked to hold only JSON's types, and its schema version (one
    this version reads)."""
    try:
        text = read_text_file(path, "a baseline manifest", limit=limits.MAX_RECORD_FILE_BYTES)
    except InputError as error:
        if error.message == "no such file":
            raise InputError(display, None, "no baseline manifest (run: retrieval-gate archive)") from None
        raise
    data = load_yaml(text, display, typ="safe")
    if not isinstance(data, dict):
        raise InputError(display, None, "not a baseline manifest")
    check_json_value(display, None, data, "the manifest", text_keys=True)
    version = data.get("schema_version")
    if not isinstance(version, str):
        raise InputError(display, None, f"manifest key 'schema_version' must be text (as archive writes it, "
                         f"'{MANIFEST_SCHEMA_VERSION}'), got {type(version).__name__}")
    if version.split(".")[0] != MANIFEST_SCHEMA_VERSION.split(".")[0]:
        raise InputError(display, None, f"manifest schema {version} is not readable by this version "
                                        f"(wants {MANIFEST_SCHEMA_VERSION})")
    return data, version


def _archived_config(rc: Mapping[str, Any], folder: Path, display: str) -> tuple[str, RetrievalConfig]:
    """The archived retrieval config ``retrieval_config:`` names (its path in the repository, and
    the config read from its data file), checked against its sha256."""
    config_file = folder / _data_file(rc, "file", display, "retrieval_config.")
    try:
        config_data = parse_json_document(str(config_file), read_text_file(config_file, "an archived retrieval config"))
    except InputError as error:
        if error.message == "no such file":
            raise InputError(display, None, f"archived retrieval config {config_file.name} is missing") from None
        raise
    if not isinstance(config_data, dict):
        raise InputError(str(config_file), None, "archived retrieval config is not a mapping")
    config_path = _text(rc, "path", display, where="retrieval_config.")
    config = RetrievalConfig(f"{display}:{config_path}", config_data, Path(config_path).suffix or ".yml")
    if config.sha256 != rc.get("sha256"):
        raise InputError(str(config_file), None, "archived retrieval config does not match its sha256")
    return config_path, config


def _corpus_record(data: Mapping[str, Any], display: str) -> CorpusRecord | None:
    """``corpus:``, optional."""
    corpus_data = data.get("corpus")
    if corpus_data is None:
        return None
    if not isinstance(corpus_data, dict):
        raise InputError(display, None, "manifest key 'corpus' has the wrong type")
    location = corpus_data.get("location")
    return CorpusRecord(_text(corpus_data, "id", display, where="corpus."),
                        _text(corpus_data, "sha256", display, where="corpus."),
                        _count(corpus_data, "count", display, "corpus."),
                        None if location is None else _text(corpus_data, "location", display, where="corpus."))


def _check_lists_and_mappings(data: Mapping[str, Any], display: str) -> list[Any]:
    """``measures:`` (a list, returned) and ``runner:`` / ``environment:`` (mappings when set)."""
    measures = data.get("measures", [])
    if not isinstance(measures, list):
        raise InputError(display, None, "manifest key 'measures' must be a list")
    for key in ("runner", "environment"):
        if data.get(key) is not None and not isinstance(data[key], dict):
            raise InputError(display, None, f"manifest key '{key}' must be a mapping")
    return measures


def load_manifest(path: str | Path) -> Manifest:
    """Read a manifest (strictly); its data files are checked when they are used."""
    path = Path(path)
    display = str(path)
    data, version = _manifest_data(path, display)
    folder = path.parent
    rc = _need(data, "retrieval_config", display, (dict,))
    config_path, config = _archived_config(rc, folder, display)

    def record(key: str) -> InputRecord:
        item = _need(data, key, display, (dict,))
        return InputRecord(_text(item, "id", display, where=f"{key}."), _text(item, "sha256", display, where=f"{key}."),
                           _count(item, "count", display, f"{key}."))

    corpus = _corpus_record(data, display)
    run = _need(data, "run", display, (dict,))
    per_query = _need(data, "per_query", display, (dict,))
    measures = _check_lists_and_mappings(data, display)
    git_commit = data.get("git_commit")
    known = {"schema_version", "created", "git_commit", "suite", "retrieval_config", "corpus", "queries",
             "qrels", "metric", "measures", "rel", "runner", "run", "per_query", "environment"}
    rel = _count(data, "rel", display, default=1)
    if rel < 1:
        raise InputError(display, None, "manifest key 'rel' must be a positive integer")
    return Manifest(
        folder=folder,
        created=_text(data, "created", display, required=False),
        git_commit=None if git_commit is None else _text(data, "git_commit", display),
        suite=_text(data, "suite", display, required=False),
        config_path=config_path,
        config=config,
        config_sha256=_text(rc, "sha256", display, where="retrieval_config."),
        corpus=corpus,
        queries=record("queries"),
        qrels=record("qrels"),
        metric=str(_need(data, "metric", display, (str,))),
        measures=tuple(_text({"m": m}, "m", display, where="measures[].") for m in measures),
        rel=rel,
        runner=dict(data.get("runner") or {}),
        run_file=_data_file(run, "file", display, "run."),
        run_sha256=_text(run, "sha256", display, where="run."),
        run_query_count=_count(run, "queries", display, "run."),
        per_query_file=_data_file(per_query, "file", display, "per_query."),
        per_query_sha256=_text(per_query, "sha256", display, where="per_query."),
        environment=dict(data.get("environment") or {}),
        extra={k: v for k, v in data.items() if k not in known},
        schema_version=version,
    )


def timings_record(timings_path: str | Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The manifest's ``timings`` section and its data file (``timings-<sha>.jsonl.gz``): the
    archived run's timings sidecar, so a reused baseline has them."""
    with open(timings_path, "rb") as handle:
        data = gzip.compress(handle.read(), mtime=0)
    sha = hashlib.sha256(data).hexdigest()
    name = f"timings-{sha[:16]}.jsonl.gz"
    return {"timings": {"file": name, "sha256": sha}}, {name: data}


def archived_timings(manifest: Manifest | None) -> Timings | None:
    """The archived baseline's timings (origin ``archive``), or None: a manifest of an older gate, or
    of a run without timings, has none. A data file that is not the one recorded is an InputError."""
    section = None if manifest is None else manifest.extra.get("timings")
    if manifest is None or section is None:
        return None
    display = str(manifest.manifest_path)
    if not isinstance(section, Mapping):
        raise InputError(display, None, "manifest key 'timings' must be a mapping with file and sha256")
    name = _data_file(section, "file", display, "timings.")
    path = manifest.folder / name
    if _file_sha256(path) != _text(section, "sha256", display, where="timings."):
        raise InputError(str(path), None, "archived timings do not match their sha256 in manifest.yml")
    return read_timings(path, origin="archive")


def referenced_files(manifest: Manifest) -> set[str]:
    names = {manifest.run_file, manifest.per_query_file, f"config-{manifest.config_sha256[:16]}.json"}
    timings = manifest.extra.get("timings")
    if isinstance(timings, Mapping) and timings.get("file"):
        names.add(str(timings["file"]))
    noise = manifest.extra.get("noise_band")
    if isinstance(noise, Mapping):
        for item in noise.get("runs_files", []) or []:
            names.add(str(item))
        if noise.get("file"):
            names.add(str(noise["file"]))
    return names


def gc(folder: str | Path) -> list[str]:
    """Remove data files the current manifest does not name. Returns the removed names."""
    folder = Path(folder)
    with folder_lock(folder):  # an archive writing its data files finishes first
        return _gc_locked(folder)


def _gc_locked(folder: Path) -> list[str]:
    manifest = load_manifest(folder / "manifest.yml")
    keep = referenced_files(manifest)
    # A killed writer's temporary file goes; a live writer's (an archive still writing) stays.
    removed = sweep_stale_temp_files(folder)
    for item in sorted(folder.iterdir()):
        if _DATA_FILE.match(item.name) and item.name not in keep:
            item.unlink()
            removed.append(item.name)
        elif item.name.startswith(".") and item.name.endswith(".tmp") and not is_owned_temp(item.name):
            item.unlink()  # an older gate's temp file, which does not say its writer
            removed.append(item.name)
    return sorted(removed)


def fsync_folder(folder: Path) -> None:
    """Make the rename durable where the platform allows it."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
