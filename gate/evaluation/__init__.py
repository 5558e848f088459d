"""Evaluation: trec_eval-compatible measures, per query, aligned on one query list."""
