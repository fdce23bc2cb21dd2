"""The default data's grouped split (critic snippets, grouped by movie) by tinytf's greedy
placement and by scikit-learn's `StratifiedGroupKFold` (10 folds: one for test, one for
validation, eight for train, the nearest it comes to 80/10/10), over several seeds.

Prints, per method, the worst share error and the worst difference between a split's share
of "fresh" and the whole set's, in percentage points, and the time per split. We keep our own
placement because it takes any fractions (k-fold takes multiples of 1/k) and lands closer to
them; this script is the evidence, rerun it after changing either side.

    python benchmarks/grouped_split_vs_sklearn.py [--seeds 10]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.model_selection import StratifiedGroupKFold
from timing import record

from tinytf.data import sources
from tinytf.data.splits import SPLITS, stratified_group_split

TARGETS = {"train": 0.8, "validation": 0.1, "test": 0.1}


def sklearn_split(labels, groups, seed: int) -> np.ndarray:
    folds = StratifiedGroupKFold(n_splits=10, shuffle=True, random_state=seed)
    held_out = [rows for _, rows in folds.split(np.zeros(len(labels)), labels, groups)]
    assignment = np.full(len(labels), "train", dtype=object)
    assignment[held_out[0]], assignment[held_out[1]] = "test", "validation"
    return assignment


def errors(assignment, labels) -> tuple[float, float]:
    positive = (labels == "fresh").mean()
    share = max(abs((assignment == s).mean() - TARGETS[s]) for s in SPLITS)
    balance = max(abs((labels[assignment == s] == "fresh").mean() - positive) for s in SPLITS)
    return 100 * share, 100 * balance


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args()
    frame = sources.open_bz2_csv(sources.read_rotten_tomatoes_csv())
    frame = frame[frame["category"] != "plot"]
    frame = frame.assign(text=frame["text"].astype(str).str.strip()).drop_duplicates("text")
    labels, groups = frame["category"].to_numpy(), frame["movie_name"].astype(str).to_numpy()
    methods = {
        "tinytf": lambda s: stratified_group_split(labels, groups, 0.1, 0.1, s),
        "sklearn": lambda s: sklearn_split(labels, groups, s),
    }
    print(f"{len(labels)} snippets, {len(np.unique(groups))} movies, {args.seeds} seeds")
    figures = {}
    for name, split in methods.items():
        start = time.perf_counter()
        measured = np.array([errors(split(seed), labels) for seed in range(args.seeds)])
        seconds = (time.perf_counter() - start) / args.seeds
        line = (
            f"{name:8s} worst share error {measured[:, 0].max():.2f} pt, worst class-balance "
            f"error {measured[:, 1].max():.2f} pt, {seconds * 1000:.0f} ms a split"
        )
        print(line)
        figures[name] = {
            "worst_share_error_pt": measured[:, 0].max(),
            "worst_balance_error_pt": measured[:, 1].max(),
            "ms_per_split": seconds * 1000,
        }
    record("grouped_split_vs_sklearn", line, figures, args)  # the headline: the last line, sklearn's


if __name__ == "__main__":
    main()
