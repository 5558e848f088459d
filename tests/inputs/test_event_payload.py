"""An event payload whose pull request number is no PR's (found by the breaker: -1 was accepted)
is one line naming the field."""

from __future__ import annotations

import json

import pytest

from gate.common.errors import InputError
from gate.inputs.github_event import read_event


@pytest.mark.parametrize("number", [-1, 0, 1 << 40])
def test_a_pull_request_number_that_is_no_prs_is_refused(tmp_path, number):
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": number, "head": {"sha": "a" * 40},
                                                  "base": {"sha": "b" * 40}}}))
    with pytest.raises(InputError, match=f"pull_request.number' is not a pull request number: {number}"):
        read_event({"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event)})


def test_a_real_number_is_read(tmp_path):
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 7, "head": {"sha": "a" * 40}, "base": {"sha": "b" * 40}}}))
    assert read_event({"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event)}).pr_number == 7
