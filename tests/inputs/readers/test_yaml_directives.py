"""A %YAML directive of any version but 1.2 is one line naming the file and line, exit 2: ruamel's
scanner asserts on 1.0 and 1.3 (an AssertionError, exit 4, before this was caught)."""

from __future__ import annotations

import pytest

from gate.cli import main
from gate.common.errors import InputError
from gate.inputs.readers.yaml_source import load_yaml


@pytest.mark.parametrize("version", ["1.0", "1.1", "1.3"])
def test_a_directive_of_another_version_is_refused_at_its_line(version):
    with pytest.raises(InputError, match=r"^y\.yml:2: a %YAML .*directive.*YAML 1\.2"):
        load_yaml(f"# a comment\n%YAML {version}\n---\nsuite: x\n", "y.yml")


def test_version_1_2_is_read():
    assert load_yaml("%YAML 1.2\n---\nsuite: x\n", "y.yml")["suite"] == "x"


def test_the_cli_says_it_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gate.yml").write_text("%YAML 1.3\n---\nsuite: x\n")
    assert main(["plan", "--config", "gate.yml"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "gate.yml:1: a %YAML directive" in err[0], err
