"""The fork-safe comment job given a set of suites' reports, and the matrix workflow's status job.

The reports are the gate's own: a repository with two suites (tests/support/suites_world.py) judged
by `run --base` as the Action judges a PR (alpha fails, beta passes or is skipped), with the event
the Action records. `comment --reports` / several `--report` posts one combined comment after
checking each report as one is checked and its suite against the trusted suites file; anything an
attacker's artifact could change that the job can check is refused in one line, nothing posted.
`suites-status` turns the matrix's artifacts into the required check and the folder the comment
job reads."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from gate.cli import main
from gate.publishing.github.sticky_comment import parse_marker
from tests.publishing.github.fake_github import FakeGitHub
from tests.support.saved_report import as_the_action_saved
from tests.support.suites_world import commit, suites_repo, touch_alpha, touch_beta

TOKEN = "ghs_suites0123456789abcdefghijklmnopqrstu"
PR = 7
COMMENTS = "/repos/{owner}/{repo}/issues/{issue_number}/comments"
#: The files each judged head changes since its base, as GitHub lists the pull request's files.
CHANGED = {"one": ["a/retrieval.yml"], "both": ["a/retrieval.yml", "b/retrieval.yml"], "neither": ["README.md"]}


def _judged(root: Path, out: Path, base: str, head: str) -> Path:
    """`run --base` into ``out`` (suites.json and <suite>/report.json), each report with the event
    the Action records for PR 7 at ``head``."""
    here = os.getcwd()
    os.chdir(root)
    try:
        main(["run", "--config", ".retrieval-gate.yml", "--base", base, "--out", str(out)])
    finally:
        os.chdir(here)
    for name in ("alpha", "beta"):
        as_the_action_saved(out / name / "report.json", PR, head, base)
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The repository (its suites file is the trusted --config) and three judged heads: alpha
    touched (alpha fails, beta skipped), both touched (alpha fails, beta passes), neither."""
    tmp = tmp_path_factory.mktemp("suites-comment")
    root = tmp / "repo"
    base = suites_repo(root)
    touch_alpha(root)
    one = commit(root, "alpha's parser v2")
    one_out = _judged(root, tmp / "one", base, one)
    touch_beta(root)
    both = commit(root, "and beta")
    both_out = _judged(root, tmp / "both", base, both)
    (root / "README.md").write_text("# docs only\n")
    neither_base = both
    neither = commit(root, "docs only")
    neither_out = _judged(root, tmp / "neither", neither_base, neither)
    return {"root": root, "one": (one, one_out), "both": (both, both_out), "neither": (neither, neither_out)}


