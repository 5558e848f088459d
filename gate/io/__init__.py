"""Inputs: strict, streaming readers for runs, qrels, queries, BEIR folders and irds: ids."""
