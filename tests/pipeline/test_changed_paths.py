"""A pull request's changed files, as the Action (entrypoint.py on the PR's merge commit) and
``retrieval-gate run --base`` read them, decide the same thing: judged, skipped or goalposts.

Before: git quoted a non-ASCII name (``"retrieval/gr\\303\\266\\303\\237e.yml"``), so a PR changing
only that retrieval config matched no watched glob and was skipped (exit 0) once ``runner.inputs``
was declared; and ``runner.inputs: [search/**]`` stopped every run on Python 3.11 ("no file
matches": ``Path.glob`` yields only folders for ``**``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gate.cli import main
from tests.publishing.github.fake_github import FakeGitHub
from tests.support.action_world import TOKEN, _git, _outputs, _payload, archived_base, merged_pr, run_entrypoint
from tests.support.small_world import small_world

RETRIEVAL = "retrieval/größe.yml"
GOOD = "ingestion: {parser: v1}\nboost: 2.0\nprefer_suffix: '#c0'\n"


class World:
    """A repository whose gate config sits in ``folder`` (the repository's top when ""), with its
    retrieval config at a non-ASCII path and ``runner.inputs: [search/**]``; ``root`` is what
    actions/checkout checks out (the entrypoint's GITHUB_WORKSPACE)."""

    def __init__(self, root: Path, folder: str = "", inputs: str = "[search/**]", files: tuple[str, ...] = ()):
        self.root, self.folder = root, folder
        here = root / folder if folder else root
        here.mkdir(parents=True)
        for name in files:  # repository paths outside the config's folder
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(f"# {name}\n")
        config = small_world(here, leak_in_new=False)
        (here / RETRIEVAL).parent.mkdir()
        (here / "retrieval.yml").rename(here / RETRIEVAL)
        text = config.read_text().replace("retrieval: {config: retrieval.yml}", f"retrieval: {{config: '{RETRIEVAL}'}}")
        text = text.replace("--output {run}\"\n", f"--output {{run}}\"\n  inputs: {inputs}\n")
        assert RETRIEVAL in text and "inputs:" in text
        config.unlink()
        (here / ".retrieval-gate.yml").write_text(text)
        for name in ("search/run.py", "search/deep/rank.py", "search/old.py"):
            (here / name).parent.mkdir(parents=True, exist_ok=True)
            (here / name).write_text(f"# {name}\n")
        (root / "docs").mkdir(exist_ok=True)
        (root / "docs" / "notes.md").write_text("notes\n")
        (root / ".gitignore").write_text("**/.retrieval-gate/cache/\n**/.retrieval-gate/work/\n.retrieval-gate/out/\n")
        self.base = archived_base(root, here / ".retrieval-gate.yml")

    @property
    def config(self) -> str:
        """The config's path from the repository's top (what a developer passes to --config)."""
        return f"{self.folder}/.retrieval-gate.yml" if self.folder else ".retrieval-gate.yml"

    def pr(self, changes: dict[str, str | None], moves: dict[str, str] | None = None) -> str:
        """Commit ``changes`` (repository paths; None deletes) and ``moves`` on a branch, then
        check out the merge commit actions/checkout makes. Returns the PR's head."""
        _git(self.root, "checkout", "-q", "-B", "feature", self.base)
        for old, new in (moves or {}).items():
            (self.root / new).parent.mkdir(parents=True, exist_ok=True)
            _git(self.root, "mv", old, new)
        for name, text in changes.items():
            if text is None:
                (self.root / name).unlink()
            else:
                (self.root / name).parent.mkdir(parents=True, exist_ok=True)
                (self.root / name).write_text(text)
        return merged_pr(self.root, self.base)[0]


def _both(world: World, fake: FakeGitHub, tmp: Path, number: int, head: str) -> tuple[dict, int, dict, int]:
    """The Action's report and exit code, then ``run --base``'s, on the checked-out merge commit."""
    fake.add_pull(number, head, files=["(GitHub's list is not read: git answers)"], base_sha=world.base)
    event = _payload(tmp, "webhook_example_pull_request_synchronize.payload.json", number, head, world.base)
    inputs = {"working_directory": world.folder, "config_path": ".retrieval-gate.yml"} if world.folder else {}
    proc, outputs, _ = run_entrypoint(world, fake, event, tmp, **inputs)  # type: ignore[arg-type]
    report_file = world.root / ".retrieval-gate" / "out" / "report.json"
    assert report_file.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    action = json.loads(report_file.read_text())
    assert _outputs(outputs)["verdict"] == action["verdict"]["kind"]
    report_file.unlink()
    out = tmp / f"cli-{number}"
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(world.root)
        code = main(["run", "--config", world.config, "--base", world.base, "--out", str(out)])
    cli = json.loads((out / "report.json").read_text())
    return action, proc.returncode, cli, code


def _decided(report: dict) -> tuple:
    return (report["verdict"]["kind"], [r["code"] for r in report["verdict"]["reasons"]], report.get("goalposts"))


@pytest.fixture()
def top(tmp_path):
    with FakeGitHub(token=TOKEN) as fake:
        yield World(tmp_path / "repo"), fake, tmp_path


@pytest.fixture()
def subfolder(tmp_path):
    with FakeGitHub(token=TOKEN) as fake:
        yield World(tmp_path / "repo", "services/search"), fake, tmp_path


def test_a_pr_changing_only_a_non_ascii_retrieval_config_is_judged_by_both(tmp_path):
    """Globs every Python reads alike (no ``**``): what was wrong here was git's quoting alone."""
    with FakeGitHub(token=TOKEN) as fake:
        _a_config_pr_is_judged(World(tmp_path / "repo", inputs="[search/*.py, search/*/*.py]"), fake, tmp_path)


def _a_config_pr_is_judged(world: World, fake: FakeGitHub, tmp: Path) -> None:
    head = world.pr({RETRIEVAL: GOOD})
    action, action_code, cli, cli_code = _both(world, fake, tmp, 41, head)
    assert action["verdict"]["kind"] not in ("skipped",) and action["config_diff"], action["verdict"]
    assert (_decided(cli), cli_code) == (_decided(action), action_code)


def test_a_pr_changing_code_deep_below_search_is_judged_by_both(top):
    """``search/**`` keys and watches every file below search/: a name with a space, non-ASCII
    letters and a newline in it, two folders down."""
    world, fake, tmp = top
    head = world.pr({"search/deep/ünï code\nv2.py": "# new helper\n"})
    changed = _git(world.root, "diff", "-z", "--name-only", world.base, "HEAD").strip("\0").split("\0")
    assert changed == ["search/deep/ünï code\nv2.py"]
    action, action_code, cli, cli_code = _both(world, fake, tmp, 42, head)
    assert action["verdict"]["kind"] != "skipped", action["verdict"]
    assert action_code != 2 and (_decided(cli), cli_code) == (_decided(action), action_code)


def test_a_pr_deleting_code_is_judged_and_one_moving_docs_is_skipped_by_both(top):
    world, fake, tmp = top
    head = world.pr({"search/old.py": None})
    action, action_code, cli, cli_code = _both(world, fake, tmp, 43, head)
    assert action["verdict"]["kind"] != "skipped" and (_decided(cli), cli_code) == (_decided(action), action_code)
    head = world.pr({"docs/ünïcode notes.md": "more notes\n"}, moves={"docs/notes.md": "docs/moved/notes.md"})
    action, action_code, cli, cli_code = _both(world, fake, tmp, 44, head)
    assert action["verdict"]["kind"] == "skipped" and action_code == cli_code == 0, action["verdict"]
    assert _decided(cli) == _decided(action)


def test_a_subfolder_configs_globs_are_its_folders(subfolder):
    """``working-directory: services/search`` (the Action) and ``--config
    services/search/.retrieval-gate.yml`` (the CLI): ``search/**`` is services/search/search/,
    never the repository's own search/, and the yardstick is the subfolder's."""
    world, fake, tmp = subfolder
    head = world.pr({"services/search/search/deep/rank.py": "# tuned\n"})
    action, action_code, cli, cli_code = _both(world, fake, tmp, 45, head)
    assert action["verdict"]["kind"] != "skipped" and (_decided(cli), cli_code) == (_decided(action), action_code)

    head = world.pr({"search/deep/rank.py": "# another project's search code\n"})
    action, action_code, cli, cli_code = _both(world, fake, tmp, 46, head)
    assert action["verdict"]["kind"] == "skipped" and action_code == cli_code == 0, action["verdict"]

    qrels = world.root / "services/search/qrels.txt"
    head = world.pr({"services/search/qrels.txt": qrels.read_text() + "q_0000 0 extra 2\n"})
    action, action_code, cli, cli_code = _both(world, fake, tmp, 47, head)
    assert action["goalposts"] == [{"path": "services/search/qrels.txt", "change": "modified"}]
    assert (_decided(cli), cli_code) == (_decided(action), action_code)


def test_a_subfolder_config_watches_shared_code_beside_its_folder(tmp_path):
    """``runner.inputs: [search/**, ../lib/**]`` from services/search: a PR changing only
    services/lib/ is judged by both, one changing another service's lib/ is skipped by both."""
    with FakeGitHub(token=TOKEN) as fake:
        world = World(tmp_path / "repo", "services/search", inputs="[search/**, ../lib/**]",
                      files=("services/lib/util.py", "services/other/lib/util.py"))
        head = world.pr({"services/lib/util.py": "# shared helper, changed\n"})
        action, action_code, cli, cli_code = _both(world, fake, tmp_path, 48, head)
        assert action["verdict"]["kind"] != "skipped" and (_decided(cli), cli_code) == (_decided(action), action_code)
        head = world.pr({"services/other/lib/util.py": "# not this service's\n"})
        action, action_code, cli, cli_code = _both(world, fake, tmp_path, 49, head)
        assert action["verdict"]["kind"] == "skipped" and action_code == cli_code == 0, action["verdict"]


def test_git_quotes_these_names_without_z(top):
    """Why ``-z``: the names above are what git's default output mangles."""
    world, _, _ = top
    world.pr({RETRIEVAL: GOOD})
    plain = subprocess.run(["git", "diff", "--name-only", world.base, "HEAD"], cwd=world.root, capture_output=True,
                           text=True, check=True).stdout
    assert plain.strip() == '"retrieval/gr\\303\\266\\303\\237e.yml"'
