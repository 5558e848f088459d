"""Rendering: jinja2 templates in ``gate/templates`` with escaping filters for data."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import jinja2

from gate.markdown import fixed, md_text, signed


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("gate", "templates"),
        # Markdown, not HTML: autoescape would not stop pipes or @-mentions,
        # so every data value goes through the explicit `md` filter instead.
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["md"] = md_text
    env.filters["signed"] = signed
    env.filters["fixed"] = fixed
    return env


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)
