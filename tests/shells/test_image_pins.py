"""The action image is pinned: its base by digest, every Python package by version and hash, and
the release workflow that publishes it prebuilt (docs/image.md)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version
from ruamel.yaml import YAML

from tests.shared_data import GITHUB, REPO, need

tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11+ (tomllib)")

LOCK = REPO / "docker" / "requirements.lock"
DOCKERFILE = REPO / "Dockerfile"
WATCHED = REPO / "docker" / "base-image.Dockerfile"
RELEASE = REPO / ".github" / "workflows" / "release.yml"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
DIGEST = "sha256:" + "0123456789abcdef" * 4
ENTRY = re.compile(r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s;\\]+)"
                   r"(?P<hashes>(?:\s+--hash=sha256:[0-9a-f]{64})+)")


def load_yaml(path: Path) -> dict:
    return YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))


def lock_entries() -> list[str]:
    """The lock's requirements, one string each (continuation lines joined, comments dropped)."""
    logical = re.sub(r"\\\n", " ", LOCK.read_text(encoding="utf-8"))
    return [line.strip() for line in logical.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def locked() -> dict[str, Version]:
    pins = {}
    for entry in lock_entries():
        match = ENTRY.fullmatch(entry)
        assert match, f"not `name==version --hash=sha256:...`: {entry[:120]}"
        pins[canonicalize_name(match["name"])] = Version(match["version"])
    return pins


def code_lines(path: Path) -> list[str]:
    """Instructions, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", path.read_text(encoding="utf-8"))
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


# ---------------------------------------------------------------------- the lock


def test_every_entry_is_pinned_exactly_and_hashed():
    entries = lock_entries()
    assert len(entries) >= 7
    for entry in entries:
        assert ENTRY.fullmatch(entry), entry[:120]
    assert len(locked()) == len(entries), "a package is pinned twice"


def test_the_lock_pins_every_runtime_dependency_and_the_build_backend_within_pyprojects_ranges():
    pins = locked()
    wanted = [Requirement(r) for r in PYPROJECT["project"]["dependencies"] + PYPROJECT["build-system"]["requires"]]
    assert {"numpy", "ruamel-yaml", "jinja2", "requests", "urllib3", "ir-datasets", "pyahocorasick",
            "hatchling"} <= {canonicalize_name(r.name) for r in wanted}
    for requirement in wanted:
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement} is not in {LOCK.name}: run tools/lock-image-deps"
        assert requirement.specifier.contains(pins[name], prereleases=True), \
            f"{LOCK.name} pins {name}=={pins[name]}, outside pyproject's {requirement}: run tools/lock-image-deps"


def test_the_lock_holds_none_of_the_extras_and_says_how_it_is_made():
    # The image runs the gate only: the reference retriever and the test tools stay out.
    extras = {canonicalize_name(Requirement(r).name)
              for group in PYPROJECT["project"]["optional-dependencies"].values() for r in group}
    assert {"scipy", "faiss-cpu", "pytest", "hypothesis"} <= extras
    assert not (extras - {"retrieval-gate"}) & set(locked())
    assert "tools/lock-image-deps" in LOCK.read_text().split("\n", 3)[1]
    assert (REPO / "tools" / "lock-image-deps").stat().st_mode & 0o111


# ---------------------------------------------------------------------- the Dockerfile


def test_the_dockerfile_installs_the_lock_with_hashes_then_the_gate_without_resolving():
    lines = code_lines(DOCKERFILE)
    copy = next(line for line in lines if line.startswith("COPY docker/requirements.lock "))
    target = copy.split()[2]
    install = next(line for line in lines if "--require-hashes" in line)
    assert re.search(rf"pip install\b.*--require-hashes -r {re.escape(target)}(\s|$)", install), install
    gate = next(line for line in lines if re.search(r"pip install\b.*\s/app(\s|$)", line))
    assert "--no-deps" in gate and "--no-build-isolation" in gate, gate
    assert lines.index(install) < lines.index(gate)
    # No other pip install: nothing reaches the image unhashed.
    assert len([line for line in lines if "pip install" in line]) == 2


def test_the_base_image_default_is_pinned_by_digest_and_stays_overridable():
    lines = code_lines(DOCKERFILE)
    assert re.fullmatch(r"ARG BASE_IMAGE=python:3\.11-slim-bookworm@sha256:[0-9a-f]{64}", lines[0]), lines[0]
    assert lines[1] == "FROM ${BASE_IMAGE}"
    assert len([line for line in lines if line.startswith("FROM ")]) == 1


def test_dependabots_copy_of_the_base_image_agrees_with_the_dockerfile():
    assert code_lines(WATCHED) == ["FROM " + code_lines(DOCKERFILE)[0].removeprefix("ARG BASE_IMAGE=")], \
        "run tools/pin-base-image --sync"
    dependabot = load_yaml(REPO / ".github" / "dependabot.yml")
    docker = [u for u in dependabot["updates"] if u["package-ecosystem"] == "docker"]
    assert [u["directory"] for u in docker] == ["/" + WATCHED.parent.name]


# ---------------------------------------------------------------------- tools/pin-base-image


@pytest.fixture()
def tree(tmp_path):
    """The files tools/pin-base-image reads and writes, copied, with the tool beside them."""
    for rel in ("Dockerfile", "docker/base-image.Dockerfile", "tools/pin-base-image"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, tmp_path / rel)
    return tmp_path


def _tool(tree: Path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(tree / "tools" / "pin-base-image"), *argv], capture_output=True,
                          text=True, timeout=60, cwd=tree)


def test_pin_base_image_writes_a_given_digest_into_both_files_and_nothing_else(tree):
    before = (tree / "Dockerfile").read_text().splitlines()
    done = _tool(tree, "--digest", DIGEST)
    assert done.returncode == 0, done.stderr
    after = (tree / "Dockerfile").read_text().splitlines()
    changed = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
    assert len(before) == len(after) and len(changed) == 1
    assert after[changed[0]] == f"ARG BASE_IMAGE=python:3.11-slim-bookworm@{DIGEST}"
    assert f"FROM python:3.11-slim-bookworm@{DIGEST}" in (tree / "docker/base-image.Dockerfile").read_text()
    assert _tool(tree, "--check").returncode == 0


def test_pin_base_image_syncs_what_dependabot_moved(tree):
    watched = tree / "docker/base-image.Dockerfile"
    watched.write_text(re.sub(r"sha256:[0-9a-f]{64}", DIGEST, watched.read_text()))
    check = _tool(tree, "--check")
    assert check.returncode == 1 and "--sync" in check.stderr
    assert _tool(tree, "--sync").returncode == 0
    assert f"python:3.11-slim-bookworm@{DIGEST}" in (tree / "Dockerfile").read_text()
    assert _tool(tree, "--check").returncode == 0


@pytest.mark.parametrize("argv", [["--digest", "sha256:abc"], ["--digest", DIGEST.upper()],
                                  ["--digest", DIGEST, "python:3.11@sha256:" + "0" * 64], ["--bogus"]])
def test_pin_base_image_refuses_in_one_line(tree, argv):
    before = (tree / "Dockerfile").read_bytes()
    done = _tool(tree, *argv)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert (tree / "Dockerfile").read_bytes() == before


# ---------------------------------------------------------------------- tools/pin-action-image


def _pin_action(reference: str, path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "tools" / "pin-action-image"), reference, str(path)],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("reference", [f"ghcr.io/octo-org/retrieval-gate@{DIGEST}",
                                       f"docker://ghcr.io/octo-org/retrieval-gate@{DIGEST}",
                                       f"127.0.0.1:5000/octo-org/retrieval-gate@{DIGEST}"])
def test_pin_action_image_rewrites_only_the_image_line(tmp_path, reference):
    action = tmp_path / "action.yml"
    shutil.copy2(REPO / "action.yml", action)
    before = action.read_text().splitlines(keepends=True)
    done = _pin_action(reference, action)
    assert done.returncode == 0, done.stderr
    after = action.read_text().splitlines(keepends=True)
    changed = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
    assert len(before) == len(after) and changed == [before.index("  image: Dockerfile\n")]
    name = reference.removeprefix("docker://")
    assert after[changed[0]] == f"  image: docker://{name}\n"
    assert load_yaml(action)["runs"] == {"using": "docker", "image": f"docker://{name}"}
    # Pinning a pinned file again moves it to the new digest.
    assert _pin_action(f"ghcr.io/octo-org/retrieval-gate@sha256:{'f' * 64}", action).returncode == 0
    assert load_yaml(action)["runs"]["image"] == f"docker://ghcr.io/octo-org/retrieval-gate@sha256:{'f' * 64}"


@pytest.mark.parametrize("reference", [
    f"ghcr.io/Octo-Org/retrieval-gate@{DIGEST}",          # not lowercase
    f"ghcr.io/octo-org/retrieval-gate:v1@{DIGEST}",       # a tag beside the digest
    "ghcr.io/octo-org/retrieval-gate:v1",                 # a tag alone
    f"octo-org/retrieval-gate@{DIGEST}",                  # no registry (Docker Hub implied)
    f"ghcr.io@{DIGEST}",                                  # no path
    "ghcr.io/octo-org/retrieval-gate@sha256:" + "0" * 63,  # 63 hex
    f"ghcr.io/octo-org/retrieval-gate@{DIGEST.upper()}",
    f"ghcr.io/octo-org/retrieval-gate@sha512:{'0' * 128}",
    f"ghcr.io/octo-org/retrieval-gate@{DIGEST}\n  using: node20",
    f"ghcr.io/octo-org/retrieval-gate@{DIGEST} # comment",
    f"https://ghcr.io/octo-org/retrieval-gate@{DIGEST}",
    "Dockerfile",
])
def test_pin_action_image_refuses_anything_else_in_one_line(tmp_path, reference):
    action = tmp_path / "action.yml"
    shutil.copy2(REPO / "action.yml", action)
    done = _pin_action(reference, action)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert action.read_bytes() == (REPO / "action.yml").read_bytes()


def test_pin_action_image_refuses_a_file_without_exactly_one_image_line(tmp_path):
    action = tmp_path / "action.yml"
    action.write_text("runs:\n  using: docker\n  image: Dockerfile\n  image: Dockerfile\n")
    done = _pin_action(f"ghcr.io/o/r@{DIGEST}", action)
    assert done.returncode == 2 and "found 2" in done.stderr


# ---------------------------------------------------------------------- the release workflow


def test_release_workflow_validates_against_the_schema():
    import jsonschema

    schema = json.loads(need(GITHUB / "schemastore_github-workflow.json").read_text(encoding="utf-8"))
    errors = list(jsonschema.Draft7Validator(schema).iter_errors(load_yaml(RELEASE)))
    assert not errors, [f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors[:5]]


def test_release_workflow_is_dispatched_by_hand_with_least_privilege():
    wf = load_yaml(RELEASE)
    assert set(wf["on"]) == {"workflow_dispatch"}
    assert "version" in wf["on"]["workflow_dispatch"]["inputs"]
    assert "pull_request_target" not in RELEASE.read_text()
    assert wf["permissions"] == {}
    grants = {name: job.get("permissions") for name, job in wf["jobs"].items()}
    assert grants == {"build": {"contents": "read", "packages": "write"}, "publish": {"packages": "write"},
                      "release": {"contents": "write"}}


def test_release_workflow_runs_no_expression_and_no_third_party_action():
    wf = load_yaml(RELEASE)
    for job in wf["jobs"].values():
        for step in job["steps"]:
            assert "${{" not in step.get("run", ""), f"{step.get('name')}: an expression in run: goes through env:"
            if "uses" in step:
                assert re.fullmatch(r"actions/checkout@[0-9a-f]{40}", step["uses"]), step["uses"]


def test_release_workflow_logs_in_from_stdin_and_pins_action_yml_by_the_pushed_digest():
    wf = load_yaml(RELEASE)
    runs = [step.get("run", "") for job in wf["jobs"].values() for step in job["steps"]]
    logins = [line for run in runs for line in run.splitlines() if "docker login" in line]
    assert logins and all(re.fullmatch(r'\s*printf \'%s\' "\$TOKEN" \| docker login ghcr\.io --username "\$ACTOR" '
                                       r"--password-stdin", line) for line in logins), logins
    assert not any("set -x" in run for run in runs)
    release = "\n".join(step.get("run", "") for step in wf["jobs"]["release"]["steps"])
    assert 'tools/pin-action-image "$image@$DIGEST"' in release
    assert 'git push origin "refs/tags/v$VERSION"' in release
    assert 'git push --force origin "refs/tags/$major"' in release
    assert wf["jobs"]["release"]["steps"][1]["env"]["DIGEST"] == "${{ needs.publish.outputs.digest }}"
