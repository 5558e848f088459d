"""Adversarial probes of `comment --reports` checking the artifact's "skipped" claims against the
PR's files (helper-breaker)."""

# ruff: noqa: F811 - the fixtures world and github are imported from the comment job's tests

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.publishing.test_suites_comment_job import (  # noqa: F401 - fixtures
    CHANGED,
    COMMENTS,
    PR,
    _comment,
    _copy,
    _forge_alpha_skipped,
    _posted,
    _rows,
    github,
    world,
)

FILES = f"/repos/{{owner}}/{{repo}}/pulls/{PR}/files"


def _one_line(capsys, code: int, expected: int) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    lines = [line for line in err.strip().splitlines() if not line.startswith("[retrieval-gate]")]
    assert code == expected and len(lines) == 1, (code, err)
    return lines[0]


@pytest.mark.parametrize("status, expected", [(500, 3), (502, 3), (404, 2), (403, 2), (None, 3)])
def test_an_error_on_the_files_endpoint_is_github_unavailable_and_nothing_posted(world, github, tmp_path, capsys,
                                                                                 status, expected):
    head, out = _copy(world, "both", tmp_path)
    _forge_alpha_skipped(out)
    github.add_pull(PR, head, files=CHANGED["both"])
    github.script_error(FILES, status, times=10)
    code = _comment(head, "--reports", str(out))
    _one_line(capsys, code, expected)
    assert github.comments(PR) == [] and not github.requests_to("POST", COMMENTS)


@pytest.mark.parametrize("payload", [{"not": "a list"}, [{"filename": 3}], [None], [{"previous_filename": "x"}],
                                     b"not json"])
def test_a_malformed_files_answer_is_one_line_and_nothing_posted(world, github, tmp_path, capsys, payload):
    head, out = _copy(world, "both", tmp_path)
    _forge_alpha_skipped(out)
    github.add_pull(PR, head, files=CHANGED["both"])
    github.script_answer(FILES, payload, times=10)
    code = _comment(head, "--reports", str(out))
    err = capsys.readouterr().err
    assert "Traceback" not in err and code in (2, 3), (code, err)
    assert github.comments(PR) == []


ODD = ["../a/retrieval.yml", "/a/retrieval.yml", "a/retrieval.yml\n", "a/retrieval.yml\u0000", "a/\udce9.yml",
       "./a/retrieval.yml", "a//retrieval.yml", "a/retrieval.yml/", "A/RETRIEVAL.YML", "a\\retrieval.yml",
       "a/re\u0301trieval.yml", "\u202ea/retrieval.yml", "a/" + "x" * 5000]


@pytest.mark.parametrize("name", ODD, ids=range(len(ODD)))
def test_odd_file_names_never_crash_the_job(world, github, tmp_path, capsys, name):
    head, out = _copy(world, "both", tmp_path)
    _forge_alpha_skipped(out)
    github.add_pull(PR, head, files=[name, "b/retrieval.yml"])
    code = _comment(head, "--reports", str(out))
    err = capsys.readouterr().err
    assert code in (0, 2, 3) and "Traceback" not in err, (code, err)


def test_2999_files_still_check_the_skips(world, github, tmp_path):
    head, out = _copy(world, "both", tmp_path)
    _forge_alpha_skipped(out)
    github.add_pull(PR, head, files=[f"docs/page-{n}.md" for n in range(2997)] + CHANGED["both"])
    assert _comment(head, "--reports", str(out)) == 0
    assert _rows(_posted(github)[1])["alpha"] == "❔ no report"


def test_3000_files_padding_cannot_hide_a_touched_failing_suite(world, github, tmp_path):
    """A fork PR pads itself to 3,000 files (cheap) and forges alpha "skipped": GitHub's list
    still names a/retrieval.yml among the 3,000 it gives, yet the job's skip stands."""
    head, out = _copy(world, "both", tmp_path)
    _forge_alpha_skipped(out)
    github.add_pull(PR, head, files=CHANGED["both"] + [f"docs/page-{n}.md" for n in range(2998)])
    assert _comment(head, "--reports", str(out)) == 0
    assert _rows(_posted(github)[1])["alpha"] != "⏭️ skipped"


def test_a_touched_suites_report_of_kind_skipped_is_no_report(world, github, tmp_path):
    """The forged skip as a report (alpha's report.json rewritten to a skipped verdict) rather than
    a suites.json row."""
    head, out = _copy(world, "both", tmp_path)
    path = out / "alpha" / "report.json"
    data = json.loads(path.read_text())
    data["verdict"]["kind"] = "skipped"
    path.write_text(json.dumps(data))
    github.add_pull(PR, head, files=CHANGED["both"])
    # suites.json still says alpha failed: the report no longer matches its row, refused, nothing posted.
    assert _comment(head, "--reports", str(out)) == 2 and github.comments(PR) == []


def test_a_broken_default_branch_config_of_one_suite(world, github, tmp_path, capsys):
    """beta's gate config on the default branch is broken: the job says so in one line (or posts),
    never a traceback, never exit 4."""
    root = tmp_path / "repo"
    shutil.copytree(world["root"], root, symlinks=True)
    (root / "b" / "gate.yml").write_text("suite: beta\nnot: [valid\n")
    head, out = _copy(world, "both", tmp_path)
    _forge_alpha_skipped(out)
    github.add_pull(PR, head, files=CHANGED["both"])
    here = os.getcwd()
    os.chdir(root)
    try:
        code = _comment(head, "--reports", str(out))
    finally:
        os.chdir(here)
    err = capsys.readouterr().err
    assert code in (0, 2) and "Traceback" not in err, (code, err)


def test_a_touched_suites_report_that_says_skipped_is_no_report_of_it():
    """standing_of on its own: a matrix artifact with no index, whose alpha report says skipped,
    is no report of alpha when the PR touches alpha; beta's skipped report stands (untouched)."""
    from gate.publishing.suite_reports import SavedReport, SavedSet, standing_of

    def saved(suite: str, kind: str) -> SavedReport:
        return SavedReport(suite, Path(f"{suite}/report.json"), None, kind, 0)  # type: ignore[arg-type]

    artifacts = SavedSet("artifacts", (saved("alpha", "skipped"), saved("beta", "skipped")))
    standing = standing_of(artifacts, ["alpha", "beta"], ".retrieval-gate.yml", touched=frozenset({"alpha"}))
    assert [r.suite for r in standing.reports] == ["beta"] and standing.missing == ("alpha",)
    assert not standing.all_skipped and standing.worst[:2] == ("alpha", None)
    trusting = standing_of(artifacts, ["alpha", "beta"], ".retrieval-gate.yml")
    assert trusting.all_skipped and trusting.missing == ()
