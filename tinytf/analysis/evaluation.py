"""Test-set metrics: accuracy with a bootstrap interval, per-class precision/recall/F1,
the confusion matrix, and the paired comparison of two training arms."""

from __future__ import annotations

import numpy as np


def bootstrap_interval(correct: np.ndarray, resamples: int = 1000, seed: int = 0, level: float = 0.95):
    """Percentile bootstrap of the mean of a 0/1 vector: (low, high), by scipy.stats.bootstrap.

    Percentile rather than scipy's default BCa: BCa is undefined when every answer is right
    (or wrong), which a tiny preset's test set can be, and percentile is what course report 004 used."""
    from scipy import stats

    correct = np.asarray(correct, dtype=float)
    if correct.min() == correct.max():  # every resample has the same mean
        return float(correct[0]), float(correct[0])
    result = stats.bootstrap(
        (correct,),
        np.mean,
        n_resamples=resamples,
        confidence_level=level,
        method="percentile",
        vectorized=True,
        random_state=seed,
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def classification_report(
    preds: np.ndarray, labels: np.ndarray, classes: list[str], resamples: int = 1000, seed: int = 0
) -> dict:
    """scikit-learn's confusion matrix and per-class precision/recall/F1 (0 where undefined)."""
    from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

    preds, labels = np.asarray(preds), np.asarray(labels)
    ids = list(range(len(classes)))
    confusion = confusion_matrix(labels, preds, labels=ids)  # rows: true class, columns: predicted
    precision, recall, f1, support = precision_recall_fscore_support(
        labels, preds, labels=ids, average=None, zero_division=0.0
    )
    per_class = {
        name: {
            "precision": float(precision[i]),
            "recall": float(recall[i]),
            "f1": float(f1[i]),
            "support": int(support[i]),
        }
        for i, name in enumerate(classes)
    }
    correct = (preds == labels).astype(float)
    low, high = bootstrap_interval(correct, resamples, seed)
    return {
        "accuracy": float(correct.mean()),
        "accuracy_ci95": [low, high],
        "per_class": per_class,
        "macro_f1": float(np.mean(f1)),
        "confusion_matrix": confusion.tolist(),
        "classes": list(classes),
        "n": int(len(labels)),
    }


# Accuracies are counts over one test set, so two seeds with the same difference in counts can
# differ in the last bit as floats (1417/1821 - 1388/1821 != 1400/1821 - 1371/1821); read as a
# spread, that noise gives t = inf and p = 0. Real differences are at least 1 / test size.
SAME_DIFFERENCE = 1e-9


def paired_comparison(a: list[float], b: list[float]) -> dict:
    """Paired t-test of a - b over seeds (the same seed means the same head init and data order),
    and the exact two-sided sign test of the same differences.

    When every seed gives the same nonzero difference the t-test divides by zero (t and p_value
    are None), and the sign test is what can still decide: all n seeds one way gives its smallest
    p, 2 / 2^n (0.25 at 3 seeds, 0.0625 at 5, 0.03125 at 6). Its p is None when no seed differs."""
    from scipy import stats

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    diff = a - b
    spread = float(diff.std(ddof=1)) if len(diff) > 1 else 0.0
    if spread < SAME_DIFFERENCE:
        spread = 0.0
    result = {"mean_difference": float(diff.mean()), "n": int(len(diff)), "std_difference": spread}
    if spread > 0:
        test = stats.ttest_rel(a, b)
        result.update(t=float(test.statistic), p_value=float(test.pvalue))
    else:
        result.update(t=None, p_value=None)
    nonzero = diff[np.abs(diff) >= SAME_DIFFERENCE]
    result["sign_test_p"] = (
        float(stats.binomtest(int((nonzero > 0).sum()), len(nonzero)).pvalue) if len(nonzero) else None
    )
    # a side that is one fit for every seed (the frozen probe on all labels) leaves a one-sample
    # test of the other side's seeds against that value: named so, not "paired"
    constant = [np.ptp(side) < SAME_DIFFERENCE for side in (a, b)]
    result["test"] = "one-sample t (one side is the same for every seed)" if any(constant) else "paired t"
    return result


def holm(p_values: list[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of a family of p-values (None stays None and is not counted).
    Written here because scipy has no Holm and statsmodels is not a dependency."""
    ranked = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(ranked):
        running = max(running, min(1.0, (len(ranked) - rank) * p))
        adjusted[i] = running
    return adjusted


def gap_trend(curve: dict, arm: str = "pretrained", against: str = "scratch") -> dict | None:
    """Does `arm` − `against` change with the labels? An ordinary least-squares line of every
    course report's paired difference on log10 of its label count: slope per tenfold labels, its 95 %
    interval and the two-sided p of slope 0. None without two label counts to fit."""
    from scipy import stats

    x, y = [], []
    for entry in curve.values():
        if arm in entry and against in entry:
            for seed, value in entry[arm]["by_seed"].items():
                x.append(np.log10(entry["n_train"]))
                y.append(value - entry[against]["by_seed"][seed])
    if len(set(x)) < 2 or len(x) < 3:
        return None
    fit = stats.linregress(x, y)
    half = float(stats.t.ppf(0.975, len(x) - 2) * fit.stderr)
    return {
        "slope_per_decade": float(fit.slope),
        "ci95": [float(fit.slope) - half, float(fit.slope) + half],
        "p_value": float(fit.pvalue),
        "intercept": float(fit.intercept),
        "n": len(x),
        "model": f"{arm} - {against} ~ log10(labels), OLS over every (label count, seed)",
    }


def headline_metrics(report: dict, best: dict, finetune: dict, baselines: dict) -> dict:
    """reports/metrics.json: the best cell's test figures, the cell itself, each start's
    fine-tuning accuracy with all labels and the paired test of pretrained against scratch, the
    baselines with all labels, and every start and TF-IDF + LR along the labelled-data curve."""
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
    every = baselines["label_curve"]["all"]
    metrics["baselines"] = {name: {"test_accuracy": every[name]["mean"]} for name in ("majority", "tfidf_lr")}
    metrics["label_curve"] = {
        labels: {
            **{arm: {"mean": entry[arm]["mean"]} for arm in INITS_REPORTED if arm in entry},
            "tfidf_lr": {"mean": baselines["label_curve"][labels]["tfidf_lr"]["mean"]},
        }
        for labels, entry in finetune.get("label_curve", {}).items()
        if labels in baselines["label_curve"]
    }
    return metrics


INITS_REPORTED = ("pretrained", "scratch", "frozen")


def arm_summary(
    tests: dict[str, dict[int, float]], seeds: list[int], epochs: int, classes: list[str]
) -> dict:
    """The finetune summary: test accuracy per start (mean, std, per seed), and the paired t-test
    over seeds of each of pretrained, frozen and hf against scratch."""
    summary = {
        "arms": {
            arm: {
                "test_accuracy_mean": float(np.mean(list(acc.values()))),
                "test_accuracy_std": float(np.std(list(acc.values()), ddof=1)) if len(acc) > 1 else 0.0,
                "test_accuracy_by_seed": {str(s): a for s, a in acc.items()},
            }
            for arm, acc in tests.items()
        },
        "seeds": list(seeds),
        "epochs": epochs,
        "classes": classes,
    }
    for arm in ("pretrained", "frozen", "hf"):
        if arm in tests and "scratch" in tests:
            summary[f"{arm}_vs_scratch"] = paired_comparison(
                [tests[arm][s] for s in seeds], [tests["scratch"][s] for s in seeds]
            )
    return summary


def curve_summary(runs, arms: list[str]) -> dict:
    """The labelled-data curve from the finetune runs (one row per run; `chosen` marks the runs of
    the chosen recipe): per label count, each arm's test accuracy over seeds and the paired tests
    against scratch on the same seeds (same subset, head init and batch order)."""
    chosen = runs[runs["chosen"] & (runs["start"] == "final")]
    curve = {}
    for labels, at_count in chosen.groupby("labels", sort=False):
        tests = {
            arm: dict(zip(g["seed"], g["test_accuracy"], strict=True)) for arm, g in at_count.groupby("arm")
        }
        seeds = sorted(tests["scratch"])
        entry = {
            arm: {
                "mean": float(np.mean(list(acc.values()))),
                "std": float(np.std(list(acc.values()), ddof=1)) if len(acc) > 1 else 0.0,
                "n": len(acc),  # seeds: the protocol runs the same ones at every label count
                "by_seed": {str(s): float(a) for s, a in sorted(acc.items())},
            }
            for arm, acc in tests.items()
            if arm in arms
        }
        entry["n_train"] = int(at_count["n_train"].max())
        for arm in ("pretrained", "frozen", "hf"):
            if arm in tests:
                entry[f"{arm}_vs_scratch"] = paired_comparison(
                    [tests[arm][s] for s in seeds], [tests["scratch"][s] for s in seeds]
                )
        curve[labels] = entry
    curve = dict(sorted(curve.items(), key=lambda item: item[1]["n_train"]))
    for arm in ("pretrained", "frozen", "hf"):  # Holm across the curve's label counts, per comparison
        tests = [entry[f"{arm}_vs_scratch"] for entry in curve.values() if f"{arm}_vs_scratch" in entry]
        for test, adjusted in zip(tests, holm([t["p_value"] for t in tests]), strict=True):
            test["p_holm"] = adjusted
    return curve


def snapshot_curve(runs, labels: str) -> list[dict]:
    """The pretraining-tokens curve: pretrained − scratch at `labels` labels for each start
    (scratch = 0 tokens, each snapshot, the final model), paired over the snapshot runs' seeds."""
    at = runs[runs["chosen"] & (runs["labels"] == labels)]
    scratch = dict(
        zip(
            at.loc[at["arm"] == "scratch", "seed"],
            at.loc[at["arm"] == "scratch", "test_accuracy"],
            strict=True,
        )
    )
    pretrained = at[at["arm"] == "pretrained"]
    points = [
        {
            "start": "scratch",
            "tokens": 0,
            "mean_difference": 0.0,
            "std_difference": 0.0,
            "n": len(scratch),
            "accuracy_mean": float(np.mean(list(scratch.values()))),
        }
    ]
    snapshot_seeds = sorted(set(pretrained.loc[pretrained["start"] != "final", "seed"]))
    for start, group in pretrained.groupby("start", sort=False):
        group = group[group["seed"].isin(snapshot_seeds)] if snapshot_seeds else group
        seeds = sorted(group["seed"])
        accuracy = dict(zip(group["seed"], group["test_accuracy"], strict=True))
        point = paired_comparison([accuracy[s] for s in seeds], [scratch[s] for s in seeds])
        points.append(
            {
                "start": start,
                "tokens": int(group["tokens"].iloc[0]),
                **point,
                "accuracy_mean": float(np.mean(list(accuracy.values()))),
            }
        )
    return sorted(points, key=lambda p: p["tokens"])
