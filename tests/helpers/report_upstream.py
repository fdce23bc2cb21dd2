"""A tiny fake upstream tree for the report: every file the report stage reads, as the stages write it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tests.helpers.lm_fixtures import SAMPLES, make_corpus_dir, tiny_model
from tests.helpers.model_fixtures import classifier
from tinytf.analysis.power import variants_verdicts
from tinytf.course.attention_probes import run_probes
from tinytf.course.checks import write_checks
from tinytf.data.tokenizer import load_tokenizer
from tinytf.io import write_json, write_text
from tinytf.model.architecture import model_config
from tinytf.model.checkpoint import load_model, save_model
from tinytf.model.transformer import TinyTransformer
from tinytf.params.config import GridParams, Params, PretrainParams, VariantsParams

TEST_ACCURACY = 0.7137
GRID = GridParams(
    optimizers=["AdamW", "SGD"],
    lrs=[0.001],
    batch_sizes=[32],
    epochs=[1],
    finalists=[1, 2],
    finalist_seeds=[2],
)


def _split(rows: int, labels: dict | None = None) -> dict:
    s = {
        "rows": rows,
        "words": rows * 10,
        "characters": rows * 50,
        "duplicate_texts": 0,
        "words_per_text": {"p50": 9.0, "p90": 14.0, "p99": 20.0, "p100": 25.0},
    }
    return {**s, "labels": labels} if labels else s


def _history(accs: list[float]) -> list[dict]:
    return [
        {
            "epoch": e + 1,
            "step": 10 * (e + 1),
            "train_loss": 0.7 - 0.1 * a,
            "train_accuracy": a,
            "validation_loss": 0.69 - 0.1 * a,
            "validation_accuracy": a - 0.02,
        }
        for e, a in enumerate(accs)
    ]


def _finalist(optimizer: str, rank: int, by_seed: dict[str, float]) -> dict:
    values = list(by_seed.values())
    return {
        "key": f"{optimizer}-lr0.001-bs32-ep1",
        "rank": rank,
        "optimizer": optimizer,
        "lr": 0.001,
        "batch_size": 32,
        "epochs": 1,
        "seeds": [int(s) for s in by_seed],
        "validation_by_seed": by_seed,
        "validation_accuracy_mean": sum(values) / len(values),
        "validation_accuracy_std": float(np.std(values, ddof=1)),
        "validation_loss_mean": 0.62,
    }


# what evaluate writes as metrics.json's grid_selection: both cells are finalists (1, 2 x seed 2)
WINNER, RUNNER_UP = _finalist("AdamW", 1, {"1": 0.64, "2": 0.66}), _finalist("SGD", 2, {"1": 0.57, "2": 0.56})
GRID_SELECTION = {
    "finalists": [WINNER, RUNNER_UP],
    "winner": WINNER,
    "runner_up": RUNNER_UP,
    "served": {"seed": 2, "checkpoint": "data/grid_finalists/r1-s2.pt", "validation_accuracy": 0.66},
    "test": {
        "outcome": "tie",
        "verdict": "no detectable difference",
        "decisive_p": 0.21,
        "items": {"p_value": 0.31},
    },
    "optimizers": {
        "best_cells": {},
        "pairs": [
            {
                "a": "AdamW",
                "b": "SGD",
                "p_value": 0.004,
                "p_holm": 0.004,
                "statement": "AdamW better than SGD",
            }
        ],
        "caveat": "each side is its optimizer's best cell, chosen on the same validation split the test reads",
    },
}


def make_upstream(root: Path) -> Params:
    """Every file the report reads, small, in the formats the stages write."""
    params = Params(
        model=tiny_model(),
        grid=GRID,
        variants=VariantsParams(
            head_merges=["concat", "shuffle", "shift", "reweight"], seeds=[1, 2], steps=40
        ),
        pretrain=PretrainParams(seeds=[1], samples=SAMPLES),  # the one body written below
    )
    (root / "data").mkdir(parents=True, exist_ok=True)
    make_corpus_dir(root / "data")  # data/tokenizer.json (+ token ids the report never reads)
    vocab = load_tokenizer(root / "data/tokenizer.json").get_vocab_size()
    cfg = classifier(
        vocab, block_size=64, n_layer=2, dropout=0.2, activation="relu", tie_weights=True, seed=0
    )
    save_model(root / "data/models/pretrained/seed1.pt", TinyTransformer(cfg))
    reports = root / "data/reports"  # where the stages write; the report publishes it
    ours = model_config(params.model, vocab, "causal", 0, n_classes=2)
    write_checks(
        reports / "checks",
        ours,
        load_model(root / "data/models/pretrained/seed1.pt"),
        load_tokenizer(root / "data/tokenizer.json"),
        {s.name: s.text for s in SAMPLES},
    )
    write_json(
        reports / "data.json",
        {
            "corpus": {
                "source": "ptb",
                "splits": {s: _split(n) for s, n in (("train", 100), ("validation", 10), ("test", 10))},
            },
            "sentiment": {
                "source": "rt_critic_snippets",
                "classes": ["rotten", "fresh"],
                "splits": {
                    "train": _split(80, {"rotten": 30, "fresh": 50}),
                    "validation": _split(10, {"rotten": 4, "fresh": 6}),
                    "test": _split(10, {"rotten": 4, "fresh": 6}),
                },
            },
        },
    )
    write_json(
        reports / "pretrain/seed1/metrics.json",
        {
            "train_loss": 5.1,
            "train_perplexity": 164.0,
            "validation_loss": 5.3,
            "validation_perplexity": 200.34,
            "test_loss": 5.35,
            "test_perplexity": 210.6,
            "validation_word_perplexity": 250.5,
            "epochs": 1,
            "steps": 120,
            "tokens": 61_440,
            "samples": {
                "normal": {"loss": 5.0, "perplexity": 148.4},
                "weird": {"loss": 8.0, "perplexity": 2981.0},
                "long": {"loss": 5.5, "perplexity": 244.7},
            },
            "precision": "fp32",
        },
    )
    write_text(reports / "pretrain/seed1/samples.md", "| | train |\n|---|---|\n| Loss | 5.1 |\n")
    write_text(
        reports / "pretrain/seed1/steps.csv", "step,train_loss,lr\n10,7.0,0.001\n20,6.0,0.002\n30,5.5,0.001\n"
    )
    write_text(reports / "pretrain/seed1/epochs.csv", "epoch,step,validation_loss\n1,30,5.3\n")
    rows = []
    for pos in ("learned", "sinusoidal"):
        for i, merge in enumerate(("concat", "shuffle", "shift", "reweight")):
            for seed in (1, 2):
                base = 400 + 10 * i + 5 * seed + (20 if pos == "sinusoidal" else 0)
                rows.append((pos, merge, seed, base + 3, base, base - 50, base * 30, base + 10))
    cells = pd.DataFrame(
        rows, columns=["pos_encoding", "head_merge", "seed", "train", "dev", "normal", "weird", "long"]
    )
    write_text(reports / "variants/cells.csv", cells.to_csv(index=False))
    write_json(reports / "variants/summary.json", {"steps": 40, "seeds": [1, 2], **variants_verdicts(cells)})
    by_seed = {"pretrained": [0.70, 0.72, 0.71], "scratch": [0.60, 0.63, 0.61], "probe": [0.64, 0.65, 0.66]}
    summary = {
        "starts": {
            start: {
                "test_accuracy_mean": sum(a) / 3,
                "test_accuracy_std": 0.01,
                "test_accuracy_by_seed": {str(s): v for s, v in zip((1, 2, 3), a, strict=True)},
            }
            for start, a in by_seed.items()
        },
        "pretrained_vs_scratch": {"mean_difference": 0.0967, "t": 9.5, "p_value": 0.0109, "n": 3},
        "probe_vs_scratch": {"mean_difference": 0.0367, "t": 3.2, "p_value": 0.085, "n": 3},
        "seeds": [1, 2, 3],
        "epochs": 2,
        "classes": ["rotten", "fresh"],
    }
    write_json(reports / "finetune/summary.json", summary)
    timings = [
        {
            "snapshot": "final",
            "start": start,
            "labels": labels,
            "seed": s,
            "lr": 0.001,
            "seconds": seconds + s,
        }
        for start, seconds in (("pretrained", 10.0), ("scratch", 9.0), ("probe", 1.0))
        for labels in ("250", "all")
        for s in (1, 2, 3)
    ]
    write_text(reports / "finetune/timings.csv", pd.DataFrame(timings).to_csv(index=False))
    curves = [
        {"start": start, "seed": s, **h}
        for start, base in (("pretrained", 0.65), ("scratch", 0.55), ("probe", 0.6))
        for s in (1, 2, 3)
        for h in _history([base, base + 0.05])
    ]
    write_text(reports / "finetune/curves.csv", pd.DataFrame(curves).to_csv(index=False))
    for optimizer, accs in (("AdamW", [0.66, 0.72]), ("SGD", [0.58, 0.59])):
        cell = {"optimizer": optimizer, "lr": 0.001, "batch_size": 32, "epochs": 1}
        history = _history(accs[:1])
        final = {k: v for k, v in history[-1].items() if k not in ("epoch", "step")}
        write_json(
            root / f"data/grid/{optimizer}-lr0.001-bs32-ep1.result.json",
            {"cell": cell, "history": history, "final": final, "checkpoint": f"{optimizer}.pt"},
        )
    best = {
        "optimizer": "AdamW",
        "lr": 0.001,
        "batch_size": 32,
        "epochs": 1,
        "validation_accuracy": 0.64,
        "validation_loss": 0.624,
    }
    write_json(
        reports / "metrics.json",
        {
            "test_accuracy": TEST_ACCURACY,
            "test_accuracy_ci95": [0.6812, 0.7452],
            "test_macro_f1": 0.7021,
            "best": best,
            "pretrained_vs_scratch": {"pretrained": {"mean": 0.71, "std": 0.01}},
            "grid_selection": GRID_SELECTION,
        },
    )
    write_json(
        reports / "evaluate/test_report.json",
        {
            "accuracy": TEST_ACCURACY,
            "accuracy_ci95": [0.6812, 0.7452],
            "macro_f1": 0.7021,
            "n": 1275,
            "classes": ["rotten", "fresh"],
            "confusion_matrix": [[300, 238], [127, 610]],
            "per_class": {
                "rotten": {"precision": 0.7, "recall": 0.56, "f1": 0.62, "support": 538},
                "fresh": {"precision": 0.72, "recall": 0.83, "f1": 0.77, "support": 737},
            },
        },
    )
    write_text(reports / "probes/probes.csv", run_probes().to_csv(index=False))
    fits = pd.DataFrame(
        [
            ("encoder_self", "length", 64, None, None, 4, 1.93, 0.99, 2.0, 1.0),
            ("cross", "length_k", 64, 128, None, 4, 1.02, 0.98, 1.0, 1.0),
        ],
        columns=[
            "kind",
            "variable",
            "hidden",
            "length_q",
            "length_k",
            "points",
            "time_exponent",
            "time_r2",
            "memory_exponent",
            "memory_r2",
        ],
    )
    write_text(reports / "complexity/fits.csv", fits.to_csv(index=False))
    (reports / "complexity/attention_cost.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    return params
