"""The report's test and grid tables: the served model's test metrics, then every grid cell
(finalists with their mean ± std over seeds), the winner against the runner-up, the optimizer
verdict, the heatmaps and the optimizer curves at the winner's lr and batch size."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tinytf.analysis.grid import cell_key
from tinytf.analysis.power import detectable_difference, pooled_seed_std
from tinytf.report import tables as rt
from tinytf.report.artifacts import Plot, Table
from tinytf.report.facts import UPSTREAM
from tinytf.report.model_card import runner_up_outcome
from tinytf.report.render import caption


def grid_tables(f, params) -> list:
    """The best cell's test tables, then every grid cell, its heatmaps and optimizer curves."""
    from tinytf.report.plots import plot_grid_heatmaps, plot_optimizer_curves

    out = _test_tables(f)
    if f.grid is None:
        return out
    cells, best, grid = f.grid, f.best, params.grid
    selection = (f.metrics or {}).get("grid_selection")
    finalists = (selection or {}).get("finalists")
    sentence = caption(
        "grid",
        start=grid.start,
        seed=grid.seed,
        finalists=len(grid.finalists),
        finalist_seeds=grid.finalist_seeds,
        resolution=grid_resolution(f.finetune, cells, finalists),
        selection=selection_text(selection) if selection else "",
    )
    table = rt.grid_table(cells, cell_key(**best), finalists)
    lr, batch_size = best["lr"], best["batch_size"]
    curves = caption("plot_optimizer_curves", lr=lr, batch_size=batch_size)
    return out + [
        Table("grid", "Optimizer × learning rate × batch size × epochs", sentence, table),
        Plot("grid_heatmaps", caption("plot_grid_heatmaps"), plot_grid_heatmaps, (cells,)),
        Plot("optimizer_curves", curves, plot_optimizer_curves, (f.grid_curves, lr, batch_size)),
    ]


def _test_tables(f) -> list:
    """The best cell's test metrics, per-class scores and confusion matrix."""
    out, metrics, test = [], f.metrics, f.test_report
    if metrics is not None:
        promotion = (metrics.get("promotion") or {}).get("reason")  # what evaluate did with @champion
        table = rt.best_table(metrics)
        shown = table.assign(value=lambda t: [rt.fmt_num(v, 4) for v in t["value"]])
        out.append(
            Table("best", "The grid's winner on test", caption("best", promotion=promotion), table, shown)
        )
    if test is not None:
        path = f.root / UPSTREAM["evaluate_test_report"].path
        per_class, confusion = rt.per_class_table(test, path), rt.confusion_table(test, path)
        out.append(Table("per_class", "Per-class test metrics", caption("per_class"), per_class))
        out.append(Table("confusion", "Confusion matrix", caption("confusion"), confusion))
    return out


def selection_text(selection: dict) -> str:
    """The winner against the runner-up with their tests, then the optimizer verdict."""
    runner_up, test = selection.get("runner_up"), selection.get("test")
    return caption(
        "selection",
        winner=selection["winner"],
        runner_up=runner_up if runner_up and test else None,
        said=runner_up_outcome(test) if runner_up and test else None,
        p_seeds=(test or {}).get("decisive_p"),
        p_items=(test or {}).get("items", {}).get("p_value"),
        served=selection["served"]["seed"],
        pairs=selection["optimizers"]["pairs"],
        caveat=selection["optimizers"].get("caveat"),
    )


def grid_resolution(
    finetune: dict | None, cells: pd.DataFrame | None = None, finalists: list[dict] | None = None
) -> str:
    """What the grid can tell apart: from the finalists' validation spread over their seeds where
    there are finalists, else from the seed spread of the fine-tuning curve's all-label pretrained
    runs; and the cells that tie with the best by that measure."""
    if finalists and len(finalists[0]["seeds"]) > 1:
        return _finalist_resolution(finalists)
    start = (((finetune or {}).get("label_curve") or {}).get("all") or {}).get("pretrained") or {}
    by_seed = start.get("validation_by_seed") or {}
    if len(by_seed) < 2:
        return ""
    n = len(by_seed)
    std = float(np.std(list(by_seed.values()), ddof=1))
    apart = detectable_difference(std, 1, n - 1)
    ties = None
    if cells is not None and len(cells) > 1:
        best = cells["validation_accuracy"].max()
        near = cells[(best - cells["validation_accuracy"] < apart) & (cells["validation_accuracy"] < best)]
        ties = list(near.sort_values("validation_accuracy", ascending=False)["key"])
    return caption("seed_resolution", n=n, std=std, apart=apart, ties=ties)


def _finalist_resolution(finalists: list[dict]) -> str:
    """The seed-to-seed std pooled over the finalists, and the finalists that tie with the winner."""
    n = len(finalists[0]["seeds"])
    runs = pd.DataFrame(
        {"key": f["key"], "accuracy": a} for f in finalists for a in f["validation_by_seed"].values()
    )
    std, df = pooled_seed_std(runs, "accuracy", by=("key",))
    apart = detectable_difference(std, n, df) if std else None
    best = finalists[0]["validation_accuracy_mean"]
    ties = [
        f["key"] for f in finalists[1:] if apart is not None and best - f["validation_accuracy_mean"] < apart
    ]
    return caption("finalist_resolution", n=n, std=std, finalists=len(finalists), apart=apart, ties=ties)
