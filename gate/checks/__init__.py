"""Checks on the golden queries themselves (e.g. leakage of query text into the corpus)."""
