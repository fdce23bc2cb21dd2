"""Fine-tuning arms (the core of stage `finetune`): pretrained vs scratch vs frozen, each over several seeds.

The same seed gives every arm the same head initialisation and the same batch order, so the
arms differ only in their starting body: a paired comparison over seeds.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from tinytf.config import FinetuneParams
from tinytf.train.classify import (
    SentimentData,
    build_classifier,
    classifier_config,
    classifier_runtime,
    evaluate_test_split,
    planned_steps,
    train_classifier,
)
from tinytf.train.loop import Callback
from tinytf.train.runtime import Runtime


@dataclass
class FinetuneResult:
    curves: pd.DataFrame  # per epoch, every arm and seed
    tests: dict[str, dict[int, float]]  # test accuracy by arm and seed
    classes: list[str]
    runtime: Runtime  # what `auto` resolved to on this machine, for the outputs to record


CallbacksFor = Callable[[str, int], contextlib.AbstractContextManager[list[Callback]]]


def run_finetune(
    params: FinetuneParams,
    max_length: int,
    pretrained: str | Path,
    data_dir: str | Path,
    callbacks_for: CallbacksFor | None = None,
) -> FinetuneResult:
    """Every arm over every seed; `tinytf.analysis.evaluation.arm_summary` turns the test
    accuracies into the paired comparison.

    `callbacks_for(arm, seed)` is a context manager around that run yielding its callbacks (the
    stage opens a nested MLflow run there); each gets `on_end` with the run's test metrics.
    """
    data = SentimentData.load(data_dir)
    config = classifier_config(pretrained, len(data.classes), params.dropout)
    runtime = classifier_runtime(params, planned_steps(data, params.batch_size, params.epochs))
    rows, tests = [], {arm: {} for arm in params.arms}
    for arm in params.arms:
        for seed in params.seeds:
            with callbacks_for(arm, seed) if callbacks_for else contextlib.nullcontext([]) as callbacks:
                history, test = _one_run(params, arm, seed, config, pretrained, data, max_length, runtime,
                                         callbacks)  # fmt: skip
                for callback in callbacks:
                    callback.on_end({"test_accuracy": test["test_accuracy"], "test_loss": test["test_loss"]})
            tests[arm][seed] = test["test_accuracy"]
            rows += [{"arm": arm, "seed": seed, **h} for h in history]
    return FinetuneResult(pd.DataFrame(rows), tests, data.classes, runtime)


def _one_run(params, arm, seed, config, pretrained, data, max_length, runtime, callbacks):
    model = build_classifier(arm, config, pretrained, seed)
    run = train_classifier(
        model, data, init=arm, optimizer=params.optimizer,
        lr=params.frozen_lr if arm == "frozen" else params.lr, batch_size=params.batch_size,
        epochs=params.epochs, max_length=max_length, seed=seed, runtime=runtime,
        weight_decay=params.weight_decay, warmup_ratio=params.warmup_ratio, callbacks=callbacks,
        desc=f"{arm} seed {seed}",
    )  # fmt: skip
    return run.history, evaluate_test_split(run.model, data, max_length, runtime)
