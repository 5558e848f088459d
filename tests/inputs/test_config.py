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
         "'comand' is not one of command, run-file, reference, http (did you mean 'command'?)"),
        ("  qrels: eval/qrels-v5.txt\n", "", 2, "missing required key 'golden.qrels'"),
        ("also: [RR@10, R@100, Judged@10]\n", "also: [RR@10, R@100\n", 9, "invalid YAML"),
        # What YAML readers read differently (issue 35): refused, never read the surprising way.
        ("baseline:\n", "policy:\n  max_regression: 0_5\nbaseline:\n", 16,
         "'0_5' reads as the number 5 (YAML drops '_' in a number)"),
        ("  timeout: 3600\n", "  timeout: 1_000\n", 14, "'1_000' reads as the number 1000"),
        ("  rel: 1\n", "  rel: 01\n", 5, "'01' is 1 here but octal to YAML 1.1 readers"),
        ("  timeout: 3600\n", "  timeout: 0o17\n", 14, "octal and binary differ across YAML versions"),
        ("baseline:\n", "policy:\n  max_regression: 0x1\nbaseline:\n", 16,
         "key 'policy.max_regression': '0x1' is a hexadecimal number"),
        ("  timeout: 3600\n", "  timeout: 1:20\n", 14, "the text '1:20' (base 60 to YAML 1.1 readers"),
        ("baseline:\n", "policy:\n  max_regression: .inf\nbaseline:\n", 16, "expected a finite number"),
        ("baseline:\n", "cache:\n  enabled: yes\nbaseline:\n", 16,
         "got the text 'yes' (YAML 1.2 reads yes/no/on/off as text: write true or false)"),
        ("corpus: snapshots/corpus.jsonl\n", "corpus: 2024-01-31\n", 6, "is a date to YAML 1.1 readers"),
        ("metric: nDCG@10\n", "metric: =\n", 7, "'=' is YAML 1.1's value key"),
        ("suite: docs-search\n", "%YAML 1.1\n---\nsuite: docs-search\n", 1, "a %YAML 1.1 directive"),
        ("  timeout: 3600\n", "  timeout: 3600\n  options: {k1: [0.9, .nan]}\n", 15,
         "runner.options.k1[1] is nan: expected a finite number"),
        # A merge key, with or without an alias.
        ("baseline:\n", "policy:\n  <<: {max_regression: 0.5}\nbaseline:\n", 16, "merge key '<<' is not accepted"),
        ("suite: docs-search\n", "<<: {suite: docs-search}\n", 1, "merge key '<<' is not accepted"),
        # An explicit null never means the default.
        ("baseline:\n", "policy:\n  max_regression:\nbaseline:\n", 16,
         "key 'policy.max_regression' has no value (null): give it a value, or remove the key to use the default"),
        ("baseline:\n", "policy:\nbaseline:\n", 15, "key 'policy' has no value (null)"),
        ("metric: nDCG@10\n", "metric: null\n", 7, "key 'metric' has no value (null)"),
        ("also: [RR@10, R@100, Judged@10]\n", "also: ~\n", 8, "key 'also' has no value (null)"),
        ("suite: docs-search\n", "suite:\n", 1, "key 'suite' has no value (null)"),
        # (found by the breaker) numbers where text is meant, read as other text; an empty path
        ("suite: docs-search\n", "suite: .inf\n", 1, "'inf' is a number here: quote it"),
        ("suite: docs-search\n", "suite: 1.10\n", 1, "'1.1' is a number here: quote it"),
        ("suite: docs-search\n", "suite: 0x1A\n", 1, "hexadecimal number"),
        ("corpus: snapshots/corpus.jsonl\n", "corpus: ''\n", 6, "key 'corpus': an empty path"),
        ("  manifest: .retrieval-gate/baseline/manifest.yml\n", "  manifest: ' '\n", 16,
         "key 'baseline.manifest': an empty path"),
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


def _null_configs():
    """Every key of the schema, and every block, written with no value: (dotted key, file text)."""
    from gate.inputs.config import SCHEMA
    from gate.inputs.config_reference import keys

    required = {"golden": {"queries": "q.jsonl", "qrels": "q.txt"}, "retrieval": {"config": "c.yml"}}
    dotted = [*keys(), *(name for name, spec in SCHEMA.items() if isinstance(spec, dict))]
    for key in dotted:
        document = {block: dict(values) for block, values in required.items()}
        *parents, leaf = key.split(".")
        node = document
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = None
        yield key, "".join(_yaml_lines(document, ""))


