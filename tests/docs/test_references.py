"""What users read about the commands and the config cannot drift from what the code does.

The docs site's command reference (docs/commands.md) and config table (docs/configuration.md)
are generated (tools.command_reference, with gate.inputs.config_reference); these tests
fail when an option or a config key lacks documentation, when a page holds anything but the
generated text, and when the environment a command or the Action reads is not the environment
the docs (docs/action.md) and ``--help`` list. The example outputs the docs show are run again.
"""

from __future__ import annotations

import argparse
import inspect
import re
from pathlib import Path

import pytest

from gate import cli
from gate.common.generated import replaced, section
from gate.inputs import config_reference
from tools.command_reference import END, PAGES, START, reference, undocumented, write

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def page(name: str) -> str:
    """A page of the docs site (docs/NAME), as written."""
    return (DOCS / name).read_text(encoding="utf-8")


COMMANDS = page("commands.md")  # the generated command reference
CONFIGURATION = page("configuration.md")  # the generated config table
WRITE = "run: python tools/command_reference.py --write"


def test_every_option_of_every_command_has_help_that_gives_its_default():
    assert undocumented(cli.build_parser()) == []


def test_the_check_finds_an_option_without_help_or_without_its_default():
    """The check above can fail: a bare option, and one whose help leaves its default unsaid."""
    parser = argparse.ArgumentParser(prog="x")
    sub = parser.add_subparsers()
    p = sub.add_parser("cmd", help="a command")
    p.add_argument("--bare", default="a")
    p.add_argument("--silent", default=3, help="a number")
    p.add_argument("--said", default=3, help="a number (default 3)")
    p.add_argument("--needed", required=True, help="a file")
    p.add_argument("--flag", action="store_true", help="a switch")
    assert undocumented(parser) == ["cmd --bare: no help text", "cmd --silent: the help does not say the default"]


def test_the_docs_command_reference_is_the_one_the_parser_generates():
    assert section(COMMANDS, START, END) == reference(cli.build_parser()).rstrip("\n"), WRITE


def test_the_command_reference_names_every_option_of_every_command():
    text = reference(cli.build_parser())
    for name, sub in cli.build_parser()._subparsers._group_actions[0].choices.items():
        assert f"#### `retrieval-gate {name}`" in text
        for action in sub._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}`" in text.split(f"#### `retrieval-gate {name}`")[1].split("####")[0], option


def test_every_config_key_has_a_description_and_every_description_a_key():
    keys = set(config_reference.keys())
    described = set(config_reference.DESCRIPTIONS)
    assert keys - described == set(), "keys without a description"
    assert described - keys == set(), "descriptions of keys the schema does not have"
    assert all(text.strip() for text in config_reference.DESCRIPTIONS.values())


def test_the_docs_config_table_is_the_one_the_schema_generates():
    assert section(CONFIGURATION, config_reference.START, config_reference.END) == \
        config_reference.table().rstrip("\n"), WRITE


def test_write_with_no_page_named_updates_the_pages_that_hold_the_generated_sections():
    """``--write`` alone writes docs/commands.md and docs/configuration.md: each holds its markers."""
    assert PAGES == ("docs/commands.md", "docs/configuration.md")
    assert section(COMMANDS, START, END) is not None
    assert section(CONFIGURATION, config_reference.START, config_reference.END) is not None


def test_write_puts_each_section_where_its_markers_are_and_refuses_a_section_no_page_holds(tmp_path):
    one, two = tmp_path / "one.md", tmp_path / "two.md"
    one.write_text("a\nS1\nold\nE1\nb\n")
    two.write_text("c\nS2\nold\nE2\n")
    assert write([one, two], [("S1\nnew\nE1\n", "S1", "E1"), ("S2\nnew\nE2\n", "S2", "E2")]) == [one, two]
    assert one.read_text() == "a\nS1\nnew\nE1\nb\n" and two.read_text() == "c\nS2\nnew\nE2\n"
    assert write([one, two], [("S1\nnew\nE1\n", "S1", "E1")]) == []  # nothing changed, nothing written
    with pytest.raises(ValueError, match="S3"):
        write([one, two], [("S1\nnewer\nE1\n", "S1", "E1"), ("S3\nx\nE3\n", "S3", "E3")])
    assert one.read_text() == "a\nS1\nnew\nE1\nb\n"  # a refused write writes nothing


def test_the_reference_escapes_angle_brackets_outside_code_spans():
    from tools.command_reference import _cell

    assert _cell("a BEIR folder or irds:<id>") == "a BEIR folder or irds:&lt;id&gt;"
    assert _cell("`irds:<id>` or a|b") == "`irds:<id>` or a\\|b"


def test_the_config_table_gives_each_key_its_schema_default():
    rows = {line.split("|")[1].strip().strip("`"): line.split("|")[2].strip()
            for line in config_reference.table().splitlines() if line.startswith("| `")}
    assert set(rows) == set(config_reference.keys())
    assert rows["statistics.samples"] == "`10000`" and rows["golden.queries"] == "required"
    assert rows["runner.timeout"] == "`3600`" and rows["policy.max_unjudged"] == "`0.3`"
    assert rows["cache.enabled"] == "`true`" and rows["corpus"] == "unset"


