import sys
from pathlib import Path

# Tests import the package from the working tree even when it is not installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
