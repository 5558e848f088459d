"""``runner.command`` placeholders: the documented names, bare, and doubled braces; nothing else.

The template was checked with ``str.format``, which also runs format specs, conversions,
attributes and indexes: ``{run:>1000000000}`` built a 1 GB argument (65 s) and
``{config.__class__.__mro__}`` formatted the gate's own objects (issue 35).
"""

from __future__ import annotations

import pytest

from gate.cli import main
from gate.common.errors import InputError
from gate.runs.command import PLACEHOLDERS, CommandRunner

VALUES = {"config": "c.yml", "queries": "my queries.tsv", "corpus": "corpus.jsonl", "run": "out/x.run",
          "repeat": "2", "seed": "1002", "timings": "out/x.timings.jsonl"}


@pytest.mark.parametrize("placeholder, says", [
    ("{run:>1000000000}", "placeholder {run:>1000000000} takes no format spec or conversion: write {run}"),
    ("{run:>99}", "placeholder {run:>99} takes no format spec or conversion: write {run}"),
    ("{seed:x}", "placeholder {seed:x} takes no format spec or conversion: write {seed}"),
    ("{run!r}", "placeholder {run!r} takes no format spec or conversion: write {run}"),
    ("{run:{seed}}", "placeholder {run:{seed}} takes no format spec"),
    ("{config.__class__.__mro__}", "unknown placeholder {config.__class__.__mro__}"),
    ("{config.__class__}", "unknown placeholder {config.__class__}"),
    ("{run[0]}", "unknown placeholder {run[0]}"),
    ("{0}", "unknown placeholder {0}"),
    ("{}", "unknown placeholder {}"),
    ("{Run}", "unknown placeholder {Run}"),
    ("{nope}", "unknown placeholder {nope}"),
    ("{run", "expected '}' before end of string"),
    ("run}", "Single '}' encountered"),
])
@pytest.mark.parametrize("shell", [False, True], ids=["argv", "shell"])
def test_only_the_documented_placeholders_are_accepted(placeholder, says, shell):
    with pytest.raises(InputError) as caught:
        CommandRunner(f"python search.py --q {{queries}} --out {placeholder}", shell=shell,
                      source=".retrieval-gate.yml", line=12)
    error = caught.value
    assert (error.path, error.line) == (".retrieval-gate.yml", 12)
    assert says in error.message and "\n" not in str(error)


def test_the_documented_forms_fill_in_their_values():
    runner = CommandRunner("awk '{{print $1}}' " + " ".join("{" + name + "}" for name in PLACEHOLDERS)
                           + " --literal={{run}} --empty-spec={run:}")
    assert runner.argv(VALUES) == ["awk", "{print $1}", *VALUES.values(), "--literal={run}",
                                   "--empty-spec=out/x.run"]
    shell = CommandRunner("search --q {queries} | sed 's/{{x}}/y/' > {run}", shell=True)
    assert shell.argv(VALUES) == "search --q 'my queries.tsv' | sed 's/{x}/y/' > out/x.run"


def _world(tmp_path, command: str):
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "queries.tsv").write_text("q1\tfirst query\nq2\tsecond query\n")
    (tmp_path / "eval" / "qrels.txt").write_text("q1 0 d1 1\nq2 0 d2 1\n")
    (tmp_path / "retrieval.yml").write_text("bm25:\n  k1: 0.9\n")
    config = tmp_path / ".retrieval-gate.yml"
    config.write_text("golden:\n  queries: eval/queries.tsv\n  qrels: eval/qrels.txt\nretrieval:\n"
                      f"  config: retrieval.yml\nrunner:\n  type: command\n  command: '{command}'\n")
    return config


@pytest.mark.parametrize("placeholder", ["{config.__class__.__mro__}", "{run:>99}"])
def test_the_gate_refuses_the_template_before_running_anything(tmp_path, capsys, placeholder):
    config = _world(tmp_path, f"python -c pass {placeholder}")
    for command in (["run"], ["plan"]):
        assert main([*command, "--config", str(config)]) == 2
        lines = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("[retrieval-gate]")]
        assert len(lines) == 1 and f"{config}:8: " in lines[0] and placeholder in lines[0], lines
    assert not (tmp_path / ".retrieval-gate" / "work" / "runs").exists()


@pytest.mark.parametrize("template", ['search --config "{config}" > {run}', "search --config '{run}'",
                                      'search --q "x {queries} y" > {run}'])
def test_a_quoted_placeholder_in_shell_mode_is_refused(template):
    """With shell: true every value is quoted by the gate: quoted again in the template, a path with
    a space reached the command with the quotes in it (found by the breaker)."""
    with pytest.raises(InputError, match=r"is inside quotes: with runner.shell: true the gate quotes every value"):
        CommandRunner(template, shell=True)


@pytest.mark.parametrize("template", ['search --config {config} > {run}', "awk '{{print $1}}' {queries} > {run}",
                                      'echo "a" {run} "b"'])
def test_bare_placeholders_and_quoted_literals_are_fine_in_shell_mode(template):
    CommandRunner(template, shell=True)


def test_quotes_around_a_placeholder_are_fine_without_a_shell():
    """shlex takes the quotes off before the value goes in: one argument either way."""
    runner = CommandRunner('search --config "{config}" --output {run}')
    assert runner.argv(VALUES) == ["search", "--config", "c.yml", "--output", "out/x.run"]
