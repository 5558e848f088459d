"""Build hook: compiles the run reader's scanner and the label join when it can.

`pip install` (editable or not) runs this. With a C compiler at hand it builds
`gate/inputs/readers/_runscan.so` (from runscan.c), which `gate.inputs.readers.native` loads with
ctypes: large runs are read several times faster; and `gate/evaluation/_labeljoin.so` (from
labeljoin.c), which `gate.evaluation.label_join` loads: the qrels join of a large run is several
times faster. Without one (the container image, a bare Python + pip machine) or with
RETRIEVAL_GATE_NATIVE=0 (or false/no/off), it says so in one line and the install goes on: the
numpy code gives the same runs, errors and numbers. Nothing is downloaded.
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
JOIN_SOURCE = Path("gate/evaluation/labeljoin.c")
JOIN_TARGET = Path("gate/evaluation/_labeljoin.so")
#: Every compiled library: (source, library), each loaded on its own.
LIBRARIES = ((SOURCE, TARGET), (JOIN_SOURCE, JOIN_TARGET))


def _disabled() -> bool:
    return os.environ.get("RETRIEVAL_GATE_NATIVE", "").strip().lower() in ("0", "false", "no", "off")


def _say(source: Path, why: str) -> None:
    print(f"retrieval-gate: {source.name} not compiled ({why}); numpy code will do its work", file=sys.stderr)


def compile_scanner(root: Path) -> bool:
    """Compile every one of LIBRARIES under ``root``; False (and a line on stderr for each
    library not built) when any could not be built."""
    built = [compile_library(root, source, target) for source, target in LIBRARIES]
    return all(built)


def compile_library(root: Path, source: Path, target: Path) -> bool:
    """Compile ``source`` into ``target`` under ``root``; False (and one line on stderr) when it cannot.

    The compiler is ``$CC`` or the one Python was built with. The library records the SHA-256
    of its source; the loader uses it only while that matches the source beside it."""
    source, target = root / source, root / target
    if _disabled():
        target.unlink(missing_ok=True)  # an earlier build would otherwise still be loaded
        _say(source, "RETRIEVAL_GATE_NATIVE is off")
        return False
    compiler = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        digest = hashlib.sha256(source.read_bytes()).hexdigest()
    except OSError as error:
        _say(source, str(error))
        return False
    # No -march=native and no -ffast-math: the library must run wherever the wheel goes, and the
    # score parser relies on IEEE arithmetic exactly as written.
    command = [*compiler, "-O2", "-shared", "-fPIC", f'-DRG_SOURCE_SHA256="{digest}"', "-o", str(partial),
               str(source)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            _say(source, f"{compiler[0]} failed: {last}")
            return False
        os.replace(partial, target)
    except (OSError, subprocess.SubprocessError, ValueError) as error:
        _say(source, str(error))
        return False
    finally:
        partial.unlink(missing_ok=True)
    return True


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name != "wheel":
            return
        built = [target for source, target in LIBRARIES if compile_library(Path(self.root), source, target)]
        if built and version != "editable":
            # A wheel with a compiled library is tied to its platform.
            build_data["pure_python"] = False
            build_data["infer_tag"] = True
            build_data["artifacts"].extend(target.as_posix() for target in built)  # git-ignored, so named here
