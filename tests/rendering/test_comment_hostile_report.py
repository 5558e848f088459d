"""The privileged comment job renders an artifact a fork wrote: every text in it is hostile.

A real run report (strata, traffic, lift, leakage, attribution, noise band) is completed with
every optional section the comment reads (tuning, prompts, an accepted failure, goalposts, a
failed runner's log, differences), then every text the schema leaves free - values and the
keys of data-keyed maps (strata, measures, factors, inputs) - is replaced by a payload that
tries each way out of Markdown: a mention, HTML, a table pipe, a code span, a link, a heading
on a new line, a workflow command. The rendered comment must show each payload inert, and a
report with any key the schema does not know, or a value of another type, is refused before
anything renders.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from gate.cli import main
from gate.common.errors import InputError
from gate.rendering.comment import _fenced, render_comment, render_summary
from gate.report.document import _SCHEMA_PATH, read_report, validate_report
from tests.cli_matrix.world import build_files, build_repo

SCHEMA = json.loads(_SCHEMA_PATH.read_text())
PAYLOAD = ("\x01# Approved x-@octocat x)@2pac GH-12 <img src=x onerror=alert(1)> a|b `tick` "
           "[link](https://evil.example) <!-- c --> "
           "*bold* see #1 www.evil.example \u202eevil\n# heading\n::error::forged ")


@pytest.fixture(scope="module")
def full_report(tmp_path_factory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("hostile")
    files = build_files(tmp / "files")
    repo = build_repo(tmp / "repo", files)
    assert main(["run", "--config", str(repo.root / ".retrieval-gate.yml"), "--out", str(tmp / "run")]) in (0, 1, 3)
    report = json.loads((tmp / "run" / "report.json").read_text())
    # Sections this world does not produce, as the gate writes them elsewhere.
    report["tuning"] = {"declared": True, "params": ["bm25.k1"], "changed_params": ["bm25.k1"], "applies": True,
                        "holdout_count": 12, "tuning_count": 8, "overlap": ["q1"], "warning": "a warning"}
    report["prompts"] = {"files_scanned": 2, "count": 1, "matches": [
        {"file": "prompts/few_shot.txt", "line": 3, "kind": "query_text", "query_id": "q1", "doc_id": None,
         "detail": "golden query quoted (exact, score 1.00)"}]}
    report["accepted"] = {"label": "retrieval-gate:accept", "justification": "known", "failed_on": [
        {"code": "judged_share", "message": "30% unjudged"}]}
    report["goalposts"] = [{"path": "eval/qrels.txt", "change": "modified"}]
    report["yardstick"] = {"source": "base commit 0123456789ab", "baseline_source": "reconstructed"}
    report["event"] = {"name": "pull_request", "pr": 5, "head_sha": "a" * 40, "base_sha": "b" * 40}
    report["warnings"] = ["a warning of the run"]
    report["baseline"]["differences"] = [{"input": "qrels", "archived": "sha 1", "current": "sha 2"}]
    report["baseline"]["unattributed_changes"] = [{"input": "code", "archived": "commit 1", "current": "commit 2"}]
    report["config_diff"] = [{"path": "bm25.k1", "old": 0.9, "new": {"nested": ["x"]}}]
    validate_report(report, "report.json")
    return report


def _schema_at(node: dict, schema: dict = SCHEMA) -> dict:
    while "$ref" in node:
        target: Any = schema
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _poison(value: Any, node: dict, counter: list[int]) -> Any:
    """``value`` with every free text (and every data key of a map) replaced by PAYLOAD + a number."""
    node = _schema_at(node)

    def mark() -> str:
        counter[0] += 1
        return f"{PAYLOAD}#{counter[0]}"

    if isinstance(value, str):
        constrained = any(k in node for k in ("enum", "const", "pattern"))
        return value if constrained else mark()
    if isinstance(value, list):
        items = node.get("items", {})
        return [_poison(v, items if isinstance(items, dict) else {}, counter) for v in value]
    if isinstance(value, dict):
        props = node.get("properties", {})
        extra = node.get("additionalProperties", True)
        out = {}
        for key, sub in value.items():
            if key in props:
                out[key] = _poison(sub, props[key], counter)
            elif isinstance(extra, dict):  # a data-keyed map: the key is data too
                out[mark()] = _poison(sub, extra, counter)
            else:
                out[key] = sub
        return out
    return value


def _outside_fences(markdown: str) -> str:
    return "\n".join(line for line, fenced in _fenced(markdown) if not fenced)


def _assert_inert(markdown: str) -> None:
    text = _outside_fences(markdown)
    assert "@octocat" not in text, "a mention got through"
    assert "<img" not in text and "<!-- c" not in text, "HTML got through"
    assert "a|b" not in text, "a table pipe got through"
    assert "`tick`" not in text, "a code span got through"
    assert not re.search(r"(?<!\\)\]\(https://evil", text), "a link got through"
    assert not re.search(r"(?m)^# heading", markdown), "a heading got through"
    assert not re.search(r"(?m)^ {0,3}#{1,6} Approved", text), "a value opened a heading at a line's start"
    assert "-@octocat" not in text, "a mention after a dash got through"
    assert "#1 " not in text and "GH-12" not in text, "an issue reference got through"
    assert ")@2pac" not in text, "a mention after a parenthesis got through"
    assert "https://evil" not in text and "www.evil" not in text, "an autolink got through"
    assert "\u202e" not in markdown, "a bidi override got through"
    assert not re.search(r"(?m)^::error::forged", markdown), "a workflow command got through"


def test_every_free_text_of_the_report_renders_inert(full_report):
    counter = [0]
    poisoned = _poison(copy.deepcopy(full_report), SCHEMA, counter)
    assert counter[0] > 200  # the payload reached the report's texts, map keys included
    record = read_report(poisoned, "report.json")  # still a report: texts are free, keys of maps too
    comment = render_comment(record, limit=65_336)
    summary = render_summary(record)
    seen = {int(n) for n in re.findall(r"forged #\u200b?(\d+)", comment + summary)}
    assert len(seen) > 50, f"only {len(seen)} payloads rendered: the test does not reach the comment"
    _assert_inert(comment)
    _assert_inert(summary)


@pytest.mark.parametrize("where", ["top", "delta", "strata", "traffic", "lift", "attribution", "noise_band",
                                   "verdict", "leakage", "prompts"])
def test_a_key_the_schema_does_not_know_is_refused(full_report, where):
    report = copy.deepcopy(full_report)
    target = report if where == "top" else report[where]
    if where in ("strata",):
        target = target[0]
    if where == "prompts":
        target = target["matches"][0]
    target["injected"] = "<img src=x>"
    with pytest.raises(InputError, match="injected is not a report key"):
        validate_report(report, "report.json")


@pytest.mark.parametrize("path, value", [
    (("delta", "wins"), "<b>9</b>"),
    (("delta", "mean"), "0.1"),
    (("query_count", ), "40 | x"),
    (("judged", "k"), "10<br>"),
    (("noise_band", "tie_floor", "count"), "@octocat"),
    (("strata", 0, "n"), [1]),
    (("traffic", "percent", "damaged"), {"x": 1}),
    (("lift", "counts", "promoted"), "many"),
    (("verdict", "improvement_shown"), "yes"),
    (("prompts", "matches", 0, "line"), "3\n# x"),
])
def test_a_value_of_another_type_is_refused(full_report, path, value):
    report = copy.deepcopy(full_report)
    parent: Any = report
    for key in path[:-1]:
        parent = parent[key]
    assert path[-1] in parent if isinstance(parent, dict) else True  # the report has the key
    parent[path[-1]] = value
    with pytest.raises(InputError):
        validate_report(report, "report.json")


def _extreme(value: Any, node: dict, k: list[int]) -> Any:
    """Every number of the report at an extreme a schema-valid artifact may carry (negative
    ones only where the schema allows them)."""
    node = _schema_at(node)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        k[0] += 1
        floor = node.get("minimum")
        if isinstance(value, int):
            choices = (2 ** 63, int(floor)) if floor is not None else (2 ** 63, 0, -(2 ** 63))
        else:
            choices = (1e308, 5e-324, 0.0) if floor is not None else (1e308, -1e308, -0.0, 5e-324)
        return choices[k[0] % len(choices)]
    if isinstance(value, list):
        items = node.get("items", {})
        return [_extreme(v, items if isinstance(items, dict) else {}, k) for v in value]
    if isinstance(value, dict):
        props, extra = node.get("properties", {}), node.get("additionalProperties", {})
        return {key: _extreme(v, props.get(key, extra if isinstance(extra, dict) else {}), k)
                for key, v in value.items()}
    return value


def test_extreme_numbers_render_without_a_crash(full_report):
    counter = [0]
    report = _extreme(copy.deepcopy(full_report), SCHEMA, counter)
    assert counter[0] > 500
    record = read_report(report, "report.json")
    render_comment(record, limit=65_336)
    render_summary(record)
    # An estimate far outside its interval: the forest plot pins it to the edge.
    report = copy.deepcopy(full_report)
    report["strata"][0].update(delta=1e308, ci_low=-0.01, ci_high=0.01)
    assert "●`" in render_comment(read_report(report, "report.json"), limit=65_336)


def test_a_refusal_is_one_bounded_line_whatever_the_key(full_report):
    """The refusal names the key, and a key of a megabyte, or one holding U+2028, NEL, ESC or a
    bidi override, still gives one line (as str.splitlines counts them) of bounded length."""
    report = copy.deepcopy(full_report)
    report["measures"]["x\u2028::error::pwned\x85\x1b[31m\u202e" + "k" * 1_000_000] = {"baseline": "no"}
    with pytest.raises(InputError) as refused:
        validate_report(report, "report.json")
    text = str(refused.value)
    assert len(text.splitlines()) == 1 and len(text) <= 2000, (len(text.splitlines()), len(text))
    assert text.startswith("report.json: not a report this version can read: measures.x ::error::pwned")


def test_a_report_the_gate_writes_is_one_its_comment_job_reads(tmp_path):
    """A retrieval config value holding DEL and one nested 60 levels deep (both accepted by the
    config reader) used to give a report.json the gate's own reader refused (a raw 0x7f; deeper
    than 64 levels): the comment job could not post it."""
    from gate.cli import _load_saved_report

    files = build_files(tmp_path / "files")
    repo = build_repo(tmp_path / "repo", files)
    config = repo.root / "retrieval" / "config.yml"
    # YAML's own escape: the file is clean text, the value holds DEL.
    config.write_text(config.read_text() + 'note: "a\\x7fb"\ndeep: ' + "[" * 60 + "1" + "]" * 60 + "\n")
    assert main(["run", "--config", str(repo.root / ".retrieval-gate.yml"),
                 "--out", str(tmp_path / "run")]) in (0, 1, 3)
    report = _load_saved_report(str(tmp_path / "run" / "report.json"))
    changed = {c.path: c.new for c in report.config_diff}
    assert changed["note"] == "a\x7fb"
    assert isinstance(changed["deep"], str) and changed["deep"].startswith("[[[[")
