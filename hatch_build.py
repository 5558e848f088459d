"""Build hook: compiles the run reader's scanner (gate/inputs/readers/runscan.c) when it can.

`pip install` (editable or not) runs this. With a C compiler at hand it builds
`gate/inputs/readers/_runscan.so`, which `gate.inputs.readers.native` loads with ctypes: large
runs are read several times faster. Without one (the container image, a bare Python + pip
machine) or with RETRIEVAL_GATE_NATIVE=0, it says so in one line and the install goes on: the
numpy reader gives the same runs, errors and numbers. Nothing is downloaded.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

try:
    from hatchling.builders.hooks.plugin.interface import BuildHookInterface
except ImportError:  # the tests import compile_scanner where hatchling is not installed
    BuildHookInterface = object  # type: ignore[misc,assignment]

SOURCE = Path("gate/inputs/readers/runscan.c")
TARGET = Path("gate/inputs/readers/_runscan.so")


def compile_scanner(root: Path) -> bool:
    """Compile SOURCE into TARGET under ``root``; False (and one line on stderr) when it cannot."""
    if os.environ.get("RETRIEVAL_GATE_NATIVE", "") == "0":
        return False
    source, target = root / SOURCE, root / TARGET
    compiler = shlex.split(sysconfig.get_config_var("CC") or "cc")
    partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    # No -march=native and no -ffast-math: the library must run wherever the wheel goes, and the
    # score parser relies on IEEE arithmetic exactly as written.
    command = [*compiler, "-O2", "-shared", "-fPIC", "-o", str(partial), str(source)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as error:
        print(f"retrieval-gate: no compiled run scanner ({error}); the numpy reader will read runs",
              file=sys.stderr)
        return False
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        print(f"retrieval-gate: no compiled run scanner ({compiler[0]} failed: {last}); "
              "the numpy reader will read runs", file=sys.stderr)
        return False
    os.replace(partial, target)
    return True


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name != "wheel":
            return
        if compile_scanner(Path(self.root)) and version != "editable":
            # A wheel with a compiled library is tied to its platform.
            build_data["pure_python"] = False
            build_data["infer_tag"] = True
            build_data["artifacts"].append(TARGET.as_posix())  # git-ignored, so named here
