"""Checks: what can make a comparison invalid (incommensurable inputs, leaks, tuning, unjudged documents)."""
