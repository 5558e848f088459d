"""`.retrieval-gate.yml`: strict keys with file:line errors, defaults, relative paths."""

from __future__ import annotations

import pytest

from gate.cli import main
from gate.common.errors import InputError
from gate.inputs.config import load_config

GOOD = """\
suite: docs-search
golden:
  queries: eval/golden-v5.jsonl
  qrels: eval/qrels-v5.txt
  rel: 1
corpus: snapshots/corpus.jsonl
metric: nDCG@10
also: [RR@10, R@100, Judged@10]
retrieval:
  config: retrieval/config.yml
runner:
  type: command
  command: "python -m search.eval --config {config} --queries {queries} --corpus {corpus} --output {run}"
  timeout: 3600
baseline:
  manifest: .retrieval-gate/baseline/manifest.yml
"""


def write(tmp_path, text):
    path = tmp_path / ".retrieval-gate.yml"
    path.write_text(text)
    return path


def test_the_documented_example_loads_with_paths_relative_to_the_config(tmp_path):
    config = load_config(write(tmp_path, GOOD))
    assert config.suite == "docs-search"
    assert config.golden.rel == 1 and config.metric == "nDCG@10"
    assert config.also == ("RR@10", "R@100", "Judged@10")
    assert config.resolve(config.golden.qrels) == tmp_path / "eval" / "qrels-v5.txt"
    assert config.runner.timeout == 3600.0
    assert config.statistics.samples == 10_000 and config.statistics.seed == 7
    assert config.spec("irds:vaswani") == "irds:vaswani"


@pytest.mark.parametrize(
    "old, new, line, message",
    [
        ("  rel: 1\n", "  rell: 1\n", 5, "unknown key 'golden.rell' (did you mean 'golden.rel'?)"),
        ("metric: nDCG@10\n", "metrc: nDCG@10\n", 7, "unknown key 'metrc' (did you mean 'metric'?)"),
        ("  rel: 1\n", "  rel: high\n", 5, "key 'golden.rel': expected an integer, got the text 'high'"),
        ("  timeout: 3600\n", "  timeout: [1]\n", 14, "key 'runner.timeout': expected a number, got a list"),
        ("  type: command\n", "  type: comand\n", 12,
         "'comand' is not one of command, run-file, reference (did you mean 'command'?)"),
        ("  qrels: eval/qrels-v5.txt\n", "", 2, "missing required key 'golden.qrels'"),
        ("also: [RR@10, R@100, Judged@10]\n", "also: [RR@10, R@100\n", 9, "invalid YAML"),
    ],
)
def test_a_broken_config_is_one_line_with_file_line_and_key(tmp_path, capsys, old, new, line, message):
    path = write(tmp_path, GOOD.replace(old, new))
    with pytest.raises(InputError) as caught:
        load_config(path)
    assert caught.value.line == line, str(caught.value)
    assert message in str(caught.value)
    assert main(["run", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}:{line}: " in err and message in err


def test_a_missing_config_file_is_exit_2(tmp_path, capsys):
    assert main(["run", "--config", str(tmp_path / "nope.yml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope.yml: no such file" in err


def test_an_unknown_metric_names_the_config(tmp_path, capsys):
    path = write(tmp_path, GOOD.replace("metric: nDCG@10", "metric: nDGC@10"))
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "golden-v5.jsonl").write_text('{"query_id": "1", "text": "a b c"}\n')
    (tmp_path / "eval" / "qrels-v5.txt").write_text("1 0 d1 1\n")
    assert main(["run", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "nDGC@10" in err and err.count("\n") == 1
