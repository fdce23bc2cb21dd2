"""The champion's model card (reports/evaluate/model_card.md, and the registered version's
description): what the model is, what it learnt from, how it was chosen, how well it does beside the
baselines, and where it stops. Every figure comes from a file `evaluate` reads or writes."""

from __future__ import annotations

from dataclasses import dataclass

from tinytf.params.starts import ordered

# the language and genre of each built-in source; other data (tinytf data add) is named by its files
DOMAINS = {
    "rt_critic_snippets": "English movie-review snippets (Rotten Tomatoes critics)",
    "sst2": "English movie-review sentences (SST-2)",
    "imdb": "English movie reviews (IMDB)",
}

BASELINES = {"majority": "majority class", "tfidf_lr": "TF-IDF + LR"}


@dataclass
class CardFacts:
    meta: dict  # the checkpoint's JSON: `model` (tinytf) or `hf` (an external encoder)
    parameters: int
    start: str  # grid.start: the start the grid fine-tuned
    max_length: int  # tokens a text is cut to
    data: dict  # reports/data.json's `sentiment` section
    best: dict  # the chosen cell: BEST_COLUMNS and its key
    cells: int  # cells in the grid
    seed: int  # the served run's seed (the winner's best on validation)
    report: dict  # reports/evaluate/test_report.json
    metrics: dict  # reports/metrics.json: the baselines, each start's fine-tuning, the promotion
    registered: str | None  # e.g. "tinytf-sentiment version 7"; None: not registered (tracking off)


def model_card(facts: CardFacts) -> str:
    from tinytf.report.render import render

    return render(card_view(facts), "model_card.md.j2")


def card_view(f: CardFacts) -> dict:
    """What the card's template (templates/model_card.md.j2) words, from the facts."""
    selection, classes, splits = f.metrics.get("grid_selection") or {}, f.report["classes"], f.data["splits"]
    runner_up = None
    if selection.get("test"):
        runner_up = {**selection["runner_up"], "said": runner_up_outcome(selection["test"])}
    files = ", ".join(sorted(set(f.data.get("files", {}).values())))
    return {
        **{
            k: getattr(f, k)
            for k in ("registered", "parameters", "start", "max_length", "best", "cells", "seed", "report")
        },
        "what": _what(f.meta),
        "classes": classes,
        "source": f.data["source"],
        "splits": [
            [s, splits[s]["rows"], [splits[s].get("labels", {}).get(c, 0) for c in classes]]
            for s in ("train", "validation", "test")
            if s in splits
        ],
        "seeds": f.best.get("seeds") or [f.seed],
        "runner_up": runner_up,
        "promotion": (f.metrics.get("promotion") or {}).get("reason", "not registered"),
        "baselines": [[BASELINES.get(n, n), v["test_accuracy"]] for n, v in f.metrics["baselines"].items()],
        "starts": _starts(f.metrics["pretrained_vs_scratch"]),
        "domain": DOMAINS.get(f.data["source"], f"the texts of {files}"),
    }


def _starts(each: dict) -> list:
    """[start, {mean, std}] in the starts table's order (metrics.json keeps its keys sorted)."""
    return [[s, each[s]] for s in ordered(k for k in each if k != "comparison")]


def _what(meta: dict) -> str:
    if "hf" in meta:
        return f"an external encoder ({meta['hf']['source']}) with its own sequence-classification head"
    m = meta["model"]
    attention = "causal" if m["causal"] else "bidirectional"
    return (
        f"a {m['n_layer']}-layer {attention} transformer (d_model {m['d_model']}, {m['n_head']} heads, "
        f"d_ff {m['d_ff']}, vocabulary {m['vocab_size']:,}, {m['pos_encoding']} positions, "
        f"{m['pooling']} pooling)"
    )


def runner_up_outcome(test: dict) -> str:
    """How the winner-vs-runner-up test came out, in the words the card and the report share."""
    return "no difference detected" if test["outcome"] == "tie" else "the winner is better"
