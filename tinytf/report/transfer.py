"""The report's transfer study: the labelled-data curve next to the baselines, the
pretraining-tokens curve, the learning rates chosen on validation, and the sentences that say
where pretraining helped, by how much, and where it did not, each built from those numbers."""

from __future__ import annotations

import pandas as pd

from tinytf.analysis.evaluation import ALPHA, decisive_p
from tinytf.analysis.evaluation import verdict as analysis_verdict
from tinytf.report import tables as rt
from tinytf.report.facts import UPSTREAM, ReportView

ARMS = ("pretrained", "scratch", "probe")
# Published SST-2 numbers, cited for context only (another dataset than the default one)
PUBLISHED = (
    ("SVM (bag of words), Socher et al. 2013", 0.794),
    ("Naive Bayes (bigrams), Socher et al. 2013", 0.818),
    ("CNN-rand, Kim 2014", 0.837),
)


def curve_frame(finetune: dict, baselines: dict | None, path) -> pd.DataFrame:
    """One row per label count (increasing): every start and baseline, and the paired gaps."""
    rows = []
    for labels, entry in finetune["label_curve"].items():
        rt.require(entry, f"{path} (label_curve {labels})", "scratch", "n_train")
        row = {"labels": labels, "n_train": entry["n_train"]}
        for start in ARMS:
            if start in entry:
                row.update(
                    {
                        f"{start} mean": entry[start]["mean"],
                        f"{start} std": entry[start]["std"],
                        f"{start} seeds": len(entry[start]["by_seed"]),
                    }
                )
        base = (baselines or {}).get("label_curve", {}).get(labels)
        if base is not None:
            row.update(
                {
                    "majority mean": base["majority"]["mean"],
                    "tfidf_lr mean": base["tfidf_lr"]["mean"],
                    "tfidf_lr std": base["tfidf_lr"]["std"],
                }
            )
        for start, other in (
            ("pretrained", "scratch"),
            ("probe", "scratch"),
            ("pretrained", "tfidf"),
            ("scratch", "tfidf"),
        ):
            test = entry.get(f"{start}_vs_{other}")
            if test:
                name = f"{start} − {'TF-IDF' if other == 'tfidf' else other}"
                row.update(
                    {
                        name: test["mean_difference"],
                        f"{name} p": test.get("p_value"),
                        f"{name} p (Holm)": test.get("p_holm"),
                    }
                )
                if start == "pretrained" and "items" in test:
                    row[f"{name} p (texts)"] = test["items"]["p_value"]
                if "multiboot" in test:  # v3: every source at once, what the verdict rests on
                    boot = test["multiboot"]
                    row[f"{name} CI low (all sources)"], row[f"{name} CI high (all sources)"] = boot["ci95"]
                    row[f"{name} p (all sources, Holm)"] = boot.get("p_holm")
        rows.append(row)
    return pd.DataFrame(rows).sort_values("n_train", kind="stable").reset_index(drop=True)


def verdict(test: dict) -> str:
    """'helped' / 'hurt' / 'made no detectable difference', by sign and the paired p value,
    Holm-adjusted across the curve where the summary has it (a claim per label count is one of a
    family)."""
    p = decisive_p(test)
    if p is None or p >= ALPHA:
        return "made no detectable difference"
    return "helped" if test["mean_difference"] > 0 else "hurt"


def transfer_section(r) -> None:
    """Tables and plots of the transfer study; facts for the text."""
    from tinytf.report.plots import plot_label_curve, plot_snapshot_curve

    s = r.f.finetune
    if s is None or "label_curve" not in s:
        return
    path = r.root / UPSTREAM["finetune_summary"].path
    baselines = r.inputs.json("baselines_summary", keys=("label_curve",))
    curve = curve_frame(s, baselines, path)
    r.f.label_curve, r.f.baselines = curve, baselines
    r.table(
        "label_curve",
        "Labelled-data curve",
        "Test accuracy against train labels: each start (mean, std, "
        "seeds) next to the majority class and TF-IDF + logistic regression fitted on the same subsets, and "
        "the paired differences against scratch and against TF-IDF + LR with their p over seeds, the "
        f"Holm-adjusted p across label counts (Holm p < {ALPHA} is a detected difference) and, for the "
        "pretrained start, the p of the same comparison over the test texts."
        + (
            " The columns marked (all sources) are each difference's 95 % interval and Holm p over seeds "
            "and test movies at once (the multi-bootstrap): the verdict rests on them."
            if any(c.endswith("(all sources, Holm)") for c in curve.columns)
            else ""
        ),
        curve,
    )
    r.plot(
        "label_curve",
        "The study's headline figure: test accuracy against train labels (log scale), each start "
        "with its seed band, the baselines dashed.",
        plot_label_curve,
        curve,
    )
    points = pd.DataFrame(s.get("snapshot_curve") or [])
    if len(points) > 1:
        r.f.snapshot_curve = points
        r.table(
            "snapshot_curve",
            "Pretraining-tokens curve",
            f"Pretrained − scratch at {s['snapshot_labels']} "
            "labels, fine-tuned from snapshots taken along pretraining (0 tokens = scratch).",
            points[
                [
                    c
                    for c in (
                        "snapshot",
                        "tokens",
                        "accuracy_mean",
                        "mean_difference",
                        "std_difference",
                        "p_value",
                        "n",
                    )
                    if c in points
                ]
            ],
        )
        r.plot(
            "snapshot_curve",
            "Transfer gain against pretraining tokens.",
            plot_snapshot_curve,
            points,
            s["snapshot_labels"],
        )
    recipe_table(r, s)