@pytest.fixture()
def github(monkeypatch, world):
    with FakeGitHub(token=TOKEN) as fake:
        monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
        monkeypatch.setenv("GITHUB_REPOSITORY", fake.repository)
        monkeypatch.setenv("GITHUB_API_URL", fake.url)
        for name in ("GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.chdir(world["root"])  # the comment job's checkout of the default branch
        yield fake


def _copy(world, which: str, tmp_path: Path) -> tuple[str, Path]:
    head, out = world[which]
    copy = tmp_path / which
    shutil.copytree(out, copy)
    return head, copy


def _comment(head: str, *args: str) -> int:
    return main(["comment", *args, "--pr", str(PR), "--head-sha", head, "--config", ".retrieval-gate.yml"])


def _posted(fake: FakeGitHub) -> tuple[tuple[str, str, str], str]:
    [comment] = fake.comments(PR)
    marker = parse_marker(comment["body"])
    return (marker.suite, marker.state, marker.verdict), comment["body"]


def _rows(body: str) -> dict[str, str]:
    """The verdict table's suite -> verdict cells."""
    rows = {}
    for line in body.split("\n\n", 2)[1].splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[cells[0]] = cells[1]
    return rows


def _refused(capsys, code: int, fake: FakeGitHub, *said: str) -> str:
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert all(part in lines[0] for part in said), err
    assert not fake.requests_to("POST", COMMENTS) and fake.comments(PR) == []
    return lines[0]


# --------------------------------------------------------------------------- posting a set


def test_the_actions_folder_is_posted_as_one_combined_comment(world, github, tmp_path):
    head, out = _copy(world, "one", tmp_path)
    github.add_pull(PR, head, files=CHANGED["one"])
    assert _comment(head, "--reports", str(out)) == 0
    marker, body = _posted(github)
    assert marker == ("suites|.retrieval-gate.yml", "current", "fail")
    assert _rows(body) == {"alpha": "❌ fail", "beta": "⏭️ skipped"}
    assert body.count("<details><summary>") >= 2 and "<b>alpha</b>" in body and "<b>beta</b>" in body


def test_several_report_files_are_one_set(world, github, tmp_path):
    head, out = _copy(world, "both", tmp_path)
    github.add_pull(PR, head, files=CHANGED["both"])
    assert _comment(head, "--report", str(out / "beta" / "report.json"),
                    "--report", str(out / "alpha" / "report.json")) == 0
    marker, body = _posted(github)
    assert marker == ("suites|.retrieval-gate.yml", "current", "fail")
    assert _rows(body) == {"alpha": "❌ fail", "beta": "✅ pass"}


def test_matrix_artifacts_without_an_index_show_a_suite_without_report_as_such(world, github, tmp_path):
    head, out = _copy(world, "both", tmp_path)
    artifacts = tmp_path / "artifacts"
    (artifacts / "retrieval-gate-report-beta").mkdir(parents=True)
    shutil.copy(out / "beta" / "report.json", artifacts / "retrieval-gate-report-beta" / "report.json")
    github.add_pull(PR, head, files=CHANGED["both"])
    assert _comment(head, "--reports", str(artifacts)) == 0
    marker, body = _posted(github)
    # alpha's gate job saved nothing: a row saying so, and the set blocks as an inconclusive would.
    assert _rows(body) == {"alpha": "❔ no report", "beta": "✅ pass"}
    assert marker[2] == "inconclusive"


def test_a_head_where_every_suite_is_skipped_posts_nothing(world, github, tmp_path):
    head, out = _copy(world, "neither", tmp_path)
    github.add_pull(PR, head, files=CHANGED["neither"])
    assert _comment(head, "--reports", str(out)) == 0
    assert github.comments(PR) == []


def _forge_alpha_skipped(out: Path) -> None:
    """What a fork's job can write: alpha (which the PR touches, and which fails) said to be
    skipped, its report gone, the index consistent with that (beta's pass is the worst)."""
    shutil.rmtree(out / "alpha")

    def forge(document):
        alpha = next(row for row in document["suites"] if row["suite"] == "alpha")
        alpha.update(verdict="skipped", exit_code=0, report=None,
                     headline="not run: the pull request touches nothing this suite watches")
        beta = next(row for row in document["suites"] if row["suite"] == "beta")
        document["worst"] = {"suite": "beta", "verdict": "pass", "exit_code": 0, "headline": beta["headline"]}

    _edit(out / "suites.json", forge)


def test_a_touched_suite_its_job_calls_skipped_is_a_missing_report(world, github, tmp_path):
    """GitHub's list of the PR's files and the default branch's watch rules say alpha is touched:
    the artifact's "skipped" is not believed (it was: the set read as beta's pass)."""
    head, out = _copy(world, "both", tmp_path)
    _forge_alpha_skipped(out)
    github.add_pull(PR, head, files=CHANGED["both"])
    assert _comment(head, "--reports", str(out)) == 0
    marker, body = _posted(github)
    assert _rows(body) == {"alpha": "❔ no report", "beta": "✅ pass"} and marker[2] == "inconclusive"


def test_a_forged_skip_cannot_make_the_set_post_nothing(world, github, tmp_path):
    """The one-suite world of "one" with alpha's failing report turned into a skip: every suite
    would read skipped and nothing be posted (the old code posted nothing)."""
    head, out = _copy(world, "one", tmp_path)
    shutil.rmtree(out / "alpha")

    def forge(document):
        for row in document["suites"]:
            row.update(verdict="skipped", exit_code=0, report=None,
                       headline="not run: the pull request touches nothing this suite watches")
        document["worst"] = {"suite": "alpha", "verdict": "skipped", "exit_code": 0,
                             "headline": document["suites"][0]["headline"]}

    _edit(out / "suites.json", forge)
    github.add_pull(PR, head, files=CHANGED["one"])
    assert _comment(head, "--reports", str(out)) == 0
    marker, body = _posted(github)
    assert _rows(body) == {"alpha": "❔ no report", "beta": "⏭️ skipped"} and marker[2] == "inconclusive"


def test_a_rename_out_of_a_suites_folder_touches_it(world, github, tmp_path):
    """GitHub lists a renamed file under its new and its previous name: moving alpha's retrieval
    config away touches alpha."""
    head, out = _copy(world, "both", tmp_path)
    _forge_alpha_skipped(out)
    github.add_pull(PR, head, files=[{"filename": "elsewhere/retrieval.yml", "previous_filename": "a/retrieval.yml"},
                                     "b/retrieval.yml"])
    assert _comment(head, "--reports", str(out)) == 0
    assert _rows(_posted(github)[1])["alpha"] == "❔ no report"


def test_a_pull_request_of_3000_files_or_more_has_no_skip_believed_and_says_so(world, github, tmp_path, capsys):
    """GitHub lists no more than 3,000 files: past that, which suites the PR touches is not known
    here (a padded PR can push a watched file past the cut), so no skip is believed (said on stderr)."""
    head, out = _copy(world, "both", tmp_path)
    _forge_alpha_skipped(out)
    github.add_pull(PR, head, files=[f"docs/page-{n}.md" for n in range(3000)])
    assert _comment(head, "--reports", str(out)) == 0
    assert _rows(_posted(github)[1]) == {"alpha": "❔ no report", "beta": "✅ pass"}
    assert "3,000 files or more" in capsys.readouterr().err


def test_the_pr_jobs_result_is_compared_with_the_worst_suite(world, github, tmp_path):
    head, out = _copy(world, "one", tmp_path)
    github.add_pull(PR, head, files=CHANGED["one"])
    assert _comment(head, "--reports", str(out), "--run-conclusion", "success") == 0
    _marker, body = _posted(github)
    assert "This report does not match the PR's gate job" in body.split("\n\n", 3)[1]


# --------------------------------------------------------------------------- refusals


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_a_report_of_a_suite_the_trusted_file_does_not_list_is_refused(world, github, tmp_path, capsys):
    head, out = _copy(world, "both", tmp_path)
    github.add_pull(PR, head, files=CHANGED["both"])
    _edit(out / "beta" / "report.json", lambda data: data.update(suite="gamma"))
    code = _comment(head, "--report", str(out / "alpha" / "report.json"), "--report", str(out / "beta" / "report.json"))
    _refused(capsys, code, github, str(out / "beta" / "report.json"), "'gamma'", ".retrieval-gate.yml does not list")


def test_two_reports_of_one_suite_are_refused(world, github, tmp_path, capsys):
    head, out = _copy(world, "both", tmp_path)
    github.add_pull(PR, head, files=CHANGED["both"])
    shutil.copy(out / "alpha" / "report.json", tmp_path / "again.json")
    code = _comment(head, "--report", str(out / "alpha" / "report.json"), "--report", str(tmp_path / "again.json"))
    _refused(capsys, code, github, "again.json", "second report of suite 'alpha'")


@pytest.mark.parametrize("change, said", [
    (lambda d: d["suites"][1].update(verdict="pass"), "row 2 says suite 'beta': pass"),
    (lambda d: d["suites"][0].update(report="beta/report.json"), "row 1 says suite 'alpha'"),
    (lambda d: d.update(worst={"suite": "beta", "verdict": "skipped", "exit_code": 0}), "its rows' worst is 'alpha'"),
    (lambda d: d["suites"][0].update(report="../both/alpha/report.json"), "is not a path inside the folder"),
    (lambda d: d["suites"].append(dict(d["suites"][0])), "lists suite 'alpha' twice"),
    (lambda d: d["suites"].append({"suite": "gamma", "verdict": "skipped", "report": None}), "'gamma'"),
])
def test_a_suites_index_that_disagrees_with_its_reports_is_refused(world, github, tmp_path, capsys, change, said):
    head, out = _copy(world, "one", tmp_path)
    github.add_pull(PR, head, files=CHANGED["one"])
    _edit(out / "suites.json", change)
    _refused(capsys, _comment(head, "--reports", str(out)), github, said, "not posted")


def test_a_suites_index_naming_what_cannot_be_resolved_is_refused_not_a_crash(world, github, tmp_path, capsys):
    head, out = _copy(world, "one", tmp_path)
    github.add_pull(PR, head, files=CHANGED["one"])
    (out / "loop").symlink_to("loop")
    _edit(out / "suites.json", lambda data: data["suites"][0].update(report="loop"))
    _refused(capsys, _comment(head, "--reports", str(out)), github, "row 1", "'loop' leads out of the folder")
    _edit(out / "suites.json", lambda data: data["suites"][0].update(report="alpha/report.json\u0000"))
    _refused(capsys, _comment(head, "--reports", str(out)), github, "row 1", "must be a path or null")


@pytest.mark.parametrize("linked", ["suites.json", "alpha/report.json"])
def test_a_link_out_of_the_reports_folder_is_refused(world, github, tmp_path, capsys, linked):
    head, out = _copy(world, "one", tmp_path)
    github.add_pull(PR, head, files=CHANGED["one"])
    outside = tmp_path / "outside.json"
    (out / linked).rename(outside)  # the same content: only where it is read from differs
    (out / linked).symlink_to(outside)
    if linked != "suites.json":
        (out / "suites.json").unlink()  # the artifacts' layout: a folder per suite
    _refused(capsys, _comment(head, "--reports", str(out)), github, str(out / linked), "is a link out of the folder")


def test_an_artifact_folder_and_its_reports_suite_must_agree(world, github, tmp_path, capsys):
    head, out = _copy(world, "both", tmp_path)
    artifacts = tmp_path / "artifacts"
    (artifacts / "retrieval-gate-report-beta").mkdir(parents=True)
    shutil.copy(out / "alpha" / "report.json", artifacts / "retrieval-gate-report-beta" / "report.json")
    github.add_pull(PR, head, files=CHANGED["both"])
    _refused(capsys, _comment(head, "--reports", str(artifacts)), github, "suite 'alpha'",
             "its folder is 'retrieval-gate-report-beta'")


def test_each_report_is_checked_as_one_is(world, github, tmp_path, capsys):
    head, out = _copy(world, "one", tmp_path)
    github.add_pull(PR, head, files=CHANGED["one"])
    _edit(out / "beta" / "report.json", lambda data: data["event"].update(pr=8))
    _refused(capsys, _comment(head, "--reports", str(out)), github, str(out / "beta" / "report.json"),
             "is the report of PR #8, not of #7")


@pytest.mark.parametrize("where, config", [("a", "../.retrieval-gate.yml"), ("b", "{root}/.retrieval-gate.yml")])
def test_the_sets_comment_is_named_from_the_top_as_the_action_names_it(world, github, tmp_path, monkeypatch,
                                                                        where, config):
    head, out = _copy(world, "one", tmp_path)
    github.add_pull(PR, head, files=CHANGED["one"])
    monkeypatch.chdir(world["root"] / where)  # a job that runs from a subfolder
    assert main(["comment", "--reports", str(out), "--pr", str(PR), "--head-sha", head,
                 "--config", config.format(root=world["root"])]) == 0
    assert _posted(github)[0][0] == "suites|.retrieval-gate.yml"


def test_a_single_report_cannot_take_the_place_of_the_sets_comment(world, github, tmp_path, capsys):
    head, out = _copy(world, "both", tmp_path)
    github.add_pull(PR, head, files=CHANGED["both"])
    assert _comment(head, "--reports", str(out)) == 0
    capsys.readouterr()
    # A passing report renamed after the set's marker, posted as one suite's (its suite believed:
    # no --suite, no --config): it would keep, and replace, the failing set's comment.
    _edit(out / "beta" / "report.json", lambda data: data.update(suite="suites|.retrieval-gate.yml"))
    code = main(["comment", "--report", str(out / "beta" / "report.json"), "--pr", str(PR), "--head-sha", head])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "is not a suite's name" in err, err
    assert _posted(github)[0] == ("suites|.retrieval-gate.yml", "current", "fail")


def test_a_set_needs_the_trusted_suites_file(world, github, tmp_path, capsys):
    head, out = _copy(world, "one", tmp_path)
    code = main(["comment", "--reports", str(out), "--pr", str(PR), "--head-sha", head])
    err = capsys.readouterr().err
    assert code == 2 and "needs --config" in err and len(err.strip().splitlines()) == 1


# --------------------------------------------------------------------------- the matrix's status job


def _artifacts(out: Path, tmp_path: Path, *suites: str) -> Path:
    """The gate jobs' artifacts as actions/download-artifact leaves them: one folder per artifact."""
    folder = tmp_path / "artifacts"
    for name in suites:
        (folder / f"retrieval-gate-report-{name}").mkdir(parents=True)
        shutil.copy(out / name / "report.json", folder / f"retrieval-gate-report-{name}" / "report.json")
    folder.mkdir(exist_ok=True)
    return folder


def _plan(tmp_path: Path, touched: list[str], skipped: list[str]) -> Path:
    entries = [{"suite": name, "config": f"{name[0]}/gate.yml", "artifact": f"retrieval-gate-report-{name}"}
               for name in touched]
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"count": len(entries), "suites": entries, "skipped": skipped, "removed": [],
                                "include": entries}))
    return path


