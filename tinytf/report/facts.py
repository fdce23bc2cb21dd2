"""The facts the report is built from, typed: each is read from one upstream file (or derived
from one) by `tinytf.report.read`, and is None when that file is absent, so the text can say
what it can and the README lists what is missing."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import pandas as pd


@dataclass(frozen=True)
class Facts:
    """Read once by `tinytf.report.read`, then only read: the tables, the plots and the README's
    view (tinytf.report.derive) are functions of it."""

    root: Path = Path(".")  # the workspace read: error messages name its files
    data: dict | None = None  # reports/data.json
    majority_test: float | None = None  # share of the most frequent class in test
    majority_val: float | None = None
    counts: dict[str, int] | None = None  # closed-form parameter counts of our model (checks)
    vocab: int | None = None
    classes: int | None = None
    lab100: dict[str, int] | None = None  # the course lab's model at vocabulary 100
    parameters: pd.DataFrame | None = None  # per component, ours and the lab's (checks)
    course_claims: pd.DataFrame | None = None  # the course reports' parameter arithmetic (checks)
    checks: pd.DataFrame | None = None  # course claims checked in PyTorch
    objective: str = "causal"
    pretrain: dict | None = None  # reports/pretrain/seed<first>/metrics.json: the served body's
    pretrain_bodies: dict[str, float] | None = None  # every body's validation perplexity, by its seed
    pretrain_curves: tuple[pd.DataFrame, pd.DataFrame] | None = None  # (steps, epochs) of the first body
    variant_cells: pd.DataFrame | None = None  # one row per cell and seed, course report 004's columns
    variants: pd.DataFrame | None = None  # mean ± std per positional encoding x head merge
    variants_summary: dict | None = None  # reports/variants/summary.json: power and verdicts
    finetune: dict | None = None  # reports/finetune/summary.json, starts in tinytf.params.starts order
    curves: pd.DataFrame | None = None  # fine-tuning curves per start, seed and epoch
    label_curve: pd.DataFrame | None = None  # every start and baseline per label count
    baselines: dict | None = None  # reports/baselines/summary.json
    snapshot_curve: pd.DataFrame | None = None  # pretrained − scratch per pretraining snapshot
    metrics: dict | None = None  # reports/metrics.json
    test_report: dict | None = None
    grid: pd.DataFrame | None = None  # one row per grid cell of the current params
    grid_curves: pd.DataFrame | None = None  # per cell and epoch
    best: dict | None = None  # optimizer, lr, batch_size, epochs of the best cell
    bodies: pd.DataFrame | None = None  # who pretrained the body: one row per start (report.bodies)
    external: dict | None = None  # the hf start's checkpoint: source, max_length
    probes: pd.DataFrame | None = None
    fits: pd.DataFrame | None = None  # attention-cost exponents
    heads: pd.DataFrame | None = None  # where each head looks
    sample: tuple[str, str] | None = None  # (name, text) of the sentence the heads were read on
    attention: tuple[list, list[str]] | None = None  # ((H, L, L) weights per layer, the tokens)
    texts: list[str] | None = None  # the prepared test texts, by item
    finetune_predictions: pd.DataFrame | None = None
    finetune_runs: pd.DataFrame | None = None  # runs.csv, labels as text
    champion: pd.DataFrame | None = None  # the served model's test predictions
    champion_vs: dict | None = None  # the served model against the best start and TF-IDF, on test texts
    protocol_history: pd.DataFrame | None = None  # each protocol revision and what it moved (HISTORY)
    run_card: list[str] | None = None  # the README's opening lines (tinytf.report.run_card)
    missing: tuple = ()  # (what, path, how to make it) per absent input, in the order read
    notes: tuple[str, ...] = ()  # skipped parts that are not missing files
    published: tuple[str, ...] = ()  # the stages' own files the README names (tinytf.report.publish)


class Listing(NamedTuple):
    """What the README lists besides the facts: absent inputs, notes, the tables and plots
    written (link, sentence) and the stages' own files published beside it."""

    missing: list  # (what, path, how to make it) per absent input
    notes: list[str]
    tables: list
    plots: list
    published: list[str]


