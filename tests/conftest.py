import sys
from pathlib import Path

# Tests import the package from the working tree even when it is not installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import os

# A report the gate writes that its own schema (the fork comment job's check) refuses is a bug:
# in the suite it fails the test that made it (subprocesses inherit this), not only a warning.
os.environ.setdefault("RETRIEVAL_GATE_REPORT_CHECK", "raise")


import pytest  # noqa: E402

from tests.support import xdist_schedule  # noqa: E402

TESTS = Path(__file__).resolve().parent

# --------------------------------------------------------------------------- the two tiers
#
# The fast tier is the README's test command (`./run test`: `pytest`, deselecting the tests marked
# `full`); the full tier is every test (`./run test-full`, `pytest --full`), what CI runs. Full:
# these folders whole, in tests/demo every test that reads one of the demo's worlds or the demo's
# run (the fixtures below; a test that builds one itself is marked), and single tests marked
# `@pytest.mark.full` where they are (slow, and not the only coverage of a core behaviour). A
# full-tier test also runs when its file (or node id) is named on the command line, or its folder
# is (`pytest tests/fuzz`, `pytest tests/demo`).
FULL_DIRS = {
    "badinputs": "the bad-input battery (~1,200 CLI runs)",
    "fuzz": "property-based fuzzing of the readers and the config loader",
    "container": "the Action's container suite (./run container-test)",
}
# And the tests listed in tests/slow_tests.txt (tools/slow_tests.py): measured at 1.5 s or more,
# they would take the fast tier past its few minutes on 2 cores.
SLOW_TESTS = frozenset(line.strip() for line in (Path(__file__).parent / "slow_tests.txt").read_text().splitlines()
                       if line.strip() and not line.startswith("#"))
DEMO_DIR = "demo"
DEMO_FIXTURES = {"demo", "demo_world", "default_world", "full_demo"}
FULL_COMMAND = "./run test-full"

# pytest-xdist (`--dist loadgroup`, as ./run passes it; tests/support/xdist_schedule.py): the tests
# that read one of these session fixtures run on one worker, which builds it once; so do a
# module's tests that share a module fixture.
SHARED_FIXTURES = {"demo": "demo", "demo_world": "demo-world"}


def pytest_addoption(parser):
    parser.addoption("--full", action="store_true", default=False,
                     help="run the full tier too (the tests marked full: "
                          f"{', '.join('tests/' + d for d in FULL_DIRS)}, "
                          f"the demo's world and run in tests/{DEMO_DIR}, slow single tests); {FULL_COMMAND} passes it")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    _basetemp_open_to_the_box(config)
    config._full_tier_not_run = 0
    xdist_schedule.start(config)


