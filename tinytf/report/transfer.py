"""The report's transfer study as tables and plots: the labelled-data curve next to the
baselines, the pretraining-tokens curve and the recipes chosen on validation (what the README
says of them is tinytf.report.derive_transfer's)."""

from __future__ import annotations

import pandas as pd

from tinytf.analysis.evaluation import ALPHA
from tinytf.params.starts import present, trained
from tinytf.report import tables as rt
from tinytf.report.artifacts import Plot, Table
from tinytf.report.derive_transfer import search_labels_text
from tinytf.report.render import caption


def curve_frame(finetune: dict, baselines: dict | None, path) -> pd.DataFrame:
    """One row per label count (increasing): every start and baseline, and the paired gaps."""
    rows = []
    for labels, entry in finetune["label_curve"].items():
        rt.require(entry, f"{path} (label_curve {labels})", "scratch", "n_train")
        row = {"labels": labels, "n_train": entry["n_train"]}
        for start in present(entry):
            e = entry[start]
            row |= {f"{start} mean": e["mean"], f"{start} std": e["std"], f"{start} seeds": len(e["by_seed"])}
        base = (baselines or {}).get("label_curve", {}).get(labels)
        if base is not None:
            row["majority mean"] = base["majority"]["mean"]
            row |= {"tfidf_lr mean": base["tfidf_lr"]["mean"], "tfidf_lr std": base["tfidf_lr"]["std"]}
        for start, other in _differences(entry):
            test = entry.get(f"{start}_vs_{other}")
            if test:
                name = f"{start} − {'TF-IDF' if other == 'tfidf' else other}"
                row[name] = test["mean_difference"]
                row |= {f"{name} p": test.get("p_value"), f"{name} p (Holm)": test.get("p_holm")}
                if start == "pretrained" and "items" in test:
                    row[f"{name} p (texts)"] = test["items"]["p_value"]
                if "multiboot" in test:  # v3: every source at once, what the verdict rests on
                    boot = test["multiboot"]
                    row[f"{name} CI low (all sources)"], row[f"{name} CI high (all sources)"] = boot["ci95"]
                    row[f"{name} p (all sources, Holm)"] = boot.get("p_holm")
        rows.append(row)
    return pd.DataFrame(rows).sort_values("n_train", kind="stable").reset_index(drop=True)


def _differences(entry: dict) -> list[tuple[str, str]]:
    """The table's gap columns: every start against scratch, then every start trained by epochs
    against TF-IDF (the probe's one fit per body against TF-IDF's is the README's, not a column)."""
    starts = present(entry)
    return [(s, "scratch") for s in starts if s != "scratch"] + [(s, "tfidf") for s in starts if trained(s)]


def transfer_tables(f, params) -> list:
    """The labelled-data curve, the pretraining-tokens curve and the recipes, as tables and plots."""
    from tinytf.report.plots import plot_label_curve, plot_snapshot_curve

    s, curve = f.finetune, f.label_curve
    if curve is None:
        return []
    all_sources = any(c.endswith("(all sources, Holm)") for c in curve.columns)
    sentence = caption("label_curve", alpha=ALPHA, all_sources=all_sources)
    out = [
        Table("label_curve", "Labelled-data curve", sentence, curve),
        Plot("label_curve", caption("plot_label_curve"), plot_label_curve, (curve,)),
    ]
    points = f.snapshot_curve
    if points is not None:
        sentence = caption("snapshot_curve", labels=s["snapshot_labels"])
        shown = ("snapshot", "tokens", "accuracy_mean", "mean_difference", "std_difference", "p_value", "n")
        table = points[[c for c in shown if c in points]]
        out.append(Table("snapshot_curve", "Pretraining-tokens curve", sentence, table))
        sentence = caption("plot_snapshot_curve")
        out.append(Plot("snapshot_curve", sentence, plot_snapshot_curve, (points, s["snapshot_labels"])))
    return out + recipe_table(s)


def recipes_by_labels(s: dict) -> dict[str, dict[str, dict]]:
    """summary.json's `recipes` as {label count: {start: recipe}}; an older summary chose once, at
    `protocol.search_labels`, and kept {start: recipe}."""
    recipes = s.get("recipes") or {}
    if recipes and all("candidates" in v for v in recipes.values()):
        return {str(s["protocol"]["search_labels"]): recipes}
    # summary.json's keys are sorted as text ("1000" before "250"): the protocol's curve order instead
    order = s["protocol"]["label_counts"]
    return dict(sorted(recipes.items(), key=lambda kv: order.index(kv[0])))


def recipe_table(s: dict) -> list:
    """Every trained start's recipe candidates at every searched label count, their mean
    validation accuracy, and its choice."""
    recipes = recipes_by_labels(s)
    if not recipes:
        return []
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
    sentence = caption(
        "recipes",
        search=protocol.get("search"),
        seeds=len(protocol["search_seeds"]),
        labels=search_labels_text(protocol),
        changes=recipe_changes(recipes),
    )
    return [Table("recipes", "Recipe per start", sentence, pd.DataFrame(rows))]


def recipe_changes(recipes: dict[str, dict[str, dict]]) -> list | None:
    """Whether one search would have served the whole curve: per trained start, how many
    different recipes its label counts chose and each count's (None with one searched count)."""
    if len(recipes) < 2:
        return None
    parts = []
    for start in dict.fromkeys(start for by_start in recipes.values() for start in by_start):
        chosen = [[labels, by[start]["lr"], by[start]["dropout"]] for labels, by in recipes.items()]
        parts.append([start, len({(lr, d) for _, lr, d in chosen}), chosen])
    return parts
