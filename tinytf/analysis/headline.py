"""The headline files' view of the study's tests: reports/metrics.json (the evaluate stage) and
reports/headline.json (what `dvc exp show` makes columns of) quote each comparison as one block:
its estimate, 95 % interval, p, Holm p, the sources of noise resampled together and the verdict.
The seed-only and text-only tests travel beside it in metrics.json as diagnostics only."""

from __future__ import annotations

from tinytf.analysis.evaluation import verdict_of
from tinytf.params.starts import present

HEADLINE_TESTS = ("pretrained_vs_scratch", "pretrained_vs_tfidf")


def brief_test(test: dict, diagnostics: bool = True) -> dict:
    """One comparison as the headline files carry it: from the multi-bootstrap where the summary
    has one, else from the seed test (an older run's summary: its interval is the t interval).
    `diagnostics`: also the seed-only and text-only p (headline.json leaves them out: DVC makes a
    column of every number)."""
    boot = test.get("multiboot")
    if boot is not None:
        estimate, (low, high), sources = boot["estimate"], boot["ci95"], ", ".join(boot["sources"])
        p, p_holm = boot["p_value"], boot.get("p_holm")
    else:
        estimate, sources = test["mean_difference"], "seed"
        p, p_holm = test.get("p_value"), test.get("p_holm")
        half = test.get("ci95")  # a half-width, where the seed test computed one
        low, high = (None, None) if half is None else (estimate - half, estimate + half)
    brief = {
        "estimate": estimate,
        "ci95_low": low,
        "ci95_high": high,
        "p_value": p,
        "p_holm": p_holm,
        "sources": sources,
        "verdict": verdict_of(test),
    }
    if diagnostics and boot is not None:
        brief["seeds_only"] = {k: test.get(k) for k in ("test", "p_value", "p_holm")}
    if diagnostics and "items" in test:
        brief["texts_only"] = {"p_value": test["items"]["p_value"]}
    return brief


def headline_metrics(report: dict, best: dict, finetune: dict, baselines: dict) -> dict:
    """reports/metrics.json: the best cell and its test figures, each start (and pretrained vs
    scratch) and baseline with all labels, and along the labelled-data curve every start, TF-IDF +
    LR and the HEADLINE_TESTS (`brief_test`)."""
    metrics = {
        "test_accuracy": report["accuracy"],
        "test_accuracy_ci95": report["accuracy_ci95"],
        "test_macro_f1": report["macro_f1"],
        "best": best,
        "pretrained_vs_scratch": {
            start: {"mean": v["test_accuracy_mean"], "std": v["test_accuracy_std"]}
            for start, v in finetune["starts"].items()
        },
    }
    every_test = finetune.get("label_curve", {}).get("all", {}).get("pretrained_vs_scratch")
    if every_test:  # the all-labels point of the curve: it carries the Holm p and the multi-bootstrap
        metrics["pretrained_vs_scratch"]["comparison"] = brief_test(every_test)
    every = baselines["label_curve"]["all"]
    metrics["baselines"] = {name: {"test_accuracy": every[name]["mean"]} for name in ("majority", "tfidf_lr")}
    metrics["label_curve"] = {
        labels: {
            **{start: {"mean": entry[start]["mean"]} for start in present(entry)},
            "tfidf_lr": {"mean": baselines["label_curve"][labels]["tfidf_lr"]["mean"]},
            **{key: brief_test(entry[key]) for key in HEADLINE_TESTS if key in entry},
        }
        for labels, entry in finetune.get("label_curve", {}).items()
        if labels in baselines["label_curve"]
    }
    return metrics
