"""A tiny pretraining run in its own process, for the kill/interrupt tests.

usage: python -m tests.helpers.reliability_worker CORPUS_DIR STATE_PATH RESULT_JSON
"""

import json
import sys
import time
from pathlib import Path

from tests.helpers.lm_fixtures import tiny_model, tiny_pretrain
from tinytf.train.loop import Callback
from tinytf.train.pretrain import pretrain


class Pace(Callback):
    """Sleep a little after every step: on a fast machine the whole run takes well under a
    second, and a kill sent "after step N" would otherwise land after the run had ended.
    Sleeping changes no number the run computes."""

    def on_step(self, step, metrics):
        time.sleep(0.05)


if __name__ == "__main__":
    corpus, state, result_path = (Path(a) for a in sys.argv[1:4])
    params = tiny_pretrain(epochs=2, steps_per_epoch=15, checkpoint_every=3, log_every=1, eval_batches=2)
    result = pretrain(
        tiny_model(),
        params,
        seed=5,
        data_dir=corpus,
        state_path=state,
        params_hash="w",
        callbacks=[Pace()],
        stats_path=corpus / "none.json",
    )
    weights = {k: v.double().sum().item() for k, v in result.model.state_dict().items()}
    result_path.write_text(json.dumps({"history": result.history, "weights": weights}, sort_keys=True))
