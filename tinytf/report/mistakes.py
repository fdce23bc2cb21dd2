"""Which texts the models get wrong, from the kept predictions: where the pretrained and scratch
starts disagree most confidently (all labels, every seed), and the served model's most confident
mistakes on test. Text is cut to a line; the item is its row in the prepared test file."""

from __future__ import annotations

import pandas as pd

from tinytf.analysis.items import chosen_predictions
from tinytf.report.artifacts import Table
from tinytf.report.facts import UPSTREAM
from tinytf.report.render import caption

ROWS = 5  # per direction of disagreement; the champion's mistakes get twice as many
TEXT = 110  # characters of a text shown in a table cell


def short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= TEXT else text[: TEXT - 1] + "…"


def by_text(predictions: pd.DataFrame, start: str) -> pd.DataFrame:
    """Per test text, one start's share of seeds right and its mean probability in its predictions."""
    rows = predictions[(predictions["start"] == start) & (predictions["split"] == "test")]
    rows = rows.assign(right=(rows["prediction"] == rows["label"]).astype(float))
    return rows.groupby("item").agg(
        right=("right", "mean"), confidence=("probability", "mean"), label=("label", "first")
    )


def disagreements(predictions: pd.DataFrame, texts: list[str], classes: list[str]) -> pd.DataFrame:
    """The texts where one start is right in (nearly) every seed and the other wrong, most
    confident first: `ROWS` each way."""
    p, s = by_text(predictions, "pretrained"), by_text(predictions, "scratch")
    both = p.add_suffix("_pretrained").join(s.add_suffix("_scratch"))
    both["gap"] = both["right_pretrained"] - both["right_scratch"]
    both["confidence"] = (both["confidence_pretrained"] + both["confidence_scratch"]) / 2
    picked = []
    for sign, who in ((1, "pretrained"), (-1, "scratch")):
        side = both[sign * both["gap"] > 0].sort_values(["gap", "confidence"], ascending=[sign < 0, False])
        picked.append(side.head(ROWS).assign(right=who))
    table = pd.concat(picked)
    return pd.DataFrame(
        {
            "right": table["right"],
            "item": table.index,
            "label": [classes[i] for i in table["label_pretrained"]],
            "pretrained right (seeds)": table["right_pretrained"],
            "scratch right (seeds)": table["right_scratch"],
            "mean confidence": table["confidence"],
            "text": [short(texts[i]) for i in table.index],
        }
    )


def champion_mistakes(predictions: pd.DataFrame, texts: list[str], classes: list[str]) -> pd.DataFrame:
    """The served model's wrong test answers, the most confident first."""
    test = predictions[predictions["split"] == "test"]
    wrong = test[test["prediction"] != test["label"]]
    wrong = wrong.sort_values(["probability", "item"], ascending=[False, True]).head(2 * ROWS)
    return pd.DataFrame(
        {
            "item": wrong["item"],
            "label": [classes[i] for i in wrong["label"]],
            "predicted": [classes[i] for i in wrong["prediction"]],
            "probability": wrong["probability"],
            "text": [short(texts[i]) for i in wrong["item"]],
        }
    )


def mistakes_tables(f, params) -> list:
    """The error tables, where the predictions and the test texts are there."""
    if f.texts is None or f.test_report is None and f.finetune is None:
        return []
    out, texts = [], f.texts
    classes = (f.finetune or {}).get("classes") or (f.test_report or {}).get("classes")
    finetune, runs = f.finetune_predictions, f.finetune_runs
    if finetune is not None and runs is not None and {"pretrained", "scratch"} <= set(finetune["start"]):
        # the runs the curve reports (each start's chosen recipe, from the final model), all labels
        chosen = chosen_predictions(finetune, runs)
        chosen = chosen[chosen["labels"] == "all"]
        path = UPSTREAM["finetune_predictions"].path
        seeds = chosen.loc[chosen["start"] == "pretrained", "seed"].nunique()
        sentence = caption("disagreements", seeds=int(seeds), rows=ROWS, path=path)
        table = disagreements(chosen, texts, classes)
        title = "Where pretrained and scratch disagree"
        out.append(Table("disagreements", title, sentence, table, None, ".2f"))
    champion = f.champion
    if champion is not None:
        wrong = int((champion["prediction"] != champion["label"]).sum())
        path = UPSTREAM["evaluate_predictions"].path
        sentence = caption("champion_mistakes", shown=2 * ROWS, wrong=wrong, path=path)
        table = champion_mistakes(champion, texts, classes)
        title = "The served model's most confident mistakes"
        out.append(Table("champion_mistakes", title, sentence, table, None, ".3f"))
    return out
