"""Build hook: compiles the run reader's scanner (gate/inputs/readers/runscan.c) when it can.

`pip install` (editable or not) runs this. With a C compiler at hand it builds
`gate/inputs/readers/_runscan.so`, which `gate.inputs.readers.native` loads with ctypes: large
runs are read several times faster. Without one (the container image, a bare Python + pip
machine) or with RETRIEVAL_GATE_NATIVE=0 (or false/no/off), it says so in one line and the install goes on: the
numpy reader gives the same runs, errors and numbers. Nothing is downloaded.
"""

from __future__ import annotations

import hashlib
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


def _disabled() -> bool:
    return os.environ.get("RETRIEVAL_GATE_NATIVE", "").strip().lower() in ("0", "false", "no", "off")


def _say(why: str) -> None:
    print(f"retrieval-gate: no compiled run scanner ({why}); the numpy reader will read runs", file=sys.stderr)


def compile_scanner(root: Path) -> bool:
    """Compile SOURCE into TARGET under ``root``; False (and one line on stderr) when it cannot.

    The compiler is ``$CC`` or the one Python was built with. The library records the SHA-256
    of its source; the loader uses it only while that matches the source beside it."""
    source, target = root / SOURCE, root / TARGET
    if _disabled():
        target.unlink(missing_ok=True)  # an earlier build would otherwise still be loaded
        _say("RETRIEVAL_GATE_NATIVE is off")
        return False
    compiler = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    # No -march=native and no -ffast-math: the library must run wherever the wheel goes, and the
    # score parser relies on IEEE arithmetic exactly as written.
    command = [*compiler, "-O2", "-shared", "-fPIC", f'-DRG_SOURCE_SHA256="{digest}"', "-o", str(partial),
               str(source)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            _say(f"{compiler[0]} failed: {last}")
            return False
        os.replace(partial, target)
    except (OSError, subprocess.SubprocessError, ValueError) as error:
        _say(str(error))
        return False
    finally:
        partial.unlink(missing_ok=True)
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
