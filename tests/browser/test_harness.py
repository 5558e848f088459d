"""The browser harness on pages written here: it counts what a page drew, reports what went wrong in
it, and keeps it off the network - checked against a server on this machine that would see any
request that got out (and, in the control test, does)."""

from __future__ import annotations

import dataclasses
import http.server
import os
import threading
from pathlib import Path

import pytest

from tests.browser import harness
from tests.browser.png import count_blobs, is_blank
from tests.support.loopback import LoopbackHTTPServer

POINT = (214, 39, 40)  # the points' fill, #d62728: no other mark on the pages uses it
POINT_HEX = "#d62728"


def _page(tmp_path: Path, body: str, head: str = "", name: str = "page.html") -> Path:
    path = tmp_path / name
    path.write_text(f"<!doctype html><html><head><meta charset='utf-8'>{head}</head>"
                    f"<body style='margin:0;background:#fff'>{body}</body></html>", encoding="utf-8")
    return path


def _chart(points: int) -> str:
    """An SVG chart: axes, a line through the points in another colour, a shaded band, and
    ``points`` circles of the points' colour."""
    xs = [30 + 40 * i for i in range(points)]
    ys = [150 - (37 * i) % 110 for i in range(points)]
    circles = "".join(f"<circle class='point' cx='{x}' cy='{y}' r='5' fill='{POINT_HEX}'/>" for x, y in zip(xs, ys))
    line = " ".join(f"{x},{y}" for x, y in zip(xs, ys))
    return (f"<svg xmlns='http://www.w3.org/2000/svg' width='{40 * points + 40}' height='200'>"
            "<rect x='20' y='30' width='100%' height='40' fill='#c6dbef'/>"
            "<line x1='20' y1='180' x2='100%' y2='180' stroke='#333'/>"
            f"<polyline points='{line}' fill='none' stroke='#1f77b4' stroke-width='2'/>{circles}</svg>")


@pytest.mark.parametrize("points", [1, 7, 12])
def test_the_points_of_a_chart_are_counted_in_the_screenshot(browser, tmp_path, points):
    rendered = browser.render(_page(tmp_path, _chart(points)), 600, 240)
    assert count_blobs(rendered.png, POINT, tolerance=8) == points
    assert rendered.dom.count("class=\"point\"") == points
    assert rendered.errors == ()


def test_what_the_page_s_scripts_draw_after_load_is_in_the_screenshot_and_the_dom(browser, tmp_path):
    # Drawn in an animation frame after the load event: the harness waits for it, not for a time.
    script = """<script>
    window.addEventListener('load', () => requestAnimationFrame(() => {
      const svg = document.getElementById('chart');
      for (let i = 0; i < 9; i++) {
        const c = document.createElementNS('http://www.w3.org/2000/svg', 'circle');
        c.setAttribute('class', 'point'); c.setAttribute('cx', 20 + 30 * i); c.setAttribute('cy', 50);
        c.setAttribute('r', 6); c.setAttribute('fill', 'POINT_FILL');
        svg.appendChild(c);
      }
      document.body.dataset.drawn = 'yes';
    }));
    </script>""".replace("POINT_FILL", POINT_HEX)
    rendered = browser.render(_page(tmp_path, "<svg id='chart' width='320' height='100'></svg>" + script), 400, 120)
    assert count_blobs(rendered.png, POINT, tolerance=8) == 9
    assert 'data-drawn="yes"' in rendered.dom
    assert rendered.errors == ()


def test_a_blank_page_is_blank_and_a_drawn_one_is_not(browser, tmp_path):
    assert is_blank(browser.render(_page(tmp_path, "", name="blank.html"), 300, 200).png)
    assert not is_blank(browser.render(_page(tmp_path, _chart(2), name="chart.html"), 300, 200).png)


def test_a_script_that_throws_is_reported_as_an_error(browser, tmp_path):
    body = ("<p>text</p><script>console.log('starting'); console.error('the data did not parse');"
            "throw new TypeError('points is undefined')</script>"
            "<script>Promise.reject(new Error('a rejected promise'))</script>")
    rendered = browser.render(_page(tmp_path, body), 300, 200)
    errors = [(message.kind, message.text) for message in rendered.errors]
    assert any(kind == "exception" and "TypeError: points is undefined" in text for kind, text in errors), errors
    assert any(kind == "exception" and "a rejected promise" in text for kind, text in errors), errors
    assert ("console-api", "the data did not parse") in errors
    assert [m.text for m in rendered.console if m.level == "log"] == ["starting"]  # not an error


def test_a_dialog_is_dismissed_and_reported_instead_of_blocking_the_page(browser, tmp_path):
    body = "<script>alert('loaded?'); document.body.dataset.after = confirm('sure?') ? 'yes' : 'no'</script>"
    rendered = browser.render(_page(tmp_path, body), 300, 200)
    assert [(m.kind, m.text) for m in rendered.errors] == [("dialog", "alert: loaded?"), ("dialog", "confirm: sure?")]
    assert 'data-after="no"' in rendered.dom


def test_a_content_security_policy_violation_is_reported(browser, tmp_path):
    head = "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'\">"
    rendered = browser.render(_page(tmp_path, "<script>document.title = 'ran'</script>", head), 300, 200)
    assert {m.kind for m in rendered.errors} == {"security"}  # the script, and the body's style attribute
    assert any("inline script violates the following Content Security Policy" in m.text for m in rendered.errors)
    assert "<title>" not in rendered.dom  # the inline script was blocked


