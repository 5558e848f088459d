"""What every config command checks first (gate.pipeline.stack.check_config), each at file:line + key.

`plan`, `run`, `archive`, `replay` and `noise` call the same check, so a config one refuses
is refused by all of them, with the same line.
"""

from __future__ import annotations

import pytest

from gate.cli import main

GOOD = """\
suite: docs
golden:
  queries: eval/queries.tsv
  qrels: eval/qrels.txt
metric: nDCG@10
also: [RR@10]
retrieval:
  config: retrieval/config.yml
runner:
  type: run-file
"""


@pytest.fixture()
def repo(tmp_path):
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "queries.tsv").write_text("q1\tred apples\nq2\tgreen pears\n")
    (tmp_path / "eval" / "qrels.txt").write_text("q1 0 d1 1\nq2 0 d2 1\n")
    (tmp_path / "retrieval").mkdir()
    (tmp_path / "retrieval" / "config.yml").write_text("bm25:\n  k1: 0.9\nmodel: small\n")
    return tmp_path


def _config(repo, extra: str = "", replace: tuple[str, str] | None = None):
    text = GOOD if replace is None else GOOD.replace(*replace)
    path = repo / ".retrieval-gate.yml"
    path.write_text(text + extra)
    return path


@pytest.mark.parametrize("extra, replace, line, message", [
    ("", ("  qrels: eval/qrels.txt", "  qrels: eval/none.txt"), 4,
     "key 'golden.qrels': no such file 'eval/none.txt'"),
    ("", ("metric: nDCG@10", "metric: nDGC@10"), 5, "key 'metric': unknown measure 'nDGC@10'"),
    ("", ("also: [RR@10]", "also: [RR@0]"), 6, "key 'also': measure RR: cutoff must be a positive integer"),
    ("", ("metric: nDCG@10", "metric: nDCG@99999999999999999999"), 5,
     "key 'metric': measure nDCG: cutoff 99999999999999999999 is above the largest supported, 100,000"),
    ("policy:\n  max_regression: .nan\n", None, 12, "key 'policy.max_regression': expected a finite number, got nan"),
    ("policy:\n  max_unjudged: -0.1\n", None, 12,
     "key 'policy.max_unjudged': expected a value at least 0 and at most 1"),
    ("statistics:\n  seed: -1\n", None, 12, "key 'statistics.seed': expected a value at least 0"),
    ("attribution:\n  factors:\n    '': [bm25]\n", None, 12,
     "key 'attribution.factors': factor name '' must be non-empty"),
    ("attribution:\n  factors:\n    a: [bm25]\n    b: [bm25.k1, model]\n", None, 12,
     "key 'attribution.factors': 'bm25.k1' (factor 'b') overlaps 'bm25' (factor 'a'): a path belongs to one factor"),
    ("attribution:\n  factors:\n    a×b: [bm25]\n", None, 12, "factor name 'a×b' must be non-empty, without spaces"),
    ("prompts: ['/etc/*.txt']\n", None, 11, "key 'prompts': '/etc/*.txt': an absolute path can never match"),
    ("watch: ['../other/**']\n", None, 11, "key 'watch': '../other/**': '..' goes above the repository's top"),
    ("  inputs: [search/**, /abs/*.py]\n", None, 11, "key 'runner.inputs': '/abs/*.py': an absolute path"),
    ("environment: ['requirements*.txt']\n", None, 11, "key 'environment': 'requirements*.txt': name a file"),
    ("suite2: x\n", None, 11, "unknown key 'suite2'"),
    ("base: &b {x: 1}\n", None, 11, "YAML anchor '&b' is not accepted"),
])
@pytest.mark.parametrize("command", ["plan", "run", "archive", "replay"])
def test_every_config_command_refuses_the_same_config_at_the_same_line(repo, capsys, command, extra, replace,
                                                                      line, message):
    path = _config(repo, extra, replace)
    assert main([command, "--config", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"retrieval-gate: error: {path}:{line}: ") and message in err[0], err[0]


def test_noise_repeats_checks_the_config_first(repo, capsys):
    path = _config(repo, "", ("  qrels: eval/qrels.txt", "  qrels: eval/none.txt"))
    assert main(["noise", "--config", str(path), "--repeats", "2"]) == 2
    assert f"{path}:4: key 'golden.qrels': no such file" in capsys.readouterr().err


def test_a_declared_factor_named_like_an_unclaimed_change_is_refused(repo, tmp_path, capsys):
    from gate.common.errors import InputError
    from gate.inputs.config import load_config
    from gate.inputs.retrieval_config import config_diff, parse_retrieval_config
    from gate.pipeline.attribute import grid_factors

    path = _config(repo, "attribution:\n  factors:\n    bm25: [model]\n")
    config = load_config(path)
    old = parse_retrieval_config("bm25:\n  k1: 0.9\nmodel: small\n", "old")
    new = parse_retrieval_config("bm25:\n  k1: 1.2\nmodel: large\n", "new")
    with pytest.raises(InputError) as caught:
        grid_factors(config, config_diff(old, new))
    assert caught.value.line == 12
    assert "the change to 'bm25.k1' is in no declared factor, and its group 'bm25' is the name of one" \
        in str(caught.value)
