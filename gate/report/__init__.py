"""The report: what the statistics, the checks, the verdict established, written once as report.json."""