def pytest_unconfigure(config):
    xdist_schedule.finish(config)
    made = getattr(config, "_box_basetemp", None)
    if made is not None:
        import shutil

        shutil.rmtree(made, ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    return xdist_schedule.scheduler(config, log) if xdist_schedule.wanted(config) else None


def _top(path: Path) -> str | None:
    """The folder of tests/ that ``path`` is in (None: tests/ itself, or elsewhere)."""
    try:
        rel = path.resolve().relative_to(TESTS)
    except ValueError:
        return None
    return rel.parts[0] if len(rel.parts) > 1 or path.is_dir() and rel.parts else None


def _full_by_place(item) -> bool:
    top = _top(Path(str(item.fspath)))
    return top in FULL_DIRS or top == DEMO_DIR and not DEMO_FIXTURES.isdisjoint(item.fixturenames)


def _group(item) -> str | None:
    shared = sorted({SHARED_FIXTURES[name] for name in item.fixturenames if name in SHARED_FIXTURES})
    if shared:
        return "+".join(shared)
    module = item.nodeid.split("::", 1)[0]
    for defs in item._fixtureinfo.name2fixturedefs.values():
        if defs and defs[-1].scope == "module" and defs[-1].baseid == module:
            return module
    return None


def _named(config) -> tuple[set[Path], list[Path]]:
    """The files named on the command line, and its folders that lie wholly in the full tier."""
    base = config.invocation_params.dir
    files, dirs = set(), []
    for arg in config.args:
        path = (base / arg.split("::", 1)[0]).resolve()
        if path.is_file():
            files.add(path)
        elif path.is_dir() and _top(path) in (*FULL_DIRS, DEMO_DIR):
            dirs.append(path)
    return files, dirs


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if _full_by_place(item) or item.nodeid in SLOW_TESTS:
            item.add_marker(pytest.mark.full)
    _deselect_the_full_tier(config, items)
    xdist_schedule.plan(config, items, _group, lambda item: item.get_closest_marker("full") is not None)


def _deselect_the_full_tier(config, items):
    if config.getoption("--full") or "full" in (config.option.markexpr or ""):
        return
    files, dirs = _named(config)
    keep, drop = [], []
    for item in items:
        path = Path(str(item.fspath)).resolve()
        asked = path in files or any(d == path or d in path.parents for d in dirs)
        (drop if item.get_closest_marker("full") and not asked else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    config._full_tier_not_run = len(drop)
    if hasattr(config, "workeroutput"):  # a pytest-xdist worker: the count goes to the controller
        config.workeroutput["full_tier_not_run"] = len(drop)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    count = getattr(node, "workeroutput", {}).get("full_tier_not_run", 0)
    node.config._full_tier_not_run = max(node.config._full_tier_not_run, count)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    count = config._full_tier_not_run
    if count and not hasattr(config, "workeroutput"):
        terminalreporter.write_line(f"{count} full-tier tests deselected (the fast tier ran): {FULL_COMMAND} runs them "
                                    "too", yellow=True, bold=True)


@pytest.fixture()
def world(tmp_path):
    """A checkout with a base commit and an archived baseline (tests.support.action_world),
    and a local server playing GitHub: ``(checkout, fake, tmp_path)``."""
    from tests.publishing.github.fake_github import FakeGitHub
    from tests.support.action_world import TOKEN, Checkout

    checkout = Checkout(tmp_path / "repo")
    with FakeGitHub(token=TOKEN) as fake:
        yield checkout, fake, tmp_path


# --------------------------------------------------------------------------- the runner's box
#
# As root, the gate runs a runner command as a uid of its own (gate.runs.box), which reads only
# what every user may read - as on a runner, whose workspace is open to all. pytest makes its
# temporary folders 0700: opened here (the folders on the way and each test's own) so that a
# test's team repository is readable by the box, as a real checkout is. Nothing becomes writable.
def _open_to_the_box(path: Path) -> None:
    for folder in [path, *path.parents]:
        try:
            info = folder.stat()
        except OSError:
            return
        if info.st_uid == os.geteuid() and info.st_mode & 0o005 != 0o005:
            os.chmod(folder, info.st_mode | 0o055)


def _interpreter_open_to_the_box() -> None:
    """The tests' runner commands start this Python (``sys.executable``): a box must be able to
    run it. A Python under /root (pyenv as root) is opened for traversal only (o+x: the box can
    run what it is told the path of, list nothing)."""
    for folder in Path(os.path.realpath(sys.executable)).parents:
        info = folder.stat()
        if info.st_uid == 0 and not info.st_mode & 0o001:
            os.chmod(folder, info.st_mode | 0o001)


def _basetemp_open_to_the_box(config) -> None:
    """As root, the session's temporary folders live in a folder of their own that every user may
    traverse (/tmp/pytest-of-root is 0700, and any other pytest session starting on the machine
    closes it again); xdist's workers make theirs inside it."""
    if os.geteuid() != 0 or config.option.basetemp or hasattr(config, "workerinput"):
        return
    import tempfile

    parent = Path(tempfile.gettempdir())
    made = Path(tempfile.mkdtemp(prefix="retrieval-gate-tests-", dir=parent))
    made.chmod(0o755)
    config.option.basetemp = str(made / "t")
    config._box_basetemp = made


@pytest.fixture(scope="session", autouse=True)
def _temporary_folders_open_to_the_box(tmp_path_factory):
    if os.geteuid() != 0:
        yield
        return
    _interpreter_open_to_the_box()
    make = tmp_path_factory.mktemp

    def mktemp(basename, numbered=True):
        path = make(basename, numbered=numbered)
        _open_to_the_box(path)
        return path

    tmp_path_factory.mktemp = mktemp
    yield
    tmp_path_factory.mktemp = make