@pytest.mark.parametrize("placeholder", ["config", "queries", "corpus", "run", "repeat", "seed", "timings"])
def test_every_runner_placeholder_is_documented(placeholder):
    from gate.runs.command import PLACEHOLDERS

    assert placeholder in PLACEHOLDERS
    assert re.search(r"^\| `\{" + placeholder + r"\}` \| \S", page("runners.md"), re.M), placeholder
    assert set(PLACEHOLDERS) == {"config", "queries", "corpus", "run", "repeat", "seed", "timings"}


def _environment_names(source: str) -> set[str]:
    return set(re.findall(r"\"((?:GITHUB|INPUT|ACTIONS)_[A-Z_]+)\"", source))


def test_comment_help_lists_every_environment_variable_it_reads():
    read = _environment_names(inspect.getsource(cli._cmd_comment))
    assert read == {"GITHUB_TOKEN", "INPUT_TOKEN", "GITHUB_REPOSITORY", "GITHUB_API_URL"}
    epilog = cli.build_parser()._subparsers._group_actions[0].choices["comment"].epilog
    assert all(name in epilog for name in read)


def test_the_docs_list_every_environment_variable_the_action_reads_or_removes():
    paragraph = page("action.md").split("Environment the Action reads")[1].split("\n\n")[0]
    for path in ("gate/action.py", "gate/runs/isolation.py", "entrypoint.py"):
        for name in _environment_names((REPO / path).read_text(encoding="utf-8")):
            assert f"`{name}`" in paragraph, f"{name} ({path})"


def test_replaced_keeps_everything_around_the_section():
    text = "a\nSTART\nold\nEND\nb\n"
    assert replaced(text, "START\nnew\nEND\n", "START", "END") == "a\nSTART\nnew\nEND\nb\n"
    with pytest.raises(ValueError):
        replaced("no markers", "x", "START", "END")


def test_the_docs_compare_example_is_what_compare_prints_on_trec_dl_2019(capsys):
    """The example output in docs/compare.md, run again on the real files it names."""
    from tests.shared_data import REALDATA, need

    folder = need(REALDATA / "runs" / "trec-dl-2019-passage")
    block = page("compare.md").split("$ retrieval-gate compare --baseline input.bm25base_p.gz", 1)[1].split("```", 1)[0]
    shown = [line for line in block.splitlines()[2:] if line.strip()]  # after the command's two lines
    assert cli.main(["compare", "--baseline", str(folder / "official_nist" / "input.bm25base_p.gz"),
                     "--candidate", str(folder / "official_nist" / "input.p_bert.gz"),
                     "--qrels", str(folder / "qrels" / "qrels.dl19-passage.txt"), "--samples", "10000"]) == 0
    assert capsys.readouterr().out.splitlines() == shown


def test_the_docs_sweep_example_is_what_sweep_prints_on_trec_dl_2019(capsys, monkeypatch):
    """The example output in docs/sweep.md, run again on the real files it names."""
    from tests.shared_data import REALDATA, need

    folder = need(REALDATA / "runs" / "trec-dl-2019-passage")
    command = "$ retrieval-gate sweep --cell base=input.bm25base_p.gz"
    block = page("sweep.md").split(command, 1)[1].split("\n...\n", 1)[0]
    shown = block.splitlines()[3:]  # after the command's three lines
    monkeypatch.chdir(folder / "official_nist")
    cells = [f"{name}=input.{run}.gz" for name, run in (("base", "bm25base_p"), ("base+rm3", "bm25base_rm3_p"),
                                                        ("tuned", "bm25tuned_p"), ("tuned+rm3", "bm25tuned_rm3_p"))]
    assert cli.main(["sweep", *sum((["--cell", c] for c in cells), []),
                     "--qrels", str(folder / "qrels" / "qrels.dl19-passage.txt"),
                     "--queries", str(folder / "topics" / "topics.dl19-passage.txt"), "--reference", "base"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[:len(shown)] == shown
