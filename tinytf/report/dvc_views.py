"""What `dvc exp show` and `dvc plots show` compare across experiments, from the report's facts.

`dvc exp show` makes a column of every number in a metrics file, so `reports/headline.json` holds
only the scalars a person compares between runs (at most 30). DVC's plot templates draw one line
per y column and cannot group rows, so the fine-tuning curves become one column per start (mean
over seeds), and the confusion matrix one (actual, predicted) row per test text.
"""

from __future__ import annotations

import pandas as pd

from tinytf.analysis.headline import brief_test
from tinytf.params.starts import present
from tinytf.report.facts import Facts


def headline(f: Facts) -> dict:
    """Nested scalars (DVC flattens them to dotted columns); a part whose input is missing is left out."""
    out: dict = {}
    if f.metrics:
        low, high = f.metrics["test_accuracy_ci95"]
        out["test"] = {
            "accuracy": f.metrics["test_accuracy"],
            "ci95_low": low,
            "ci95_high": high,
            "macro_f1": f.metrics["test_macro_f1"],
        }
    every = ((f.finetune or {}).get("label_curve") or {}).get("all", {})
    for against in ("scratch", "tfidf"):  # all labels: the one block each verdict rests on
        test = every.get(f"pretrained_vs_{against}")
        if test:
            out[f"pretrained_minus_{against}"] = brief_test(test, diagnostics=False)
    if f.label_curve is not None:
        starts = [*present(f.label_curve.columns.str.removesuffix(" mean")), "tfidf_lr"]
        out["label_curve"] = {
            str(row["labels"]): {s: float(row[f"{s} mean"]) for s in starts if pd.notna(row.get(f"{s} mean"))}
            for _, row in f.label_curve.iterrows()
        }
    if f.pretrain:
        keys = ("validation_perplexity", "validation_word_perplexity", "test_word_perplexity", "tokens")
        out["lm"] = {key: f.pretrain[key] for key in keys if key in f.pretrain}
    return out


def start_curves(curves: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per trained start, validation accuracy per epoch, the mean over seeds (the linear probe is
    fitted, not trained by epochs). One file per start: starts may run different numbers of
    epochs, and a blank cell would be drawn as 0."""
    means = curves.groupby(["start", "epoch"], sort=False)["validation_accuracy"].mean().reset_index()
    return {
        start: part[["epoch", "validation_accuracy"]] for start, part in means.groupby("start", sort=False)
    }


def label_curve_points(label_curve: pd.DataFrame) -> pd.DataFrame:
    """Mean test accuracy per label count of every start and baseline the curve has (hf too, where
    it ran), one column each: `dvc plots diff` overlays two experiments' curves from it."""
    means = [c for c in label_curve.columns if c.endswith(" mean")]
    frame = label_curve[["n_train", *means]].rename(columns={c: c[: -len(" mean")] for c in means})
    return frame.sort_values("n_train")


def confusion_rows(test_report: dict) -> pd.DataFrame:
    """One (actual, predicted) row per test text, rebuilt from the confusion matrix's counts."""
    classes = test_report["classes"]
    rows = [
        (classes[actual], classes[predicted])
        for actual, counts in enumerate(test_report["confusion_matrix"])
        for predicted, count in enumerate(counts)
        for _ in range(count)
    ]
    return pd.DataFrame(rows, columns=["actual", "predicted"])


def plot_views(f: Facts) -> dict[str, pd.DataFrame]:
    """reports/dvc/<name>.csv: the fine-tuning curves per start, the label curve, the confusion
    rows and the grid, each where its input is."""
    views = {}
    if f.curves is not None:
        views.update({f"finetune_{start}": frame for start, frame in start_curves(f.curves).items()})
    if f.label_curve is not None:
        views["label_curve"] = label_curve_points(f.label_curve)
    if f.test_report is not None:
        views["confusion"] = confusion_rows(f.test_report)
    if f.grid is not None:
        views["grid"] = f.grid[["key", "validation_accuracy"]].sort_values(
            "validation_accuracy", ascending=False
        )
    return views
