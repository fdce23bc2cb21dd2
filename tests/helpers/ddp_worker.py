"""A tiny pretraining or fine-tuning run, started by the DDP test either as one plain process or
under torchrun; rank 0 writes the per-step losses and the per-epoch history as JSON.

usage: python -m tests.helpers.ddp_worker {pretrain,finetune} DATA_DIR STATE_PATH RESULT_JSON [CRASH_STEP]
"""

import json
import sys
from pathlib import Path

from tests.helpers.lm_fixtures import tiny_model, tiny_pretrain
from tinytf.io import write_text
from tinytf.train import distributed
from tinytf.train.loop import Callback


class Crash(Callback):
    """Dies after a given step (rank 0 only sees callbacks, so it raises there; torchrun then
    stops the other rank), leaving the last checkpoint behind as a killed run would."""

    def __init__(self, step: int):
        self.step = step

    def on_step(self, step, metrics):
        if step == self.step:
            raise RuntimeError(f"crash after step {step}")


def run_pretrain(data: Path, state: Path, callbacks: list) -> dict:
    from tinytf.train.pretrain import pretrain

    # dropout 0: each process draws its own masks, so only a deterministic model can match
    model = tiny_model()
    model.dropout = 0.0
    params = tiny_pretrain(steps_per_epoch=8, log_every=1, checkpoint_every=3, grad_accum=2, batch_size=6)
    result = pretrain(
        model,
        params,
        seed=5,
        data_dir=data,
        stats_path=data / "none.json",
        state_path=state,
        params_hash="ddp",
        callbacks=callbacks,
    )
    return {"steps": result.step_log, "history": result.history}


def run_finetune(data: Path, state: Path, callbacks: list) -> dict:
    import torch

    from tinytf.data.sentiment import SentimentData
    from tinytf.train.classify import ClassifierRecipe, train_classifier
    from tinytf.train.runtime import Runtime
    from tinytf.train.starts import build_classifier, classifier_config

    sentiment = SentimentData.load(data)
    pretrained = data / "models" / "pretrained.pt"
    model = build_classifier("pretrained", classifier_config(pretrained, 2, dropout=0.0), pretrained, seed=1)
    runtime = Runtime(torch.device("cpu"), "fp32", False)
    # 96 train rows in batches of 13: the last batch of an epoch has 5 rows, split 3 + 2 (weights 1.2, 0.8)
    recipe = ClassifierRecipe(
        start="pretrained", optimizer="AdamW", lr=3e-3, batch_size=13, epochs=2, max_length=32, seed=1
    )
    run = train_classifier(
        model, sentiment, recipe, runtime, callbacks=callbacks, state_path=state, params_hash="ddp"
    )
    return {"history": run.history}


if __name__ == "__main__":
    task, data, state, result = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])
    callbacks = [Crash(int(sys.argv[5]))] if len(sys.argv) > 5 else []
    out = (run_pretrain if task == "pretrain" else run_finetune)(data, state, callbacks)
    out["world_size"] = distributed.world_size()
    write_text(result, json.dumps(out, sort_keys=True))
