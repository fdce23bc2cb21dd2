"""The matrix studies' one rule (the grid and the variants): a cell's result is found by the file
stem the study's `cell_key` gives, which dvc.yaml's matrix formats from the cell's values;
`checked_out` refuses an --out that differs (a value params.yaml writes another way, as `1`)."""

from __future__ import annotations

from pathlib import Path

from tinytf.errors import ParamsError


def checked_out(out: str | Path, name: str, study: str) -> Path:
    """`out` when its file name is `name`; otherwise a ParamsError naming both, before anything is
    written, since the study's reader would look for `name` and never find the cell."""
    out = Path(out)
    if out.name != name:
        raise ParamsError(
            f"--out {out}: the {study} cell's result is named {name} (its cell_key), not {out.name}: "
            "write the value in params.yaml as the cell name does (e.g. a learning rate as 0.001)"
        )
    return out
