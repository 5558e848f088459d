"""The Docker action's entrypoint: a thin shell over :func:`gate.action.main`.

The image starts this file with Python directly (exec-form ENTRYPOINT): a
shell in between would drop the INPUT_* variables whose names have hyphens.
:func:`gate.runs.isolation.isolate` runs first: it re-executes this file without the
tokens in its environment, drops root for the workspace owner and makes the
process non-dumpable, before any child process (the PR's code) can start.
"""

import sys
from pathlib import Path

# Run from a checkout without installing (tests, local use); the image installs the package.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gate.action import main  # noqa: E402
from gate.runs.isolation import isolate  # noqa: E402

if __name__ == "__main__":
    try:
        environment, identity = isolate()
    except Exception as error:  # noqa: BLE001 - the edge: a bug of the gate, not a verdict
        print(f"::error title=retrieval-gate::internal error while isolating the process: "
              f"{type(error).__name__}", flush=True)
        sys.exit(4)
    sys.exit(main(environment, identity=identity))
