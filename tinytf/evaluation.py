"""Test-set metrics: accuracy with a bootstrap interval, per-class precision/recall/F1,
the confusion matrix, and the paired comparison of two training arms."""

from __future__ import annotations

import numpy as np


def bootstrap_interval(correct: np.ndarray, resamples: int = 1000, seed: int = 0, level: float = 0.95):
    """Percentile bootstrap of the mean of a 0/1 vector: (low, high)."""
    rng = np.random.default_rng(seed)
    n = len(correct)
    means = correct[rng.integers(0, n, size=(resamples, n))].mean(axis=1)
    alpha = (1 - level) / 2
    return float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha))


def classification_report(
    preds: np.ndarray, labels: np.ndarray, classes: list[str], resamples: int = 1000, seed: int = 0
) -> dict:
    preds, labels = np.asarray(preds), np.asarray(labels)
    k = len(classes)
    confusion = np.zeros((k, k), dtype=np.int64)  # rows: true class, columns: predicted
    np.add.at(confusion, (labels, preds), 1)
    per_class = {}
    for i, name in enumerate(classes):
        tp = confusion[i, i]
        precision = tp / confusion[:, i].sum() if confusion[:, i].sum() else 0.0
        recall = tp / confusion[i, :].sum() if confusion[i, :].sum() else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        per_class[name] = {"precision": float(precision), "recall": float(recall), "f1": float(f1),
                           "support": int(confusion[i, :].sum())}  # fmt: skip
    correct = (preds == labels).astype(float)
    low, high = bootstrap_interval(correct, resamples, seed)
    return {
        "accuracy": float(correct.mean()),
        "accuracy_ci95": [low, high],
        "per_class": per_class,
        "macro_f1": float(np.mean([c["f1"] for c in per_class.values()])),
        "confusion_matrix": confusion.tolist(),
        "classes": list(classes),
        "n": int(len(labels)),
    }


def paired_comparison(a: list[float], b: list[float]) -> dict:
    """Paired t-test of a - b over seeds (the same seed means the same head init and data order)."""
    from scipy import stats

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    diff = a - b
    result = {"mean_difference": float(diff.mean()), "n": int(len(diff))}
    if len(diff) >= 2 and diff.std(ddof=1) > 0:
        test = stats.ttest_rel(a, b)
        result.update(t=float(test.statistic), p_value=float(test.pvalue))
    else:
        result.update(t=None, p_value=None)
    return result
