"""Test items as a source of noise: every run's per-text predictions, and the paired test of two
starts over the test texts. A test over seeds is conditional on the one test set; the item test
asks whether another test set of the same size would change the verdict: each text gets each
side's share of seeds right, and a paired permutation test over texts gives the p."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tinytf.data.predictions import RUN_KEYS

METHOD = "paired permutation test over test texts (each text's share of seeds right, signs flipped per text)"
RESAMPLES = 9999


def correct_by_item(predictions: pd.DataFrame, split: str = "test", **where) -> np.ndarray:
    """(runs, texts) 0/1: which texts each selected run got right, runs in seed order."""
    rows = predictions[predictions["split"] == split]
    for key, value in where.items():
        rows = rows[rows[key] == value]
    if rows.empty:
        raise KeyError(f"no {split} predictions for {where}")
    rows = rows.assign(correct=(rows["prediction"] == rows["label"]).astype(float))
    wide = rows.pivot_table(index="seed", columns="item", values="correct", aggfunc="first")
    return wide.sort_index().to_numpy(dtype=float)


def item_comparison(a: np.ndarray, b: np.ndarray, seed: int = 0) -> dict:
    """a − b in accuracy, paired over test texts: `a` and `b` are (runs, texts) 0/1 arrays on the
    same texts (any number of runs each, e.g. 5 seeds against one TF-IDF fit). Returns the mean
    difference, its 95 % percentile-bootstrap interval over texts, the permutation p and the method."""
    from scipy import stats

    a, b = np.atleast_2d(a), np.atleast_2d(b)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"item test needs the same texts on both sides: {a.shape[1]} vs {b.shape[1]}")
    x, y = a.mean(axis=0), b.mean(axis=0)
    d = x - y
    out = {"mean_difference": float(d.mean()), "n_items": int(d.size), "method": METHOD}
    if not np.any(d):  # every text the same on both sides: nothing to test
        return out | {"p_value": 1.0, "ci95": [0.0, 0.0]}
    test = stats.permutation_test(
        (x, y),
        lambda u, v, axis: np.mean(u - v, axis=axis),
        permutation_type="samples",
        n_resamples=RESAMPLES,
        vectorized=True,
        random_state=seed,
    )
    interval = stats.bootstrap(
        (d,), np.mean, n_resamples=RESAMPLES, method="percentile", vectorized=True, random_state=seed
    ).confidence_interval
    return out | {"p_value": float(test.pvalue), "ci95": [float(interval.low), float(interval.high)]}


def bodies_by_seed(runs: pd.DataFrame) -> dict[str, dict[int, int]]:
    """Per start that fine-tunes a pretrained body, each seed's body (its pretraining seed), from
    runs.csv's `body` column; empty where the runs have none (one body, or a run before bodies)."""
    if "body" not in runs:
        return {}
    runs = runs[runs["body"].notna()]
    return {
        start: {int(s): int(b) for s, b in zip(g["seed"], g["body"], strict=False)}
        for start, g in runs.groupby("start")
    }


def nest_of(by_seed: dict[int, int] | None) -> np.ndarray | None:
    """The multi-bootstrap's `nest`: each seed's body, seeds in increasing order."""
    return np.array([by_seed[s] for s in sorted(by_seed)]) if by_seed else None


class ItemSource:
    """The chosen runs' test predictions (and TF-IDF + LR's, where given), to test two starts at
    one label count over the test texts; `groups`: each test text's movie, where the data has one;
    `bodies`: per start that fine-tunes a pretrained body, each seed's body (its pretraining seed)."""

    def __init__(
        self,
        predictions: pd.DataFrame,
        baselines: pd.DataFrame | None = None,
        groups: np.ndarray | None = None,
        bodies: dict[str, dict[int, int]] | None = None,
    ):
        frames = [predictions] + ([baselines] if baselines is not None else [])
        self.frame = pd.concat(frames, ignore_index=True)
        self.has_tfidf = baselines is not None and (baselines["start"] == "tfidf_lr").any()
        self.groups = groups
        self.bodies = bodies or {}

    def multiboot(self, labels: str, start: str, other: str) -> dict:
        """start − other over pretraining runs, seeds and test texts (by movie) at once:
        tinytf.analysis.multiboot."""
        from tinytf.analysis.multiboot import multi_bootstrap

        nest = nest_of(self.bodies.get(start) or self.bodies.get(other))  # pairs share a seed's body
        return multi_bootstrap(*self._sides(labels, start, other), self.groups, nest=nest)

    def compare(self, labels: str, start: str, other: str) -> dict:
        return item_comparison(*self._sides(labels, start, other))

    def _sides(self, labels: str, *starts: str) -> list[np.ndarray]:
        return [correct_by_item(self.frame, start=start, labels=labels) for start in starts]


def chosen_predictions(predictions: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """The predictions of the runs the curve reports: the chosen recipe's, from the final model."""
    keys = list(RUN_KEYS)
    chosen = runs.loc[runs["chosen"] & (runs["snapshot"] == "final"), keys].drop_duplicates()
    return predictions.merge(chosen, on=keys, how="inner")
