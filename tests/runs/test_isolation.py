"""The token is out of reach of the PR's code (gate.runs.isolation), on this machine.

entrypoint.py is started as a Docker action starts it, the tokens in its environment. The PR's
retrieval config makes the search command a probe: it reads every process's environ and
cmdline, and the memory of every process whose /proc/<pid>/mem it can open, looking for the
tokens. Here the probe runs as the gate's own uid with every capability a host's root has, so
it can read the gate's memory (only CAP_SYS_PTRACE allows that for a non-dumpable process, and
a container has none): this test checks the environments and command lines. The container
suite runs the same probe in the real image, as the runner user, where memory is checked too.
"""

from __future__ import annotations

import json
import os
import sys

from tests.publishing.github.fake_github import FakeGitHub
from tests.shared_data import REPO
from tests.support import bounded
from tests.support.action_world import TOKEN, Checkout, _payload

RUNTIME = "ACTIONS-RUNTIME-TOKEN-probe-7c1e"

def test_the_prs_code_finds_no_token_in_any_environment_or_command_line(tmp_path):
    checkout = Checkout(tmp_path / "repo")
    drop = tmp_path / "drop"
    drop.mkdir(mode=0o777)
    os.chmod(drop, 0o777)
    probe = drop / "probe.json"
    with FakeGitHub(token=TOKEN) as fake:
        retrieval = (f"ingestion: {{parser: v1}}\nboost: 2.0\nprefer_suffix: '#c0'\n"
                     f"probe: {{path: {probe}, needles: [{TOKEN}, {RUNTIME}]}}\nenv_dump: {drop / 'env.json'}\n")
        head, _ = checkout.pr(retrieval)
        fake.add_pull(5, head, files=["retrieval.yml"], base_sha=checkout.base)
        event = _payload(tmp_path, "webhook_example_pull_request_synchronize.payload.json", 5, head, checkout.base)
        output = drop / "output"
        output.write_text("")
        env = {"PATH": os.environ["PATH"], "HOME": str(drop), "GITHUB_EVENT_NAME": "pull_request",
               "GITHUB_EVENT_PATH": str(event), "GITHUB_API_URL": fake.url, "GITHUB_REPOSITORY": fake.repository,
               "GITHUB_WORKSPACE": str(checkout.root), "GITHUB_OUTPUT": str(output),
               "GITHUB_STEP_SUMMARY": str(drop / "summary"), "GITHUB_TOKEN": TOKEN, "INPUT_TOKEN": TOKEN,
               "ACTIONS_RUNTIME_TOKEN": RUNTIME, "ACTIONS_ID_TOKEN_REQUEST_TOKEN": RUNTIME,
               "INPUT_CONFIG-PATH": ".retrieval-gate.yml", "INPUT_COMMENT-MODE": "update"}
        proc = bounded.run([sys.executable, str(REPO / "entrypoint.py")], env=env, cpu_timeout=300,
                           cwd=checkout.root)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    found = json.loads(probe.read_text())
    # The probe looked at every process (the gate's own included) and could open no environ: as
    # root the command runs in the box, as a uid of its own.
    assert found["examined"] and (found["environ_readable"] == [] or os.geteuid() != 0), found
    assert [hit for hit in found["hits"] if not hit.endswith("/mem")] == [], found
    seen = json.loads((drop / "env.json").read_text())
    assert not [k for k, v in seen.items() if TOKEN in v or RUNTIME in v]
    # The comment was still posted: the token reached the API client, and only it.
    assert len(fake.comments(5)) == 1
