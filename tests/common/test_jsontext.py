"""The one JSON writer: strict, readable back by the gate's own reader, ASCII where files always were."""

from __future__ import annotations

import json

import pytest

from gate.common.jsontext import json_line, json_text
from gate.inputs.readers.fields import parse_json_document


def test_reports_keep_utf8_and_committed_files_stay_ascii():
    data = {"stratum": "whät", "note": "a\x7fb\x85c"}
    report = json_text(data)
    assert "whät" in report and "\\u007f" in report and "\\u0085" in report and report.endswith("}\n")
    committed = json_text(data, ascii=True)
    assert committed.isascii() and "wh\\u00e4t" in committed
    for text in (report, committed):
        assert json.loads(text) == data
        assert parse_json_document("x.json", text) == data  # the gate's strict reader takes it back


def test_a_nan_is_a_bug_not_a_file():
    with pytest.raises(ValueError):
        json_text({"mean": float("nan")})


def test_a_json_line_is_one_line():
    assert json_line({"a": [1, 2], "t": "x\ny"}) == '{"a": [1, 2], "t": "x\\ny"}\n'
