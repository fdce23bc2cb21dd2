"""Nested, stratified subsets of the train labels, the x axis of the labelled-data curve: for one
seed, prefixes of one class-balanced order (250 ⊂ 1,000 ⊂ all), the same for every start and the
baselines, so that their comparison is paired."""

from __future__ import annotations

import numpy as np

from tinytf.errors import ParamsError

ALL = 0  # a label count of 0 means every train label


def label_order(labels: np.ndarray, seed: int) -> np.ndarray:
    """A permutation of the rows whose every prefix has (about) the class shares of the whole: each
    class shuffled on its own, a row's key is (its rank in its class + jitter) / class size."""
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
