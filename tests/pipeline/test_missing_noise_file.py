"""A ``noise.file`` that is not there: the gate goes on without a band, as documented, and says
so in one warning line, in report.json and on the console (issue 35: it said nothing, so a
misspelt path passed unseen)."""

from __future__ import annotations

import json

from gate.cli import main
from gate.inputs.config import load_config
from gate.pipeline.archive import archive
from tests.support.small_world import small_world


def _run(tmp_path, capsys, extra_config: str) -> tuple[int, dict, str]:
    path = small_world(tmp_path, leak_in_new=False, extra_config=extra_config)
    archive(load_config(path), progress=lambda m: None)
    (tmp_path / "retrieval.yml").write_text("ingestion: {parser: v1}\nboost: 1.5\n")
    out = tmp_path / "out"
    code = main(["run", "--config", str(path), "--out", str(out)])
    return code, json.loads((out / "report.json").read_text()), capsys.readouterr().out


def test_a_missing_noise_file_is_one_warning_in_the_report_and_on_the_console(tmp_path, capsys):
    code, report, printed = _run(tmp_path, capsys, "noise:\n  file: eval/noise-band.json\n")
    assert code in (0, 1, 3)  # a verdict, not an error: the band is optional
    warnings = [w for w in report["warnings"] if "noise.file" in w]
    assert warnings == [f"noise.file eval/noise-band.json is not there ({tmp_path / 'eval' / 'noise-band.json'}): "
                        "judged without a noise band (retrieval-gate noise --out eval/noise-band.json measures one)"]
    assert [line for line in printed.splitlines() if "noise.file" in line] == [f"warning: {warnings[0]}"]


def test_without_noise_file_nothing_is_said_about_it(tmp_path, capsys):
    _, report, printed = _run(tmp_path, capsys, "")
    assert not any("noise.file" in w for w in report.get("warnings") or []) and "noise.file" not in printed
