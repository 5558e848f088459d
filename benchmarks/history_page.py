"""Which way to draw the history page: measured, not guessed (docs/history.md quotes the output).

A history of 200 baselines x 7 series (the primary metric and 6 strata, two breaks, a noise band,
a 95% interval per point) drawn three ways:

* ``svg``: the gate's own server-side SVG (gate.rendering.history.render_page): no script;
* ``uplot``: uPlot (npm ``uplot``), inlined with the data and a script that draws 7 charts;
* ``chartjs``: Chart.js (npm ``chart.js``), inlined the same way.

For each: the page's size (bytes, and gzipped), the time to build it in Python (median of 5),
and, where headless Chromium is installed, how it behaves offline: the page is opened from a
file with every network request refused (``--host-resolver-rules``), under the CSP the gate's
page uses (the inline script and style allowed by their hashes), and the wall time to a
screenshot and the console errors are read from Chromium's log.

    npm pack uplot chart.js   # in a scratch folder; extract each .tgz into a folder of its name
    python benchmarks/history_page.py --npm /tmp/history-npm

The libraries are never vendored into the repository; without ``--npm`` only ``svg`` is measured.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gate.rendering.history import render_page  # noqa: E402
from gate.report.history_records import Baseline, Break, History, Point, Series  # noqa: E402

BASELINES, STRATA = 200, 6


def synthetic_history(count: int = BASELINES, strata: int = STRATA, seed: int = 7) -> History:
    """A deterministic history: a slow drift, two breaks (golden set, then qrels)."""
    rng = np.random.default_rng(seed)
    breaks = (Break(count // 3, "golden set changed: 80 -> 140 queries"), Break(2 * count // 3, "qrels changed"))
    baselines = tuple(Baseline(f"{i:040x}", f"2025-01-{1 + i % 28:02d}T12:00:00+00:00", f"Change {i} (#{i})", i,
                               None, "nDCG@10", 1, 140, "a" * 64, "b" * 64, 0.01) for i in range(count))

    def series(name: str, stratum: str | None, level: float) -> Series:
        values = np.clip(level + np.cumsum(rng.normal(0, 0.005, count)), 0.05, 0.95)
        return Series(name, stratum, tuple(Point(float(v), float(v) - 0.03, float(v) + 0.03, 140, 0.01)
                                           for v in values))

    all_series = (series("nDCG@10", None, 0.55),) + tuple(series(f"nDCG@10 · s{k}", f"s{k}", 0.3 + 0.08 * k)
                                                          for k in range(strata))
    return History("retrieval-gate-baselines", "nDCG@10", 7, 2000, "first-parent", "strata", None, baselines,
                   all_series, breaks, ())


def _js_data(history: History) -> dict:
    """What a client-side library needs: x, and per series value/low/high with null at each break."""
    starts = {b.index for b in history.breaks}
    xs: list[float] = []
    for i in range(len(history.baselines)):
        if i in starts:
            xs.append(i - 0.5)  # a null point: the line breaks here
        xs.append(float(i))
    out = []
    for s in history.series:
        cols: dict[str, list] = {"value": [], "low": [], "high": []}
        for i, p in enumerate(s.points):
            if i in starts:
                for c in cols.values():
                    c.append(None)
            for key in cols:
                cols[key].append(None if p is None else round(getattr(p, key), 5))
        out.append({"name": s.name, **cols})
    return {"x": xs, "series": out}


UPLOT_INIT = """
const data = JSON.parse(document.getElementById('history-data').textContent);
for (const s of data.series) {
  const el = document.createElement('div'); document.getElementById('charts').appendChild(el);
  new uPlot({title: s.name, width: 960, height: s === data.series[0] ? 340 : 190,
    series: [{}, {label: 'value', stroke: '#e8590c', points: {show: true, size: 5, fill: '#e8590c'}},
             {label: 'low', stroke: '#adb5bd'}, {label: 'high', stroke: '#adb5bd'}],
    bands: [{series: [3, 2], fill: 'rgba(206,212,218,0.45)'}], scales: {x: {time: false}}},
    [data.x, s.value, s.low, s.high], el);
}
"""

CHARTJS_INIT = """
const data = JSON.parse(document.getElementById('history-data').textContent);
for (const s of data.series) {
  const c = document.createElement('canvas');
  c.width = 960; c.height = s === data.series[0] ? 340 : 190; document.getElementById('charts').appendChild(c);
  new Chart(c, {type: 'line', options: {animation: false, responsive: false, spanGaps: false,
      plugins: {title: {display: true, text: s.name}}, scales: {x: {type: 'linear'}}},
    data: {labels: data.x, datasets: [
      {label: 'high', data: s.high, borderColor: '#adb5bd', pointRadius: 0, fill: '+1',
       backgroundColor: 'rgba(206,212,218,0.45)'},
      {label: 'low', data: s.low, borderColor: '#adb5bd', pointRadius: 0},
      {label: 'value', data: s.value, borderColor: '#868e96', pointBackgroundColor: '#e8590c', pointRadius: 3}]}});
}
"""


def embedded_json(data: object) -> str:
    """JSON safe inside a ``<script>`` element: no ``</script>``, ``<!--`` or line separators."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                         ("\u2029", "\\u2029")):
        text = text.replace(raw, escaped)
    return text


