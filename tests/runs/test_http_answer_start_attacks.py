"""Adversarial probes of the start of a refused HTTP answer travelling into what the gate writes
(helper-breaker)."""

from __future__ import annotations

import json

import pytest

from gate.cli import main
from gate.inputs.config import load_config
from gate.pipeline.archive import archive
from tests.runs.test_http_runner import SECRET, _point_at, _small_http_world
from tests.support import http_faults as hf

PAYLOADS = {
    "html comment": lambda key: json.dumps({"error": "<!-- hide the rest", "x": "<img src=x onerror=alert(1)>"}),
    "mention": lambda key: json.dumps({"error": "@octocat #1 [click](javascript:alert(1)) ```"}),
    "workflow": lambda key: "\n::add-mask::x\n::set-output name=verdict::pass\n::error::boom\n",
    "bidi": lambda key: json.dumps({"e": "\u202eevil\u2066\u200b"}, ensure_ascii=False),
    "controls": lambda key: '{"e": "\x1b[31mred\x07\x08\x00"}',
    "secret at 50": lambda key: "{" + "x" * 49 + key,
    "secret at 52": lambda key: "{" + "x" * 51 + key,
    "secret json": lambda key: json.dumps({"detail": f"bad key {key}"}),
    "invalid utf8": lambda key: b'{"e": "\xff\xfe\xc3' + key.encode() + b'"}',
    "huge": lambda key: json.dumps({"e": "y" * 5_000_000}),
    "split newline": lambda key: "{" + key[:6] + "\n" + key[6:] + "}",
}


@pytest.mark.parametrize("name", sorted(PAYLOADS))
def test_the_start_of_a_refused_answer_is_inert_everywhere(tmp_path, capsys, monkeypatch, name):
    monkeypatch.setenv("SEARCH_API_KEY", SECRET)
    path, app = _small_http_world(tmp_path, '    headers: {X-Key: "${SEARCH_API_KEY}"}\n')

    def echoing(environ, start_response):
        if b'"q_0003"' in environ["wsgi.input"].data:
            data = PAYLOADS[name](environ["HTTP_X_KEY"])
            data = data if isinstance(data, bytes) else data.encode()
            start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
            return [data]
        return app(environ, start_response)

    with hf.serve(hf.Faults(app, {}, hf.json_field("qid"))) as base:
        _point_at(path, base)
        archive(load_config(path), progress=lambda m: None)
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 1.5\n")
    with hf.serve(hf.Faults(echoing, {}, hf.json_field("qid"))) as base:
        _point_at(path, base)
        code = main(["run", "--config", str(path), "--out", str(tmp_path / "out")])
    printed = capsys.readouterr()
    assert code == 3, printed.err
    written = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and p.name != "gate.yml"}
    everything = b"".join(written.values()) + (printed.out + printed.err).encode("utf-8", "surrogateescape")
    pieces = [SECRET[i:i + 8] for i in range(len(SECRET) - 7)]
    assert [p for p in pieces if p.encode() in everything] == []
    for line in (printed.out + printed.err).splitlines():
        assert not line.lstrip().startswith("::"), line
    comment = (tmp_path / "out" / "comment.md").read_text() if (tmp_path / "out" / "comment.md").exists() else ""
    report = (tmp_path / "out" / "report.json").read_text()
    print("REPORT-REASON", json.loads(report)["verdict"].get("headline") or json.loads(report)["verdict"])
    for bad in ("<!--", "<img", "\u202e", "\x1b", "@octocat"):
        assert bad not in comment, (bad, [line for line in comment.splitlines() if "starts" in line])
    assert "it starts" in report

