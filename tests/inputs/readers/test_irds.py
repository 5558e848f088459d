"""``irds:`` specs through ir_datasets, offline, against the seed cache in ../shared.

ir_datasets fixes its cache folder (``IR_DATASETS_HOME``) when it is imported,
so every load runs in one fresh subprocess with the environment set: a copy of
the seed cache, and proxies pointing at a closed local port so that anything
not cached fails at once instead of downloading.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from gate.common.errors import InputError
from gate.inputs.readers.irds import parse_irds_spec
from gate.inputs.readers.qrels import read_qrels
from tests.shared_data import REALDATA, REPO, need

SCRIPT = r"""
import json, sys, time
sys.path.insert(0, REPO)
from gate.common.errors import InputError
from gate.inputs.readers.corpus import iter_corpus
from gate.inputs.readers.qrels import load_qrels
from gate.inputs.readers.queries import load_queries

out = {}

def attempt(name, fn):
    t = time.perf_counter()
    try:
        out[name] = fn()
    except InputError as exc:
        out[name] = {"error": str(exc), "path": exc.path, "line": exc.line}
    out[name + ":seconds"] = time.perf_counter() - t

def queries(spec):
    qs = load_queries(spec)
    return {"count": len(qs), "first": [qs.queries[0].query_id, qs.queries[0].text], "source": qs.source,
            "ids": qs.ids()}

def qrels(spec):
    q = load_qrels(spec)
    return {"topics": len(q.judgments), "count": len(q), "negative_is_judged": q.negative_is_judged,
            "judgments": {k: dict(v) for k, v in q.judgments.items()}}

def docs(spec):
    n, first = 0, None
    for chunk in iter_corpus(spec):
        if first is None:
            first = list(chunk)
        n += 1
    return {"count": n, "first": first}

for ds in ("cranfield", "vaswani", "beir/scifact/test"):
    attempt("queries " + ds, lambda: queries("irds:" + ds))
    attempt("qrels " + ds, lambda: qrels("irds:" + ds))
    attempt("docs " + ds, lambda: docs("irds:" + ds))
attempt("field", lambda: queries("irds:beir/scifact/test#field=text"))
attempt("bad field", lambda: queries("irds:cranfield#field=title"))
attempt("unknown", lambda: queries("irds:cranfeld"))
attempt("offline queries", lambda: queries("irds:antique/test"))
attempt("offline qrels", lambda: qrels("irds:antique/test"))
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def irds(tmp_path_factory):
    seed = need(REALDATA / "ir_datasets_seed")
    pytest.importorskip("ir_datasets")
    home = tmp_path_factory.mktemp("irds_home")
    shutil.copytree(seed, home, dirs_exist_ok=True)
    for root, dirs, files in os.walk(home):  # the seed is read-only; ir_datasets writes beside it
        for name in dirs + files:
            os.chmod(os.path.join(root, name), 0o755 if name in dirs else 0o644)
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(
        IR_DATASETS_HOME=str(home),
        HTTP_PROXY="http://127.0.0.1:9",
        HTTPS_PROXY="http://127.0.0.1:9",
        IR_DATASETS_SKIP_DISK_FREE="true",
    )
    env.pop("IR_DATASETS_DL_TRIES", None)
    env.pop("IR_DATASETS_DL_TIMEOUT", None)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT.replace("REPO", repr(str(REPO)))],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    result["stderr"] = done.stderr
    result["total seconds"] = time.perf_counter() - started
    result["home"] = str(home)
    return result


def test_cranfield(irds):
    q = irds["queries cranfield"]
    assert q["count"] == 225 and q["source"] == "irds:cranfield"
    assert q["first"][0] == "1"
    assert q["first"][1].startswith("what similarity laws must be obeyed when constructing aeroelastic models")
    r = irds["qrels cranfield"]
    assert (r["topics"], r["count"], r["negative_is_judged"]) == (225, 1837, True)
    d = irds["docs cranfield"]
    assert d["count"] == 1400 and d["first"][:2] == ["1", "1"]
    assert d["first"][2].startswith("experimental investigation of the aerodynamics of a")


def test_cranfield_qrels_equal_the_cranqrel_file(irds):
    from_file = read_qrels(need(REALDATA / "cranfield" / "cranqrel"))
    assert irds["qrels cranfield"]["judgments"] == {k: dict(v) for k, v in from_file.judgments.items()}


def test_vaswani(irds):
    q = irds["queries vaswani"]
    assert q["count"] == 93
    assert q["first"] == ["1", "MEASUREMENT OF DIELECTRIC CONSTANT OF LIQUIDS BY THE USE OF MICROWAVE TECHNIQUES"]
    r = irds["qrels vaswani"]
    assert (r["topics"], r["count"], r["negative_is_judged"]) == (93, 2083, False)
    assert irds["docs vaswani"]["count"] == 11429


def test_scifact(irds):
    q = irds["queries beir/scifact/test"]
    assert q["count"] == 300 and q["first"] == ["1", "0-dimensional biomaterials show inductive properties."]
    r = irds["qrels beir/scifact/test"]
    assert (r["topics"], r["count"], r["negative_is_judged"]) == (300, 339, False)
    assert r["judgments"]["1"] == {"31715818": 1}
    d = irds["docs beir/scifact/test"]
    assert d["count"] == 5183
    assert irds["field"]["ids"] == q["ids"] and irds["field"]["source"] == "irds:beir/scifact/test#field=text"


def test_errors_are_one_line_and_name_the_spec(irds):
    assert irds["bad field"] == {
        "error": "irds:cranfield#field=title: queries of cranfield have no field 'title' (fields: query_id, text)",
        "path": "irds:cranfield#field=title",
        "line": None,
    }
    assert irds["unknown"]["error"] == "irds:cranfeld: unknown ir_datasets id 'cranfeld' (did you mean 'cranfield'?)"


def test_not_cached_fails_fast_offline(irds):
    for name in ("offline queries", "offline qrels"):
        err = irds[name]["error"]
        assert err == (f"irds:antique/test: not available offline: not in the ir_datasets cache "
                       f"(IR_DATASETS_HOME={irds['home']}) and the download failed; pass a local file instead")
        assert irds[name + ":seconds"] < 60


def test_ir_datasets_own_log_lines_are_silenced(irds):
    # ir_datasets logs "[INFO] ..." and "[WARNING] Download failed: ..." on stderr; the gate's
    # one-line error is all a user should see.
    assert "[INFO]" not in irds["stderr"] and "[WARNING]" not in irds["stderr"], irds["stderr"][-2000:]


@pytest.mark.parametrize(
    "spec, message",
    [
        ("irds:", "irds:: empty dataset id (expected 'irds:<dataset-id>[#field=<name>]')"),
        ("irds:x#fields=a", "irds:x#fields=a: unknown suffix '#fields=a' (expected '#field=<name>')"),
        ("irds:x#field=", "irds:x#field=: unknown suffix '#field=' (expected '#field=<name>')"),
    ],
)
def test_spec_parsing_errors(spec, message):
    with pytest.raises(InputError) as info:
        parse_irds_spec(spec)
    assert str(info.value) == message


def test_spec_parsing():
    s = parse_irds_spec("irds:beir/scifact/test#field=text")
    assert (s.dataset_id, s.field, s.spec) == ("beir/scifact/test", "text", "irds:beir/scifact/test#field=text")
    assert parse_irds_spec("irds:cranfield").field is None
