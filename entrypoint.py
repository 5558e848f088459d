"""The Docker action's entrypoint: a thin shell over :func:`gate.action.main`.

The image starts this file with Python directly (exec-form ENTRYPOINT): a
shell in between would drop the INPUT_* variables whose names have hyphens.
"""

import sys
from pathlib import Path

# Run from a checkout without installing (tests, local use); the image installs the package.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gate.action import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
