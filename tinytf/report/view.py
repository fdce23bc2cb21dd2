"""What the README text reads, as one JSON file beside it (`readme.json`), and back.

`render_readme` reads a `ReportView`: the typed facts, the params, the missing inputs, the notes,
the tables and plots listed, and the stage files published. The report stage writes that view
with the README, and a preset's export copies it, so any committed README can be compared with
what today's generator writes from its own folder (tests/contract/test_committed_reports.py),
with no pipeline output at hand. Frames keep their dtypes and floats their every digit: the
same view gives the same bytes.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd

from tinytf.errors import DataError
from tinytf.io import write_text
from tinytf.params.schema import to_dict
from tinytf.report.facts import Facts

FRAME = "__frame__"  # marks a DataFrame in the JSON


@dataclasses.dataclass
class ReadmeView:
    f: Facts
    params: Any  # the report's params, read-only attributes (p.model.d_model, ...)
    missing: list  # (what, path, how to make it) per absent input
    notes: list[str]
    tables: list  # (link, sentence)
    plots: list  # (link, sentence)
    published: list[str]  # the stages' own files beside the README


def view_json(r) -> dict:
    """The view of a report being built (tinytf.report.build), JSON-ready."""
    params = r.params.as_dict() if hasattr(r.params, "as_dict") else to_dict(r.params)
    return {
        "facts": {fld.name: _plain(getattr(r.f, fld.name)) for fld in dataclasses.fields(Facts)},
        "params": _plain(params),
        "missing": _plain(r.missing),
        "notes": list(r.notes),
        "tables": _plain(r.tables),
        "plots": _plain(r.plots),
        "published": list(r.published),
    }


def write_view(path: str | Path, view: dict) -> None:
    """The view as JSON in its own key order (a dict's order is the text's: starts in params order)."""
    write_text(path, json.dumps(view, indent=1, ensure_ascii=False) + "\n")


def read_view(path: str | Path) -> ReadmeView:
    """The view a report folder's readme.json holds; a malformed file is named."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        facts = Facts(**{name: _typed(value) for name, value in data["facts"].items()})
        return ReadmeView(
            f=facts,
            params=_namespace(data["params"]),
            missing=data["missing"],
            notes=data["notes"],
            tables=data["tables"],
            plots=data["plots"],
            published=data["published"],
        )
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise DataError(f"{path}: not a report view ({type(exc).__name__}: {exc})") from None


def _plain(value: Any) -> Any:
    """JSON's own types: a frame marked with its dtypes and index, numpy scalars as Python ones."""
    if isinstance(value, pd.DataFrame):
        return {
            FRAME: {
                "columns": [_plain(c) for c in value.columns],
                "dtypes": [str(t) for t in value.dtypes],
                "index": [_plain(i) for i in value.index],
                "index_names": [_plain(n) for n in value.index.names],
                "data": [[_plain(v) for v in row] for row in value.itertuples(index=False)],
            }
        }
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _typed(value: Any) -> Any:
    """A marked frame back as the DataFrame it was (columns, dtypes, index); the rest as is."""
    if isinstance(value, dict) and FRAME in value:
        spec = value[FRAME]
        names = spec["index_names"]
        if len(names) > 1:
            index = pd.MultiIndex.from_tuples([tuple(i) for i in spec["index"]], names=names)
        else:
            index = pd.Index(spec["index"], name=names[0])
        frame = pd.DataFrame(spec["data"], columns=spec["columns"], index=index, dtype=object)
        return frame.astype(dict(zip(spec["columns"], spec["dtypes"], strict=True)))
    return value


def _namespace(value: Any) -> Any:
    if isinstance(value, dict):
        return SimpleNamespace(**{k: _namespace(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_namespace(v) for v in value]
    return value
