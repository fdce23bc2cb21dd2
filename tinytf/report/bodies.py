"""The report's "who pretrained the body" table: scratch, our own language model and an external
encoder (the `hf` start) side by side, with their size, pretraining, fine-tuning cost and test
accuracy: every fine-tuning start at all labels (mean ± std over seeds), and the grid's best cell
as evaluate scored it on test (one seed, with the bootstrap interval)."""

from __future__ import annotations

import re

import pandas as pd

from tinytf.report.artifacts import Table
from tinytf.report.render import caption

# what is published about the pretraining of checkpoints people use with the hf start (matched on
# the checkpoint's name); anything else says "see its model card"
KNOWN_PRETRAINING = {
    r"minilm[-_]l6[-_]v2": "nreimers/MiniLM-L6-H384-uncased (every second layer of Microsoft's MiniLM-L12-H384, "
    "distilled from UniLMv2 on English Wikipedia and BookCorpus), then 1B+ sentence pairs, contrastive "
    "(all-MiniLM-L6-v2's model card)",
    r"(^|/)roberta-base$": "160 GB of English text: BookCorpus, Wikipedia, CC-News, OpenWebText, Stories "
    "(Liu et al. 2019)",
}


def pretraining_of(checkpoint: str) -> str:
    for pattern, text in KNOWN_PRETRAINING.items():
        if re.search(pattern, checkpoint.lower()):
            return f"`{checkpoint}`: {text}"
    return f"`{checkpoint}`: see its model card"


def lm_corpus(data_card: dict | None, source: str) -> str:
    """What our language model read: the corpus source, plus in-domain review text where the data
    card says `prepare` added some (it may add none: prepare.corpus.in_domain)."""
    notes = (((data_card or {}).get("corpus") or {}).get("notes")) or {}
    return f"{source} plus in-domain text" if (notes.get("in_domain") or {}).get("parts") else source


def bodies_table(
    finetune: dict | None,
    timings: pd.DataFrame | None,
    metrics: dict | None,
    best_result: dict | None,
    best_model: dict | None,
    grid_start: str,
    pretrained_meta: dict | None,
    corpus: str,
    classifier_parameters: int | None = None,
) -> pd.DataFrame:
    """One row per start; `best_result`/`best_model` are the grid's best cell files (result and
    model JSON). Our rows take `classifier_parameters` (checks' closed form, body and head) where
    given: the stages count every parameter of the module, with the LM head it never uses."""
    tokens = (pretrained_meta or {}).get("pretrain_tokens")
    amount = f", {tokens / 1e6:.1f}M tokens" if tokens else ""
    ours = f"this pipeline's language model ({corpus}{amount})"  # `corpus`: as `lm_corpus` says it

    def size(start: str, counted: int | None) -> int | None:  # the external encoder's as counted
        return counted if start == "hf" or classifier_parameters is None else classifier_parameters

    hf_source = (finetune or {}).get("hf_checkpoint")
    bodies = {
        "scratch": "nobody (random initialisation)",
        "pretrained": ours,
        "probe": f"{ours}; body frozen, a logistic regression on its layers",
    }
    rows = []
    for start, entry in ((finetune or {}).get("starts") or {}).items():
        n = len(entry.get("test_accuracy_by_seed", {}))
        rows.append(
            {
                "start": start,
                "pretrained by / on": pretraining_of(hf_source)
                if start == "hf" and hf_source
                else bodies.get(start, start),
                "parameters": size(start, (finetune.get("parameters") or {}).get(start)),
                "fine-tune seconds": _seconds(timings, start),
                "test accuracy": 100 * entry["test_accuracy_mean"],
                "spread": f"± {100 * entry['test_accuracy_std']:.1f} (std, {n} seeds)",
                "measured by": "finetune stage: all labels, lr and dropout chosen on validation, best validation epoch",
            }
        )
    if metrics is not None and best_result is not None:
        low, high = metrics["test_accuracy_ci95"]
        source = ((best_model or {}).get("hf") or {}).get("source")
        rows.append(
            {
                "start": f"grid best cell ({grid_start})",
                "pretrained by / on": pretraining_of(source)
                if source
                else bodies.get(grid_start, grid_start),
                "parameters": size(grid_start, best_result.get("parameters")),
                "fine-tune seconds": best_result.get("train_seconds"),
                "test accuracy": 100 * metrics["test_accuracy"],
                "spread": f"95% interval {100 * low:.1f}–{100 * high:.1f} (bootstrap, 1 seed)",
                "measured by": "grid + evaluate: best cell on validation, scored once on test",
            }
        )
    return pd.DataFrame(rows)


def _seconds(timings: pd.DataFrame | None, start: str) -> float | None:
    """The mean wall time of one fine-tuning run of `start` with all labels, where timed."""
    if timings is None or not {"start", "labels", "seconds"} <= set(timings.columns):
        return None
    mine = timings[(timings["start"] == start) & (timings["labels"].astype(str) == "all")]
    return float(mine["seconds"].mean()) if len(mine) else None


def bodies_tables(f, params) -> list:
    """The table of `f.bodies` (tinytf.report.read_runs), its sizes, times and accuracies worded."""
    table = f.bodies
    if table is None:
        return []
    shown = table.assign(
        **{
            "parameters": [f"{p / 1e6:.2f}M" if pd.notna(p) else "" for p in table["parameters"]],
            "fine-tune seconds": [f"{s:,.0f}" if pd.notna(s) else "" for s in table["fine-tune seconds"]],
            "test accuracy": [f"{a:.1f} %" for a in table["test accuracy"]],
        }
    )
    return [Table("bodies", "Who pretrained the body", caption("bodies"), table, shown)]
