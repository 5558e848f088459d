"""The terminal's few lines about a comparison (``retrieval-gate compare`` without ``--format json``)."""

from __future__ import annotations

from gate.report.spine import Report


def _fmt(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def summary_lines(report: Report) -> list[str]:
    """The primary measure's means, delta, interval and tests, the query bookkeeping, every
    other measure: a short plain-text summary of a compare report."""
    delta = report.delta
    lines = [
        f"{report.metric}: baseline {_fmt(report.baseline.mean)} -> candidate {_fmt(report.candidate.mean)}"
        f" on {report.query_count} queries",
        f"delta {_fmt(delta.mean, signed=True)}  95% CI [{_fmt(delta.ci_low, signed=True)},"
        f" {_fmt(delta.ci_high, signed=True)}] ({delta.method} bootstrap, B={delta.samples}, seed={delta.seed})",
        f"p(delta<=0)={_fmt(delta.p_le_zero)}  sign-flip p={_fmt(delta.p_randomization)}"
        f" ({delta.randomization})  wins/losses/ties {delta.wins}/{delta.losses}/{delta.ties}"
        f"  MDE {'not estimable' if delta.mde is None else _fmt(delta.mde)}",
    ]
    queries = report.queries
    notes = []
    for ids, label in (
        (queries.missing_in_baseline, "missing in baseline (scored 0)"),
        (queries.missing_in_candidate, "missing in candidate (scored 0)"),
        (queries.extra, "in runs but not judged (ignored)"),
        (queries.unjudged, "golden queries without qrels (left out)"),
    ):
        if ids:
            notes.append(f"{len(ids)} {label}")
    if notes:
        lines.append("queries: " + "; ".join(notes))
    for name, m in report.measures.items():
        if name != report.metric:
            lines.append(f"  {name:<16} {_fmt(m.baseline)} -> {_fmt(m.candidate)} ({_fmt(m.delta, signed=True)})")
    return lines
