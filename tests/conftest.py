import sys
from pathlib import Path

# Tests import the package from the working tree even when it is not installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import os

# A report the gate writes that its own schema (the fork comment job's check) refuses is a bug:
# in the suite it fails the test that made it (subprocesses inherit this), not only a warning.
os.environ.setdefault("RETRIEVAL_GATE_REPORT_CHECK", "raise")