def _yaml_lines(node, indent):
    for name, value in node.items():
        if isinstance(value, dict):
            yield f"{indent}{name}:\n"
            yield from _yaml_lines(value, indent + "  ")
        else:
            yield f"{indent}{name}: {'~' if value is None else value}\n"


@pytest.mark.parametrize("key, text", list(_null_configs()), ids=lambda v: v if "\n" not in v else "")
def test_no_key_takes_its_default_from_an_explicit_null(tmp_path, key, text):
    """Audit of every key (issue 35): ``key: ~`` is refused at the key's line, whatever its default."""
    with pytest.raises(InputError) as caught:
        load_config(write(tmp_path, text))
    leaf = key.rsplit(".", 1)[-1]
    assert f"key '{key}' has no value (null)" in caught.value.message
    assert caught.value.line is not None and text.split("\n")[caught.value.line - 1].strip() == f"{leaf}: ~"


def test_quoted_text_that_looks_like_a_number_or_a_date_is_text(tmp_path):
    """Quoting is the way out every refusal names."""
    path = write(tmp_path, GOOD.replace("suite: docs-search", "suite: '1_000'").replace(
        "corpus: snapshots/corpus.jsonl", "corpus: \"2024-01-31\""))
    config = load_config(path)
    assert config.suite == "1_000" and config.corpus == "2024-01-31"


# --------------------------------------------------------------------------- policy.latency / policy.cost


_HEAD = "golden: {queries: q.tsv, qrels: qrels.txt}\nretrieval: {config: r.yml}\n"


@pytest.mark.parametrize("written, value, relative, unit", [
    ('"20%"', 0.2, True, ""), ('"15ms"', 15.0, False, "ms"), ('"2.5 ms"', 2.5, False, "ms"), ('"0%"', 0.0, True, ""),
])
def test_a_latency_limit_is_relative_or_absolute(tmp_path, written, value, relative, unit):
    from gate.inputs.config import load_config

    path = tmp_path / ".retrieval-gate.yml"
    path.write_text(_HEAD + f"policy:\n  latency:\n    p95_max_increase: {written}\n")
    limit = load_config(path).policy.latency.p95_max_increase
    assert limit is not None and (limit.value, limit.relative, limit.unit) == (pytest.approx(value), relative, unit)


@pytest.mark.parametrize("written, value, relative", [('"20%"', 0.2, True), ("0.001", 0.001, False), ("2", 2.0, False)])
def test_a_cost_limit_is_relative_or_per_query(tmp_path, written, value, relative):
    from gate.inputs.config import load_config

    path = tmp_path / ".retrieval-gate.yml"
    path.write_text(_HEAD + f"policy:\n  cost:\n    max_increase: {written}\n")
    limit = load_config(path).policy.cost.max_increase
    assert limit is not None and (limit.value, limit.relative) == (pytest.approx(value), relative)


@pytest.mark.parametrize("key, written", [
    ("latency:\n    p95_max_increase", '"20"'), ("latency:\n    p95_max_increase", '"-5%"'),
    ("latency:\n    p95_max_increase", '"fast"'), ("latency:\n    p95_max_increase", "20"),
    ("latency:\n    p95_max_increase", "true"), ("cost:\n    max_increase", '"15ms"'),
    ("cost:\n    max_increase", "-1"), ("cost:\n    max_increase", ".nan"), ("cost:\n    max_increase", '"x%"'),
    # 400 digits are a float's inf: a limit nothing could breach, shown as "+inf%"
    ("latency:\n    p95_max_increase", '"1' + "0" * 400 + '%"'),
    ("latency:\n    p95_max_increase", '"1' + "0" * 400 + 'ms"'),
    ("cost:\n    max_increase", '"1' + "0" * 400 + '%"'),
])
def test_a_bad_limit_is_one_line_naming_the_key(tmp_path, key, written):
    from gate.common.errors import InputError
    from gate.inputs.config import load_config

    path = tmp_path / ".retrieval-gate.yml"
    path.write_text(_HEAD + f"policy:\n  {key}: {written}\n")
    with pytest.raises(InputError) as caught:
        load_config(path)
    assert caught.value.line == 5 and "increase" in caught.value.message and "\n" not in str(caught.value)


def test_without_limits_the_policy_sets_none(tmp_path):
    from gate.inputs.config import load_config

    path = tmp_path / ".retrieval-gate.yml"
    path.write_text("golden: {queries: q.tsv, qrels: qrels.txt}\nretrieval: {config: r.yml}\n")
    policy = load_config(path).policy
    assert policy.latency.p95_max_increase is None and policy.cost.max_increase is None
