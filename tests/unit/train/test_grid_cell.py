"""One grid cell's training, as stages `grid` and `grid_finalists` both call it."""

import json

import pytest

from tinytf.analysis.grid import write_cell
from tinytf.data.sentiment import SentimentData
from tinytf.errors import ParamsError
from tinytf.params.config import FinetuneParams, GridParams, HFParams, TokenizeParams
from tinytf.train.grid import train_cell


class _Params:
    grid = GridParams(optimizers=["SGD"], lrs=[0.01], batch_sizes=[8], epochs=[1], finalists=[1])
    finetune = FinetuneParams(device="cpu", precision="fp32", compile=False)
    tokenize = TokenizeParams(max_length=32)
    hf = HFParams()


def test_a_cell_keeps_which_validation_texts_it_got_right_in_file_order(workdir, tmp_path):
    cell = {"optimizer": "SGD", "lr": 0.01, "batch_size": 8, "epochs": 1}
    run = train_cell(_Params(), cell, 5, str(workdir), str(workdir / "models" / "pretrained.pt"))
    with pytest.raises(
        ParamsError, match=r"the grid cell's result is named r1-s5 \(its cell_key\), not r1-s6"
    ):
        write_cell(str(tmp_path / "r1-s6"), "r1-s5", run.model, run.result, rank=1)
    assert not list(tmp_path.iterdir())  # refused before anything is written
    checkpoint = write_cell(str(tmp_path / "r1-s5"), "r1-s5", run.model, run.result, rank=1)
    result = json.loads((tmp_path / "r1-s5.result.json").read_text())
    validation = SentimentData.load(workdir).splits["validation"]
    assert checkpoint.exists() and result["checkpoint"] == "r1-s5.pt"
    assert result["seed"] == 5 and result["rank"] == 1 and result["cell"] == cell
    correct = result["validation_correct"]
    assert len(correct) == len(validation.labels) and set(correct) <= {0, 1}
    assert sum(correct) / len(correct) == result["final"]["validation_accuracy"]
