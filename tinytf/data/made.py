"""Files a stage made, read back by a later one: a missing file names the stage that writes it, and a
damaged one (truncated by a full disk, overwritten) is one line naming it and the commands that
bring it back, never pyarrow's or numpy's traceback. Torch-free, so `tokenize` reads through it."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from tinytf.errors import DataError


def read_frame(path: str | Path, stage: str, **kwargs) -> pd.DataFrame:
    """A parquet file that `stage` writes."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: file not found; run `dvc repro {stage}`")
    try:
        return pd.read_parquet(path, **kwargs)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise damaged(path, stage, exc) from None


def damaged(path: Path, stage: str, exc: Exception) -> DataError:
    said = " ".join(str(exc).split())[:120]
    return DataError(
        f"{path}: damaged ({said}); `dvc checkout {path}` restores it, or `dvc repro -f {stage}` writes it again"
    )
