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


def headline_metrics(report: dict, best: dict, finetune: dict) -> dict:
    """reports/metrics.json: the best cell's test figures, the cell itself, and each start's
    fine-tuning accuracy with the paired test of pretrained against scratch."""
    metrics = {
        "test_accuracy": report["accuracy"],
        "test_accuracy_ci95": report["accuracy_ci95"],
        "test_macro_f1": report["macro_f1"],
        "best": best,
        "pretrained_vs_scratch": {
            arm: {"mean": v["test_accuracy_mean"], "std": v["test_accuracy_std"]}
            for arm, v in finetune["arms"].items()
        },
    }
    if "pretrained_vs_scratch" in finetune:
        metrics["pretrained_vs_scratch"]["paired_test"] = finetune["pretrained_vs_scratch"]
    return metrics


def arm_summary(
    tests: dict[str, dict[int, float]], seeds: list[int], epochs: int, classes: list[str]
) -> dict:
    """The finetune summary: test accuracy per start (mean, std, per seed), and the paired t-test
    over seeds of each of pretrained and frozen against scratch."""
    summary = {
        "arms": {
            arm: {
                "test_accuracy_mean": float(np.mean(list(acc.values()))),
                "test_accuracy_std": float(np.std(list(acc.values()), ddof=1)) if len(acc) > 1 else 0.0,
                "test_accuracy_by_seed": {str(s): a for s, a in acc.items()},
            }
            for arm, acc in tests.items()
        },  # fmt: skip
        "seeds": list(seeds),
        "epochs": epochs,
        "classes": classes,
    }
    for arm in ("pretrained", "frozen"):
        if arm in tests and "scratch" in tests:
            summary[f"{arm}_vs_scratch"] = paired_comparison(
                [tests[arm][s] for s in seeds], [tests["scratch"][s] for s in seeds]
            )
    return summary