def _outputs(path: Path) -> dict[str, str]:
    lines = path.read_text().splitlines()
    found = {}
    for index, line in enumerate(lines):
        if "<<ghadelimiter_" in line:
            found[line.split("<<")[0]] = lines[index + 1]
    return found


def test_status_is_the_worst_suite_and_its_folder_is_what_the_comment_job_posts(world, github, tmp_path, capsys,
                                                                                  monkeypatch):
    head, out = _copy(world, "one", tmp_path)
    artifacts = _artifacts(out, tmp_path, "alpha")
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "output"))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    code = main(["suites-status", "--reports", str(artifacts), "--config", ".retrieval-gate.yml",
                 "--plan", str(_plan(tmp_path, ["alpha"], ["beta"])), "--out", str(tmp_path / "set")])
    printed = capsys.readouterr().out
    assert code == 1
    assert [line.split()[:2] for line in printed.splitlines()[:2]] == [["alpha", "fail"], ["beta", "skipped"]]
    assert _outputs(tmp_path / "output") == {"verdict": "fail", "worst": "alpha", "exit-code": "1"}
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("### ❌ fail — .retrieval-gate.yml: 2 suites (1 fail, 1 skipped)")
    index = json.loads((tmp_path / "set" / "suites.json").read_text())
    assert [(row["suite"], row["verdict"], row["report"]) for row in index["suites"]] == [
        ("alpha", "fail", "alpha/report.json"), ("beta", "skipped", None)]
    assert (tmp_path / "set" / "comment.md").read_text().startswith("### ❌ fail")
    # The comment workflow posts that folder: beta is skipped (not run), not "no report".
    github.add_pull(PR, head, files=CHANGED["one"])
    assert _comment(head, "--reports", str(tmp_path / "set")) == 0
    _marker, body = _posted(github)
    assert _rows(body) == {"alpha": "❌ fail", "beta": "⏭️ skipped"}