def _sha(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def client_page(library_js: str, init_js: str, history: History, css: str = "") -> str:
    """The gate's page with its SVG charts taken out and the library, the data and the init
    script put in (the heading, notes and table stay: only the drawing differs), under a CSP
    that allows exactly the inline blocks by their hashes."""
    page = re.sub(r"<svg .*?</svg>\n?", "", render_page(history), flags=re.DOTALL)
    style = re.search(r"<style>(.*?)</style>", page, re.DOTALL)
    assert style is not None
    script = library_js + "\n" + init_js
    page = page.replace(style.group(0), f"<style>{style.group(1)}{css}</style>")
    page = re.sub(r'content="default-src [^"]*"', f'content="default-src \'none\'; script-src \'{_sha(script)}\'; '
                  f'style-src \'{_sha(style.group(1) + css)}\'"', page)
    charts = (f'<div id="charts"></div><script type="application/json" id="history-data">'
              f"{embedded_json(_js_data(history))}</script><script>{script}</script>")
    return page.replace("<h2>Baselines</h2>", charts + "\n<h2>Baselines</h2>", 1)


def _median_seconds(build, repeats: int = 5) -> tuple[float, str]:
    times, page = [], ""
    for _ in range(repeats):
        start = time.perf_counter()
        page = build()
        times.append(time.perf_counter() - start)
    return statistics.median(times), page


def chromium() -> str | None:
    return os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser") \
        or shutil.which("google-chrome")


def open_offline(browser: str, page: Path) -> tuple[float, int, int]:
    """Wall seconds to a screenshot, console errors and CSP refusals, with the network refused."""
    with tempfile.TemporaryDirectory() as profile:
        shot = Path(profile) / "shot.png"
        start = time.perf_counter()
        proc = subprocess.run([browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
                               "--v=0", f"--user-data-dir={profile}", "--host-resolver-rules=MAP * ~NOTFOUND",
                               "--window-size=1000,900", f"--screenshot={shot}", page.as_uri()],
                              capture_output=True, text=True, timeout=120)
        seconds = time.perf_counter() - start
    log = proc.stderr.splitlines()
    console = [line for line in log if "CONSOLE" in line and ("Uncaught" in line or "error" in line.lower())]
    refused = [line for line in log if "Refused to" in line or "Content Security Policy" in line]
    return seconds, len(console), len(refused)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--npm", type=Path, help="folder holding uplot-*/ and chart.js-*/ (npm pack, extracted)")
    parser.add_argument("--no-browser", action="store_true", help="do not open the pages in Chromium")
    args = parser.parse_args(argv)
    history = synthetic_history()
    builds = {"svg": lambda: render_page(history)}
    if args.npm is not None:
        uplot = next(args.npm.glob("uplot-*/package/dist"))
        chart = next(args.npm.glob("chart.js-*/package/dist"))
        uplot_js, uplot_css = (uplot / "uPlot.iife.min.js").read_text(), (uplot / "uPlot.min.css").read_text()
        chart_js = (chart / "chart.umd.min.js").read_text()
        builds["uplot"] = lambda: client_page(uplot_js, UPLOT_INIT, history, uplot_css)
        builds["chartjs"] = lambda: client_page(chart_js, CHARTJS_INIT, history)
    browser = None if args.no_browser else chromium()
    rows = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name, build in builds.items():
            seconds, page = _median_seconds(build)
            path = Path(scratch) / f"{name}.html"
            path.write_text(page, encoding="utf-8")
            data = page.encode()
            rows[name] = (len(data), len(gzip.compress(data, 9)), seconds,
                          open_offline(browser, path) if browser else None)
    print(f"history of {BASELINES} baselines x {1 + STRATA} series; browser: {browser or 'none'}")
    print(f"{'page':8} {'bytes':>9} {'gzip':>8} {'build ms':>9} {'open s':>7} {'console errors':>15} "
          f"{'CSP refusals':>13}")
    svg = rows["svg"]
    for name, (size, packed, seconds, opened) in rows.items():
        shown = f"{opened[0]:7.2f} {opened[1]:15d} {opened[2]:13d}" if opened else f"{'-':>7} {'-':>15} {'-':>13}"
        print(f"{name:8} {size:9d} {packed:8d} {seconds * 1000:9.1f} {shown}   "
              f"(x{size / svg[0]:.2f} bytes, x{packed / svg[1]:.2f} gzip of svg)")
    print(json.dumps({k: {"bytes": v[0], "gzip": v[1], "build_ms": round(v[2] * 1000, 1)} for k, v in rows.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
