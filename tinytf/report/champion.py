"""The served model beside the pipeline's other candidates on the same test texts: the label
curve's best start with all labels (chosen on validation, over its seeds) and TF-IDF + LR with
all labels, each paired with the champion over the test texts from the kept predictions."""

from __future__ import annotations

import pandas as pd

from tinytf.analysis.items import chosen_predictions, correct_by_item, item_comparison
from tinytf.params.starts import subject
from tinytf.report.artifacts import Table
from tinytf.report.render import caption


def name(start: str) -> str:
    """A rival as the served model's sentence names it: TF-IDF + LR, or a start's subject."""
    return "TF-IDF + LR" if start == "tfidf_lr" else subject(start)


def best_start(runs: pd.DataFrame) -> str | None:
    """The start with the best mean validation accuracy over its chosen all-label runs (never test)."""
    final = runs[runs["chosen"] & (runs["snapshot"] == "final") & (runs["labels"] == "all")]
    if final.empty:
        return None
    return str(final.groupby("start")["validation_accuracy"].mean().idxmax())


def champion_comparison(
    champion: pd.DataFrame, finetune: pd.DataFrame, runs: pd.DataFrame, baselines: pd.DataFrame | None
) -> dict | None:
    """{"champion": accuracy, "rivals": {name: {"start", "accuracy", "seeds", **item test of champion − it}},
    "best": the highest test accuracy of the three}, all on the champion's test texts."""
    runs = runs.astype({"labels": str})  # runs.csv reads "250" as a number, the predictions hold text
    start = best_start(runs)
    if start is None:
        return None
    mine = correct_by_item(champion.assign(seed=0))
    sides = {"best_start": (start, chosen_predictions(finetune, runs))}
    if baselines is not None and (baselines["start"] == "tfidf_lr").any():
        sides["tfidf"] = ("tfidf_lr", baselines)
    out: dict = {"champion": float(mine.mean()), "n_items": int(mine.shape[1]), "rivals": {}}
    for key, (side, frame) in sides.items():
        theirs = correct_by_item(frame, start=side, labels="all")
        test = item_comparison(mine, theirs)
        out["rivals"][key] = {"start": side, "accuracy": float(theirs.mean()), "seeds": len(theirs), **test}
    accuracies = {"champion": out["champion"]} | {r["start"]: r["accuracy"] for r in out["rivals"].values()}
    out["best"] = max(accuracies, key=accuracies.get)
    return out


def champion_tables(f, params) -> list:
    """The served model beside the other candidates, where the comparison was made."""
    c = f.champion_vs
    if c is None:
        return []
    rows = [{"model": "the served model (the grid's winner)", "test_accuracy": c["champion"], "seeds": 1}]
    rows += [
        {
            "model": f"{name(rival['start'])}, all labels",
            "test_accuracy": rival["accuracy"],
            "seeds": rival["seeds"],
            "served_minus_it": rival["mean_difference"],
            "ci95_low": rival["ci95"][0],
            "ci95_high": rival["ci95"][1],
            "p_texts": rival["p_value"],
        }
        for rival in c["rivals"].values()
    ]
    sentence = caption("champion_vs", n_items=c["n_items"])
    title = "The served model beside the other candidates"
    return [Table("champion_vs", title, sentence, pd.DataFrame(rows))]