def recipes_by_labels(s: dict) -> dict[str, dict[str, dict]]:
    """summary.json's `recipes` as {label count: {start: recipe}}; an older summary chose once, at
    `protocol.search_labels`, and kept {start: recipe}."""
    recipes = s.get("recipes") or {}
    if recipes and all("candidates" in v for v in recipes.values()):
        return {str(s["protocol"]["search_labels"]): recipes}
    # summary.json's keys are sorted as text ("1000" before "250"): the protocol's curve order instead
    order = s["protocol"]["label_counts"]
    return dict(sorted(recipes.items(), key=lambda kv: order.index(kv[0])))


def search_labels_text(p: dict) -> str:
    """'1000 labels' (one search for the whole curve) or 'each label count (250, all)'."""
    counts = p["search_labels"]
    if isinstance(counts, list) and len(counts) > 1:
        return f"each of {', '.join(counts)} labels"
    return f"{counts[0] if isinstance(counts, list) else counts} labels"


def recipe_table(r, s: dict) -> None:
    """Every trained start's recipe candidates at every searched label count, their mean
    validation accuracy, and its choice."""
    recipes = recipes_by_labels(s)
    if not recipes:
        return
    rows = [
        {
            "labels": labels,
            "start": start,
            "lr": c["lr"],
            "dropout": c["dropout"],
            "validation_accuracy": c["validation_accuracy"],
            "seeds": c["seeds"],
            "chosen": (c["lr"], c["dropout"]) == (chosen["lr"], chosen["dropout"]),
        }
        for labels, by_start in recipes.items()
        for start, chosen in by_start.items()
        for c in chosen["candidates"]
    ]
    protocol = s["protocol"]
    r.table(
        "recipes",
        "Recipe per start",
        (  # v3's halving search, or the full search of the runs before it
            f"Mean validation accuracy of every candidate lr x dropout over the seeds it ran, by successive "
            f"halving over the first {len(protocol['search_seeds'])} seed(s) (every candidate on the first, "
            f"the better half on the next) at {search_labels_text(protocol)}: the same candidates for every "
            "trained start, each using the best of its last round."
            if protocol.get("search")
            else f"Mean validation accuracy of every candidate lr x dropout over the "
            f"first {len(protocol['search_seeds'])} seed(s) at {search_labels_text(protocol)}: the same "
            "candidates for every trained start, each using its own best."
        )
        + " Test accuracy is never read to choose. The linear probe has no lr or dropout: its logistic "
        "regression's C is chosen on validation in every run (runs.csv, `probe_c`)."
        + (f" {changes}" if (changes := recipe_changes(recipes)) else ""),
        pd.DataFrame(rows),
    )


def recipe_changes(recipes: dict[str, dict[str, dict]]) -> str | None:
    """Whether one search would have served the whole curve: per trained start, the label counts
    whose own choice differs from the choice at the others (None with one searched count)."""
    if len(recipes) < 2:
        return None
    parts = []
    starts = dict.fromkeys(start for by_start in recipes.values() for start in by_start)
    for start in starts:
        chosen = {
            labels: (by_start[start]["lr"], by_start[start]["dropout"])
            for labels, by_start in recipes.items()
        }
        text = ", ".join(f"{labels}: lr {lr:g}, dropout {d:g}" for labels, (lr, d) in chosen.items())
        kinds = len(set(chosen.values()))
        parts.append(f"{start} chose {'one recipe' if kinds == 1 else f'{kinds} different recipes'} ({text})")
    return "Recipe per label count (the choice on each count's own validation): " + "; ".join(parts) + "."


