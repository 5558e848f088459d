"""What a verb returns: the typed report with its verdict (or a grid's report), which writes and
renders itself."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate import __version__
from gate.checks.judged_share import write_unjudged
from gate.common.atomic import write_text_atomic
from gate.inputs.fingerprint import file_sha256
from gate.pipeline.judgments import EXPORT_FILES, UnjudgedExport, write_unjudged_exports
from gate.rendering.comment import render_comment
from gate.rendering.jinja import render
from gate.rendering.markdown_cut import COMMENT_LIMIT
from gate.report.document import SCHEMA_VERSION, check_own_report, report_json
from gate.report.spine import Report
from gate.verdict.rules import Verdict


@dataclass(frozen=True)
class Result:
    """A verb's outcome (``gate.compare``, ``gate.run``), as ranx's ``Report`` is: it renders
    itself (:meth:`to_json`, :meth:`to_markdown`) and writes itself (:meth:`write`).

    ``report`` is the typed report (:class:`gate.report.spine.Report`), already held to the
    schema; ``to_dict()`` happens here, once, where report.json is written."""

    report: Report
    verdict: Verdict
    template: str  # the Markdown template of report.md (report.md.j2 for compare, run.md.j2 for run)
    unjudged_rows: Sequence[Any] | None = None  # run: the candidate's unjudged top-k documents
    # run: the command that reproduces it, quoted in the PR comment; a Result with one also
    # writes comment.md, the exact comment the Action would post
    reproduce_command: str | None = None
    # run with judged.export: the unjudged documents also as a labelling tool's files
    unjudged_export: UnjudgedExport | None = None

    def to_json(self) -> str:
        """report.json's text (made once: ``compare`` writes it and may print it too)."""
        text = self.__dict__.get("_json")
        if text is None:
            text = report_json(self.report.to_dict())
            object.__setattr__(self, "_json", text)  # a cache, not state: the report is frozen
        return text

    def to_markdown(self) -> str:
        return render(self.template, report=self.report)

    def to_comment(self) -> str:
        """The PR comment the Action would post for this report (without its hidden marker line)."""

        return render_comment(self.report, reproduce_command=self.reproduce_command, limit=COMMENT_LIMIT - 200)

    def write(self, folder: str | Path) -> list[Path]:
        """report.json and report.md (and, after a run, comment.md and unjudged.tsv) into
        ``folder``, atomically."""
        out = Path(folder)
        written = [out / "report.json", out / "report.md"]
        write_text_atomic(written[0], self.to_json())
        write_text_atomic(written[1], self.to_markdown())
        if self.reproduce_command is not None:
            written.append(out / "comment.md")
            write_text_atomic(written[-1], self.to_comment())
        if self.unjudged_rows is not None:

            written.append(out / "unjudged.tsv")
            write_unjudged(written[-1], self.unjudged_rows)
            if self.unjudged_export is not None:
                written += write_unjudged_exports(out, self.unjudged_rows, self.unjudged_export)
        elif self.reproduce_command is not None:
            # A run without a judged-share check: an earlier run's lists would read as this one's.
            for name in ("unjudged.tsv", *EXPORT_FILES.values()):
                (out / name).unlink(missing_ok=True)
        return written


@dataclass(frozen=True)
class GridReport:
    """What ``factorial`` and ``sweep`` return: their section, the report that holds it (checked
    against the schema when made) and its Markdown."""

    command: str  # factorial | sweep
    metric: str
    section: str  # the report's key for data: attribution | sweep
    data: dict[str, Any]
    inputs: dict[str, Any]
    markdown: str

    def __post_init__(self) -> None:
        check_own_report(self.to_dict())

    def to_dict(self) -> dict[str, Any]:
        return {"schema_version": SCHEMA_VERSION, "command": self.command, "metric": self.metric,
                self.section: self.data, "inputs": self.inputs,
                "tool": {"name": "retrieval-gate", "version": __version__}}

    def write(self, folder: str | Path) -> list[Path]:
        """report.json and report.md into ``folder``, atomically."""
        written = [Path(folder) / "report.json", Path(folder) / "report.md"]
        write_text_atomic(written[0], report_json(self.to_dict()))
        write_text_atomic(written[1], self.markdown)
        return written


def file_inputs(named: dict[str, str]) -> dict[str, dict[str, Any]]:
    """A grid report's inputs: each named file with its sha256 (cells are counted in rows)."""
    return {name: {"path": path, "sha256": file_sha256(path) if Path(path).is_file() else "", "canonical": False}
            | ({"unit": "rows"} if name.startswith("cell ") else {}) for name, path in named.items()}