def test_a_clean_page_says_nothing(browser, tmp_path):
    page = _page(tmp_path, _chart(3))
    rendered = browser.render(page, 300, 200)
    assert rendered.console == () and rendered.failed_loads == ()
    assert rendered.requested == (page.as_uri(),)


# --------------------------------------------------------------------------- the network is off

class _Canary:
    """A server on 127.0.0.1 that records every request it gets: a page's load that reached it
    would have reached anywhere."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        canary = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
                canary.paths.append(self.path)
                self.send_response(200)
                self.send_header("Access-Control-Allow-Origin", "*")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = LoopbackHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture()
def canary():
    served = _Canary()
    yield served
    served.close()


def _leaky_page(tmp_path: Path, port: int) -> Path:
    body = (f"<img src='http://127.0.0.1:{port}/img'><img src='http://localhost:{port}/by-name'>"
            "<img src='http://example.com/picture.png'>"
            "<script src='https://example.com/x.js'></script>"
            f"<script>fetch('http://127.0.0.1:{port}/fetch').catch(() => {{}});"
            "fetch('https://example.com/data.json').catch(() => {})</script>")
    return _page(tmp_path, body)


def _assert_nothing_left(rendered: harness.Rendered, canary: _Canary) -> None:
    port = canary.port
    tried = {f"http://127.0.0.1:{port}/img", f"http://localhost:{port}/by-name", f"http://127.0.0.1:{port}/fetch",
             "http://example.com/picture.png", "https://example.com/x.js", "https://example.com/data.json"}
    assert tried <= set(rendered.requested)  # the page did try
    assert canary.paths == []
    assert {load.url for load in rendered.failed_loads} == tried
    assert all(load.error.startswith("net::ERR_") for load in rendered.failed_loads)
    failed_in_console = {m.url for m in rendered.errors if m.kind == "network"}
    assert {"https://example.com/x.js", "http://example.com/picture.png"} <= failed_in_console


def test_no_load_leaves_the_machine(browser, tmp_path, canary):
    rendered = browser.render(_leaky_page(tmp_path, canary.port), 300, 200)
    assert rendered.isolation is browser.isolation is not harness.Isolation.NONE
    _assert_nothing_left(rendered, canary)


def test_the_flags_alone_keep_every_load_on_the_machine_too(browser, tmp_path, canary):
    """Where no network namespace can be made the flags are all there is; they are tested here
    even on a machine that has namespaces."""
    flags_only = dataclasses.replace(browser, isolation=harness.Isolation.FLAGS)
    rendered = flags_only.render(_leaky_page(tmp_path, canary.port), 300, 200)
    assert rendered.isolation is harness.Isolation.FLAGS
    _assert_nothing_left(rendered, canary)


def test_control_with_the_network_on_the_canary_sees_the_page_s_requests(browser, tmp_path, canary):
    """Without isolation the same page reaches the server: the two tests above could fail."""
    open_network = dataclasses.replace(browser, isolation=harness.Isolation.NONE)
    open_network.render(_leaky_page(tmp_path, canary.port), 300, 200)
    assert {"/img", "/by-name", "/fetch"} <= set(canary.paths)


# --------------------------------------------------------------------------- failures of the harness

def test_a_page_that_never_loads_fails_at_the_deadline_and_leaves_no_process(browser, tmp_path, monkeypatch):
    # Profiles go under tmp_path, so that this test's browser processes can be told from others'.
    monkeypatch.setattr(harness.tempfile, "tempdir", str(tmp_path))
    hung = dataclasses.replace(browser, timeout=5.0)
    with pytest.raises(harness.BrowserError, match="within 5 s"):
        hung.render(_page(tmp_path, "<script>for (;;) {}</script>"), 300, 200)
    assert _processes_mentioning(str(tmp_path)) == []


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in command:
                found.append(f"{entry.name}: {command[:200]}")
    return found


def test_a_missing_page_is_refused_before_any_browser_starts(tmp_path):
    browser = harness.Browser(executable="/nonexistent/chromium", version="none", isolation=harness.Isolation.FLAGS)
    with pytest.raises(FileNotFoundError, match="no page to render"):
        browser.render(tmp_path / "absent.html")


def test_without_chromium_the_reason_names_the_package(monkeypatch):
    monkeypatch.setenv("PATH", os.devnull)
    assert harness.open_browser() == "no Chromium: install the Debian package chromium"


# --------------------------------------------------------------------------- without Chromium

def _pytest_without_chromium(tmp_path: Path, **environment: str) -> str:
    """This file's cleanest browser test, run by a pytest that finds no Chromium on its PATH."""
    import subprocess
    import sys

    repository = Path(__file__).resolve().parents[2]
    env = {key: value for key, value in os.environ.items() if key != "RETRIEVAL_GATE_BROWSER"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rsf", "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "t"),
         f"{Path(__file__).relative_to(repository)}::test_a_clean_page_says_nothing"],
        cwd=repository, env={**env, "PATH": str(tmp_path / "empty"), **environment},
        capture_output=True, text=True, timeout=600)
    return done.stdout + done.stderr


@pytest.mark.full
def test_without_chromium_the_browser_tests_skip_with_the_reason(tmp_path):
    output = _pytest_without_chromium(tmp_path)
    assert "1 skipped" in output, output
    assert "no Chromium: install the Debian package chromium" in output, output


@pytest.mark.full
def test_without_chromium_the_browser_tests_fail_where_they_are_required(tmp_path):
    output = _pytest_without_chromium(tmp_path, RETRIEVAL_GATE_BROWSER="required")
    assert "1 error" in output, output
    assert ("the browser tests are required here (RETRIEVAL_GATE_BROWSER=required), but: "
            "no Chromium: install the Debian package chromium") in output, output
