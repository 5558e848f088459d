"""The `reference` extra (scipy, bm25s, faiss, threadpoolctl) is optional: the Action's image and a
plain `pip install retrieval-gate` do not have it. Every module but the reference runner and the
demo that drives it must import without it (a top-level `import scipy` reached from the Action's
entrypoint once made every container job fail before it said a word)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXTRA = ("scipy", "bm25s", "faiss", "threadpoolctl")
NEEDS_EXTRA = ("gate.runs.reference", "gate.runs.reference_main", "gate.demo.")

_PROBE = """
import importlib, importlib.abc, sys
EXTRA = {extra!r}

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in EXTRA:
            raise ModuleNotFoundError(f"No module named {{name!r}} (the reference extra is not installed)")
        return None

sys.meta_path.insert(0, Refuse())
failed = []
for name in {modules!r}:
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as error:
        failed.append(f"{{name}}: {{error}}")
print("\\n".join(failed))
"""


def _modules() -> list[str]:
    out = []
    for path in sorted((REPO / "gate").rglob("*.py")):
        rel = path.relative_to(REPO).with_suffix("")
        name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        if name != "gate.__main__" and not name.startswith(NEEDS_EXTRA):  # __main__ runs the CLI
            out.append(name)
    return out


def test_every_module_but_the_reference_runner_imports_without_the_extra():
    modules = _modules()
    assert "gate.action" in modules and "gate.pipeline.run" in modules
    probe = subprocess.run([sys.executable, "-c", _PROBE.format(extra=EXTRA, modules=modules)], cwd=REPO,
                           capture_output=True, text=True, check=True)
    assert probe.stdout.strip() == ""


def test_the_probe_sees_a_module_that_needs_the_extra():
    probe = subprocess.run([sys.executable, "-c", _PROBE.format(extra=EXTRA, modules=["gate.runs.reference"])],
                           cwd=REPO, capture_output=True, text=True, check=True)
    assert "scipy" in probe.stdout
