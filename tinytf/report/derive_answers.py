"""The view of "Answers to the course reports' questions", course report by course report
(templates/answers.md.j2 words them): the lab's model and transfer, course report 003's
discussion, and course report 004's attention, data and fine-tuning."""

from __future__ import annotations

from tinytf.report.derive_course import first_epoch, plain, variants_text
from tinytf.report.derive_transfer import paired_view
from tinytf.report.tables import CELL, in_order, ordered_splits


def answers(f, p) -> dict:
    return {"lab": lab(f, p), "discussion": discussion(f), "attention": attention(f, p), "tuning": tuning(f)}


def starts(finetune: dict) -> dict:
    """{start: [mean, std]} of test accuracy, in the starts table's order (phrases.starts_text says it)."""
    return {s: [a["test_accuracy_mean"], a["test_accuracy_std"]] for s, a in finetune["starts"].items()}


def lab(f, p) -> dict:
    """Course reports 000 and 002, Q1–Q5: the mask, the head, the counts, pretrained vs scratch."""
    c, lab100, stats = f.counts, f.lab100, f.variants
    model = None
    if f.checks is not None and c is not None and lab100 is not None:
        model = {
            "free": str(f.checks.iloc[0]["measured"]),
            "concat": variants_text(stats, ("concat",)) if stats is not None else None,
            "positions": p.model.block_size * p.model.d_model,
            "tied": bool(p.model.tie_weights),
            "pooling": p.model.pooling,
            "vocab": f.vocab,
            "counts": {k: c[k] for k in ("lm_head", "cls_head", "base", "base+cls_head")},
            "lab": {k: lab100[k] for k in ("base", "base+cls_head", "base+lm_head")},
        }
    s, first = f.finetune, first_epoch(f.curves)
    gap = None
    if first is not None and {"pretrained", "scratch"} <= set(first.index):
        d = first.loc["pretrained"] - first.loc["scratch"]
        gap = [float(d["train_accuracy"]), float(d["validation_accuracy"])]
    return {
        "model": model,
        "starts": None if s is None else starts(s),
        "vs_scratch": paired_view(s["pretrained_vs_scratch"]) if s and "pretrained_vs_scratch" in s else None,
        "first_epoch": gap,
        "masked": f.objective == "masked" and s is not None,
    }


def discussion(f) -> dict:
    """Course report 003: where the heads look, the measured cost of attention, the probe."""
    heads, fits, s = f.heads, f.fits, f.finetune
    top = None
    if heads is not None:
        top = []
        for col in ("previous token", "first token", "self"):
            h = heads.loc[heads[col].idxmax()]
            where = "itself" if col == "self" else f"the {col}"
            top.append([int(h["layer"]), int(h["head"]), float(h[col]), where, float(h["uniform"])])
    measured = None
    if fits is not None:
        rows = fits[fits["variable"].isin(["length", "length_k", "length_q"])]
        rows = rows.groupby(["kind", "variable"], sort=False)["time_exponent"].median().reset_index()
        measured = [
            [k, v, float(e)]
            for k, v, e in zip(rows["kind"], rows["variable"], rows["time_exponent"], strict=True)
        ]
    return {
        "sample": f.sample[0] if heads is not None else None,
        "heads": top,
        "exponents": measured,
        "probe": s["starts"]["probe"]["test_accuracy_mean"]
        if s is not None and "probe" in s["starts"]
        else None,
    }


def attention(f, p) -> dict:
    """Course report 004 §1–§2 and Q1–Q2: the probes, the LM baseline, the dataset, a batch."""
    pretrain = None
    if f.pretrain is not None:
        m, scored = f.pretrain, f.pretrain.get("samples", {})
        names = in_order(scored, [x.name for x in p.pretrain.samples])
        pretrain = {
            "train": m.get("train_perplexity"),
            "dev": m["validation_perplexity"],
            "samples": [[k, scored[k]["perplexity"]] for k in names],
        }
    data, sizes = (f.data or {}).get("sentiment"), None
    if data:
        rows = {s: v["rows"] for s, v in ordered_splits(data["splits"]).items()}
        sizes = {"source": data["source"], "rows": [[s, n] for s, n in rows.items()]}
        sizes["sst2"] = data["source"] == "sst2" and list(rows.values()) == [6920, 872, 1821]
    return {
        "probes": None if f.probes is None else [int(f.probes["pass"].sum()), len(f.probes)],
        "pretrain": pretrain,
        "variants": f.variants is not None,
        "sizes": sizes,
        "max_length": p.tokenize.max_length,
        "external": dict(f.external) if f.external else None,
    }


def tuning(f) -> dict:
    """Course report 004 Q4–Q5: the curves' best epochs, the optimizers, the grid, test accuracy."""
    first, epochs = first_epoch(f.curves), None
    if first is not None and "pretrained" in first.index:
        cur = f.curves
        curve = (
            cur[cur["start"] == "pretrained"]
            .groupby("epoch")[["train_accuracy", "validation_accuracy"]]
            .mean()
        )
        epochs = [
            plain(curve["train_accuracy"].idxmax()),
            plain(curve["validation_accuracy"].idxmax()),
            plain(curve.index.max()),
        ]
    grid = None
    if f.grid is not None:
        g, b = f.grid, f.best
        per_opt = g.groupby("optimizer", sort=False)["validation_accuracy"].max()
        cell = g[(g[list(CELL)] == [b[k] for k in CELL]).all(axis=1)].iloc[0]
        grid = {
            "optimizers": [[o, float(a)] for o, a in per_opt.items()],
            "cells": len(g),
            "axes": [list(dict.fromkeys(g["optimizer"]))]
            + [[plain(v) for v in sorted(set(g[k]))] for k in ("lr", "batch_size", "epochs")],
            "best": dict(b),
            "train": float(cell["train_accuracy"]),
            "validation": float(cell["validation_accuracy"]),
        }
    m = f.metrics
    return {
        "epochs": epochs,
        "grid": grid,
        "test": None if m is None else [m["test_accuracy"], *m["test_accuracy_ci95"]],
    }
