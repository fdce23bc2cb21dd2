"""One grid cell's training (stages `grid` and `grid_finalists`): the classifier trained with one
optimizer x lr x batch size x epochs and one seed, from grid.start; `tinytf.analysis.grid.write_cell`
writes it. Both stages call the same function, so a finalist differs from its round-one run by the
seed alone.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

from tinytf.data.sentiment import SentimentData
from tinytf.train.classify import ClassifierRecipe, classifier_runtime, planned_steps, train_classifier
from tinytf.train.runtime import Runtime
from tinytf.train.starts import build_start


@dataclass
class CellRun:
    model: object  # the trained classifier
    result: dict  # what <out>.result.json holds, less the checkpoint's name
    runtime: Runtime


def logged_params(params, cell: dict, seed: int, **extra) -> dict:
    """A cell's MLflow params: the cell, its seed, `extra` (a finalist's rank) and the grid's fixed
    settings; the same for both rounds, so the UI compares their runs."""
    grid = params.grid
    return {
        "grid": {
            **cell,
            **extra,
            "start": grid.start,
            "seed": seed,
            "weight_decay": grid.weight_decay,
            "dropout": grid.dropout,
        },
        "tokenize": {"max_length": params.tokenize.max_length},
        **({"hf": dataclasses.asdict(params.hf)} if grid.start == "hf" else {}),
    }


def train_cell(
    params, cell: dict, seed: int, data_dir: str, pretrained: str, callbacks=(), desc: str = ""
) -> CellRun:
    """Train `cell` ({optimizer, lr, batch_size, epochs}) on `seed`."""
    grid, finetune = params.grid, params.finetune
    # the hf start keeps its checkpoint's own dropout, as it always has here (grid.dropout is ours)
    dropout = None if grid.start == "hf" else grid.dropout
    data = SentimentData.load(data_dir)
    start = build_start(
        grid.start, data, data_dir, pretrained, params.tokenize.max_length, seed, dropout, hf_params=params.hf
    )
    model, data, max_length = start.model, start.data, start.max_length
    runtime = classifier_runtime(finetune, planned_steps(data, cell["batch_size"], cell["epochs"]))
    began = time.perf_counter()
    recipe = ClassifierRecipe(
        start=grid.start,
        **cell,
        max_length=max_length,
        seed=seed,
        weight_decay=grid.weight_decay,
        warmup_ratio=finetune.warmup_ratio,
    )
    run = train_classifier(model, data, recipe, runtime, callbacks=list(callbacks), desc=desc)
    validation = run.validation
    result = {
        "cell": cell,
        "seed": seed,
        "history": run.history,
        "final": {k: v for k, v in run.history[-1].items() if k not in ("epoch", "step")},
        "precision": runtime.precision,  # what `auto` chose here
        "compile": runtime.compile,
        # the report's "who pretrained the body" table: size and cost of this start
        "parameters": sum(t.numel() for t in run.model.parameters()),
        "train_seconds": round(time.perf_counter() - began, 1),
        # per validation text, in file order, 1 where right: for the paired tests over texts
        "validation_correct": (validation.predictions == validation.labels).astype(int).tolist(),
    }
    return CellRun(run.model, result, runtime)
