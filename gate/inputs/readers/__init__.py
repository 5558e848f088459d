"""Strict streaming readers: runs, qrels, queries, BEIR folders, irds: ids."""
