"""The Docker engine, the stand-in base image and the action's image, made ready for the suite.

Docker Hub is not reachable from the machines this suite runs on (CI included), so the
Dockerfile's ``FROM`` image cannot be pulled. It is stood in for by a Debian image built
with ``debootstrap`` (Debian's own packages: python3, venv, pip, CA certificates), made to
look like the official ``python`` image where the Dockerfile relies on it (``python`` on the
PATH, pip allowed to install system-wide), and handed to the unmodified Dockerfile as its
base (``--build-arg BASE_IMAGE``). Everything after ``FROM`` is the real build.

What is missing is installed when the suite may (root, ``apt-get``): ``docker.io`` and
``debootstrap``. ``dockerd`` is started when no engine answers (``overlay2``, ``vfs`` if that
fails). Where none of that is possible (a laptop without root), :func:`engine_problem`
returns the reason and the suite skips; ``RETRIEVAL_GATE_CONTAINER=required`` (CI) turns the
skip into a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STATE = Path(os.environ.get("RETRIEVAL_GATE_CONTAINER_STATE", "/var/tmp/retrieval-gate-container"))
STAND_IN = "retrieval-gate-test/python-stand-in:3.11-bookworm"
IMAGE = "retrieval-gate-test/action:dev"
SUITE = "bookworm"
MIRROR = os.environ.get("RETRIEVAL_GATE_DEBIAN_MIRROR", "http://deb.debian.org/debian")


def log(message: str) -> None:
    print(f"[container-suite] {message}", flush=True)


def _run(argv: list[str], timeout: float = 900, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kwargs)


def _engine_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        return _run(["docker", "info", "--format", "{{.ServerVersion}}"], timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _install_packages() -> str | None:
    missing = [pkg for pkg, tool in (("docker.io", "dockerd"), ("debootstrap", "debootstrap"))
               if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists()]
    if not missing:
        return None
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return f"{', '.join(missing)} not installed (and not root with apt-get to install them)"
    log(f"installing {' '.join(missing)} with apt-get")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    update = _run(["apt-get", "update", "-q"], env=env)
    done = _run(["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing], env=env)
    if done.returncode != 0:
        return f"apt-get install {' '.join(missing)} failed: {(done.stderr or update.stderr).strip()[-300:]}"
    return None


def _start_dockerd() -> str | None:
    dockerd = shutil.which("dockerd") or "/usr/sbin/dockerd"
    if not os.access(dockerd, os.X_OK):
        return "dockerd is not installed"
    if os.geteuid() != 0:
        return "no Docker engine answers, and starting dockerd needs root"
    STATE.mkdir(parents=True, exist_ok=True)
    for driver in ("overlay2", "vfs"):
        log(f"starting dockerd (storage driver {driver})")
        logfile = open(STATE / f"dockerd-{driver}.log", "ab")
        subprocess.Popen([dockerd, "--storage-driver", driver, "--iptables=false", "--ip6tables=false",
                          "--bridge=none"], stdout=logfile, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if _engine_answers():
                return None
            time.sleep(1)
        subprocess.run(["pkill", "-x", "dockerd"], capture_output=True)
        time.sleep(2)
    return f"dockerd did not start (see {STATE}/dockerd-*.log)"


def engine_problem() -> str | None:
    """None when a Docker engine answers (installing and starting it if this machine allows),
    otherwise why not."""
    if _engine_answers():
        return None
    problem = _install_packages()
    if problem is not None:
        return problem
    return _start_dockerd()


def _image_exists(tag: str) -> bool:
    return _run(["docker", "image", "inspect", tag], timeout=30).returncode == 0


def build_stand_in() -> str:
    """The Debian stand-in for the Dockerfile's python base image (built once per machine)."""
    if _image_exists(STAND_IN):
        return STAND_IN
    if shutil.which("debootstrap") is None and not Path("/usr/sbin/debootstrap").exists():
        raise RuntimeError("debootstrap is not installed")
    rootfs = STATE / "rootfs"
    if rootfs.exists():
        shutil.rmtree(rootfs)
    rootfs.parent.mkdir(parents=True, exist_ok=True)
    log(f"debootstrap {SUITE} (Docker Hub is not reachable: the python base image is stood in for)")
    started = time.monotonic()
    done = _run(["debootstrap", "--variant=minbase", "--include=python3,python3-venv,python3-pip,ca-certificates",
                 SUITE, str(rootfs), MIRROR], timeout=1200)
    if done.returncode != 0:
        raise RuntimeError(f"debootstrap failed: {done.stdout[-500:]}{done.stderr[-500:]}")
    # What the official python image gives the Dockerfile: `python` on the PATH, and pip free to
    # install into the system interpreter (Debian marks it externally managed).
    (rootfs / "usr/local/bin").mkdir(parents=True, exist_ok=True)
    os.symlink("/usr/bin/python3", rootfs / "usr/local/bin/python")
    for marker in (rootfs / "usr/lib").glob("python3*/EXTERNALLY-MANAGED"):
        marker.unlink()
    # This machine's network: a TLS-inspecting egress proxy signs with a local CA that the host
    # trusts (/usr/local/share/ca-certificates). The image must trust it too to reach PyPI here;
    # on GitHub's runners there is no such CA and the list is empty.
    extra = sorted(Path("/usr/local/share/ca-certificates").glob("*.crt"))
    if extra:
        target = rootfs / "usr/local/share/ca-certificates"
        target.mkdir(parents=True, exist_ok=True)
        for cert in extra:
            shutil.copyfile(cert, target / cert.name)
        done = _run(["chroot", str(rootfs), "update-ca-certificates"], timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"update-ca-certificates failed: {done.stderr[-300:]}")
        log(f"the stand-in trusts this machine's {len(extra)} local CA certificates")
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    imported = subprocess.run(["docker", "import", "--change", "ENV PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
                               "-", STAND_IN], stdin=tar.stdout, capture_output=True, text=True, timeout=600)
    tar.wait()
    shutil.rmtree(rootfs, ignore_errors=True)
    if imported.returncode != 0:
        raise RuntimeError(f"docker import failed: {imported.stderr[-500:]}")
    log(f"stand-in base image {STAND_IN} in {time.monotonic() - started:.0f}s")
    return STAND_IN


def build_action_image(context: Path = REPO) -> str:
    """``docker build`` of the repository's Dockerfile, unmodified, on the stand-in base."""
    base = build_stand_in()
    log("docker build of the action's Dockerfile")
    started = time.monotonic()
    done = _run(["docker", "build", "--network", "host", "--build-arg", f"BASE_IMAGE={base}", "-t", IMAGE,
                 "-f", str(context / "Dockerfile"), str(context)], timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"docker build failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    log(f"image {IMAGE} built in {time.monotonic() - started:.0f}s")
    return IMAGE
