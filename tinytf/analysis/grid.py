"""The grid study (the core of stages `grid` and `evaluate`): one classifier per optimizer x lr
x batch size x epochs cell, then the best cell by validation accuracy (ties: lower validation loss) evaluated on test.

Cells are a DVC matrix: each writes `data/grid/<key>.result.json` (curves and final
validation metrics) and `data/grid/<key>.pt` + `.json` (the trained classifier), so adding a value to a list runs
only the new cells. The same cells give course report 004's optimizer comparison: fix lr and batch
size and read the curves per optimizer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from tinytf.params.config import GridParams

# what reports/metrics.json records of the best cell
BEST_COLUMNS = ["optimizer", "lr", "batch_size", "epochs", "validation_accuracy", "validation_loss"]


class MissingCell(FileNotFoundError):
    """A cell of the current params has no result file yet."""

    def __init__(self, grid_dir: str | Path, key: str):
        super().__init__(f"{grid_dir}: no result for grid cell {key}; run `dvc repro grid`")
        self.key = key


def format_lr(lr: float) -> str:
    return f"{lr:g}"


def cell_key(optimizer: str, lr: float, batch_size: int, epochs: int) -> str:
    return f"{optimizer}-lr{format_lr(lr)}-bs{batch_size}-ep{epochs}"


def cells(params: GridParams) -> list[dict]:
    return [
        {"optimizer": o, "lr": lr, "batch_size": b, "epochs": e}
        for o in params.optimizers
        for lr in params.lrs
        for b in params.batch_sizes
        for e in params.epochs
    ]


def _results(params: GridParams, grid_dir: str | Path) -> list[tuple[dict, dict]]:
    """(cell, result) for every cell of the current params, found by content, not file name
    (a file name depends on how the lr was written in params.yaml; the JSON holds the value)."""
    found = {}
    for path in sorted(Path(grid_dir).glob("*.result.json")):
        result = json.loads(path.read_text())
        cell = result.get("cell", {})
        found[(cell.get("optimizer"), cell.get("lr"), cell.get("batch_size"), cell.get("epochs"))] = result
    out = []
    for cell in cells(params):
        result = found.get((cell["optimizer"], cell["lr"], cell["batch_size"], cell["epochs"]))
        if result is None:
            raise MissingCell(grid_dir, cell_key(**cell))
        out.append((cell, result))
    return out


def load_cells(params: GridParams, grid_dir: str | Path) -> pd.DataFrame:
    """One row per cell of the current params (stale cells from removed values are ignored)."""
    return pd.DataFrame(
        {**cell, "key": cell_key(**cell), "checkpoint": result["checkpoint"], **result["final"]}
        for cell, result in _results(params, grid_dir)
    )


def load_curves(params: GridParams, grid_dir: str | Path) -> pd.DataFrame:
    frames = [pd.DataFrame(result["history"]).assign(**cell) for cell, result in _results(params, grid_dir)]
    return pd.concat(frames, ignore_index=True)


def best_cell(table: pd.DataFrame) -> pd.Series:
    ranked = table.sort_values(
        ["validation_accuracy", "validation_loss"], ascending=[False, True], kind="stable"
    )
    return ranked.iloc[0]
