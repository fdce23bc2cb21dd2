"""The facts of the runs the report compares (read by tinytf.report.read): the evaluated cell
and the grid, who pretrained each body, the kept predictions (the mistakes tables and the served
model against the other candidates) and the stages' run records."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from tinytf.analysis.grid import BEST_COLUMNS, MissingCell, best_cell, cell_key, load_cells, load_curves
from tinytf.data.predictions import RUN_KEYS
from tinytf.errors import DataError
from tinytf.report import tables as rt
from tinytf.report.bodies import bodies_table, lm_corpus
from tinytf.report.champion import champion_comparison
from tinytf.report.facts import UPSTREAM
from tinytf.report.inputs import Inputs, require
from tinytf.report.run_card import load_records
from tinytf.report.run_card import run_card as card_lines

METRICS_KEYS = ("test_accuracy", "test_accuracy_ci95", "test_macro_f1", *(f"best.{k}" for k in BEST_COLUMNS))
TEST_KEYS = ("accuracy", "per_class", "confusion_matrix", "classes", "n")
PREDICTIONS = ("start", "labels", "split", "item", "prediction")


def grid(inputs: Inputs, params, found: dict) -> dict:
    """The best cell's test metrics and report, then every cell of the current grid params."""
    grid_dir = inputs.exists("grid")  # first: missing inputs are listed in the order read
    metrics = inputs.json("metrics", keys=METRICS_KEYS)
    out = {"metrics": metrics, "test_report": inputs.json("evaluate_test_report", keys=TEST_KEYS)}
    loaded = _grid_cells(inputs, params, grid_dir) if grid_dir is not None else None
    if loaded is None:
        return out
    cells, curves = loaded
    if metrics is not None:
        best = {k: metrics["best"][k] for k in rt.CELL}
    else:
        best = best_cell(cells)[list(rt.CELL)].to_dict()
    if cell_key(**best) not in set(cells["key"]):
        out["notes"] = [
            f"`reports/metrics.json` names best cell {cell_key(**best)}, which is not in the current grid: "
            "re-run `dvc repro evaluate`."
        ]
    return {**out, "grid": cells, "best": best, "grid_curves": curves}


def _grid_cells(inputs: Inputs, params, grid_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """Every cell of the current grid params and its curves, each result file checked first; None
    (listed as missing) while a cell has no result yet."""
    for path in sorted(grid_dir.glob("*.result.json")):  # the cell results (not the model configs)
        try:
            result = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise DataError(f"{path}: not valid JSON ({exc})") from None
        if isinstance(result, dict) and "cell" in result:
            columns = (f"final.{k}" for k in rt.CELL_METRICS)
            require(result, path, "history", "final", "checkpoint", *columns)
    try:
        return load_cells(params.grid, grid_dir), load_curves(params.grid, grid_dir)
    except MissingCell as exc:  # a cell of the current params has no result yet
        inputs.missing.append(
            ("grid cell", f"{UPSTREAM['grid'].path}/{exc.key}.result.json", "dvc repro grid")
        )
        return None
    except KeyError as exc:
        raise DataError(f"{grid_dir}: a grid cell result lacks {exc}") from None


def bodies(inputs: Inputs, params, found: dict) -> dict:
    """Who pretrained the body of each start, and the external encoder's tokenizer settings."""
    finetune, metrics = found.get("finetune"), found.get("metrics")
    if finetune is None and metrics is None:
        return {}
    timings = inputs.csv("finetune_timings", ("start", "labels", "seconds"))
    best_result = best_model = None
    if metrics is not None and found.get("grid") is not None:
        key = cell_key(**found["best"])  # metrics.json's best cell (read_runs.grid)
        best_result, best_model = (
            _json(inputs.path("grid") / f"{key}{end}") for end in (".result.json", ".json")
        )
    pretrained_meta = _json(inputs.path("models_pretrained"))
    corpus = lm_corpus(found.get("data"), params.prepare.corpus.source)
    ours = (found.get("counts") or {}).get("base+cls_head")
    start = params.grid.start
    args = (finetune, timings, metrics, best_result, best_model, start, pretrained_meta, corpus, ours)
    table = bodies_table(*args)
    if table.empty:
        return {}
    external = ((best_model or {}).get("hf") if start == "hf" else None) or (
        {"source": finetune.get("hf_checkpoint"), "max_length": finetune.get("hf_max_length")}
        if finetune and finetune.get("hf_checkpoint")
        else None
    )
    return {"bodies": table, "external": external}  # external: course report 004 Q1 for its tokenizer


def _json(path: Path) -> dict | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def predictions(inputs: Inputs, params, found: dict) -> dict:
    """The test texts and the kept predictions; the served model against the best start and
    TF-IDF on the same texts, where all three were kept."""
    texts = inputs.parquet("sentiment_test", ("text",))
    finetune = inputs.parquet("finetune_predictions", PREDICTIONS)
    runs = inputs.csv("finetune_runs", ("chosen", "validation_accuracy", *RUN_KEYS))
    champion = inputs.parquet("evaluate_predictions", ("split", "item", "label", "prediction", "probability"))
    out = {"texts": None if texts is None else texts["text"].tolist(), "finetune_predictions": finetune}
    out |= {"finetune_runs": None if runs is None else runs.astype({"labels": str}), "champion": champion}
    if champion is not None and finetune is not None and runs is not None:
        baselines = inputs.parquet("baseline_predictions", PREDICTIONS)
        out["champion_vs"] = champion_comparison(champion, finetune, runs, baselines)
    return out


def run_card(inputs: Inputs) -> dict:
    """The README's opening lines, from every stage's run record and the training precision."""
    folder = inputs.exists("runs")
    if folder is None:
        return {}
    found = {s: inputs.json(f"{s}_{n}") for s, n in (("pretrain", "metrics"), ("finetune", "summary"))}
    precision = {s: d["precision"] for s, d in found.items() if d and d.get("precision")}
    return {"run_card": card_lines(load_records(folder), precision)}
