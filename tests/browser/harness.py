"""Headless Chromium for the tests: a local HTML page loaded with the network off, handed back as a
reader would judge it - the screenshot, what the console said, the DOM after the page's scripts ran.

Chromium is driven over the DevTools protocol on ``--remote-debugging-pipe`` (the browser reads
commands on its fd 3 and writes answers and events on its fd 4, one JSON message per NUL byte;
stdlib only). That gives every console message (``Runtime.consoleAPICalled``, uncaught exceptions
from ``Runtime.exceptionThrown``, the browser's own reports - failed loads, CSP violations - from
``Log.entryAdded``), every request and its failure (``Network``), a deterministic "loaded" (the
page's load event, then two animation frames so that what its scripts drew is painted), the
screenshot and the DOM. ``--dump-dom``/``--screenshot`` give no console, and guess at "loaded"
with a virtual time budget.

The network is off for real where the machine allows it: Chromium runs in a network namespace of
its own that has no interface at all (``unshare --net`` as root, ``unshare --map-current-user
--net`` otherwise). Where no namespace can be made, every load that is not a file fails by flags
instead: no name resolves, and every request, loopback included, goes to a proxy on a port where
nothing listens. :attr:`Rendered.isolation` says which was used.

Every render starts a fresh browser with a fresh profile in a temporary folder, under one overall
deadline (generous: the machines the suite runs on are small and shared), and ends by killing the
browser's whole process group.
"""

from __future__ import annotations

import base64
import enum
import fcntl
import functools
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-headless-shell", "google-chrome", "chromium-browser")
NO_CHROMIUM = "no Chromium: install the Debian package chromium"
TIMEOUT_SECONDS = 120.0
# After Browser.close, how long the browser may take to exit before its process group is killed.
CLOSE_GRACE_SECONDS = 10.0


class BrowserError(RuntimeError):
    """Chromium did not start, died, refused a command or missed the deadline (a failure of the
    harness or of the machine, never a finding about the page)."""


class Isolation(enum.Enum):
    """How the network was kept off."""

    NAMESPACE = "a network namespace without interfaces (unshare --net)"
    USER_NAMESPACE = "a network namespace without interfaces (unshare --map-current-user --net)"
    FLAGS = "flags: no name resolves, every request goes to a dead proxy (no namespace could be made)"
    # Only for the harness's own control test, which shows that its leak detector can see a leak.
    NONE = "none: the network is on"


@dataclass(frozen=True)
class ConsoleMessage:
    """One thing the page or the browser said. ``kind``: ``console-api`` (console.log and
    friends), ``exception`` (an uncaught exception or rejected promise), ``dialog`` (alert,
    confirm, prompt: dismissed, and an error, since a page under test has no one to answer it) or
    the browser's own source from the Log domain (``network`` for failed loads, ``security`` for
    CSP, ...)."""

    kind: str
    level: str  # error, warning, info, log, debug, verbose
    text: str
    url: str = ""


@dataclass(frozen=True)
class FailedLoad:
    url: str
    error: str  # Chromium's net error, e.g. net::ERR_NAME_NOT_RESOLVED


@dataclass(frozen=True)
class Rendered:
    png: bytes
    console: tuple[ConsoleMessage, ...]
    requested: tuple[str, ...]  # every URL the page asked for, its own first
    failed_loads: tuple[FailedLoad, ...]
    dom: str  # document.documentElement.outerHTML once the page's scripts ran
    isolation: Isolation
    seconds: float  # from starting the browser to the DOM read back (informational only)

    @property
    def errors(self) -> tuple[ConsoleMessage, ...]:
        return tuple(message for message in self.console if message.level == "error")


def find_chromium() -> str | None:
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


@functools.cache
def available_isolation() -> Isolation:
    """The strongest isolation this machine allows, found by trying it once."""
    unshare = shutil.which("unshare")
    if unshare is not None:
        if os.geteuid() == 0 and _succeeds([unshare, "--net", "true"]):
            return Isolation.NAMESPACE
        if os.geteuid() != 0 and _succeeds([unshare, "--map-current-user", "--net", "true"]):
            return Isolation.USER_NAMESPACE
    return Isolation.FLAGS


