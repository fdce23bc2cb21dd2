"""Reading the upstream files the report uses (`UPSTREAM[name]`): an absent one is recorded in
`Inputs.missing` (what, path, the command that makes it) and its part of the report skipped; one
that is there but malformed (not JSON / CSV, or missing a key or column the report reads) raises
`DataError` naming the file."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from tinytf.errors import DataError
from tinytf.report.facts import UPSTREAM


@dataclass
class Inputs:
    root: Path
    missing: list[tuple[str, str, str]] = field(default_factory=list)  # (what, path, how to make it)
    body: int = 1  # the first of pretrain.seeds: whose pretraining files the report reads

    def path(self, name: str) -> Path:
        return self.root / UPSTREAM[name].path.format(seed=self.body)

    def exists(self, name: str) -> Path | None:
        path = self.path(name)
        if path.exists():
            return path
        what, _, stage = UPSTREAM[name]
        self.missing.append((what, str(path.relative_to(self.root)), f"dvc repro {stage}"))
        return None

    def json(self, name: str, keys: tuple[str, ...] = ()) -> dict | None:
        path = self.exists(name)
        if path is None:
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise DataError(f"{path}: not valid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise DataError(f"{path}: expected a JSON object, got {type(data).__name__}")
        require(data, path, *keys)
        return data

    def split(self, name: str) -> pd.DataFrame | None:
        """A table the checks stage wrote as {"columns", "data"}."""
        data = self.json(name, keys=("columns", "data"))
        return None if data is None else pd.DataFrame(data["data"], columns=data["columns"])

    def parquet(self, name: str, columns: tuple[str, ...] = ()) -> pd.DataFrame | None:
        return self._frame(name, columns, pd.read_parquet, "parquet file", (OSError, ValueError))

    def csv(self, name: str, columns: tuple[str, ...] = ()) -> pd.DataFrame | None:
        bad = (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError)
        frame = self._frame(name, columns, pd.read_csv, "CSV", bad)
        if frame is not None and frame.empty:
            raise DataError(f"{self.path(name)}: no rows")
        return frame

    def _frame(self, name: str, columns: tuple[str, ...], read, kind: str, bad: tuple) -> pd.DataFrame | None:
        """The file as a DataFrame with `columns`, None when absent; DataError naming it otherwise."""
        path = self.exists(name)
        if path is None:
            return None
        try:
            frame = read(path)
        except bad as exc:
            raise DataError(f"{path}: not a readable {kind} ({exc})") from None
        absent = [c for c in columns if c not in frame.columns]
        if absent:
            raise DataError(f"{path}: missing column(s) {absent}; has {list(frame.columns)}")
        return frame


def require(data: dict, path: Path | str, *dotted: str) -> None:
    """Raise DataError naming `path` unless every dotted key ('best.lr') is present."""
    for key in dotted:
        node = data
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                raise DataError(f"{path}: missing key '{key}'")
            node = node[part]
