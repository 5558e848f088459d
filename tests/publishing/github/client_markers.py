"""Helpers over the fake's comments: which are the gate's, and which are current."""

from __future__ import annotations

from gate.publishing.github.sticky_comment import parse_marker


def current_comments(fake, number: int) -> list[dict]:
    return [c for c in fake.comments(number) if (parse_marker(c["body"]) or None) and
            parse_marker(c["body"]).state == "current"]