def _succeeds(argv: list[str]) -> bool:
    try:
        return subprocess.run(argv, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _wrapper(isolation: Isolation) -> list[str]:
    if isolation is Isolation.NAMESPACE:
        return ["unshare", "--net", "--"]
    if isolation is Isolation.USER_NAMESPACE:
        return ["unshare", "--map-current-user", "--net", "--"]
    return []


def _flags(isolation: Isolation, profile: Path, width: int, height: int) -> list[str]:
    flags = [
        "--headless", "--remote-debugging-pipe", f"--user-data-dir={profile}",
        f"--window-size={width},{height}", "--force-device-scale-factor=1", "--hide-scrollbars",
        # Colours in the screenshot exactly as the page wrote them (no monitor profile).
        "--force-color-profile=srgb",
        "--disable-gpu", "--disable-dev-shm-usage", "--mute-audio", "--no-first-run",
        "--no-default-browser-check", "--disable-extensions", "--disable-default-apps", "--disable-sync",
        # Chromium's own traffic (updates, field trials, safe browsing): none, whatever the isolation.
        "--disable-background-networking", "--disable-component-update", "--disable-domain-reliability",
        "--disable-client-side-phishing-detection", "--no-pings",
    ]
    if os.geteuid() == 0:
        flags.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
    if isolation is Isolation.FLAGS:
        flags += [
            "--host-resolver-rules=MAP * ~NOTFOUND",
            # Port 9 (discard): nothing listens. <-loopback> takes away the proxy's implicit
            # exception for localhost, so that a page cannot reach a server on this machine either.
            "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
            "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
        ]
    return [*flags, "about:blank"]


@dataclass(frozen=True)
class Browser:
    """A Chromium found on this machine, and how its network is kept off."""

    executable: str
    version: str
    isolation: Isolation
    timeout: float = TIMEOUT_SECONDS

    def describe(self) -> str:
        return f"{self.version} ({self.executable}); network off by {self.isolation.value}"

    def render(self, html_path: Path | str, width: int = 800, height: int = 600) -> Rendered:
        """Load ``html_path`` in a fresh headless Chromium at ``width`` x ``height`` CSS pixels
        (one device pixel each) and return what it showed and said."""
        page = Path(html_path).resolve()
        if not page.is_file():
            raise FileNotFoundError(f"no page to render at {page}")
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="retrieval-gate-chromium-") as temp:
            profile = Path(temp) / "profile"
            profile.mkdir()
            argv = [*_wrapper(self.isolation), self.executable, *_flags(self.isolation, profile, width, height)]
            with _Chromium(argv, Path(temp) / "chromium.log", self.timeout) as chromium:
                return _load(chromium, page, width, height, self.isolation, started)


