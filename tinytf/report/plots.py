"""Matplotlib figures for reports/: every plot has a title, labelled axes with units and a legend."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from tinytf.io import atomic_path  # noqa: E402
from tinytf.params.starts import ordered, present  # noqa: E402


def _save(fig, path: str | Path) -> Path:
    path = Path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, bbox_inches="tight", format="png")
    plt.close(fig)
    return path


def _band(ax, frame: pd.DataFrame, x: str, y: str, label: str) -> None:
    """Mean line over seeds with a ±1 std band."""
    stats = frame.groupby(x)[y].agg(["mean", "std"]).reset_index()
    line = ax.plot(stats[x], stats["mean"], marker="o", label=label)[0]
    if stats["std"].notna().any():
        std = stats["std"].fillna(0)
        ax.fill_between(stats[x], stats["mean"] - std, stats["mean"] + std, color=line.get_color(), alpha=0.2)


def _finish(*axes, epochs: bool = True) -> None:
    """A small legend and a light grid on each axis; whole numbers on an x axis that counts `epochs`."""
    for ax in axes:
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
        if epochs:
            ax.xaxis.get_major_locator().set_params(integer=True)


def plot_finetune_curves(curves: pd.DataFrame, path: str | Path) -> Path:
    """Course report 000's figure: accuracy and loss per epoch per start; train dashed, validation solid."""
    fig, (acc_ax, loss_ax) = plt.subplots(1, 2, figsize=(11, 4))
    by_start = dict(list(curves.groupby("start", sort=False)))
    by_start = {start: by_start[start] for start in ordered(by_start)}  # the starts table's order
    for start, frame in by_start.items():
        _band(acc_ax, frame, "epoch", "validation_accuracy", f"{start} (validation)")
        _band(loss_ax, frame, "epoch", "validation_loss", f"{start} (validation)")
    acc_ax.set_prop_cycle(None)
    loss_ax.set_prop_cycle(None)
    for start, frame in by_start.items():
        means = frame.groupby("epoch")[["train_accuracy", "train_loss"]].mean()
        acc_ax.plot(means.index, means["train_accuracy"], linestyle="--", alpha=0.7, label=f"{start} (train)")
        loss_ax.plot(means.index, means["train_loss"], linestyle="--", alpha=0.7, label=f"{start} (train)")
    title = f"Accuracy per epoch (mean ± std over {curves['seed'].nunique()} seeds)"
    acc_ax.set(title=title, xlabel="epoch", ylabel="accuracy (fraction correct)")
    loss_ax.set(title="Cross-entropy loss per epoch", xlabel="epoch", ylabel="loss (nats per text)")
    _finish(acc_ax, loss_ax)
    return _save(fig, path)


def plot_pretrain_curves(steps: pd.DataFrame, epochs: pd.DataFrame, path: str | Path) -> Path:
    """Training loss per logged step and validation loss per epoch (step on the x axis)."""
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(steps["step"], steps["train_loss"], label="train (per logged step)", alpha=0.8)
    ax.plot(epochs["step"], epochs["validation_loss"], marker="o", label="validation (per epoch)")
    ax.set(title="Pretraining loss", xlabel="optimizer step", ylabel="cross-entropy (nats per token)")
    ax.legend()
    ax.grid(alpha=0.3)
    return _save(fig, path)


def plot_optimizer_curves(curves: pd.DataFrame, lr: float, batch_size: int, path: str | Path) -> Path:
    """Course report 004's optimizer comparison: same lr and batch size, one line per optimizer."""
    chosen = curves[(curves["lr"] == lr) & (curves["batch_size"] == batch_size)]
    chosen = chosen[chosen["epochs"] == chosen["epochs"].max()]
    fig, (loss_ax, acc_ax) = plt.subplots(1, 2, figsize=(11, 4))
    for optimizer, frame in chosen.groupby("optimizer", sort=False):
        epoch = frame["epoch"]
        line = loss_ax.plot(epoch, frame["train_loss"], marker="o", label=f"{optimizer} train")[0]
        color = line.get_color()
        style = {"marker": "s", "linestyle": "--", "color": color, "label": f"{optimizer} validation"}
        loss_ax.plot(epoch, frame["validation_loss"], **style)
        acc_ax.plot(epoch, frame["train_accuracy"], marker="o", color=color, label=f"{optimizer} train")
        acc_ax.plot(epoch, frame["validation_accuracy"], **style)
    at = f"(lr={lr:g}, batch {batch_size})"
    loss_ax.set(title=f"Loss by optimizer {at}", xlabel="epoch", ylabel="cross-entropy (nats per text)")
    acc_ax.set(title=f"Accuracy by optimizer {at}", xlabel="epoch", ylabel="accuracy (fraction correct)")
    _finish(loss_ax, acc_ax)
    return _save(fig, path)