def protocol_text(s: dict) -> list[str]:
    """The protocol, fixed in params.yaml before the results: the report states it first."""
    p = s.get("protocol")
    if not p:
        return []
    hf = f" (hf: lr {p['hf_lrs']})" if p.get("hf_lrs") else ""
    return [
        f"- Protocol (params.yaml `finetune:`; revised after earlier results, as README.md says): {len(p['seeds'])} paired seeds "
        f"({', '.join(map(str, p['seeds']))}) at every label count ({', '.join(p['label_counts'])}); every "
        f"trained start chooses lr from {p['lrs']}{hf} and dropout from {p['dropouts']} on validation at "
        f"{search_labels_text(p)}"
        + (
            f", by successive halving over the first {len(p['search_seeds'])} seeds"
            if p.get("search")
            else ""
        )
        + f"; {p['tests']}."
    ]


def trend_text(s: dict) -> list[str]:
    """The only source of a claim that pretraining helps more (or less) with fewer labels."""
    trend = s.get("trend")
    if not trend:
        return []
    low, high = trend["ci95"]
    p = trend["p_value"]  # None: every seed the same slope, so no t-test
    found = p is not None and p < ALPHA
    said = (
        f"pretraining's gain {'shrinks' if trend['slope_per_decade'] < 0 else 'grows'} as labels grow"
        if found
        else "no trend of the gain with the label count detected"
    )
    return [
        f"- Trend: {said} (slope {100 * trend['slope_per_decade']:+.1f} points per tenfold labels, 95 % CI "
        f"[{100 * low:+.1f}, {100 * high:+.1f}], {f'p = {p:.3g}' if p is not None else 'no t-test'}; {trend['model']}, "
        f"n = {trend['n']})."
    ]


def transfer_text(r: ReportView) -> list[str]:
    """README bullets: where pretraining helped, the probe, the baselines and how far we stand."""
    curve = getattr(r.f, "label_curve", None)
    if curve is None:
        return []
    s = r.f.finetune
    out = protocol_text(s)
    # the unwelcome comparisons first: every start against the baseline, at every label count
    out += [line for labels in curve["labels"] if (line := against_tfidf(labels, s["label_curve"][labels]))]
    for labels in curve["labels"]:  # by train size (JSON keeps keys sorted as text)
        entry = s["label_curve"][labels]
        test = entry.get("pretrained_vs_scratch")
        if test:
            said = verdict(test)
            if said == "made no detectable difference":
                points = f"its {100 * test['mean_difference']:+.1f} points"
                if "multiboot" in test:
                    pass  # its interval follows, in the brackets
                elif rt.no_spread(test):
                    said += f": {test['n']} seeds are too few for a sign test to call {points} detected"
                elif test.get("p_value") is not None and test["p_value"] < ALPHA:
                    family = len(s["label_curve"])
                    said += f": {points} pass one test but not Holm's correction across {family} label counts"
                else:
                    said += f": {points} are within seed noise"
            out.append(
                f"- {labels} labels: pretraining {said} ({rt.pct(entry['pretrained']['mean'])} vs "
                f"scratch {rt.pct(entry['scratch']['mean'])}; {multiboot_text(test)}"
                + ("; diagnostics: " if "multiboot" in test else "")
                + f"paired {rt.paired_text(test)}{items_text(test)})."
            )
    out += trend_text(s)
    every = s["label_curve"].get("all", {})
    if "probe" in every and r.f.baselines:
        majority = r.f.baselines["label_curve"]["all"]["majority"]["mean"]
        out.append(
            f"- Frozen linear probe with all labels (a logistic regression on every layer's pooled "
            f"output): {rt.pct(every['probe']['mean'])}, {100 * (every['probe']['mean'] - majority):+.1f} "
            f"points over the majority class ({rt.pct(majority)}): what pretraining put in the features "
            "without fine-tuning."
        )
    out += _baseline_text(curve, ((r.f.data or {}).get("sentiment") or {}).get("source"))
    points = getattr(r.f, "snapshot_curve", None)
    if points is not None:
        steps = ", ".join(
            f"{tokens_text(p.tokens)} tokens {100 * p.mean_difference:+.1f}"
            for p in points.itertuples()
            if p.tokens
        )
        out.append(f"- Gain at {s['snapshot_labels']} labels against pretraining tokens (points): {steps}.")
    return out


START_NAMES = {"pretrained": "pretrained", "scratch": "scratch", "probe": "the linear probe", "hf": "hf"}
# "no difference detected", never "a tie": a test that misses says nothing of equality
AGAINST = {
    "lower": "TF-IDF wins",
    "higher": "the start wins",
    "no detectable difference": "no difference detected over seeds",
}


