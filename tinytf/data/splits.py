"""Deterministic stratified (and optionally grouped) train/validation/test splits. Each group (a
movie: its snippets share names and plot words) goes whole to one split, groups placed greedily so
every split gets close to its target share of every class."""

from __future__ import annotations

import numpy as np

SPLITS = ("train", "validation", "test")


def stratified_group_split(
    labels: np.ndarray,
    groups: np.ndarray | None,
    validation: float,
    test: float,
    seed: int,
) -> np.ndarray:
    """An array of split names, one per row; `groups` None makes every row its own group. `labels`
    may be any hashable values but None (all one class for unlabelled text)."""
    labels = np.asarray(labels)
    if groups is None:
        return _stratified_rows(labels, validation, test, seed)
    groups = np.asarray(groups)
    targets = np.array([1.0 - validation - test, validation, test])

    class_values, class_ids = np.unique(labels, return_inverse=True)
    group_values, group_ids = np.unique(groups, return_inverse=True)
    n_groups, n_classes = len(group_values), len(class_values)
    # rows of each class in each group
    group_counts = np.zeros((n_groups, n_classes))
    np.add.at(group_counts, (group_ids, class_ids), 1)
    class_totals = group_counts.sum(axis=0)

    rng = np.random.default_rng(seed)
    order = rng.permutation(n_groups)
    # big groups first (stable, so equal sizes keep the random order): they are the hard
    # ones to place, and small groups then fill the remaining gaps
    order = order[np.argsort(-group_counts[order].sum(axis=1), kind="stable")]

    placed = np.zeros((3, n_classes))
    assignment = np.empty(n_groups, dtype=np.int64)
    for g in order:
        counts = group_counts[g]
        # how far each split is below its target for this group's classes, relative to class size
        deficit = ((targets[:, None] * class_totals - placed) * counts / class_totals).sum(axis=1)
        split = int(np.argmax(deficit))
        assignment[g] = split
        placed[split] += counts
    return np.array(SPLITS, dtype=object)[assignment[group_ids]]


def _stratified_rows(labels: np.ndarray, validation: float, test: float, seed: int) -> np.ndarray:
    """Every row its own group: per class, a seeded shuffle cut at the target shares. Vectorised
    because the greedy placement above visits groups one at a time, which a split of every row
    would make as slow as one group per row."""
    rng = np.random.default_rng(seed)
    class_ids = np.unique(labels, return_inverse=True)[1]
    assignment = np.zeros(len(labels), dtype=np.int64)  # 0 = train
    for class_id in range(class_ids.max(initial=-1) + 1):
        rows = rng.permutation(np.flatnonzero(class_ids == class_id))
        n_validation, n_test = round(validation * len(rows)), round(test * len(rows))
        assignment[rows[:n_validation]] = 1
        assignment[rows[n_validation : n_validation + n_test]] = 2
    return np.array(SPLITS, dtype=object)[assignment]
