"""The docs' "How the code is laid out" (docs/code-layout.md) matches gate/ module for module, and
no stage imports a later one."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GATE = REPO / "gate"
STAGES = ["common", "inputs", "runs", "evaluation", "checks", "statistics", "verdict", "report", "rendering",
          "publishing", "pipeline"]


def _documented_tree() -> dict[str, set[str]]:
    text = (REPO / "docs" / "code-layout.md").read_text()
    block = re.search(r"<!-- layout: .*? -->\n```text\n(.*?)```", text, re.S).group(1)
    folders: dict[str, set[str]] = {}
    stack: list[tuple[int, str]] = []
    for line in block.splitlines()[1:]:
        indent = len(line) - len(line.lstrip())
        words = line.split()
        if not words:
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        parent = "/".join(name for _, name in stack)
        if words[0].endswith("/"):
            folder = words[0].rstrip("/")
            stack.append((indent, folder))
            folders.setdefault("/".join(n for _, n in stack), set())
            folders.setdefault(parent, set()).add(folder + "/")
            continue
        names = [w for w in words if re.fullmatch(r"[\w.]+\.(py|json)", w)]
        if names and len(names) == len(words[: len(names)]):
            folders.setdefault(parent, set()).update(names)
    return folders


def _real_tree() -> dict[str, set[str]]:
    folders: dict[str, set[str]] = {}
    for path in sorted(GATE.rglob("*")):
        if "__pycache__" in path.parts or path.parent.name == "templates":
            continue
        rel = path.relative_to(GATE)
        parent = str(rel.parent) if str(rel.parent) != "." else ""
        if path.is_dir():
            folders.setdefault(str(rel), set())
            folders.setdefault(parent, set()).add(path.name + "/")
        elif path.suffix in (".py", ".json") and not (path.name == "__init__.py" and parent):
            folders.setdefault(parent, set()).add(path.name)
    return folders


def test_the_documented_tree_is_the_tree():
    assert _documented_tree() == _real_tree()


def test_gate_top_level_holds_only_the_face_and_the_two_shells():
    top = {p.name for p in GATE.iterdir() if p.suffix == ".py"}
    assert top == {"__init__.py", "__main__.py", "cli.py", "action.py"}


#: The commands: one module in gate/pipeline per verb, named after it (a verb may share its name
#: with the stage module it drives: gate.pipeline.noise measures what gate.statistics.noise defines).
VERBS = {"archive", "replay", "plan", "run", "compare", "noise", "calibrate", "sweep", "factorial", "leakcheck", "lift",
         "history"}


def test_no_two_modules_share_a_name_but_a_verb_and_the_stage_module_it_drives():
    names: dict[str, list[str]] = {}
    for path in GATE.rglob("*.py"):
        if path.name not in ("__init__.py", "__main__.py"):
            names.setdefault(path.name, []).append(str(path.relative_to(GATE)))
    shared = {n: p for n, p in names.items() if len(p) > 1}
    assert {n: p for n, p in shared.items()
            if not (n[:-3] in VERBS and len(p) == 2 and f"pipeline/{n}" in p)} == {}


def test_every_command_is_a_verb_module_of_the_pipeline():
    from gate.cli import build_parser

    parser = build_parser()
    commands = set(next(a for a in parser._actions if a.dest == "command").choices)
    assert VERBS <= commands
    assert {name for name in VERBS if not (GATE / "pipeline" / f"{name}.py").is_file()} == set()


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return {m for m in out if m.startswith("gate.")}


def test_no_stage_imports_a_later_stage():
    later_imports = []
    for i, stage in enumerate(STAGES):
        for path in (GATE / stage).rglob("*.py"):
            for module in _imports(path):
                other = module.split(".")[1]
                if other in STAGES and STAGES.index(other) > i:
                    later_imports.append(f"{path.relative_to(REPO)} imports {module}")
    assert later_imports == []


def test_the_config_is_read_through_typed_fields_only():
    from gate.inputs.config import Config

    assert "raw" not in {f.name for f in __import__("dataclasses").fields(Config)}
    offenders = [str(p.relative_to(REPO)) for p in GATE.rglob("*.py") if ".raw[" in p.read_text()]
    assert offenders == []


def test_the_renderers_take_the_typed_report_not_a_dict():
    import pytest

    from gate.rendering import comment

    for render in (comment.render_comment, comment.render_summary, comment.comment_sections, comment.headline):
        with pytest.raises(TypeError, match="gate.report.spine.Report, not a dict"):
            render({"schema_version": "1.3"})
