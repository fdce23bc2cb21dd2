"""Test-set metrics: accuracy with a bootstrap interval, per-class precision/recall/F1,
the confusion matrix, and the paired comparison of two sides (two starts, or a start and a baseline)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tinytf.params.starts import ordered

if TYPE_CHECKING:  # the item tests are the finetune stage's: the report reads their results only
    from tinytf.analysis.items import ItemSource


def bootstrap_interval(correct: np.ndarray, resamples: int = 1000, seed: int = 0, level: float = 0.95):
    """Percentile bootstrap of the mean of a 0/1 vector: (low, high). Percentile, not scipy's default
    BCa: BCa is undefined when every answer is right (or wrong), as a tiny preset's test set can be."""
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
        name: {"precision": float(p), "recall": float(r), "f1": float(f), "support": int(n)}
        for name, p, r, f, n in zip(classes, precision, recall, f1, support, strict=True)
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
ALPHA = 0.05  # a difference is called detected only below this (Holm-adjusted) p


def _mean_std(values) -> tuple[float, float]:
    """The mean and the sample std (0 for one value)."""
    values = list(values)
    return float(np.mean(values)), float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def paired_comparison(a: list[float], b: list[float]) -> dict:
    """Paired t-test of a - b over seeds (a seed fixes the head init and data order), and the exact
    two-sided sign test of the same differences where it can reject: when every seed gives the same
    nonzero difference the t-test divides by zero (t and p_value are None) and the sign test can
    still decide. Its smallest p is 2 / 2^n: below 6 seeds it cannot reject at α = 0.05, so is left out."""
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
    if len(nonzero) and 2.0 / 2 ** len(nonzero) < ALPHA:
        result["sign_test_p"] = float(stats.binomtest(int((nonzero > 0).sum()), len(nonzero)).pvalue)
    # a side that is one fit for every seed (the linear probe or TF-IDF on all labels) leaves a
    # one-sample test of the other side's seeds against that value: named so, not "paired"
    constant = [np.ptp(side) < SAME_DIFFERENCE for side in (a, b)]
    result["test"] = "one-sample t (one side is the same for every seed)" if any(constant) else "paired t"
    return result


def decisive_p(test: dict) -> float | None:
    """The p a verdict rests on: the multi-bootstrap's (every source of noise at once) where the
    summary has it, else the seed test's; Holm-adjusted where in a family. Where the seeds'
    differences have no spread, the sign test's, else the test over texts (both sides one fit for
    every seed, as the linear probe and TF-IDF on all labels: the texts are the only sample left)."""
    boot = test.get("multiboot")
    if boot is not None:
        return boot.get("p_holm", boot["p_value"])
    if test.get("p_value") is None:
        if test.get("sign_test_p") is not None:
            return test["sign_test_p"]
        return (test.get("items") or {}).get("p_value")
    return test.get("p_holm", test["p_value"])


def verdict(test: dict) -> str:
    """'higher' / 'lower' / 'no detectable difference', from the sign of the mean difference and
    the decisive p (Holm-adjusted across the family where the test has it)."""
    p = decisive_p(test)
    if p is None or p >= ALPHA:
        return "no detectable difference"
    return "higher" if test["mean_difference"] > 0 else "lower"


def detected(boot: dict, alpha: float = ALPHA) -> bool:
    """A multi-bootstrap's claim of a difference: its p (Holm-adjusted where it has one) below
    `alpha` and its interval clear of 0, the two read together, as the sentences quote both."""
    p = boot.get("p_holm", boot["p_value"])
    return p is not None and p < alpha and not boot["ci95"][0] <= 0 <= boot["ci95"][1]


def verdict_of(test: dict) -> str:
    """The verdict a summary keeps beside its test (decided once its family's Holm p was known),
    else `verdict` now: what every sentence and headline file quotes."""
    return test.get("verdict") or verdict(test)