def open_browser() -> Browser | str:
    """The browser, or the reason there is none."""
    executable = find_chromium()
    if executable is None:
        return NO_CHROMIUM
    try:
        done = subprocess.run([executable, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"{executable} --version failed: {error}"
    if done.returncode != 0:
        return f"{executable} --version failed: {(done.stderr or done.stdout).strip()[-300:]}"
    version = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else executable
    return Browser(executable=executable, version=version, isolation=available_isolation())


# --------------------------------------------------------------------------- the page's session

# Resolves once the page's fonts are ready and two frames were painted after that: what the
# load handlers and their first animation frame drew is on screen.
_SETTLED = ("document.fonts.ready.then(() => new Promise(done => "
            "requestAnimationFrame(() => requestAnimationFrame(() => done(true)))))")


def _load(chromium: _Chromium, page: Path, width: int, height: int, isolation: Isolation,
          started: float) -> Rendered:
    target = chromium.call("Target.createTarget", {"url": "about:blank"})
    session = chromium.call("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})["sessionId"]
    for domain in ("Page", "Runtime", "Log", "Network"):
        chromium.call(f"{domain}.enable", session=session)
    chromium.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session=session)
    chromium.call("Page.bringToFront", session=session)
    navigated = chromium.call("Page.navigate", {"url": page.as_uri()}, session=session)
    if navigated.get("errorText"):
        raise BrowserError(f"Chromium could not open {page}: {navigated['errorText']}")
    chromium.wait_for(lambda event: event.get("method") == "Page.loadEventFired" and event.get("sessionId") == session)
    chromium.call("Runtime.evaluate", {"expression": _SETTLED, "awaitPromise": True, "returnByValue": True},
                  session=session)
    shot = chromium.call("Page.captureScreenshot", {"format": "png", "fromSurface": True}, session=session)
    dom = chromium.call("Runtime.evaluate", {"expression": "document.documentElement.outerHTML",
                                             "returnByValue": True}, session=session)["result"]["value"]
    console, requested, failed = _read_events(chromium.events, session)
    return Rendered(png=base64.b64decode(shot["data"]), console=console, requested=requested, failed_loads=failed,
                    dom=dom, isolation=isolation, seconds=time.monotonic() - started)


def _read_events(events: list[dict[str, Any]], session: str,
                 ) -> tuple[tuple[ConsoleMessage, ...], tuple[str, ...], tuple[FailedLoad, ...]]:
    console: list[ConsoleMessage] = []
    urls: dict[str, str] = {}
    failed: list[FailedLoad] = []
    for event in events:
        if event.get("sessionId") != session:
            continue
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled":
            console.append(_console_api(params))
        elif method == "Runtime.exceptionThrown":
            console.append(_exception(params["exceptionDetails"]))
        elif method == "Log.entryAdded":
            entry = params["entry"]
            console.append(ConsoleMessage(kind=entry.get("source", "other"), level=entry.get("level", "info"),
                                          text=entry.get("text", ""), url=entry.get("url", "")))
        elif method == "Page.javascriptDialogOpening":
            console.append(ConsoleMessage(kind="dialog", level="error",
                                          text=f"{params.get('type', 'dialog')}: {params.get('message', '')}",
                                          url=params.get("url", "")))
        elif method == "Network.requestWillBeSent":
            urls.setdefault(params["requestId"], params["request"]["url"])
        elif method == "Network.loadingFailed":
            failed.append(FailedLoad(url=urls.get(params["requestId"], "?"), error=params.get("errorText", "")))
    return tuple(console), tuple(urls.values()), tuple(failed)


_CONSOLE_LEVELS = {"error": "error", "assert": "error", "warning": "warning", "info": "info", "debug": "debug"}


def _console_api(params: dict[str, Any]) -> ConsoleMessage:
    words = [str(arg["value"]) if "value" in arg else str(arg.get("description", arg.get("type", "")))
             for arg in params.get("args", [])]
    frames = params.get("stackTrace", {}).get("callFrames", [])
    return ConsoleMessage(kind="console-api", level=_CONSOLE_LEVELS.get(params.get("type", ""), "log"),
                          text=" ".join(words), url=frames[0].get("url", "") if frames else "")


def _exception(details: dict[str, Any]) -> ConsoleMessage:
    thrown = details.get("exception", {})
    text = thrown.get("description") or str(thrown.get("value", "")) or details.get("text", "")
    return ConsoleMessage(kind="exception", level="error", text=f"{details.get('text', 'Uncaught')}: {text}",
                          url=details.get("url", ""))


# --------------------------------------------------------------------------- the process and its pipe

def _high(fd: int) -> int:
    """``fd`` moved above the numbers the child is given (3 and 4), close-on-exec."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


@dataclass
class _Chromium:
    """A running Chromium, its DevTools pipe, and everything it said (``events``)."""

    argv: list[str]
    log_path: Path
    timeout: float
    events: list[dict[str, Any]] = field(default_factory=list)
    _pid: int = 0
    _deadline: float = 0.0
    _to_browser: int = -1
    _from_browser: int = -1
    _buffer: bytes = b""
    _next_id: int = 0
    _answers: dict[int, dict[str, Any]] = field(default_factory=dict)

    def __enter__(self) -> _Chromium:
        self._deadline = time.monotonic() + self.timeout
        commands_read, commands_write = (_high(fd) for fd in os.pipe())
        answers_read, answers_write = (_high(fd) for fd in os.pipe())
        log = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            # posix_spawn: the child gets the pipe's ends as fds 3 and 4 (dup2 clears close-on-exec
            # on them only), a session and process group of its own (killed whole at the end).
            self._pid = os.posix_spawnp(self.argv[0], self.argv, dict(os.environ), setsid=True, file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, log, 1), (os.POSIX_SPAWN_DUP2, log, 2),
                (os.POSIX_SPAWN_DUP2, commands_read, 3), (os.POSIX_SPAWN_DUP2, answers_write, 4),
            ])
        except OSError as error:
            for fd in (commands_read, commands_write, answers_read, answers_write):
                os.close(fd)
            raise BrowserError(f"could not start {self.argv[0]}: {error}") from error
        finally:
            os.close(log)
        os.close(commands_read)
        os.close(answers_write)
        self._to_browser, self._from_browser = commands_write, answers_read
        return self

    def __exit__(self, *exc_info: object) -> None:
        try:
            if exc_info[0] is None:
                self._send("Browser.close", {}, None)
        except BrowserError:
            pass
        finally:
            os.close(self._to_browser)
            os.close(self._from_browser)
            self._stop()

    def _stop(self) -> None:
        """Waits a little for the browser to exit, kills its process group, reaps it. The group is
        killed before the leader is reaped, so that its id cannot have been reused."""
        grace = time.monotonic() + CLOSE_GRACE_SECONDS
        while time.monotonic() < grace:
            if os.waitid(os.P_PID, self._pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                break
            time.sleep(0.05)
        try:
            os.killpg(self._pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self._pid, 0)

    def log_tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace").strip()[-1500:]
        except OSError:
            return ""

    def _send(self, method: str, params: dict[str, Any], session: str | None) -> int:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        while data:
            try:
                written = os.write(self._to_browser, data)
            except BrokenPipeError as error:
                raise BrowserError(f"Chromium exited before {method}; its log:\n{self.log_tail()}") from error
            data = data[written:]
        return self._next_id

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        wanted = self._send(method, params or {}, session)
        while wanted not in self._answers:
            self._read(f"the answer to {method}")
        answer = self._answers.pop(wanted)
        if "error" in answer:
            raise BrowserError(f"{method} failed: {answer['error']}")
        result: dict[str, Any] = answer.get("result", {})
        return result

    def wait_for(self, matches: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        seen = 0
        while True:
            for event in self.events[seen:]:
                if matches(event):
                    return event
            seen = len(self.events)
            self._read("the page's load event")

    def _read(self, waiting_for: str) -> None:
        remaining = self._deadline - time.monotonic()
        ready = select.select([self._from_browser], [], [], max(remaining, 0))[0] if remaining > 0 else []
        if not ready:
            raise BrowserError(f"no {waiting_for} came from Chromium within {self.timeout:g} s; its log:\n"
                               f"{self.log_tail()}")
        chunk = os.read(self._from_browser, 1 << 20)
        if not chunk:
            raise BrowserError(f"Chromium exited while waiting for {waiting_for}; its log:\n{self.log_tail()}")
        *messages, self._buffer = (self._buffer + chunk).split(b"\0")
        for raw in messages:
            message = json.loads(raw)
            if "id" in message:
                self._answers[message["id"]] = message
                continue
            self.events.append(message)
            if message.get("method") == "Page.javascriptDialogOpening":
                # alert() and friends block the page until answered: dismissed (and reported).
                self._send("Page.handleJavaScriptDialog", {"accept": False}, message.get("sessionId"))
