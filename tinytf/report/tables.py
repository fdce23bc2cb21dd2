"""The report's tables as DataFrames, shaped from what the upstream stages wrote (a key a table
needs and its input lacks raises `DataError` naming the file); `tinytf.report.build` writes them."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from tinytf.data.splits import SPLITS
from tinytf.errors import DataError
from tinytf.report.inputs import require
from tinytf.report.phrases import pm

ID_COLUMNS = ("pos_encoding", "head_merge", "seed")


def majority_share(stats: dict, split: str) -> float | None:
    """Share of the most frequent class in a sentiment split: the accuracy of always guessing it."""
    labels = stats.get("sentiment", {}).get("splits", {}).get(split, {}).get("labels")
    if not labels:
        return None
    return max(labels.values()) / max(sum(labels.values()), 1)


def in_order(keys, first) -> list:
    """`keys` in the order of `first` (JSON files store keys sorted), then the others sorted."""
    return [k for k in first if k in keys] + sorted(set(keys) - set(first))


def ordered_splits(splits: dict) -> dict:
    """train, validation, test first, then anything else."""
    return {k: splits[k] for k in in_order(splits, SPLITS)}


def data_card_table(stats: dict, path: Path | str = "reports/data.json") -> pd.DataFrame:
    rows = []
    for name, entry in stats.items():
        require(entry, path, "source", "splits")
        for split, s in ordered_splits(entry["splits"]).items():
            require(
                s, path, "rows", "words", "words_per_text.p50", "words_per_text.p99", "words_per_text.p100"
            )
            total = max(s["rows"], 1)
            counts = s.get("labels", {})
            names = in_order(counts, entry.get("classes", []))
            labels = ", ".join(f"{k} {counts[k]:,} ({counts[k] / total:.1%})" for k in names)
            rows.append(
                {
                    "dataset": name,
                    "source": entry["source"],
                    "split": split,
                    "rows": s["rows"],
                    "words": s["words"],
                    "words/text p50": s["words_per_text"]["p50"],
                    "p99": s["words_per_text"]["p99"],
                    "max": s["words_per_text"]["p100"],
                    "duplicate texts": s.get("duplicate_texts", ""),
                    "labels": labels,
                }
            )
    return pd.DataFrame(rows)


def pretrain_table(metrics: dict, order: list[str] = ()) -> pd.DataFrame:
    """Loss and perplexity per split and sample sentence (course report 004's baseline table, transposed)."""
    rows = [
        (
            label,
            metrics[f"{split}_loss"],
            metrics[f"{split}_perplexity"],
            metrics.get(f"{split}_word_perplexity", np.nan),
        )
        for split, label in (("train", "train"), ("validation", "dev"), ("test", "test"))
        if f"{split}_loss" in metrics
    ]
    samples = metrics.get("samples", {})
    for name in in_order(samples, order):
        rows.append((f"sample: {name}", samples[name]["loss"], samples[name]["perplexity"], np.nan))
    columns = ["text", "loss (nats/token)", "perplexity (per token)", "perplexity (per word)"]
    return pd.DataFrame(rows, columns=columns)


def variants_stats(cells: pd.DataFrame) -> pd.DataFrame:
    """Mean and std over seeds per (pos_encoding, head_merge): columns <metric> and <metric>_std."""
    metrics = [c for c in cells.columns if c not in ID_COLUMNS]
    grouped = cells.groupby(["pos_encoding", "head_merge"], sort=False)
    mean, std = grouped[metrics].mean(), grouped[metrics].std(ddof=1)
    out = mean.join(std.add_suffix("_std")).join(grouped["seed"].nunique().rename("seeds"))
    return out[["seeds"] + [c for m in metrics for c in (m, f"{m}_std")]].reset_index()


def variants_markdown_frame(stats: pd.DataFrame) -> pd.DataFrame:
    metrics = [c for c in stats.columns if f"{c}_std" in stats.columns]
    out = stats[["pos_encoding", "head_merge", "seeds"]].copy()
    for m in metrics:
        out[m] = [pm(v, s, 1) for v, s in zip(stats[m], stats[f"{m}_std"], strict=True)]
    return out


def finetune_table(summary: dict, path: Path | str) -> pd.DataFrame:
    rows = []
    for start, a in summary["starts"].items():
        require(
            a, f"{path} (start {start})", "test_accuracy_mean", "test_accuracy_std", "test_accuracy_by_seed"
        )
        by_seed = a["test_accuracy_by_seed"]
        row = {"start": start, "test accuracy mean": a["test_accuracy_mean"], "std": a["test_accuracy_std"]}
        rows.append({**row, "seeds": len(by_seed), **{f"seed {s}": v for s, v in by_seed.items()}})
    return pd.DataFrame(rows)


def paired_tests_table(summary: dict, path: Path | str) -> pd.DataFrame:
    rows = []
    for key, test in summary.items():
        if key.endswith("_vs_scratch") and isinstance(test, dict):
            require(test, f"{path} ({key})", "mean_difference", "n")
            comparison = key.replace("_vs_", " − ")
            rows.append((comparison, test["mean_difference"], test.get("t"), test.get("p_value"), test["n"]))
    return pd.DataFrame(rows, columns=["comparison", "mean difference", "t", "p value", "paired seeds"])


CELL = ("optimizer", "lr", "batch_size", "epochs")  # what names a grid cell
CELL_METRICS = ("train_loss", "train_accuracy", "validation_loss", "validation_accuracy")  # a cell's result


def grid_table(cells: pd.DataFrame, best_key: str, finalists: list[dict] | None = None) -> pd.DataFrame:
    """Every cell's round-one metrics; a finalist also gets its round-one rank and its validation
    accuracy's mean ± std over all its seeds; the winner is marked `best`."""
    out = cells[[*CELL, *CELL_METRICS]].copy()
    if finalists:
        by_key = {f["key"]: f for f in finalists}
        mine = [by_key.get(key) for key in cells["key"]]
        out["finalist_rank"] = pd.array([f["rank"] if f else None for f in mine], dtype="Int64")
        out["seeds"] = [len(f["seeds"]) if f else 1 for f in mine]
        out["validation_accuracy_mean"] = [f["validation_accuracy_mean"] if f else None for f in mine]
        out["validation_accuracy_std"] = [f["validation_accuracy_std"] if f else None for f in mine]
    out["best"] = np.where(cells["key"] == best_key, "best", "")
    return out


def best_table(metrics: dict) -> pd.DataFrame:
    b, (low, high) = metrics["best"], metrics["test_accuracy_ci95"]
    rows = [
        ("optimizer", b["optimizer"]),
        ("learning rate", b["lr"]),
        ("batch size", b["batch_size"]),
        ("epochs", b["epochs"]),
        ("validation accuracy", b["validation_accuracy"]),
        ("validation loss", b["validation_loss"]),
        ("test accuracy", metrics["test_accuracy"]),
        ("test accuracy 95% CI low", low),
        ("test accuracy 95% CI high", high),
        ("test macro F1", metrics["test_macro_f1"]),
    ]
    return pd.DataFrame(rows, columns=["quantity", "value"]).astype({"value": object})


def per_class_table(report: dict, path: Path | str) -> pd.DataFrame:
    rows = []
    for name, c in report["per_class"].items():
        require(c, f"{path} (class {name})", "precision", "recall", "f1", "support")
        rows.append({"class": name, **{k: c[k] for k in ("precision", "recall", "f1", "support")}})
    return pd.DataFrame(rows)


def confusion_table(report: dict, path: Path | str) -> pd.DataFrame:
    classes, matrix = report["classes"], report["confusion_matrix"]
    if len(matrix) != len(classes) or any(len(row) != len(classes) for row in matrix):
        raise DataError(
            f"{path}: confusion_matrix is not {len(classes)} x {len(classes)} (classes {classes})"
        )
    frame = pd.DataFrame(matrix, columns=[f"predicted {c}" for c in classes])
    frame.insert(0, "true class", classes)
    return frame


def attention_head_table(weights: list[np.ndarray], causal: bool) -> pd.DataFrame:
    """Where each head looks, averaged over query positions 1..L-1: itself, the previous token, the first
    token, its largest single weight (1 = a hard selection), and the share uniform averaging would give
    any one visible key (1/(i+1) at query i when causal, 1/L otherwise)."""
    rows = []
    for layer, w in enumerate(weights):  # w: (H, L, L)
        q = np.arange(1, w.shape[-1])
        uniform = float(np.mean(1.0 / (q + 1))) if causal else 1.0 / w.shape[-1]
        for h in range(w.shape[0]):
            rows.append(
                {
                    "layer": layer,
                    "head": h,
                    "self": w[h, q, q].mean(),
                    "previous token": w[h, q, q - 1].mean(),
                    "first token": w[h, q, 0].mean(),
                    "max weight": w[h, q].max(-1).mean(),
                    "uniform": uniform,
                }
            )
    return pd.DataFrame(rows)


def complexity_table(fits: pd.DataFrame) -> pd.DataFrame:
    expected = {"length": "2", "length_k": "1", "length_q": "1", "hidden": "≤1"}
    out = fits.copy()
    out.insert(
        out.columns.get_loc("time_exponent") + 1,
        "expected time exponent",
        out["variable"].map(expected).fillna(""),
    )
    return out


def fmt_num(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}g}" if isinstance(value, float) else str(value)


HISTORY_COUNTS = ("250", "1000", "3000", "all")


def protocol_history(path: Path) -> pd.DataFrame | None:
    """The protocol's revisions, each with the figures before and after it (the last record of
    benchmarks/results/protocol_history.jsonl); None where the file is absent."""
    if not path.exists():
        return None
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    try:
        rows = json.loads(lines[-1])["figures"]["rows"]
    except (IndexError, KeyError, TypeError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: its last line is not a protocol_history record ({exc})") from None

    def moved(r: dict, part: str, key: str, fmt: str) -> str:
        return f"{format(r['before'][part][key], fmt)} → {format(r['after'][part][key], fmt)}"

    return pd.DataFrame(
        [
            {
                "revision": r["revision"],
                "why": r["why"],
                "runs compared": f"{r['before_rev']} → {r['after_rev'] or 'the committed run'}",
                "committed": r["when"] or "",
                **{
                    f"pretrained − scratch, {c} labels (points)": moved(r, "gap", c, "+.1f")
                    for c in HISTORY_COUNTS
                },
                **{
                    f"{s}, all labels (%)": moved(r, "all_labels", s, ".1f")
                    for s in ("pretrained", "scratch")
                },
            }
            for r in rows
        ]
    )
