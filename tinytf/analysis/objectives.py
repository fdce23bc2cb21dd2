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
    """Per label count: each objective's pretrained start and its own scratch (a scratch body has
    the run's attention: a masked run's is bidirectional), masked − causal paired over the seeds
    (Holm across the label counts) and each start against scratch as its own run tested it.
    Raises DataError when the two runs do not share their label counts and seeds."""
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
            "did": paired_comparison(*(_gains(run, seeds) for run in (m, c))),
            "causal_vs_scratch": c["pretrained_vs_scratch"],
            "masked_vs_scratch": m["pretrained_vs_scratch"],
        }
    for family in FAMILIES:
        tests = [entry[family] for entry in curve.values()]
        for test in tests:  # the 95 % interval of the mean paired difference, half-width
            n, std = test["n"], test["std_difference"]
            test["ci95"] = float(stats.t.ppf(0.975, n - 1) * std / n**0.5) if n > 1 else None
        _holm_into(tests)
    return {
        "label_curve": curve,
        "test": "paired t over seeds of masked − causal pretrained starts and of the difference in "
        "differences against each run's scratch, Holm across label counts within each",
    }


FAMILIES = ("masked_vs_causal", "did")


def _holm_into(tests: list[dict]) -> None:
    """Each test's `p_holm`: its p adjusted across the family (the label counts)."""
    for test, adjusted in zip(tests, holm([t["p_value"] for t in tests]), strict=True):
        test["p_holm"] = adjusted


def _gains(summary: dict, seeds: list[int]) -> list[float]:
    """Per seed, the pretrained start's accuracy less its own run's scratch start's."""
    return [summary["pretrained"]["by_seed"][s] - summary["scratch"]["by_seed"][s] for s in seeds]


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

    causal_pred, masked_pred = (chosen_predictions(pred, runs) for runs, pred in (causal, masked))
    nest = nest_of(bodies_by_seed(masked[0]).get("pretrained"))
    boots: dict[str, list[dict]] = {family: [] for family in FAMILIES}
    for labels, entry in comparison["label_curve"].items():
        m, c = (
            {start: correct_by_item(pred, start=start, labels=labels) for start in ARMS}
            for pred in (masked_pred, causal_pred)
        )
        boot = multi_bootstrap(m["pretrained"], c["pretrained"], groups, nest=nest)
        # the difference in differences by linearity: half of it is the difference of the
        # per-text means (masked + causal scratch) / 2 − (causal + masked scratch) / 2, drawn with
        # the same runs and texts, so its interval is twice theirs and its p is theirs
        did = multi_bootstrap(
            (m["pretrained"] + c["scratch"]) / 2, (c["pretrained"] + m["scratch"]) / 2, groups, nest=nest
        )
        did.update(estimate=2 * did["estimate"], ci95=[2 * x for x in did["ci95"]])
        for family, drawn in zip(FAMILIES, (boot, did), strict=True):
            entry[family]["multiboot"] = drawn
            boots[family].append(drawn)
    for family in FAMILIES:
        _holm_into(boots[family])


def rows(comparison: dict) -> list[tuple[str, dict]]:
    """The label counts smallest first ("all" last), also when the comparison was read back from
    objectives.json, whose keys a JSON writer sorts as text ("1000" before "250")."""
    return sorted(comparison["label_curve"].items(), key=lambda item: item[1]["n_train"])


NAMES = {"masked_vs_causal": "masked − causal", "did": "(masked − its scratch) − (causal − its scratch)"}


def verdict(labels: str, entry: dict, family: str = "masked_vs_causal", alpha: float = 0.05) -> str:
    """One line: the difference in points with its interval and p-values, or that none was detected;
    from the multi-bootstrap where the export computed one."""
    test, name = entry[family], NAMES[family]
    diff = 100 * test["mean_difference"]
    boot = test.get("multiboot")
    if boot is not None:
        low, high = (100 * x for x in boot["ci95"])
        found = detected(boot, alpha)
        drawn = ", ".join(boot["sources"])
        return (
            f"{labels} labels: {name} {diff:+.1f} points, 95 % CI [{low:+.1f}, {high:+.1f}] over "
            f"{drawn} at once (multi-bootstrap p = {boot['p_value']:.3g}, Holm p = {boot['p_holm']:.3g})"
            + ("" if found else ": no difference detected")
        )
    p, p_holm = test.get("p_value"), test.get("p_holm")
    if p is None:
        return f"{labels} labels: {name} {diff:+.1f} points, every seed alike (no t-test)"
    found = p_holm is not None and p_holm < alpha
    text = (
        f"{name} {diff:+.1f} ± {100 * test['ci95']:.1f} points (95 % CI), p = {p:.3g}, Holm p = {p_holm:.3g}"
    )
    return f"{labels} labels: {text}" + ("" if found else ": no difference detected")


HEADS = {"masked_vs_causal": "masked − causal", "did": "difference in differences"}


def _p(test: dict, key: str) -> str:
    """The decisive p of a table cell: the multi-bootstrap's where the export computed one."""
    value = (test.get("multiboot") or test).get(key)
    return "–" if value is None else f"{value:.3g}"


def table(comparison: dict) -> str:
    """The label-curve table: each run's pretrained start and scratch, the two comparisons and their
    p (the multi-bootstrap's where there is one, else the seed test's)."""
    first = next(iter(comparison["label_curve"].values()))
    families = [f for f in FAMILIES if f in first]
    lines = [  # an objectives.json written before the difference in differences has only the first
        "| labels | causal pretrained | causal scratch | masked pretrained | masked scratch "
        + "".join(f"| {HEADS[f]} (points) | p | Holm p " for f in families)
        + "|",
        "|---" * (5 + 3 * len(families)) + "|",
    ]
    for labels, e in rows(comparison):
        cells = [
            f"{100 * e[f]['mean_difference']:+.1f} | {_p(e[f], 'p_value')} | {_p(e[f], 'p_holm')}"
            for f in families
        ]
        lines.append(
            f"| {labels} ({e['n_train']}) | {100 * e['causal']:.1f} % | {100 * e['causal_scratch']:.1f} % | "
            f"{100 * e['masked']:.1f} % | {100 * e['masked_scratch']:.1f} % | " + " | ".join(cells) + " |"
        )
    return "\n".join(lines) + "\n"
