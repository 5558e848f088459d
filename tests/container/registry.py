"""A Docker registry on 127.0.0.1, standing in for ghcr.io: where the release workflow pushes the
action's image and from where the runner pulls it by digest.

The registry is Debian's ``docker-registry`` (the CNCF distribution registry). Its binary is
taken from the package without installing it: ``apt-get download`` and ``dpkg-deb -x`` into the
suite's state folder. Installing the package would also run its init script, a registry for
every interface on port 5000 left running after the suite; this one listens on 127.0.0.1 at a
free port, keeps its blobs in a temporary folder, and ends with the suite. The engine trusts it
without TLS: Docker treats registries on 127.0.0.0/8 as insecure-allowed by default.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.container.engine import STATE, log

PACKAGE = "docker-registry"
EXTRACTED = STATE / "docker-registry"


def _run(argv: list[str], cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def registry_binary() -> tuple[str | None, str | None]:
    """(the registry binary, None), or (None, why there is none)."""
    for candidate in (shutil.which(PACKAGE), "/usr/bin/docker-registry", str(EXTRACTED / "usr/bin/docker-registry")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate, None
    if os.geteuid() != 0 or shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        return None, f"{PACKAGE} is not installed (and not root with apt-get to fetch it)"
    download = EXTRACTED.parent / "docker-registry-package"
    shutil.rmtree(download, ignore_errors=True)
    download.mkdir(parents=True)
    log(f"apt-get download {PACKAGE} (its binary only; the package is not installed)")
    done = _run(["apt-get", "download", "-q", PACKAGE], cwd=download)
    if done.returncode != 0:  # a machine whose package lists were never fetched
        _run(["apt-get", "update", "-q"], timeout=600)
        done = _run(["apt-get", "download", "-q", PACKAGE], cwd=download)
    debs = sorted(download.glob(f"{PACKAGE}_*.deb"))
    if done.returncode != 0 or not debs:
        return None, f"apt-get download {PACKAGE} failed: {(done.stderr or done.stdout).strip()[-300:]}"
    done = _run(["dpkg-deb", "-x", str(debs[-1]), str(EXTRACTED)])
    shutil.rmtree(download, ignore_errors=True)
    binary = EXTRACTED / "usr/bin/docker-registry"
    if done.returncode != 0 or not os.access(binary, os.X_OK):
        return None, f"dpkg-deb -x {debs[-1].name} failed: {done.stderr.strip()[-300:]}"
    return str(binary), None


def stop(process: subprocess.Popen | None, grace: float) -> None:
    """Ends a process this module's caller started: SIGTERM, then SIGKILL after ``grace`` seconds."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=30)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class LocalRegistry:
    """``with LocalRegistry(binary) as registry:`` a registry at ``registry.host`` (127.0.0.1:port)."""

    def __init__(self, binary: str):
        self.binary = binary
        self.host = ""
        self._folder: Path | None = None
        self._process: subprocess.Popen | None = None

    def __enter__(self) -> LocalRegistry:
        self._folder = Path(tempfile.mkdtemp(prefix="retrieval-gate-registry-"))
        port = _free_port()
        self.host = f"127.0.0.1:{port}"
        config = self._folder / "config.yml"
        config.write_text("version: 0.1\n"
                          "log: {level: warn, accesslog: {disabled: true}}\n"
                          f"storage: {{filesystem: {{rootdirectory: {self._folder / 'blobs'}}}, "
                          "delete: {enabled: true}}\n"
                          f"http: {{addr: '{self.host}'}}\n")
        logfile = open(self._folder / "registry.log", "wb")
        self._process = subprocess.Popen([self.binary, "serve", str(config)], stdout=logfile,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        logfile.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"http://{self.host}/v2/", timeout=2) as answer:
                    if answer.status == 200:
                        log(f"registry at {self.host}")
                        return self
            except (urllib.error.URLError, OSError):
                time.sleep(0.2)
        problem = (self._folder / "registry.log").read_text(errors="replace")[-500:]
        self.__exit__(None, None, None)
        raise RuntimeError(f"the registry did not answer on {self.host}: {problem}")

    def __exit__(self, *exc) -> None:
        stop(self._process, grace=10)
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)


def push(image: str, reference: str) -> str:
    """Tags ``image`` as ``reference`` (``host/path:tag``), pushes it, and returns the digest the
    registry gave it (``sha256:...``)."""
    repository = reference.rsplit(":", 1)[0]
    for argv in (["docker", "tag", image, reference], ["docker", "push", reference]):
        done = _run(argv, timeout=900)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr.strip()[-500:]}")
    done = _run(["docker", "image", "inspect", "--format", "{{range .RepoDigests}}{{println .}}{{end}}", reference])
    digests = [line.split("@", 1)[1] for line in done.stdout.split() if line.startswith(f"{repository}@")]
    if done.returncode != 0 or len(digests) != 1:
        raise RuntimeError(f"no digest of {repository} after the push: {done.stdout.strip()} {done.stderr.strip()}")
    return digests[0]