def holm(p_values: list[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of a family of p-values (statsmodels' multipletests); None
    stays None and is not counted in the family."""
    from statsmodels.stats.multitest import multipletests

    present = [i for i, p in enumerate(p_values) if p is not None]
    adjusted: list[float | None] = [None] * len(p_values)
    if present:
        corrected = multipletests([p_values[i] for i in present], alpha=ALPHA, method="holm")[1]
        for i, p in zip(present, corrected, strict=True):
            adjusted[i] = float(p)
    return adjusted


def gap_trend(curve: dict, start: str = "pretrained", against: str = "scratch") -> dict | None:
    """Does `start` − `against` change with the labels? Each seed's differences get their own OLS
    line on log10 of the label count and the seeds' slopes are tested against 0 (one-sample t):
    pooling every (label count, seed) difference would count each seed once per label count.
    Returns the mean slope per tenfold labels, its 95 % interval and p; None without two label
    counts and two seeds."""
    from scipy import stats

    by_seed: dict[str, list[tuple[float, float]]] = {}
    for entry in curve.values():
        if start in entry and against in entry:
            for seed, value in entry[start]["by_seed"].items():
                if seed in entry[against]["by_seed"]:
                    x = float(np.log10(entry["n_train"]))
                    by_seed.setdefault(seed, []).append((x, value - entry[against]["by_seed"][seed]))
    slopes = {
        seed: float(stats.linregress(*zip(*points, strict=True)).slope)
        for seed, points in by_seed.items()
        if len({x for x, _ in points}) >= 2
    }
    if len(slopes) < 2:
        return None
    values = np.asarray(list(slopes.values()))
    if np.ptp(values) < SAME_DIFFERENCE:  # every seed the same slope: a t-test divides by zero
        interval, p = (float(values.mean()),) * 2, None
    else:
        test = stats.ttest_1samp(values, 0.0)
        interval, p = test.confidence_interval(1 - ALPHA), float(test.pvalue)
        interval = (float(interval.low), float(interval.high))
    return {
        "slope_per_decade": float(values.mean()),
        "ci95": list(interval),
        "p_value": p,
        "slopes_by_seed": slopes,
        "n": len(slopes),
        "unit": "seed",
        "model": f"{start} - {against} ~ log10(labels), one OLS slope per seed; one-sample t over the "
        f"{len(slopes)} seeds' slopes",
    }


def start_summary(
    tests: dict[str, dict[int, float]], seeds: list[int], epochs: int, classes: list[str]
) -> dict:
    """The finetune summary's start table: test accuracy per start with all labels (mean, std, per
    seed). Its tests against scratch are the curve's all-labels ones (`curve_summary`), which carry
    the Holm p across the label counts."""
    starts = {}
    for start, acc in tests.items():
        mean, std = _mean_std(acc.values())
        starts[start] = {"test_accuracy_mean": mean, "test_accuracy_std": std}
        starts[start]["test_accuracy_by_seed"] = {str(s): a for s, a in acc.items()}
    return {"starts": starts, "seeds": list(seeds), "epochs": epochs, "classes": classes}


def curve_summary(
    runs, starts: list[str], tfidf: dict | None = None, items: ItemSource | None = None
) -> dict:
    """The labelled-data curve from the finetune runs (one row per run; `chosen` marks the runs of
    the chosen recipe): per label count, each start's test accuracy over seeds, and every start
    against scratch and against TF-IDF + LR (`tfidf`: the baselines' label curve), paired over seeds
    and, where `items` has the predictions, over test texts. Holm within each family (one
    comparison across the label counts)."""
    chosen = runs[runs["chosen"] & (runs["snapshot"] == "final")]
    curve = {}
    for labels, at_count in chosen.groupby("labels", sort=False):
        by_start = dict(list(at_count.groupby("start")))
        tests = {
            start: dict(zip(g["seed"], g["test_accuracy"], strict=True)) for start, g in by_start.items()
        }
        validation = {
            start: dict(zip(g["seed"], g["validation_accuracy"], strict=True))
            for start, g in by_start.items()
            if "validation_accuracy" in g
        }
        seeds = sorted(tests["scratch"])
        entry = {}
        for start, acc in tests.items():
            if start in starts:  # n: seeds, the protocol runs the same ones at every label count
                mean, std = _mean_std(acc.values())
                entry[start] = {"mean": mean, "std": std, "n": len(acc), "by_seed": _by_seed(acc)}
                # the chosen epoch's validation accuracy: how far one seed moves what a choice reads
                if start in validation:
                    entry[start]["validation_by_seed"] = _by_seed(validation[start])
        entry["n_train"] = int(at_count["n_train"].max())
        # the other side's accuracy per seed, its name in the predictions, and whether they have it
        against = {"scratch": (tests["scratch"], "scratch", items is not None)}
        baseline = _tfidf_by_seed(tfidf, labels, seeds)
        if baseline is not None:
            against["tfidf"] = (baseline, "tfidf_lr", items is not None and items.has_tfidf)
        for start in ordered(tests):  # every start, against scratch and against TF-IDF
            for name, (other, predicted, by_text) in against.items():
                if (start, name) == ("scratch", "scratch"):
                    continue
                test = paired_comparison([tests[start][s] for s in seeds], [other[s] for s in seeds])
                if by_text:
                    test["items"] = items.compare(labels, start, predicted)
                    test["multiboot"] = items.multiboot(labels, start, predicted)
                entry[f"{start}_vs_{name}"] = test
        curve[labels] = entry
    curve = dict(sorted(curve.items(), key=lambda item: item[1]["n_train"]))
    families = {key for entry in curve.values() for key in entry if "_vs_" in key}
    for family in sorted(families):  # Holm across the curve's label counts, per comparison
        tests = [entry[family] for entry in curve.values() if family in entry]
        boots = [t["multiboot"] for t in tests if "multiboot" in t]
        for boot, adjusted in zip(boots, holm([b["p_value"] for b in boots]), strict=True):
            boot["p_holm"] = adjusted
        for test, adjusted in zip(tests, holm([t["p_value"] for t in tests]), strict=True):
            test["p_holm"] = adjusted
            test["verdict"] = verdict(test)  # the multi-bootstrap's Holm p decides, where there is one
    return curve


def _by_seed(accuracy: dict) -> dict[str, float]:
    return {str(s): float(a) for s, a in sorted(accuracy.items())}


def _tfidf_by_seed(tfidf: dict | None, labels: str, seeds: list[int]) -> dict[int, float] | None:
    """TF-IDF + LR's test accuracy per seed at `labels`; all labels are one fit for every seed."""
    entry = ((tfidf or {}).get(labels) or {}).get("tfidf_lr")
    if entry is None:
        return None
    by_seed = entry["by_seed"]
    if len(by_seed) == 1:  # the same rows for every seed: fitted once
        return dict.fromkeys(seeds, next(iter(by_seed.values())))
    return {s: by_seed[str(s)] for s in seeds}


def snapshot_curve(runs, labels: str) -> list[dict]:
    """The pretraining-tokens curve: pretrained − scratch at `labels` labels for each start
    (scratch = 0 tokens, each snapshot, the final model), paired over the snapshot runs' seeds."""
    at = runs[runs["chosen"] & (runs["labels"] == labels)]
    at_scratch = at[at["start"] == "scratch"]
    scratch = dict(zip(at_scratch["seed"], at_scratch["test_accuracy"], strict=True))
    pretrained = at[at["start"] == "pretrained"]
    points = [
        {
            "snapshot": "scratch",
            "tokens": 0,
            "mean_difference": 0.0,
            "std_difference": 0.0,
            "n": len(scratch),
            "accuracy_mean": float(np.mean(list(scratch.values()))),
        }
    ]
    snapshot_seeds = sorted(set(pretrained.loc[pretrained["snapshot"] != "final", "seed"]))
    for snapshot, group in pretrained.groupby("snapshot", sort=False):
        group = group[group["seed"].isin(snapshot_seeds)] if snapshot_seeds else group
        seeds = sorted(group["seed"])
        accuracy = dict(zip(group["seed"], group["test_accuracy"], strict=True))
        point = paired_comparison([accuracy[s] for s in seeds], [scratch[s] for s in seeds])
        points.append(
            {
                "snapshot": snapshot,
                "tokens": int(group["tokens"].iloc[0]),
                **point,
                "accuracy_mean": float(np.mean(list(accuracy.values()))),
            }
        )
    return sorted(points, key=lambda p: p["tokens"])
