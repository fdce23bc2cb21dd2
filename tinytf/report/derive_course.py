"""The view of "Where the course reports went wrong": each course claim beside what PyTorch and
our runs measure (templates/wrong.md.j2 words them). The answers to the course's questions are
tinytf.report.derive_answers'."""

from __future__ import annotations

import math

import pandas as pd

from tinytf.report.bodies import lm_corpus
from tinytf.report.phrases import pm


def first_epoch(c: pd.DataFrame | None) -> pd.DataFrame | None:
    """Mean over seeds of each start's first-epoch accuracies."""
    if c is None:
        return None
    return (
        c[c["epoch"] == c["epoch"].min()]
        .groupby("start", sort=False)[["train_accuracy", "validation_accuracy"]]
        .mean()
    )


def variant(stats: pd.DataFrame, pos: str, merge: str, col: str = "dev") -> tuple[float, float] | None:
    row = stats[(stats["pos_encoding"] == pos) & (stats["head_merge"] == merge)]
    if row.empty or col not in row:
        return None
    return float(row[col].iloc[0]), float(row[f"{col}_std"].iloc[0])


def variants_text(stats: pd.DataFrame, merges: tuple[str, ...], col: str = "dev") -> str:
    """'learned positions: concat 880.1 ± 4.0, shuffle ...; sinusoidal positions: ...'."""
    parts = []
    for pos in dict.fromkeys(stats["pos_encoding"]):
        cells = [f"{m} {pm(*variant(stats, pos, m, col), 1)}" for m in merges if variant(stats, pos, m, col)]
        if cells:
            parts.append(f"{pos} positions: " + ", ".join(cells))
    return "; ".join(parts)


def spread(stats: pd.DataFrame) -> dict | None:
    """The largest gap of shuffle or shift to concat at the same positions, and their largest std."""
    gaps, stds = [], []
    for pos in dict.fromkeys(stats["pos_encoding"]):
        b = variant(stats, pos, "concat")
        for merge in ("shuffle", "shift"):
            a = variant(stats, pos, merge)
            if a and b:
                gaps.append(abs(a[0] - b[0]))
                stds += [a[1], b[1]]
    if not gaps:
        return None
    return {"gap": max(gaps), "std": None if any(math.isnan(s) for s in stds) else max(stds)}


def variants_verdict(f, key: str) -> dict | None:
    """The variants study's verdict on one comparison, with its test and power."""
    summary = f.variants_summary
    entry = (summary or {}).get("verdicts", {}).get(key)
    if entry is None:
        return None
    keys = ("test", "seeds_per_cell", "steps", "detectable_difference_pct")
    return {**{k: summary[k] for k in keys}, "sentence": entry["sentence"]}


def wrong(f, p) -> dict:
    claims = f.course_claims if f.course_claims is not None else pd.DataFrame(columns=["verdict"])
    keys = ("seed", "quantity", "claimed", "PyTorch", "verdict", "note")
    out = {
        "claims": [{k: plain(c[k]) for k in keys} for _, c in claims.iterrows() if c["verdict"] != "right"]
    }
    if f.checks is None or f.counts is None:  # the checks stage has not run: its claims cannot be quoted
        return {**out, "checks": None}
    stats = f.variants
    reweight = stats is not None and (stats["head_merge"] == "reweight").any()
    return {
        **out,
        "checks": [
            {k: str(row[k]) for k in ("claim", "check", "measured", "verdict")}
            for _, row in f.checks.head(3).iterrows()
        ],
        "objective": f.objective,
        "cls_head": f.counts["cls_head"],
        "merges": None
        if stats is None
        else {"dev": variants_text(stats, ("concat", "shuffle", "shift")), "spread": spread(stats)},
        "reweight": [
            [col, variants_text(stats, ("concat", "reweight"), col)]
            for col in ("dev", "normal")
            if col in stats
        ]
        if reweight
        else None,
        "reweight_verdict": variants_verdict(f, "reweight_vs_concat"),
        "positions": positions(f),
        "grid": grid_note(f, p),
        "scratch": _scratch(f),
        "probes": None
        if f.probes is None
        else {
            "passed": int(f.probes["pass"].sum()),
            "n": len(f.probes),
            "error": float(f.probes["weight_err"].max()),
        },
    }


def plain(value):
    """A frame's cell as JSON's own type (numpy integers and floats as Python ones)."""
    return value.item() if hasattr(value, "item") else value


def _scratch(f) -> dict | None:
    """Scratch's validation accuracy after its first epoch, beside the majority share."""
    first = first_epoch(f.curves)
    if first is None or "scratch" not in first.index or f.majority_val is None:
        return None
    return {"validation": float(first.loc["scratch", "validation_accuracy"]), "majority": f.majority_val}


def positions(f) -> dict | None:
    """Course report 004's 'sinusoidal hurts' (one run each) next to our concat cells."""
    stats = f.variants
    if stats is None or stats["pos_encoding"].nunique() < 2:
        return None
    vals = [(q, variant(stats, q, "concat")) for q in dict.fromkeys(stats["pos_encoding"])]
    vals = [(q, v) for q, v in vals if v]
    if len(vals) < 2:
        return None
    low = min(vals, key=lambda qv: qv[1][0])
    sd = max(v[1] for _, v in vals)
    return {
        "cells": [[q, pm(*v, 1)] for q, v in vals],
        "low": low[0],
        "gap": max(v[0] for _, v in vals) - low[1][0],
        "std": None if math.isnan(sd) else sd,
        "verdict": variants_verdict(f, "learned_vs_sinusoidal"),
    }


def grid_note(f, p) -> dict:
    """Our model's size and pretraining beside course report 004's grid, and our grid by lr."""
    steps, tokens = ((f.pretrain or {}).get(key) for key in ("steps", "tokens"))
    out = {
        "total": f.counts["base+cls_head"],
        "trained": {"steps": steps, "tokens": tokens, "corpus": lm_corpus(f.data, p.prepare.corpus.source)}
        if steps and tokens
        else None,
        "by_lr": None,
    }
    g = f.grid
    if g is None:
        return out
    best = lambda frame, by: [  # noqa: E731 - best validation accuracy per value of `by`
        [plain(k), float(a)]
        for k, a in frame.groupby(by, sort=by != "optimizer")["validation_accuracy"].max().items()
    ]
    return {
        **out,
        "by_lr": best(g, "lr"),
        "smallest": float(g["lr"].min()),
        "at_smallest": best(g[g["lr"] == g["lr"].min()], "optimizer"),
        "majority": f.majority_val,
        "sgd": best(g[g["optimizer"] == "SGD"], "lr") if "SGD" in set(g["optimizer"]) else None,
    }