def test_a_planned_suite_without_a_report_exits_3_naming_it(world, github, tmp_path, capsys, monkeypatch):
    _head, out = _copy(world, "both", tmp_path)
    artifacts = _artifacts(out, tmp_path, "beta")
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "output"))
    code = main(["suites-status", "--reports", str(artifacts), "--config", ".retrieval-gate.yml",
                 "--plan", str(_plan(tmp_path, ["alpha", "beta"], []))])
    captured = capsys.readouterr()
    assert code == 3
    assert "suite alpha: no report" in captured.err
    assert _outputs(tmp_path / "output") == {"verdict": "inconclusive", "worst": "alpha", "exit-code": "3"}


def test_without_a_plan_every_suite_of_the_config_is_due(world, github, tmp_path, capsys):
    _head, out = _copy(world, "both", tmp_path)
    assert main(["suites-status", "--reports", str(_artifacts(out, tmp_path, "alpha", "beta")),
                 "--config", ".retrieval-gate.yml"]) == 1
    capsys.readouterr()
    assert main(["suites-status", "--reports", str(_artifacts(out, tmp_path / "b", "beta")),
                 "--config", ".retrieval-gate.yml"]) == 3
    assert "suite alpha: no report" in capsys.readouterr().err


def test_a_plan_touching_no_suite_passes_with_every_suite_skipped(world, github, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "output"))
    empty = tmp_path / "none"
    empty.mkdir()
    assert main(["suites-status", "--reports", str(empty), "--config", ".retrieval-gate.yml",
                 "--plan", str(_plan(tmp_path, [], ["alpha", "beta"]))]) == 0
    assert [line.split()[:2] for line in capsys.readouterr().out.splitlines()[:2]] == [["alpha", "skipped"],
                                                                                      ["beta", "skipped"]]
    assert _outputs(tmp_path / "output")["verdict"] == "skipped"
    # A plan that touched a suite with an empty folder (its job saved nothing): due, and missing.
    assert main(["suites-status", "--reports", str(empty), "--config", ".retrieval-gate.yml",
                 "--plan", str(_plan(tmp_path, ["alpha"], ["beta"]))]) == 3
    assert "suite alpha: no report" in capsys.readouterr().err