class Upstream(NamedTuple):
    what: str  # how the README names it when it is missing
    path: str  # relative to the workspace root
    stage: str  # the stage that writes it


# Where the stages write their own tables and summaries (DVC-cached): the report publishes this
# folder's entries into its out folder, at the same relative paths, beside the README
STAGE_FILES = "data/reports"

# The protocol's revisions and what each moved: committed, not a stage's output
# (benchmarks/protocol_history.py appends it from the committed reports); absent in a project
# without that history, and then its table is left out
HISTORY = "benchmarks/results/protocol_history.jsonl"

# Every file the report reads, in one place; tests/contract/test_dvc_contract.py checks that each
# is a dep of `report`.
UPSTREAM = {
    "data": Upstream("data card", "data/reports/data.json", "prepare"),
    "checks_counts": Upstream("parameter counts", "data/reports/checks/counts.json", "checks"),
    "checks_parameters": Upstream("parameter table", "data/reports/checks/parameters.json", "checks"),
    "checks_seed_claims": Upstream("seed arithmetic", "data/reports/checks/seed_claims.json", "checks"),
    "checks_pytorch_checks": Upstream(
        "course report claims checked in PyTorch", "data/reports/checks/pytorch_checks.json", "checks"
    ),
    # {seed}: the first of pretrain.seeds, the body the grid serves (Inputs fills it in)
    "pretrain_metrics": Upstream(
        "pretraining metrics", "data/reports/pretrain/seed{seed}/metrics.json", "pretrain"
    ),
    "pretrain_steps": Upstream(
        "pretraining step log", "data/reports/pretrain/seed{seed}/steps.csv", "pretrain"
    ),
    "pretrain_epochs": Upstream(
        "pretraining epochs", "data/reports/pretrain/seed{seed}/epochs.csv", "pretrain"
    ),
    "variants_cells": Upstream(
        "variants (positional encoding × head merge)", "data/reports/variants/cells.csv", "variants_table"
    ),
    "variants_summary": Upstream(
        "variants verdicts (power, main effects)", "data/reports/variants/summary.json", "variants_table"
    ),
    "finetune_summary": Upstream("fine-tuning summary", "data/reports/finetune/summary.json", "finetune"),
    "finetune_curves": Upstream("fine-tuning curves", "data/reports/finetune/curves.csv", "finetune"),
    "finetune_runs": Upstream("fine-tuning runs", "data/reports/finetune/runs.csv", "finetune"),
    "finetune_timings": Upstream("fine-tuning wall times", "data/reports/finetune/timings.csv", "finetune"),
    "baselines_summary": Upstream(
        "baselines (majority, TF-IDF + LR)", "data/reports/baselines/summary.json", "baselines"
    ),
    "grid": Upstream("grid cells", "data/grid", "grid"),
    "metrics": Upstream("evaluation metrics", "data/reports/metrics.json", "evaluate"),
    "evaluate_test_report": Upstream("test report", "data/reports/evaluate/test_report.json", "evaluate"),
    "probes_probes": Upstream("probes (course report 004 §1)", "data/reports/probes/probes.csv", "probes"),
    "complexity_fits": Upstream(
        "attention cost (course report 003)", "data/reports/complexity/fits.csv", "complexity"
    ),
    "checks_attention": Upstream("attention weights", "data/reports/checks/attention.json", "checks"),
    "models_pretrained": Upstream(
        "pretrained model config", "data/models/pretrained/seed{seed}.json", "pretrain"
    ),
    "finetune_predictions": Upstream(
        "fine-tuning predictions", "data/predictions/finetune.parquet", "finetune"
    ),
    "baseline_predictions": Upstream(
        "the baselines' predictions", "data/predictions/baselines.parquet", "baselines"
    ),
    "evaluate_predictions": Upstream(
        "the best cell's test predictions", "data/predictions/evaluate.parquet", "evaluate"
    ),
    # every stage's run record (--record), each written by its stage; prepare's is the first
    "runs": Upstream("stage run records (the run card; every stage writes its own)", "data/runs", "prepare"),
    "sentiment_test": Upstream(
        "prepared sentiment test texts", "data/prepared/sentiment/test.parquet", "prepare"
    ),
}
