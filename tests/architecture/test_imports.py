"""The import graph of gate/, function-level imports included: no cycle, no import of a shell,
and imports at the top of the module except a short documented list.

An import inside a function hides a dependency from the reader and from the layering test; it
is how the cycles below went unseen. The only lazy imports left are listed in LAZY with what
they save: a dependency that is optional (an extra), or start-up time measured on the commands
that do not need it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GATE = REPO / "gate"
SHELLS = {"gate.cli", "gate.action"}

#: (importing module, imported module or top-level package) -> why the import waits for its first use.
LAZY: dict[tuple[str, str], str] = {
    # The face: `import gate` (every module does, for __version__) must not load numpy and the readers.
    ("gate", "importlib"): "gate.__getattr__ loads a verb on first use: `import gate` stays 0.02 s",
    # The reference runner is the `reference` extra's (scipy, bm25s, faiss): the Action's image and
    # a plain `pip install retrieval-gate` lack it, and every verb imports the stack.
    ("gate.pipeline.stack", "gate.runs.reference"): "optional: the reference extra "
                                                    "(tests/architecture/test_optional_extras.py)",
}

#: Modules whose imports all wait for the command that needs them, and why.
LAZY_MODULES: dict[str, str] = {
    "gate.cli": "each command loads its verb when chosen: `import gate.cli` takes 0.4 s, with every verb "
                "loaded 1.3 s (measured on 2 cores), and --help or a usage error must answer at once",
}

#: Imports of a shell that are not a stage reaching back: (importer, shell) -> why.
SHELL_CALLERS: dict[tuple[str, str], str] = {
    ("gate.__main__", "gate.cli"): "python -m gate runs the CLI",
    ("gate.demo.end_to_end", "gate.action"): "the demo plays GitHub's runner: it starts the Action's shell on the "
                                             "generated PR as the runner would",
}

#: Third-party packages that are optional (the `reference` extra) or measured as slow to import: a
#: module may import them inside the function that needs them, and only these.
LAZY_PACKAGES: dict[str, str] = {
    "scipy": "optional: the reference extra",
    "bm25s": "optional: the reference extra (0.26 s to import)",
    "faiss": "optional: the reference extra",
    "threadpoolctl": "optional: the reference extra",
    "ir_datasets": "0.42 s to import: only irds: inputs need it",
}


@dataclass(frozen=True)
class Import:
    importer: str  # gate.x.y
    imported: str  # the module (gate.x.y.z) or, for a name imported from a package, the package
    line: int
    top: bool  # at module level (including under a module-level if/try)

    def __str__(self) -> str:
        return f"{self.importer}:{self.line} imports {self.imported}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in GATE.rglob("*.py")}


def _module_level(tree: ast.Module) -> set[int]:
    """The ids of the import statements that run at import time: the module's body and the
    bodies of module-level if/try blocks (never a def's or a class's body)."""
    out: set[int] = set()
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.add(id(node))
        elif isinstance(node, ast.If):
            todo.extend(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            todo.extend(node.body + node.orelse + node.finalbody)
            for handler in node.handlers:
                todo.extend(handler.body)
    return out


def imports() -> Iterator[Import]:
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text())
        top = _module_level(tree)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield Import(name, alias.name, node.lineno, id(node) in top)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join(anchor + ([node.module] if node.module else []))
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    yield Import(name, full if full in MODULES else base, node.lineno, id(node) in top)


def _internal(item: Import) -> bool:
    return item.imported == "gate" or item.imported.startswith("gate.")


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(found)


def internal_edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for item in imports():
        if _internal(item) and item.imported in MODULES and item.imported != item.importer:
            edges.setdefault(item.importer, set()).add(item.imported)
    return edges


def test_the_import_graph_has_no_cycle_function_level_imports_included():
    assert _cycles(internal_edges()) == []


def test_a_cycle_is_found_where_there_is_one():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_imports_a_shell():
    offenders = [str(i) for i in imports() if i.imported in SHELLS and (i.importer, i.imported) not in SHELL_CALLERS]
    assert offenders == []


def test_imports_are_at_the_top_of_the_module_but_for_the_documented_lazy_ones():
    lazy = []
    for item in imports():
        if item.top or item.imported == "__future__":
            continue
        if (item.importer, item.imported) in LAZY or item.imported.split(".")[0] in LAZY_PACKAGES:
            continue
        if item.importer in LAZY_MODULES:
            continue
        lazy.append(str(item))
    assert lazy == []


def test_every_documented_lazy_import_is_still_there():
    present = {(i.importer, i.imported) for i in imports() if not i.top}
    assert set(LAZY) - present == set()
