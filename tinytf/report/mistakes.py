"""Which texts the models get wrong, from the kept predictions: where the pretrained and scratch
starts disagree most confidently (all labels, every seed), and the served model's most confident
mistakes on test. Text is cut to a line; the item is its row in the prepared test file."""

from __future__ import annotations

import pandas as pd

from tinytf.analysis.items import chosen_predictions
from tinytf.data.predictions import RUN_KEYS
from tinytf.report.facts import UPSTREAM

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
    wrong = test[test["prediction"] != test["label"]].sort_values(
        ["probability", "item"], ascending=[False, True]
    )
    wrong = wrong.head(2 * ROWS)
    return pd.DataFrame(
        {
            "item": wrong["item"],
            "label": [classes[i] for i in wrong["label"]],
            "predicted": [classes[i] for i in wrong["prediction"]],
            "probability": wrong["probability"],
            "text": [short(texts[i]) for i in wrong["item"]],
        }
    )


def mistakes_section(r) -> None:
    """The error tables, where the predictions and the test texts are there."""
    texts = r.inputs.parquet("sentiment_test", ("text",))
    if texts is None or r.f.test_report is None and r.f.finetune is None:
        return
    texts = texts["text"].tolist()
    classes = (r.f.finetune or {}).get("classes") or (r.f.test_report or {}).get("classes")
    finetune = r.inputs.parquet("finetune_predictions", ("start", "labels", "split", "item", "prediction"))
    runs = r.inputs.csv("finetune_runs", ("chosen", *RUN_KEYS)) if finetune is not None else None
    if runs is not None and {"pretrained", "scratch"} <= set(finetune["start"]):
        # the runs the curve reports (each start's chosen recipe, from the final model), all labels
        chosen = chosen_predictions(finetune, runs.astype({"labels": str}))
        chosen = chosen[chosen["labels"] == "all"]
        r.table(
            "disagreements",
            "Where pretrained and scratch disagree",
            f"Test texts (all labels) where one start is right in more of the {_seeds(chosen)} seeds than "
            "the other, the largest gap and then the highest mean probability first, "
            f"{ROWS} each way (from `{UPSTREAM['finetune_predictions'].path}`; item = row of the test file).",
            disagreements(chosen, texts, classes),
            floatfmt=".2f",
        )
    champion = r.inputs.parquet("evaluate_predictions", ("split", "item", "prediction", "probability"))
    if champion is not None:
        r.table(
            "champion_mistakes",
            "The served model's most confident mistakes",
            f"The best grid cell's wrong test answers, the highest probability first ({2 * ROWS} of "
            f"{int((champion['prediction'] != champion['label']).sum()):,}; from "
            f"`{UPSTREAM['evaluate_predictions'].path}`).",
            champion_mistakes(champion, texts, classes),
            floatfmt=".3f",
        )


def _seeds(rows: pd.DataFrame) -> int:
    return int(rows.loc[rows["start"] == "pretrained", "seed"].nunique())