def test_a_plan_that_leaves_a_suite_out_does_not_make_it_disappear(world, github, tmp_path, capsys):
    _head, out = _copy(world, "both", tmp_path)
    artifacts = _artifacts(out, tmp_path, "beta")
    code = main(["suites-status", "--reports", str(artifacts), "--config", ".retrieval-gate.yml",
                 "--plan", str(_plan(tmp_path, ["beta"], []))])
    captured = capsys.readouterr()
    assert code == 3 and "suite alpha: no report" in captured.err
    assert [line.split()[:3] for line in captured.out.splitlines()[:2]] == [["alpha", "no", "report"],
                                                                           ["beta", "pass", "✅"]]


@pytest.mark.parametrize("touched, skipped, said", [
    (["alpha", "x\n::error title=forged::pass"], ["beta"], "each a plain folder name"),
    (["alpha"], ["beta", "zz\nverdict<<EOF"], "each a plain folder name"),
    (["alpha"], ["alpha", "beta"], "names suite 'alpha' twice"),
])
def test_a_forged_plan_is_refused_in_one_line(world, github, tmp_path, capsys, touched, skipped, said):
    _head, out = _copy(world, "one", tmp_path)
    code = main(["suites-status", "--reports", str(_artifacts(out, tmp_path, "alpha")), "--config",
                 ".retrieval-gate.yml", "--plan", str(_plan(tmp_path, touched, skipped))])
    captured = capsys.readouterr()
    assert code == 2 and said in captured.err and len(captured.err.strip().splitlines()) == 1, captured.err
    assert not any(line.startswith("::") for line in captured.err.splitlines())  # no workflow command


@pytest.mark.parametrize("args, said", [
    (["--reports", "/nonexistent/folder"], "not a folder"),
    (["--plan", "{plan}"], "invalid JSON"),
])
def test_bad_inputs_of_the_status_job_are_one_line(world, github, tmp_path, capsys, args, said):
    (tmp_path / "plan.json").write_text("{not json")
    _head, out = _copy(world, "one", tmp_path)
    base = ["suites-status", "--reports", str(_artifacts(out, tmp_path, "alpha")), "--config", ".retrieval-gate.yml"]
    for option, value in zip(args[::2], args[1::2]):
        value = value.format(plan=tmp_path / "plan.json")
        if option in base:
            base[base.index(option) + 1] = value
        else:
            base += [option, value]
    code = main(base)
    err = capsys.readouterr().err
    assert code == 2 and said in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
