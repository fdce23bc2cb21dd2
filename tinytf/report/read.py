"""`read(root, params) -> Facts`: every upstream file the report uses, read once, checked and
shaped into the typed, frozen facts (tinytf.report.facts). Nothing is written here; a missing
file is listed in `Facts.missing` (in the order read) and a malformed one raises `DataError`
naming it, so a bad input stops the build before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from tinytf.errors import DataError
from tinytf.params.config import Params
from tinytf.params.starts import ordered
from tinytf.report import read_runs
from tinytf.report import tables as rt
from tinytf.report.facts import HISTORY, UPSTREAM, Facts
from tinytf.report.inputs import Inputs, require
from tinytf.report.publish import published
from tinytf.report.transfer import curve_frame


def read(root: str | Path, params: Params) -> Facts:
    """The facts of the workspace at `root` (its data/ as the upstream stages wrote it)."""
    root = Path(root)
    inputs = Inputs(root, body=params.pretrain.seeds[0])
    found: dict = {"root": root}
    for part in (_data, _checks, _pretrain, _variants, _finetune):
        found.update(part(inputs, params, found))
    for part in (read_runs.grid, read_runs.bodies, _extras, _attention, read_runs.predictions):
        found.update(part(inputs, params, found))
    found.update(read_runs.run_card(inputs))
    notes = tuple(found.pop("notes", ()))
    return Facts(**found, missing=tuple(inputs.missing), notes=notes, published=tuple(published(root)))


def _data(inputs: Inputs, params, found: dict) -> dict:
    stats = inputs.json("data")
    if stats is None:
        return {}
    return {
        "data": stats,
        "majority_test": rt.majority_share(stats, "test"),
        "majority_val": rt.majority_share(stats, "validation"),
    }


def _checks(inputs: Inputs, params, found: dict) -> dict:
    """The checks stage's counts and tables: parameters, the course's arithmetic and claims."""
    out = {}
    counts = inputs.json("checks_counts", keys=("vocab", "classes", "ours", "lab100"))
    if counts is not None:
        out = {"counts": counts["ours"], "vocab": counts["vocab"], "classes": counts["classes"]}
        out |= {"lab100": counts["lab100"], "parameters": inputs.split("checks_parameters")}
    out["course_claims"] = inputs.split("checks_seed_claims")
    out["checks"] = inputs.split("checks_pytorch_checks")
    return out


def _pretrain(inputs: Inputs, params, found: dict) -> dict:
    m = inputs.json("pretrain_metrics", keys=("validation_loss", "validation_perplexity", "steps"))
    out = {"objective": _objective(inputs, params), "pretrain": m}
    if m is not None:
        out["pretrain_bodies"] = _bodies_perplexity(inputs.root, params)
    steps = inputs.csv("pretrain_steps", ("step", "train_loss"))
    epochs = inputs.csv("pretrain_epochs", ("step", "validation_loss"))
    if steps is not None and epochs is not None:
        out["pretrain_curves"] = (steps, epochs)
    return out


def _bodies_perplexity(root: Path, params) -> dict[str, float]:
    """Every pretraining run's validation perplexity, by its seed (those written so far)."""
    out = {}
    for seed in params.pretrain.seeds:
        path = root / UPSTREAM["pretrain_metrics"].path.format(seed=seed)
        if path.exists():
            out[str(seed)] = json.loads(path.read_text(encoding="utf-8"))["validation_perplexity"]
    return out


def _objective(inputs: Inputs, params) -> str:
    meta = inputs.path("models_pretrained")
    if meta.exists():
        try:
            return "causal" if json.loads(meta.read_text())["model"]["causal"] else "masked"
        except (json.JSONDecodeError, KeyError, TypeError):
            raise DataError(f"{meta}: not a model config (expected {{'model': {{'causal': ...}}}})") from None
    return params.pretrain.objective


def _variants(inputs: Inputs, params, found: dict) -> dict:
    cells = inputs.csv("variants_cells", rt.ID_COLUMNS + ("train", "dev"))
    if cells is None:
        return {}
    samples = [x.name for x in params.pretrain.samples if x.name in cells]
    first = [*rt.ID_COLUMNS, "train", "dev", *samples]
    cells = cells[first + [c for c in cells.columns if c not in first]]  # course report 004's order
    return {
        "variant_cells": cells,
        "variants": rt.variants_stats(cells),
        "variants_summary": inputs.json("variants_summary", ("detectable_difference_pct", "verdicts")),
    }


def _finetune(inputs: Inputs, params, found: dict) -> dict:
    """The fine-tuning summary (starts in the order of tinytf.params.starts, not the file's sorted
    keys), its curves, and the labelled-data curve beside the baselines."""
    out = {}
    s = inputs.json("finetune_summary", keys=("starts",))
    if s is not None:
        out["finetune"] = s = {**s, "starts": {start: s["starts"][start] for start in ordered(s["starts"])}}
    columns = (
        "start",
        "seed",
        "epoch",
        "train_accuracy",
        "validation_accuracy",
        "train_loss",
        "validation_loss",
    )
    out["curves"] = inputs.csv("finetune_curves", columns)
    if s is not None and "label_curve" in s:
        path = inputs.root / UPSTREAM["finetune_summary"].path
        baselines = inputs.json("baselines_summary", keys=("label_curve",))
        out |= {"label_curve": curve_frame(s, baselines, path), "baselines": baselines}
        points = s.get("snapshot_curve") or []
        if len(points) > 1:
            out["snapshot_curve"] = pd.DataFrame(points)
    return out


def _extras(inputs: Inputs, params, found: dict) -> dict:
    return {
        "probes": inputs.csv("probes_probes", ("exercise", "weight_err", "pass")),
        "fits": inputs.csv("complexity_fits", ("kind", "variable", "time_exponent")),
        "protocol_history": rt.protocol_history(inputs.root / HISTORY),
    }


def _attention(inputs: Inputs, params, found: dict) -> dict:
    """The checks stage's attention weights on one sample: where each head looks."""
    att = inputs.json("checks_attention")
    if att is None:
        return {}
    if att.get("skipped"):
        return {"notes": [*found.get("notes", ()), f"Attention maps skipped: {att['skipped']}."]}
    require(att, inputs.path("checks_attention"), "sample", "text", "tokens", "weights", "causal")
    weights = [np.asarray(w, dtype=np.float32) for w in att["weights"]]  # (H, L, L) per layer
    return {
        "heads": rt.attention_head_table(weights, att["causal"]),
        "sample": (att["sample"], att["text"]),
        "attention": (weights, att["tokens"]),
    }