def plot_grid_heatmaps(table: pd.DataFrame, path: str | Path) -> Path:
    """Validation accuracy over learning rate x batch size, one panel per optimizer (best epochs value)."""
    optimizers = list(dict.fromkeys(table["optimizer"]))
    fig, axes = plt.subplots(1, len(optimizers), figsize=(5.0 * len(optimizers), 3.8), squeeze=False)
    for ax, optimizer in zip(axes[0], optimizers, strict=True):
        frame = table[table["optimizer"] == optimizer]
        pivot = frame.pivot_table(
            index="batch_size", columns="lr", values="validation_accuracy", aggfunc="max"
        )
        low, high = table["validation_accuracy"].min(), table["validation_accuracy"].max()
        image = ax.imshow(pivot.to_numpy(), cmap="viridis", vmin=low, vmax=high, aspect="auto")
        ax.set_xticks(range(len(pivot.columns)), [f"{v:g}" for v in pivot.columns])
        ax.set_yticks(range(len(pivot.index)), [str(v) for v in pivot.index])
        for (i, j), value in np.ndenumerate(pivot.to_numpy()):
            ax.text(j, i, f"{value:.3f}", ha="center", va="center", color="white", fontsize=9)
        ax.set(title=f"{optimizer}: validation accuracy", xlabel="learning rate", ylabel="batch size")
        fig.colorbar(image, ax=ax, label="accuracy (fraction)")
    fig.tight_layout()  # keeps each colorbar label clear of the next panel's axis label
    return _save(fig, path)


def plot_attention_maps(weights: np.ndarray, tokens: list[str], layer: int, path: str | Path) -> Path:
    """One heatmap per head of a layer's attention weights (H, L, L) for one sentence."""
    heads = weights.shape[0]
    fig, axes = plt.subplots(1, heads, figsize=(5.2 * heads, 4.6), squeeze=False)
    for h, ax in enumerate(axes[0]):
        image = ax.imshow(weights[h], cmap="Blues", vmin=0, vmax=1)
        ax.set_xticks(range(len(tokens)), tokens, rotation=90, fontsize=7)
        ax.set_yticks(range(len(tokens)), tokens, fontsize=7)
        ax.set(title=f"layer {layer}, head {h}", xlabel="key (attended-to token)", ylabel="query token")
        fig.colorbar(image, ax=ax, fraction=0.046, label="attention weight")
    fig.tight_layout()  # keeps each colorbar label clear of the next panel's axis label
    return _save(fig, path)


def plot_label_curve(curve: pd.DataFrame, path: str | Path) -> Path:
    """The study's headline figure: test accuracy against train labels (log x), one line per start
    with a ±1 std band over its seeds, the baselines dashed."""
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    x = curve["n_train"].to_numpy()
    for name in present(curve.columns.str.removesuffix(" mean")):
        mean, std = curve[f"{name} mean"].to_numpy(), curve[f"{name} std"].fillna(0).to_numpy()
        line = ax.plot(x, mean, marker="o", label=name)[0]
        ax.fill_between(x, mean - std, mean + std, color=line.get_color(), alpha=0.2)
    for name, style in (("tfidf_lr", "--"), ("majority", ":")):
        if f"{name} mean" in curve:
            label = "TF-IDF + logistic regression" if name == "tfidf_lr" else "majority class"
            color = "gray" if name == "majority" else "black"
            ax.plot(x, curve[f"{name} mean"], linestyle=style, color=color, marker=".", label=label)
    ax.set_xscale("log")
    ax.set(
        title="Test accuracy against labelled examples (mean ± std over seeds)",
        xlabel="train labels (log scale)",
        ylabel="test accuracy (fraction correct)",
    )
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    return _save(fig, path)


def plot_snapshot_curve(points: pd.DataFrame, labels: str, path: str | Path) -> Path:
    """Pretrained − scratch at a fixed label count against the pretraining tokens of the start."""
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.errorbar(
        points["tokens"] / 1e6,
        100 * points["mean_difference"],
        yerr=100 * points["std_difference"],
        marker="o",
        capsize=3,
        label=f"pretrained − scratch, {labels} labels (± std over seeds)",
    )
    ax.axhline(0, color="gray", linewidth=0.8)
    ax.set(
        title="Transfer gain against pretraining tokens",
        xlabel="pretraining tokens (millions)",
        ylabel="test accuracy gain (percentage points)",
    )
    _finish(ax, epochs=False)
    return _save(fig, path)
