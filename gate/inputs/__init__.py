"""Inputs: the config, the yardstick (golden set, base commit), manifests, git, the file readers."""
