"""retrieval-gate: decide whether a retrieval change really moved retrieval quality.

The library's face, the verbs behind the commands::

    import gate

    result = gate.compare("base.run", "cand.run", "qrels.txt", queries="queries.jsonl")
    result.verdict.kind, result.report.delta.mean     # typed: gate.report.spine.Report
    result.write("out/")                               # report.json and report.md

    result = gate.run(".retrieval-gate.yml", base="origin/main")

Each returns a :class:`gate.pipeline.result.Result`. The stages are packages of their own
(``gate.inputs`` -> ``gate.runs`` -> ``gate.evaluation`` -> ``gate.checks`` ->
``gate.statistics`` -> ``gate.verdict`` -> ``gate.report`` -> ``gate.rendering`` ->
``gate.publishing``; ``gate.pipeline`` calls them in order); ``gate.cli`` and
``gate.action`` are the two shells.
"""

from typing import Any

__version__ = "0.1.0"

__all__ = ["__version__", "compare", "run", "CompareSettings", "Result"]

# The verbs load numpy, the readers and the statistics: on first use, not on `import gate`
# (every module imports gate for __version__).
_VERBS = {
    "compare": ("gate.pipeline.compare", "compare_files"),
    "run": ("gate.pipeline.pull_request", "run"),
    "CompareSettings": ("gate.pipeline.compare", "CompareSettings"),
    "Result": ("gate.pipeline.result", "Result"),
}


def __getattr__(name: str) -> Any:
    if name in _VERBS:
        import importlib

        module, attribute = _VERBS[name]
        return getattr(importlib.import_module(module), attribute)
    raise AttributeError(f"module 'gate' has no attribute {name!r}")
