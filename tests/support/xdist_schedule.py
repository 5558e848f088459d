"""How ``./run test`` and ``./run test-full`` share the suite out among pytest-xdist workers
(``-n auto --dist loadgroup``; tests/conftest.py wires it in).

Two rules on top of xdist's load balancing, which sends single tests to whichever worker is free:

* tests that read one expensive fixture run on one worker, which builds it once: the tests of a
  module that share a module-scoped fixture, and the tests (of any module) that read one of the
  session fixtures of ``SHARED_FIXTURES`` (tests/conftest.py), such as the demo's world;
* the longest work starts first: the full tier's tests and the groups above go out before the
  single fast tests, so that no slow test is left to run alone at the end.

xdist's own ``loadgroup`` (the ``xdist_group`` mark) no longer groups under pytest 9.2 (it renames
node ids, which pytest now derives from elsewhere), so this replaces its scheduler: each worker
writes its collection's groups to a plan file, which the controller's scheduler reads.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

ENV = "RETRIEVAL_GATE_XDIST_PLAN"


def is_worker(config) -> bool:
    return hasattr(config, "workerinput")


def wanted(config) -> bool:
    """Whether this is an xdist controller that distributes with ``--dist loadgroup``."""
    return not is_worker(config) and (getattr(config.option, "numprocesses", None) or 0) != 0 and \
        getattr(config.option, "dist", "no") == "loadgroup"


def start(config) -> None:
    """Controller, at configure time: the plan file's place, handed to the workers it starts."""
    if wanted(config):
        folder = tempfile.mkdtemp(prefix="retrieval-gate-xdist-")
        os.environ[ENV] = str(Path(folder) / "plan.json")
        config._xdist_plan_folder = folder


def finish(config) -> None:
    folder = getattr(config, "_xdist_plan_folder", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop(ENV, None)


def plan(config, items, group_of, slow) -> None:
    """Worker, after collection and deselection: put the long work first (stable otherwise) and
    write each test's group to the plan file. ``group_of(item)``: a group name or None;
    ``slow(item)``: whether it is a slow (full-tier) test."""
    path = os.environ.get(ENV)
    if not is_worker(config) or not path or config.workerinput.get("workerid") is None:
        return
    groups = {item.nodeid: group_of(item) for item in items}
    weight: dict[str, int] = {}
    for item in items:
        unit = groups[item.nodeid] or item.nodeid
        weight[unit] = max(weight.get(unit, 0), 2 if slow(item) else 1 if groups[item.nodeid] else 0)
    items.sort(key=lambda item: -weight[groups[item.nodeid] or item.nodeid])
    data = json.dumps({nodeid: group for nodeid, group in groups.items() if group}, sort_keys=True)
    temporary = f"{path}.{config.workerinput['workerid']}"
    Path(temporary).write_text(data, encoding="utf-8")
    os.replace(temporary, path)  # every worker writes the same plan: whichever lands last is it


def scheduler(config, log):
    """The controller's scheduler: xdist's LoadScopeScheduling whose units are the plan's groups
    (a test of no group is a unit of its own), in collection order."""
    from xdist.scheduler import LoadScopeScheduling

    class PlannedScheduling(LoadScopeScheduling):
        def __init__(self, config, log=None):
            super().__init__(config, log)
            config.option.loadscopereorder = False  # the workers ordered the collection already
            self._groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self._groups is None:
                try:
                    self._groups = json.loads(Path(os.environ[ENV]).read_text(encoding="utf-8"))
                except (KeyError, OSError, ValueError):
                    self._groups = {}  # no plan: every test on its own, as --dist load
            group = self._groups.get(nodeid)
            return f"group:{group}" if group else nodeid

    return PlannedScheduling(config, log)
