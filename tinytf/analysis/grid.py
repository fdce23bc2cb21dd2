"""The grid study (stages `grid`, `grid_finalists` and `evaluate`), by successive halving: round
one trains every optimizer x lr x batch size x epochs cell on grid.seed; round two trains the cells
ranked 1..K (grid.finalists) on grid.finalist_seeds too; the winner is the finalist with the best
mean validation accuracy over its seeds, tested against the runner-up (one seed's validation
accuracy moves by most of a point: a one-seed winner would be luck).

Cells are a DVC matrix, so adding a value to a list runs only the new cells: each writes
`data/grid/<key>.result.json` and `.pt` + `.json` (the trained classifier); finalists write the
same files as `data/grid_finalists/r<rank>-s<seed>.*`."""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd

from tinytf.analysis.cells import checked_out
from tinytf.analysis.evaluation import decisive_p, holm, paired_comparison, verdict
from tinytf.analysis.items import item_comparison
from tinytf.io import write_json
from tinytf.model.checkpoint import save_model
from tinytf.params.config import GridParams

# what reports/metrics.json records of the best cell
BEST_COLUMNS = ["optimizer", "lr", "batch_size", "epochs", "validation_accuracy", "validation_loss"]
CELL = {"optimizer": str, "lr": float, "batch_size": int, "epochs": int}  # a cell's values and types


class MissingCell(FileNotFoundError):
    """A cell of the current params has no result file yet."""

    def __init__(self, grid_dir: str | Path, key: str, stage: str = "grid"):
        super().__init__(f"{grid_dir}: no result for grid cell {key}; run `dvc repro {stage}`")
        self.key = key


def cell_key(optimizer: str, lr: float, batch_size: int, epochs: int) -> str:
    """A cell's one name: its file stem in data/grid, its name in every table, and the stem
    dvc.yaml's matrix writes (`${item.optimizer}-lr${item.lr}-...`). DVC formats the lr with str of
    the YAML number: 0.001 for `1e-3`, 2e-05 for `2.0e-5`, 1 for `1` (params.yaml's integral lr)."""
    lr_name = str(int(lr)) if float(lr).is_integer() else str(float(lr))
    return f"{optimizer}-lr{lr_name}-bs{batch_size}-ep{epochs}"


def finalist_key(rank: int, seed: int) -> str:
    """A round-two run's file stem in data/grid_finalists (the cell it names depends on round one)."""
    return f"r{rank}-s{seed}"


def cells(params: GridParams) -> list[dict]:
    return [
        {"optimizer": o, "lr": lr, "batch_size": b, "epochs": e}
        for o in params.optimizers
        for lr in params.lrs
        for b in params.batch_sizes
        for e in params.epochs
    ]


def read_results(params: GridParams, grid_dir: str | Path) -> list[tuple[dict, dict]]:
    """(cell, result) for every cell of the current params, each read by its name (cell_key)."""
    out = []
    for cell in cells(params):
        path = Path(grid_dir) / f"{cell_key(**cell)}.result.json"
        if not path.exists():
            raise MissingCell(grid_dir, cell_key(**cell))
        out.append((cell, json.loads(path.read_text())))
    return out


def write_cell(out: str, name: str, model, result: dict, **extra) -> Path:
    """A cell's files, `<out>.pt` (+ `.json`, the trained classifier) and `<out>.result.json`,
    where `out`'s name must be `name` (cell_key, or finalist_key in round two); returns the
    checkpoint's path. Suffixes are appended, not swapped: a stem may hold the lr's dot."""
    checked_out(out, name, "grid")
    checkpoint = Path(f"{out}.pt")
    save_model(checkpoint, model, stage="grid")
    write_json(Path(f"{out}.result.json"), {**result, **extra, "checkpoint": checkpoint.name})
    return checkpoint


def load_cells(params: GridParams, grid_dir: str | Path, results: list | None = None) -> pd.DataFrame:
    """One row per cell of the current params (stale cells from removed values are ignored);
    `results`: what read_results returned, when the caller has read them already."""
    return _cells_table(results if results is not None else read_results(params, grid_dir))


def _cells_table(results: list[tuple[dict, dict]]) -> pd.DataFrame:
    return pd.DataFrame(
        {**cell, "key": cell_key(**cell), "checkpoint": result["checkpoint"], **result["final"]}
        for cell, result in results
    )


