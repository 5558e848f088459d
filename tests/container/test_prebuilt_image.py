"""A released tag's action, as a runner meets it: ``image: docker://<registry>/<path>@sha256:...``,
pulled by digest and run, never built.

What the release workflow does is done here against a registry on 127.0.0.1 (ghcr.io's stand-in,
tests/container/registry.py): the action's image, built from the Dockerfile, is pushed and its
digest read back; ``tools/pin-action-image`` writes the release commit's action.yml (a copy);
the image is removed from this engine and the runner's "Set up job" pulls what that action.yml
names; a pull request then goes green through the example workflow on the pulled image.
"""

from __future__ import annotations

import re
import subprocess
import uuid

import pytest
from ruamel.yaml import YAML

from tests.container.conftest import MODE
from tests.container.engine import REPO, STAND_IN
from tests.container.github_runner import Runner
from tests.container.registry import LocalRegistry, push, registry_binary
from tests.container.team_repo import GOOD, TeamRepo
from tests.container.test_action_container import _pr_event
from tests.container.workflows import gate_job_steps


@pytest.fixture(scope="module")
def registry(image):
    binary, problem = registry_binary()
    if binary is None:
        if MODE == "required":
            pytest.fail(f"the container suite is required here, but there is no registry: {problem}")
        pytest.skip(f"no local registry: {problem}")
    with LocalRegistry(binary) as running:
        yield running


def _docker(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *argv], capture_output=True, text=True, timeout=900)


def test_a_released_action_pulls_its_image_by_digest_and_a_passing_pr_goes_green(tmp_path, image, registry,
                                                                               github, remote):
    # The release: the Dockerfile built (the suite's build, from its layer cache) as an image of
    # its own, so that removing it below leaves the suite's image alone; pushed; pinned.
    release = f"{registry.host}/octo-org/retrieval-gate"
    run_id = uuid.uuid4().hex[:12]
    built = _docker("build", "--network", "host", "--build-arg", f"BASE_IMAGE={STAND_IN}",
                    "--label", f"org.opencontainers.image.version=0.0.0-test.{run_id}",
                    "-t", f"{release}:build-{run_id}", str(REPO))
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    digest = push(f"{release}:build-{run_id}", f"{release}:0.0.0-test.{run_id}")
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", digest)

    action = tmp_path / "release" / "action.yml"
    action.parent.mkdir()
    action.write_bytes((REPO / "action.yml").read_bytes())
    pinned = subprocess.run([str(REPO / "tools" / "pin-action-image"), f"{release}@{digest}", str(action)],
                            capture_output=True, text=True, timeout=60)
    assert pinned.returncode == 0, pinned.stderr
    before = (REPO / "action.yml").read_text().splitlines()
    after = action.read_text().splitlines()
    assert [i for i, (a, b) in enumerate(zip(before, after)) if a != b] == [before.index("  image: Dockerfile")]
    runs = YAML(typ="safe").load(action.read_text())["runs"]
    assert runs == {"using": "docker", "image": f"docker://{release}@{digest}"}

    # A fresh runner: the image is not on this engine, only in the registry.
    reference = runs["image"].removeprefix("docker://")
    removed = _docker("rmi", f"{release}:build-{run_id}", f"{release}:0.0.0-test.{run_id}")
    assert removed.returncode == 0, removed.stderr
    assert _docker("image", "inspect", reference).returncode != 0

    repo = TeamRepo(tmp_path / "dev", remote.root, github.repository)
    runner = Runner(tmp_path / "runner", github.repository)
    pulled = runner.pull_action_image(reference)
    assert pulled.returncode == 0, pulled.log
    assert digest in pulled.log
    label = _docker("image", "inspect", "--format", '{{index .Config.Labels "org.opencontainers.image.version"}}',
                    reference)
    assert label.stdout.strip() == f"0.0.0-test.{run_id}", label.stdout + label.stderr

    try:
        pr = repo.pull_request(11, {"retrieval.yml": GOOD})
        github.add_pull(11, pr.head, files=pr.files, base_sha=pr.base)
        steps = gate_job_steps(runner, reference, remote.url(f"{repo.name}.git"), _pr_event(repo, pr, github),
                               "pull_request", github, merge_sha=pr.merge)
        for step in steps:
            assert step.returncode == 0, f"{step.name} failed ({step.returncode}):\n{step.log[-4000:]}"
        gate = next(s for s in steps if s.name == "Run the gate")
        assert gate.outputs["verdict"] == "pass", gate.log[-3000:]
        assert (runner.workspace / ".retrieval-gate" / "out" / "report.json").is_file()
    finally:
        _docker("rmi", reference)
