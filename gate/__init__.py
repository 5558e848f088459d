"""retrieval-gate: decide whether a retrieval change really moved retrieval quality."""

__version__ = "0.1.0"
