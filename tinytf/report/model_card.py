"""The champion's model card (reports/evaluate/model_card.md, and the registered version's
description): what the model is, what it learnt from, how it was chosen, how well it does beside the
baselines, and where it stops. Every figure comes from a file `evaluate` reads or writes."""

from __future__ import annotations

from dataclasses import dataclass

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
    sections = (_model, _data, _selection, _results, _limits, _use)
    return "\n".join(line for section in sections for line in section(facts)) + "\n"


def _model(f: CardFacts) -> list[str]:
    if "hf" in f.meta:
        what = f"an external encoder ({f.meta['hf']['source']}) with its own sequence-classification head"
    else:
        m = f.meta["model"]
        attention = "causal" if m["causal"] else "bidirectional"
        what = (
            f"a {m['n_layer']}-layer {attention} transformer (d_model {m['d_model']}, {m['n_head']} heads, "
            f"d_ff {m['d_ff']}, vocabulary {m['vocab_size']:,}, {m['pos_encoding']} positions, "
            f"{m['pooling']} pooling)"
        )
    return [
        "# Model card: tinytf sentiment classifier",
        "",
        f"{f'Registered as {f.registered}' if f.registered else 'Not registered in MLflow'}. The model is {what}, {f.parameters:,} parameters used to classify, fine-tuned "
        f"from the `{f.start}` start to {len(f.report['classes'])} classes: "
        f"{', '.join(f.report['classes'])}. It reads at most {f.max_length} tokens of a text.",
        "",
    ]


def _data(f: CardFacts) -> list[str]:
    splits, classes = f.data["splits"], f.report["classes"]
    rows = [
        f"| {s} | {splits[s]['rows']:,} | "
        + " | ".join(f"{splits[s].get('labels', {}).get(c, 0):,}" for c in classes)
        + " |"
        for s in ("train", "validation", "test")
        if s in splits
    ]
    return [
        "## Data",
        "",
        f"Source `{f.data['source']}` (reports/data.json).",
        "",
        "| split | texts | " + " | ".join(classes) + " |",
        "|---|---:|" + "---:|" * len(classes),
        *rows,
        "",
    ]


def _selection(f: CardFacts) -> list[str]:
    b = f.best
    promotion = (f.metrics.get("promotion") or {}).get("reason", "not registered")
    epochs = f"{b['epochs']} epoch{'s' if b['epochs'] != 1 else ''}"
    seeds = b.get("seeds") or [f.seed]
    return [
        "## How it was selected",
        "",
        f"Successive halving over {f.cells} grid cells, every choice on validation: round one ran every "
        "cell on one seed; the best cells by validation accuracy ran again on more seeds. The winner is "
        f"the finalist with the best mean validation accuracy: `{b['key']}` ({b['optimizer']}, lr {b['lr']:g}, "
        f"batch size {b['batch_size']}, {epochs}), {b['validation_accuracy']:.4f} over seeds "
        f"{', '.join(map(str, seeds))}. This model is its seed {f.seed} run, the best of them on validation.",
        *_against_runner_up(f.metrics.get("grid_selection")),
        "Test was read once, to report.",
        f"Promotion to @champion (at least the serving champion's validation accuracy): {promotion}.",
        "",
    ]


def runner_up_outcome(test: dict) -> str:
    """How the winner-vs-runner-up test came out, in the words the card and the report share."""
    return "no difference detected" if test["outcome"] == "tie" else "the winner is better"


def _against_runner_up(selection: dict | None) -> list[str]:
    test = (selection or {}).get("test")
    if not test:
        return []
    said = runner_up_outcome(test)
    return [
        f"Against the runner-up `{selection['runner_up']['key']}` "
        f"({selection['runner_up']['validation_accuracy_mean']:.4f}) it is {said}; the higher mean is served."
    ]


def _results(f: CardFacts) -> list[str]:
    r = f.report
    low, high = r["accuracy_ci95"]
    rows = [
        f"| {c} | {v['precision']:.3f} | {v['recall']:.3f} | {v['f1']:.3f} | {v['support']:,} |"
        for c, v in ((c, r["per_class"][c]) for c in r["classes"])
    ]
    beside = [f"{BASELINES.get(n, n)} {v['test_accuracy']:.4f}" for n, v in f.metrics["baselines"].items()]
    starts = [
        f"{start} {v['mean']:.4f} ± {v['std']:.4f}"
        for start, v in f.metrics["pretrained_vs_scratch"].items()
        if start != "paired_test"
    ]
    return [
        "## Results on test",
        "",
        f"Accuracy {r['accuracy']:.4f} (bootstrap 95 % interval [{low:.4f}, {high:.4f}], {r['n']:,} texts), "
        f"macro F1 {r['macro_f1']:.4f}.",
        "",
        "| class | precision | recall | F1 | support |",
        "|---|---:|---:|---:|---:|",
        *rows,
        "",
        f"Beside it, with all labels: baselines {', '.join(beside)}; each start's fine-tuning "
        f"(mean ± std over seeds) {', '.join(starts)}.",
        "",
    ]


def _limits(f: CardFacts) -> list[str]:
    domain = DOMAINS.get(f.data["source"], f"the texts of {', '.join(sorted(set(f.data['files'].values())))}")
    return [
        "## Known limits",
        "",
        "- Round one ranks cells on one seed: a cell just outside the finalists may be as good.",
        f"- Trained and tested on {domain} only; other domains, languages or styles are untested.",
        f"- Reads the first {f.max_length} tokens of a text; the rest is ignored.",
        "",
    ]


def _use(f: CardFacts) -> list[str]:
    return [
        "## Intended use",
        "",
        "Research and teaching: a small transformer studied end to end. Not for decisions about people, "
        "nor for texts unlike its data without checking it on them first.",
    ]
