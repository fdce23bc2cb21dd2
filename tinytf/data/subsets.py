"""Nested, stratified subsets of the train labels: the x axis of the labelled-data curve.

For one seed, the subsets of every size are prefixes of one class-balanced order, so 250 ⊂
1,000 ⊂ 3,000 ⊂ all and each keeps the train split's class shares. The fine-tuning starts and
the baselines take the same subset for the same seed: their comparison is paired.
"""

from __future__ import annotations

import numpy as np

from tinytf.errors import ParamsError

ALL = 0  # a label count of 0 means every train label


def label_order(labels: np.ndarray, seed: int) -> np.ndarray:
    """A permutation of the rows whose every prefix has (about) the class shares of the whole.

    Each class is shuffled on its own, then the classes are interleaved by the fraction of their
    rows already placed: a row's key is (its rank in its class + jitter) / class size."""
    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    keys = np.empty(len(labels))
    for value in np.unique(labels):
        rows = np.flatnonzero(labels == value)
        ranks = np.arange(len(rows)) + rng.random(len(rows))
        keys[rng.permutation(rows)] = ranks / len(rows)
    return np.argsort(keys, kind="stable")


def label_subset(labels: np.ndarray, count: int, seed: int) -> np.ndarray:
    """Row indices of the first `count` labels of the seed's order (all rows for ALL), sorted."""
    if count == ALL or count >= len(labels):
        return np.arange(len(labels))
    return np.sort(label_order(labels, seed)[:count])


def check_counts(counts: list[int], n_train: int, source: str) -> None:
    """Refuse a label count at or above the train split's size: `label_subset` would give it every
    label, so it would repeat the all-labels point (0) under another name, with all its runs."""
    too_many = sorted(c for c in counts if c != ALL and c >= n_train)
    if too_many:
        raise ParamsError(
            f"finetune.label_counts: {too_many[0]} labels asked for, but {source} has {n_train}; a count "
            f"that large is every label, the all-labels point (0) again: use counts below {n_train}"
        )


def count_name(count: int) -> str:
    return "all" if count == ALL else str(count)
