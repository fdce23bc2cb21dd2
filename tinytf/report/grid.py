"""The report's test and grid sections: the served model's test metrics, then every grid cell
(finalists with their mean ± std over seeds), the winner against the runner-up, the optimizer
verdict, the heatmaps and the optimizer curves at the winner's lr and batch size."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from tinytf.analysis.grid import MissingCell, best_cell, cell_key, load_cells, load_curves
from tinytf.analysis.power import detectable_difference, pooled_seed_std
from tinytf.errors import DataError
from tinytf.report import tables as rt
from tinytf.report.facts import UPSTREAM
from tinytf.report.model_card import runner_up_outcome

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
    selection = (metrics or {}).get("grid_selection")
    finalists = (selection or {}).get("finalists")
    report.table(
        "grid",
        "Optimizer × learning rate × batch size × epochs",
        "Final train and validation "
        f"metrics of every grid cell (start `{grid.start}`, round one on seed {grid.seed}); the "
        f"{len(grid.finalists)} best by validation accuracy ran again on seeds "
        f"{', '.join(map(str, grid.finalist_seeds))} (mean ± std over all their seeds), and the winner, "
        f"the best mean, is marked.{grid_resolution(report.f.finetune, cells, finalists)}"
        + (selection_text(selection) if selection else ""),
        rt.grid_table(cells, best_key, finalists),
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
            "The grid's winner on test",
            "The finalist with the best mean validation accuracy over its seeds (its best seed's run "
            f"is served) and its test metrics, with the 95% percentile-bootstrap interval of test accuracy.{said}",
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


def selection_text(selection: dict) -> str:
    """The winner against the runner-up with their tests, then the optimizer verdict."""
    winner, runner_up, test = selection["winner"], selection.get("runner_up"), selection.get("test")
    seeds = len(winner["seeds"])
    text = f" Winner: {winner['key']}, mean validation accuracy {winner['validation_accuracy_mean']:.4f} over {seeds} seeds"
    if runner_up and test:
        p_seeds, p_items = test.get("decisive_p"), test["items"]["p_value"]
        said = runner_up_outcome(test)
        text += (
            f"; runner-up {runner_up['key']}, {runner_up['validation_accuracy_mean']:.4f}. Winner vs runner-up "
            f"is {said} (paired t over seeds p = {_p(p_seeds)}, permutation over validation texts "
            f"p = {_p(p_items)}); the higher mean is served either way"
        )
    served = selection["served"]
    text += f". Served: its seed {served['seed']} run, the best of its seeds on validation."
    return text + optimizer_text(selection["optimizers"])


def optimizer_text(verdict: dict) -> str:
    pairs = verdict["pairs"]
    if not pairs:
        return " One optimizer in the grid: no optimizer verdict."
    said = "; ".join(f"{pair['statement']} (Holm p = {_p(pair['p_holm'])})" for pair in pairs)
    return (
        f" Optimizers, each by its best cell, paired over validation texts on round one's seed: {said}. "
        f"Caveat: {verdict['caveat']}."
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


def _finalist_resolution(finalists: list[dict]) -> str:
    """The seed-to-seed std pooled over the finalists, and the finalists that tie with the winner."""
    n = len(finalists[0]["seeds"])
    runs = pd.DataFrame(
        {"key": f["key"], "accuracy": a} for f in finalists for a in f["validation_by_seed"].values()
    )
    std, df = pooled_seed_std(runs, "accuracy", by=("key",))
    if std == 0:
        return f" Every finalist scored the same on all {n} seeds: the seeds moved nothing."
    apart = detectable_difference(std, n, df)
    best = finalists[0]["validation_accuracy_mean"]
    ties = [f["key"] for f in finalists[1:] if best - f["validation_accuracy_mean"] < apart]
    text = (
        f" A finalist's validation accuracy moves by {100 * std:.2f} points between seeds (std pooled over "
        f"the {len(finalists)} finalists), so two means of {n} seeds need about {100 * apart:.1f} points "
        "between them to be told apart."
    )
    if ties:
        return text + f" {len(ties)} other finalist(s) lie within that of the winner: {', '.join(ties)}."
    return text + " No other finalist lies within that of the winner."


def _p(p: float | None) -> str:
    return "n/a" if p is None else f"{p:.3g}"
