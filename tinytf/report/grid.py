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


def grid_tables(f, params) -> list:
    """The best cell's test tables, then every grid cell, its heatmaps and optimizer curves."""
    from tinytf.report.plots import plot_grid_heatmaps, plot_optimizer_curves

    out = _test_tables(f)
    if f.grid is None:
        return out
    cells, best, grid = f.grid, f.best, params.grid
    selection = (f.metrics or {}).get("grid_selection")
    finalists = (selection or {}).get("finalists")
    sentence = (
        f"Final train and validation metrics of every grid cell (start `{grid.start}`, round one on seed "
        f"{grid.seed}); the {len(grid.finalists)} best by validation accuracy ran again on seeds "
        f"{', '.join(map(str, grid.finalist_seeds))} (mean ± std over all their seeds), and the winner, the best "
        f"mean, is marked.{grid_resolution(f.finetune, cells, finalists)}"
        + (selection_text(selection) if selection else "")
    )
    table = rt.grid_table(cells, cell_key(**best), finalists)
    heatmaps = "Validation accuracy over learning rate × batch size, one panel per optimizer."
    curves = (
        f"Loss and accuracy per epoch of every optimizer at the best cell's lr {best['lr']:g} and batch size "
        f"{best['batch_size']} (course report 004's optimizer figures)."
    )
    return out + [
        Table("grid", "Optimizer × learning rate × batch size × epochs", sentence, table),
        Plot("grid_heatmaps", heatmaps, plot_grid_heatmaps, (cells,)),
        Plot(
            "optimizer_curves", curves, plot_optimizer_curves, (f.grid_curves, best["lr"], best["batch_size"])
        ),
    ]


def _test_tables(f) -> list:
    """The best cell's test metrics, per-class scores and confusion matrix."""
    out, metrics, test = [], f.metrics, f.test_report
    if metrics is not None:
        promotion = (metrics.get("promotion") or {}).get("reason")  # what evaluate did with @champion
        said = f" Registry: {promotion} (`tinytf champion show`)." if promotion else ""
        sentence = (
            "The finalist with the best mean validation accuracy over its seeds (its best seed's run is served) "
            f"and its test metrics, with the 95% percentile-bootstrap interval of test accuracy.{said}"
        )
        table = rt.best_table(metrics)
        shown = table.assign(value=lambda t: [rt.fmt_num(v, 4) for v in t["value"]])
        out.append(Table("best", "The grid's winner on test", sentence, table, shown))
    if test is not None:
        path = f.root / UPSTREAM["evaluate_test_report"].path
        sentence = "Precision, recall, F1 and support of the best cell on the test split."
        out.append(Table("per_class", "Per-class test metrics", sentence, rt.per_class_table(test, path)))
        sentence = "Test counts of the best cell: rows the true class, columns the predicted one."
        out.append(Table("confusion", "Confusion matrix", sentence, rt.confusion_table(test, path)))
    return out


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
