"""Fuzz the YAML / JSON loaders: gate config, strata shares, retrieval config, baseline manifest.

Same contract as the data readers (tests/fuzz/test_readers_fuzz.py): any bytes
give a value that round-trips or an :class:`InputError` naming the file (and
the line, when the problem is at one); never another exception, a hang or
runaway memory.  YAML adds its own hazards, generated here on purpose: alias
bombs ("billion laughs"), self-referencing anchors, deep nesting, huge
integers (decimal and hex), tags, duplicate keys, unprintable characters.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError

from gate.inputs.config import load_config
from gate.inputs.manifest import CorpusRecord, InputRecord, load_manifest, write_manifest
from gate.inputs.readers.records import Run
from gate.inputs.retrieval_config import RetrievalConfig, load_retrieval_config
from gate.inputs.traffic_shares import load_strata_spec
from tests.fuzz import fuzz_settings
from tests.fuzz.strategies import (
    alias_bomb,
    canonical,
    check_error,
    config_documents,
    config_to_yaml,
    deep_yaml,
    mutated,
    nest_dotted,
    outcome_of,
    retrieval_documents,
    shares_models,
    texty_bytes,
    write_shares,
)

# =========================================================================== YAML mutations

YAML_HAZARDS = [
    b"x: !!python/object/apply:os.system [ls]",
    b"x: !!binary aGVsbG8=",
    b"x: !!set {a, b}",
    b"x: !!omap [a: 1, b: 2]",
    b"x: !custom tagged",
    b"x: !!float nan",
    b"x: .nan",
    b"x: -.inf",
    b"x: 2001-12-14t21:59:43.10-05:00",
    b"x: 2002-12-14",
    b"x: 0x" + b"f" * 300,
    b"x: 0x" + b"f" * 4000,
    b"x: " + b"9" * 400,
    b"x: " + b"9" * 5000,
    b"x: 0o" + b"7" * 5000,
    b"x: 0b" + b"1" * 20000,
    b"x: 1_000_000",
    b"x: 190:20:30",
    b"x: &a [*a]",
    b"x: &a {k: *a}",
    b"x: *nosuch",
    b"? [a, b]\n: 1",
    b"? {a: 1}\n: 2",
    b"x: 1\nx: 2",
    b"\tx: 1",
    b"x: 'a\x85b'",
    b'x: "\\ud800"',
    b'x: "\\x00"',
    b"%TAG ! tag:example.com,2000:\n---",
]


@st.composite
def yaml_mutated(draw, base: st.SearchStrategy[bytes]) -> bytes:
    """A YAML file with generic byte mutations and/or YAML-specific hazards."""
    data = draw(base)
    how = draw(st.sampled_from(["generic", "hazard", "hazard", "bomb", "deep", "nested-hazard"]))
    lines = data.split(b"\n")
    if how == "generic":
        return draw(mutated(st.just(data)))
    if how == "hazard":
        i = draw(st.integers(0, len(lines)))
        hazard = draw(st.sampled_from(YAML_HAZARDS))
        key = draw(st.sampled_from([b"x", b"suite", b"shares", b"a", b"strata", b"schema_version", b"run"]))
        lines.insert(i, hazard.replace(b"x:", key + b":", 1))
        return b"\n".join(lines)
    if how == "nested-hazard":
        # replace a scalar value with a hazard value (keeps the surrounding structure)
        idx = [i for i, line in enumerate(lines) if b": " in line and not line.rstrip().endswith(b":")]
        if not idx:
            return data
        i = draw(st.sampled_from(idx))
        key, _, _ = lines[i].partition(b": ")
        hazard = draw(st.sampled_from(YAML_HAZARDS)).split(b": ", 1)[-1]
        lines[i] = key + b": " + hazard
        return b"\n".join(lines)
    if how == "bomb":
        levels = draw(st.integers(3, 9))
        key = draw(st.sampled_from(["bomb", "options", "queries", "shares", "extra", "data"]))
        return data.rstrip(b"\n") + b"\n" + alias_bomb(levels, key=key)
    # Past MAX_NESTING but shallow: deeper flow nesting costs ruamel's scanner ~1 s a file
    # (see the known-input tests, which keep one 3,000-level case per loader).
    depth = draw(st.sampled_from([65, 100, 200]))
    return data.rstrip(b"\n") + b"\n" + deep_yaml(depth, draw(st.sampled_from(["deep", "runner", "data"])))


# =========================================================================== strata shares


@st.composite
def shares_files(draw) -> tuple[dict[str, float], list[str], bytes]:
    shares = draw(shares_models())
    guarded = draw(st.lists(st.sampled_from(sorted(shares)), unique=True, max_size=2))
    return shares, guarded, draw(write_shares(shares, guarded))


def _strata_roundtrip(spec, folder: Path) -> None:
    doc: dict[str, Any] = {"strata": {"shares": dict(spec.shares)}}
    if spec.guarded:
        doc["strata"]["guarded"] = list(spec.guarded)
    again = folder / "again-shares.yml"
    again.write_text(config_to_yaml(doc), encoding="utf-8")
    back = outcome_of(lambda: load_strata_spec(again))
    assert back.crash is None and back.error is None and not back.hang, (
        f"written-back shares do not read: {back.error or back.crash}")
    assert back.value.shares == spec.shares and back.value.guarded == spec.guarded
    assert list(back.value.shares) == list(spec.shares)


def check_strata(data: bytes, folder: Path):
    path = folder / "SHARES.yml"
    path.write_bytes(data)
    out = outcome_of(lambda: load_strata_spec(path))
    problem = out.violation(len(data))
    assert problem is None, f"load_strata_spec: {problem}"
    if out.error is not None:
        check_error(out.error, [path, path.parent / "strata.tsv"], data)
        return out
    _strata_roundtrip(out.value, folder)
    return out


@given(files=shares_files())
@fuzz_settings(40)
def test_well_formed_shares(tmp_path, files):
    shares, guarded, data = files
    out = check_strata(data, tmp_path)
    assert out.error is None, f"rejected well-formed shares: {out.error}"
    assert out.value.shares == shares and list(out.value.guarded) == guarded


@given(data=st.one_of(texty_bytes, yaml_mutated(shares_files().map(lambda t: t[2]))))
@fuzz_settings(80)
def test_shares_any_bytes_and_mutations(tmp_path, data):
    check_strata(data, tmp_path)


@pytest.mark.parametrize("value", [b"9" * 400, b"0x" + b"f" * 300, b"9" * 5000, b"[" * 3000 + b"]" * 3000],
                         ids=["int>float", "hex>float", "int>4300digits", "deep"])
def test_shares_known_inputs(tmp_path, value):
    check_strata(b"a: " + value + b"\n", tmp_path)


# =========================================================================== gate config


def _config_summary(config) -> str:
    return canonical({k: (list(v) if isinstance(v, tuple) else v) for k, v in config.as_dotted().items()})


def _plain_only(value: Any, where: str = "") -> None:
    """Config values are plain Python data (what yaml/json writers accept)."""
    if isinstance(value, dict):
        for k, v in value.items():
            assert type(k) is str, f"{where}: key {k!r} is a {type(k).__name__}"
            _plain_only(v, f"{where}.{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _plain_only(v, f"{where}[{i}]")
    else:
        assert value is None or type(value) in (str, int, float, bool), (
            f"{where}: value {value!r} is a {type(value).__module__}.{type(value).__name__}, not plain data")


def check_config(data: bytes, folder: Path, via_text: bool = False):
    path = folder / ".retrieval-gate.yml"
    if via_text:
        text = data.decode("utf-8", errors="surrogateescape")
        path_arg = folder / "base-copy.yml"  # does not exist: text_override is the file
        out = outcome_of(lambda: load_config(path_arg, text_override=text))
        names: Any = path_arg
    else:
        path.write_bytes(data)
        out = outcome_of(lambda: load_config(path))
        names = path
    problem = out.violation(len(data))
    assert problem is None, f"load_config: {problem}"
    if out.error is not None:
        check_error(out.error, names, data)
        return out
    config = out.value
    for key, value in config.as_dotted().items():
        _plain_only(value, key)
    again = folder / "again.yml"
    try:
        again.write_text(config_to_yaml(nest_dotted(config.as_dotted())), encoding="utf-8")
    except Exception as exc:  # noqa: BLE001
        raise AssertionError(f"the loaded config cannot be written back as YAML: {type(exc).__name__}: {exc}") from exc
    back = outcome_of(lambda: load_config(again))
    assert back.crash is None and back.error is None and not back.hang, (
        f"written-back config does not read: {back.error or back.crash}")
    assert _config_summary(back.value) == _config_summary(config), "config round trip changed a value"
    return out


config_files = config_documents().map(lambda d: config_to_yaml(d).encode("utf-8"))


@given(doc=config_documents())
@fuzz_settings(40)
def test_well_formed_config(tmp_path, doc):
    data = config_to_yaml(doc).encode("utf-8")
    out = check_config(data, tmp_path)
    assert out.error is None, f"rejected a config the schema accepts: {out.error}"


@given(data=st.one_of(texty_bytes, yaml_mutated(config_files)))
@fuzz_settings(100)
def test_config_any_bytes_and_mutations(tmp_path, data):
    check_config(data, tmp_path)


@given(data=st.one_of(texty_bytes, yaml_mutated(config_files)), )
@fuzz_settings(40)
def test_config_text_override(tmp_path, data):
    """``text_override`` (the base commit's copy from git show) obeys the same contract."""
    check_config(data, tmp_path, via_text=True)


@given(text=st.text(max_size=200))
@fuzz_settings(40)
def test_config_text_override_any_text(tmp_path, text):
    out = outcome_of(lambda: load_config(tmp_path / "x.yml", text_override=text))
    assert out.violation(len(text.encode("utf-8", "surrogatepass"))) is None, out.violation(len(text))
    if out.error is not None:
        check_error(out.error, tmp_path / "x.yml")


_MIN_CONFIG = b"golden: {queries: q.jsonl, qrels: q.txt}\nretrieval: {config: c.yml}\n"
KNOWN_CONFIGS = {
    "suite-hex-int>4300-digits": _MIN_CONFIG + b"suite: 0x" + b"f" * 4000 + b"\n",
    "suite-int>4300-digits": _MIN_CONFIG + b"suite: " + b"9" * 5000 + b"\n",
    "number-int>float": _MIN_CONFIG + b"policy: {max_regression: 0x" + b"f" * 300 + b"}\n",
    "deep-options": _MIN_CONFIG + b"runner: {options: {a: " + b"[" * 3000 + b"]" * 3000 + b"}}\n",
    "alias-bomb-options": _MIN_CONFIG + b"runner:\n" + alias_bomb(8, key="options", indent="  ").replace(
        b"options:\n", b"options:\n    x:\n", 1),
    "alias-bomb-tuning": _MIN_CONFIG + b"tuning:\n" + alias_bomb(8, key="queries", indent="  "),
    "self-reference": _MIN_CONFIG + b"tuning:\n  queries: &a [*a]\n",
    "tagged-option": _MIN_CONFIG + b"runner: {options: {a: !custom x}}\n",
    "nul-at-line-3": _MIN_CONFIG + b"suite: a\x00b\n",
}


@pytest.mark.parametrize("name", sorted(KNOWN_CONFIGS))
def test_config_known_inputs(tmp_path, name):
    check_config(KNOWN_CONFIGS[name], tmp_path)


# ------------------------------------------------------------------- the line of a problem


@given(doc=config_documents(), data=st.data())
@fuzz_settings(30)
def test_config_unreadable_bytes_are_reported_at_their_line(tmp_path, doc, data):
    """Invalid UTF-8 or an unprintable character on line k of a good config: InputError at line k."""
    lines = config_to_yaml(doc).encode("utf-8").split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    k = data.draw(st.integers(0, len(lines) - 1))
    bad = data.draw(st.sampled_from([b"\xff", b"\xc3(", b"\x00", b"\x07", b"\xed\xa0\x80"]))
    col = data.draw(st.integers(len(lines[k]) - len(lines[k].lstrip()), len(lines[k])))
    lines[k] = lines[k][:col] + bad + lines[k][col:]
    raw = b"\n".join(lines) + b"\n"
    out = check_config(raw, tmp_path)
    assert out.error is not None, "accepted an unreadable byte"
    assert out.error.line == k + 1, f"the problem is on line {k + 1}, the error says {out.error.line}: {out.error}"


def _yaml_mark_line(text: str, typ: str) -> int | None:
    try:
        YAML(typ=typ, pure=True).load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        return None if mark is None else mark.line + 1
    except Exception:  # noqa: BLE001
        return None
    return None


# =========================================================================== retrieval config


def check_retrieval(data: bytes, folder: Path, suffix: str):
    path = folder / f"retrieval{suffix}"
    path.write_bytes(data)
    out = outcome_of(lambda: load_retrieval_config(path))
    problem = out.violation(len(data))
    assert problem is None, f"load_retrieval_config: {problem}"
    if out.error is not None:
        check_error(out.error, path, data)
        return out
    rc: RetrievalConfig = out.value
    sha = outcome_of(lambda: rc.sha256)
    assert sha.violation(len(data)) is None and sha.error is None, \
        f"fingerprint of a loaded config: {sha.violation(len(data)) or sha.error}"
    try:
        text = rc.to_text()
    except Exception as exc:  # noqa: BLE001
        raise AssertionError(f"RetrievalConfig.to_text() failed on a loaded config: {type(exc).__name__}: {exc}") \
            from exc
    again = folder / f"again{suffix}"
    again.write_text(text, encoding="utf-8")
    back = outcome_of(lambda: load_retrieval_config(again))
    assert back.error is None and back.crash is None and not back.hang, (
        f"to_text() output does not read back: {back.error or back.crash}")
    assert canonical(back.value.data) == canonical(rc.data), "retrieval config round trip changed the data"
    assert back.value.sha256 == rc.sha256, "round trip changed the fingerprint"
    return out


@st.composite
def retrieval_files(draw) -> tuple[str, bytes]:
    doc = draw(retrieval_documents)
    suffix = draw(st.sampled_from([".yml", ".yaml", ".json"]))
    if suffix == ".json":
        return suffix, json.dumps(doc, indent=draw(st.sampled_from([None, 2]))).encode()
    return suffix, config_to_yaml(doc).encode("utf-8")


@given(f=retrieval_files())
@fuzz_settings(40)
def test_well_formed_retrieval_config(tmp_path, f):
    suffix, data = f
    out = check_retrieval(data, tmp_path, suffix)
    assert out.error is None, f"rejected a well-formed retrieval config: {out.error}"


@given(f=retrieval_files(), data=st.data())
@fuzz_settings(80)
def test_retrieval_config_any_bytes_and_mutations(tmp_path, f, data):
    suffix, base = f
    raw = data.draw(st.one_of(texty_bytes, yaml_mutated(st.just(base))))
    check_retrieval(raw, tmp_path, suffix)


KNOWN_RETRIEVAL = {
    "yml-invalid-utf8": (".yml", b"a: \xff\n"),
    "yml-self-reference": (".yml", b"a: &x [*x]\n"),
    "yml-alias-bomb": (".yml", alias_bomb(8, key="a")),
    "yml-set": (".yml", b"a: !!set {x, y, z, w}\n"),
    "json-int>4300-digits": (".json", b'{"a": ' + b"9" * 5000 + b"}"),
    "json-deep": (".json", b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
    "json-invalid-utf8": (".json", b'{"a": "\xff"}'),
}


@pytest.mark.parametrize("name", sorted(KNOWN_RETRIEVAL))
def test_retrieval_config_known_inputs(tmp_path, name):
    suffix, data = KNOWN_RETRIEVAL[name]
    check_retrieval(data, tmp_path, suffix)


def test_retrieval_config_fingerprint_is_deterministic_for_sets(tmp_path):
    """A ``!!set`` value is fingerprinted via str(set): its order follows the string hash seed,
    so the same file would get a different sha256 in another process (or it is refused)."""
    import subprocess
    import sys

    path = tmp_path / "r.yml"
    path.write_text("a: !!set {alpha, beta, gamma, delta, epsilon}\n")
    code = ("import sys; sys.path.insert(0, sys.argv[1]); "
            "from gate.inputs.retrieval_config import load_retrieval_config;"
            "print(load_retrieval_config(sys.argv[2]).sha256)")
    repo = str(Path(__file__).resolve().parents[2])
    shas = set()
    for seed in ("1", "2", "3", "4"):
        res = subprocess.run([sys.executable, "-c", code, repo, str(path)], capture_output=True, text=True,
                             env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"}, timeout=60)
        if res.returncode != 0 and "InputError" in res.stderr and "r.yml:1" in res.stderr:
            return  # refusing the set (with its line) is a fix too
        assert res.returncode == 0, res.stderr
        shas.add(res.stdout.strip())
    assert len(shas) == 1, f"one file, {len(shas)} fingerprints under different hash seeds"


# =========================================================================== baseline manifest


def _baseline(folder: Path) -> Path:
    run = Run.from_rankings("run", {"q1": {"d1": 2.0, "d2": 1.0}, "q2": {"d3": 0.5}}, tag="t")
    write_manifest(
        folder,
        suite="s",
        config_path="retrieval.yml",
        config=RetrievalConfig("retrieval.yml", {"index": {"k": 1}, "model": "m"}),
        corpus=CorpusRecord("corpus.jsonl", "ab" * 32, 3, None),
        queries=InputRecord("q.jsonl", "cd" * 32, 2),
        qrels=InputRecord("qrels.txt", "ef" * 32, 3),
        metric="nDCG@10",
        measures=("nDCG@10", "RR@10"),
        rel=1,
        runner={"type": "command", "command": "x"},
        run=run,
        per_query={"nDCG@10": {"q1": 1.0, "q2": 0.5}},
        environment={"python": "3", "packages": {}, "files": {}},
        git_commit="0" * 40,
    )
    return folder / "manifest.yml"


_MANIFEST_CACHE: dict[str, bytes] = {}


def _manifest_bytes(tmp: Path) -> bytes:
    if "m" not in _MANIFEST_CACHE:
        _MANIFEST_CACHE["m"] = _baseline(tmp / "proto").read_bytes()
    return _MANIFEST_CACHE["m"]


def check_manifest(data: bytes, folder: Path):
    if not (folder / "b" / "manifest.yml").exists():
        _baseline(folder / "b")
    path = folder / "b" / "manifest.yml"
    path.write_bytes(data)
    out = outcome_of(lambda: load_manifest(path))
    problem = out.violation(len(data))
    assert problem is None, f"load_manifest: {problem}"
    if out.error is not None:
        names = [path] + [p for p in path.parent.iterdir()]
        check_error(out.error, names)
        if out.error.path == str(path):
            check_error(out.error, path, data)
        return out
    manifest = out.value
    try:
        d = manifest.to_dict()
        buffer = config_to_yaml(d)
    except Exception as exc:  # noqa: BLE001
        raise AssertionError(f"a loaded manifest cannot be written back: {type(exc).__name__}: {exc}") from exc
    again = folder / "b" / "again.yml"
    again.write_text(buffer, encoding="utf-8")
    back = outcome_of(lambda: load_manifest(again))
    assert back.crash is None and back.error is None and not back.hang, (
        f"written-back manifest does not read: {back.error or back.crash}")
    assert canonical(back.value.to_dict()) == canonical(d), "manifest round trip changed a value"
    return out


def test_manifest_round_trip(tmp_path):
    path = _baseline(tmp_path / "b")
    out = check_manifest(path.read_bytes(), tmp_path)
    assert out.error is None


@given(data=st.data())
@fuzz_settings(100)
def test_manifest_any_bytes_and_mutations(tmp_path, data):
    base = _manifest_bytes(tmp_path)
    raw = data.draw(st.one_of(texty_bytes, yaml_mutated(st.just(base)), yaml_mutated(st.just(base))))
    check_manifest(raw, tmp_path)


@given(data=st.data())
@fuzz_settings(30)
def test_manifest_yaml_syntax_errors_carry_their_line(tmp_path, data):
    """A YAML syntax error has a line (the parser's mark); the InputError must carry it."""
    base = _manifest_bytes(tmp_path)
    raw = data.draw(mutated(st.just(base)))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        assume(False)
    line = _yaml_mark_line(text, "safe")
    assume(line is not None)
    out = check_manifest(raw, tmp_path)
    assert out.error is not None
    # The reader may stop earlier, at another problem (a stray CR, a control character): not later.
    assert out.error.line is not None and out.error.line <= line, (
        f"YAML error at line {line}, InputError line {out.error.line}: {out.error}")


KNOWN_MANIFESTS = {
    "invalid-utf8": lambda b: b.replace(b"suite: s", b"suite: \xff"),
    "count-not-int": lambda b: b.replace(b"count: 2", b"count: many"),
    "count-list": lambda b: b.replace(b"count: 2", b"count: [1]"),
    "config-file-int": lambda b: b.replace(b"file: config-", b"file: 7\n    x: config-", 1),
    "config-file-is-manifest":
        lambda b: __import__("re").sub(rb"file: config-[0-9a-f]+\.json", b"file: manifest.yml", b),
    "measures-int": lambda b: b.replace(b"measures:", b"measures: 5\nold_measures:"),
    "rel-text": lambda b: b.replace(b"rel: 1", b"rel: one"),
    "deep": lambda b: b + b"deep: " + b"[" * 3000 + b"]" * 3000 + b"\n",
    "yaml-syntax": lambda b: b + b"key: [unclosed\n",
}


@pytest.mark.parametrize("name", sorted(KNOWN_MANIFESTS))
def test_manifest_known_inputs(tmp_path, name):
    base = _manifest_bytes(tmp_path)
    raw = KNOWN_MANIFESTS[name](base)
    assert raw != base
    check_manifest(raw, tmp_path)