def load_curves(params: GridParams, grid_dir: str | Path) -> pd.DataFrame:
    frames = [
        pd.DataFrame(result["history"]).assign(**cell) for cell, result in read_results(params, grid_dir)
    ]
    return pd.concat(frames, ignore_index=True)


def best_cell(table: pd.DataFrame) -> pd.Series:
    return rank_cells(table).iloc[0]


def rank_cells(table: pd.DataFrame) -> pd.DataFrame:
    """Round one's ranking: validation accuracy, ties lower validation loss, then cell order
    (the stable sort keeps the order of params.yaml's lists); `rank` counts from 1."""
    ranked = table.sort_values(
        ["validation_accuracy", "validation_loss"], ascending=[False, True], kind="stable"
    ).reset_index(drop=True)
    return ranked.assign(rank=range(1, len(ranked) + 1))


def cell_at_rank(params: GridParams, grid_dir: str | Path, rank: int) -> dict:
    """The cell round one ranked `rank` (1 = best): what a finalist run trains."""
    ranked = rank_cells(load_cells(params, grid_dir))
    if not 1 <= rank <= len(ranked):
        raise ValueError(f"rank {rank}: the grid has {len(ranked)} cells")
    row = ranked.iloc[rank - 1]
    return {k: cast(row[k]) for k, cast in CELL.items()}


def _run_row(cell: dict, result: dict, seed: int, checkpoint: Path) -> dict:
    return {
        **cell,
        "key": cell_key(**cell),
        "seed": seed,
        **{k: result["final"][k] for k in ("validation_accuracy", "validation_loss")},
        "checkpoint": str(checkpoint),
        "correct": np.asarray(result["validation_correct"], dtype=float),
    }


def load_runs(
    params: GridParams, grid_dir: str | Path, finalists_dir: str | Path, results: list | None = None
) -> pd.DataFrame:
    """One row per run: every cell on grid.seed (`rank` from round one), and each finalist on
    each of grid.finalist_seeds; `correct` holds its per-text validation results."""
    results = results if results is not None else read_results(params, grid_dir)
    ranks = {row["key"]: int(row["rank"]) for _, row in rank_cells(_cells_table(results)).iterrows()}
    rows = [
        _run_row(cell, result, params.seed, Path(grid_dir) / result["checkpoint"]) for cell, result in results
    ]
    by_rank = {ranks[row["key"]]: row for row in rows}
    for rank in params.finalists:
        cell = {k: by_rank[rank][k] for k in CELL}
        for seed in params.finalist_seeds:
            path = Path(finalists_dir) / f"{finalist_key(rank, seed)}.result.json"
            result = json.loads(path.read_text()) if path.exists() else {}
            if result.get("cell") != cell:  # absent, or stale: round one has ranked another cell here
                raise MissingCell(finalists_dir, finalist_key(rank, seed), "grid_finalists")
            rows.append(_run_row(cell, result, seed, Path(finalists_dir) / result["checkpoint"]))
    return pd.DataFrame(rows).assign(rank=lambda t: t["key"].map(ranks))


def summarize_finalists(runs: pd.DataFrame, finalists: list[int]) -> pd.DataFrame:
    """One row per finalist, best first: mean and std of validation accuracy over its seeds (ties:
    lower mean validation loss, then round-one rank)."""
    rows = runs[runs["rank"].isin(finalists)]
    summary = rows.groupby("key", sort=False).agg(
        **{column: (column, "first") for column in ("rank", *CELL)},
        seeds=("seed", list),
        validation_by_seed=("validation_accuracy", list),
        validation_accuracy_mean=("validation_accuracy", "mean"),
        validation_accuracy_std=(
            "validation_accuracy",
            lambda v: float(np.std(v, ddof=1)) if len(v) > 1 else 0.0,
        ),
        validation_loss_mean=("validation_loss", "mean"),
    )
    ranked = summary.reset_index().sort_values(
        ["validation_accuracy_mean", "validation_loss_mean", "rank"],
        ascending=[False, True, True],
        kind="stable",
    )
    return ranked.reset_index(drop=True)


def _finalist(row: pd.Series) -> dict:
    return {
        "key": str(row["key"]),
        "rank": int(row["rank"]),
        **{k: cast(row[k]) for k, cast in CELL.items()},
        "seeds": [int(s) for s in row["seeds"]],
        "validation_by_seed": {
            str(s): float(a) for s, a in zip(row["seeds"], row["validation_by_seed"], strict=True)
        },
        "validation_accuracy_mean": float(row["validation_accuracy_mean"]),
        "validation_accuracy_std": float(row["validation_accuracy_std"]),
        "validation_loss_mean": float(row["validation_loss_mean"]),
    }


