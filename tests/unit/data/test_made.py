"""Files a stage made, damaged (issue 72): a truncated token array or parquet file was a numpy or
pyarrow traceback; now one line naming the file, `dvc checkout` and the stage that writes it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tinytf.data.batching import SentimentDataset, load_tokens
from tinytf.data.tokenizer import run_tokenize
from tinytf.errors import DataError
from tinytf.params.config import TokenizeParams


def truncate(path: Path, keep: float = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def one_line(err: pytest.ExceptionInfo, path: Path, stage: str) -> None:
    message = str(err.value)
    assert message.startswith(f"{path}: damaged (") and "\n" not in message, message
    assert message.endswith(f"`dvc checkout {path}` restores it, or `dvc repro -f {stage}` writes it again")


def test_a_truncated_token_array_is_one_line(tmp_path):
    path = tmp_path / "train.npy"
    np.save(path, np.arange(10_000, dtype=np.uint16))
    truncate(path)
    with pytest.raises(DataError) as err:
        load_tokens(path)
    one_line(err, path, "tokenize")


@pytest.mark.parametrize("keep", [0.5, 0.0])
def test_a_truncated_token_parquet_is_one_line(tmp_path, keep):
    path = tmp_path / "train.parquet"
    pd.DataFrame({"input_ids": [[1, 2, 3]] * 50, "label": [0, 1] * 25}).to_parquet(path)
    truncate(path, keep)
    with pytest.raises(DataError) as err:
        SentimentDataset.from_parquet(path)
    one_line(err, path, "tokenize")


def test_a_truncated_prepared_split_stops_tokenize_in_one_line(tmp_path):
    prepared = tmp_path / "prepared"
    for dataset in ("corpus", "sentiment"):
        (prepared / dataset).mkdir(parents=True)
        for split in ("train", "validation", "test"):
            frame = pd.DataFrame({"text": [f"a film {i}" for i in range(40)], "label": [0, 1] * 20})
            frame.to_parquet(prepared / dataset / f"{split}.parquet")
    broken = prepared / "sentiment" / "validation.parquet"
    truncate(broken)
    with pytest.raises(DataError) as err:
        run_tokenize(TokenizeParams(vocab_size=300), prepared, tmp_path / "out", tmp_path / "report.json")
    one_line(err, broken, "prepare")
    assert not (tmp_path / "out").exists()
