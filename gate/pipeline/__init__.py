"""The gate's verbs (compare, run, archive, plan), each stage called in order."""
