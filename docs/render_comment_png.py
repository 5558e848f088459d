#!/usr/bin/env python3
"""Render the PR comment of a report.json to Markdown and to a PNG screenshot.

    python docs/render_comment_png.py REPORT.json docs/comment.png \
        [--markdown docs/comment-example.md] [--reproduce "retrieval-gate run ..."] \
        [--open-details] [--width 1000] [--chromium chromium]

Writes the comment exactly as the gate would post it (``gate.rendering.comment.render_comment``,
without the hidden marker) to ``--markdown`` (default: ``comment-example.md`` beside
the PNG), turns it into HTML with GitHub-like CSS inlined (markdown-it-py, CommonMark
plus tables and strikethrough, raw HTML allowed as GitHub allows ``<details>``, line
breaks kept as in GitHub comments), and screenshots it with headless Chromium.
Chromium is run twice: once to measure the page's height, once to take the shot at
that height, so the PNG is neither cut nor padded.

A documentation tool, not a runtime dependency of the gate: it needs markdown-it-py
(``pip install markdown-it-py``) and Chromium (Debian: ``apt-get install chromium``;
``fonts-noto-color-emoji`` for the verdict emoji).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gate.rendering.comment import render_comment  # noqa: E402
from gate.report.document import read_report  # noqa: E402

DEFAULT_REPRODUCE = "retrieval-gate run --config .retrieval-gate.yml --base origin/main"
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--hide-scrollbars", "--force-device-scale-factor=1",
]

# GitHub's comment look, approximately (light theme, Primer colours).
CSS = """
* { box-sizing: border-box; }
html, body { margin: 0; background: #ffffff; }
body { font-family: -apple-system, BlinkMacSystemFont, "Segoe UI", "Noto Sans", "Liberation Sans", Helvetica, Arial,
       sans-serif, "Apple Color Emoji", "Segoe UI Emoji", "Noto Color Emoji";
       font-size: 14px; line-height: 1.5; color: #1f2328; padding: 16px; }
.comment { border: 1px solid #d1d9e0; border-radius: 6px; max-width: 100%; }
.comment-header { background: #f6f8fa; border-bottom: 1px solid #d1d9e0; border-radius: 6px 6px 0 0;
                  padding: 8px 16px; color: #59636e; font-size: 14px; }
.comment-header b { color: #1f2328; }
.markdown-body { padding: 16px; word-wrap: break-word; }
.markdown-body > *:first-child { margin-top: 0 !important; }
.markdown-body > *:last-child { margin-bottom: 0 !important; }
h1, h2, h3, h4, h5, h6 { margin-top: 24px; margin-bottom: 16px; font-weight: 600; line-height: 1.25; }
h3 { font-size: 1.25em; }
h4 { font-size: 1em; }
h5 { font-size: .875em; }
p, ul, ol, table, pre, details, blockquote { margin-top: 0; margin-bottom: 16px; }
ul, ol { padding-left: 2em; }
li + li { margin-top: .25em; }
a { color: #0969da; text-decoration: none; }
code, pre, tt { font-family: ui-monospace, SFMono-Regular, "SF Mono", Menlo, Consolas, "DejaVu Sans Mono",
                "Liberation Mono", monospace; font-size: 85%; }
code { padding: .2em .4em; margin: 0; background: rgba(129,139,152,0.12); border-radius: 6px; white-space: pre; }
pre { padding: 16px; overflow: auto; line-height: 1.45; background: #f6f8fa; border-radius: 6px; }
pre code { padding: 0; background: transparent; font-size: 100%; }
table { border-spacing: 0; border-collapse: collapse; display: block; width: max-content; max-width: 100%;
        overflow: auto; font-variant-numeric: tabular-nums; }
table th { font-weight: 600; background: #f6f8fa; }
table th, table td { padding: 6px 13px; border: 1px solid #d1d9e0; }
table tr { background: #ffffff; border-top: 1px solid #d1d9e0; }
table tr:nth-child(2n) { background: #f6f8fa; }
table td code { font-size: 80%; }
blockquote { padding: 0 1em; color: #59636e; border-left: .25em solid #d1d9e0; margin-left: 0; }
details summary { cursor: pointer; display: list-item; }
details[open] summary { margin-bottom: 16px; }
hr { height: .25em; padding: 0; margin: 24px 0; background: #d1d9e0; border: 0; }
sub { font-size: 75%; }
"""


def markdown_to_html(markdown: str) -> str:
    """CommonMark + GFM tables and strikethrough, raw HTML on (as GitHub, whose sanitizer keeps <details>)."""
    try:
        from markdown_it import MarkdownIt
    except ImportError:  # pragma: no cover - a docs tool
        sys.exit("render_comment_png.py needs markdown-it-py: pip install markdown-it-py")
    parser = MarkdownIt("commonmark", {"html": True, "breaks": True}).enable(["table", "strikethrough"])
    return parser.render(markdown)


def page(markdown: str, open_details: bool) -> str:
    body = markdown_to_html(markdown)
    if open_details:
        body = re.sub(r"<details>", "<details open>", body)
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>0</title>
<style>{CSS}</style></head>
<body><div class="comment">
<div class="comment-header"><b>github-actions</b> <span>bot</span> commented</div>
<div class="markdown-body">
{body}
</div></div>
<script>
  window.addEventListener("load", function () {{
    document.title = String(Math.ceil(document.documentElement.scrollHeight));
  }});
</script>
</body></html>
"""


def chromium_binary(name: str | None) -> str:
    for candidate in ([name] if name else ["chromium", "chromium-browser", "google-chrome", "chrome"]):
        found = shutil.which(candidate)
        if found:
            return found
    sys.exit("no Chromium found (Debian: apt-get install chromium), or pass --chromium PATH")


def run_chromium(binary: str, args: list[str], profile: Path) -> subprocess.CompletedProcess:
    command = [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)


def measure_height(binary: str, url: str, width: int, profile: Path) -> int:
    result = run_chromium(binary, ["--virtual-time-budget=3000", f"--window-size={width},800", "--dump-dom", url],
                          profile)
    match = re.search(r"<title>(\d+)</title>", result.stdout)
    if not match:
        raise SystemExit(f"could not measure the page height with Chromium:\n{result.stderr[-2000:]}")
    return int(match.group(1))


def screenshot(html_text: str, out: Path, width: int, chromium: str | None) -> tuple[int, int]:
    binary = chromium_binary(chromium)
    with tempfile.TemporaryDirectory(prefix="comment-png-") as tmp:
        tmp_path = Path(tmp)
        source = tmp_path / "comment.html"
        source.write_text(html_text, encoding="utf-8")
        url = source.as_uri()
        height = measure_height(binary, url, width, tmp_path / "profile-measure")
        shot = tmp_path / "shot.png"
        result = run_chromium(binary, [f"--window-size={width},{height}", f"--screenshot={shot}",
                                       "--virtual-time-budget=3000", url], tmp_path / "profile-shot")
        if not shot.exists():
            raise SystemExit(f"Chromium wrote no screenshot:\n{result.stderr[-2000:]}")
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, out)
    return width, height


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path, help="report.json written by retrieval-gate run")
    parser.add_argument("png", type=Path, help="the PNG to write, e.g. docs/comment.png")
    parser.add_argument("--markdown", type=Path, default=None,
                        help="where to write the comment's Markdown (default: comment-example.md beside the PNG)")
    parser.add_argument("--reproduce", default=DEFAULT_REPRODUCE, help="the reproduce command shown in the comment")
    parser.add_argument("--open-details", action="store_true", help="expand every <details> in the screenshot")
    parser.add_argument("--width", type=int, default=1000, help="window width in CSS pixels (default 1000)")
    parser.add_argument("--chromium", default=None, help="the Chromium binary (default: found on PATH)")
    parser.add_argument("--html", type=Path, default=None, help="also keep the HTML page here")
    args = parser.parse_args(argv)

    report = read_report(json.loads(args.report.read_text(encoding="utf-8")), str(args.report))
    markdown = render_comment(report, reproduce_command=args.reproduce)
    markdown_path = args.markdown or args.png.with_name("comment-example.md")
    markdown_path.parent.mkdir(parents=True, exist_ok=True)
    markdown_path.write_text(markdown, encoding="utf-8")

    html_text = page(markdown, args.open_details)
    if args.html:
        args.html.write_text(html_text, encoding="utf-8")
    width, height = screenshot(html_text, args.png, args.width, args.chromium)
    print(f"wrote {markdown_path} ({len(markdown):,} characters) and {args.png} ({width}x{height})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
