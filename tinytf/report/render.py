"""The README from its view: Jinja2 templates under templates/, one per section, with the number
phrasings of tinytf.report.phrases as filters. The view is what `tinytf.report.derive` made of the
facts, kept as readme.json beside the README, so a committed README can be rendered again from
its own folder (tests/contract/test_committed_reports.py)."""

from __future__ import annotations

import json
from pathlib import Path

from tinytf.data.markdown import environment
from tinytf.errors import DataError
from tinytf.io import write_text
from tinytf.report.phrases import FILTERS

ENV = environment("tinytf.report")
ENV.filters.update(FILTERS)


def render(view: dict, template: str = "readme.md.j2") -> str:
    return ENV.get_template(template).render(view)


def write_view(path: str | Path, view: dict) -> None:
    """The view as JSON in its own key order (a dict's order is the text's: starts in params
    order): a line per section and per entry of a section, each entry on one line."""
    write_text(path, _dumps(view, 0) + "\n")


def _dumps(value, depth: int) -> str:
    if depth == 2 or not isinstance(value, (dict, list)) or not value:
        return json.dumps(value, ensure_ascii=False)
    pad = "\n" + " " * (depth + 1)
    if isinstance(value, list):
        return "[" + pad + ("," + pad).join(_dumps(v, depth + 1) for v in value) + "\n" + " " * depth + "]"
    items = (f"{json.dumps(k, ensure_ascii=False)}: {_dumps(v, depth + 1)}" for k, v in value.items())
    return "{" + pad + ("," + pad).join(items) + "\n" + " " * depth + "}"


def read_view(path: str | Path) -> dict:
    """The view a report folder's readme.json holds; a malformed file is named."""
    path = Path(path)
    try:
        view = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(view, dict):
            raise TypeError("not an object")
        return view
    except (OSError, json.JSONDecodeError, TypeError) as exc:
        raise DataError(f"{path}: not a report view ({type(exc).__name__}: {exc})") from None


def caption(name: str, **values) -> str:
    """The sentence of a table or plot: macro `name` of templates/captions.md.j2."""
    return str(getattr(ENV.get_template("captions.md.j2").module, name)(**values))