def against_tfidf(labels: str, entry: dict) -> str | None:
    """'- 250 labels, against TF-IDF + LR (63.2%): it beats every start: …': each start's paired
    difference from the baseline, its Holm p and what the test says."""
    tests = {start: entry[f"{start}_vs_tfidf"] for start in START_NAMES if f"{start}_vs_tfidf" in entry}
    if not tests:
        return None
    said = {start: test.get("verdict") or analysis_verdict(test) for start, test in tests.items()}
    lower = [START_NAMES[a] for a, v in said.items() if v == "lower"]
    higher = [START_NAMES[a] for a, v in said.items() if v == "higher"]
    tied = [START_NAMES[a] for a, v in said.items() if v == "no detectable difference"]
    if len(lower) == len(tests):
        summary = "it beats every start"
    elif len(higher) == len(tests):
        summary = "every start beats it"
    else:
        parts = [
            f"{verb} {' and '.join(names)}"
            for verb, names in (
                ("it beats", lower),
                ("no difference detected from", tied),
                ("loses to", higher),
            )
            if names
        ]
        summary = ", ".join(parts)
    details = "; ".join(
        f"{START_NAMES[start]} {100 * test['mean_difference']:+.1f} points ("
        + (
            f"{AGAINST_ALL[said[start]]}, {multiboot_text(test)}"
            if "multiboot" in test
            else f"{AGAINST[said[start]]}, {holm_text(test)}{items_text(test)}"
        )
        + ")"
        for start, test in tests.items()
    )
    tfidf = entry[next(iter(tests))]["mean"] - next(iter(tests.values()))["mean_difference"]
    return f"- {labels} labels, against TF-IDF + logistic regression ({rt.pct(tfidf)}): {summary}: {details}."


AGAINST_ALL = dict(AGAINST, **{"no detectable difference": "no difference detected"})


def multiboot_text(test: dict) -> str:
    """'95 % CI [+0.4, +3.8] over seeds and test movies at once (multi-bootstrap p = 0.01, Holm p =
    0.03)' where the summary has it (protocol v3), else ''."""
    boot = test.get("multiboot")
    if boot is None:
        return ""
    low, high = (100 * x for x in boot["ci95"])
    drawn = " and ".join(
        {"seed": "seeds", "pretraining run": "pretraining runs"}.get(s, f"test {s}s") for s in boot["sources"]
    )
    holm = f", Holm p = {boot['p_holm']:.3g}" if boot.get("p_holm") is not None else ""
    return f"95 % CI [{low:+.1f}, {high:+.1f}] over {drawn} at once (multi-bootstrap p = {boot['p_value']:.3g}{holm})"


def holm_text(test: dict) -> str:
    if test.get("p_holm") is not None:
        return f"Holm p = {test['p_holm']:.3g}"
    return "no spread over seeds: no t-test"


def items_text(test: dict) -> str:
    """'; over the 1,275 test texts +2.1 points, p = 0.03' where the summary has the item test."""
    items = test.get("items")
    if not items:
        return ""
    return (
        f"; over the {items['n_items']:,} test texts {100 * items['mean_difference']:+.1f} points, "
        f"p = {items['p_value']:.3g}"
    )


def tokens_text(tokens: int) -> str:
    return f"{tokens / 1e6:.1f}M" if tokens >= 1e5 else f"{tokens:,}"


def _baseline_text(curve: pd.DataFrame, source: str | None) -> list[str]:
    if "tfidf_lr mean" not in curve:
        return []
    last = curve.iloc[-1]
    ours = {start: last[f"{start} mean"] for start in ARMS if f"{start} mean" in curve}
    top_start = max(ours, key=ours.get)
    gap = 100 * (ours[top_start] - last["tfidf_lr mean"])
    cnn = PUBLISHED[-1][1]
    to_cnn = 100 * (ours[top_start] - cnn)
    published = "; ".join(f"{name} {rt.pct(value)}" for name, value in PUBLISHED)
    # Kim's stsa.binary test file is the sst2 source's: the same sentences, though the published
    # models also trained on SST's labelled phrases
    context = (
        "the same 1,821 test sentences, the published models trained on SST's phrases too"
        if source == "sst2"
        else "context only, another dataset"
    )
    return [
        # "best start" means best on validation everywhere else: this one is only the highest on test
        f"- With all labels our highest-scoring start on test ({top_start}, {rt.pct(ours[top_start])}) stands {abs(gap):.1f} points "
        f"{side(gap)} TF-IDF + logistic regression ({rt.pct(last['tfidf_lr mean'])}) and {abs(to_cnn):.1f} points "
        f"{side(to_cnn)} CNN-rand's published {rt.pct(cnn)} on SST-2 ({context}: {published}).",
    ]


def side(gap: float) -> str:
    return "above" if gap > 0 else "below"