def winner_test(runs: pd.DataFrame, winner: str, runner_up: str) -> dict:
    """Winner vs runner-up, paired over their seeds (t-test) and over validation texts (permutation
    test, reported beside it). The outcome rests on one test, the label curve's `decisive_p`, so it
    is not two looks: "tie" unless it detects the winner higher. On a tie the protocol still serves
    the higher mean, but the report must not call it better."""
    a = runs[runs["key"] == winner].sort_values("seed")
    b = runs[runs["key"] == runner_up].sort_values("seed")
    test = paired_comparison(a["validation_accuracy"].tolist(), b["validation_accuracy"].tolist())
    test["items"] = item_comparison(np.stack(a["correct"].tolist()), np.stack(b["correct"].tolist()))
    test["verdict"] = verdict(test)
    test["decisive_p"] = decisive_p(test)
    test["items_verdict"] = verdict(test["items"])
    test["outcome"] = "winner better" if test["verdict"] == "higher" else "tie"
    return test


def optimizer_verdict(runs: pd.DataFrame, summary: pd.DataFrame, optimizers: list[str], seed: int) -> dict:
    """Each optimizer's best cell (by its mean over seeds where it is a finalist, else by round
    one), then pairwise permutation tests over validation texts on round one's seed (every cell
    has that run), Holm over the pairs."""
    round_one = rank_cells(runs[runs["seed"] == seed].drop(columns="rank"))
    best = {}
    for name in optimizers:
        finalist = summary[summary["optimizer"] == name]
        if len(finalist):
            row, basis = finalist.iloc[0], "mean over the finalist's seeds"
            accuracy = float(row["validation_accuracy_mean"])
        else:
            row, basis = round_one[round_one["optimizer"] == name].iloc[0], f"round one (seed {seed})"
            accuracy = float(row["validation_accuracy"])
        best[name] = {"key": str(row["key"]), "validation_accuracy": accuracy, "chosen_by": basis}
    correct = {row["key"]: row["correct"] for _, row in round_one.iterrows()}
    pairs = [
        {"a": a, "b": b, **item_comparison(correct[best[a]["key"]], correct[best[b]["key"]])}
        for a, b in combinations(optimizers, 2)
    ]
    for pair, p in zip(pairs, holm([t["p_value"] for t in pairs]), strict=True):
        pair["p_holm"] = p
        pair["verdict"] = verdict(pair)
        pair["statement"] = _pair_statement(pair)
    return {
        "best_cells": best,
        "pairs": pairs,
        "caveat": "each side is its optimizer's best cell, chosen on the same validation split the "
        "test reads: both sides are optimistic, the comparison between them is even",
    }


def _pair_statement(pair: dict) -> str:
    if pair["verdict"] == "higher":
        return f"{pair['a']} better than {pair['b']}"
    if pair["verdict"] == "lower":
        return f"{pair['b']} better than {pair['a']}"
    return f"{pair['a']} vs {pair['b']}: no detectable difference"


def grid_selection(
    params: GridParams, grid_dir: str | Path, finalists_dir: str | Path, results: list | None = None
) -> dict:
    """The winner, the runner-up and their test, the run to serve and the optimizer verdict; every
    choice on validation. JSON-ready (reports/metrics.json's `grid_selection`)."""
    runs = load_runs(params, grid_dir, finalists_dir, results)
    summary = summarize_finalists(runs, params.finalists)
    winner = summary.iloc[0]
    served = (
        runs[runs["key"] == winner["key"]]
        .sort_values(["validation_accuracy", "validation_loss"], ascending=[False, True], kind="stable")
        .iloc[0]
    )
    return {
        "finalists": [_finalist(row) for _, row in summary.iterrows()],
        "winner": _finalist(winner),
        "runner_up": _finalist(summary.iloc[1]) if len(summary) > 1 else None,
        "served": {
            "seed": int(served["seed"]),
            "checkpoint": served["checkpoint"],
            "validation_accuracy": float(served["validation_accuracy"]),
            "validation_loss": float(served["validation_loss"]),
        },
        "test": winner_test(runs, winner["key"], summary.iloc[1]["key"]) if len(summary) > 1 else None,
        "optimizers": optimizer_verdict(runs, summary, list(params.optimizers), params.seed),
    }
