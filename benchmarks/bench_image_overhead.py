"""Benchmark: the per-job overhead of the action's image, built from the Dockerfile (what
``image: Dockerfile`` costs every job) against pulled by digest (what a released tag's
``image: docker://...@sha256:...`` costs), each on a fresh runner's Docker engine.

A fresh engine of its own is started for this (a private ``dockerd``: its own data root and
socket, an empty image store, stopped and deleted at the end), beside the engine the container
suite uses, so nothing it removes is anyone else's. A registry on 127.0.0.1 (the suite's,
tests/container/registry.py) stands in for Docker Hub and ghcr.io. Then, each ``--repeats``
times (3):

  (a) build:  ``docker build --no-cache`` of the Dockerfile, the base image already on the
              engine (as a GitHub runner has it after pulling the base), packages from PyPI;
              the built image is removed after each;
  (b) pull:   ``docker pull <registry>/<path>@sha256:...`` of the image (a), every image
              removed from the engine first (``docker rmi``: a fresh runner has none);

and once, for (a)'s full cost on a fresh runner, the pull of the base image alone. It prints the
seconds of each, the medians, the ratio build / pull, and the image's compressed size (what a
pull from ghcr.io transfers; the local registry leaves that transfer out).

The base is the container suite's Debian stand-in (Docker Hub cannot be reached from here; the
official python:3.11-slim-bookworm is smaller). Needs root (dockerd) and PyPI.

    sudo python benchmarks/bench_image_overhead.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.container import engine  # noqa: E402
from tests.container.registry import LocalRegistry, push, registry_binary, stop  # noqa: E402

MANIFEST_TYPES = ("application/vnd.docker.distribution.manifest.v2+json",
                  "application/vnd.oci.image.manifest.v1+json")


class FreshEngine:
    """A private dockerd with an empty image store: a fresh runner's engine."""

    def __init__(self):
        self.root = Path(tempfile.mkdtemp(prefix="rg-bench-", dir="/var/tmp"))
        self.socket = self.root / "docker.sock"
        self.env = {**os.environ, "DOCKER_HOST": f"unix://{self.socket}"}
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> FreshEngine:
        dockerd = shutil.which("dockerd") or "/usr/sbin/dockerd"
        log = open(self.root / "dockerd.log", "wb")
        self.process = subprocess.Popen(
            [dockerd, "--data-root", str(self.root / "data"), "--exec-root", str(self.root / "exec"),
             "--pidfile", str(self.root / "dockerd.pid"), "--host", f"unix://{self.socket}",
             "--storage-driver", "overlay2", "--iptables=false", "--ip6tables=false", "--bridge=none"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.docker("info", check=False).returncode == 0:
                return self
            time.sleep(0.5)
        self.__exit__()
        raise RuntimeError(f"the fresh dockerd did not start: {(self.root / 'dockerd.log').read_text()[-800:]}")

    def __exit__(self, *exc) -> None:
        stop(self.process, grace=60)
        # dockerd leaves its network namespace mounted (exec-root/netns/default) when it stops.
        with open("/proc/self/mounts") as mounts:
            inside = [line.split()[1] for line in mounts if line.split()[1].startswith(f"{self.root}/")]
        for mountpoint in sorted(inside, reverse=True):
            subprocess.run(["umount", mountpoint], capture_output=True, timeout=60)
        shutil.rmtree(self.root, ignore_errors=True)

    def docker(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(["docker", *argv], env=self.env, capture_output=True, text=True, timeout=1800)
        if check and done.returncode != 0:
            raise RuntimeError(f"docker {' '.join(argv)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
        return done

    def timed(self, *argv: str) -> float:
        started = time.perf_counter()
        self.docker(*argv)
        return time.perf_counter() - started

    def remove_every_image(self) -> None:
        """``docker rmi`` of every image, children before their parents."""
        for _ in range(10):
            left = self.docker("image", "ls", "--all", "--quiet").stdout.split()
            if not left:
                return
            for image in dict.fromkeys(left):
                self.docker("image", "rm", "--force", image, check=False)
        raise RuntimeError(f"images left on the fresh engine: {left}")


def compressed_size(host: str, repository: str, digest: str) -> int:
    """Bytes a pull transfers: the config and every layer blob, as the registry's manifest lists them."""
    request = urllib.request.Request(f"http://{host}/v2/{repository}/manifests/{digest}",
                                     headers={"Accept": ", ".join(MANIFEST_TYPES)})
    with urllib.request.urlopen(request, timeout=30) as answer:
        manifest = json.load(answer)
    return manifest["config"]["size"] + sum(layer["size"] for layer in manifest["layers"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    problem = engine.engine_problem()
    if problem is not None:
        print(f"no Docker engine: {problem}", file=sys.stderr)
        return 2
    binary, problem = registry_binary()
    if binary is None:
        print(f"no registry: {problem}", file=sys.stderr)
        return 2
    stand_in = engine.build_stand_in()
    with LocalRegistry(binary) as registry, FreshEngine() as fresh:
        base_ref = f"{registry.host}/library/python-stand-in"
        base_digest = push(stand_in, f"{base_ref}:3.11-bookworm")
        base = f"{base_ref}@{base_digest}"
        image_ref = f"{registry.host}/octo-org/retrieval-gate"

        base_pull = fresh.timed("pull", "--quiet", base)
        builds = []
        for i in range(args.repeats):
            builds.append(fresh.timed("build", "--no-cache", "--network", "host", "--build-arg", f"BASE_IMAGE={base}",
                                      "-t", f"{image_ref}:bench-{i}", str(REPO)))
            print(f"  (a) build {i + 1}: {builds[-1]:6.1f} s", flush=True)
            if i < args.repeats - 1:
                fresh.docker("image", "rm", f"{image_ref}:bench-{i}")
        fresh.docker("push", f"{image_ref}:bench-{args.repeats - 1}")
        digests = fresh.docker("image", "inspect", "--format", "{{range .RepoDigests}}{{println .}}{{end}}",
                               f"{image_ref}:bench-{args.repeats - 1}").stdout.split()
        digest = next(d.split("@", 1)[1] for d in digests if d.startswith(f"{image_ref}@"))
        pulls = []
        for i in range(args.repeats):
            fresh.remove_every_image()
            pulls.append(fresh.timed("pull", "--quiet", f"{image_ref}@{digest}"))
            print(f"  (b) pull  {i + 1}: {pulls[-1]:6.1f} s", flush=True)
        size = json.loads(fresh.docker("image", "inspect", "--format", "{{json .Size}}",
                                       f"{image_ref}@{digest}").stdout)
        image_bytes = compressed_size(registry.host, "octo-org/retrieval-gate", digest)
        base_bytes = compressed_size(registry.host, "library/python-stand-in", base_digest)

    build, pull = statistics.median(builds), statistics.median(pulls)
    mb = 1e6
    print(f"the action image on a fresh engine, {args.repeats} times each (registry on 127.0.0.1)")
    print(f"(a) docker build --no-cache (base present):  median {build:6.1f} s  "
          f"[{', '.join(f'{t:.1f}' for t in builds)}]")
    print(f"    + the base's pull first (once):          {base_pull:6.1f} s  -> {build + base_pull:.1f} s a job")
    print(f"(b) docker pull by digest (nothing present): median {pull:6.1f} s  "
          f"[{', '.join(f'{t:.1f}' for t in pulls)}]")
    print(f"ratio build / pull: {build / pull:.1f}x   (build + base pull) / pull: {(build + base_pull) / pull:.1f}x")
    print(f"image: {size / mb:.0f} MB unpacked, {image_bytes / mb:.0f} MB compressed "
          f"(base {base_bytes / mb:.0f} MB of it); not timed here: its transfer from ghcr.io, "
          f"{image_bytes / mb / 50:.1f} s at 50 MB/s, {image_bytes / mb / 100:.1f} s at 100 MB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
