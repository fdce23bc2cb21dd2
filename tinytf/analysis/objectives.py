"""Masked against causal pretraining on the labelled-data curve: two runs of the same protocol
that differ only in `pretrain.objective`, compared start against start on the same seeds (a seed
fixes the subset, head init and batch order, so the pretrained bodies are all that differ)."""

from __future__ import annotations

import pandas as pd
from scipy import stats

from tinytf.analysis.evaluation import curve_summary, detected, holm, paired_comparison
from tinytf.errors import DataError

ARMS = ["pretrained", "scratch"]


def objective_comparison(causal_runs: pd.DataFrame, masked_runs: pd.DataFrame) -> dict:
    """Per label count: each objective's pretrained start and its own scratch (mean test accuracy:
    a scratch body has the run's attention, so a masked run's scratch is bidirectional), the
    paired test of masked − causal over the seeds, Holm-adjusted across the label counts, and
    each start against scratch as its own run tested it. Raises DataError when the two runs do
    not share their label counts and seeds."""
    causal, masked = curve_summary(causal_runs, ARMS), curve_summary(masked_runs, ARMS)
    if list(causal) != list(masked):
        raise DataError(f"the runs' label counts differ: causal {list(causal)}, masked {list(masked)}")
    curve = {}
    for labels, m in masked.items():
        c = causal[labels]
        seeds = list(m["pretrained"]["by_seed"])
        if seeds != list(c["pretrained"]["by_seed"]):
            raise DataError(
                f"at {labels} labels the runs' seeds differ: causal "
                f"{list(c['pretrained']['by_seed'])}, masked {seeds}"
            )
        curve[str(labels)] = {
            "n_train": m["n_train"],
            "causal": c["pretrained"]["mean"],
            "masked": m["pretrained"]["mean"],
            "causal_scratch": c["scratch"]["mean"],
            "masked_scratch": m["scratch"]["mean"],
            "masked_vs_causal": paired_comparison(
                [m["pretrained"]["by_seed"][s] for s in seeds], [c["pretrained"]["by_seed"][s] for s in seeds]
            ),
            "causal_vs_scratch": c["pretrained_vs_scratch"],
            "masked_vs_scratch": m["pretrained_vs_scratch"],
        }
    tests = [entry["masked_vs_causal"] for entry in curve.values()]
    for test in tests:  # the 95 % interval of the mean paired difference, half-width
        n = test["n"]
        test["ci95"] = float(stats.t.ppf(0.975, n - 1) * test["std_difference"] / n**0.5) if n > 1 else None
    for test, adjusted in zip(tests, holm([t["p_value"] for t in tests]), strict=True):
        test["p_holm"] = adjusted
    return {
        "label_curve": curve,
        "test": "paired t over seeds of masked − causal pretrained starts, Holm across label counts",
    }


def add_multiboot(
    comparison: dict,
    causal: tuple[pd.DataFrame, pd.DataFrame],
    masked: tuple[pd.DataFrame, pd.DataFrame],
    groups=None,
) -> None:
    """Into each label count's masked_vs_causal, the multi-bootstrap over pretraining runs, seeds
    and test texts by movie (tinytf.analysis.multiboot), Holm across the counts: what the verdict
    rests on. `causal`, `masked`: each run's (runs.csv, predictions); a seed's bodies in the two
    runs share their pretraining seed (init and batch order), so the draws pair them."""

    from tinytf.analysis.items import bodies_by_seed, chosen_predictions, correct_by_item, nest_of
    from tinytf.analysis.multiboot import multi_bootstrap

    (causal_runs, causal_pred), (masked_runs, masked_pred) = causal, masked
    causal_pred, masked_pred = (
        chosen_predictions(causal_pred, causal_runs),
        chosen_predictions(masked_pred, masked_runs),
    )
    boots = []
    for labels, entry in comparison["label_curve"].items():
        nest = nest_of(bodies_by_seed(masked_runs).get("pretrained"))
        boot = multi_bootstrap(
            correct_by_item(masked_pred, start="pretrained", labels=labels),
            correct_by_item(causal_pred, start="pretrained", labels=labels),
            groups,
            nest=nest,
        )
        entry["masked_vs_causal"]["multiboot"] = boot
        boots.append(boot)
    for boot, adjusted in zip(boots, holm([b["p_value"] for b in boots]), strict=True):
        boot["p_holm"] = adjusted


def rows(comparison: dict) -> list[tuple[str, dict]]:
    """The label counts smallest first ("all" last), also when the comparison was read back from
    objectives.json, whose keys a JSON writer sorts as text ("1000" before "250")."""
    return sorted(comparison["label_curve"].items(), key=lambda item: item[1]["n_train"])


def verdict(labels: str, entry: dict, alpha: float = 0.05) -> str:
    """One line: the difference in points with its interval and p-values, or that none was detected;
    from the multi-bootstrap where the export computed one."""
    test = entry["masked_vs_causal"]
    diff = 100 * test["mean_difference"]
    boot = test.get("multiboot")
    if boot is not None:
        low, high = (100 * x for x in boot["ci95"])
        found = detected(boot, alpha)
        drawn = ", ".join(boot["sources"])
        return (
            f"{labels} labels: masked − causal {diff:+.1f} points, 95 % CI [{low:+.1f}, {high:+.1f}] over "
            f"{drawn} at once (multi-bootstrap p = {boot['p_value']:.3g}, Holm p = {boot['p_holm']:.3g})"
            + ("" if found else ": no difference detected")
        )
    p, p_holm = test.get("p_value"), test.get("p_holm")
    if p is None:
        return f"{labels} labels: masked − causal {diff:+.1f} points, every seed alike (no t-test)"
    found = p_holm is not None and p_holm < alpha
    text = (
        f"masked − causal {diff:+.1f} ± {100 * test['ci95']:.1f} points (95 % CI), p = {p:.3g}, "
        f"Holm p = {p_holm:.3g}"
    )
    return f"{labels} labels: {text}" + ("" if found else ": no difference detected")


def table(comparison: dict) -> str:
    """The label-curve table: each run's pretrained start and scratch, the paired difference, tests."""
    lines = [
        "| labels | causal pretrained | causal scratch | masked pretrained | masked scratch "
        "| masked − causal (points) | p | Holm p |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for labels, e in rows(comparison):
        t = e["masked_vs_causal"]
        p = "–" if t["p_value"] is None else f"{t['p_value']:.3g}"
        ph = "–" if t.get("p_holm") is None else f"{t['p_holm']:.3g}"
        lines.append(
            f"| {labels} ({e['n_train']}) | {100 * e['causal']:.1f} % | {100 * e['causal_scratch']:.1f} % | "
            f"{100 * e['masked']:.1f} % | {100 * e['masked_scratch']:.1f} % | "
            f"{100 * t['mean_difference']:+.1f} | {p} | {ph} |"
        )
    return "\n".join(lines) + "\n"
