"""The report's test and grid sections: the best cell's test metrics, then every grid cell, the
heatmaps and the optimizer curves at the best cell's lr and batch size."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from tinytf.analysis.grid import MissingCell, best_cell, cell_key, load_cells, load_curves
from tinytf.analysis.power import detectable_difference
from tinytf.errors import DataError
from tinytf.report import tables as rt
from tinytf.report.facts import UPSTREAM

METRICS_KEYS = (
    "test_accuracy",
    "test_accuracy_ci95",
    "test_macro_f1",
    "best.optimizer",
    "best.lr",
    "best.batch_size",
    "best.epochs",
    "best.validation_accuracy",
    "best.validation_loss",
)


def grid_section(report) -> None:
    """Add the test tables, then the grid's, to a `tinytf.report.build._Report`."""
    from tinytf.report.plots import plot_grid_heatmaps, plot_optimizer_curves

    grid_dir = report.inputs.exists("grid")  # first: missing inputs are listed in the order read
    metrics = _test_tables(report)
    loaded = _grid_cells(report, grid_dir) if grid_dir is not None else None
    if loaded is None:
        return
    cells, curves = loaded
    if metrics is not None:
        best = {k: metrics["best"][k] for k in ("optimizer", "lr", "batch_size", "epochs")}
    else:
        best = best_cell(cells)[["optimizer", "lr", "batch_size", "epochs"]].to_dict()
    best_key = cell_key(**best)
    if best_key not in set(cells["key"]):
        report.notes.append(
            f"`reports/metrics.json` names best cell {best_key}, which is not in the current grid: "
            "re-run `dvc repro evaluate`."
        )
    report.f.grid, report.f.best = cells, best
    grid = report.params.grid
    report.table(
        "grid",
        "Optimizer × learning rate × batch size × epochs",
        "Final train and validation "
        f"metrics of every grid cell (init `{grid.init}`, seed {grid.seed}); "
        f"the best by validation accuracy is marked.{grid_resolution(report.f.finetune, cells)}",
        rt.grid_table(cells, best_key),
    )
    report.plot(
        "grid_heatmaps",
        "Validation accuracy over learning rate × batch size, one panel per optimizer.",
        plot_grid_heatmaps,
        cells,
    )
    report.plot(
        "optimizer_curves",
        f"Loss and accuracy per epoch of every optimizer at the best cell's lr "
        f"{best['lr']:g} and batch size {best['batch_size']} (course report 004's optimizer figures).",
        plot_optimizer_curves,
        curves,
        best["lr"],
        best["batch_size"],
    )


def _test_tables(report) -> dict | None:
    """The best cell's test metrics, per-class scores and confusion matrix; returns the metrics."""
    metrics = report.inputs.json("metrics", keys=METRICS_KEYS)
    test = report.inputs.json(
        "evaluate_test_report", keys=("accuracy", "per_class", "confusion_matrix", "classes", "n")
    )
    if metrics is not None:
        report.f.metrics = metrics
        promotion = (metrics.get("promotion") or {}).get("reason")  # what evaluate did with @champion
        said = f" Registry: {promotion} (`tinytf champion show`)." if promotion else ""
        report.table(
            "best",
            "Best grid cell on test",
            "The cell with the highest validation accuracy and its "
            f"test metrics, with the 95% percentile-bootstrap interval of test accuracy.{said}",
            rt.best_table(metrics),
            rt.best_table(metrics).assign(value=lambda t: [rt.fmt_num(v, 4) for v in t["value"]]),
        )
    if test is not None:
        report.f.test_report = test
        path = report.root / UPSTREAM["evaluate_test_report"].path
        report.table(
            "per_class",
            "Per-class test metrics",
            "Precision, recall, F1 and support of the best cell on the test split.",
            rt.per_class_table(test, path),
        )
        report.table(
            "confusion",
            "Confusion matrix",
            "Test counts of the best cell: rows the true class, columns the predicted one.",
            rt.confusion_table(test, path),
        )
    return metrics


def _grid_cells(report, grid_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """Every cell of the current grid params and its curves, each result file checked first; None
    (listed as missing) while a cell has no result yet."""
    for path in sorted(grid_dir.glob("*.result.json")):  # the cell results (not the model configs)
        try:
            result = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise DataError(f"{path}: not valid JSON ({exc})") from None
        if isinstance(result, dict) and "cell" in result:
            columns = (f"final.{k}" for k in rt.GRID_COLUMNS[4:])
            rt.require(result, path, "history", "final", "checkpoint", *columns)
    try:
        return load_cells(report.params.grid, grid_dir), load_curves(report.params.grid, grid_dir)
    except MissingCell as exc:  # a cell of the current params has no result yet
        report.inputs.missing.append(
            ("grid cell", f"{UPSTREAM['grid'].path}/{exc.key}.result.json", "dvc repro grid")
        )
        return None
    except KeyError as exc:
        raise DataError(f"{grid_dir}: a grid cell result lacks {exc}") from None


def grid_resolution(finetune: dict | None, cells: pd.DataFrame | None = None) -> str:
    """What one seed per grid cell can tell apart: the seed spread of the validation accuracy a
    choice reads (the fine-tuning curve's all-label pretrained runs, at their chosen epoch), and
    the cells that tie with the best by that measure."""
    arm = (((finetune or {}).get("label_curve") or {}).get("all") or {}).get("pretrained") or {}
    by_seed = arm.get("validation_by_seed") or {}
    if len(by_seed) < 2:
        return ""
    n = len(by_seed)
    std = float(np.std(list(by_seed.values()), ddof=1))
    apart = detectable_difference(std, 1, n - 1)
    text = (
        f" Each cell is one seed; one seed's validation accuracy moves by {100 * std:.2f} points (std over "
        f"the {n} seeds of the all-label pretrained runs, finetune stage), so two cells need about "
        f"{100 * apart:.1f} points between them to be told apart."
    )
    if cells is not None and len(cells) > 1:
        best = cells["validation_accuracy"].max()
        ties = cells[(best - cells["validation_accuracy"] < apart) & (cells["validation_accuracy"] < best)]
        text += (
            f" {len(ties)} other cell(s) lie within that of the best, so the best ties with them: "
            + ", ".join(ties.sort_values("validation_accuracy", ascending=False)["key"])
            + "."
            if len(ties)
            else " No other cell lies within that of the best."
        )
    return text
