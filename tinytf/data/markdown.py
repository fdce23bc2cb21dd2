"""The Jinja2 settings of every Markdown template (the data card here, the report's README and
model card in tinytf.report.render): in the bottom layer so that every layer may use them."""

from __future__ import annotations

import jinja2


def environment(package: str) -> jinja2.Environment:
    """Templates from `package`'s templates/ folder: a missing value is an error, not a blank,
    and a line that holds only a tag leaves no line behind."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader(package, "templates"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,  # Markdown, not HTML
    )
