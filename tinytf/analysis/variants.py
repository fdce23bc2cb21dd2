"""Course report 004's architecture study, the results side: each cell's result file (stage
`variants`) and the perplexity table, mean ± std over seeds, over the cells the current params
define (stage `variants_table`). Both find a cell by `cell_key`, as dvc.yaml's matrix names it."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from tinytf.analysis.cells import checked_out
from tinytf.data.markdown import environment
from tinytf.io import write_json, write_text
from tinytf.params.config import VariantsParams

COLUMNS = [("train", "train_perplexity"), ("dev", "validation_perplexity")]


def cell_key(pos: str, merge: str, seed: int) -> str:
    """A cell's one name: its result file's stem in data/variants."""
    return f"{pos}-{merge}-{seed}"


def write_cell(path: str | Path, pos: str, merge: str, seed: int, metrics: dict) -> None:
    """One cell's result at `path` (dvc.yaml's --out), which must be `<cell_key>.json`."""
    checked_out(path, f"{cell_key(pos, merge, seed)}.json", "variants")
    write_json(path, {"pos_encoding": pos, "head_merge": merge, "seed": seed, **metrics})


def summarize(v: VariantsParams, cells_dir: str | Path) -> pd.DataFrame:
    """Mean ± std over seeds per (pos, merge), only for the cells the current params define."""
    rows = []
    for pos in v.pos_encodings:
        for merge in v.head_merges:
            for seed in v.seeds:
                path = Path(cells_dir) / f"{cell_key(pos, merge, seed)}.json"
                if not path.exists():
                    raise FileNotFoundError(f"{path}: variants cell missing; run `dvc repro variants`")
                cell = json.loads(path.read_text())
                row = {"pos_encoding": pos, "head_merge": merge, "seed": seed}
                row.update({name: cell[key] for name, key in COLUMNS})
                row.update({name: s["perplexity"] for name, s in cell.get("samples", {}).items()})
                rows.append(row)
    return pd.DataFrame(rows)


def table(cells: pd.DataFrame) -> pd.DataFrame:
    metrics = [c for c in cells.columns if c not in ("pos_encoding", "head_merge", "seed")]
    grouped = cells.groupby(["pos_encoding", "head_merge"], sort=False)[metrics]
    mean, std = grouped.mean(), grouped.std(ddof=1)
    out = mean.copy().astype(object)
    for column in metrics:
        out[column] = [
            f"{m:.1f} ± {s:.1f}" if pd.notna(s) else f"{m:.1f}"
            for m, s in zip(mean[column], std[column], strict=True)
        ]
    return out.reset_index()


def write_summary(cells: pd.DataFrame, report_dir: str | Path, n_seeds: int, steps: int) -> None:
    report_dir = Path(report_dir)
    write_text(report_dir / "cells.csv", cells.to_csv(index=False))
    values = {"steps": steps, "seeds": n_seeds, "table": table(cells).to_markdown(index=False)}
    text = environment("tinytf.analysis").get_template("variants.md.j2").render(values)
    write_text(report_dir / "variants.md", text)
