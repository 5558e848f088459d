"""Runners produce ranked lists for a retrieval config: a command, precomputed files, or
the demo's reference retriever; results are cached by fingerprint."""
