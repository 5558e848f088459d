"""A gate config in a subfolder (``working-directory: services/search``) whose baseline the Action
must run: reconstructed from the base commit (nothing archived), or replayed from the archive's
commit (main grew its golden set since). The team's command is ``python3 search/run.py``, a path
relative to the config's folder: the baseline's code runs in ``services/search/`` of an export
of its commit, as the candidate runs in ``services/search/`` of the checkout. Before, it ran at
the export's top and every PR was inconclusive ("can't open file .../search/run.py").

Each world opens a good PR and a bad one: four Action runs in all, one per outcome.
"""

from __future__ import annotations

import json

import pytest

from tests.container.github_runner import Runner
from tests.container.team_repo import BAD, GOOD, TeamRepo
from tests.container.workflows import gate_job_steps
from tests.publishing.github.payloads import pull_request_event

FOLDER = "services/search"
#: A golden query (with its judgment) main gains after the archive: the archived ranked lists
#: never saw it, so the archived baseline is replayed on today's set.
NEW_QUERY = {"query_id": "q_new", "text": "how do i configure webhooks with giraffe dashboard",
             "stratum": "how_to"}
NEW_JUDGMENT = "q_new 0 guide/webhooks-0#c0 2\n"


def _judge(repo: TeamRepo, runner: Runner, image: str, github, remote, number: int, retrieval: str) -> tuple[int, dict]:
    """A PR changing the retrieval config, played through the example gate job with the config's
    folder as the working directory; the gate step's exit code and the report it wrote."""
    pr = repo.pull_request(number, {"retrieval.yml": retrieval})
    github.add_pull(number, pr.head, files=pr.files, base_sha=pr.base)
    event = pull_request_event(pr.number, pr.head, pr.base, repository=github.repository)
    steps = gate_job_steps(runner, image, remote.url(f"{repo.name}.git"), event, "pull_request", github,
                           merge_sha=pr.merge, inputs={"working-directory": FOLDER})
    gate = next(s for s in steps if s.name == "Run the gate")
    assert "report-path" in gate.outputs, gate.log[-3000:]
    report = json.loads((runner.workspace / gate.outputs["report-path"]).read_text())  # workspace-relative
    assert gate.outputs["verdict"] == report["verdict"]["kind"], gate.log[-3000:]
    return gate.returncode, report


@pytest.mark.parametrize("archived, resolution", [(False, "reconstructed"), (True, "replayed")],
                         ids=["reconstructed", "replayed"])
def test_a_subfolder_config_whose_baseline_is_run_passes_a_good_pr_and_fails_a_bad_one(
        tmp_path, image, github, remote, archived, resolution):
    repo = TeamRepo(tmp_path / "dev", remote.root, github.repository, subfolder=FOLDER, archived=archived)
    if archived:
        golden = (repo.folder / "golden.jsonl").read_text() + json.dumps(NEW_QUERY) + "\n"
        qrels = (repo.folder / "qrels.txt").read_text() + NEW_JUDGMENT
        repo.advance_main({"golden.jsonl": golden, "qrels.txt": qrels}, "a golden query the archive never saw")
    runner = Runner(tmp_path / "runner", github.repository)
    code, report = _judge(repo, runner, image, github, remote, 41, GOOD)
    assert report["baseline"]["resolution"] == resolution, report["verdict"]["headline"]
    assert (code, report["verdict"]["kind"]) == (0, "pass"), report["verdict"]["headline"]
    code, report = _judge(repo, runner, image, github, remote, 42, BAD)
    assert report["baseline"]["resolution"] == resolution, report["verdict"]["headline"]
    assert (code, report["verdict"]["kind"]) == (1, "fail"), report["verdict"]["headline"]
