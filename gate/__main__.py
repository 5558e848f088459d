"""``python -m gate`` is the same as the ``retrieval-gate`` command."""

from gate.cli import entry

entry()
