"""A reviewer's read of the demo's PR comment, as a checklist, and the comment as a browser shows it.

The checklist: the first line decides; every figure says which queries it is measured on; the
headline, the table and the verdict's reasons do not contradict each other. Then the comment is
rendered as GitHub renders Markdown (CommonMark, tables, raw <details>) and opened in headless
Chromium, which must show tables and text, not escapes or stray markup.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from gate.common.numbers import signed

ICONS = {"fail": "❌", "pass": "✅", "inconclusive": "⚠️", "skipped": "⏭️", "accepted": "☑️"}


def _plain(text: str) -> str:
    """A comment line as a reader sees it: typographic minus as '-', Markdown escapes undone."""
    return re.sub(r"\\(.)", r"\1", text.replace("−", "-"))


def test_the_first_line_decides(demo):
    first = demo.comment.splitlines()[0]
    kind = demo.report["verdict"]["kind"]
    assert first.startswith(f"### {ICONS[kind]} {kind} — ")
    assert _plain(first[4:]) == demo.report["verdict"]["headline"].replace("−", "-")


def test_the_headline_the_table_and_the_report_give_the_same_delta(demo):
    report, lines = demo.report, demo.comment.splitlines()
    delta = report["delta"]
    expected = f"{report['metric']} {signed(delta['mean'])} [{signed(delta['ci_low'])}, {signed(delta['ci_high'])}]"
    assert expected in _plain(lines[0])
    row = next(line for line in lines if line.startswith(f"| **{report['metric']}** |"))
    cells = [c.strip() for c in _plain(row).strip("|").split("|")]
    assert cells[3:5] == [signed(delta["mean"]), f"[{signed(delta['ci_low'])}, {signed(delta['ci_high'])}]"]
    assert cells[1:3] == [f"{report['baseline']['mean']:.3f}", f"{report['candidate']['mean']:.3f}"]


def test_the_reasons_listed_are_the_verdicts_and_agree_with_it(demo):
    verdict = demo.report["verdict"]
    # A finding in the change's favour inside a verdict that is not a pass ("no regression shown"
    # under a fail) is a plain bullet, not a check mark.
    bullets = [line for line in demo.comment.splitlines() if re.match(r"- (❌|✅|⚠️|☑️|•) ", line)]
    assert [_plain(b.split(" ", 2)[2]) for b in bullets] == [r["message"] for r in verdict["reasons"]]
    failing = [b for b in bullets if b.startswith("- ❌")]
    assert (verdict["kind"] == "fail") == bool(failing)
    # Each failing bullet names a rule the report holds as a failure.
    assert len(failing) == sum(r["code"] not in ("non_inferior", "improvement_shown", "no_regression_shown",
                                                 "unchanged", "not_relevant", "warning")
                               for r in verdict["reasons"])


def test_every_figure_says_which_queries_it_is_measured_on(demo):
    report, text = demo.report, _plain(demo.comment)
    reporting = report["verdict"]["reporting_set"]["query_count"]
    everyone = report["delta_all_queries"]["query_count"]
    judged = report["judged"]["query_count"]
    assert reporting < everyone == judged  # the demo's leaked queries leave the reporting set
    assert text.splitlines()[0].endswith(f"— {reporting} q")
    assert f"primary measure **{report['metric']}** on {reporting} queries (" in text
    assert f"Paired over {reporting} queries:" in text
    assert f"On all {everyone} judged queries (before the validity checks):" in text
    assert f"**Judged@10** on all {judged} judged golden queries:" in text
    assert re.search(rf"\*\*Attribution\*\* \([^)]*on the same {reporting} queries\)", text)
    # The reporting set is named where it is defined, with its size.
    assert f"**Reporting set**: {report['verdict']['reporting_set']['name']}, {reporting} queries." in text


def test_no_negative_zero_and_no_unsigned_delta_in_the_comment(demo):
    text = _plain(demo.comment)
    assert not re.search(r"-0\.0+(?![0-9])", text)
    for line in text.splitlines():
        if line.startswith("| ") and "Δ" not in line and "[" in line:
            # interval ends carry their sign; one that rounds to zero has none (0.000)
            assert not re.search(r"\[(?!0\.0+[,\]])\d", line), line


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


# The page's own script (not data): it reads what the browser rendered and writes its findings
# into the DOM, which --dump-dom prints.
_HARNESS = """
<script>
window.addEventListener('load', () => {
  const body = document.getElementById('comment');
  const text = body.innerText;
  const found = {
    tables: body.querySelectorAll('table').length,
    details: body.querySelectorAll('details').length,
    first: body.firstElementChild ? body.firstElementChild.tagName + ':' + body.firstElementChild.innerText : '',
    active: body.querySelectorAll('script, img, iframe, object, embed, form, input, style').length,
    escapes: ['\\\\_', '\\\\*', '\\\\[', '&gt;', '&lt;', '&amp;', '&#124;', '|---', '**'].filter(s => text.includes(s)),
  };
  const out = document.createElement('pre');
  out.id = 'findings';
  out.textContent = JSON.stringify(found);
  document.documentElement.appendChild(out);
});
</script>
"""


def test_the_comment_renders_in_a_browser_as_tables_and_text(demo, tmp_path):
    markdown_it = pytest.importorskip("markdown_it")
    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium here (Debian: apt-get install chromium)")
    # GitHub's flavour, as far as the comment uses it: CommonMark, pipe tables, raw <details>.
    html = markdown_it.MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough") \
        .render(demo.comment)
    page = tmp_path / "comment.html"
    page.write_text(f"<!doctype html><html><head><meta charset='utf-8'></head><body><div id='comment'>{html}</div>"
                    f"{_HARNESS}</body></html>", encoding="utf-8")
    done = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                           "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    match = re.search(r'<pre id="findings">(.*?)</pre>', done.stdout, re.S)
    assert match, done.stderr[-2000:]
    found = json.loads(match.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<")
                       .replace("&gt;", ">"))
    separators = sum(1 for line in demo.comment.splitlines() if re.match(r"^\|(\s*:?-+:?\s*\|)+\s*$", line))
    assert found["tables"] == separators > 0
    assert found["details"] == demo.comment.count("<details>") > 0
    assert found["first"].startswith("H3:") and found["first"][3:].replace("−", "-").startswith(
        demo.report["verdict"]["headline"].replace("−", "-")[:40])
    assert found["active"] == 0  # the data (query texts, ids, config values) stayed text
    assert found["escapes"] == []
