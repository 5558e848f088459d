"""MkDocs hooks of the docs site (mkdocs.yml ``hooks:``); not a page.

The example PR comment (comment-example.md, written by render_comment_png.py exactly as the gate
posts it) folds its long tables into ``<details>`` blocks, whose Markdown GitHub renders and
Python-Markdown leaves raw. Marking each block ``markdown="1"`` (the md_in_html extension) renders
it on the site as on GitHub, without touching the file.
"""

from __future__ import annotations


def on_page_markdown(markdown: str, page, **_) -> str:
    if page.file.src_uri == "comment-example.md":
        return markdown.replace("<details><summary>", '<details markdown="1"><summary>')
    return markdown
