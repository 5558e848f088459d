"""Rendering: the report as Markdown (the PR comment, report.md, the job summary)."""
